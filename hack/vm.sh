#!/usr/bin/env bash
# Small virtual machines running Debian's stock kernel (which has netem, unlike some hosts'),
# from Debian packages only. See docs/vm.md.
#
#   hack/vm.sh up NAME [--cpus N] [--mem MiB] [--accel auto|kvm|tcg] [--timeout S]
#                                   start VM NAME and wait until `exec` works (no-op when up)
#   hack/vm.sh down NAME|--all      stop it (them); its tap, state and, with the last VM, the bridge go
#   hack/vm.sh clean                down --all, then whatever a crash left: wwvm-* taps, the bridge,
#                                   qemu processes of this script, state directories
#   hack/vm.sh status               the VMs, their addresses, processes and leftovers
#   hack/vm.sh addr NAME|--host     NAME's address on the bridge (--host: the host's there)
#   hack/vm.sh exec NAME [--cd DIR] [--tty] -- CMD [ARG...]
#                                   run CMD in the VM (over ssh), in DIR (default: the current
#                                   directory, which the guest sees at the same path); its exit code
#   hack/vm.sh ssh NAME             an interactive shell in the VM
#   hack/vm.sh pull NAME GUEST_DIR HOST_DIR
#                                   copy a directory out of the VM (tar over ssh)
#   hack/vm.sh test [--name NAME] [--cpus N] [--mem MiB] [--keep] -- PYTEST_ARGS
#                                   a fresh VM (unless NAME is up), this checkout's pytest in it, then down
#   hack/vm.sh prepare              the packages, the kernel, the initramfs, the KVM verdict; no VM
#   hack/vm.sh console NAME         the VM's serial console so far
#
# The guest: Debian's linux-image-amd64 (apt-get download + dpkg-deb -x into the cache), a
# small initramfs (busybox-static, the 9p/virtio/overlay modules, hack/vm/stage1.sh), and as
# root file system the HOST's own root, shared read-only over 9p under a tmpfs overlay: the
# guest has the host's packages, the lab's venvs and this checkout at the same paths, and its
# writes stay in its memory. hack/vm/guest-init.sh is its init (sshd under busybox init).
# Network: bridge wwvm0 (10.78.0.1/24 on the host), one tap wwvm-NAME per VM, VM addresses
# from 10.78.0.11; no uplink, no NAT, no default route in the guest: host <-> VMs only.
# Acceleration: KVM when a probe boot reaches the initramfs under it (verdict cached per
# host kernel, qemu and guest kernel), else TCG (-accel tcg,thread=multi).
#
# Environment: WANWIDE_CACHE (default ~/.cache/wanwide; the VM cache is its vm/),
#   WANWIDE_VM_STATE (runtime state, default /run/wanwide-vm), WANWIDE_VM_ACCEL (auto),
#   WANWIDE_VM_KERNEL_PKG (default: what linux-image-amd64 depends on),
#   WANWIDE_VM_PYTHON (for `test`; default this checkout's .venv/bin/python).
set -euo pipefail
shopt -s inherit_errexit

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_TAG=vm
# shellcheck source=lib.sh
source "$ROOT/hack/lib.sh"
trap 'on_error_report $? "$BASH_COMMAND" $LINENO' ERR

CACHE=${WANWIDE_CACHE:-$HOME/.cache/wanwide}
VMC=$CACHE/vm
STATE=${WANWIDE_VM_STATE:-/run/wanwide-vm}
export APT_LOG=$VMC/logs/apt.log
BRIDGE=wwvm0
TAP_PREFIX=wwvm-
NET=10.78.0            # the /24: host .1, VMs from .11
HOST_IP=$NET.1
FIRST_OCTET=11
LAST_OCTET=250
APT_PKGS=(qemu-system-x86 busybox-static kmod cpio gzip openssh-client openssh-server iproute2 procps)
INITRD_MODULES=(virtio_pci 9pnet_virtio 9p overlay virtio_net)
KVM_PROBE_SECONDS=${WANWIDE_VM_KVM_PROBE_SECONDS:-20}

