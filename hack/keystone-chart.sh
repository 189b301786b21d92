#!/usr/bin/env bash
# The openstack-helm keystone chart (tag 2026.1.0) with its helm-toolkit, ready to install:
# taken from $WANWIDE_UPSTREAM_DIR/openstack-helm-2026.1.0 when set, otherwise fetched from
# upstream at the pinned commit (as a user would). The chart's `file://../helm-toolkit`
# dependency is packaged with `helm dependency build` into a cached copy; the trees
# themselves are never changed.
#
#   hack/keystone-chart.sh path     # prints the chart directory (built once per content)
#
# Environment: WANWIDE_UPSTREAM_DIR, WANWIDE_CACHE (default ~/.cache/wanwide), HELM (default:
# helm on PATH, else the test cluster's).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_TAG=keystone-chart
# shellcheck source=hack/lib.sh
source "$ROOT/hack/lib.sh"
trap 'on_error_report $? "$BASH_COMMAND" $LINENO' ERR

# shellcheck disable=SC2034  # read through a nameref in upstream_dir
UP_OSH=(openstack-helm-2026.1.0 https://github.com/openstack/openstack-helm.git c665eedfa3ae1b76a7e8438fffcb62aefaa30a46)
CACHE=${WANWIDE_CACHE:-$HOME/.cache/wanwide}

helm_bin() {
  if [[ -n ${HELM:-} ]]; then echo "$HELM"; return 0; fi
  command -v helm && return 0
  local h
  h=$(find "$CACHE/bin" -maxdepth 1 -name 'helm-v*' -type f 2>/dev/null | sort | tail -n 1)
  [[ -n $h ]] || { log "ERROR: no helm (hack/testcluster.sh build makes one; or set HELM)"; return 1; }
  echo "$h"
}

cmd_path() {
  local src key dest helm
  src=$(upstream_dir UP_OSH)
  [[ -d $src/keystone && -d $src/helm-toolkit ]] || { log "ERROR: $src lacks keystone/ or helm-toolkit/"; return 1; }
  key=$(cat <(tree_hash "$src/keystone") <(tree_hash "$src/helm-toolkit") | sha256sum | cut -c1-12)
  dest=$CACHE/charts/openstack-helm-$key
  if [[ ! -f $dest/keystone/Chart.lock ]]; then
    helm=$(helm_bin)
    step "helm dependency build keystone ($src)"
    rm -rf "$dest.tmp"
    mkdir -p "$dest.tmp"
    cp -r "$src/keystone" "$src/helm-toolkit" "$dest.tmp/"
    "$helm" dependency build "$dest.tmp/keystone" >&2
    rm -rf "$dest"
    mv "$dest.tmp" "$dest"
    step_end
  fi
  echo "$dest/keystone"
}

case "${1:-}" in
  path) cmd_path ;;
  -h|--help|"") sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; [[ -n ${1:-} ]] ;;
  *) log "ERROR: unknown command $1 (path)"; exit 2 ;;
esac
