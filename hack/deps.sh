#!/usr/bin/env bash
# What the operator needs on an empty cluster, in one step: Chaos Mesh, mariadb-operator
# and, for trying it out, an S3 server with its bucket and the key Secret the examples
# name (manifests/deps/s3.yaml). Then the README's quickstart runs as written:
#   helm install wanwide charts/wanwide -n wanwide-system --create-namespace ...
#   kubectl apply -f manifests/examples/uniform-9.yaml
# Against the current kubeconfig, with kubectl and helm (3.x); every step is
# `helm upgrade --install` / `kubectl apply`: running it again changes nothing.
#
#   hack/deps.sh install [options]    everything below, in order
#   hack/deps.sh uninstall [--monitoring]
#                                     the releases and the S3 server (the CRDs of Chaos Mesh
#                                     and mariadb-operator stay: helm does not remove them)
#   hack/deps.sh status               what is installed
#   hack/deps.sh plan [options]       the commands `install` would run, without running them
#
# Options:
#   -n, --namespace NS   where Benchmarks will be applied: the key Secret goes there (default)
#   --runtime R          chaos-daemon's container runtime: containerd (default), docker, crio
#   --socket PATH        its socket (default /run/containerd/containerd.sock; k3s:
#                        /run/k3s/containerd/containerd.sock; docker: /var/run/docker.sock)
#   --only LIST          some of chaos-mesh,mariadb-operator,s3,monitoring (comma-separated)
#   --no-s3              your own object store (give the Benchmark its endpoint and Secret)
#   --monitoring         also prometheus-operator and one Prometheus (kube-prometheus-stack)
#
# Sources: the charts' public repositories at the versions below, as a user gets them. For a
# cluster without them, or to use copies: CHAOS_MESH_CHART, MARIADB_OPERATOR_CHART,
# MARIADB_OPERATOR_CRDS_CHART (a chart directory or .tgz); CHAOS_MESH_VALUES,
# MARIADB_OPERATOR_VALUES (a values file given last: images from a private registry, node
# selectors); S3_IMAGE and BUCKET_IMAGE (the S3 server's image and the bucket Job's, which
# needs boto3: the wanwide image has it). tests/test_deps.py checks what `plan` prints.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
LOG_TAG=deps
# shellcheck source=lib.sh
source "$root/hack/lib.sh"

CHAOS_MESH_VERSION=2.8.3
MARIADB_OPERATOR_VERSION=26.6.0
KUBE_PROMETHEUS_STACK_VERSION=83.4.3
CHAOS_MESH_REPO=https://charts.chaos-mesh.org
MARIADB_OPERATOR_REPO=https://mariadb-operator.github.io/mariadb-operator  # its docs/helm.md
PROMETHEUS_REPO=https://prometheus-community.github.io/helm-charts
S3_MANIFEST=$root/manifests/deps/s3.yaml
SYSTEM_NS=wanwide-system
S3_DEFAULT_IMAGE=versity/versitygw:v1.8.0  # as written in manifests/deps/s3.yaml
BUCKET_DEFAULT_IMAGE=ghcr.io/wanwide/wanwide:0.1.0

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; }

ns=default runtime=containerd socket="" only="chaos-mesh,mariadb-operator,s3" dry=0
parse() {
  while (($#)); do
    case $1 in
      -n|--namespace) ns=$2; shift 2 ;;
      --runtime) runtime=$2; shift 2 ;;
      --socket) socket=$2; shift 2 ;;
      --only) only=$2; shift 2 ;;
      --no-s3) only=${only//s3/}; shift ;;
      --monitoring) only+=",monitoring"; shift ;;
      -h|--help) usage; exit 0 ;;
      *) usage; die "unknown option $1" ;;
    esac
  done
  case $runtime in
    containerd) : "${socket:=/run/containerd/containerd.sock}" ;;
    docker) : "${socket:=/var/run/docker.sock}" ;;
    crio) : "${socket:=/var/run/crio/crio.sock}" ;;
    *) die "--runtime $runtime: give containerd, docker or crio" ;;
  esac
  local w
  for w in ${only//,/ }; do
    [[ $w =~ ^(chaos-mesh|mariadb-operator|s3|monitoring)$ ]] ||
      die "--only: $w is not one of chaos-mesh, mariadb-operator, s3, monitoring"
  done
}
die() { log "ERROR: $*"; exit 2; }
wants() { [[ ,$only, == *",$1,"* ]]; }

run() { # the command, shown; under `plan` only shown (what is piped to it, read and dropped)
  printf '+ %s\n' "$*" >&2
  if ((dry)); then
    [[ -p /dev/stdin ]] && cat >/dev/null
    return 0
  fi
  "$@"
}

helm_install() { # RELEASE NAMESPACE VAR REPO NAME VERSION [helm args...]
  local release=$1 where=$2 var=$3 repo=$4 name=$5 version=$6 chart
  shift 6
  local extra=()
  if [[ -n ${!var:-} ]]; then
    [[ -e ${!var} ]] || die "$var=${!var}: no such chart directory or archive"
    chart=${!var}
  else
    chart=$name
    extra=(--repo "$repo" --version "$version")
  fi
  run helm upgrade --install "$release" "$chart" "${extra[@]}" -n "$where" --create-namespace \
    --wait --timeout 10m "$@"
}

values_arg() { # VAR: -f FILE when the variable names one
  local f=${!1:-}
  [[ -z $f ]] && return 0
  [[ -f $f ]] || die "$1=$f: no such values file"
  printf '%s\n' -f "$f"
}