die() { log "ERROR: $*"; exit 1; }
usage() { sed -n '2,/^# Environment/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
now_ms() { date +%s%3N; }
secs_since() { local d=$(($(now_ms) - $1)); printf '%d.%d' $((d / 1000)) $((d % 1000 / 100)); }
check_name() {
  [[ $1 =~ ^[a-z0-9]{1,10}$ ]] ||
    die "VM name '$1': 1-10 characters of [a-z0-9] (it goes into the tap name ${TAP_PREFIX}NAME)"
}
need_root() { [[ $(id -u) == 0 ]] || die "hack/vm.sh needs root (bridge, taps, qemu); run it as root"; }

# ---------------------------------------------------------------- packages, kernel, initramfs
ensure_deps() {
  mkdir -p "$VMC/logs"
  apt_ensure "${APT_PKGS[@]}"
}

kernel_pkg() { # the linux-image-<abi>-amd64 package linux-image-amd64 depends on (or the override)
  if [[ -n ${WANWIDE_VM_KERNEL_PKG:-} ]]; then echo "$WANWIDE_VM_KERNEL_PKG"; return 0; fi
  local p
  p=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}' || true)
  if [[ -z $p ]]; then
    apt-get -o DPkg::Lock::Timeout=900 update -qq >>"$APT_LOG" 2>&1 || true
    p=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}' || true)
  fi
  echo "$p"
}

lists_stamp() { # the newest apt list's mtime (the kernel's resolution is kept until the lists change)
  find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -printf '%T@\n' 2>/dev/null | sort -n | tail -1
}

kernel_dir() { # ensure the unpacked kernel; print its directory (boot/vmlinuz-*, lib/modules/<kver>)
  local pkg ver dir stamp resolved=$VMC/kernel/resolved
  stamp="$(lists_stamp) ${WANWIDE_VM_KERNEL_PKG:-}"
  if [[ -f $resolved && $(head -1 "$resolved") == "$stamp" ]]; then
    { read -r _; read -r pkg ver; } <"$resolved"
  else
    pkg=$(kernel_pkg)
    if [[ -z $pkg ]]; then # no apt lists and no network answer: the newest kernel cached, if any
      dir=$(find "$VMC/kernel" -mindepth 1 -maxdepth 1 -type d -name 'linux-image-*' 2>/dev/null | sort -V | tail -1)
      [[ -n $dir ]] || die "cannot resolve linux-image-amd64 (apt-cache depends found nothing; run apt-get update)"
      echo "$dir"; return 0
    fi
    ver=$(apt-cache policy "$pkg" 2>/dev/null | awk '/Candidate:/{print $2; exit}' || true)
    [[ -n $ver && $ver != "(none)" ]] || die "$pkg has no candidate version (apt-get update?)"
    mkdir -p "$VMC/kernel"
    printf '%s\n%s %s\n' "$stamp" "$pkg" "$ver" >"$resolved"
  fi
  dir=$VMC/kernel/${pkg}_$ver
  if [[ -f $dir/.complete ]]; then echo "$dir"; return 0; fi
  step "kernel $pkg $ver: apt-get download, dpkg-deb -x, depmod" "$VMC/logs/kernel.log"
  tmp=$(mktemp -d "$VMC/kernel.tmp.XXXXXX")
  (cd "$tmp" && apt-get -o APT::Sandbox::User=root download "$pkg=$ver") >"$VMC/logs/kernel.log" 2>&1
  dpkg-deb -x "$tmp"/"${pkg}"_*.deb "$tmp/root"
  local kver
  kver=$(basename "$(find "$tmp/root/lib/modules" -mindepth 1 -maxdepth 1 -type d | head -1)")
  [[ -f $tmp/root/boot/vmlinuz-$kver ]] || die "$pkg: no boot/vmlinuz-$kver in the package"
  depmod -b "$tmp/root" "$kver" >>"$VMC/logs/kernel.log" 2>&1
  mkdir -p "$tmp/out/boot" "$tmp/out/lib"
  mv "$tmp/root/boot/vmlinuz-$kver" "$tmp/root/boot/config-$kver" "$tmp/out/boot/"
  mv "$tmp/root/lib/modules" "$tmp/out/lib/"
  echo "$kver" >"$tmp/out/kver"
  touch "$tmp/out/.complete"
  rm -rf "$dir"
  mkdir -p "$(dirname "$dir")"
  mv "$tmp/out" "$dir"
  rm -rf "$tmp"
  step_end
  echo "$dir"
}

