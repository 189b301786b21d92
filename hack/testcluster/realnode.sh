# shellcheck shell=bash
# The real node of the loopback test cluster (`hack/testcluster.sh up --real-node`):
# containerd + runc + CNI plugins (Debian packages) run as OUR processes with their
# config, root, state and socket under $STATE/realnode; a kubelet and a kube-proxy
# (v1.34.4, built like the control plane) and CoreDNS as a host process answering
# for the kube-dns Service. Sourced by hack/testcluster.sh (needs its helpers:
# start_bg, stop_one, pid_of, wait_for, kc, token_of, ports, $KUBECTL).
# See docs/testcluster.md, "Real node".

RN=$STATE/realnode
RN_NODE=real-1
RN_POD_CIDR=10.245.0.0/24     # kwok's pods get 10.244.0.0/16 (its --cidr), never this
RN_IP=10.245.0.1              # on our bridge: node IP, pods' gateway, CoreDNS
RN_BRIDGE=wanwide-br0
RN_CNI_NET=wanwide-realnode   # CNI network name (iptables comments carry it)
RN_DNS_IP=10.96.0.10
RN_TAINT_KEY=wanwide.io/real-node
RN_SOCK=$RN/run/containerd/containerd.sock
RN_RUNC_ROOT=$RN/run/runc
RN_COMPONENTS=(containerd coredns s3-forward kubelet kube-proxy)
RN_PACKAGES=(containerd runc containernetworking-plugins iptables iproute2 busybox-static socat)

rn_packages() { # Debian packages, through hack/lib.sh's apt_ensure (in a subshell: its log() stays there)
  (
    LOG_TAG=testcluster
    # shellcheck source=../lib.sh
    source "$REPO/hack/lib.sh"
    apt_ensure "${RN_PACKAGES[@]}"
  )
}

rn_write() { # FILE < content: replaced only when the content differs (kube-proxy exits when
  # its config file changes, even to the same bytes)
  cat >"$1.tmp"
  if [[ -f $1 ]] && cmp -s "$1.tmp" "$1"; then rm -f "$1.tmp"; else mv "$1.tmp" "$1"; fi
}

rn_ctr() { ctr --address "$RN_SOCK" -n k8s.io "$@"; }

rn_enabled() { [[ -f $RN/enabled ]]; }

# ---------------------------------------------------------------- identities
# shellcheck disable=SC2034  # N_*: read by hack/testcluster/node.sh's writers
rn_ctx() { # the real node as hack/testcluster/node.sh's writers see it
  N_NAME=$RN_NODE N_IP=$RN_IP N_CONF=$RN N_RUN=$RN N_SOCK=$RN_SOCK N_BRIDGE=$RN_BRIDGE
  N_POD_CIDR=$RN_POD_CIDR N_GW=$RN_IP N_CNI_NET=$RN_CNI_NET N_CLUSTER_CIDR=$RN_POD_CIDR N_MASQ_ALL=true
  N_KUBELET_PORT=${KUBELET_PORT:-} N_KUBELET_HEALTHZ_PORT=${KUBELET_HEALTHZ_PORT:-}
  N_PROXY_HEALTHZ_PORT=${KUBE_PROXY_HEALTHZ_PORT:-} N_PROXY_METRICS_PORT=${KUBE_PROXY_METRICS_PORT:-}
  N_TAINTS=$RN_TAINT_KEY N_SERVER=https://127.0.0.1:$APISERVER_PORT N_TLS_NAME=""
}

# Client certificates from the cluster CA (the apiserver trusts it with
# --client-ca-file): no token to add, so a running control plane needs no restart.
rn_identities() {
  node_identities
  node_cert "$RN/pki" coredns system:coredns                        # wanwide:coredns below
  local c
  for c in kubelet kube-proxy coredns; do node_kubeconfig "$c" | rn_write "$RN/$c.kubeconfig"; chmod 600 "$RN/$c.kubeconfig"; done
}

rn_ports() {
  if [[ ! -f $RN/ports.env ]]; then
    {
      echo "KUBELET_PORT=$(free_port)"
      echo "KUBELET_HEALTHZ_PORT=$(free_port)"
      echo "KUBE_PROXY_HEALTHZ_PORT=$(free_port)"
      echo "KUBE_PROXY_METRICS_PORT=$(free_port)"
      echo "COREDNS_HEALTH_PORT=$(free_port)"
    } >"$RN/ports.env.tmp"
    mv "$RN/ports.env.tmp" "$RN/ports.env"
  fi
  # shellcheck disable=SC1091
  source "$RN/ports.env"
}

