#!/usr/bin/env bash
# Regenerates everything derived from the models: crds/, the chart's crds/, docs/reference.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py="$root/.venv/bin/python"
"$py" -m wanwide.cli crds --out "$root/crds" >/dev/null
rm -f "$root"/charts/wanwide/crds/*.yaml
cp "$root"/crds/*.yaml "$root/charts/wanwide/crds/"
"$py" -m wanwide.docs > "$root/docs/reference.md"
echo "regenerated crds/, charts/wanwide/crds/, docs/reference.md"