initrd_for() { # initrd_for KERNEL_DIR: ensure the initramfs for that kernel; print its path
  local kd=$1 kver key out tmp m f
  kver=$(cat "$kd/kver")
  local mods=()
  for m in "${INITRD_MODULES[@]}"; do
    while read -r what f _; do [[ $what == insmod ]] && mods+=("$f"); done < <(modprobe -d "$kd" -S "$kver" --show-depends "$m")
  done
  key=$( { echo "wanwide vm initrd 1 $kver"; cat "$ROOT/hack/vm/stage1.sh"; printf '%s\n' "${mods[@]#"$kd"}";
           dpkg-query -W -f='${Version}\n' busybox-static; } | sha256sum | cut -c1-16)
  out=$VMC/initrd-$kver-$key.gz
  if [[ -f $out ]]; then echo "$out"; return 0; fi
  step "initramfs for $kver"
  tmp=$(mktemp -d "$VMC/initrd.tmp.XXXXXX")
  mkdir -p "$tmp/bin" "$tmp/mods" "$tmp/proc" "$tmp/sys" "$tmp/dev"
  cp /bin/busybox "$tmp/bin/busybox"
  for m in sh mount insmod mkdir switch_root echo cat sleep poweroff; do ln -s busybox "$tmp/bin/$m"; done
  declare -A seen=()
  for f in "${mods[@]}"; do
    [[ -n ${seen[$f]:-} ]] && continue
    seen[$f]=1
    cp "$f" "$tmp/mods/"
    basename "$f" >>"$tmp/mods/order"
  done
  install -m 0755 "$ROOT/hack/vm/stage1.sh" "$tmp/init"
  (cd "$tmp" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet | gzip -1) >"$out.tmp"
  mv "$out.tmp" "$out"
  rm -rf "$tmp"
  find "$VMC" -maxdepth 1 -name "initrd-$kver-*.gz" ! -name "$(basename "$out")" -delete # older stage 1s
  step_end
  echo "$out"
}

client_key() { # the ssh key hack/vm.sh logs in with (generated once)
  local k=$VMC/ssh/id_ed25519
  if [[ ! -f $k ]]; then
    mkdir -p "$VMC/ssh" && chmod 0700 "$VMC/ssh"
    ssh-keygen -q -t ed25519 -N '' -C "wanwide-vm" -f "$k"
  fi
  echo "$k"
}

qemu_version() { qemu-system-x86_64 --version | head -1 | awk '{print $4}'; }

