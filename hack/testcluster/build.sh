#!/usr/bin/env bash
# Builds (once) the binaries of the loopback test cluster from Go modules and
# caches them as $WANWIDE_CACHE/bin/<name>-<version>. Sourced by
# hack/testcluster.sh; also runnable alone: hack/testcluster/build.sh
set -euo pipefail

: "${REPO:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${CACHE:=${WANWIDE_CACHE:-$HOME/.cache/wanwide}}"
BIN="$CACHE/bin"
: "${GO:=$(command -v go || echo /usr/local/go/bin/go)}"

ETCD_VERSION=v3.6.16
KUBE_VERSION=v1.34.4
KUBE_STAGING_VERSION=v0.34.4
KWOK_VERSION=v0.8.0
HELM_VERSION=v3.22.0
# the Kubernetes version helm assumes without a cluster (helm template, lint): helm's Makefile sets it
# from its client-go (v0.37.0 -> 1.37); `go install` alone leaves 1.20, older than the chart's kubeVersion
HELM_KUBE_MINOR=37
VERSITYGW_VERSION=v1.8.0
COREDNS_VERSION=v1.14.7

log() { printf '[testcluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# Binary name -> cached path.
bin_path() {
  case "$1" in
    etcd) echo "$BIN/etcd-$ETCD_VERSION" ;;
    kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|kubelet|kube-proxy) echo "$BIN/$1-$KUBE_VERSION" ;;
    kwok) echo "$BIN/kwok-$KWOK_VERSION" ;;
    helm) echo "$BIN/helm-$HELM_VERSION-kube1.$HELM_KUBE_MINOR" ;;
    versitygw) echo "$BIN/versitygw-$VERSITYGW_VERSION" ;;
    coredns) echo "$BIN/coredns-$COREDNS_VERSION" ;;
    s3-forward|api-forward) echo /usr/bin/socat ;;  # Debian's (the real node's packages)
    *) echo "unknown binary $1" >&2; return 1 ;;
  esac
}
ALL_BINARIES=(kube-apiserver kube-controller-manager kube-scheduler etcd kwok helm versitygw)
# the real node's (`build --real-node`, `up --real-node`): never built by plain `build`/`up`
REAL_NODE_BINARIES=(kubelet kube-proxy coredns)

# go with a writable work area of our own; never touches the repo's go files.
gorun() { GOFLAGS=-buildvcs=false GOTOOLCHAIN=local CGO_ENABLED=0 "$GO" "$@"; }

timed_install() { # name tmpfile minutes-hint cmd...
  local name=$1 out=$2 hint=$3; shift 3
  local dst; dst=$(bin_path "$name")
  log "building $name (first time, ~$hint min)…"
  local t0=$SECONDS
  "$@"
  mv -f "$out" "$dst"
  log "built $name in $((SECONDS - t0)) s -> $dst ($(du -h "$dst" | cut -f1))"
  echo "$name $((SECONDS - t0))" >>"$CACHE/build-times.log"
}

build_etcd() {
  local dst; dst=$(bin_path etcd); [[ -x $dst ]] && return 0
  local mod="$CACHE/build/etcd-$ETCD_VERSION"
  mkdir -p "$mod"
  sed "s/@ETCD_VERSION@/$ETCD_VERSION/g" "$REPO/hack/testcluster/etcd.go.mod.in" >"$mod/go.mod"
  (cd "$mod" && timed_install etcd "$mod/etcd.out" 3 \
     gorun build -mod=mod -trimpath -ldflags='-s -w' -o "$mod/etcd.out" go.etcd.io/etcd/server/v3)
}

kube_ldflags() {
  local minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
  local f="-s -w" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    f+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    f+=" -X $p.gitTreeState=clean -X $p.gitCommit=0000000000000000000000000000000000000000"
    f+=" -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$f"
}

