#!/usr/bin/env bash
# Runs the README's two commands as a new user would: a fresh clone, a fresh HOME
# (no ~/.cache/wanwide, no pip/Go caches, no .venv, no .testcluster), and with
# --purge the Debian packages these scripts installed removed first (exactly the
# names recorded in /var/lib/wanwide/apt-installed.txt, then their unused deps).
# Prints the wall time of each command; the logs say each step's time.
#   hack/from-scratch.sh [--purge] [--only lab|test|none] [DIR]   (DIR default /tmp/wanwide-scratch)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
LOG_TAG=from-scratch
# shellcheck source=lib.sh
source "$root/hack/lib.sh"
trap 'on_error_report $? "$BASH_COMMAND" $LINENO' ERR
purge=0 only="lab test" dir=/tmp/wanwide-scratch
while (($#)); do
  case $1 in
    --purge) purge=1 ;;
    --only) only=$2; shift ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) dir=$1 ;;
  esac
  shift
done
if ((purge)); then
  pkgs=()
  if [[ -f $APT_RECORD ]]; then mapfile -t pkgs < <(sort -u "$APT_RECORD"); fi
  if ((${#pkgs[@]})); then
    step "apt-get purge ${pkgs[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${pkgs[@]}" >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get autoremove --purge -y -qq >/dev/null
    rm -f "$APT_RECORD"
    step_end
  else
    log "nothing recorded in $APT_RECORD to purge"
  fi
fi
rm -rf "$dir"
mkdir -p "$dir/home"
git clone -q "$root" "$dir/wanwide"
log "fresh clone $(git -C "$dir/wanwide" rev-parse --short HEAD) in $dir/wanwide, HOME=$dir/home"
export HOME=$dir/home PYENV_ROOT=${PYENV_ROOT:-/root/.pyenv}
unset GOPATH GOCACHE GOMODCACHE PIP_CACHE_DIR WANWIDE_CACHE
cd "$dir/wanwide"
for what in $only; do
  case $what in
    lab) cmd=(hack/lab.sh) ;;
    test) cmd=(hack/test.sh) ;;
    none) continue ;;
    *) log "ERROR: --only lab|test|none"; exit 2 ;;
  esac
  t0=$SECONDS
  log "running ${cmd[*]} (log: $dir/$what.log; load: $(cut -d' ' -f1-3 /proc/loadavg))"
  rc=0
  "${cmd[@]}" >"$dir/$what.log" 2>&1 </dev/null || rc=$?
  log "${cmd[*]}: exit $rc in $((SECONDS - t0)) s (load: $(cut -d' ' -f1-3 /proc/loadavg))"
  ((rc == 0)) || { tail -n 30 "$dir/$what.log" >&2; exit "$rc"; }
done
