#!/usr/bin/env bash
# A real Kubernetes control plane on loopback for tests: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler (v1.34.4) with kwok simulating nodes,
# pods and the controllers that cannot run here, plus an S3 server (versitygw).
# Everything listens on 127.0.0.1. See docs/testcluster.md.
#
#   hack/testcluster.sh build [--real-node]
#                                  build and cache the binaries (~20 min cold);
#                                  --real-node: kubelet, kube-proxy, CoreDNS only
#   hack/testcluster.sh up [--real-node]
#                                  start (idempotent; seconds when warm); --real-node
#                                  adds a real node (containerd, kubelet, kube-proxy)
#   hack/testcluster.sh up --vm-node NAME [--cpus N] [--mem MiB]
#                                  the real node and a kubelet node NAME in a VM of hack/vm.sh
#                                  (Debian's kernel: netem), 2 vCPUs and 6144 MiB by default
#   hack/testcluster.sh down [--real-node | --vm-node NAME|--all]
#                                  stop what `up` started (--real-node: only the real node and
#                                  the VM nodes; --vm-node: only that VM node, or all of them)
#   hack/testcluster.sh vm-nodes   the VM nodes, one a line
#   hack/testcluster.sh vm-import NAME|--all ARCHIVE...
#                                  docker-archive tars into the VM node(s)' containerd
#   hack/testcluster.sh env        print export lines (KUBECONFIG, S3 vars)
#   hack/testcluster.sh status     show what runs
#   hack/testcluster.sh nodes N    make sure simulated nodes kwok-r1..kwok-rN exist
#   hack/testcluster.sh chaos-standins on|off
#                                  kwok's Chaos Mesh stand-ins (off: the real Chaos Mesh runs;
#                                  hack/chaos-mesh.sh install/uninstall switch them; down: on)
#   hack/testcluster.sh restart-apiserver
#                                  stop kube-apiserver and start it again (fault tests)
#   hack/testcluster.sh s3 stop|start
#                                  stop or start the S3 server (fault tests; same port)
#
# Environment: WANWIDE_CACHE (default ~/.cache/wanwide), WANWIDE_TEST_NODES
# (default 3), WANWIDE_TESTCLUSTER_DIR (default <repo>/.testcluster),
# WANWIDE_KWOK_POD_DELAY_MS (default 200/800: each simulated pod step waits 200 ms
# plus up to 800 ms; kwok's own general stages wait 1000/5000, which bench/scale.py
# keeps for its figures; a pod's kwok delay annotations still win).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERE=$REPO/hack/testcluster
STATE=${WANWIDE_TESTCLUSTER_DIR:-$REPO/.testcluster}
CACHE=${WANWIDE_CACHE:-$HOME/.cache/wanwide}
export PATH="$PATH:/usr/local/go/bin"
# shellcheck source=testcluster/build.sh
source "$HERE/build.sh"

SERVICE_CIDR=10.96.0.0/16
SERVICE_IP=10.96.0.1
POD_CIDR=10.244.0.1/16
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok versitygw)
# shellcheck source=testcluster/node.sh
source "$HERE/node.sh"
# shellcheck source=testcluster/realnode.sh
source "$HERE/realnode.sh"
# shellcheck source=testcluster/vmnode.sh
source "$HERE/vmnode.sh"

