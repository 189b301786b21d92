#!/usr/bin/env bash
# Real Chaos Mesh (controller-manager + chaos-daemon) for the test cluster's real
# node, built here from the Go module the CRDs come from (hack/upstream-crds.sh).
#
#   hack/chaos-mesh.sh build       # binaries from the Go module (cached)
#   hack/chaos-mesh.sh images      # image tars (Debian bookworm rootfs, mmdebstrap; cached)
#   hack/chaos-mesh.sh import [--address SOCK]
#                                  # ctr -n k8s.io images import into the real node's containerd
#   hack/chaos-mesh.sh install [--address SOCK]
#                                  # build + images + import + helm install the module's own chart
#   hack/chaos-mesh.sh uninstall   # helm uninstall, wait for the pods to go
#   hack/chaos-mesh.sh ref NAME    # image reference of NAME (chaos-mesh | chaos-probe)
#   hack/chaos-mesh.sh path NAME   # its image archive (docker-archive tar)
#   hack/chaos-mesh.sh address     # the containerd socket import/install use
#   hack/chaos-mesh.sh chart       # the module's own chart directory (what install installs)
#   hack/chaos-mesh.sh status      # what is cached / imported / installed
#
# What is built (docs/chaos-mesh.md says why):
#   chaos-controller-manager  CGO off, cmd/chaos-controller-manager
#   chaos-daemon              CGO on (pkg/ptrace), with the fakeclock .o files it embeds
#   pause                     hack/pause.c of the module
#   nsexec                    NOT upstream's Rust nsexec (not on crates.io): a shell stand-in
#                             for the options chaos-daemon passes (-n/-i/-p/-m PATH -- CMD…),
#                             carried out by util-linux nsenter; -l (local mount) is refused.
#   (not built: toda, tproxy, memStress, byteman, cdh: IOChaos, HTTPChaos, StressChaos,
#    JVMChaos, BlockChaos are out of scope)
#
# Environment: WANWIDE_CACHE (default ~/.cache/wanwide), CHAOS_MESH_NAMESPACE (chaos-mesh),
# WANWIDE_CONTAINERD_ADDRESS (the real node's containerd socket; --address wins).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_TAG=chaos-mesh
# shellcheck source=hack/lib.sh
source "$ROOT/hack/lib.sh"
trap 'on_error_report $? "$BASH_COMMAND" $LINENO' ERR

