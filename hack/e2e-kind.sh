#!/usr/bin/env bash
# End to end on kind with the real dependencies (needs Docker and network access to
# chart repositories and registries; NOT run in this repository's CI, which has neither).
#   hack/e2e-kind.sh [example]        default: manifests/examples/uniform-9.yaml
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
example=${1:-$root/manifests/examples/uniform-9.yaml}
cluster=${KIND_CLUSTER:-wanwide-e2e}
img=ghcr.io/wanwide/wanwide:0.1.0

cat <<KIND | kind create cluster --name "$cluster" --config -
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
  - role: control-plane
  - role: worker
    labels: {topology.kubernetes.io/region: r1}
  - role: worker
    labels: {topology.kubernetes.io/region: r2}
  - role: worker
    labels: {topology.kubernetes.io/region: r3}
KIND
docker build -t "$img" "$root"
kind load docker-image "$img" --name "$cluster"

helm repo add chaos-mesh https://charts.chaos-mesh.org
helm repo add mariadb-operator https://mariadb-operator.github.io/mariadb-operator
helm repo add prometheus-community https://prometheus-community.github.io/helm-charts
helm repo update
helm upgrade --install chaos-mesh chaos-mesh/chaos-mesh -n chaos-mesh --create-namespace --version 2.8.3 \
  --set chaosDaemon.runtime=containerd --set chaosDaemon.socketPath=/run/containerd/containerd.sock --wait
helm upgrade --install mariadb-operator-crds mariadb-operator/mariadb-operator-crds -n mariadb-operator --create-namespace
helm upgrade --install mariadb-operator mariadb-operator/mariadb-operator -n mariadb-operator --wait
helm upgrade --install prom prometheus-community/kube-prometheus-stack -n monitoring --create-namespace --wait

# S3 for results: versitygw in the cluster
kubectl create namespace wanwide-system --dry-run=client -o yaml | kubectl apply -f -
kubectl -n wanwide-system apply -f - <<S3
apiVersion: apps/v1
kind: Deployment
metadata: {name: s3}
spec:
  selector: {matchLabels: {app: s3}}
  template:
    metadata: {labels: {app: s3}}
    spec:
      containers:
        - name: versitygw
          image: versity/versitygw:v1.8.0
          args: [--port, ":7070", posix, /data]
          env: [{name: ROOT_ACCESS_KEY, value: wanwide}, {name: ROOT_SECRET_KEY, value: wanwide-secret}]
          volumeMounts: [{name: data, mountPath: /data}]
      volumes: [{name: data, emptyDir: {}}]
---
apiVersion: v1
kind: Service
metadata: {name: s3}
spec: {selector: {app: s3}, ports: [{port: 7070}]}
S3
kubectl create secret generic wanwide-results --from-literal=AWS_ACCESS_KEY_ID=wanwide \
  --from-literal=AWS_SECRET_ACCESS_KEY=wanwide-secret --dry-run=client -o yaml | kubectl apply -f -

helm upgrade --install wanwide "$root/charts/wanwide" -n wanwide-system --set 'watchNamespaces={default}' --wait
kubectl apply -f "$example"
name=$(python3 -c "import yaml,sys; print([d for d in yaml.safe_load_all(open(sys.argv[1])) if d['kind']=='Benchmark'][0]['metadata']['name'])" "$example")
kubectl wait --for=jsonpath='{.status.phase}'=Succeeded "benchmark/$name" --timeout=60m
kubectl get benchmarks,trials
