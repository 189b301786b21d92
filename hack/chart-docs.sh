#!/usr/bin/env bash
# The chart's README with helm-docs (github.com/norwoodj/helm-docs, built once from the Go module
# proxy): charts/wanwide/README.md from README.md.gotmpl and the `# --` comments of values.yaml.
#
#   hack/chart-docs.sh          # rewrite charts/wanwide/README.md
#   hack/chart-docs.sh --check  # exit 1 when it is stale (tests/cluster/test_chart_docs_tool.py runs it)
#   hack/chart-docs.sh build    # build helm-docs only (cached); print its path
#
# Environment: WANWIDE_CACHE (default ~/.cache/wanwide), GO.
set -euo pipefail

HELM_DOCS_VERSION=v1.14.2

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_TAG="chart-docs"
# shellcheck source=lib.sh
source "$root/hack/lib.sh"
trap 'on_error_report $? "$BASH_COMMAND" $LINENO' ERR
CACHE=${WANWIDE_CACHE:-$HOME/.cache/wanwide}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
chart=$root/charts/wanwide

need_go() {
  command -v "$GO" >/dev/null 2>&1 || {
    log "ERROR: Go is needed to build $1 from the Go module proxy (GO=$GO not found): install Go or set GO"; exit 1; }
}

build() {
  local out=$CACHE/bin/helm-docs-$HELM_DOCS_VERSION gobin
  if [[ ! -x $out ]]; then
    need_go helm-docs
    gobin=$CACHE/build/gobin-helm-docs
    mkdir -p "$CACHE/bin" "$gobin"
    log "building helm-docs $HELM_DOCS_VERSION (Go module proxy; about a minute)"
    (cd "${TMPDIR:-/tmp}" && GOBIN=$gobin GOFLAGS=-buildvcs=false GOTOOLCHAIN=local CGO_ENABLED=0 \
       "$GO" install -trimpath -ldflags='-s -w' "github.com/norwoodj/helm-docs/cmd/helm-docs@$HELM_DOCS_VERSION")
    mv -f "$gobin/helm-docs" "$out"
  fi
  echo "$out"
}

render() { # DIR: a copy of the chart in DIR, its README written there
  local bin=$1 dir=$2
  cp -r "$chart" "$dir/wanwide"
  "$bin" --log-level warning --chart-search-root "$dir/wanwide" --template-files README.md.gotmpl \
    --sort-values-order file >&2
}

case ${1:-} in
  build) build ;;
  --check)
    bin=$(build); tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    render "$bin" "$tmp"
    if ! diff -u "$chart/README.md" "$tmp/wanwide/README.md" >&2; then
      log "ERROR: charts/wanwide/README.md is stale: run hack/chart-docs.sh"
      exit 1
    fi ;;
  "")
    bin=$(build); tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    render "$bin" "$tmp"
    cp "$tmp/wanwide/README.md" "$chart/README.md"
    log "wrote charts/wanwide/README.md" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2 ;;
esac