GO=${GO:-/usr/local/go/bin/go}
[[ -x $GO ]] || GO=$(command -v go || echo go)
CACHE=${WANWIDE_CACHE:-$HOME/.cache/wanwide}
NAMESPACE=${CHAOS_MESH_NAMESPACE:-chaos-mesh}
RELEASE=chaos-mesh
# label and taint of the test cluster's real node (hack/testcluster/realnode.sh); its VM nodes
# (hack/testcluster/vmnode.sh) carry both, and the taint VM_TAINT: chaos-daemon runs on them too,
# the controller-manager stays on the host's real node
NODE_LABEL=${WANWIDE_REALNODE_LABEL:-wanwide.io/real-node}
VM_TAINT=wanwide.io/vm-node
# the pin lives in hack/upstream-crds.sh alone
CM_MODULE=$(sed -n 's/^CHAOS_MESH_MODULE=//p' "$ROOT/hack/upstream-crds.sh")
CM_VERSION=$(sed -n 's/^CHAOS_MESH_VERSION=//p' "$ROOT/hack/upstream-crds.sh")
CM_COMMIT=${CM_VERSION##*-}
# The module's go.mod replaces its nested api module with ./api, which the module zip does
# not carry, and the proxy refuses api@<same commit> (403). api@latest is this one (4 days
# later): the api of main in August plus the new, optional NetworkChaos.spec.partitionBehavior.
# Its mutating webhook defaults that field to "drop"; the v2.8.3 CRD prunes it, so every
# update the controller makes differs from the stored spec and the validating webhook
# refuses it ("Cannot update chaos spec": nothing is ever injected). API_PATCH removes that
# one default from a writable copy of the api module: then the api behaves as at the pin
# (the field stays empty and is never serialized). docs/chaos-mesh.md has the details.
CM_API_VERSION=v0.0.0-20260906172039-d70b66ad97ac
API_PATCH='no-partitionBehavior-default-1'
CM_HOME=$CACHE/chaos-mesh/$CM_VERSION
BIN=$CM_HOME/bin
IMG=$CM_HOME/images
SUITE=bookworm
# the image's packages: what chaos-daemon runs for NetworkChaos (iptables, ipset, ip, tc,
# nsenter) plus what its Dockerfile names that a partition/netem path may touch
DAEMON_PACKAGES=(iptables ipset iproute2 util-linux procps tzdata ca-certificates)
PROBE_PACKAGES=(socat bash coreutils python3-minimal)

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

module_dir() {
  local json dir
  dir=$(GOFLAGS="" GOTOOLCHAIN=local "$GO" env GOMODCACHE)/$CM_MODULE@$CM_VERSION
  if [[ ! -d $dir ]]; then
    json=$(cd "${TMPDIR:-/tmp}" && GOFLAGS="" GOTOOLCHAIN=local "$GO" mod download -json "$CM_MODULE@$CM_VERSION")
    dir=$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' <<<"$json")
  fi
  [[ -d $dir ]] || { log "ERROR: no module dir for $CM_MODULE@$CM_VERSION"; return 1; }
  echo "$dir"
}

# --- build -------------------------------------------------------------------------------

NSEXEC=$ROOT/hack/chaos-mesh/nsexec  # the nsexec stand-in (see its header)

api_copy() { # $CM_HOME/api: the api module at CM_API_VERSION, minus the partitionBehavior default
  local dir json wh=$CM_HOME/api/v1alpha1/networkchaos_webhook.go
  [[ $(cat "$CM_HOME/api/.patched" 2>/dev/null) == "$CM_API_VERSION $API_PATCH" ]] && return 0
  json=$(cd "${TMPDIR:-/tmp}" && GOFLAGS="" GOTOOLCHAIN=local "$GO" mod download -json \
    "github.com/chaos-mesh/chaos-mesh/api@$CM_API_VERSION")
  dir=$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' <<<"$json")
  [[ -d $dir ]] || { log "ERROR: cannot download the api module: $json"; return 1; }
  rm -rf "$CM_HOME/api"
  cp -r "$dir" "$CM_HOME/api"
  chmod -R u+w "$CM_HOME/api"
  # the three lines: if in.PartitionBehavior == "" { in.PartitionBehavior = Drop… }
  sed -i '/if in.PartitionBehavior == "" {/,+2d' "$wh"
  if grep -q 'PartitionBehavior' "$wh"; then
    log "ERROR: the partitionBehavior default is still in $wh (upstream changed?)"
    return 1
  fi
  echo "$CM_API_VERSION $API_PATCH" >"$CM_HOME/api/.patched"
}

cmd_build() {
  local src mod t0 ldflags
  apt_ensure gcc libc6-dev
  mkdir -p "$BIN" "$CM_HOME/log"
  # binaries built against another api copy are stale
  if [[ $(cat "$BIN/.api" 2>/dev/null) != "$CM_API_VERSION $API_PATCH" ]]; then
    rm -f "$BIN/chaos-controller-manager" "$BIN/chaos-daemon"
  fi
  if [[ -x $BIN/chaos-controller-manager && -x $BIN/chaos-daemon && -x $BIN/pause ]] &&
     cmp -s "$NSEXEC" "$BIN/nsexec"; then
    log "build: cached in $BIN, skip"
    return 0
  fi
  mod=$(module_dir)
  # a writable copy: the module cache is read-only and chaos-daemon embeds .o files
  # (pkg/time/fakeclock/*.o) that the module zip does not carry
  src=$CM_HOME/src
  if [[ ! -f $src/.copied ]]; then
    step "copy module source" 
    rm -rf "$src"
    cp -r "$mod" "$src"
    chmod -R u+w "$src"
    touch "$src/.copied"
    step_end
  fi
  ldflags="-s -w -X github.com/chaos-mesh/chaos-mesh/pkg/version.gitVersion=$CM_VERSION"
  ldflags+=" -X github.com/chaos-mesh/chaos-mesh/pkg/version.gitCommit=$CM_COMMIT"
  ldflags+=" -X github.com/chaos-mesh/chaos-mesh/pkg/version.buildDate=1970-01-01T00:00:00Z"
  export GOFLAGS=-mod=mod GOTOOLCHAIN=local
  api_copy
  (cd "$src" && "$GO" mod edit -replace "github.com/chaos-mesh/chaos-mesh/api=$CM_HOME/api")
  if [[ ! -x $BIN/chaos-controller-manager ]]; then
    step "go build chaos-controller-manager" "$CM_HOME/log/controller-manager.log"
    t0=$(date +%s)
    (cd "$src" && CGO_ENABLED=0 "$GO" build -trimpath -ldflags "$ldflags" \
        -o "$BIN/chaos-controller-manager.tmp" ./cmd/chaos-controller-manager) \
      >"$CM_HOME/log/controller-manager.log" 2>&1
    mv "$BIN/chaos-controller-manager.tmp" "$BIN/chaos-controller-manager"
    echo "chaos-controller-manager $(($(date +%s) - t0)) s" >>"$CM_HOME/log/timings"
    step_end
  fi
  if [[ ! -x $BIN/chaos-daemon ]]; then
    step "go build chaos-daemon (CGO)" "$CM_HOME/log/daemon.log"
    t0=$(date +%s)
    (cd "$src/pkg/time/fakeclock" &&
      cc -c fake_clock_gettime.c -fPIE -O2 -o fake_clock_gettime.o &&
      cc -c fake_gettimeofday.c -fPIE -O2 -o fake_gettimeofday.o)
    (cd "$src" && CGO_ENABLED=1 "$GO" build -trimpath -ldflags "$ldflags" \
        -o "$BIN/chaos-daemon.tmp" ./cmd/chaos-daemon) >"$CM_HOME/log/daemon.log" 2>&1
    mv "$BIN/chaos-daemon.tmp" "$BIN/chaos-daemon"
    echo "chaos-daemon $(($(date +%s) - t0)) s" >>"$CM_HOME/log/timings"
    step_end
  fi
  echo "$CM_API_VERSION $API_PATCH" >"$BIN/.api"
  cc -O2 -o "$BIN/pause" "$src/hack/pause.c"
  install -m 0755 "$NSEXEC" "$BIN/nsexec"
  log "build: done: $(cd "$BIN" && echo *)"
}

# --- images ------------------------------------------------------------------------------

# image NAME: definition text (what the cache key hashes)
image_def() {
  case $1 in
    chaos-mesh)
      echo "suite=$SUITE packages=${DAEMON_PACKAGES[*]} iptables=legacy"
      sha256sum "$BIN/chaos-controller-manager" "$BIN/chaos-daemon" "$BIN/pause" "$BIN/nsexec" | cut -d' ' -f1 ;;
    chaos-probe)
      echo "suite=$SUITE packages=${PROBE_PACKAGES[*]}" ;;
    *) log "ERROR: unknown image $1 (chaos-mesh | chaos-probe)"; return 1 ;;
  esac
}

