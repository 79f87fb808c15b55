#!/usr/bin/env bash
# Make `docker-compose up --build` work on a Docker engine that cannot pull images.
#
#   scripts/offline-images.sh            # what is missing: base images, then the wheelhouse
#   scripts/offline-images.sh --force    # rebuild the stand-ins and the wheelhouse
#
# 1. Base images, under the SAME names docker/Dockerfile and docker-compose.yml use. Each missing
#    one is pulled first; when the pull fails (no registry), a local stand-in is built:
#      python:3.11-slim-bookworm  Debian bookworm (debootstrap minbase) with python3 and venv
#      zookeeper:3.8              the same rootfs plus Debian's ZooKeeper 3.8 jars and JRE 17,
#                                 behaving like the official image: standalone on 2181, data in
#                                 /data, started by the default CMD (docker/zookeeper/)
#    debootstrap, chroot and apt-get run on the host (they need root, or sudo without a password)
#    against Debian's mirror the host's apt sources name; `docker import` turns each rootfs
#    into an image. Nothing runs inside `docker build`, so no network is needed there.
# 2. A wheelhouse, docker/wheels/ (git-ignored): the project's dependencies as wheels for the
#    image's CPython 3.11, downloaded on the host by pip with the host's pip configuration (its
#    index, proxy and certificates). docker/Dockerfile installs from it with --no-index when it
#    holds wheels, and from the Python package index otherwise.
#
# Idempotent: an image that exists is kept, and the wheelhouse is kept while pyproject.toml's
# dependencies are unchanged. Environment: DEBIAN_MIRROR (default: the first Debian URI of the
# host's apt sources), PYTHON
# (the interpreter whose pip downloads the wheels: .venv/bin/python, else python3),
# MINIKAFKA_NO_PULL=1 (build stand-ins without trying to pull).
set -euo pipefail
cd "$(dirname "$0")/.."

readonly PYTHON_IMAGE=python:3.11-slim-bookworm
readonly ZOOKEEPER_IMAGE=zookeeper:3.8
readonly SUITE=bookworm
host_mirror() {  # the first Debian archive the host's apt sources name (not its security one)
    # Either file kind may be missing: grep's exit status must not end the script (pipefail).
    local uris
    uris=$(
        cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '$1 == "URIs:" {print $2}'
        cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
            awk '$1 == "deb" {print $2}'
    ) || true
    printf '%s\n' "$uris" | awk '!/-security/ && NF {print; exit}'
}
MIRROR=${DEBIAN_MIRROR:-$(host_mirror)}
readonly MIRROR
readonly WHEELHOUSE=docker/wheels
# Dependencies published as source only (no wheel on the index), all pure Python: built into
# wheels here (py3-none-any, fit for the image's interpreter), as the download takes wheels only.
readonly SOURCE_ONLY='pure-sasl'
readonly STAND_IN_LABEL=io.minikafka.offline-stand-in

force=false
case "${1:-}" in
    "") ;;
    --force) force=true ;;
    *)
        echo "usage: $0 [--force]" >&2
        exit 2
        ;;
esac

step() { printf '== %s\n' "$*"; }
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo -n"

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

# True when $1 has to be built here: missing, or --force on a stand-in we built before.
needs_stand_in() {
    local image=$1
    if image_exists "$image"; then
        if $force && docker image inspect -f '{{json .Config.Labels}}' "$image" |
            grep -q "\"$STAND_IN_LABEL\""; then
            return 0
        fi
        echo "$image: present"
        return 1
    fi
    if [ "${MINIKAFKA_NO_PULL:-}" != 1 ] && docker pull -q "$image" >/dev/null 2>&1; then
        echo "$image: pulled"
        return 1
    fi
    echo "$image: cannot be pulled, building a local stand-in"
    return 0
}

