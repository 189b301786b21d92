#!/usr/bin/env bash
# The real-node tier (issue 14): images built here from Debian and PyPI and run
# with a private containerd; a real kubelet node (containerd, runc, CNI bridge,
# kube-proxy, CoreDNS) next to the kwok nodes; real Chaos Mesh partitions between
# real pods; and the operator taking Benchmarks (central MariaDB, then Galera) to
# Succeeded with the real openstack-helm keystone chart, the real mariadb-operator
# and Rally in this repository's image (docs/real-e2e.md). Its builds take
# ~21 min on a cold 2-core machine (docs/verification.md, "Real pods in CI").
#   hack/e2e-real.sh            # everything
#   hack/e2e-real.sh -k dns     # extra arguments go to pytest
#   hack/e2e-real.sh --gate     # what gates landing (hack/test.sh): the MariaDB
#                               # Benchmark end to end on the real node
#   hack/e2e-real.sh --gate --if-warm
#                               # the same, or, when its inputs are not built yet,
#                               # a line saying so and exit 0 (the cold builds do
#                               # not fit CI's 90 minutes beside the other tiers)
# Environment: WANWIDE_UPSTREAM_DIR (default ../shared/upstream beside the
# checkout when it exists; otherwise the sources are fetched upstream).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
LOG_TAG=hack/e2e-real.sh
# shellcheck source=lib.sh
source "$root/hack/lib.sh"
trap 'on_error_report $? "$BASH_COMMAND" $LINENO' ERR
default_upstream_dir
log_dir=${WANWIDE_TEST_LOGS:-$root/.testlogs}
mkdir -p "$log_dir"
gate="" if_warm=""
while [[ ${1:-} == --gate || ${1:-} == --if-warm ]]; do
  [[ $1 == --gate ]] && gate=1
  [[ $1 == --if-warm ]] && if_warm=1
  shift
done
# the images real pods run (pause is the real node's sandbox image); the gate's Benchmark needs them all
# but the wanwide image, which changes with every commit and is rebuilt here in minutes
BASE_IMAGES=(pause keystone mariadb memcached dep-check mariadb-operator)
if [[ -n $if_warm ]]; then
  cold=()
  while IFS= read -r n; do cold+=("binary $n"); done < <(hack/testcluster/build.sh --missing-real-node)
  if [[ -z $(apt_missing mmdebstrap buildah) ]]; then  # (images.sh would install them to compute keys)
    while IFS= read -r n; do cold+=("image $n"); done < <(hack/images.sh missing "${BASE_IMAGES[@]}" 2>/dev/null)
  else
    cold+=("the image tools (mmdebstrap, buildah)")
  fi
  if ((${#cold[@]})); then
    log "SKIPPED: not built yet: ${cold[*]}. Cold, they take ~21 min on 2 cores (docs/verification.md),"
    log "which CI's 90 minutes cannot hold beside the other tiers; run hack/e2e-real.sh once to build them."
    exit 0
  fi
fi

step "python environment" "$root/.venv/pip.log"
hack/python-env.sh
step_end
step "control plane and real-node binaries" "$log_dir/build-real.log"
{ hack/testcluster.sh build && hack/testcluster.sh build --real-node; } >"$log_dir/build-real.log" 2>&1
step_end
step "images (hack/images.sh build all)" "$log_dir/images.log"
hack/images.sh build all >"$log_dir/images.log" 2>&1
step_end

trap - ERR  # test failures are counted below, not set-up errors
set +e
if [[ -n $gate ]]; then
  log "real-node gate: the MariaDB Benchmark end to end (real kubelet, keystone chart, mariadb-operator, Rally)"
  .venv/bin/python -m pytest -m realnode -q -p no:cacheprovider tests/cluster/test_e2e_real.py \
    -k "mariadb and not galera" "$@"
  realnode=$?
  [[ $realnode == 5 && $# -gt 0 ]] && realnode=0
  log "done: realnode gate=$realnode"
  exit "$realnode"
fi
log "image tests (private containerd)"
.venv/bin/python -m pytest -m images -q -p no:cacheprovider "$@"
images=$?
log "real-node tests (kubelet, Services, DNS, Jobs, real Chaos Mesh partitions, the operator end to end)"
.venv/bin/python -m pytest -m realnode -q -p no:cacheprovider "$@"
realnode=$?
set -e
for v in images realnode; do [[ ${!v} == 5 && $# -gt 0 ]] && printf -v "$v" 0; done
log "done: images=$images realnode=$realnode"
[[ $images == 0 && $realnode == 0 ]]
