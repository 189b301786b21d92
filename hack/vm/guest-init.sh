#!/bin/bash
# The init of a wanwide VM (PID 1 after hack/vm/stage1.sh's switch_root), read from the
# host's root like every other file of the guest. Mounts what a Linux userland expects,
# binds the guest kernel's modules (from hack/vm.sh's cache) over /lib/modules, sets the
# address on eth0 (the tap on the host's bridge; no default route: the guest reaches the
# host and the other VMs only), writes an sshd configuration with the host key and the
# authorized key hack/vm.sh generated, then becomes busybox init (respawns sshd, reaps
# orphans, powers off on `busybox poweroff`).
# Kernel arguments read: wwvm.name, wwvm.ip (CIDR), wwvm.state (the VM's directory on the
# host), wwvm.key (the client's public key), wwvm.modules (the modules of `uname -r`).
set -u
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH

declare -A kv=()
read -r -a words </proc/cmdline
for w in "${words[@]}"; do
  [[ $w == wwvm.*=* ]] && kv[${w%%=*}]=${w#*=}
done
say() { echo "wwvm: $*" >/dev/console; }
fail() {
  say "FAILED in guest init: $*"
  sleep 1
  echo o >/proc/sysrq-trigger
}

name=${kv[wwvm.name]:-wwvm}
state=${kv[wwvm.state]:-}
# read what the host put in the VM's directory before /run (where it lives) is covered
mkdir -p /etc/wwvm
install -m 0600 "$state/ssh_host_ed25519_key" /etc/wwvm/ssh_host_ed25519_key || fail "no host key in $state"
install -m 0644 "${kv[wwvm.key]:-}" /etc/wwvm/authorized_keys || fail "no client key ${kv[wwvm.key]:-}"

mount -t devpts -o gid=5,mode=0620,ptmxmode=0666 devpts /dev/pts 2>/dev/null ||
  { mkdir -p /dev/pts && mount -t devpts -o gid=5,mode=0620,ptmxmode=0666 devpts /dev/pts; }
mkdir -p /dev/shm && mount -t tmpfs -o mode=1777 shm /dev/shm
mount -t tmpfs -o mode=0755 run /run
mount -t tmpfs -o mode=1777 tmp /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null || true
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr

kver=$(uname -r)
mods=${kv[wwvm.modules]:-}
if [[ -d $mods ]]; then
  mkdir -p "/lib/modules/$kver"
  mount --bind "$mods" "/lib/modules/$kver" || fail "bind $mods"
fi
# /dev/net/tun exists only once tun is loaded (no udev here); netem is what the VM is for
modprobe -a tun sch_netem veth || say "modprobe tun sch_netem veth failed"

# root's shell in the guest: sh (dash). The host's ~/.bashrc (bash reads it for every ssh
# command) may run slow set-ups (pyenv init: ~30 s per command under TCG); dash reads none.
sed -i 's#^\(root:[^:]*:[^:]*:[^:]*:[^:]*:[^:]*\):.*#\1:/bin/sh#' /etc/passwd
hostname "$name"
echo "$name" >/etc/hostname
ip link set lo up
ip addr add "${kv[wwvm.ip]:?wwvm.ip= missing}" dev eth0 || fail "address on eth0"
ip link set eth0 up
sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true

mkdir -p /run/sshd && chmod 0755 /run/sshd
cat >/etc/wwvm/sshd_config <<EOF
ListenAddress ${kv[wwvm.ip]%/*}
HostKey /etc/wwvm/ssh_host_ed25519_key
AuthorizedKeysFile /etc/wwvm/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
PidFile /run/sshd.pid
MaxStartups 64
MaxSessions 64
ClientAliveInterval 30
EOF
cat >/etc/inittab <<EOF
::respawn:/usr/sbin/sshd -D -e -f /etc/wwvm/sshd_config
::shutdown:/bin/busybox killall5 -15
EOF
ulimit -n 1048576 2>/dev/null || ulimit -n 65536
say "ready: $name ${kv[wwvm.ip]} kernel $kver"
exec /bin/busybox init
