# shellcheck shell=bash
# What every real kubelet node of the test cluster is made of, whichever machine runs it:
# the real node on this host (hack/testcluster/realnode.sh) and the nodes in VMs
# (hack/testcluster/vmnode.sh). Identities signed by the cluster CA and the configuration
# files of containerd, the CNI bridge, the kubelet and kube-proxy. Sourced by
# hack/testcluster.sh (needs $STATE, $APISERVER_PORT).
#
# The writers read the node they write for from these variables (set by rn_ctx / vn_ctx):
#   N_NAME        node name                    N_IP        node IP (kubelet, kube-proxy bind there)
#   N_CONF        configuration directory, as the node's processes see it (pki/, cni/net.d, …)
#   N_RUN         runtime directory of the node (containerd's root and state, the kubelet's)
#   N_SOCK        containerd socket            N_BRIDGE    the pods' bridge (gateway N_IP… see N_GW)
#   N_POD_CIDR    the node's pod range         N_GW        the pods' gateway on N_BRIDGE
#   N_CNI_NET     CNI network name             N_CLUSTER_CIDR  kube-proxy's clusterCIDR
#   N_MASQ_ALL    kube-proxy masqueradeAll (true|false)
#   N_KUBELET_PORT N_KUBELET_HEALTHZ_PORT N_PROXY_HEALTHZ_PORT N_PROXY_METRICS_PORT
#   N_TAINTS      taint keys registered (value "true", NoSchedule), space-separated
#   N_SERVER      the API server URL the node uses; N_TLS_NAME: the name its certificate is checked for
#                 (empty: the URL's host)

node_cert() { # DIR NAME CN [O] [EXT]: a certificate signed by the cluster CA (client unless EXT given)
  local p=$1 n=$2 cn=$3 o=${4:-} ext=${5:-extendedKeyUsage=clientAuth}
  [[ -f $p/$n.crt && -f $p/$n.key ]] && return 0
  mkdir -p "$p"
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$cn${o:+/O=$o}" \
    -keyout "$p/$n.key" -out "$p/$n.csr" 2>/dev/null
  printf '%s\n' "$ext" >"$p/$n.ext"
  openssl x509 -req -in "$p/$n.csr" -CA "$STATE/pki/ca.crt" -CAkey "$STATE/pki/ca.key" \
    -CAserial "$p/ca.srl" -CAcreateserial -days 3650 -extfile "$p/$n.ext" -out "$p/$n.crt" 2>/dev/null
  chmod 600 "$p/$n.key"
}

node_kubeconfig() { # CERT-NAME: a kubeconfig for the node's identity CERT-NAME (in $N_CONF/pki), on stdout
  cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: wanwide-test
  cluster:
    server: $N_SERVER
    certificate-authority: $STATE/pki/ca.crt${N_TLS_NAME:+
    tls-server-name: $N_TLS_NAME}
users:
- name: $1
  user:
    client-certificate: $N_CONF/pki/$1.crt
    client-key: $N_CONF/pki/$1.key
contexts:
- name: wanwide-test
  context: {cluster: wanwide-test, user: $1}
current-context: wanwide-test
EOF
}

node_identities() { # the node's certificates (kubelet, its serving certificate, kube-proxy)
  node_cert "$N_CONF/pki" kubelet "system:node:$N_NAME" system:nodes   # Node authorizer + system:nodes
  node_cert "$N_CONF/pki" kube-proxy system:kube-proxy                  # bootstrap role system:node-proxier
  node_cert "$N_CONF/pki" kubelet-serving "$N_NAME" "" \
    "subjectAltName=IP:$N_IP,DNS:$N_NAME
extendedKeyUsage=serverAuth"
}

node_cni_conflist() { # the pods' network, on stdout
  # bridge without isGateway: the plugin would switch on ip_forward for the whole
  # host; the bridge already has the gateway address and forwarding (made before).
  cat <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$N_CNI_NET",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$N_BRIDGE",
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$N_POD_CIDR", "gateway": "$N_GW"}]],
        "routes": [{"dst": "0.0.0.0/0", "gw": "$N_GW"}],
        "dataDir": "$N_RUN/cni/ipam"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}

node_containerd_toml() { # SANDBOX-IMAGE HEADER: containerd's configuration, on stdout
  cat <<EOF
# written by hack/testcluster.sh $2
version = 2
root = "$N_RUN/containerd/root"
state = "$N_RUN/run/containerd/state"
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$N_SOCK"
[ttrpc]
  address = ""
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$N_RUN/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$1"
  # this kernel refuses a negative oom_score_adj (the CRI gives sandboxes -998)
  restrict_oom_score_adj = true
  # network namespaces under our state dir, not /var/run/netns
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$N_RUN/run/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$N_CONF/cni/net.d"
    max_conf_num = 1
EOF
}

node_kubelet_yaml() { # the kubelet's configuration, on stdout
  local t taints=""
  for t in $N_TAINTS; do taints+="
- {key: $t, value: \"true\", effect: NoSchedule}"; done
  cat <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $N_IP
port: $N_KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $N_KUBELET_HEALTHZ_PORT
tlsCertFile: $N_CONF/pki/kubelet-serving.crt
tlsPrivateKeyFile: $N_CONF/pki/kubelet-serving.key
# the apiserver calls the kubelet (logs, exec) without a client certificate
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
  x509: {clientCAFile: $STATE/pki/ca.crt}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://$N_SOCK
cgroupDriver: cgroupfs
failCgroupV1: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
oomScoreAdj: 0
failSwapOn: false
makeIPTablesUtilChains: false
clusterDNS: [$RN_DNS_IP]
clusterDomain: cluster.local
resolvConf: $N_CONF/resolv.conf
podLogsDir: $N_RUN/pod-logs
volumePluginDir: $N_RUN/volume-plugins
registerNode: true
registerWithTaints:$taints
# imported images must stay: no image garbage collection, evictions only when really full
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, nodefs.inodesFree: 1%, imagefs.available: 1%}
serializeImagePulls: false
shutdownGracePeriod: 0s
EOF
}

node_kubelet_args() { # the kubelet's command line (after the binary), one word a line
  local labels=$RN_TAINT_KEY=true t
  for t in $N_TAINTS; do [[ $t == "$RN_TAINT_KEY" ]] || labels+=",$t=true"; done
  printf '%s\n' --config="$N_CONF/kubelet.yaml" --kubeconfig="$N_CONF/kubelet.kubeconfig" \
    --root-dir="$N_RUN/kubelet" --cert-dir="$N_RUN/kubelet/pki" \
    --hostname-override="$N_NAME" --node-ip="$N_IP" --node-labels="$labels" --v=1
}

node_kube_proxy_yaml() { # kube-proxy's configuration, on stdout
  cat <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $N_CONF/kube-proxy.kubeconfig}
hostnameOverride: $N_NAME
bindAddress: $N_IP
healthzBindAddress: 127.0.0.1:$N_PROXY_HEALTHZ_PORT
metricsBindAddress: 127.0.0.1:$N_PROXY_METRICS_PORT
mode: iptables
clusterCIDR: $N_CLUSTER_CIDR
nodePortAddresses: ["$N_IP/32"]
oomScoreAdj: 0
# leave the host's conntrack settings and route_localnet alone
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
  if [[ $N_MASQ_ALL == true ]]; then
    echo "# masqueradeAll: pod -> Service -> pod on the same bridge works without br_netfilter"
  else
    echo "# no masqueradeAll: br_netfilter is on, so pods see their peers' own addresses (netem filters on them)"
  fi
  echo "iptables: {masqueradeAll: $N_MASQ_ALL, localhostNodePorts: false}"
}