accel_for() { # accel_for KERNEL_DIR INITRD: kvm or tcg (auto: KVM when its probe boot reaches the initramfs)
  local want=${ACCEL:-${WANWIDE_VM_ACCEL:-auto}} kd=$1 initrd=$2
  case $want in
    tcg) echo tcg; return 0 ;;
    kvm) [[ -r /dev/kvm && -w /dev/kvm ]] || die "--accel kvm: /dev/kvm is not usable here"; echo kvm; return 0 ;;
    auto) ;;
    *) die "--accel $want: one of auto, kvm, tcg" ;;
  esac
  if [[ ! -r /dev/kvm || ! -w /dev/kvm ]]; then echo tcg; return 0; fi
  local key verdict_file verdict
  key=$(printf '%s %s %s' "$(uname -r)" "$(qemu_version)" "$(cat "$kd/kver")" | sha256sum | cut -c1-16)
  verdict_file=$VMC/kvm-verdict-$key
  if [[ ! -f $verdict_file ]]; then
    step "KVM probe (a boot to the initramfs under KVM, at most ${KVM_PROBE_SECONDS} s)"
    local out=$VMC/logs/kvm-probe.log rc=0
    timeout "$KVM_PROBE_SECONDS" qemu-system-x86_64 -accel kvm -cpu host -m 256 -smp 1 \
      -nodefaults -no-user-config -display none -no-reboot -serial "file:$out" \
      -kernel "$kd/boot/vmlinuz-$(cat "$kd/kver")" -initrd "$initrd" \
      -append "console=ttyS0 panic=-1 loglevel=3 wwvm.probe=1" >"$out.err" 2>&1 || rc=$?
    if grep -q "wwvm: probe ok" "$out" 2>/dev/null; then verdict=works
    elif ((rc == 124)); then verdict="hangs (no initramfs after ${KVM_PROBE_SECONDS} s)"
    else verdict="fails (qemu exited $rc: $(head -c 200 "$out.err" | tr '\n' ' '))"; fi
    echo "$verdict" >"$verdict_file"
    log "KVM probe: $verdict (cached in $verdict_file; delete it to probe again)"
    step_end
  fi
  verdict=$(cat "$verdict_file")
  if [[ $verdict == works ]]; then echo kvm; else echo tcg; fi
}

# ---------------------------------------------------------------- state
vm_dir() { echo "$STATE/$1"; }
vm_names() { # every VM with a state directory
  local d
  for d in "$STATE"/*/; do [[ -f $d/name ]] && cat "$d/name"; done 2>/dev/null || true
}
qemu_pid() { # qemu_pid NAME: the pid of NAME's qemu when it runs (checked against its command line)
  local dir pid
  dir=$(vm_dir "$1")
  pid=$(cat "$dir/qemu.pid" 2>/dev/null || true)
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -F -- "$dir/qemu.pid" >/dev/null || return 1
  echo "$pid"
}
our_qemu_pids() { # every qemu started by this script with this state dir (by its command line)
  local p
  for p in /proc/[0-9]*; do
    tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -F -- "-pidfile $STATE/" >/dev/null && echo "${p#/proc/}"
  done
  return 0
}
our_taps() { ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep "^$TAP_PREFIX" || true; }
qemu_cmdlines() { # the command line of every running qemu-system-x86_64 (any state dir), one a line
  local p
  for p in /proc/[0-9]*; do
    [[ $(cat "$p/comm" 2>/dev/null) == wwvm-* || $(readlink "$p/exe" 2>/dev/null) == *qemu-system* ]] || continue
    tr '\0' ' ' <"$p/cmdline" 2>/dev/null && echo
  done
  return 0
}
# a running qemu holds it (whatever its state dir). Not grep -q: under pipefail a match that ends grep before
# the writer is done is the writer's SIGPIPE, the pipeline false (a CI run's clean took a live VM's tap so)
tap_in_use() { qemu_cmdlines | grep -F -- "ifname=$1," >/dev/null; }
bridge_unused() { [[ -z $(ip -o link show master "$BRIDGE" 2>/dev/null) ]]; }

bridge_up() {
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    if ip -4 route show | grep "^$NET\.0/24" >/dev/null; then
      die "$NET.0/24 is routed here already (ip route); the VMs' network would clash with it"
    fi
    ip link add "$BRIDGE" type bridge
    ip addr add "$HOST_IP/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
  fi
}
bridge_down_if_unused() { # the bridge goes with its last tap (VMs of other state dirs keep it)
  if ip link show "$BRIDGE" >/dev/null 2>&1 && bridge_unused; then ip link del "$BRIDGE"; fi
}

free_octet() { # the lowest VM address free in this state dir and among running VMs of any other
  local used=" " d o
  for d in "$STATE"/*/; do
    o=$(cat "$d/octet" 2>/dev/null || true)
    [[ -n $o ]] && used+="$o "
  done
  for o in $(qemu_cmdlines | { grep -o "wwvm\.ip=$NET\.[0-9]*" || true; } | sed 's/.*\.//'); do used+="$o "; done
  for ((o = FIRST_OCTET; o <= LAST_OCTET; o++)); do
    [[ $used == *" $o "* ]] || { echo "$o"; return 0; }
  done
  die "no free address in $NET.0/24"
}

