# shellcheck shell=bash
# shellcheck disable=SC2153  # RN_*: hack/testcluster/realnode.sh's, sourced before this file
# VM nodes of the loopback test cluster (`hack/testcluster.sh up --vm-node NAME`): a VM of
# hack/vm.sh (Debian's stock kernel, which has sch_netem, unlike some hosts') runs a kubelet,
# containerd and kube-proxy registered with this host's API server, beside the real node
# (hack/testcluster/realnode.sh, which it needs: CoreDNS, the S3 forward). Its configuration is
# written here by hack/testcluster/node.sh's writers, into $STATE/vmnode/NAME, which the guest
# reads at the same path (the host's root is its root); hack/testcluster/vmnode-guest.sh starts
# it inside. Sourced by hack/testcluster.sh. See docs/chaos-mesh.md, "VM nodes".
#
# Network: the VM is on hack/vm.sh's bridge (wwvm0, host 10.78.0.1, VMs 10.78.0.11 on); its pods
# get 10.246.<the VM's last octet>.0/24, routed by the host to the VM; the VM routes the real
# node's pods (10.245.0.0/24) and the other VM nodes' (10.246.0.0/16) through the host, which
# forwards between wwvm0 and the real node's bridge. The API server stays on loopback: socat
# forwards <host on wwvm0>:<its port> to it (component api-forward), nowhere else.

VN_ROOT=$STATE/vmnode
VN_POD_NET=10.246            # VM node NAME's pods: 10.246.<octet of NAME's address>.0/24
VN_CLUSTER_CIDR=10.244.0.0/14  # kwok 10.244.0.0/16, the real node 10.245.0.0/24, VM nodes 10.246.0.0/16
VN_TAINT_KEY=wanwide.io/vm-node
VN_BRIDGE=wwnode0            # in the guest
VN_GUEST_RUN=/run/wwnode     # in the guest: a tmpfs of its own
VN_CNI_NET=wanwide-vmnode
VN_VM=$REPO/hack/vm.sh
# shellcheck disable=SC2034  # read by hack/testcluster.sh (cmd_vm_node_up)
VN_DEFAULT_CPUS=2 VN_DEFAULT_MEM=6144

vn_names() { # the VM nodes with a configuration here
  local d
  for d in "$VN_ROOT"/*/; do [[ -f $d/node.env ]] && basename "$d"; done 2>/dev/null || true
}

# shellcheck disable=SC2034  # N_*: read by hack/testcluster/node.sh's writers
vn_ctx() { # NAME VM-IP HOST-IP: node NAME as hack/testcluster/node.sh's writers see it
  local octet=${2##*.}
  N_NAME=$1 N_IP=$2 N_CONF=$VN_ROOT/$1 N_RUN=$VN_GUEST_RUN N_SOCK=$RN_SOCK N_BRIDGE=$VN_BRIDGE
  N_POD_CIDR=$VN_POD_NET.$octet.0/24 N_GW=$VN_POD_NET.$octet.1 N_CNI_NET=$VN_CNI_NET
  N_CLUSTER_CIDR=$VN_CLUSTER_CIDR N_MASQ_ALL=false
  N_KUBELET_PORT=10250 N_KUBELET_HEALTHZ_PORT=10248 N_PROXY_HEALTHZ_PORT=10256 N_PROXY_METRICS_PORT=10249
  N_TAINTS="$RN_TAINT_KEY $VN_TAINT_KEY" N_SERVER=https://$3:$APISERVER_PORT N_TLS_NAME=kubernetes
}

vn_archive_ref() { # ARCHIVE: the reference a docker-archive tar carries (its manifest's first tag)
  tar -xOf "$1" manifest.json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["RepoTags"][0])'
}

vn_image_list() { # ARCHIVE...: "REF ARCHIVE" lines
  local a
  for a in "$@"; do echo "$(vn_archive_ref "$a") $a"; done
}

vn_exec() { "$VN_VM" exec "$1" --cd / -- "${@:2}"; }

vn_write_config() { # NAME VM-IP HOST-IP: everything the guest reads, in $VN_ROOT/NAME
  vn_ctx "$@"
  mkdir -p "$N_CONF/cni/net.d"
  node_identities
  local c
  for c in kubelet kube-proxy; do node_kubeconfig "$c" | rn_write "$N_CONF/$c.kubeconfig"; chmod 600 "$N_CONF/$c.kubeconfig"; done
  node_cni_conflist | rn_write "$N_CONF/cni/net.d/10-$N_CNI_NET.conflist"
  node_containerd_toml "$(rn_pause_ref)" "up --vm-node $1 (containerd in the VM)" | rn_write "$N_CONF/containerd.toml"
  node_kubelet_yaml | rn_write "$N_CONF/kubelet.yaml"
  node_kubelet_args | rn_write "$N_CONF/kubelet.args"
  node_kube_proxy_yaml | rn_write "$N_CONF/kube-proxy.yaml"
  cp "$RN/resolv.conf" "$N_CONF/resolv.conf"
  vn_image_list "$("$REPO/hack/images.sh" path pause)" "$(rn_busybox_archive)" >"$N_CONF/images"
  {
    local v
    for v in N_NAME N_IP N_CONF N_RUN N_SOCK N_BRIDGE N_POD_CIDR N_GW N_PROXY_HEALTHZ_PORT; do
      printf '%s=%q\n' "$v" "${!v}"
    done
    printf '%s=%q\n' HOST_IP "$3" APISERVER_PORT "$APISERVER_PORT" SERVICE_CIDR "$SERVICE_CIDR" \
      SERVICE_IP "$SERVICE_IP" ROUTED "${RN_POD_CIDR} $VN_POD_NET.0.0/16" \
      KUBELET "$(bin_path kubelet)" KUBE_PROXY "$(bin_path kube-proxy)" SOCK_DIR "$(dirname "$RN_SOCK")"
  } | rn_write "$N_CONF/node.env"
}

# The apiserver on loopback, reachable from the VMs' bridge only: one forward for every VM node.
vn_api_forward() { # HOST-IP
  start_bg api-forward -lf "$STATE/run/api-forward.socat.log" \
    "TCP-LISTEN:$APISERVER_PORT,bind=$1,fork,reuseaddr" "TCP:127.0.0.1:$APISERVER_PORT"
  wait_for "the API server through $1" 30 curl -fsS --cacert "$STATE/pki/ca.crt" --resolve "kubernetes:$APISERVER_PORT:$1" \
    -H "Authorization: Bearer $(token_of admin)" "https://kubernetes:$APISERVER_PORT/readyz"
}

vn_host_network() { # VM-IP POD-CIDR: the host routes the VM's pods and forwards to and from them
  local dev; dev=$(ip -o route get "$1" | sed -n 's/.* dev \([^ ]*\).*/\1/p')
  sysctl -qw "net.ipv4.conf.$dev.forwarding=1"
  ip route replace "$2" via "$1" dev "$dev"
}

