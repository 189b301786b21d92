#!/usr/bin/env bash
# Real mariadb-operator (v26.6.0) for the test cluster's real node, from its own charts
# (deploy/charts/mariadb-operator-crds and deploy/charts/mariadb-operator, through
# hack/upstream-charts.sh: the mirror in $WANWIDE_UPSTREAM_DIR, else fetched upstream).
# Images are hack/images.sh's mariadb-operator (controller, webhook, cert-controller,
# Galera agent/init) and mariadb (the MariaDB pods), imported into the real node's
# containerd; nothing is pulled.
#
#   hack/mariadb-operator.sh install [--address SOCK]
#       images (build, import), the real CRDs in place of the test cluster's stand-ins,
#       then the operator chart, waiting until its three Deployments are available
#   hack/mariadb-operator.sh uninstall
#       both releases (the CRDs go with theirs, and every MariaDB object with them, their
#       finalizers taken off once the operator is gone); the next `hack/testcluster.sh up`
#       puts the stand-in CRDs back for the kwok tier
#   hack/mariadb-operator.sh remove-standins
#       the test cluster's stand-in CRDs, their objects' finalizers taken off first
#   hack/mariadb-operator.sh status
#
# Pods go to the real node (its label selected, its taint tolerated). The metrics exporter
# image (prom/mysqld-exporter) cannot be built here (the Go proxy refuses the module):
# MariaDB objects with metrics on get an exporter that cannot start.
# Environment: WANWIDE_UPSTREAM_DIR, WANWIDE_CACHE, WANWIDE_CONTAINERD_ADDRESS,
# MARIADB_OPERATOR_NAMESPACE (default mariadb-operator).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_TAG=mariadb-operator
# shellcheck source=hack/lib.sh
source "$ROOT/hack/lib.sh"
trap 'on_error_report $? "$BASH_COMMAND" $LINENO' ERR

NAMESPACE=${MARIADB_OPERATOR_NAMESPACE:-mariadb-operator}
RELEASE=mariadb-operator
CRDS_RELEASE=mariadb-operator-crds
NODE_LABEL=${WANWIDE_REALNODE_LABEL:-wanwide.io/real-node}
STATE=${WANWIDE_TESTCLUSTER_DIR:-$ROOT/.testcluster}
ADDRESS=""

values() { # operator-ref mariadb-ref: the chart values
  local op=$1 db=$2 img sel tol
  img="{repository: \"${op%:*}\", tag: \"${op##*:}\", pullPolicy: Never}"
  sel="{$NODE_LABEL: \"true\"}"
  tol="[{key: $NODE_LABEL, operator: Exists}]"
  cat <<EOF
image: $img
nodeSelector: $sel
tolerations: $tol
webhook: {image: $img, nodeSelector: $sel, tolerations: $tol}
certController: {image: $img, nodeSelector: $sel, tolerations: $tol}
metrics: {enabled: false}
config:
  mariadbImage: {repository: "${db%:*}", tag: "${db##*:}"}
  # the image's tag is a content key, not a version: say which MariaDB it holds
  mariadbDefaultVersion: "10.11"
  galeraLibPath: /usr/lib/galera/libgalera_smm.so
EOF
}

