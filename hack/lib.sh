# shellcheck shell=bash
# Helpers shared by the set-up scripts (sourced, never run):
#   log MSG             timestamped line on stderr, prefixed with $LOG_TAG
#   step NAME / step_end
#                       announce a step; a failure inside it names the step
#   on_error_report     ERR trap: which step, which command, which log to read
#   apt_missing PKG...  prints the packages not installed (never fails on "absent")
#   apt_ensure PKG...   installs the missing ones (root), output in $APT_LOG,
#                       names recorded in $APT_RECORD
#   default_upstream_dir
#                       exports WANWIDE_UPSTREAM_DIR (given, else ../shared/upstream when there)
#   upstream_dir ARRAY  a directory holding an upstream source tree (mirror or fetched)
#   tree_hash DIR       content hash of the files under DIR
#   realnode_containerd [SOCK]
#                       the real node's containerd socket (hack/testcluster.sh up --real-node)
#   kube_env            KUBECONFIG and helm of the test cluster unless KUBECONFIG is set
#   helm_uninstall RELEASE NAMESPACE
#                       uninstall and wait, when the release exists
# Every function works when nothing is installed: no pipeline here fails because
# a package, a file or a command is absent.

# the ERR trap (on_error_report) must also fire inside functions
set -o errtrace
: "${LOG_TAG:=wanwide}"
_lib_t0=$(date +%s)
STEP_NAME=""
STEP_LOG=""

log() { printf '[%s %4ss] %s\n' "$LOG_TAG" "$(($(date +%s) - _lib_t0))" "$*" >&2; }

step() { # step NAME [LOG]: the step that a failure will be blamed on
  STEP_NAME=$1 STEP_LOG=${2:-}
  _step_t0=$(date +%s)
  log "$STEP_NAME: start"
}
step_end() {
  log "$STEP_NAME: done in $(($(date +%s) - _step_t0)) s"
  STEP_NAME="" STEP_LOG=""
}

on_error_report() { # installed as: trap 'on_error_report $? "$BASH_COMMAND" $LINENO' ERR
  local rc=$1 cmd=$2 line=$3
  printf '%s: FAILED%s: command "%s" exited %s (%s line %s)\n' "$LOG_TAG" \
    "${STEP_NAME:+ in step \"$STEP_NAME\"}" "$cmd" "$rc" "${BASH_SOURCE[1]:-$0}" "$line" >&2
  if [[ -n $STEP_LOG && -s $STEP_LOG ]]; then
    printf '%s: last lines of %s:\n' "$LOG_TAG" "$STEP_LOG" >&2
    tail -n 20 "$STEP_LOG" | sed 's/^/    /' >&2
  fi
}

apt_missing() { # PKG...: the ones dpkg does not report "install ok installed"
  local status p
  # dpkg-query exits 1 when any package is unknown: that is an answer, not an error
  status=$(dpkg-query -W -f='${Package} ${Status}\n' "$@" 2>/dev/null || true)
  for p in "$@"; do
    # names may carry an architecture (pkg:amd64); compare the bare name
    if ! grep -q "^${p%%:*}\(:[a-z0-9]*\)\{0,1\} install ok installed$" <<<"$status"; then
      printf '%s\n' "$p"
    fi
  done
}

APT_POLICY_RC_D=${APT_POLICY_RC_D:-/usr/sbin/policy-rc.d}
# every package these scripts installed, one a line (hack/from-scratch.sh --purge reads it)
APT_RECORD=${APT_RECORD:-/var/lib/wanwide/apt-installed.txt}

