#!/usr/bin/env bash
# Upstream Helm charts, ready to install, from the mirrored sources ($WANWIDE_UPSTREAM_DIR
# when set) or fetched from upstream at the pinned commits (as a user would):
#   keystone               openstack-helm keystone, tag 2026.1.0, with its helm-toolkit
#   rabbitmq placement glance nova neutron   the same tag's charts of issue 45's control plane, each with helm-toolkit
#   mariadb-operator       mariadb-operator v26.6.0's chart, with its CRD chart
#   mariadb-operator-crds  that CRD chart alone
# A chart's `file://../<sibling>` dependencies are packaged with `helm dependency build`
# into a cached copy keyed by content; the upstream trees themselves are never changed.
#
#   hack/upstream-charts.sh path NAME     # prints the chart directory
#
# Environment: WANWIDE_UPSTREAM_DIR, WANWIDE_CACHE (default ~/.cache/wanwide), HELM
# (default: helm on PATH, else the test cluster's cached one).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_TAG=upstream-charts
# shellcheck source=hack/lib.sh
source "$ROOT/hack/lib.sh"
trap 'on_error_report $? "$BASH_COMMAND" $LINENO' ERR

# shellcheck disable=SC2034  # read through a nameref in upstream_dir
UP_OSH=(openstack-helm-2026.1.0 https://github.com/openstack/openstack-helm.git c665eedfa3ae1b76a7e8438fffcb62aefaa30a46)
# shellcheck disable=SC2034
UP_MARIADB_OPERATOR=(mariadb-operator-v26.6.0 https://github.com/mariadb-operator/mariadb-operator.git b2f76016ff71926414367f5347010766a7a1c257)
CACHE=${WANWIDE_CACHE:-$HOME/.cache/wanwide}

helm_bin() {
  if [[ -n ${HELM:-} ]]; then echo "$HELM"; return 0; fi
  command -v helm && return 0
  local h
  h=$(find "$CACHE/bin" -maxdepth 1 -name 'helm-v*' -type f 2>/dev/null | sort | tail -n 1 || true)
  [[ -n $h ]] || { log "ERROR: no helm (hack/testcluster.sh build makes one; or set HELM)"; return 1; }
  echo "$h"
}

chart_copy() { # DIR CHART [SIBLING...]: CHART (under DIR) with its siblings' charts packaged in
  local dir=$1 chart=$2 key d dest helm
  shift 2
  key=$(for d in "$chart" "$@"; do tree_hash "$dir/$d"; done | sha256sum | cut -c1-12)
  dest=$CACHE/charts/$chart-$key
  if [[ ! -f $dest/$chart/Chart.yaml ]]; then
    helm=$(helm_bin)
    step "helm dependency build $chart ($dir)"
    rm -rf "$dest.tmp"
    mkdir -p "$dest.tmp"
    for d in "$chart" "$@"; do cp -r "$dir/$d" "$dest.tmp/"; done
    "$helm" dependency build "$dest.tmp/$chart" >&2
    rm -rf "$dest"
    mv "$dest.tmp" "$dest"
    step_end
  fi
  echo "$dest/$chart"
}

cmd_path() {
  local src
  case ${1:-} in
    keystone|rabbitmq|placement|glance|nova|neutron)
      src=$(upstream_dir UP_OSH)
      chart_copy "$src" "$1" helm-toolkit ;;
    mariadb-operator)
      src=$(upstream_dir UP_MARIADB_OPERATOR)
      chart_copy "$src/deploy/charts" mariadb-operator mariadb-operator-crds ;;
    mariadb-operator-crds)
      src=$(upstream_dir UP_MARIADB_OPERATOR)
      echo "$src/deploy/charts/mariadb-operator-crds" ;;
    *) log "ERROR: path NAME: keystone | rabbitmq | placement | glance | nova | neutron | mariadb-operator | mariadb-operator-crds"; return 2 ;;
  esac
}

case "${1:-}" in
  path) shift; cmd_path "$@" ;;
  -h|--help|"") sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; [[ -n ${1:-} ]] ;;
  *) log "ERROR: unknown command $1 (path)"; exit 2 ;;
esac
