#!/usr/bin/env bash
# Installs what the embedded "lab" provider runs for real on this machine:
#   - Debian packages: MariaDB + Galera (+ rsync for state transfer), memcached,
#     a C compiler (the linkemu WAN shaper, built on first use when the kernel has
#     no netem), VDE (wirefilter, the shaper when linkemu cannot be built),
#     iproute2, ping, socat, iptables (faults through the WAN's hubs), iperf3 (bench/emulation.py's
#     loss and rate through the shapers; the VM tier runs it in a guest that has this host's root);
#   - venv "keystone": requirements/keystone.txt (Keystone, PyMySQL, memcache
#     clients, gunicorn, openstackclient), constrained by requirements/keystone.lock;
#   - venv "rally": requirements/rally.txt (rally-openstack, rally), with rally.lock;
#   - with --openstack (or WANWIDE_LAB_OPENSTACK=1) the rest of a control plane (spec.openstack beyond
#     Keystone, docs/lab-openstack.md): Debian's rabbitmq-server (their message bus) and venv "openstack":
#     requirements/openstack.txt (Nova, Placement, Glance, Neutron's server, gunicorn), with openstack.lock.
#     Not by default: a Keystone Benchmark (the quickstart, CI's lab tier) needs neither;
#   - the S3 server versitygw (built with `go install`, cached by version).
# Debian and PyPI (and the Go module proxy) only. Works when nothing is installed
# and when everything is. Idempotent: each step leaves a stamp file named after its
# exact specification and is skipped when it exists (a warm re-run takes ~1 s).
# A failing step is named with the command and the log to read.
#
# Environment: WANWIDE_CACHE (default ~/.cache/wanwide), PYTHON (default python3),
#   WANWIDE_LAB_SKIP_S3=1 to skip the versitygw build, WANWIDE_LAB_FORCE=1 to redo all,
#   WANWIDE_LAB_OPENSTACK=1 as --openstack.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
LOG_TAG=install-lab
# shellcheck source=lib.sh
source "$root/hack/lib.sh"
trap 'on_error_report $? "$BASH_COMMAND" $LINENO' ERR

openstack=${WANWIDE_LAB_OPENSTACK:-0}
case ${1:-} in
  --openstack) openstack=1 ;;
  "") ;;
  *) log "ERROR: unknown argument $1 (the only one is --openstack)"; exit 2 ;;
esac
cache=${WANWIDE_CACHE:-$HOME/.cache/wanwide}
py=${PYTHON:-python3}
stamps="$cache/stamps"
logs="$cache/logs"
mkdir -p "$stamps" "$logs" "$cache/venvs" "$cache/bin"
export APT_LOG="$logs/apt.log"

APT_PKGS=(mariadb-server mariadb-client galera-4 rsync memcached vde2 gcc libc6-dev iproute2 iputils-ping socat procps psmisc iptables iperf3)
[[ $openstack == 1 ]] && APT_PKGS+=(rabbitmq-server)
VERSITYGW_VERSION=v1.8.0

# stamp NAME SPEC...: path of the stamp for this exact spec
stamp_path() {
  local name=$1; shift
  local h
  h=$(printf '%s\n' "$@" | sha256sum | cut -c1-12)
  printf '%s/%s-%s' "$stamps" "$name" "$h"
}
done_already() { [[ -z ${WANWIDE_LAB_FORCE:-} && -f $1 ]]; }

# ---------------------------------------------------------------- Debian packages
apt_ensure "${APT_PKGS[@]}"

# ---------------------------------------------------------------- venvs
make_venv() { # make_venv NAME: requirements/NAME.txt constrained by requirements/NAME.lock
  local name=$1
  local venv="$cache/venvs/$name" req="$root/requirements/$name.txt" lock="$root/requirements/$name.lock"
  local st pyver
  pyver=$("$py" -c 'import sys; print(sys.version)')
  st=$(stamp_path "venv-$name" "$pyver" "$(cat "$req" "$lock")")
  if done_already "$st" && [[ -x $venv/bin/python ]]; then
    log "venv $name: present ($venv), skip"
    return 0
  fi
  step "venv $name: pip install -r requirements/$name.txt -c requirements/$name.lock" "$logs/venv-$name.log"
  [[ -x $venv/bin/python ]] || "$py" -m venv "$venv"
  "$venv/bin/pip" install --disable-pip-version-check -r "$req" -c "$lock" >"$logs/venv-$name.log" 2>&1
  rm -f "$stamps/venv-$name-"*
  touch "$st"
  step_end
}
make_venv keystone
make_venv rally
[[ $openstack == 1 ]] && make_venv openstack

# ---------------------------------------------------------------- versitygw
gw="$cache/bin/versitygw-$VERSITYGW_VERSION"
if [[ -n ${WANWIDE_LAB_SKIP_S3:-} ]]; then
  log "versitygw: skipped (WANWIDE_LAB_SKIP_S3)"
elif [[ -x $gw ]]; then
  log "versitygw: present ($gw), skip"
else
  go=$(command -v go || true)
  [[ -z $go && -x /usr/local/go/bin/go ]] && go=/usr/local/go/bin/go
  if [[ -z $go ]]; then
    log "ERROR: go not found (needed to build versitygw $VERSITYGW_VERSION); install Go or set WANWIDE_LAB_SKIP_S3=1"
    exit 1
  fi
  step "versitygw $VERSITYGW_VERSION: go install" "$logs/versitygw.log"
  tmpbin=$(mktemp -d)
  GOBIN="$tmpbin" GOFLAGS=-mod=mod "$go" install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION" \
    >"$logs/versitygw.log" 2>&1
  # Another script (hack/testcluster.sh) may have finished first: keep its copy.
  if [[ ! -x $gw ]]; then
    install -m 0755 "$tmpbin/versitygw" "$gw.tmp.$$" && mv -f "$gw.tmp.$$" "$gw"
  fi
  rm -rf "$tmpbin"
  step_end
fi

# ---------------------------------------------------------------- summary
distver() { # distver VENV DIST: version from the dist-info directory name (no pip start)
  local d
  for d in "$cache/venvs/$1"/lib/python3*/site-packages/"$2"-*.dist-info; do
    [[ -d $d ]] || continue
    d=${d##*/}; d=${d#"$2"-}; echo "${d%.dist-info}"; return 0
  done
  echo "?"
}
debver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "?"; }
log "versions: mariadb=$(debver mariadb-server) galera=$(debver galera-4) \
keystone=$(distver keystone keystone) rally=$(distver rally rally) rally-openstack=$(distver rally rally_openstack) \
rabbitmq=$(debver rabbitmq-server) nova=$(distver openstack nova) placement=$(distver openstack openstack_placement) \
glance=$(distver openstack glance) neutron=$(distver openstack neutron) \
versitygw=$VERSITYGW_VERSION"
log "done (cache $cache)"
