#!/usr/bin/env bash
# Argo CD pieces the tests use, from the Go module proxy (no cluster, no Argo CD install).
#
#   hack/argocd.sh luacheck    # build (once) hack/luacheck, Argo CD's health-script runtime
#                              # (gopher-lua, Lua 5.1), into the cache; print its path
#   hack/argocd.sh module      # the pinned Argo CD module's directory in the Go module cache
#                              # (go.mod, resource_customizations/, manifests/crds/)
#   hack/argocd.sh versions
#
# The binary is cached as $WANWIDE_CACHE/bin/luacheck-<hash of hack/luacheck>: an edit
# rebuilds it. hack/luacheck/go.mod requires gopher-lua and gopher-json at the versions
# the pinned Argo CD's go.mod requires (tests/test_argocd_health.py checks it).
set -euo pipefail

# v3.6.x needs go >= 1.27 to be extracted; v3.5.7 pins the same gopher-lua v1.1.2 and
# gopher-json as v3.6.1, and runs health scripts the same way (util/lua).
ARGOCD_MODULE=github.com/argoproj/argo-cd/v3
ARGOCD_VERSION=v3.5.7

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_TAG=argocd
# shellcheck source=lib.sh
source "$root/hack/lib.sh"
CACHE=${WANWIDE_CACHE:-$HOME/.cache/wanwide}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
gorun() { GOFLAGS=-buildvcs=false GOTOOLCHAIN=local CGO_ENABLED=0 "$GO" "$@"; }

luacheck() {
  local src=$root/hack/luacheck out
  out=$CACHE/bin/luacheck-$(tree_hash "$src" | cut -c1-12)
  if [[ ! -x $out ]]; then
    mkdir -p "$CACHE/bin"
    log "building luacheck (gopher-lua from the Go module proxy; seconds)"
    (cd "$src" && gorun build -trimpath -ldflags='-s -w' -o "$out.tmp.$$" .)
    mv -f "$out.tmp.$$" "$out"
  fi
  echo "$out"
}

module() {
  local dir json
  dir=$(GOFLAGS="" GOTOOLCHAIN=local "$GO" env GOMODCACHE)/$ARGOCD_MODULE@$ARGOCD_VERSION
  if [[ ! -d $dir ]]; then
    json=$(cd "${TMPDIR:-/tmp}" && GOFLAGS="" GOTOOLCHAIN=local "$GO" mod download -json "$ARGOCD_MODULE@$ARGOCD_VERSION") || {
      log "ERROR: cannot download $ARGOCD_MODULE@$ARGOCD_VERSION:"; echo "$json" >&2; exit 1; }
    dir=$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' <<<"$json")
    [[ -d $dir ]] || { log "ERROR: no Dir for $ARGOCD_MODULE@$ARGOCD_VERSION: $json"; exit 1; }
  fi
  echo "$dir"
}

case ${1:-} in
  luacheck) luacheck ;;
  module) module ;;
  versions) echo "argo-cd $ARGOCD_MODULE@$ARGOCD_VERSION" ;;
  *) echo "usage: $0 luacheck|module|versions" >&2; exit 2 ;;
esac
