#!/bin/sh
# shellcheck shell=sh
# /init of a wanwide VM's initramfs (hack/vm.sh builds it: busybox-static, this file, the
# modules listed in /mods/order). Mounts the host's root (9p, read-only) under a tmpfs
# overlay and hands over to the guest's init on that root (wwvm.init=, hack/vm/guest-init.sh).
# Kernel arguments read: wwvm.probe=1 (print "wwvm: probe ok" and power off: the KVM probe),
# wwvm.init=PATH, wwvm.overlay=SIZE (the tmpfs holding every write, default 75%).
PATH=/bin
export PATH
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev

arg() { # arg NAME: the value of NAME=... on the kernel command line
  # shellcheck disable=SC2013  # words, not lines
  for a in $(cat /proc/cmdline); do
    case $a in "$1"=*) echo "${a#*=}" ;; esac
  done
}
fail() {
  echo "wwvm: FAILED in stage 1: $*" >/dev/console
  sleep 1
  poweroff -f
}

echo "wwvm: stage 1" >/dev/console
if [ "$(arg wwvm.probe)" = 1 ]; then
  echo "wwvm: probe ok" >/dev/console
  poweroff -f
fi
while read -r m; do
  insmod "/mods/$m" || fail "insmod $m"
done </mods/order
mkdir -p /lower /rw /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot /lower || fail "mount 9p hostroot"
overlay=$(arg wwvm.overlay)
mount -t tmpfs -o "mode=0755,size=${overlay:-75%}" rw /rw || fail "tmpfs /rw"
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
  fail "overlay on the host's root"
init=$(arg wwvm.init)
if [ -z "$init" ] || [ ! -x "/newroot$init" ]; then
  fail "wwvm.init=$init is not executable on the host's root"
fi
mount --move /dev /newroot/dev
mount --move /sys /newroot/sys
mount --move /proc /newroot/proc
exec switch_root /newroot "$init"
