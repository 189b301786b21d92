#!/usr/bin/env bash
# Regenerates everything derived from the models: crds/, the chart's files/crds/ (read by its
# templates/crds.yaml), docs/reference.md, the
# runner.pod part of the chart's values.schema.json.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py="$root/.venv/bin/python"
"$py" -m wanwide.cli crds --out "$root/crds" >/dev/null
rm -f "$root"/charts/wanwide/files/crds/*.yaml
cp "$root"/crds/*.yaml "$root/charts/wanwide/files/crds/"
"$py" -m wanwide.docs > "$root/docs/reference.md"
"$py" -c 'import sys; from wanwide.crds import sync_values_schema; sync_values_schema(sys.argv[1])' \
  "$root/charts/wanwide/values.schema.json"
echo "regenerated crds/, charts/wanwide/files/crds/, docs/reference.md, charts/wanwide/values.schema.json (runner.pod)"