workdir=""
cleanup() {
    [ -n "$workdir" ] || return 0
    local proc="$workdir/zookeeper/proc"
    if mountpoint -q "$proc" 2>/dev/null && ! $sudo umount "$proc"; then
        # Never rm -rf through a mounted /proc.
        echo "warning: $proc is still mounted; left $workdir in place" >&2
        return 0
    fi
    $sudo rm -rf "$workdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Debian bookworm with python3 and venv, from the host's mirror: the common rootfs of both images.
make_base_rootfs() {
    local root=$1
    command -v debootstrap >/dev/null || $sudo apt-get install -y -q debootstrap >/dev/null ||
        { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q debootstrap >/dev/null; }
    $sudo debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
        "$SUITE" "$root" "$MIRROR" >"$workdir/debootstrap.log" 2>&1 ||
        { tail -20 "$workdir/debootstrap.log" >&2; return 1; }
}

# Drop what an image does not need: package caches and lists, docs, man pages, translations.
slim_rootfs() {
    local root=$1
    $sudo rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin \
        "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* "$root"/usr/share/man/* \
        "$root"/usr/share/info/* "$root"/var/log/*.log "$root"/var/log/apt/*
    find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name 'C.*' ! -name locale.alias \
        -exec $sudo rm -rf {} + 2>/dev/null || true
}

# tar the rootfs into `docker import`; the remaining arguments are --change instructions.
import_rootfs() {
    local root=$1 image=$2
    shift 2
    local changes=(--change "LABEL $STAND_IN_LABEL=debootstrap-$SUITE")
    for change in "$@"; do changes+=(--change "$change"); done
    $sudo tar -C "$root" --numeric-owner --exclude='./dev/*' --exclude='./proc/*' \
        --exclude='./sys/*' -c . | docker import "${changes[@]}" - "$image" >/dev/null
    echo "$image: imported ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%d MB", $1/1e6}'))"
}

build_python_image() {
    local root=$1
    import_rootfs "$root" "$PYTHON_IMAGE" \
        'ENV LANG=C.UTF-8' 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        'CMD ["python3"]'
}

# Debian's ZooKeeper jars and JRE installed with apt-get in a chroot (java's postinst needs /proc);
# the host's resolver and CA bundle are copied in for the duration, then the originals restored.
build_zookeeper_image() {
    local root=$1
    local ca=etc/ssl/certs/ca-certificates.crt
    $sudo cp -a "$root/etc/resolv.conf" "$root/etc/hosts" "$root/$ca" "$workdir/" 2>/dev/null || true
    $sudo cp /etc/resolv.conf /etc/hosts "$root/etc/"
    $sudo cp "/$ca" "$root/$ca"
    $sudo mount -t proc proc "$root/proc"
    $sudo chroot "$root" /bin/sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends libzookeeper-java openjdk-17-jre-headless' \
        >"$workdir/zookeeper-apt.log" 2>&1 ||
        { tail -20 "$workdir/zookeeper-apt.log" >&2; return 1; }
    $sudo umount "$root/proc"
    $sudo cp "$workdir/resolv.conf" "$workdir/hosts" "$root/etc/" 2>/dev/null || true
    $sudo cp "$workdir/ca-certificates.crt" "$root/$ca" 2>/dev/null || true

    $sudo chroot "$root" /bin/sh -c 'groupadd --gid 1000 zookeeper &&
        useradd --no-log-init --uid 1000 --gid zookeeper --no-create-home --home-dir /data \
            --shell /usr/sbin/nologin zookeeper &&
        mkdir -p /conf /data /datalog /logs /usr/local/share/zookeeper &&
        chown zookeeper:zookeeper /conf /data /datalog /logs'
    $sudo install -m 0755 docker/zookeeper/docker-entrypoint.sh "$root/docker-entrypoint.sh"
    $sudo install -m 0755 docker/zookeeper/zkServer.sh "$root/usr/local/bin/zkServer.sh"
    $sudo install -m 0644 docker/zookeeper/log4j.properties \
        "$root/usr/local/share/zookeeper/log4j.properties"
    slim_rootfs "$root"
    import_rootfs "$root" "$ZOOKEEPER_IMAGE" \
        'ENV LANG=C.UTF-8' 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        'ENV ZOO_CONF_DIR=/conf' 'ENV ZOO_DATA_DIR=/data' 'ENV ZOO_DATA_LOG_DIR=/datalog' \
        'ENV ZOO_LOG_DIR=/logs' 'VOLUME ["/data", "/datalog", "/logs"]' \
        'EXPOSE 2181 2888 3888 8080' 'WORKDIR /' \
        'ENTRYPOINT ["/docker-entrypoint.sh"]' 'CMD ["zkServer.sh", "start-foreground"]'
}