# ---------------------------------------------------------------- host network
# Our own bridge with the node IP, made before anything needs it (CoreDNS binds to
# it, the kubelet serves on it). Forwarding and route_localnet are switched on for
# this bridge only (pods reach Services, and the apiserver behind the `kubernetes`
# Service is on 127.0.0.1); the Service range is routed to it so that the host
# reaches ClusterIPs from the node IP. Everything goes away with the bridge.
# One real node per machine (the bridge, its addresses and the KUBE-* chains are
# host-wide): the bridge's alias names the state dir that owns it.
rn_bridge_owner() { # the state dir that owns the bridge; nothing (and status 0) when there is none
  local info
  info=$(ip -d link show "$RN_BRIDGE" 2>/dev/null) || return 0
  sed -n 's/^ *alias //p' <<<"$info"
}

rn_bridge() {
  if ! ip link show "$RN_BRIDGE" >/dev/null 2>&1; then
    log "creating bridge $RN_BRIDGE ($RN_IP/24)"
    ip link add "$RN_BRIDGE" type bridge
    ip link set "$RN_BRIDGE" alias "$RN"
  fi
  local owner; owner=$(rn_bridge_owner)
  [[ -z $owner || $owner == "$RN" ]] ||
    die "the real node of $owner runs on this machine (one at a time): stop it first (WANWIDE_TESTCLUSTER_DIR=${owner%/realnode} hack/testcluster.sh down --real-node)"
  ip link set "$RN_BRIDGE" alias "$RN"
  ip -4 addr show dev "$RN_BRIDGE" | grep -qF "inet $RN_IP/" ||
    ip addr add "$RN_IP/24" dev "$RN_BRIDGE"
  ip link set "$RN_BRIDGE" up
  sysctl -qw "net.ipv4.conf.$RN_BRIDGE.forwarding=1" "net.ipv4.conf.$RN_BRIDGE.route_localnet=1"
  ip route replace "$SERVICE_CIDR" dev "$RN_BRIDGE" src "$RN_IP"
}

rn_cni_config() {
  mkdir -p "$RN/cni/net.d" "$RN/cni/ipam"
  node_cni_conflist | rn_write "$RN/cni/net.d/10-$RN_CNI_NET.conflist"
}

# ---------------------------------------------------------------- images
# Everything image-related of the real node is here. The pause image comes from
# hack/images.sh (the project's image builds); the small test image (busybox from
# Debian's busybox-static: sh, httpd, nslookup, wget) is made here with
# hack/images/mkimage.py until hack/images.sh has one.
rn_pause_ref() { "$REPO/hack/images.sh" ref pause; }

rn_busybox_archive() { # -> path of the docker-archive (built once per busybox binary)
  local key; key=$(sha256sum /bin/busybox | cut -c1-12)
  local dir=$CACHE/realnode-images out
  out=$dir/busybox-$key.tar
  if [[ ! -s $out ]]; then
    mkdir -p "$dir"
    local args=() a
    while IFS= read -r a; do
      [[ -n $a && $a != busybox ]] && args+=(--symlink "/bin/$a:busybox")
    done < <(/bin/busybox --list)
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$dir/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir/group"
    python3 "$REPO/hack/images/mkimage.py" --out "$out.tmp" --ref "wanwide.local/busybox:$key" \
      --add /bin/busybox:/bin/busybox:0755 "${args[@]}" \
      --add "$dir/passwd:/etc/passwd:0644" --add "$dir/group:/etc/group:0644" \
      --dir /tmp:1777 --dir /root:0700 --dir /www:0755 \
      --env PATH=/bin --cmd '["sh"]' >/dev/null
    mv "$out.tmp" "$out"
  fi
  echo "$out"
}

rn_busybox_ref() { echo "wanwide.local/busybox:$(sha256sum /bin/busybox | cut -c1-12)"; }

rn_images() {
  "$REPO/hack/images.sh" import pause --address "$RN_SOCK"
  local ref present; ref=$(rn_busybox_ref)
  present=$(rn_ctr images ls -q)
  if ! grep -qxF "$ref" <<<"$present"; then
    log "importing $ref"
    rn_ctr images import "$(rn_busybox_archive)" >/dev/null
  fi
}