release_finalizers() { # CRD...: take the finalizers off every object of these CRDs (no controller will)
  # A Database, User or Grant of a failed trial kept by cleanup: Never carries mariadb-operator's finalizer;
  # with the operator gone (uninstalled, or its CRDs replaced by stand-ins) nothing removes it, and deleting
  # the CRD waits on it for ever (seen: a test module's install blocked for its whole 3,600 s limit).
  local crd kind ns name
  for crd in "$@"; do
    kind=${crd#*/}  # customresourcedefinition.apiextensions.k8s.io/databases.k8s.mariadb.com -> databases.k8s.mariadb.com
    while read -r ns name; do
      [[ -n ${name:-} ]] || continue
      kubectl patch "$kind" "$name" -n "$ns" --type=merge -p '{"metadata":{"finalizers":null}}' >&2 || true
    done < <(kubectl get "$kind" -A -o jsonpath='{range .items[*]}{.metadata.namespace}{" "}{.metadata.name}{"\n"}{end}' \
               2>/dev/null || true)
  done
}

cmd_install() {
  local charts=$ROOT/hack/upstream-charts.sh crds_chart chart addr op db
  crds_chart=$("$charts" path mariadb-operator-crds)
  chart=$("$charts" path mariadb-operator)
  addr=$(realnode_containerd "$ADDRESS")
  step "images (mariadb-operator, mariadb)"
  "$ROOT/hack/images.sh" build mariadb-operator mariadb >&2
  "$ROOT/hack/images.sh" import mariadb-operator mariadb --address "$addr" >&2
  step_end
  op=$("$ROOT/hack/images.sh" ref mariadb-operator)
  db=$("$ROOT/hack/images.sh" ref mariadb)
  kube_env
  cmd_remove_standins  # the test cluster's permissive stand-ins (hack/testcluster/crds) give way to the real CRDs
  step "helm upgrade --install $CRDS_RELEASE"
  helm upgrade --install "$CRDS_RELEASE" "$crds_chart" -n "$NAMESPACE" \
    --create-namespace --wait --timeout 3m >&2
  # (a loop, not `kubectl wait --for condition`: that fails at once on a CRD whose status is not written yet)
  local i
  for ((i = 0; i < 60; i++)); do
    [[ $(kubectl get crd mariadbs.k8s.mariadb.com \
           -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null) == True ]] && break
    sleep 1
  done
  ((i < 60)) || { log "ERROR: CRD mariadbs.k8s.mariadb.com not Established after 60 s"; exit 1; }
  step_end
  mkdir -p "$STATE"
  values "$op" "$db" >"$STATE/mariadb-operator-values.yaml"
  step "helm upgrade --install $RELEASE"
  helm upgrade --install "$RELEASE" "$chart" -n "$NAMESPACE" \
    --set crds.enabled=false -f "$STATE/mariadb-operator-values.yaml" --wait --timeout 5m >&2
  step_end
}

cmd_remove_standins() {
  kube_env
  local standins
  standins=$(kubectl get crd -l wanwide.io/stand-in=true -o name | grep '\.k8s\.mariadb\.com$' || true)
  [[ -n $standins ]] || return 0
  step "remove the stand-in CRDs"
  # shellcheck disable=SC2086  # one name per word
  release_finalizers $standins
  # shellcheck disable=SC2086  # one name per word
  kubectl delete --wait=true --timeout=300s $standins >&2
  rm -f "$STATE/crds.sha256"  # the next `testcluster.sh up` re-applies what it owns
  step_end
}

cmd_uninstall() {
  kube_env
  helm_uninstall "$RELEASE" "$NAMESPACE"
  local crds
  crds=$(kubectl get crd -o name | grep '\.k8s\.mariadb\.com$' || true)
  # shellcheck disable=SC2086  # one name per word
  [[ -z $crds ]] || release_finalizers $crds  # the operator is gone: nothing else will
  helm_uninstall "$CRDS_RELEASE" "$NAMESPACE"
  rm -f "$STATE/crds.sha256"
}

cmd_status() {
  kube_env
  helm list -n "$NAMESPACE"
  kubectl get deploy -n "$NAMESPACE" 2>/dev/null || true
  kubectl get crd -o name | grep '\.k8s\.mariadb\.com$' || echo "(no k8s.mariadb.com CRDs)"
}

cmd=${1:-}
[[ $# -gt 0 ]] && shift
while [[ $# -gt 0 ]]; do
  case $1 in
    --address) ADDRESS=$2; shift 2 ;;
    --address=*) ADDRESS=${1#--address=}; shift ;;
    *) log "ERROR: unknown argument $1"; exit 2 ;;
  esac
done
case $cmd in
  install) cmd_install ;;
  uninstall) cmd_uninstall ;;
  remove-standins) cmd_remove_standins ;;
  status) cmd_status ;;
  -h|--help|"") sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; [[ -n $cmd ]] ;;
  *) log "ERROR: unknown command $cmd (install | uninstall | remove-standins | status)"; exit 2 ;;
esac