vn_up() { # NAME CPUS MEM
  local name=$1 cpus=$2 mem=$3 t0=$SECONDS vmip hostip
  rn_enabled || die "the VM node needs the real node (CoreDNS, the S3 forward): hack/testcluster.sh up --real-node"
  [[ $name != "$RN_NODE" ]] || die "--vm-node $name: that is the real node's name; pick another"
  # 8>&- 9>&-: qemu outlives this command and must not hold hack/testcluster.sh's locks (a later down waited on it)
  "$VN_VM" up "$name" --cpus "$cpus" --mem "$mem" --timeout 1200 8>&- 9>&-
  vmip=$("$VN_VM" addr "$name")
  hostip=$("$VN_VM" addr --host)
  vn_write_config "$name" "$vmip" "$hostip"
  vn_api_forward "$hostip"
  vn_host_network "$vmip" "$N_POD_CIDR"
  log "VM node $name ($vmip, pods $N_POD_CIDR): containerd, images, kubelet, kube-proxy in the guest"
  vn_exec "$name" bash "$HERE/vmnode-guest.sh" up "$N_CONF" || {
    vn_exec "$name" bash "$HERE/vmnode-guest.sh" logs "$N_CONF" >&2 || true
    die "VM node $name: the guest could not start its node (logs above)"; }
  wait_for "node $name registered" 300 kc get node "$name" || {
    vn_exec "$name" bash "$HERE/vmnode-guest.sh" logs "$N_CONF" >&2 || true; return 1; }
  kc wait --for=condition=Ready --timeout=300s "node/$name" >/dev/null || {
    vn_exec "$name" bash "$HERE/vmnode-guest.sh" logs "$N_CONF" >&2 || true; return 1; }
  if [[ -z $(kc get node "$name" -o jsonpath='{.spec.podCIDR}') ]]; then
    kc patch node "$name" --type=merge -p "{\"spec\":{\"podCIDR\":\"$N_POD_CIDR\",\"podCIDRs\":[\"$N_POD_CIDR\"]}}" >/dev/null
  fi
  log "VM node $name up in $((SECONDS - t0)) s (load $(cut -d' ' -f1-3 /proc/loadavg))"
}

vn_import() { # NAME ARCHIVE...: into the VM node's containerd (skipped when there)
  local name=$1 conf=$VN_ROOT/$1; shift
  [[ -f $conf/node.env ]] || die "no VM node $name (hack/testcluster.sh up --vm-node $name)"
  vn_image_list "$@" >"$conf/import.list"
  vn_exec "$name" bash "$HERE/vmnode-guest.sh" import "$conf" "$conf/import.list"
}

vn_down() { # NAME: the node object, the VM, the host's route; the forward with the last VM node
  local name=$1 conf=$VN_ROOT/$1 cidr=""
  [[ -f $conf/node.env ]] && cidr=$(sed -n 's/^N_POD_CIDR=//p' "$conf/node.env")
  if [[ -n ${KUBECTL:-} ]] && pid_of kube-apiserver >/dev/null; then
    kc delete node "$name" --wait=false >/dev/null 2>&1 || true
  fi
  "$VN_VM" down "$name" || true
  if [[ -n $cidr ]]; then ip route del "$cidr" 2>/dev/null || true; fi
  rm -rf "$conf"
  [[ -n $(vn_names) ]] || stop_one api-forward
  log "VM node $name down"
}

vn_forget_gone() { # the Node objects of VM nodes whose VM is gone (a `down` while the API server was down
  # leaves them in etcd; their DaemonSet pods, chaos-daemon's, then answer `kubectl logs ds/...` with NotFound)
  local name taints
  while read -r name taints; do
    [[ -n $name && " $taints " == *" $VN_TAINT_KEY "* && ! -f $VN_ROOT/$name/node.env ]] || continue
    kc delete node "$name" --wait=false >/dev/null 2>&1 || true
    log "VM node $name: its VM is gone, its Node object deleted"
  done < <(kc get nodes -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.taints[*].key}{"\n"}{end}' 2>/dev/null)
}

vn_status() {
  local n
  for n in $(vn_names); do
    printf '%-24s %s\n' "VM node $n" "$(kc get node "$n" --no-headers 2>/dev/null | awk '{print $2}' || echo unknown)"
    vn_exec "$n" bash "$HERE/vmnode-guest.sh" status "$VN_ROOT/$n" 2>&1 | sed 's/^/  /' || true
  done
}