image_tag() { # NAME -> content tag
  local h
  h=$( { image_def "$1"; sed -n '/^# --- images/,/^# --- end images/p' "${BASH_SOURCE[0]}"; } | sha256sum | cut -c1-12)
  echo "$h"
}

cmd_ref() { # NAME -> wanwide.local/NAME:TAG (the registry name hack/images.sh uses; never pulled)
  echo "${WANWIDE_IMAGE_REGISTRY:-wanwide.local}/$1:$(image_tag "$1")"
}

# docker-archive tar (manifest.json + config + one layer) from a rootfs tar
docker_archive() { # ROOTFS_TAR REPO_TAG OUT CMD_JSON
  local rootfs=$1 ref=$2 out=$3 cmdjson=$4 d diff cfg cfgsum
  d=$(mktemp -d "$IMG/.archive.XXXXXX")
  diff=$(sha256sum "$rootfs" | cut -d' ' -f1)
  mv "$rootfs" "$d/layer.tar"
  cfg=$(printf '{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Cmd":%s},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' "$cmdjson" "$diff")
  cfgsum=$(printf '%s' "$cfg" | sha256sum | cut -d' ' -f1)
  printf '%s' "$cfg" >"$d/$cfgsum.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["layer.tar"]}]' "$cfgsum" "$ref" >"$d/manifest.json"
  tar -C "$d" -cf "$out.tmp" manifest.json "$cfgsum.json" layer.tar
  mv "$out.tmp" "$out"
  rm -rf "$d"
}

