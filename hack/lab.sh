#!/usr/bin/env bash
# The README's first command: install what the lab needs (idempotent), then run a
# Benchmark for real on this machine. Default: the quickstart example.
#   hack/lab.sh [FILE] [OUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
file=${1:-$root/manifests/examples/lab-quickstart.yaml}
out=${2:-$root/out/quickstart}
"$root/hack/python-env.sh"
"$root/hack/install-lab.sh"
exec "$root/.venv/bin/wanwide" lab run -f "$file" -o "$out"