# ---------------------------------------------------------------- containerd
rn_containerd_config() { # pause-ref -> writes $RN/containerd.toml
  mkdir -p "$RN/containerd/root" "$RN/run/containerd/state" "$RN_RUNC_ROOT"
  node_containerd_toml "$1" "up --real-node (the real node's containerd)" >"$RN/containerd.toml.tmp"
  if [[ -f $RN/containerd.toml ]] && cmp -s "$RN/containerd.toml.tmp" "$RN/containerd.toml"; then
    rm -f "$RN/containerd.toml.tmp"
    return 0
  fi
  mv "$RN/containerd.toml.tmp" "$RN/containerd.toml"
  # a running containerd reads its config only at start (its shims keep running)
  if pid_of containerd >/dev/null; then log "containerd config changed"; stop_one containerd; fi
}

rn_start_containerd() {
  if pid_of containerd >/dev/null; then return 0; fi
  log "starting containerd ($RN_SOCK)"
  mkdir -p "$(dirname "$RN_SOCK")"
  setsid /usr/bin/containerd --config "$RN/containerd.toml" \
    >>"$STATE/run/containerd.log" 2>&1 </dev/null 8>&- 9>&- &
  echo $! >"$STATE/run/containerd.pid"
  wait_for "containerd" 60 rn_ctr version || { tail -20 "$STATE/run/containerd.log" >&2; return 1; }
}

# ---------------------------------------------------------------- CoreDNS
# A host process bound to the node IP; the kube-dns Service (10.96.0.10) has no
# selector and one EndpointSlice pointing at it. kube-proxy does the rest.
rn_coredns() {
  kc apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "wanwide:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "wanwide:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "wanwide:coredns"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:coredns"}
---
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {k8s-app: kube-dns, kubernetes.io/name: CoreDNS, $RN_TAINT_KEY: "true"}
spec:
  clusterIP: $RN_DNS_IP
  ports:
  - {name: dns, port: 53, protocol: UDP, targetPort: 53}
  - {name: dns-tcp, port: 53, protocol: TCP, targetPort: 53}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kube-dns-host
  namespace: kube-system
  labels:
    kubernetes.io/service-name: kube-dns
    endpointslice.kubernetes.io/managed-by: wanwide-testcluster
addressType: IPv4
ports:
- {name: dns, port: 53, protocol: UDP}
- {name: dns-tcp, port: 53, protocol: TCP}
endpoints:
- addresses: ["$RN_IP"]
  conditions: {ready: true}
  nodeName: $RN_NODE
EOF
  rn_write "$RN/Corefile" <<EOF
.:53 {
    bind $RN_IP
    errors
    health 127.0.0.1:$COREDNS_HEALTH_PORT
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $RN/coredns.kubeconfig wanwide-test
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    forward . /etc/resolv.conf
    cache 30
}
EOF
  start_bg coredns -conf "$RN/Corefile"
  wait_for "CoreDNS health" 60 curl -fsS "http://127.0.0.1:$COREDNS_HEALTH_PORT/health" || {
    tail -20 "$STATE/run/coredns.log" >&2; return 1; }
}

# ---------------------------------------------------------------- S3 for pods
# The S3 server listens on loopback only; pods reach it through the bridge address
# ($RN_IP, local to the host as well), forwarded by socat to the same port on loopback.
rn_s3_endpoint() { echo "http://$RN_IP:${S3_PORT:-$(sed -n 's/^S3_PORT=//p' "$STATE/ports.env")}"; }
rn_s3_forward() {
  # -lf: its log under the state dir, which also marks the process as this cluster's
  start_bg s3-forward -lf "$STATE/run/s3-forward.socat.log" "TCP-LISTEN:$S3_PORT,bind=$RN_IP,fork,reuseaddr" "TCP:127.0.0.1:$S3_PORT"
  wait_for "S3 through $RN_IP" 30 curl -fsS "$(rn_s3_endpoint)/health"
}

