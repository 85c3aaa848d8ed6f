#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# build-rootfs.sh [BINARY...]: the test guests' root filesystem, a Debian 12
# tree made once by debootstrap (tests/lib/debian-tree.sh) and cached in
# $KSMTUNED2_CI_CACHE/rootfs/bookworm-<key> (default /var/cache/ksmtuned2-ci),
# key = hash of its package list and this script; prints its path.
#
# It holds what the project's binaries and tests run on (their libraries,
# and those of BINARY..., python3 for notify-wait.py, dbus-daemon, procps,
# util-linux, meson and ninja for `meson test` in the guest) and nothing of
# the project: the guest mounts the host's checkout and build directory over
# virtio-9p at the same paths. The guest mounts it read-only, so runs share it.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${KSMTUNED2_CI_CACHE:-/var/cache/ksmtuned2-ci}/rootfs
. "$HERE/../lib/debian-tree.sh"

packages="bash,coreutils,util-linux,procps,dbus,python3,meson,ninja-build,kmod"
packages="$packages,libsystemd0,libnl-3-200,libnl-genl-3-200,libcap2,libseccomp2,libinih1,libcmocka0"
if [ $# -gt 0 ]; then
        extra=$(debian_lib_packages "$@")
        [ -n "$extra" ] && packages="$packages,$extra"
fi
packages=$(echo "$packages" | tr ',' '\n' | sort -u | tr '\n' ',' | sed 's/,$//')
key=$( { echo "$packages"; sha256sum < "$HERE/build-rootfs.sh"; } | sha256sum | cut -c1-16)
tree=$CACHE/bookworm-$key
mkdir -p "$CACHE"
exec 8>"$tree.lock"
flock 8
rc=0
debian_tree_ensure "$tree" "$packages" >&2 || rc=$?
[ $rc = 0 ] || exit $rc
# The guest's first process: mounts the run directory that run-in-guest.sh
# shares (tag ksmrun) and hands over to the init there, so that changing the
# guest's init does not rebuild this tree.
stub='#!/bin/sh
mount -t 9p -o trans=virtio,version=9p2000.L ksmrun /ksmtuned2-run || echo "ksmtuned2-vm-init: cannot mount the run directory" >&2
exec /bin/bash /ksmtuned2-run/guest-init.sh'
if [ "$(cat "$tree/sbin/ksmtuned2-vm-init" 2>/dev/null)" != "$stub" ]; then
        mkdir -p "$tree/ksmtuned2-run"
        printf '%s\n' "$stub" > "$tree/sbin/ksmtuned2-vm-init.tmp"
        chmod 755 "$tree/sbin/ksmtuned2-vm-init.tmp"
        mv "$tree/sbin/ksmtuned2-vm-init.tmp" "$tree/sbin/ksmtuned2-vm-init"
fi
echo "$tree"
