#!/usr/bin/env bash
# The real-node tier (issue 14): images built here from Debian and PyPI and run
# with a private containerd; a real kubelet node (containerd, runc, CNI bridge,
# kube-proxy, CoreDNS) next to the kwok nodes; real Chaos Mesh partitions between
# real pods; and the operator taking Benchmarks (central MariaDB, then Galera) to
# Succeeded with the real openstack-helm keystone chart, the real mariadb-operator
# and Rally in this repository's image (docs/real-e2e.md). Not part of
# hack/test.sh: it needs the mirrored upstream sources and ~1 h of builds on a
# cold machine (docs/images.md, docs/testcluster.md "Real node", docs/chaos-mesh.md).
#   hack/e2e-real.sh            # everything
#   hack/e2e-real.sh -k dns     # extra arguments go to pytest
# Environment: WANWIDE_UPSTREAM_DIR (default ../shared/upstream beside the
# checkout when it exists; otherwise the sources are fetched upstream).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
LOG_TAG=hack/e2e-real.sh
# shellcheck source=lib.sh
source "$root/hack/lib.sh"
trap 'on_error_report $? "$BASH_COMMAND" $LINENO' ERR
if [[ -z ${WANWIDE_UPSTREAM_DIR:-} && -d $root/../shared/upstream ]]; then
  WANWIDE_UPSTREAM_DIR=$(cd "$root/../shared/upstream" && pwd)
fi
export WANWIDE_UPSTREAM_DIR
log_dir=${WANWIDE_TEST_LOGS:-$root/.testlogs}
mkdir -p "$log_dir"

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