# ---------------------------------------------------------------- kubelet
rn_kubelet() {
  mkdir -p "$RN/kubelet" "$RN/pod-logs" "$RN/volume-plugins"
  # pods' resolv.conf: the cluster DNS plus the host's nameservers (no host search list)
  { grep '^nameserver' /etc/resolv.conf 2>/dev/null || true; } | rn_write "$RN/resolv.conf"
  node_kubelet_yaml | rn_write "$RN/kubelet.yaml"
  local args
  mapfile -t args < <(node_kubelet_args)
  start_bg kubelet "${args[@]}"
  log "waiting for node $RN_NODE to be Ready"
  wait_for "node $RN_NODE registered" 120 kc get node "$RN_NODE" || {
    tail -30 "$STATE/run/kubelet.log" >&2; return 1; }
  kc wait --for=condition=Ready --timeout=120s "node/$RN_NODE" >/dev/null || {
    tail -30 "$STATE/run/kubelet.log" >&2; return 1; }
  # the pod range (nodeipam is off); set once, for the record (kwok ignores this node)
  if [[ -z $(kc get node "$RN_NODE" -o jsonpath='{.spec.podCIDR}') ]]; then
    kc patch node "$RN_NODE" --type=merge \
      -p "{\"spec\":{\"podCIDR\":\"$RN_POD_CIDR\",\"podCIDRs\":[\"$RN_POD_CIDR\"]}}" >/dev/null
  fi
}

# ---------------------------------------------------------------- kube-proxy
rn_kube_proxy() {
  node_kube_proxy_yaml | rn_write "$RN/kube-proxy.yaml"
  start_bg kube-proxy --config="$RN/kube-proxy.yaml"
  wait_for "kube-proxy healthz" 60 curl -fsS "http://127.0.0.1:$KUBE_PROXY_HEALTHZ_PORT/healthz" || {
    tail -20 "$STATE/run/kube-proxy.log" >&2; return 1; }
  wait_for "kube-proxy rules for kube-dns" 60 rn_service_rules_present
}

# The `kubernetes` Service has no endpoints here: the apiserver advertises
# 127.0.0.1, and Endpoints/EndpointSlices refuse loopback addresses (its reconciler
# fails). Pods' in-cluster clients dial 10.96.0.1:443, so one DNAT of our own sends
# them to the apiserver on 127.0.0.1 (route_localnet is on for our bridge only).
RN_APISERVER_CHAIN=WANWIDE-RN-APISERVER
rn_apiserver_dnat() {
  iptables -t nat -N "$RN_APISERVER_CHAIN" 2>/dev/null || iptables -t nat -F "$RN_APISERVER_CHAIN"
  iptables -t nat -A "$RN_APISERVER_CHAIN" -s "$RN_POD_CIDR" -d "$SERVICE_IP/32" -p tcp --dport 443 \
    -m comment --comment "wanwide real node: pods to kube-apiserver on 127.0.0.1" \
    -j DNAT --to-destination "127.0.0.1:$APISERVER_PORT"
  iptables -t nat -C PREROUTING -j "$RN_APISERVER_CHAIN" 2>/dev/null ||
    iptables -t nat -I PREROUTING -j "$RN_APISERVER_CHAIN"
}

rn_service_rules_present() { iptables-save -t nat 2>/dev/null | grep -- "-d $RN_DNS_IP/32 .*KUBE-SVC" >/dev/null; }

# The apiserver reaches a kubelet (logs, exec) at the node's first address of the
# preferred types: by default its Hostname, "real-1", which no resolver knows here.
# testcluster.sh starts it with InternalIP first; one started before that changed
# is restarted once.
rn_apiserver_flags() {
  local p; p=$(pid_of kube-apiserver) || return 0
  tr '\0' ' ' <"/proc/$p/cmdline" | grep -qF -- '--kubelet-preferred-address-types=InternalIP' && return 0
  log "kube-apiserver runs without --kubelet-preferred-address-types=InternalIP…: restarting it"
  stop_one kube-apiserver
}

