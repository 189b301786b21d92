#!/usr/bin/env bash
# actionlint (the GitHub Actions workflow linter) built once from its Go module and
# cached as $WANWIDE_CACHE/bin/actionlint-<version>. It also runs shellcheck on every
# `run:` block, so shellcheck must be on PATH (hack/test.sh installs it).
#   hack/actionlint.sh              lint .github/workflows/*.yml
#   hack/actionlint.sh FILE...      lint these workflow files
#   hack/actionlint.sh path         build if needed, print the binary's path
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
LOG_TAG=actionlint
# shellcheck source=lib.sh
source "$root/hack/lib.sh"
trap 'on_error_report $? "$BASH_COMMAND" $LINENO' ERR

ACTIONLINT_VERSION=v1.7.12
cache=${WANWIDE_CACHE:-$HOME/.cache/wanwide}
bin="$cache/bin/actionlint-$ACTIONLINT_VERSION"

ensure_actionlint() {
  [[ -x $bin ]] && return 0
  local go
  go=$(command -v go || true)
  [[ -z $go && -x /usr/local/go/bin/go ]] && go=/usr/local/go/bin/go
  [[ -n $go ]] || { log "ERROR: go not found (needed to build actionlint $ACTIONLINT_VERSION)"; return 1; }
  mkdir -p "$cache/bin" "$cache/logs"
  step "actionlint $ACTIONLINT_VERSION: go install" "$cache/logs/actionlint.log"
  local tmpbin
  tmpbin=$(mktemp -d)
  (cd "$tmpbin" && GOBIN="$tmpbin" GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 \
    "$go" install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION") \
    >"$cache/logs/actionlint.log" 2>&1
  # a concurrent run may have finished first: keep its copy
  [[ -x $bin ]] || { install -m 0755 "$tmpbin/actionlint" "$bin.tmp.$$" && mv -f "$bin.tmp.$$" "$bin"; }
  rm -rf "$tmpbin"
  step_end
}

ensure_actionlint
if [[ ${1:-} == path ]]; then
  echo "$bin"
  exit 0
fi
command -v shellcheck >/dev/null || { log "ERROR: shellcheck not on PATH (actionlint would skip the run: blocks)"; exit 1; }
cd "$root"
if (($# == 0)); then
  set -- .github/workflows/*.yml
fi
trap - ERR  # findings are the answer, not a set-up error
exec "$bin" -shellcheck "$(command -v shellcheck)" "$@"