ssh_cfg() { # ssh_cfg NAME: the ssh options that reach NAME
  local dir
  dir=$(vm_dir "$1")
  printf '%s\n' -F /dev/null -i "$(client_key)" -o IdentitiesOnly=yes -o BatchMode=yes \
    -o User=root -o "HostKeyAlias=wwvm-$1" -o "UserKnownHostsFile=$dir/known_hosts" \
    -o StrictHostKeyChecking=yes -o ConnectTimeout=10 -o ServerAliveInterval=15 \
    -o ServerAliveCountMax=8 -o LogLevel=ERROR
}

# ---------------------------------------------------------------- commands
cmd_prepare() {
  need_root
  ensure_deps
  local kd initrd
  kd=$(kernel_dir)
  initrd=$(initrd_for "$kd")
  client_key >/dev/null
  log "kernel $(cat "$kd/kver") ($kd), initramfs $initrd, accel $(accel_for "$kd" "$initrd")"
}

cmd_up() {
  local name="" cpus=2 mem=2048 timeout=900
  while (($#)); do
    case $1 in
      --cpus) cpus=${2:?--cpus N}; shift 2 ;;
      --mem) mem=${2:?--mem MiB}; shift 2 ;;
      --accel) ACCEL=${2:?--accel auto|kvm|tcg}; shift 2 ;;
      --timeout) timeout=${2:?--timeout SECONDS}; shift 2 ;;
      -*) die "up: unknown option $1 (--cpus N, --mem MiB, --accel auto|kvm|tcg, --timeout S)" ;;
      *) [[ -z $name ]] || die "up: one NAME (got $name and $1)"; name=$1; shift ;;
    esac
  done
  [[ -n $name ]] || die "up: give a NAME (hack/vm.sh up NAME [--cpus N] [--mem MiB])"
  check_name "$name"
  [[ $cpus =~ ^[1-9][0-9]*$ ]] || die "--cpus $cpus: a whole number of vCPUs (1-2 on a 2-core machine)"
  if ! [[ $mem =~ ^[1-9][0-9]*$ ]] || ((mem < 256)); then die "--mem $mem: MiB, at least 256"; fi
  need_root
  local t0 dir
  t0=$(now_ms)
  dir=$(vm_dir "$name")
  if qemu_pid "$name" >/dev/null; then
    local spec
    spec=$(cat "$dir/spec")
    [[ $spec == "cpus=$cpus mem=$mem" ]] ||
      die "$name is up with $spec, not cpus=$cpus mem=$mem: hack/vm.sh down $name first"
    wait_ready "$name" "$timeout" "$t0"
    log "$name: up already ($(cat "$dir/ip"))"
    return 0
  fi
  ensure_deps
  local kd initrd accel key
  kd=$(kernel_dir)
  initrd=$(initrd_for "$kd")
  key=$(client_key)
  accel=$(accel_for "$kd" "$initrd")
  mkdir -p "$STATE"
  local octet ip tap mac
  exec 9>"$STATE/.lock"
  flock 9
  [[ -d $dir ]] && down_one "$name" # a dead VM's leftovers
  octet=$(free_octet)
  ip=$NET.$octet
  tap=$TAP_PREFIX$name
  mac=$(printf '52:54:00:4e:00:%02x' "$octet")
  mkdir -p "$dir"
  echo "$name" >"$dir/name"
  echo "$octet" >"$dir/octet"
  echo "$ip" >"$dir/ip"
  echo "cpus=$cpus mem=$mem" >"$dir/spec"
  echo "$accel" >"$dir/accel"
  bridge_up
  ip link del "$tap" 2>/dev/null || true
  ip tuntap add dev "$tap" mode tap
  ip link set "$tap" master "$BRIDGE"
  ip link set "$tap" up
  ssh-keygen -q -t ed25519 -N '' -C "wwvm-$name" -f "$dir/ssh_host_ed25519_key"
  echo "wwvm-$name $(cut -d' ' -f1,2 "$dir/ssh_host_ed25519_key.pub")" >"$dir/known_hosts"
  local kver accel_args
  kver=$(cat "$kd/kver")
  if [[ $accel == kvm ]]; then accel_args=(-accel kvm -cpu host); else accel_args=(-accel "tcg,thread=multi" -cpu max); fi
  local append="console=ttyS0 panic=-1 loglevel=4 wwvm.name=$name wwvm.ip=$ip/24 wwvm.state=$dir"
  append+=" wwvm.key=$key.pub wwvm.modules=$kd/lib/modules/$kver wwvm.init=$ROOT/hack/vm/guest-init.sh"
  qemu-system-x86_64 -name "wwvm-$name,process=wwvm-$name" -machine pc "${accel_args[@]}" \
    -smp "$cpus" -m "$mem" -nodefaults -no-user-config -display none -no-reboot \
    -kernel "$kd/boot/vmlinuz-$kver" -initrd "$initrd" -append "$append" \
    -serial "file:$dir/console.log" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -netdev "tap,id=n0,ifname=$tap,script=no,downscript=no" -device "virtio-net-pci,netdev=n0,mac=$mac" \
    -qmp "unix:$dir/qmp.sock,server=on,wait=off" \
    -daemonize -pidfile "$dir/qemu.pid" 2>"$dir/qemu.err" || {
      cat "$dir/qemu.err" >&2; down_one "$name"; die "$name: qemu did not start"; }
  flock -u 9
  log "$name: qemu $(cat "$dir/qemu.pid") started ($accel, $cpus vCPU, $mem MiB, $ip); waiting for ssh"
  wait_ready "$name" "$timeout" "$t0"
  date +%s >"$dir/ready"
  log "$name: up in $(secs_since "$t0") s ($accel, load $(cut -d' ' -f1-3 /proc/loadavg))"
}

