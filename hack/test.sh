#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine: installs what the tests need
# (Python env, lab packages, control-plane binaries), then runs every test.
#   hack/test.sh            # everything
#   hack/test.sh -k golden  # extra arguments go to pytest
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
log=${WANWIDE_TEST_LOGS:-$root/.testlogs}
mkdir -p "$log"
t0=$(date +%s)
stamp() { echo "[test $(( $(date +%s) - t0 ))s] $*"; }

stamp "python environment"
hack/python-env.sh
py=$root/.venv/bin/python

# The control-plane binaries take ~20 min to build on a fresh machine: start now.
stamp "building control-plane binaries in the background (log: $log/build.log)"
hack/testcluster.sh build >"$log/build.log" 2>&1 &
build_pid=$!

stamp "lab packages (Debian + PyPI)"
# versitygw comes from the control-plane build above (same cache path)
WANWIDE_LAB_SKIP_S3=1 hack/install-lab.sh 2>&1 | tee "$log/install-lab.log" | sed 's/^/  /'

stamp "lint"
"$root/.venv/bin/ruff" check operator tests bench

stamp "unit tests"
set +e
"$py" -m pytest -m "not lab and not cluster" -q -p no:cacheprovider "$@"
unit=$?
set -e

stamp "waiting for the control-plane build"
if ! wait "$build_pid"; then
  tail -n 40 "$log/build.log"
  echo "control-plane build failed (see $log/build.log)" >&2
  exit 1
fi

stamp "lab tests (real MariaDB/Galera/Keystone/Rally in network namespaces)"
set +e
"$py" -m pytest -m "lab" -q -p no:cacheprovider "$@"
lab=$?
stamp "cluster tests (real kube-apiserver, kwok nodes)"
"$py" -m pytest -m "cluster" -q -p no:cacheprovider "$@"
cluster=$?
set -e
hack/testcluster.sh down >/dev/null 2>&1 || true
# a marker with nothing selected (e.g. -k filtering) is not a failure
for v in unit lab cluster; do [ "${!v}" = 5 ] && [ $# -gt 0 ] && printf -v "$v" 0; done
stamp "done: unit=$unit lab=$lab cluster=$cluster"
[ "$unit" = 0 ] && [ "$lab" = 0 ] && [ "$cluster" = 0 ]
