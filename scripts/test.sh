#!/usr/bin/env bash
# The whole test suite, on a fresh machine: makes the venv, installs the project with its extras,
# installs Debian's zookeeper and tmux packages when missing, then lint, types and pytest.
# Extra arguments go to pytest (e.g. `scripts/test.sh tests/unit -x`).
# With CI=true anything missing is a failure, never a skip.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${MINIKAFKA_VENV:-.venv}
python=${PYTHON:-python3}

step() { printf '\n== %s\n' "$*"; }

step "venv ($venv) and project with extras [dev,spark]"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -e '.[dev,spark]'

# debian_package PACKAGE PRESENT-CHECK WHAT-NEEDS-IT: install Debian's PACKAGE unless the
# check passes (after one apt-get update for all); CI fails without it, elsewhere the tests
# that need it are skipped.
apt_updated=false
debian_package() {
    local package=$1 present=$2 needed_by=$3 sudo=""
    if eval "$present"; then
        echo "already installed"
        return
    fi
    [ "$(id -u)" = 0 ] || sudo="sudo -n"
    if { $apt_updated || { $sudo apt-get update -q >/dev/null && apt_updated=true; }; } && \
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "$package" >/dev/null; then
        echo "installed"
    elif [ "${CI:-}" = true ]; then
        echo "cannot install Debian's $package package, and CI needs it" >&2
        exit 1
    else
        echo "warning: $package not installed; $needed_by will be skipped" >&2
    fi
}

step "ZooKeeper (Debian's zookeeper package)"
debian_package zookeeper "[ -f /usr/share/java/zookeeper.jar ]" "integration tests"

step "tmux (Debian's tmux package: the terminal test of minikafka watch)"
debian_package tmux "command -v tmux >/dev/null" "the terminal test of minikafka watch"

step "kcat (Debian's kcat package: the secured compose cluster's e2e test and README example)"
debian_package kcat "command -v kcat >/dev/null" "the kcat part of the secured cluster e2e test"

step "ruff"
"$venv/bin/ruff" check .
"$venv/bin/ruff" format --check .

step "the installed layout under build/ (for mypy and import-linter)"
scripts/link-tree.sh

step "mypy"
"$venv/bin/mypy"

step "import-linter (.importlinter: which way imports go)"
lint_imports="$(cd "$venv/bin" && pwd)/lint-imports"
(cd build/imports && "$lint_imports" "$OLDPWD/.importlinter")

pytest="$venv/bin/pytest"
if [ "$#" != 0 ]; then
    step "pytest $*"
    exec "$pytest" "$@"
fi

# The whole suite, in phases; each runs whatever came before failed, and the script fails at
# the end if any did. Two workers (pytest-xdist, this machine's two cores) for the unit tests
# and for the integration files, a file to a worker (each integration test starts its own
# brokers on ports of its worker's own range); the timing-bound files (marked serial), Spark
# and the docker compose cluster alone.
failed=()
phase() {
    local name=$1
    shift
    step "pytest: $name"
    "$@" || failed+=("$name")
}
# The record codec and the client also run without proto._crecords (a machine without a
# compiler, or MINIKAFKA_PURE_PYTHON=1): their unit tests once more on the Python code.
phase "the record codec and the client on the pure-Python code" \
    env MINIKAFKA_PURE_PYTHON=1 "$pytest" -q -p no:cacheprovider tests/unit/proto tests/unit/client
phase "unit tests, two workers" "$pytest" -n 2 tests/unit
phase "integration tests, two workers" "$pytest" -n 2 --dist loadfile -m "not serial" tests/integration
phase "timing-bound integration tests, alone" "$pytest" -m serial tests/integration
phase "Spark (local mode) and e2e (docker compose)" "$pytest" tests/spark tests/e2e
if [ "${#failed[@]}" != 0 ]; then
    printf '\nfailed: %s\n' "${failed[@]}" >&2
    exit 1
fi