wait_ready() { # wait_ready NAME TIMEOUT T0_MS: until `true` runs over ssh; fails when qemu dies
  local name=$1 timeout=$2 t0=$3 dir opts
  dir=$(vm_dir "$name")
  mapfile -t opts < <(ssh_cfg "$name")
  local ip
  ip=$(cat "$dir/ip")
  while :; do
    if ! qemu_pid "$name" >/dev/null; then
      log "$name: qemu exited; console:"
      tail -n 30 "$dir/console.log" >&2 || true
      cat "$dir/qemu.err" >&2 2>/dev/null || true
      down_one "$name"
      die "$name did not boot"
    fi
    if grep -q "wwvm: FAILED" "$dir/console.log" 2>/dev/null; then
      grep "wwvm: FAILED" "$dir/console.log" >&2
      down_one "$name"
      die "$name: its init failed (console above)"
    fi
    if grep -q "wwvm: ready" "$dir/console.log" 2>/dev/null &&
       ssh "${opts[@]}" -o ConnectTimeout=5 "$ip" true </dev/null 2>/dev/null; then
      return 0
    fi
    if (($(now_ms) - t0 > timeout * 1000)); then
      tail -n 30 "$dir/console.log" >&2 || true
      down_one "$name"
      die "$name: no ssh after $timeout s (console above; a busy machine under TCG: --timeout)"
    fi
    sleep 1
  done
}

down_one() { # down_one NAME: stop its qemu, remove its tap and state (the console log is kept in the cache)
  local name=$1 dir pid i
  dir=$(vm_dir "$name")
  if pid=$(qemu_pid "$name"); then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 25; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  fi
  ip link del "$TAP_PREFIX$name" 2>/dev/null || true
  if [[ -f $dir/console.log ]]; then
    mkdir -p "$VMC/logs"
    cp "$dir/console.log" "$VMC/logs/$name-console.log" 2>/dev/null || true
  fi
  rm -rf "$dir"
}

