#!/usr/bin/env bash
# Runs INSIDE a VM of hack/vm.sh (root; the host's root seen read-only over 9p, writes in the
# guest's memory): the test cluster's VM node — its network, containerd, kubelet and kube-proxy.
# hack/testcluster/vmnode.sh writes the configuration on the host, in CONF (the guest reads it at
# the same path) and runs this through `hack/vm.sh exec`. See docs/chaos-mesh.md, "VM nodes".
#
#   vmnode-guest.sh up CONF            network, containerd, images (CONF/images), kubelet, kube-proxy;
#                                      what runs already is left running
#   vmnode-guest.sh import CONF LIST   ctr images import of each "REF ARCHIVE" line of LIST not there yet
#   vmnode-guest.sh logs CONF [N]      the last N (40) lines of each component's log
#   vmnode-guest.sh status CONF        the components, their pids, memory, the tmpfs
#
# CONF/node.env (written by vmnode.sh) holds the N_* variables of hack/testcluster/node.sh and
# HOST_IP, APISERVER_PORT, SERVICE_CIDR, SERVICE_IP, ROUTED (ranges reached through the host),
# KUBELET, KUBE_PROXY (binaries), SOCK_DIR (where the chaos-daemon looks for the socket).
set -euo pipefail
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
cmd=${1:?up|import|logs|status} CONF=${2:?CONF}
# shellcheck source=/dev/null
source "$CONF/node.env"
LOGS=$N_RUN/log
PIDS=$N_RUN/pids
COMPONENTS=(containerd kubelet kube-proxy)
CHAIN=WANWIDE-VN-APISERVER

say() { echo "[vmnode $N_NAME $(date +%H:%M:%S)] $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

running() { # COMPONENT: its pid, when it runs
  local p
  p=$(cat "$PIDS/$1" 2>/dev/null) || return 1
  [[ -d /proc/$p ]] && grep -qF "$N_CONF" "/proc/$p/cmdline" 2>/dev/null && echo "$p"
}

start() { # COMPONENT BINARY ARGS...: detached, its log in $LOGS
  local c=$1; shift
  running "$c" >/dev/null && return 0
  say "starting $c"
  setsid "$@" >>"$LOGS/$c.log" 2>&1 </dev/null &
  echo $! >"$PIDS/$c"
}

wait_for() { # WHAT SECONDS CMD...
  local what=$1 end=$((SECONDS + $2)); shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < end)) || { say "timed out waiting for $what"; return 1; }
    sleep 1
  done
}

ctr_() { ctr --address "$N_SOCK" -n k8s.io "$@"; }

network() {
  # the node's runtime state in its own tmpfs (overlayfs needs a real upper, not the root overlay)
  mkdir -p "$N_RUN"
  mountpoint -q "$N_RUN" || mount -t tmpfs -o mode=0755,size=90% wwnode "$N_RUN"
  mkdir -p "$LOGS" "$PIDS"
  # the chaos-daemon DaemonSet mounts the directory of one socket path on every node (the real node's)
  mkdir -p "$SOCK_DIR"
  mountpoint -q "$SOCK_DIR" || mount -t tmpfs -o mode=0755 wwnode-sock "$SOCK_DIR"
  modprobe -a br_netfilter overlay
  # what chaos-daemon's tools need and cannot load from its container (it has no /lib/modules): iptables-legacy
  # asks for ip_tables itself (the kernel autoloads tables and matches only once it is there); ipset and tc's
  # ematch filters and qdiscs (targeted delay: prio bands, basic filters matching an ipset, netem, tbf)
  modprobe -a ip_tables iptable_filter iptable_mangle ip6_tables ip6table_filter ip6table_mangle \
    ip_set ip_set_hash_net ip_set_hash_netport xt_set sch_netem sch_prio sch_tbf cls_basic em_ipset
  # a node of its own: forwarding for the pods, and bridged traffic through iptables (kube-proxy
  # without masqueradeAll: peers keep their addresses, which Chaos Mesh's ipset filters match)
  sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1
  if ! ip link show "$N_BRIDGE" >/dev/null 2>&1; then ip link add "$N_BRIDGE" type bridge; fi
  ip -4 addr show dev "$N_BRIDGE" | grep -qF "inet $N_GW/" || ip addr add "$N_GW/${N_POD_CIDR#*/}" dev "$N_BRIDGE"
  ip link set "$N_BRIDGE" up
  local net
  for net in $ROUTED; do ip route replace "$net" via "$HOST_IP"; done
  ip route replace "$SERVICE_CIDR" dev "$N_BRIDGE" src "$N_GW"
  # the `kubernetes` Service has no endpoints (the apiserver advertises 127.0.0.1): pods' in-cluster
  # clients go to the host's forward of the apiserver instead
  iptables -t nat -N "$CHAIN" 2>/dev/null || iptables -t nat -F "$CHAIN"
  iptables -t nat -A "$CHAIN" -s "$N_POD_CIDR" -d "$SERVICE_IP/32" -p tcp --dport 443 \
    -m comment --comment "wanwide VM node: pods to kube-apiserver through the host" \
    -j DNAT --to-destination "$HOST_IP:$APISERVER_PORT"
  iptables -t nat -C PREROUTING -j "$CHAIN" 2>/dev/null || iptables -t nat -I PREROUTING -j "$CHAIN"
}

