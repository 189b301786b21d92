#!/usr/bin/env bash
# Regenerates the lock files in requirements/ (what a fresh resolution gives today):
#   wanwide.lock   the package and its [test] extra (constraints for pip install -e .)
#   keystone.lock  requirements/keystone.txt
#   rally.lock     requirements/rally.txt
#   openstack.lock requirements/openstack.txt (the lab's Nova, Placement, Glance, Neutron)
#   nova.lock, placement.lock, glance.lock, neutron.lock   requirements/<name>.txt (the images of issue 45)
# Each is resolved in a new virtualenv of $PYTHON (default python3, 3.11), then
# frozen. Review the diff, run hack/test.sh, commit.
#   hack/lock.sh [wanwide|keystone|rally|openstack|nova|placement|glance|neutron]...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
LOG_TAG=lock
# shellcheck source=lib.sh
source "$root/hack/lib.sh"
trap 'on_error_report $? "$BASH_COMMAND" $LINENO' ERR
py=${PYTHON:-python3}
req=$root/requirements
names=("$@")
((${#names[@]})) || names=(wanwide keystone rally openstack)
for n in "${names[@]}"; do
  tmp=$(mktemp -d)
  step "resolve $n" "$tmp/pip.log"
  "$py" -m venv "$tmp/venv"
  "$tmp/venv/bin/pip" install -q --upgrade pip >"$tmp/pip.log" 2>&1
  case $n in
    wanwide)
      "$tmp/venv/bin/pip" install -q "${root}[test]" >>"$tmp/pip.log" 2>&1
      header="# Every Python package wanwide (and its [test] extra) resolves to, for Python 3.11.
# Used as a constraints file (pip install -c requirements/wanwide.lock -e .) by
# hack/python-env.sh and the Dockerfile. Regenerate: hack/lock.sh" ;;
    keystone|rally|openstack|nova|placement|glance|neutron)
      "$tmp/venv/bin/pip" install -q -r "$req/$n.txt" >>"$tmp/pip.log" 2>&1
      header="# Everything requirements/$n.txt resolves to, for Python 3.11 (pip install -r requirements/$n.txt -c requirements/$n.lock).
# Regenerate: hack/lock.sh" ;;
    *) log "ERROR: unknown lock $n (wanwide, keystone, rally, openstack, nova, placement, glance or neutron)"; exit 2 ;;
  esac
  { echo "$header"; "$tmp/venv/bin/pip" freeze --exclude-editable | grep -v '^wanwide[= @]' || true; } >"$req/$n.lock"
  rm -rf "$tmp"
  step_end
done