cmd_down() {
  (($# == 1)) || die "down: NAME or --all"
  need_root
  mkdir -p "$STATE"
  exec 9>"$STATE/.lock"
  flock 9
  if [[ $1 == --all ]]; then
    local n
    for n in $(vm_names); do down_one "$n"; log "$n: down"; done
  else
    check_name "$1"
    [[ -d $(vm_dir "$1") ]] || { log "$1: not up"; bridge_down_if_unused; return 0; }
    down_one "$1"
    log "$1: down"
  fi
  bridge_down_if_unused
}

cmd_clean() {
  need_root
  cmd_down --all
  exec 9>"$STATE/.lock"
  flock 9
  local p t
  for p in $(our_qemu_pids); do log "clean: qemu $p (no VM records it)"; kill -KILL "$p" 2>/dev/null || true; done
  for t in $(our_taps); do
    if tap_in_use "$t"; then log "clean: tap $t kept (a running VM of another state dir holds it)"; continue; fi
    log "clean: tap $t"
    ip link del "$t" 2>/dev/null || true
  done
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    if bridge_unused; then log "clean: bridge $BRIDGE"; ip link del "$BRIDGE"
    else log "clean: bridge $BRIDGE kept (VMs of another state dir are on it)"; fi
  fi
  find "$STATE" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} + 2>/dev/null || true
  rm -f "$STATE/.lock"
  rmdir "$STATE" 2>/dev/null || true
  log "clean: nothing of hack/vm.sh's $STATE is left (no qemu, tap or state of it; $BRIDGE gone with its last tap)"
}

cmd_status() {
  local n dir pid any=""
  printf '%-10s %-8s %-13s %-8s %-6s %-20s %s\n' NAME STATE ADDRESS PID ACCEL SPEC UP
  for n in $(vm_names); do
    any=1
    dir=$(vm_dir "$n")
    local st=dead up=-
    if pid=$(qemu_pid "$n"); then
      st=booting
      if [[ -f $dir/ready ]]; then st=running; up="$(($(date +%s) - $(cat "$dir/ready"))) s"; fi
    else pid=-; fi
    printf '%-10s %-8s %-13s %-8s %-6s %-20s %s\n' "$n" "$st" "$(cat "$dir/ip")" "$pid" \
      "$(cat "$dir/accel" 2>/dev/null)" "$(cat "$dir/spec")" "$up"
  done
  [[ -n $any ]] || echo "(no VM)"
  if ip link show "$BRIDGE" >/dev/null 2>&1; then echo "bridge $BRIDGE: up ($HOST_IP/24)"; else echo "bridge $BRIDGE: absent"; fi
  local stale=() t
  for t in $(our_taps); do tap_in_use "$t" || stale+=("$t"); done
  ((${#stale[@]} == 0)) || echo "stale taps (hack/vm.sh clean removes them): ${stale[*]}"
}

shq() { # shq WORD: WORD single-quoted for a POSIX shell (root's shell in the guest is dash)
  local q=\'
  printf "'%s'" "${1//$q/$q\\$q$q}"
}
remote_cmd() { # the words as one POSIX shell command line for ssh (each quoted)
  local out="" w
  for w in "$@"; do out+="$(shq "$w") "; done
  echo "${out% }"
}

cmd_exec() {
  local name=${1:-} cd=$PWD tty=()
  [[ -n $name ]] || die "exec: hack/vm.sh exec NAME [--cd DIR] [--tty] -- CMD [ARG...]"
  shift
  while (($#)); do
    case $1 in
      --cd) cd=${2:?--cd DIR}; shift 2 ;;
      --tty) tty=(-t); shift ;;
      --) shift; break ;;
      *) die "exec: put the command after -- (hack/vm.sh exec $name -- $*)" ;;
    esac
  done
  (($#)) || die "exec: no command after --"
  check_name "$name"
  qemu_pid "$name" >/dev/null || die "$name is not up (hack/vm.sh up $name)"
  local opts
  mapfile -t opts < <(ssh_cfg "$name")
  exec ssh "${opts[@]}" "${tty[@]}" "$(cat "$(vm_dir "$name")/ip")" \
    "cd $(shq "$cd") 2>/dev/null || cd /; exec $(remote_cmd "$@")"
}

cmd_ssh() {
  local name=${1:-}
  check_name "$name"
  qemu_pid "$name" >/dev/null || die "$name is not up"
  local opts
  mapfile -t opts < <(ssh_cfg "$name")
  exec ssh "${opts[@]}" -t "$(cat "$(vm_dir "$name")/ip")"
}

cmd_pull() {
  (($# == 3)) || die "pull: NAME GUEST_DIR HOST_DIR"
  local name=$1 src=$2 dst=$3
  check_name "$name"
  qemu_pid "$name" >/dev/null || die "$name is not up"
  mkdir -p "$dst"
  local opts
  mapfile -t opts < <(ssh_cfg "$name")
  # shellcheck disable=SC2029  # the guest's path, quoted here on purpose
  ssh "${opts[@]}" "$(cat "$(vm_dir "$name")/ip")" "tar -C $(shq "$src") -cf - ." | tar -C "$dst" -xf -
}

cmd_addr() {
  (($# == 1)) || die "addr: NAME or --host"
  if [[ $1 == --host ]]; then echo "$HOST_IP"; return 0; fi
  check_name "$1"
  qemu_pid "$1" >/dev/null || die "$1 is not up (hack/vm.sh up $1)"
  cat "$(vm_dir "$1")/ip"
}

cmd_console() {
  local name=${1:-}
  check_name "$name"
  cat "$(vm_dir "$name")/console.log" 2>/dev/null || cat "$VMC/logs/$name-console.log"
}

cmd_test() {
  local name=test keep="" up_args=()
  while (($#)); do
    case $1 in
      --name) name=${2:?--name NAME}; shift 2 ;;
      --cpus|--mem|--accel|--timeout) up_args+=("$1" "${2:?$1 VALUE}"); shift 2 ;;
      --keep) keep=1; shift ;;
      --) shift; break ;;
      *) die "test: put pytest's arguments after -- (hack/vm.sh test [--name N] [--cpus N] [--mem M] [--keep] -- ARGS)" ;;
    esac
  done
  local py=${WANWIDE_VM_PYTHON:-$ROOT/.venv/bin/python}
  [[ -x $py ]] || die "no python at $py: run hack/python-env.sh, or set WANWIDE_VM_PYTHON to a venv's python with pytest"
  local started=""
  if ! qemu_pid "$name" >/dev/null; then
    cmd_up "$name" "${up_args[@]}"
    started=1
  else
    log "$name is up already: the tests run in it (and it stays up)"
  fi
  local rc=0 t0
  t0=$(now_ms)
  (cmd_exec "$name" --cd "$ROOT" -- env "PYTHONPATH=$ROOT/operator" "$py" -m pytest "$@") || rc=$?
  log "test: pytest in $name exited $rc after $(secs_since "$t0") s (load $(cut -d' ' -f1-3 /proc/loadavg))"
  if [[ -n $started && -z $keep ]]; then (cmd_down "$name"); fi
  exit "$rc" # pytest's exit code (exit, not return: a failing test is not this script's error)
}

main() {
  local cmd=${1:-}
  (($#)) && shift
  case $cmd in
    up) cmd_up "$@" ;;
    down) cmd_down "$@" ;;
    clean) cmd_clean "$@" ;;
    status) cmd_status "$@" ;;
    exec) cmd_exec "$@" ;;
    ssh) cmd_ssh "$@" ;;
    pull) cmd_pull "$@" ;;
    console) cmd_console "$@" ;;
    addr) cmd_addr "$@" ;;
    test) cmd_test "$@" ;;
    prepare) cmd_prepare "$@" ;;
    ""|-h|--help|help) usage ;;
    *) log "unknown command '$cmd'"; usage ;;
  esac
}
main "$@"
