#!/usr/bin/env bash
# End to end on kind with the real dependencies: needs Docker, kind, kubectl, helm and
# network access to chart repositories and image registries (.github/workflows/e2e-kind.yml
# runs it; this repository's own CI machine has none of them).
#   hack/e2e-kind.sh            everything below, in order
#   hack/e2e-kind.sh cluster    kind cluster from hack/e2e-kind/kind.yaml (kept if it exists)
#   hack/e2e-kind.sh image      docker build of the Dockerfile, kind load docker-image
#   hack/e2e-kind.sh deps       Chaos Mesh, mariadb-operator, prometheus-operator (hack/deps.sh)
#   hack/e2e-kind.sh results    S3 server, its bucket and the key Secret (hack/deps.sh: manifests/deps/s3.yaml)
#   hack/e2e-kind.sh operator   the wanwide chart, watching $E2E_NAMESPACE
#   hack/e2e-kind.sh run        apply hack/e2e-kind/benchmark.yaml, then `wait`
#   hack/e2e-kind.sh wait NAME  until Benchmark NAME is Complete (exit 0) or Failed, or
#                               $E2E_TIMEOUT s pass (exit 1, after `diagnose`)
#   hack/e2e-kind.sh diagnose [NAME]
#                               Benchmarks, Trials, events, failing pods, operator logs
# Environment: KIND_CLUSTER (wanwide-e2e), E2E_BENCHMARK (hack/e2e-kind/benchmark.yaml),
# E2E_NAMESPACE (default), E2E_TIMEOUT (3600), E2E_POLL (10).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
LOG_TAG=e2e-kind
# shellcheck source=lib.sh
source "$root/hack/lib.sh"
trap 'on_error_report $? "$BASH_COMMAND" $LINENO' ERR

cluster=${KIND_CLUSTER:-wanwide-e2e}
here=$root/hack/e2e-kind
benchmark=${E2E_BENCHMARK:-$here/benchmark.yaml}
ns=${E2E_NAMESPACE:-default}
timeout=${E2E_TIMEOUT:-3600}
poll=${E2E_POLL:-10}
system_ns=wanwide-system
app_version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$root/charts/wanwide/Chart.yaml")
img=ghcr.io/wanwide/wanwide:$app_version  # the chart's default image and the runner's

cmd_cluster() {
  if kind get clusters 2>/dev/null | grep -qx "$cluster"; then
    log "kind cluster $cluster exists, kept"
  else
    kind create cluster --name "$cluster" --config "$here/kind.yaml" --wait 5m
  fi
}

cmd_image() {
  docker build -t "$img" "$root"
  kind load docker-image "$img" --name "$cluster"
}

cmd_deps() { # what a user installs (hack/deps.sh), and prometheus-operator for the monitors
  "$root/hack/deps.sh" install --only chaos-mesh,mariadb-operator,monitoring
}

cmd_results() { # the S3 server, its bucket and the key Secret in the Benchmark's namespace
  kubectl -n "$system_ns" delete job s3-bucket --ignore-not-found
  "$root/hack/deps.sh" install --only s3 -n "$ns"
  kubectl -n "$system_ns" logs job/s3-bucket
}

cmd_operator() {
  helm upgrade --install wanwide "$root/charts/wanwide" -n "$system_ns" --create-namespace \
    --set "watchNamespaces={$ns}" --wait --timeout 5m
}

conditions() { # NAME: "Type=Status ..." of the Benchmark's conditions
  kubectl -n "$ns" get benchmark "$1" \
    -o jsonpath='{range .status.conditions[*]}{.type}={.status}{" "}{end}'
}

cmd_wait() { # NAME
  local name=${1:?usage: wait NAME} end=$((SECONDS + timeout)) next=0 c
  log "waiting up to ${timeout}s for benchmark/$name in $ns to be Complete or Failed"
  while ((SECONDS < end)); do
    c=" $(conditions "$name" || true)"
    if [[ $c == *" Complete=True "* ]]; then
      log "benchmark/$name Complete"
      kubectl get benchmarks,trials -n "$ns"
      return 0
    fi
    if [[ $c == *" Failed=True "* ]]; then
      log "ERROR: benchmark/$name Failed"
      cmd_diagnose "$name"
      return 1
    fi
    if ((SECONDS >= next)); then
      log "benchmark/$name: $(kubectl -n "$ns" get benchmark "$name" \
        -o jsonpath='{.status.phase} {.status.progress}' 2>/dev/null || true) [${c# }]"
      next=$((SECONDS + 60))
    fi
    sleep "$poll"
  done
  log "ERROR: benchmark/$name timed out after ${timeout}s (neither Complete nor Failed)"
  cmd_diagnose "$name"
  return 1
}

section() { printf '\n===== %s\n' "$*"; }

cmd_diagnose() { # [NAME]: what to read when the run did not succeed (never fails itself)
  local name=${1:-} pns pod
  trap - ERR
  set +e
  section "benchmarks, trials, topologies"
  kubectl get benchmarks,trials,topologies -A -o wide
  if [[ -n $name ]]; then
    section "benchmark/$name status"
    kubectl -n "$ns" get benchmark "$name" -o yaml | sed -n '/^status:/,$p'
  fi
  section "trial conditions"
  kubectl get trials -A -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase}{"\n"}{range .status.conditions[*]}  {.type}={.status} {.reason}: {.message}{"\n"}{end}{end}'
  section "events (last 80)"
  kubectl get events -A --sort-by=.lastTimestamp | tail -n 80
  section "pods"
  kubectl get pods -A -o wide
  # not ready and not completed: describe and log them
  while read -r pns pod; do
    section "failing pod $pns/$pod"
    kubectl -n "$pns" describe pod "$pod" | tail -n 40
    kubectl -n "$pns" logs "$pod" --all-containers --tail=60
  done < <(kubectl get pods -A --no-headers 2>/dev/null |
           awk '{split($3, r, "/"); if (r[1] != r[2] && $4 != "Completed") print $1, $2}' | head -n 15)
  section "operator logs"
  kubectl -n "$system_ns" logs -l app.kubernetes.io/name=wanwide --all-containers --tail=300
  section "helm releases"
  helm list -A
  set -e
  trap 'on_error_report $? "$BASH_COMMAND" $LINENO' ERR
  return 0
}

cmd_run() {
  local name
  name=$(kubectl apply -n "$ns" -f "$benchmark" -o name | sed -n 's|^benchmark\.wanwide\.io/||p')
  [[ -n $name ]] || { log "ERROR: no Benchmark in $benchmark"; return 1; }
  cmd_wait "$name"
}

case ${1:-all} in
  all) cmd_cluster; cmd_image; cmd_deps; cmd_results; cmd_operator; cmd_run ;;
  cluster|image|deps|results|operator|run|wait|diagnose) c=$1; shift; "cmd_$c" "$@" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2 ;;
esac
