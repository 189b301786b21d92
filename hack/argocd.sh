#!/usr/bin/env bash
# Argo CD pieces the tests use, from the Go module proxy (no cluster, no Argo CD install).
#
#   hack/argocd.sh module      # the pinned Argo CD module's directory in the Go module cache
#                              # (go.mod, resource_customizations/, manifests/crds/)
#   hack/argocd.sh cli         # build (once) the argocd CLI into the cache; print its path. Its
#                              # `argocd admin settings resource-overrides health OBJ --argocd-cm-path CM`
#                              # is Argo CD's own health test (tests/test_argocd_health.py runs it)
#   hack/argocd.sh versions
set -euo pipefail

# v3.6.x needs go >= 1.27 to be extracted; v3.5.7 pins the same gopher-lua v1.1.2 and
# gopher-json as v3.6.1, and runs health scripts the same way (util/lua).
ARGOCD_MODULE=github.com/argoproj/argo-cd/v3
ARGOCD_VERSION=v3.5.7
# The CLI: v3.x cannot be built from the Go module proxy (its go.mod replaces the gitops-engine
# module with ./gitops-engine, a nested module the module zip leaves out, and the proxy refuses
# that gitops-engine version: 403). v2.14.21 requires github.com/argoproj/gitops-engine, which it
# serves; the health command is the same (util/lua, gopher-lua v1.1.x).
ARGOCD_CLI_MODULE=github.com/argoproj/argo-cd/v2
ARGOCD_CLI_VERSION=v2.14.21

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_TAG=argocd
# shellcheck source=lib.sh
source "$root/hack/lib.sh"
CACHE=${WANWIDE_CACHE:-$HOME/.cache/wanwide}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
gorun() { GOFLAGS=-buildvcs=false GOTOOLCHAIN=local CGO_ENABLED=0 "$GO" "$@"; }

need_go() {
  command -v "$GO" >/dev/null 2>&1 || {
    log "ERROR: Go is needed to build $1 from the Go module proxy (GO=$GO not found): install Go or set GO"; exit 1; }
}

module_dir() { # MODULE VERSION: its directory in the Go module cache (downloaded if need be)
  local mod=$1 ver=$2 dir json
  need_go "$mod"
  dir=$(GOFLAGS="" GOTOOLCHAIN=local "$GO" env GOMODCACHE)/$mod@$ver
  if [[ ! -d $dir ]]; then
    json=$(cd "${TMPDIR:-/tmp}" && GOFLAGS="" GOTOOLCHAIN=local "$GO" mod download -json "$mod@$ver") || {
      log "ERROR: cannot download $mod@$ver:"; echo "$json" >&2; exit 1; }
    dir=$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' <<<"$json")
    [[ -d $dir ]] || { log "ERROR: no Dir for $mod@$ver: $json"; exit 1; }
  fi
  echo "$dir"
}

module() { module_dir "$ARGOCD_MODULE" "$ARGOCD_VERSION"; }

cli() {
  local out=$CACHE/bin/argocd-$ARGOCD_CLI_VERSION src
  if [[ ! -x $out ]]; then
    # `go install pkg@version` refuses a module with replace directives: build in a copy of it
    src=$CACHE/build/argocd-$ARGOCD_CLI_VERSION
    rm -rf "$src"; mkdir -p "$CACHE/bin" "$CACHE/build"
    cp -r "$(module_dir "$ARGOCD_CLI_MODULE" "$ARGOCD_CLI_VERSION")" "$src"; chmod -R u+w "$src"
    log "building the argocd CLI $ARGOCD_CLI_VERSION (Go module proxy; ~10 min on 2 cores, once)"
    (cd "$src" && gorun build -mod=mod -trimpath -ldflags='-s -w' -o "$out.tmp.$$" ./cmd)
    mv -f "$out.tmp.$$" "$out"
    rm -rf "$src"
  fi
  echo "$out"
}

case ${1:-} in
  module) module ;;
  cli) cli ;;
  versions) echo "argo-cd $ARGOCD_MODULE@$ARGOCD_VERSION; CLI $ARGOCD_CLI_MODULE@$ARGOCD_CLI_VERSION" ;;
  *) echo "usage: $0 module|cli|versions" >&2; exit 2 ;;
esac