import() { # LIST: "REF ARCHIVE" lines
  local present ref tar t0
  present=$(ctr_ images ls -q)
  while read -r ref tar; do
    [[ -n $ref ]] || continue
    if grep -qxF "$ref" <<<"$present"; then continue; fi
    t0=$SECONDS
    ctr_ images import --no-unpack=false "$tar" >>"$LOGS/import.log" 2>&1 ||
      { tail -n 20 "$LOGS/import.log" >&2; die "ctr images import $tar failed"; }
    say "imported $ref in $((SECONDS - t0)) s"
  done <"$1"
}

up() {
  network
  mkdir -p "$N_RUN/containerd/root" "$N_RUN/run/containerd/state" "$N_RUN/run/runc" "$N_RUN/cni/ipam" \
    "$N_RUN/kubelet" "$N_RUN/pod-logs" "$N_RUN/volume-plugins"
  start containerd /usr/bin/containerd --config "$N_CONF/containerd.toml"
  wait_for containerd 120 ctr_ version || { tail -n 30 "$LOGS/containerd.log" >&2; exit 1; }
  import "$N_CONF/images"
  local args
  mapfile -t args <"$N_CONF/kubelet.args"
  start kubelet "$KUBELET" "${args[@]}"
  start kube-proxy "$KUBE_PROXY" --config="$N_CONF/kube-proxy.yaml"
  wait_for "kube-proxy healthz" 300 curl -fsS "http://127.0.0.1:$N_PROXY_HEALTHZ_PORT/healthz" ||
    { tail -n 30 "$LOGS/kube-proxy.log" >&2; exit 1; }
  say "up: $(for c in "${COMPONENTS[@]}"; do printf '%s %s ' "$c" "$(running "$c" || echo -)"; done)"
}

case $cmd in
  up) up ;;
  import) import "${3:?import CONF LIST}" ;;
  logs)
    for c in "${COMPONENTS[@]}" import; do
      [[ -f $LOGS/$c.log ]] || continue
      echo "==== $c"
      tail -n "${3:-40}" "$LOGS/$c.log"
    done ;;
  status)
    for c in "${COMPONENTS[@]}"; do
      if p=$(running "$c"); then
        printf '%-12s running pid %-6s rss %s MiB\n' "$c" "$p" "$(($(awk '/VmRSS/ {print $2}' "/proc/$p/status") / 1024))"
      else
        printf '%-12s stopped\n' "$c"
      fi
    done
    df -h "$N_RUN" | tail -1
    free -m | sed -n 2p ;;
  *) die "unknown command $cmd (up|import|logs|status)" ;;
esac
