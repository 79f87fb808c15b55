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

step "ZooKeeper (Debian's zookeeper package)"
if [ -f /usr/share/java/zookeeper.jar ]; then
    echo "already installed"
else
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo -n"
    if $sudo apt-get update -q >/dev/null && \
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends zookeeper >/dev/null; then
        echo "installed"
    elif [ "${CI:-}" = true ]; then
        echo "cannot install Debian's zookeeper package, and CI needs it" >&2
        exit 1
    else
        echo "warning: zookeeper not installed; integration tests will be skipped" >&2
    fi
fi

step "tmux (Debian's tmux package: the terminal test of minikafka watch)"
if command -v tmux >/dev/null; then
    echo "already installed"
else
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo -n"
    if $sudo apt-get update -q >/dev/null && \
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends tmux >/dev/null; then
        echo "installed"
    elif [ "${CI:-}" = true ]; then
        echo "cannot install Debian's tmux package, and CI needs it" >&2
        exit 1
    else
        echo "warning: tmux not installed; the terminal test of minikafka watch will be skipped" >&2
    fi
fi

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

if [ "$#" = 0 ]; then
    # The record codec and the client also run without proto._crecords (a machine without a
    # compiler, or MINIKAFKA_PURE_PYTHON=1): their unit tests once more on the Python code.
    step "pytest: the record codec and the client on the pure-Python code"
    MINIKAFKA_PURE_PYTHON=1 "$venv/bin/pytest" -q -p no:cacheprovider tests/unit/proto tests/unit/client
fi

step "pytest"
exec "$venv/bin/pytest" "$@"