prepare_kube_module() {
  local mod="$CACHE/build/kubernetes-$KUBE_VERSION"
  mkdir -p "$mod"
  if [[ ! -f $mod/go.mod ]]; then
    local gomod
    gomod=$(cd "$mod" && gorun mod download -json "k8s.io/kubernetes@$KUBE_VERSION" \
            | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    {
      sed "s/@KUBE_VERSION@/$KUBE_VERSION/g" "$REPO/hack/testcluster/kubernetes.go.mod.in"
      echo "replace ("
      # every staging module that k8s.io/kubernetes replaces with ./staging/…
      sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*#\t\1 => \1 '"$KUBE_STAGING_VERSION"'#p' "$gomod"
      echo ")"
    } >"$mod/go.mod.tmp"
    mv "$mod/go.mod.tmp" "$mod/go.mod"
  fi
  echo "$mod"
}

build_kube() { # kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|kubelet|kube-proxy
  local name=$1 dst; dst=$(bin_path "$name"); [[ -x $dst ]] && return 0
  local mod hint=3; mod=$(prepare_kube_module)
  [[ $name == kube-apiserver ]] && hint=10
  (cd "$mod" && timed_install "$name" "$mod/$name.out" "$hint" \
     gorun build -mod=mod -trimpath -ldflags="$(kube_ldflags)" -o "$mod/$name.out" "k8s.io/kubernetes/cmd/$name")
}

build_goinstall() { # name hint module/pkg@version [ldflags]
  local name=$1 hint=$2 pkg=$3 ld=${4:-}
  local dst; dst=$(bin_path "$name"); [[ -x $dst ]] && return 0
  local gobin="$CACHE/build/gobin-$name"; mkdir -p "$gobin"
  local base=${pkg%@*}; base=${base##*/}
  (cd "$CACHE/build" && GOBIN="$gobin" timed_install "$name" "$gobin/$base" "$hint" \
     gorun install -trimpath -ldflags="-s -w $ld" "$pkg")
}

build_kwok() { build_goinstall kwok 2 "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"; }
build_helm() {
  local ld="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean" p
  for p in pkg/lint/rules pkg/chartutil; do
    ld+=" -X helm.sh/helm/v3/$p.k8sVersionMajor=1 -X helm.sh/helm/v3/$p.k8sVersionMinor=$HELM_KUBE_MINOR"
  done
  build_goinstall helm 2 "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" "$ld"
}
build_versitygw() { build_goinstall versitygw 2 "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"; }
build_coredns() { build_goinstall coredns 4 "github.com/coredns/coredns@$COREDNS_VERSION" \
                    "-X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION"; }

build_all() {
  mkdir -p "$BIN" "$CACHE/build"
  local missing=() n
  for n in "${ALL_BINARIES[@]}"; do [[ -x $(bin_path "$n") ]] || missing+=("$n"); done
  ((${#missing[@]})) || return 0
  # One build at a time per cache; a second caller (e.g. `up` after CI started
  # `build` early) waits for the first.
  exec 9>"$CACHE/build.lock"
  if ! flock -n 9; then log "another build is running; waiting for it…"; flock 9; fi
  log "missing binaries: ${missing[*]} (cache $BIN)"
  local t0=$SECONDS
  # Two lanes: Kubernetes (big) and the rest. Run them side by side only when
  # memory allows (a kube link step takes ~3 GiB).
  local avail_kb; avail_kb=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
  kube_lane() { build_kube kube-apiserver; build_kube kube-controller-manager; build_kube kube-scheduler; }
  other_lane() { build_etcd; build_kwok; build_helm; build_versitygw; }
  if ((avail_kb > 8 * 1024 * 1024)) && [[ ${WANWIDE_BUILD_PARALLEL:-1} == 1 ]]; then
    other_lane & local pid=$!
    local rc=0
    kube_lane || rc=$?
    wait "$pid" || rc=$?
    ((rc == 0)) || { log "build failed"; return "$rc"; }
  else
    kube_lane; other_lane
  fi
  log "all binaries built in $((SECONDS - t0)) s"
  flock -u 9
}

# kubelet, kube-proxy (same module dir and ldflags as the control plane) and
# CoreDNS, one after the other (kubelet and kube-proxy share the kube build cache).
missing_real_node() { # the real-node binaries not cached, one a line
  local n
  for n in "${REAL_NODE_BINARIES[@]}"; do [[ -x $(bin_path "$n") ]] || echo "$n"; done
}

build_real_node() {
  mkdir -p "$BIN" "$CACHE/build"
  local missing=() n
  while IFS= read -r n; do missing+=("$n"); done < <(missing_real_node)
  ((${#missing[@]})) || return 0
  exec 9>"$CACHE/build.lock"
  if ! flock -n 9; then log "another build is running; waiting for it…"; flock 9; fi
  log "missing real-node binaries: ${missing[*]} (cache $BIN)"
  local t0=$SECONDS
  build_kube kubelet
  build_kube kube-proxy
  build_coredns
  log "real-node binaries built in $((SECONDS - t0)) s"
  flock -u 9
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  case ${1:-} in
    --real-node) build_real_node ;;
    --missing-real-node) missing_real_node ;;  # what --real-node would build (nothing is built)
    *) build_all ;;
  esac
fi
