#!/usr/bin/env bash
# Lay out the package as it installs (setup.py's package-dir mapping: broker/ at
# minikafka/broker, spark_jobs/ at minikafka/spark, ...) for the tools that read source trees
# and cannot follow setuptools' editable finder:
#   build/tree/minikafka     symlinks to the repository's files and folders (mypy: its errors
#                            name files a developer can open)
#   build/imports/minikafka  a copy of the Python files (import-linter: grimp does not follow
#                            symlinked folders)
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf build/tree build/imports
mkdir -p build/tree/minikafka
for file in minikafka/*.py; do
    ln -s "../../../$file" "build/tree/$file"
done
while read -r package folder; do
    ln -s "../../../$folder" "build/tree/minikafka/$package"
done <<'MAP'
proto proto
broker broker
controller controller
zk zk
client client
spark spark_jobs
MAP
cp -rL build/tree build/imports
find build/imports -depth -name __pycache__ -exec rm -rf {} +
find build/imports -type f -not -name '*.py' -delete
