#!/usr/bin/env bash
# Regenerate the Python modules of the gRPC wire from proto/minikafka.proto:
#   proto/minikafka_pb2.py       messages
#   proto/minikafka_pb2.pyi      type stubs for them
#   proto/minikafka_pb2_grpc.py  service stubs and servicer bases
#   proto/minikafka_pb2_grpc.pyi type stubs for them (mypy-protobuf's protoc-gen-mypy_grpc)
# proto/ installs as the package minikafka.proto (setup.py), so protoc sees the .proto at
# `minikafka/proto/minikafka.proto` in a staging tree: the messages register under that name
# and the service module imports `from minikafka.proto import minikafka_pb2`.
#
#   scripts/gen-proto.sh           rewrite the checked-in files
#   scripts/gen-proto.sh --check   generate into a temporary directory and fail (exit 1) if the
#                                  checked-in files differ from it
#
# The output depends on the grpcio-tools version (it stamps its own version and protobuf's into
# the files), and so does mypy-protobuf's; pyproject.toml pins both exactly in the dev extra.
# PYTHON selects the interpreter (default: the repository's .venv, else python3).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi

source_file=proto/minikafka.proto
generated=(proto/minikafka_pb2.py proto/minikafka_pb2.pyi proto/minikafka_pb2_grpc.py
    proto/minikafka_pb2_grpc.pyi)

# mypy-protobuf's plugin, installed next to the interpreter (the dev extra), types the services.
mypy_grpc_plugin=$("$PYTHON" -c 'import os, sys; print(os.path.join(os.path.dirname(sys.executable), "protoc-gen-mypy_grpc"))')
if [ ! -x "$mypy_grpc_plugin" ]; then
    echo "$mypy_grpc_plugin not found: install the dev extra (pip install -e '.[dev]')" >&2
    exit 2
fi

generate() {  # $1: output folder (the generated files land in $1/proto/)
    local stage
    stage=$(mktemp -d)
    mkdir -p "$stage/src/minikafka/proto" "$stage/out" "$1/proto"
    cp "$source_file" "$stage/src/minikafka/proto/"
    "$PYTHON" -m grpc_tools.protoc -I"$stage/src" \
        --python_out="$stage/out" --pyi_out="$stage/out" --grpc_python_out="$stage/out" \
        --plugin=protoc-gen-mypy_grpc="$mypy_grpc_plugin" --mypy_grpc_out=quiet:"$stage/out" \
        "$stage/src/minikafka/proto/minikafka.proto"
    cp "$stage"/out/minikafka/proto/* "$1/proto/"
    rm -rf "$stage"
}

case "${1:-}" in
    "")
        generate .
        echo "regenerated ${generated[*]}"
        ;;
    --check)
        tmp=$(mktemp -d)
        trap 'rm -rf "$tmp"' EXIT
        mkdir -p "$tmp/proto"
        generate "$tmp"
        stale=()
        for file in "${generated[@]}"; do
            if ! cmp -s "$file" "$tmp/$file"; then
                stale+=("$file")
            fi
        done
        if [ ${#stale[@]} -ne 0 ]; then
            echo "generated code is stale or edited by hand: ${stale[*]}" >&2
            echo "it does not match what $source_file generates;" \
                "run scripts/gen-proto.sh and commit the result" >&2
            for file in "${stale[@]}"; do
                if [ -f "$file" ]; then
                    diff -u "$file" "$tmp/$file" | head -n 20 >&2 || true
                else
                    echo "($file is missing)" >&2
                fi
            done
            exit 1
        fi
        echo "generated code is up to date with $source_file"
        ;;
    *)
        echo "usage: $0 [--check]" >&2
        exit 2
        ;;
esac
