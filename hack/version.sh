#!/usr/bin/env bash
# The release version, kept in one place: operator/wanwide/__init__.py (__version__). The Python
# package reads it (pyproject.toml: dynamic version); this script writes it into what cannot read
# it: the chart's version and appVersion, the image tags the docs show, the chart README.
#   hack/version.sh            print the version
#   hack/version.sh X.Y.Z      set it everywhere (then commit, tag vX.Y.Z)
#   hack/version.sh --check V  exit 1 unless the tree is at version V (the release job, on a tag)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
init="$root/operator/wanwide/__init__.py"
current=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$init")
case "${1:-}" in
  "") echo "$current" ;;
  --check)
    want=${2:?--check needs a version}
    if [[ $want != "$current" ]]; then
      echo "the tree is at $current, the tag asks for $want: run hack/version.sh $want, commit, tag again" >&2
      exit 1
    fi
    ;;
  *)
    new=$1
    [[ $new =~ ^[0-9]+\.[0-9]+\.[0-9]+([-+.][0-9A-Za-z.]+)?$ ]] || { echo "not a version: $new" >&2; exit 2; }
    sed -i "s/^__version__ = \".*\"$/__version__ = \"$new\"/" "$init"
    sed -i -e "s/^version: .*/version: $new/" -e "s/^appVersion: .*/appVersion: \"$new\"/" \
      "$root/charts/wanwide/Chart.yaml"
    # grep finds nothing (exit 1) once no file shows the old tag: not a failure under pipefail
    { grep -rlF "ghcr.io/wanwide/wanwide:$current" "$root/README.md" "$root/Dockerfile" "$root/docs" "$root/hack" "$root/manifests" || true; } |
      while read -r f; do sed -i "s|ghcr.io/wanwide/wanwide:$current|ghcr.io/wanwide/wanwide:$new|g" "$f"; done
    "$root/hack/chart-docs.sh"  # the chart README shows the version
    echo "version $current -> $new"
    ;;
esac