die() { log "ERROR: $*"; exit 1; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

is_ours() { # component pid: runs a cached <component>-<version> on this state dir
  local exe; exe=$(readlink "/proc/$2/exe" 2>/dev/null) || return 1
  case $1 in
    containerd) [[ $exe == /usr/bin/containerd ]] || return 1 ;;  # Debian's, not its shims
    s3-forward|api-forward) # both are socat: told apart by the log each names (run/<component>.socat.log)
      [[ $exe == /usr/bin/socat ]] || return 1
      tr '\0' ' ' <"/proc/$2/cmdline" 2>/dev/null | grep -qF -- "$STATE/run/$1.socat.log"; return ;;
    *) [[ ${exe##*/} == "$1"-* ]] || return 1 ;;
  esac
  tr '\0' ' ' <"/proc/$2/cmdline" 2>/dev/null | grep -qF -- "$STATE/"
}

pid_of() { # component -> pid if alive
  local f="$STATE/run/$1.pid" p=""
  [[ -f $f ]] && p=$(<"$f")
  if [[ -n $p ]] && is_ours "$1" "$p"; then echo "$p"; return 0; fi
  # pid file lost (e.g. two runs raced): adopt the running process
  local d
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    if is_ours "$1" "$p"; then mkdir -p "$STATE/run"; echo "$p" >"$f"; echo "$p"; return 0; fi
  done
  return 1
}

start_bg() { # component args... (binary from cache, log in run/<c>.log)
  local c=$1; shift
  local b; b=$(bin_path "$c")
  if pid_of "$c" >/dev/null; then return 0; fi
  log "starting $c"
  # setsid: own session, so `down` can stop it without touching anything else
  # close the lock fds (8, 9): a daemon holding them would keep the locks forever
  setsid "$b" "$@" >>"$STATE/run/$c.log" 2>&1 </dev/null 8>&- 9>&- &
  echo $! >"$STATE/run/$c.pid"
}

wait_for() { # description timeout-seconds command...
  local what=$1 t=$2; shift 2
  local end=$((SECONDS + t))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= end)); then log "timed out after ${t}s waiting for $what"; return 1; fi
    sleep 0.5
  done
}

# ---------------------------------------------------------------- state setup
ensure_ports() {
  if [[ ! -f $STATE/ports.env ]]; then
    {
      echo "ETCD_PORT=$(free_port)"
      echo "ETCD_PEER_PORT=$(free_port)"
      echo "APISERVER_PORT=$(free_port)"
      echo "KCM_PORT=$(free_port)"
      echo "SCHEDULER_PORT=$(free_port)"
      echo "S3_PORT=$(free_port)"
    } >"$STATE/ports.env"
  fi
  # shellcheck disable=SC1091
  source "$STATE/ports.env"
}