build_image() { # NAME
  local name=$1 tag out rootfs ref t0 pkgs hooks=()
  tag=$(image_tag "$name")
  out=$IMG/$name-$tag.tar
  if [[ -s $out ]]; then log "image $name: cached $out"; return 0; fi
  apt_ensure mmdebstrap
  mkdir -p "$IMG"
  rootfs=$(mktemp "$IMG/.rootfs-$name.XXXXXX.tar")
  case $name in
    chaos-mesh)
      pkgs=$(IFS=,; echo "${DAEMON_PACKAGES[*]}")
      # shellcheck disable=SC2016  # $1 is mmdebstrap's, expanded by its hook shell
      hooks=(
        --customize-hook="install -m 0755 $BIN/chaos-controller-manager $BIN/chaos-daemon $BIN/pause $BIN/nsexec \"\$1/usr/local/bin/\""
        # as upstream's image: the legacy backend (this kernel has both; kube-proxy and the
        # test's nsenter … iptables-save must look at the same one)
        --customize-hook='chroot "$1" update-alternatives --set iptables /usr/sbin/iptables-legacy'
      ) ;;
    chaos-probe)
      pkgs=$(IFS=,; echo "${PROBE_PACKAGES[*]}") ;;
  esac
  step "mmdebstrap $name" "$CM_HOME/log/image-$name.log"
  t0=$(date +%s)
  # shellcheck disable=SC2016  # $1 is mmdebstrap's, expanded by its hook shell
  SOURCE_DATE_EPOCH=0 mmdebstrap --variant=essential --include="$pkgs" --skip=output/dev \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    "${hooks[@]}" \
    --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
    "$SUITE" "$rootfs" >"$CM_HOME/log/image-$name.log" 2>&1
  ref=$(cmd_ref "$name")
  docker_archive "$rootfs" "$ref" "$out" '["sleep","infinity"]'
  echo "image $name $(($(date +%s) - t0)) s $(du -h "$out" | cut -f1)" >>"$CM_HOME/log/timings"
  step_end
  log "image $name: $out ($ref)"
}

cmd_images() {
  cmd_build
  build_image chaos-mesh
  build_image chaos-probe
}
# --- end images

# --- import / install --------------------------------------------------------------------

containerd_address() { realnode_containerd "$ADDRESS"; }

cmd_import() {
  local addr name ref
  cmd_images
  addr=$(containerd_address)
  command -v ctr >/dev/null || apt_ensure containerd
  for name in chaos-mesh chaos-probe; do
    ref=$(cmd_ref "$name")
    if ctr --address "$addr" -n k8s.io images ls -q | grep -x "$ref" >/dev/null; then  # not -q: see images.sh
      log "import $name: $ref present, skip"
      continue
    fi
    step "ctr import $name"
    ctr --address "$addr" -n k8s.io images import "$IMG/$name-$(image_tag "$name").tar" >&2
    step_end
  done
  # the test cluster's VM nodes (their containerd runs in the VM: hack/testcluster.sh imports there)
  if [[ -z $ADDRESS && -n $("$ROOT/hack/testcluster.sh" vm-nodes 2>/dev/null) ]]; then
    step "import into the VM nodes"
    "$ROOT/hack/testcluster.sh" vm-import --all "$IMG/chaos-mesh-$(image_tag chaos-mesh).tar" \
      "$IMG/chaos-probe-$(image_tag chaos-probe).tar" >&2
    step_end
  fi
}

