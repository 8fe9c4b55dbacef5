#!/bin/busybox sh
# /init of the guest-kernel harness's initramfs (tests/node/image.py builds it; busybox-static).
# Loads the modules image.py ordered from modules.dep, mounts the host's root (virtio-9p, tag
# "hostroot", read-only) under a tmpfs overlay, copies the session's tree (harness.overlay= on
# the kernel command line) over it, brings the loopback up (nothing else does before systemd's
# units run, and the guest has no other interface), and switches root to the host's systemd.
# Any failure powers the guest off at once: the host sees the VM exit and reads this console.

/bin/busybox --install -s /bin
export PATH=/bin

fail() {
    echo "harness-init: FAILED: $*"
    echo o >/proc/sysrq-trigger
    poweroff -f
}

mount -t proc proc /proc || fail "mount /proc"
mount -t sysfs sysfs /sys || fail "mount /sys"
mount -t devtmpfs devtmpfs /dev || fail "mount /dev"

while read -r module; do
    insmod "/modules/$module" || fail "insmod $module"
done </modules.order

overlay_src=
memory_rw=
repo=
for word in $(cat /proc/cmdline); do
    case "$word" in
        harness.overlay=*) overlay_src="${word#harness.overlay=}" ;;
        harness.rwsize=*) memory_rw="${word#harness.rwsize=}" ;;
        harness.repo=*) repo="${word#harness.repo=}" ;;
    esac
done

mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /lower \
    || fail "mount the host root over 9p"
mount -t tmpfs -o "mode=0755,size=${memory_rw:-50%}" rw /rw || fail "mount the overlay's tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot \
    || fail "mount the overlay root"

if [ -n "$overlay_src" ]; then
    [ -d "/lower$overlay_src" ] || fail "harness.overlay=$overlay_src is not a directory"
    cp -a "/lower$overlay_src/." /newroot/ || fail "copy $overlay_src over the root"
fi
if [ -f /newroot/etc/harness/binds ]; then
    while read -r src dst; do
        mount --bind "/newroot$src" "/newroot$dst" || fail "bind $src on $dst"
    done </newroot/etc/harness/binds
fi

# The host's /tmp and /var/tmp stay out of reach: the guest's own, and nothing walks the host's.
# A repository checked out under them (harness.repo=, e.g. CI's clone in /tmp) is kept at its
# own path, through the overlay like every other host file.
case "$repo" in
    /tmp/*|/var/tmp/*)
        mkdir -p /repo && mount --bind "/newroot$repo" /repo || fail "keep the repository $repo" ;;
    *) repo= ;;
esac
mount -t tmpfs -o mode=1777 tmp /newroot/tmp || fail "tmpfs on /tmp"
mount -t tmpfs -o mode=1777 vartmp /newroot/var/tmp || fail "tmpfs on /var/tmp"
if [ -n "$repo" ]; then
    mkdir -p "/newroot$repo" && mount --move /repo "/newroot$repo" \
        || fail "put the repository back at $repo"
fi

# Markers of a container in the host's root (this host may itself run in one) would make
# systemd take the guest for a container: no kernel command line, no systemd.unit=.
rm -f /newroot/.dockerenv /newroot/run/.containerenv /newroot/run/systemd/container

ip link set lo up || fail "loopback up"

mount --move /dev /newroot/dev || fail "move /dev"
umount /sys
umount /proc
for systemd in /lib/systemd/systemd /usr/lib/systemd/systemd; do
    if [ -x "/newroot$systemd" ]; then
        exec switch_root /newroot "$systemd"
    fi
done
fail "no systemd in the host root"