ensure_pki() {
  local p=$STATE/pki
  mkdir -p "$p"
  [[ -f $p/ca.crt && -f $p/apiserver.crt && -f $p/sa.pub && -f $STATE/tokens.csv ]] && return 0
  log "creating CA, serving certificate, service-account keys and tokens"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=wanwide-testcluster-ca" \
    -keyout "$p/ca.key" -out "$p/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$p/apiserver.key" -out "$p/apiserver.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,IP:%s,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n' \
    "$SERVICE_IP" >"$p/apiserver.ext"
  openssl x509 -req -in "$p/apiserver.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial \
    -days 3650 -extfile "$p/apiserver.ext" -out "$p/apiserver.crt" 2>/dev/null
  openssl genrsa -out "$p/sa.key" 2048 2>/dev/null
  openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
  t() { openssl rand -hex 16; }
  # token,user,uid,"group1,group2"
  {
    echo "$(t),admin,admin,\"system:masters\""
    echo "$(t),system:kube-controller-manager,system:kube-controller-manager,"
    echo "$(t),system:kube-scheduler,system:kube-scheduler,"
    echo "$(t),system:kwok,system:kwok,\"system:masters\""
    # an unprivileged user for RBAC tests (admin may also impersonate anyone)
    echo "$(t),wanwide-tester,wanwide-tester,\"wanwide:testers\""
  } >"$STATE/tokens.csv"
  chmod 600 "$STATE/tokens.csv" "$p"/*.key
}

token_of() { awk -F, -v u="$1" '$2 == u {print $1}' "$STATE/tokens.csv"; }

write_kubeconfig() { # file user
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: wanwide-test
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority: $STATE/pki/ca.crt
users:
- name: $2
  user:
    token: $(token_of "$2")
contexts:
- name: wanwide-test
  context: {cluster: wanwide-test, user: $2}
current-context: wanwide-test
EOF
  chmod 600 "$1"
}

ensure_kubeconfigs() {
  write_kubeconfig "$STATE/kubeconfig" admin
  write_kubeconfig "$STATE/kubeconfig-tester" wanwide-tester
  write_kubeconfig "$STATE/run/kcm.kubeconfig" system:kube-controller-manager
  write_kubeconfig "$STATE/run/scheduler.kubeconfig" system:kube-scheduler
  write_kubeconfig "$STATE/run/kwok.kubeconfig" system:kwok
}

ensure_s3_env() {
  if [[ ! -f $STATE/s3.env ]]; then
    {
      echo "AWS_ACCESS_KEY_ID=wanwide$(openssl rand -hex 6)"
      echo "AWS_SECRET_ACCESS_KEY=$(openssl rand -hex 20)"
    } >"$STATE/s3.env.tmp"
    mv "$STATE/s3.env.tmp" "$STATE/s3.env"
  fi
  # endpoint follows the (stable) port
  sed -i '/^S3_ENDPOINT=/d; /^AWS_DEFAULT_REGION=/d' "$STATE/s3.env"
  echo "S3_ENDPOINT=http://127.0.0.1:$S3_PORT" >>"$STATE/s3.env"
  echo "AWS_DEFAULT_REGION=us-east-1" >>"$STATE/s3.env"
  chmod 600 "$STATE/s3.env"
}

kc() { "$KUBECTL" --kubeconfig "$STATE/kubeconfig" "$@"; }

# ---------------------------------------------------------------- components
start_etcd() {
  mkdir -p "$STATE/etcd"
  start_bg etcd --name wanwide-test --data-dir "$STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "wanwide-test=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync --quota-backend-bytes=4294967296 --log-level=warn
  wait_for "etcd" 60 curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
}

apiserver_ready() {
  curl -fsS --cacert "$STATE/pki/ca.crt" -H "Authorization: Bearer $(token_of admin)" \
    "https://127.0.0.1:$APISERVER_PORT/readyz"
}

# an apiserver started by an older version of this script (no audit log): restart it
restart_outdated_apiserver() {
  local p; p=$(pid_of kube-apiserver) || return 0
  tr '\0' ' ' <"/proc/$p/cmdline" | grep -qF -- '--audit-policy-file=' && return 0
  log "kube-apiserver runs without an audit log: restarting it"
  stop_one kube-apiserver
}

start_apiserver() {
  restart_outdated_apiserver
  mkdir -p "$STATE/audit"
  # when each API server started and became ready: until its RBAC cache has synced it refuses
  # requests it will allow (kubernetes/kubernetes#121635); tests/cluster/test_rbac.py reads this
  local fresh=0
  pid_of kube-apiserver >/dev/null || fresh=1
  ((fresh)) && echo "start $(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)" >>"$STATE/apiserver-starts"
  start_bg kube-apiserver \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
    --tls-cert-file="$STATE/pki/apiserver.crt" --tls-private-key-file="$STATE/pki/apiserver.key" \
    --client-ca-file="$STATE/pki/ca.crt" \
    --token-auth-file="$STATE/tokens.csv" \
    --authorization-mode=Node,RBAC \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$STATE/pki/sa.pub" \
    --service-account-signing-key-file="$STATE/pki/sa.key" \
    --allow-privileged=true --profiling=false \
    --kubelet-preferred-address-types=InternalIP,Hostname,InternalDNS,ExternalDNS,ExternalIP \
    --enable-priority-and-fairness=false \
    --audit-policy-file="$HERE/audit-policy.yaml" --audit-log-path="$STATE/audit/audit.log" \
    --audit-log-maxsize=100 --audit-log-maxbackup=3 \
    --event-ttl=30m --v=0
  log "waiting for kube-apiserver /readyz"
  wait_for "kube-apiserver /readyz" 120 apiserver_ready || {
    tail -20 "$STATE/run/kube-apiserver.log" >&2; return 1; }
  ((fresh)) && echo "ready $(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)" >>"$STATE/apiserver-starts"
  return 0
}

start_controller_manager() {
  local kcfg=$STATE/run/kcm.kubeconfig
  start_bg kube-controller-manager \
    --kubeconfig="$kcfg" --authentication-kubeconfig="$kcfg" --authorization-kubeconfig="$kcfg" \
    --bind-address=127.0.0.1 --secure-port="$KCM_PORT" \
    --controllers='*,-nodeipam' --use-service-account-credentials \
    --root-ca-file="$STATE/pki/ca.crt" \
    --service-account-private-key-file="$STATE/pki/sa.key" \
    --cluster-signing-cert-file="$STATE/pki/ca.crt" --cluster-signing-key-file="$STATE/pki/ca.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --leader-elect=false --profiling=false --v=0
}

start_scheduler() {
  local kcfg=$STATE/run/scheduler.kubeconfig
  start_bg kube-scheduler \
    --kubeconfig="$kcfg" --authentication-kubeconfig="$kcfg" --authorization-kubeconfig="$kcfg" \
    --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT" \
    --leader-elect=false --profiling=false --v=0
}

module_dir() { # module@version -> dir in the module cache (downloads if absent)
  local d
  d=$(cd "$CACHE/build" && GOFLAGS="" GOTOOLCHAIN=local "$GO" mod download -json "$1" |
      sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [[ -d $d ]] || die "cannot find $1 in the Go module cache"
  echo "$d"
}

write_kwok_config() {
  local k; k=$(module_dir "sigs.k8s.io/kwok@$KWOK_VERSION")
  local out=$STATE/run/kwok.yaml f rel first=0
  # kwok plays 4 pod stages at a time by default: with hundreds of regions (thousands of pods, each
  # through ~5 stages) the simulated kubelets, not the cluster, were the bottleneck (bench/scale.py)
  cat >"$out.tmp" <<'EOF2'
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: 32
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 16
EOF2
  # The Stage objects shipped in the kwok module, then ours. Each document is
  # separated by '---' (concatenating without separators silently merges them).
  # The general pod stages' delays are rewritten to WANWIDE_KWOK_POD_DELAY_MS: with
  # kwok's 1-6 s per step a keystone chart took ~2 min to come up, most of the
  # cluster tier's time, spent waiting on the simulation rather than the operator.
  local delay=${WANWIDE_KWOK_POD_DELAY_MS:-200/800}
  [[ $delay =~ ^([0-9]+)/([0-9]+)$ ]] ||
    die "WANWIDE_KWOK_POD_DELAY_MS=$delay: give base/jitter in milliseconds, e.g. 200/800 (kwok's own: 1000/5000)"
  local base=${BASH_REMATCH[1]} jitter=${BASH_REMATCH[2]}
  for f in "$k/kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml" \
           "$k/kustomize/stage/node/fast/node-initialize.yaml" \
           "$k"/kustomize/stage/pod/general/pod-*.yaml \
           "$HERE"/stages/*.yaml; do
    # the real Chaos Mesh runs (hack/chaos-mesh.sh install): its stand-ins step aside, or both would write the
    # objects' status (no status subresource: each write a new generation, which Chaos Mesh injects again)
    [[ $f == */stages/chaos-mesh.yaml && -f $STATE/chaos-mesh-real ]] && continue
    {
      ((first)) || echo "---"
      rel=${f#"$k/"}
      echo "# from ${rel#"$REPO/"}"  # no absolute path: the same file from every checkout (no kwok restart)
      case $f in
        */stage/pod/general/*)
          sed -e "s/^    durationMilliseconds: 1000$/    durationMilliseconds: $base/" \
              -e "s/^    jitterDurationMilliseconds: 5000$/    jitterDurationMilliseconds: $jitter/" "$f" ;;
        *) cat "$f" ;;
      esac
      echo
    } >>"$out.tmp"
    first=0
  done
  grep -q "^    jitterDurationMilliseconds: $jitter$" "$out.tmp" ||
    die "kwok $KWOK_VERSION's general pod stages no longer wait 1000/5000 ms: update write_kwok_config"
  mv "$out.tmp" "$out"
}

start_kwok() {
  local old=""
  [[ -f $STATE/run/kwok.yaml ]] && old=$(<"$STATE/run/kwok.yaml")
  write_kwok_config
  if [[ $old != "$(<"$STATE/run/kwok.yaml")" ]] && pid_of kwok >/dev/null; then
    log "kwok's configuration changed: restarting it"
    stop_one kwok
  fi
  start_bg kwok --kubeconfig="$STATE/run/kwok.kubeconfig" \
    --config="$STATE/run/kwok.yaml" \
    --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-lease-duration-seconds=40 \
    --cidr="$POD_CIDR" --node-ip=127.0.0.1
}

start_versitygw() {
  mkdir -p "$STATE/s3" "$STATE/meta-s3"
  # shellcheck disable=SC1091
  source "$STATE/s3.env"
  ROOT_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID ROOT_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY \
    start_bg versitygw --port "127.0.0.1:$S3_PORT" --region us-east-1 --health /health --quiet \
    posix --sidecar "$STATE/meta-s3" "$STATE/s3"
}

install_crds() {
  local files=() f
  files+=("$("$REPO/hack/upstream-crds.sh" chaos-mesh)")
  while IFS= read -r f; do files+=("$f"); done < <("$REPO/hack/upstream-crds.sh" prometheus-operator)
  files+=("$HERE"/crds/*.yaml)
  local sum; sum=$(cat "${files[@]}" | sha256sum | cut -d' ' -f1)
  if [[ -f $STATE/crds.sha256 && $(<"$STATE/crds.sha256") == "$sum" ]] &&
     kc get crd networkchaos.chaos-mesh.org servicemonitors.monitoring.coreos.com \
       mariadbs.k8s.mariadb.com crdbclusters.crdb.cockroachlabs.com >/dev/null 2>&1; then
    log "CRDs already installed (unchanged)"; return 0
  fi
  log "installing CRDs (Chaos Mesh, prometheus-operator, stand-ins)"
  local args=()
  for f in "${files[@]}"; do args+=(-f "$f"); done
  kc apply --server-side --force-conflicts --field-manager=wanwide-testcluster "${args[@]}" >/dev/null
  crds_established 60
  echo "$sum" >"$STATE/crds.sha256"
}

crds_established() { # every CRD Established within $1 s. Not `kubectl wait --for condition`: on a CRD whose
  # status the API server has not written yet it fails at once (".status.conditions accessor error: <nil> is
  # of the type <nil>"), as CI saw on a loaded machine; a CRD without conditions is one still to come
  local end=$((SECONDS + $1)) pending
  while :; do
    pending=$(kc get crd -o jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Established")].status}{"\n"}{end}' |
      awk '$2 != "True" {print $1}') || pending="(the API server did not answer)"
    [[ -z $pending ]] && return 0
    ((SECONDS < end)) || die "CRDs not Established after $1 s: $(tr '\n' ' ' <<<"$pending")"
    sleep 1
  done
}

install_standins() { # the chaos-daemon and database operators the preflight looks for (kwok nodes)
  kc apply --server-side --force-conflicts --field-manager=wanwide-testcluster \
    -f "$HERE/standins.yaml" >/dev/null
}

settle_standins() { # every stand-in pod running: kwok never plays a pod bound to a node in the
  # instant the node is created (seen: a chaos-daemon pod Pending for good on a new kwok-r6, which
  # held every Benchmark at its preflight); a pod Pending for 30 s is deleted and its controller makes
  # another (with hundreds of new nodes kwok's queue alone keeps pods Pending for a while: not those)
  kc get namespace wanwide-standins >/dev/null 2>&1 || return 0
  local end=$((SECONDS + 300)) now name created stale pending
  while ((SECONDS < end)); do
    pending=$(kc get pods -n wanwide-standins --field-selector=status.phase=Pending \
      -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.creationTimestamp}{"\n"}{end}' 2>/dev/null)
    [[ -z $pending ]] && return 0
    now=$(date +%s) stale=()
    while read -r name created; do
      [[ -n $name ]] && (( now - $(date -d "$created" +%s) >= 30 )) && stale+=("$name")
    done <<<"$pending"
    if ((${#stale[@]})); then
      log "stand-in pods Pending for 30 s, made again: ${stale[*]}"
      kc delete pod -n wanwide-standins "${stale[@]}" --wait=false >/dev/null 2>&1 || true
    fi
    sleep 2
  done
  die "stand-in pods still Pending after 300 s: $(echo "$pending" | cut -d' ' -f1 | tr '\n' ' ')"
}

# ---------------------------------------------------------------- nodes
ensure_nodes() { # N
  local n=${1:-${WANWIDE_TEST_NODES:-3}} i docs=""
  [[ $n =~ ^[0-9]+$ ]] || die "nodes: not a number: $n"
  for ((i = 1; i <= n; i++)); do
    docs+="---
apiVersion: v1
kind: Node
metadata:
  name: kwok-r$i
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: \"0\"
  labels:
    type: kwok
    kubernetes.io/hostname: kwok-r$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    kubernetes.io/role: agent
    node-role.kubernetes.io/agent: \"\"
    topology.kubernetes.io/region: r$i
    topology.kubernetes.io/zone: r$i-a
    wanwide.io/region: r$i
spec: {}
status:
  allocatable: {cpu: \"32\", memory: 128Gi, pods: \"110\", ephemeral-storage: 500Gi}
  capacity: {cpu: \"32\", memory: 128Gi, pods: \"110\", ephemeral-storage: 500Gi}
  nodeInfo:
    architecture: amd64
    operatingSystem: linux
    kubeletVersion: fake
    kubeProxyVersion: fake
    containerRuntimeVersion: kwok
    osImage: kwok
    kernelVersion: kwok
    machineID: \"\"
    systemUUID: \"\"
    bootID: \"\"
"
  done
  ((n > 0)) || return 0
  # create missing ones only; existing nodes are kept as they are
  printf '%s' "$docs" | kc create -f - 2>&1 | grep -v AlreadyExists >&2 || true
  log "waiting for $n simulated node(s) to be Ready"
  # one list a try (kubectl wait asks node by node: minutes for hundreds); kwok makes a few nodes
  # Ready a second, so 90 s and more for hundreds; the node lifecycle controller then removes
  # the not-ready taint
  wait_for "$n simulated node(s) Ready, without the not-ready taint" "$((90 + n / 2))" nodes_ready "$n"
}

nodes_ready() { # N: kwok-r1..rN are Ready and untainted
  local ready
  ready=$(kc get nodes -l type=kwok -o jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status} {.spec.taints[*].key}{"\n"}{end}' |
    awk -v n="$1" '{ i = substr($1, 7) + 0 } i >= 1 && i <= n && $2 == "True" && $3 !~ /not-ready/ { c++ } END { print c + 0 }')
  ((ready >= $1))
}

# ---------------------------------------------------------------- commands
take_lock() { # one up/down at a time per state dir (tests of several people may share it)
  mkdir -p "$STATE/run"
  exec 8>"$STATE/run/lock"
  if ! flock -n 8; then
    log "another up/down runs on $STATE; waiting for it…"
    flock -w 600 8 || die "lock $STATE/run/lock still held after 600 s (see: fuser $STATE/run/lock)"
  fi
}

cmd_up() { # [--real-node]
  local t0=$SECONDS real=${1:-}
  take_lock
  build_all
  [[ $real == --real-node ]] && build_real_node
  resolve_kubectl
  ensure_ports
  ensure_pki
  ensure_kubeconfigs
  ensure_s3_env
  start_versitygw
  start_etcd
  [[ $real == --real-node ]] && rn_apiserver_flags
  start_apiserver
  start_controller_manager
  start_scheduler
  install_crds
  start_kwok
  ensure_nodes "${WANWIDE_TEST_NODES:-3}"
  vn_forget_gone
  install_standins
  settle_standins
  log "waiting for the default ServiceAccount"
  wait_for "serviceaccount default" 60 kc get serviceaccount default -n default
  # shellcheck source=/dev/null
  source "$STATE/s3.env"
  wait_for "versitygw" 30 curl -fsS "$S3_ENDPOINT/health"
  [[ $real == --real-node ]] && rn_up
  log "up in $((SECONDS - t0)) s; KUBECONFIG=$STATE/kubeconfig"
}

vn_down_all() {
  local n
  [[ -n $(vn_names) ]] || return 0
  ensure_ports
  resolve_kubectl
  for n in $(vn_names); do vn_down "$n"; done
}

cmd_vm_node_up() { # NAME [--cpus N] [--mem MiB]
  local name=${1:-} cpus=$VN_DEFAULT_CPUS mem=$VN_DEFAULT_MEM
  [[ $name =~ ^[a-z0-9]{1,10}$ ]] ||
    die "--vm-node '$name': a name of 1-10 characters of [a-z0-9] (hack/vm.sh's VM names; the node is named so too)"
  shift
  while (($#)); do
    case $1 in
      --cpus) cpus=${2:?--cpus N}; shift 2 ;;
      --mem) mem=${2:?--mem MiB}; shift 2 ;;
      *) die "up --vm-node $name: unknown option $1 (--cpus N, --mem MiB)" ;;
    esac
  done
  cmd_up --real-node
  take_lock
  vn_up "$name" "$cpus" "$mem"
}

cmd_vm_node_down() { # NAME|--all
  [[ -n ${1:-} ]] || die "down --vm-node: give NAME or --all"
  [[ -d $STATE/run ]] || { log "nothing to stop"; return 0; }
  take_lock
  ensure_ports
  resolve_kubectl
  if [[ $1 == --all ]]; then vn_down_all
  elif [[ -f $VN_ROOT/$1/node.env ]]; then vn_down "$1"
  else log "no VM node $1"; fi
}

cmd_vm_import() { # NAME|--all ARCHIVE...
  local target=${1:?usage: $0 vm-import NAME|--all ARCHIVE...} n a; shift
  (($#)) || die "vm-import: give the archives (docker-archive tars) to import"
  for a in "$@"; do [[ -s $a ]] || die "vm-import: no archive $a"; done
  take_lock
  if [[ $target == --all ]]; then
    for n in $(vn_names); do vn_import "$n" "$@"; done
  else
    vn_import "$target" "$@"
  fi
}

stop_one() { # component
  local c=$1 p
  p=$(pid_of "$c") || { rm -f "$STATE/run/$c.pid"; return 0; }
  log "stopping $c (pid $p)"
  # its whole process group (start_bg's setsid made it the leader): a socat forward's forked children hold its
  # listening socket, so a forward started again would fail to bind while they wait on a dead VM's connections
  kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true
  local end=$((SECONDS + 20))
  while { kill -0 "$p" || pgrep -g "$p"; } >/dev/null 2>&1 && ((SECONDS < end)); do sleep 0.3; done
  if { kill -0 "$p" || pgrep -g "$p"; } >/dev/null 2>&1; then
    log "$c did not exit in 20 s; SIGKILL"
    kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
    sleep 0.5
  fi
  rm -f "$STATE/run/$c.pid"
}

cmd_down() { # [--real-node]
  [[ -d $STATE/run ]] || { log "nothing to stop"; return 0; }
  take_lock
  vn_down_all
  rn_down
  if [[ -f $STATE/chaos-mesh-real ]]; then  # the real Chaos Mesh ran on those nodes: the stand-ins are back
    rm -f "$STATE/chaos-mesh-real"
    if [[ ${1:-} == --real-node ]] && pid_of kwok >/dev/null; then ensure_ports; start_kwok; fi
  fi
  [[ ${1:-} == --real-node ]] && return 0
  local c i
  # reverse start order: clients first, etcd last
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
    c=${COMPONENTS[$i]}
    [[ $c == etcd ]] && continue
    stop_one "$c" &
  done
  wait
  stop_one etcd
  log "down (state kept in $STATE; cached binaries kept in $BIN)"
}

cmd_chaos_standins() { # on|off: kwok's Chaos Mesh stand-in Stages (off while the real Chaos Mesh runs)
  [[ -f $STATE/ports.env ]] || die "no cluster state in $STATE; run: $0 up"
  take_lock
  ensure_ports
  case ${1:-} in
    off) echo "the real Chaos Mesh (hack/chaos-mesh.sh install)" >"$STATE/chaos-mesh-real" ;;
    on) rm -f "$STATE/chaos-mesh-real" ;;
    *) die "usage: $0 chaos-standins on|off" ;;
  esac
  log "kwok's Chaos Mesh stand-ins: ${1}"
  pid_of kwok >/dev/null || return 0  # not running: the next `up` reads the marker
  start_kwok
}

cmd_restart_apiserver() { # clients see connections drop, then the same server again
  [[ -f $STATE/ports.env ]] || die "no cluster state in $STATE; run: $0 up"
  take_lock
  ensure_ports
  pid_of kube-apiserver >/dev/null || die "kube-apiserver is not running"
  stop_one kube-apiserver
  start_apiserver
}

cmd_s3() { # stop|start
  [[ -f $STATE/ports.env ]] || die "no cluster state in $STATE; run: $0 up"
  take_lock
  ensure_ports
  case ${1:-} in
    stop) stop_one versitygw ;;
    start)
      start_versitygw
      # shellcheck source=/dev/null
      source "$STATE/s3.env"
      wait_for "versitygw" 30 curl -fsS "$S3_ENDPOINT/health" ;;
    *) die "usage: $0 s3 stop|start" ;;
  esac
}

cmd_env() {
  [[ -f $STATE/kubeconfig ]] || die "no cluster state in $STATE; run: $0 up"
  echo "export KUBECONFIG=$STATE/kubeconfig"
  echo "export WANWIDE_TESTCLUSTER_DIR=$STATE"
  local l
  while IFS= read -r l; do [[ -n $l ]] && echo "export $l"; done <"$STATE/s3.env"
  echo "export PATH=$BIN/links:\$PATH"
  if rn_enabled; then
    echo "export WANWIDE_CONTAINERD_ADDRESS=$RN_SOCK"
    echo "export WANWIDE_REALNODE_BUSYBOX_IMAGE=$(rn_busybox_ref)"
    echo "export WANWIDE_REALNODE_S3_ENDPOINT=$(rn_s3_endpoint)"
  fi
  if [[ -n $(vn_names) ]]; then echo "export WANWIDE_VM_NODES=\"$(vn_names | paste -sd' ')\""; fi
}

cmd_status() {
  local c p rc=0
  for c in "${COMPONENTS[@]}"; do
    if p=$(pid_of "$c"); then
      printf '%-24s running  pid %-8s rss %s MiB\n' "$c" "$p" "$(($(awk '/VmRSS/ {print $2}' "/proc/$p/status") / 1024))"
    else
      printf '%-24s stopped\n' "$c"; rc=3
    fi
  done
  if rn_enabled; then
    echo "real node $RN_NODE ($RN):"
    rn_status || rc=3
  fi
  if [[ -n $(vn_names) ]] && pid_of kube-apiserver >/dev/null; then
    resolve_kubectl
    vn_status
  fi
  if [[ -f $STATE/kubeconfig ]] && pid_of kube-apiserver >/dev/null; then
    resolve_kubectl
    kc version 2>/dev/null | sed 's/^/  /' || true
    kc get nodes -L topology.kubernetes.io/region 2>/dev/null | sed 's/^/  /' || true
  fi
  return "$rc"
}

# kubectl from PATH, else a cached one built from k8s.io/kubernetes (same version)
resolve_kubectl() {
  [[ -n ${KUBECTL:-} ]] && return 0
  KUBECTL=$(command -v kubectl || true)
  if [[ -z $KUBECTL ]]; then
    build_kube kubectl
    KUBECTL=$(bin_path kubectl)
  fi
}

# handy names for the cached binaries (helm, kwok …) without versions
link_bins() {
  mkdir -p "$BIN/links"
  local n
  for n in "${ALL_BINARIES[@]}" "${REAL_NODE_BINARIES[@]}" kubectl; do
    [[ -x $(bin_path "$n") ]] && ln -sfn "$(bin_path "$n")" "$BIN/links/$n"
  done
  return 0
}

main() {
  local cmd=${1:-}
  shift || true
  case "$cmd" in
    build)
      case ${1:-} in
        --real-node) build_real_node ;;
        "") build_all ;;
        *) die "build: unknown option $1" ;;
      esac
      link_bins ;;
    up)
      if [[ ${1:-} == --vm-node ]]; then shift; cmd_vm_node_up "$@"; link_bins; return 0; fi
      [[ -z ${1:-} || $1 == --real-node ]] || die "up: unknown option $1 (--real-node, --vm-node NAME)"
      cmd_up "${1:-}"; link_bins ;;
    down)
      if [[ ${1:-} == --vm-node ]]; then cmd_vm_node_down "${2:-}"; return 0; fi
      [[ -z ${1:-} || $1 == --real-node ]] || die "down: unknown option $1 (--real-node, --vm-node NAME|--all)"
      cmd_down "${1:-}" ;;
    vm-nodes) vn_names ;;
    vm-import) cmd_vm_import "$@" ;;
    env) cmd_env ;;
    status) cmd_status ;;
    nodes)
      resolve_kubectl
      ensure_ports
      ensure_nodes "${1:?usage: $0 nodes N}"; settle_standins ;;
    restart-apiserver) cmd_restart_apiserver ;;
    chaos-standins) cmd_chaos_standins "${1:-}" ;;
    s3) cmd_s3 "${1:-}" ;;
    bin) bin_path "${1:?usage: $0 bin NAME}" ;;
    *) sed -n '2,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "$0" >&2; exit 2 ;;
  esac
}

main "$@"