cmd_install() {
  local addr chart tag ref
  cmd_import
  addr=$(containerd_address)
  # on the host, for looking into pod netns (tests: nsenter -t PID -n iptables-legacy-save)
  apt_ensure iptables ipset
  kube_env
  chart=$(module_dir)/helm/chaos-mesh
  tag=$(image_tag chaos-mesh)
  ref=$(cmd_ref chaos-mesh)
  # --skip-crds: `hack/testcluster.sh up` applies the same CRDs (manifests/crd.yaml) server-side
  # only the real node runs containers: pin both to it (kwok nodes would "run" them for show)
  cat >"$CM_HOME/values.yaml" <<EOF
images: {registry: "${ref%%/*}", tag: "$tag"}
controllerManager:
  image: {repository: chaos-mesh}
  imagePullPolicy: Never
  replicaCount: 1
  leaderElection: {enabled: false}
  nodeSelector: {$NODE_LABEL: "true"}
  tolerations: [{key: $NODE_LABEL, operator: Exists}]
chaosDaemon:
  image: {repository: chaos-mesh}
  imagePullPolicy: Never
  runtime: containerd
  socketPath: $addr
  nodeSelector: {$NODE_LABEL: "true"}
  tolerations: [{key: $NODE_LABEL, operator: Exists}, {key: $VM_TAINT, operator: Exists}]
dashboard: {create: false}
dnsServer: {create: false}
bpfki: {create: false}
chaosDlv: {enable: false}
EOF
  standins off
  step "helm upgrade --install $RELEASE ($NAMESPACE)"
  helm upgrade --install "$RELEASE" "$chart" -n "$NAMESPACE" --create-namespace \
    --skip-crds --wait --timeout 5m -f "$CM_HOME/values.yaml" "${HELM_EXTRA[@]}" >&2
  step_end
}

cmd_uninstall() {
  kube_env
  helm_uninstall "$RELEASE" "$NAMESPACE"
  standins on
}

standins() { # on|off: the test cluster's kwok stand-ins for Chaos Mesh (its Stages would write the same
  # objects' status as the real one, each write a new generation that Chaos Mesh injects again: seen as a
  # WAN never AllInjected on a VM node). Only when KUBECONFIG is the test cluster's.
  local dir=${WANWIDE_TESTCLUSTER_DIR:-$ROOT/.testcluster}
  [[ ${KUBECONFIG:-} == "$dir/kubeconfig" ]] || return 0
  "$ROOT/hack/testcluster.sh" chaos-standins "$1"
}

cmd_status() {
  echo "module: $CM_MODULE@$CM_VERSION"
  echo "cache:  $CM_HOME"
  ls -l "$BIN" 2>/dev/null || echo "  (no binaries)"
  ls -l "$IMG" 2>/dev/null || echo "  (no images)"
  [[ -f $CM_HOME/log/timings ]] && cat "$CM_HOME/log/timings"
  return 0
}

ADDRESS=""
HELM_EXTRA=()
cmd=${1:-}
shift || true
while (($#)); do
  case $1 in
    --address) ADDRESS=$2; shift 2 ;;
    --set|-f|--values) HELM_EXTRA+=("$1" "$2"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) ARG=$1; shift ;;
  esac
done
case $cmd in
  build) cmd_build ;;
  images) cmd_images ;;
  import) cmd_import ;;
  install) cmd_install ;;
  uninstall) cmd_uninstall ;;
  ref) cmd_ref "${ARG:?usage: ref NAME}" ;;
  path) image_def "${ARG:?usage: path NAME}" >/dev/null; echo "$IMG/$ARG-$(image_tag "$ARG").tar" ;;
  address) containerd_address ;;
  chart) echo "$(module_dir)/helm/chaos-mesh" ;;
  status) cmd_status ;;
  *) usage; exit 2 ;;
esac
