#!/usr/bin/env bash
# Prints the absolute paths of the real upstream CRD YAML files inside the Go
# module cache, downloading the pinned module first if it is absent.
#
#   hack/upstream-crds.sh chaos-mesh            # manifests/crd.yaml (23 CRDs)
#   hack/upstream-crds.sh prometheus-operator   # example/prometheus-operator-crd/*.yaml
#
# The files are read from the module cache at test time; never commit them.
set -euo pipefail

# Chaos Mesh's v2 tags are not Go module versions; the module is served only at
# pseudo-versions, and the proxy reachable here refuses the pseudo-version of
# the v2.8.3 tag commit (v0.9.1-0.20260610033653-60ec97f1fd5d, 403). This
# pseudo-version (main branch, 2026-09-02) is served, and its manifests/crd.yaml
# is byte-identical to the one at tag v2.8.3 (checked against the upstream git
# tag), so it stands for Chaos Mesh v2.8.3.
CHAOS_MESH_MODULE=github.com/chaos-mesh/chaos-mesh
CHAOS_MESH_VERSION=v0.9.1-0.20260902003049-47411975a8cb
CHAOS_MESH_RELEASE=v2.8.3
PROMETHEUS_OPERATOR_MODULE=github.com/prometheus-operator/prometheus-operator
PROMETHEUS_OPERATOR_VERSION=v0.85.0

GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}

module_dir() { # module version
  local dir
  dir=$(GOFLAGS="" GOTOOLCHAIN=local "$GO" env GOMODCACHE)/$1@$2
  if [[ ! -d $dir ]]; then
    local json
    json=$(cd "${TMPDIR:-/tmp}" && GOFLAGS="" GOTOOLCHAIN=local "$GO" mod download -json "$1@$2") || {
      echo "upstream-crds: cannot download $1@$2:" >&2; echo "$json" >&2; exit 1; }
    dir=$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' <<<"$json")
    [[ -d $dir ]] || { echo "upstream-crds: no Dir for $1@$2: $json" >&2; exit 1; }
  fi
  echo "$dir"
}

case "${1:-}" in
  chaos-mesh)
    d=$(module_dir "$CHAOS_MESH_MODULE" "$CHAOS_MESH_VERSION")
    echo "$d/manifests/crd.yaml" ;;
  prometheus-operator)
    d=$(module_dir "$PROMETHEUS_OPERATOR_MODULE" "$PROMETHEUS_OPERATOR_VERSION")
    ls -1 "$d"/example/prometheus-operator-crd/*.yaml ;;
  versions)
    echo "chaos-mesh $CHAOS_MESH_MODULE@$CHAOS_MESH_VERSION (= $CHAOS_MESH_RELEASE manifests/crd.yaml)"
    echo "prometheus-operator $PROMETHEUS_OPERATOR_MODULE@$PROMETHEUS_OPERATOR_VERSION" ;;
  *)
    echo "usage: $0 chaos-mesh|prometheus-operator|versions" >&2; exit 2 ;;
esac