build_images() {
    local want_python=$1 want_zookeeper=$2
    if [ -z "$MIRROR" ]; then
        echo "no Debian mirror in the host's apt sources: set DEBIAN_MIRROR" >&2
        exit 1
    fi
    workdir=$(mktemp -d "${TMPDIR:-/var/tmp}/minikafka-images.XXXXXX")
    step "debootstrap $SUITE from $MIRROR"
    make_base_rootfs "$workdir/base"
    if $want_zookeeper; then
        $sudo cp -a "$workdir/base" "$workdir/zookeeper"
    fi
    if $want_python; then
        step "$PYTHON_IMAGE (stand-in)"
        slim_rootfs "$workdir/base"
        build_python_image "$workdir/base"
    fi
    if $want_zookeeper; then
        step "$ZOOKEEPER_IMAGE (stand-in)"
        build_zookeeper_image "$workdir/zookeeper"
    fi
}

# The wheelhouse: pyproject's dependencies plus the build backend, for CPython 3.11 on this
# machine's architecture (manylinux up to bookworm's glibc 2.36), whatever python runs pip here.
build_wheelhouse() {
    local python=${PYTHON:-}
    if [ -z "$python" ]; then
        if [ -x .venv/bin/python ]; then python=.venv/bin/python; else python=python3; fi
    fi
    local requirements
    requirements=$("$python" - <<'EOF'
import tomllib

with open("pyproject.toml", "rb") as f:
    pyproject = tomllib.load(f)
print("\n".join([*pyproject["project"]["dependencies"], *pyproject["build-system"]["requires"]]))
EOF
)
    local arch stamp
    arch=$(uname -m)
    stamp=$(printf '%s\n%s\n' "$arch" "$requirements" | sha256sum | cut -d' ' -f1)
    if ! $force && [ "$(cat "$WHEELHOUSE/.stamp" 2>/dev/null)" = "$stamp" ] &&
        compgen -G "$WHEELHOUSE/*.whl" >/dev/null; then
        echo "$WHEELHOUSE: present ($(find "$WHEELHOUSE" -name '*.whl' | wc -l) wheels)"
        return 0
    fi
    local platforms=() n
    for n in $(seq 36 -1 17); do platforms+=(--platform "manylinux_2_${n}_${arch}"); done
    platforms+=(--platform "manylinux2014_${arch}")
    [ "$arch" != x86_64 ] || platforms+=(--platform manylinux2010_x86_64 --platform manylinux1_x86_64)
    find "$WHEELHOUSE" -name '*.whl' -delete
    rm -f "$WHEELHOUSE/.stamp"
    # One requirement per line of a file: a requirement may hold spaces (an environment marker).
    local list sources source_only="^(${SOURCE_ONLY// /|})([<>=!~ ;[]|\$)"
    list=$(mktemp)
    sources=$(mktemp)
    printf '%s\n' "$requirements" | grep -Ev "$source_only" >"$list" || true
    printf '%s\n' "$requirements" | grep -E "$source_only" >"$sources" || true
    "$python" -m pip download -q --disable-pip-version-check --dest "$WHEELHOUSE" \
        --only-binary=:all: --implementation cp --python-version 3.11 --abi cp311 \
        "${platforms[@]}" -r "$list"
    if [ -s "$sources" ]; then
        "$python" -m pip wheel -q --disable-pip-version-check --no-deps \
            --wheel-dir "$WHEELHOUSE" -r "$sources"
    fi
    rm -f "$list" "$sources"
    echo "$stamp" >"$WHEELHOUSE/.stamp"
    echo "$WHEELHOUSE: $(find "$WHEELHOUSE" -name '*.whl' | wc -l) wheels"
}

start=$SECONDS
step "base images"
want_python=false want_zookeeper=false
if needs_stand_in "$PYTHON_IMAGE"; then want_python=true; fi
if needs_stand_in "$ZOOKEEPER_IMAGE"; then want_zookeeper=true; fi
if $want_python || $want_zookeeper; then
    build_images "$want_python" "$want_zookeeper"
fi
step "wheelhouse (pip download, with this host's pip configuration)"
build_wheelhouse
step "done in $((SECONDS - start)) s"
