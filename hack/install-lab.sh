#!/usr/bin/env bash
# Installs what the embedded "lab" provider runs for real on this machine:
#   - Debian packages: MariaDB + Galera (+ rsync for state transfer), memcached,
#     VDE (wirefilter, the WAN shaper used when the kernel has no netem),
#     iproute2, ping, socat;
#   - venv "keystone": keystone + PyMySQL + memcache clients + gunicorn + openstackclient;
#   - venv "rally": rally-openstack (+ rally, pinned);
#   - the S3 server versitygw (built with `go install`, cached by version).
# Debian and PyPI (and the Go module proxy) only. Idempotent: each step leaves a
# stamp file named after its exact specification and is skipped when it exists,
# so a warm re-run takes about a second.
#
# Environment: WANWIDE_CACHE (default ~/.cache/wanwide), PYTHON (default python3),
#   WANWIDE_LAB_SKIP_S3=1 to skip the versitygw build, WANWIDE_LAB_FORCE=1 to redo all.
set -euo pipefail

cache=${WANWIDE_CACHE:-$HOME/.cache/wanwide}
py=${PYTHON:-python3}
stamps="$cache/stamps"
mkdir -p "$stamps" "$cache/venvs" "$cache/bin"

APT_PKGS=(mariadb-server mariadb-client galera-4 rsync memcached vde2 iproute2 iputils-ping socat procps psmisc)
KEYSTONE_PKGS=(keystone==30.0.0 PyMySQL==1.2.4 pymemcache==4.0.0 python-memcached==1.62
  gunicorn==27.0.1 python-openstackclient==10.5.0)
RALLY_PKGS=(rally-openstack==4.1.0 rally==5.1.1)
VERSITYGW_VERSION=v1.8.0

t0=$(date +%s)
log() { printf '[install-lab %4ss] %s\n' "$(($(date +%s) - t0))" "$*"; }

# stamp NAME SPEC...: path of the stamp for this exact spec
stamp_path() {
  local name=$1; shift
  local h
  h=$(printf '%s\n' "$@" | sha256sum | cut -c1-12)
  printf '%s/%s-%s' "$stamps" "$name" "$h"
}
done_already() { [ -z "${WANWIDE_LAB_FORCE:-}" ] && [ -f "$1" ]; }

step() { # step NAME: prints start, returns start time in $step_t0
  step_name=$1; step_t0=$(date +%s); log "$step_name: start"
}
step_end() { log "$step_name: done in $(($(date +%s) - step_t0)) s"; }

# ---------------------------------------------------------------- Debian packages
apt_stamp=$(stamp_path apt "${APT_PKGS[@]}")
missing=()
installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${APT_PKGS[@]}" 2>/dev/null | awk '/install ok installed/{print $1}')
for p in "${APT_PKGS[@]}"; do
  grep -qx "$p" <<<"$installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  log "apt: all ${#APT_PKGS[@]} packages present, skip"
  touch "$apt_stamp"
else
  step "apt install ${missing[*]}"
  if [ "$(id -u)" != 0 ]; then
    echo "install-lab: need root for apt-get (missing: ${missing[*]})" >&2
    exit 1
  fi
  # No service may be started by the packages: the lab starts its own processes.
  created_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    created_policy=1
  fi
  # Refresh the lists only when they look absent or old (a day).
  if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null | head -1)" ]; then
    apt-get -o DPkg::Lock::Timeout=900 update -qq
  fi
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  [ -n "$created_policy" ] && rm -f /usr/sbin/policy-rc.d
  touch "$apt_stamp"
  step_end
fi
# ---------------------------------------------------------------- venvs
make_venv() { # make_venv NAME PKG...
  local name=$1; shift
  local venv="$cache/venvs/$name"
  local st
  st=$(stamp_path "venv-$name" "$($py -c 'import sys;print(sys.version)')" "$@")
  if done_already "$st" && [ -x "$venv/bin/python" ]; then
    log "venv $name: present ($venv), skip"
    return
  fi
  step "venv $name: pip install $*"
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --upgrade pip
  "$venv/bin/pip" install -q --disable-pip-version-check "$@"
  rm -f "$stamps/venv-$name-"*
  touch "$st"
  step_end
}
make_venv keystone "${KEYSTONE_PKGS[@]}"
make_venv rally "${RALLY_PKGS[@]}"

# ---------------------------------------------------------------- versitygw
gw="$cache/bin/versitygw-$VERSITYGW_VERSION"
if [ -n "${WANWIDE_LAB_SKIP_S3:-}" ]; then
  log "versitygw: skipped (WANWIDE_LAB_SKIP_S3)"
elif [ -x "$gw" ]; then
  log "versitygw: present ($gw), skip"
else
  step "versitygw $VERSITYGW_VERSION: go install"
  command -v go >/dev/null || { echo "install-lab: go not found (needed for versitygw)" >&2; exit 1; }
  tmpbin=$(mktemp -d)
  GOBIN="$tmpbin" GOFLAGS=-mod=mod go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
  # Another script (hack/testcluster.sh) may have finished first: keep its copy.
  if [ ! -x "$gw" ]; then
    install -m 0755 "$tmpbin/versitygw" "$gw.tmp.$$" && mv -f "$gw.tmp.$$" "$gw"
  fi
  rm -rf "$tmpbin"
  step_end
fi

# ---------------------------------------------------------------- summary
distver() { # distver VENV DIST: version from the dist-info directory name (no pip start)
  local d
  d=$(ls -d "$cache/venvs/$1"/lib/python3*/site-packages/"$2"-*.dist-info 2>/dev/null | head -1)
  d=${d##*/}; d=${d#"$2"-}; echo "${d%.dist-info}"
}
log "versions: mariadb=$(dpkg-query -W -f='${Version}' mariadb-server) galera=$(dpkg-query -W -f='${Version}' galera-4) \
keystone=$(distver keystone keystone) rally=$(distver rally rally) rally-openstack=$(distver rally rally_openstack) \
versitygw=$VERSITYGW_VERSION"
log "done in $(($(date +%s) - t0)) s (cache $cache)"