# ---------------------------------------------------------------- up
rn_up() {
  local t0=$SECONDS
  ((${#RN_SOCK} < 100)) || die "state dir too deep for a unix socket: $RN_SOCK"
  build_real_node
  rn_packages
  mkdir -p "$RN"
  rn_ports
  rn_ctx
  rn_identities
  rn_bridge
  rn_cni_config
  rn_containerd_config "$(rn_pause_ref)"
  rn_start_containerd
  rn_images
  rn_coredns
  rn_s3_forward
  rn_kubelet
  rn_kube_proxy
  rn_apiserver_dnat
  touch "$RN/enabled"
  log "real node $RN_NODE up in $((SECONDS - t0)) s (containerd $RN_SOCK)"
}

# ---------------------------------------------------------------- down
rn_mounts() { # mount points under $RN, deepest first
  awk -v p="$RN/" 'index($5, p) == 1 {print $5}' /proc/self/mountinfo | sort -r
}

rn_unmount() {
  local m
  while IFS= read -r m; do
    [[ -n $m ]] || continue
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "cannot unmount $m"
  done < <(rn_mounts)
}

rn_kill_containers() { # every task of our containerd, while it still runs
  if ! pid_of containerd >/dev/null || [[ ! -S $RN_SOCK ]]; then return 0; fi
  local id
  for id in $(rn_ctr tasks ls -q 2>/dev/null); do
    rn_ctr tasks rm -f "$id" >/dev/null 2>&1 || true
  done
}

rn_shim_pids() { # shims serving our containerd (its socket is on their command line)
  local d exe
  for d in /proc/[0-9]*; do
    exe=$(readlink "$d/exe" 2>/dev/null) || continue
    [[ ${exe##*/} == containerd-shim* ]] || continue
    tr '\0' ' ' <"$d/cmdline" 2>/dev/null | grep -qF -- "-address $RN_SOCK " && echo "${d#/proc/}"
  done
  return 0
}

rn_sandbox_ids() { # every pod sandbox our containerd knows or ran (ids are 64 hex digits)
  local d
  for d in "$RN"/containerd/root/io.containerd.grpc.v1.cri/sandboxes/* \
           "$RN"/run/containerd/state/io.containerd.runtime.v2.task/k8s.io/*; do
    d=${d##*/}
    # an unmatched glob (no sandboxes) is no error: `if`, not `&&`, so the loop ends with 0
    if [[ $d =~ ^[0-9a-f]{64}$ ]]; then echo "$d"; fi
  done | sort -u
}

rn_kill_leftovers() { # after a crash: shims, then what runc still knows of
  local p id f
  for p in $(rn_shim_pids); do log "killing leftover shim $p"; kill -KILL "$p" 2>/dev/null || true; done
  # their sockets (one per shim, outside our state dir: /run/containerd/s/<hash>)
  for f in "$RN"/run/containerd/state/io.containerd.runtime.v2.task/*/*/address; do
    [[ -f $f ]] || continue
    p=$(sed 's#^unix://##' "$f")
    [[ $p == /run/containerd/s/* && -S $p ]] && rm -f "$p"
  done
  if [[ -d $RN_RUNC_ROOT/k8s.io ]]; then
    for id in $(runc --root "$RN_RUNC_ROOT/k8s.io" list -q 2>/dev/null); do
      log "removing leftover container $id"
      runc --root "$RN_RUNC_ROOT/k8s.io" delete --force "$id" >/dev/null 2>&1 || true
    done
  fi
}

rn_ipt_delete() { # iptables-binary table RULE (an "-A CHAIN …" line as iptables-save prints it)
  local args=()
  # iptables-save quotes comments with backslash escapes: split them as a shell would
  mapfile -d '' -t args < <(python3 -c 'import shlex, sys; sys.stdout.write("\0".join(shlex.split(sys.argv[1])))' "${3#-A }")
  "$1" -t "$2" -D "${args[@]}" 2>/dev/null || true
}

rn_iptables_sweep() { # iptables-save-binary iptables-binary: KUBE-*, WANWIDE-RN-* and our CNI chains
  local save=$1 ipt=$2 t chains c rule ours
  command -v "$save" >/dev/null || return 0
  # rules of our CNI network carry its name in a comment: name: \"wanwide-realnode\"
  ours="$RN_CNI_NET\\\\?\""
  for t in nat filter mangle; do
    # naming a legacy table that does not exist would create it
    if [[ $save == *legacy* ]] && ! grep -qx "$t" /proc/net/ip_tables_names 2>/dev/null; then continue; fi
    local dump; dump=$("$save" -t "$t" 2>/dev/null) || continue
    # our chains: KUBE-*, WANWIDE-RN-*; the CNI-* chains our network's rules jump to or live in
    # (portmap's shared CNI-HOSTPORT-* only once empty, below)
    chains=$(sed -n 's/^:\(KUBE-[^ ]*\|WANWIDE-RN-[^ ]*\) .*/\1/p' <<<"$dump")
    chains+=" $(grep -E -- "$ours" <<<"$dump" | sed -n 's/.* -j \(CNI-[^ ]*\).*/\1/p; s/^-A \(CNI-[^ ]*\) .*/\1/p' |
                grep -v '^CNI-HOSTPORT-' | sort -u || true)"
    [[ -n ${chains//[[:space:]]/} ]] || continue
    local alt; alt=$(tr ' ' '\n' <<<"$chains" | sed '/^$/d' | paste -sd'|')
    # rules anywhere that jump to one of them or carry our network's name
    while IFS= read -r rule; do
      [[ -n $rule ]] && rn_ipt_delete "$ipt" "$t" "$rule"
    done < <(grep -E -- "^-A .*(-j ($alt)( |$)|$ours)" <<<"$dump" || true)
    for c in $chains; do "$ipt" -t "$t" -F "$c" 2>/dev/null || true; done
    for c in $chains; do "$ipt" -t "$t" -X "$c" 2>/dev/null || true; done
    # portmap's shared chains (SETMARK, MASQ serve the DNAT entries): once no DNAT
    # entry of any CNI network is left (another CNI user's keep them all)
    dump=$("$save" -t "$t" 2>/dev/null) || continue
    grep -q -- '^-A CNI-HOSTPORT-DNAT ' <<<"$dump" && continue
    while IFS= read -r c; do
      [[ -n $c ]] || continue
      while IFS= read -r rule; do
        [[ -n $rule ]] && rn_ipt_delete "$ipt" "$t" "$rule"
      done < <(grep -E -- "^-A .* -j $c( |$)" <<<"$dump" || true)
      "$ipt" -t "$t" -F "$c" 2>/dev/null || true
      "$ipt" -t "$t" -X "$c" 2>/dev/null || true
    done < <(sed -n 's/^:\(CNI-HOSTPORT-[^ ]*\) .*/\1/p' <<<"$dump")
  done
}

rn_network_down() {
  local owner; owner=$(rn_bridge_owner)
  if [[ -n $owner && $owner != "$RN" ]]; then
    log "the host network of the real node belongs to $owner: left alone"; return 0
  fi
  local kp; kp=$(bin_path kube-proxy)
  if [[ -x $kp ]]; then "$kp" --cleanup >>"$STATE/run/kube-proxy-cleanup.log" 2>&1 || true; fi
  rn_iptables_sweep iptables-nft-save iptables-nft
  rn_iptables_sweep iptables-legacy-save iptables-legacy
  local l
  for l in $(ip -o link show master "$RN_BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    ip link del "$l" 2>/dev/null || true
  done
  if ip link show "$RN_BRIDGE" >/dev/null 2>&1; then
    log "deleting bridge $RN_BRIDGE"
    ip link del "$RN_BRIDGE"
  fi
}

rn_down() {
  [[ -d $RN ]] || return 0
  local c
  for c in kubelet kube-proxy; do stop_one "$c" & done
  wait
  rn_kill_containers
  stop_one containerd
  local sandboxes; sandboxes=$(rn_sandbox_ids)
  rn_kill_leftovers
  stop_one coredns
  stop_one s3-forward
  rn_unmount
  if [[ -n $(rn_mounts) ]]; then
    log "WARNING: still mounted under $RN (kept its runtime state):"; rn_mounts >&2
  else
    # what a reboot clears: runtime state, network namespaces, IP reservations
    rm -rf "$RN/run" "$RN/cni/ipam"
  fi
  rn_network_down
  # libcni's result cache (eth0 on our network, lo on containerd's "cni-loopback")
  # and the kubelet's log links live in fixed host paths
  local id
  for id in $sandboxes; do rm -f /var/lib/cni/results/*-"$id"-* 2>/dev/null || true; done
  rm -f /var/lib/cni/results/"$RN_CNI_NET"-* 2>/dev/null || true
  find /var/log/containers -maxdepth 1 -type l -lname "$RN/*" -delete 2>/dev/null || true
  # the kubelet's device-plugin socket has a fixed path too (not under --root-dir)
  rm -f /var/lib/kubelet/device-plugins/kubelet.sock
  rmdir /var/lib/kubelet/device-plugins /var/lib/kubelet 2>/dev/null || true
  rm -f "$RN/enabled"
  log "real node down"
}

# ---------------------------------------------------------------- status
rn_status() { # prints lines; returns 3 if something of an enabled real node is stopped
  local c p rc=0
  for c in "${RN_COMPONENTS[@]}"; do
    if p=$(pid_of "$c"); then
      printf '%-24s running  pid %-8s rss %s MiB\n' "$c" "$p" "$(($(awk '/VmRSS/ {print $2}' "/proc/$p/status") / 1024))"
    else
      printf '%-24s stopped\n' "$c"; rc=3
    fi
  done
  printf '%-24s %s shim(s), bridge %s: %s\n' "  containerd" "$(rn_shim_pids | wc -l)" "$RN_BRIDGE" \
    "$(ip -br link show "$RN_BRIDGE" 2>/dev/null | awk '{print $2}' || echo absent)"
  return "$rc"
}
