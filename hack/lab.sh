#!/usr/bin/env bash
# The README's first command: install what the lab needs (idempotent), then run a
# Benchmark for real on this machine. Default: the quickstart example.
#   hack/lab.sh [FILE] [OUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
file=${1:-$root/manifests/examples/lab-quickstart.yaml}
out=${2:-$root/out/quickstart}
"$root/hack/python-env.sh"
# the lab writes bundles locally (S3 only when the Benchmark names an endpoint)
WANWIDE_LAB_SKIP_S3=1 "$root/hack/install-lab.sh"
# each trial's load waits for a quiet machine, here at most 2 min (then it runs and the report says
# the trial was noisy): a newcomer's busy machine does not hold the quickstart for 10 min a trial
exec "$root/.venv/bin/wanwide" lab run -f "$file" -o "$out" --quiet-max-wait 120