cmd_install() {
  parse "$@"
  ((dry)) || { command -v helm >/dev/null && command -v kubectl >/dev/null; } ||
    die "needs kubectl and helm on PATH"
  ((dry)) || kubectl version >/dev/null 2>&1 || die "no cluster answers (kubectl version failed): check KUBECONFIG"
  local v
  if wants chaos-mesh; then
    step "Chaos Mesh $CHAOS_MESH_VERSION (chaos-daemon: $runtime at $socket)"
    mapfile -t v < <(values_arg CHAOS_MESH_VALUES)
    helm_install chaos-mesh chaos-mesh CHAOS_MESH_CHART "$CHAOS_MESH_REPO" chaos-mesh "$CHAOS_MESH_VERSION" \
      --set "chaosDaemon.runtime=$runtime" --set "chaosDaemon.socketPath=$socket" \
      --set dashboard.create=false --set dnsServer.create=false "${v[@]}"  # wanwide uses no DNSChaos
    step_end
  fi
  if wants mariadb-operator; then
    step "mariadb-operator $MARIADB_OPERATOR_VERSION (its CRDs, then the operator)"
    helm_install mariadb-operator-crds mariadb-operator MARIADB_OPERATOR_CRDS_CHART "$MARIADB_OPERATOR_REPO" \
      mariadb-operator-crds "$MARIADB_OPERATOR_VERSION"
    mapfile -t v < <(values_arg MARIADB_OPERATOR_VALUES)
    helm_install mariadb-operator mariadb-operator MARIADB_OPERATOR_CHART "$MARIADB_OPERATOR_REPO" \
      mariadb-operator "$MARIADB_OPERATOR_VERSION" --set crds.enabled=false "${v[@]}"
    step_end
  fi
  if wants s3; then
    step "S3 server, bucket wanwide-results, Secret wanwide-results in $ns (for trying it out)"
    # the namespace the chart's README install uses too (helm install --create-namespace takes it as is)
    run kubectl create namespace "$SYSTEM_NS" --dry-run=client -o yaml | run kubectl apply -f -
    s3_manifest | run kubectl apply -f -
    if [[ $ns != default ]]; then  # the manifest's Secret is for the default namespace
      run kubectl create namespace "$ns" --dry-run=client -o yaml | run kubectl apply -f -
      kubectl create secret generic wanwide-results -n "$ns" --from-literal=AWS_ACCESS_KEY_ID=wanwide \
        --from-literal=AWS_SECRET_ACCESS_KEY=wanwide-secret --dry-run=client -o yaml | run kubectl apply -f -
    fi
    run kubectl -n "$SYSTEM_NS" rollout status deployment/s3 --timeout=5m
    run kubectl -n "$SYSTEM_NS" wait --for=condition=complete job/s3-bucket --timeout=5m
    step_end
  fi
  if wants monitoring; then
    step "prometheus-operator and one Prometheus (kube-prometheus-stack $KUBE_PROMETHEUS_STACK_VERSION)"
    helm_install prom monitoring KUBE_PROMETHEUS_STACK_CHART "$PROMETHEUS_REPO" kube-prometheus-stack \
      "$KUBE_PROMETHEUS_STACK_VERSION" --set grafana.enabled=false --set alertmanager.enabled=false \
      --set nodeExporter.enabled=false --set kubeStateMetrics.enabled=false \
      --set prometheus.prometheusSpec.podMonitorSelectorNilUsesHelmValues=false
    step_end
  fi
  log "done; next: helm install wanwide charts/wanwide -n $SYSTEM_NS --create-namespace --set 'watchNamespaces={$ns}'"
  log "then: wanwide doctor -f manifests/examples/uniform-9.yaml -n $ns (a table with a fix per failing line)"
}

s3_manifest() { # manifests/deps/s3.yaml with the images asked for
  local out
  out=$(<"$S3_MANIFEST")
  [[ -n ${S3_IMAGE:-} ]] && out=${out//"image: $S3_DEFAULT_IMAGE"/"image: $S3_IMAGE"}
  [[ -n ${BUCKET_IMAGE:-} ]] && out=${out//"image: $BUCKET_DEFAULT_IMAGE"/"image: $BUCKET_IMAGE"}
  printf '%s\n' "$out"
}

cmd_uninstall() {
  parse "$@"
  local r rel rns
  run kubectl delete -f "$S3_MANIFEST" --ignore-not-found --wait=true
  for r in "prom monitoring" "mariadb-operator mariadb-operator" "mariadb-operator-crds mariadb-operator" \
           "chaos-mesh chaos-mesh"; do
    read -r rel rns <<<"$r"
    if helm status "$rel" -n "$rns" >/dev/null 2>&1; then
      run helm uninstall "$rel" -n "$rns" --wait
    fi
  done
}

cmd_status() {
  helm list -A 2>/dev/null | grep -E '^(NAME|chaos-mesh|mariadb-operator|mariadb-operator-crds|prom)\s' || true
  kubectl -n "$SYSTEM_NS" get deployment/s3 job/s3-bucket 2>/dev/null || echo "no S3 server in $SYSTEM_NS"
}

case ${1:-} in
  install) shift; cmd_install "$@" ;;
  plan) shift; dry=1; cmd_install "$@" ;;
  uninstall) shift; cmd_uninstall "$@" ;;
  status) cmd_status ;;
  -h|--help|"") usage; [[ -n ${1:-} ]] ;;
  *) usage; exit 2 ;;
esac