apt_ensure() { # PKG...: install what is missing; no service is started by the packages
  local missing=() p
  while IFS= read -r p; do [[ -n $p ]] && missing+=("$p"); done < <(apt_missing "$@")
  if ((${#missing[@]} == 0)); then
    log "apt: all ${#} package(s) present (${*}), skip"
    return 0
  fi
  if [[ $(id -u) != 0 ]]; then
    log "ERROR: need root for apt-get (missing: ${missing[*]}); run as root or install them first"
    return 1
  fi
  : "${APT_LOG:=${TMPDIR:-/tmp}/wanwide-apt.log}"
  mkdir -p "$(dirname "$APT_LOG")"  # a caller may name a log in a folder it has not made yet
  local prev_name=$STEP_NAME prev_log=$STEP_LOG
  step "apt-get install ${missing[*]}" "$APT_LOG"
  local created_policy=""
  if [[ ! -e $APT_POLICY_RC_D ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$APT_POLICY_RC_D"
    chmod +x "$APT_POLICY_RC_D"
    created_policy=1
  fi
  local rc=0
  {
    # refresh the lists when they look absent or older than a day
    if [[ -z $(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null || true) ]]; then
      apt-get -o DPkg::Lock::Timeout=900 update -qq
    fi &&
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
      --no-install-recommends "${missing[@]}"
  } >>"$APT_LOG" 2>&1 || rc=$?
  if [[ -n $created_policy ]]; then rm -f "$APT_POLICY_RC_D"; fi
  if ((rc == 0)) && mkdir -p "$(dirname "$APT_RECORD")" 2>/dev/null; then
    printf '%s\n' "${missing[@]}" >>"$APT_RECORD" || true
  fi
  if ((rc != 0)); then
    log "ERROR: apt-get install ${missing[*]} failed (exit $rc); last lines of $APT_LOG:"
    tail -n 20 "$APT_LOG" | sed 's/^/    /' >&2
    return "$rc"
  fi
  step_end
  STEP_NAME=$prev_name STEP_LOG=$prev_log
}

# ---------------------------------------------------------------- upstream sources
# An upstream source is an array: (dir-under-$WANWIDE_UPSTREAM_DIR git-remote commit).
default_upstream_dir() { # export WANWIDE_UPSTREAM_DIR: as given, else ../shared/upstream beside the checkout
  if [[ -z ${WANWIDE_UPSTREAM_DIR:-} && -d $_lib_root/../shared/upstream ]]; then
    WANWIDE_UPSTREAM_DIR=$(cd "$_lib_root/../shared/upstream" && pwd)
  fi
  export WANWIDE_UPSTREAM_DIR
}

upstream_dir() { # upstream_dir ARRAY_NAME: prints a directory holding that source tree
  local -n up=$1
  local dir=${up[0]} remote=${up[1]} commit=${up[2]}
  if [[ -n ${WANWIDE_UPSTREAM_DIR:-} ]]; then
    [[ -d $WANWIDE_UPSTREAM_DIR/$dir ]] || { log "ERROR: $WANWIDE_UPSTREAM_DIR/$dir missing"; return 1; }
    (cd "$WANWIDE_UPSTREAM_DIR/$dir" && pwd)
    return 0
  fi
  local dest=${WANWIDE_CACHE:-$HOME/.cache/wanwide}/upstream/$dir-${commit:0:12}
  if [[ ! -d $dest/.git ]]; then
    log "fetching $remote at $commit"
    rm -rf "$dest.tmp"
    git init -q "$dest.tmp" >&2
    git -C "$dest.tmp" fetch -q --depth 1 "$remote" "$commit" >&2 || {
      log "ERROR: cannot fetch $remote $commit (set WANWIDE_UPSTREAM_DIR to a mirror holding $dir/)"; return 1; }
    git -C "$dest.tmp" checkout -q FETCH_HEAD >&2
    [[ $(git -C "$dest.tmp" rev-parse HEAD) == "$commit" ]] || { log "ERROR: $remote: HEAD is not $commit"; return 1; }
    mv "$dest.tmp" "$dest"
  fi
  echo "$dest"
}

tree_hash() { # tree_hash DIR: content hash of the files under DIR (no .git)
  (cd "$1" && find . -path ./.git -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-64
}

_lib_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

realnode_containerd() { # [SOCK]: SOCK, else $WANWIDE_CONTAINERD_ADDRESS, else the test cluster's real node's
  local a=${1:-${WANWIDE_CONTAINERD_ADDRESS:-}} f tc_dir=${WANWIDE_TESTCLUSTER_DIR:-$_lib_root/.testcluster}
  if [[ -z $a ]]; then
    for f in "$tc_dir/realnode/run/containerd/containerd.sock" \
             "$tc_dir/realnode/containerd.sock" \
             /run/containerd/containerd.sock; do
      [[ -S $f ]] && { a=$f; break; }
    done
  fi
  [[ -n $a && -S $a ]] || { log "ERROR: no containerd socket (give --address SOCK or WANWIDE_CONTAINERD_ADDRESS)"; return 1; }
  echo "$a"
}

kube_env() { # the test cluster's KUBECONFIG and tools (helm), unless a KUBECONFIG is given
  if [[ -z ${KUBECONFIG:-} ]]; then
    eval "$("$_lib_root/hack/testcluster.sh" env)"
  fi
  command -v helm >/dev/null || { log "ERROR: helm not on PATH (hack/testcluster.sh env puts it there)"; return 1; }
}

helm_uninstall() { # RELEASE NAMESPACE: uninstall and wait, when the release exists
  if helm status "$1" -n "$2" >/dev/null 2>&1; then
    step "helm uninstall $1"
    helm uninstall "$1" -n "$2" --wait --timeout 3m >&2
    step_end
  else
    log "uninstall: no release $1 in $2"
  fi
}
