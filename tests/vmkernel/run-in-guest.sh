#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# run-in-guest.sh KERNEL CMD [ARG...]: boots KERNEL under QEMU (TCG), runs
# CMD as root inside and exits with its exit status; its stdout and stderr
# come out on ours. KERNEL is "stock" or "patched" (built and cached by
# build-kernel.sh on first use) or the path of a bzImage.
#
# The guest's root is the cached Debian tree of build-rootfs.sh, read-only;
# /run, /tmp, /var/tmp, /var/log and /root are tmpfs; proc, sysfs, tracefs
# and cgroup2 (at /sys/fs/cgroup) are mounted. This checkout, $BUILD_ROOT
# (when set) and the directories in KSMTUNED2_VM_SHARE (colon-separated) are
# mounted read-write over virtio-9p at the same paths, so a build directory
# runs there as it is. CMD starts in the current directory when it is shared
# (else /), with PATH, HOME=/root, and the variables named in KSMTUNED2_VM_ENV
# (space-separated) copied from our environment.
#
#   KSMTUNED2_VM_TIMEOUT   seconds before QEMU is killed (default 900): exit 124
#   KSMTUNED2_VM_SMP, KSMTUNED2_VM_MEM   guest CPUs (2) and memory (4G)
#   KSMTUNED2_VM_CONSOLE   file to keep the guest's console in
#   KSMTUNED2_VM_TCG_THREAD   "single" (default) or "multi" (below)
# Exit 125: the guest did not run CMD (no qemu, no kernel, boot failure; the
# console's tail is printed). QEMU is killed on every exit path, and dies
# with this script if it is SIGKILLed.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
die() { echo "run-in-guest: $*" >&2; exit 125; }
[ $# -ge 2 ] || die "usage: run-in-guest.sh stock|patched|BZIMAGE CMD [ARG...]"
kernel=$1
shift
QEMU=${QEMU:-qemu-system-x86_64}
command -v "$QEMU" >/dev/null || die "$QEMU not installed (package qemu-system-x86)"
case $kernel in
stock|patched) kernel=$("$HERE/build-kernel.sh" "$kernel") || die "no $kernel kernel";;
esac
[ -f "$kernel" ] || die "no kernel image $kernel"
rootfs=$("$HERE/build-rootfs.sh") || die "no root filesystem"

timeout=${KSMTUNED2_VM_TIMEOUT:-900}
# Run directories left by a run that was SIGKILLed (which skips the EXIT
# trap); a live run holds its directory's lock.
for d in /tmp/ksmtuned2-vm.*; do
        [ -d "$d" ] && flock -n "$d/.lock" true 2>/dev/null && rm -rf "$d"
done
RUN=$(mktemp -d /tmp/ksmtuned2-vm.XXXXXX) || die "mktemp"
exec 6>"$RUN/.lock"
flock 6
qemu_pid=
tails=
cleanup() {
        if [ -n "$qemu_pid" ]; then
                kill -TERM "$qemu_pid" 2>/dev/null
                for _ in $(seq 50); do kill -0 "$qemu_pid" 2>/dev/null || break; sleep 0.1; done
                kill -KILL "$qemu_pid" 2>/dev/null
                wait "$qemu_pid" 2>/dev/null
        fi
        for p in $tails; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
        [ -n "${KSMTUNED2_VM_CONSOLE:-}" ] && cp "$RUN/console.log" "$KSMTUNED2_VM_CONSOLE" 2>/dev/null
        rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# What the guest runs: its init, the command (NUL-separated), the
# environment, the directory, and the 9p shares to mount.
cp "$HERE/guest-init.sh" "$RUN/guest-init.sh"
printf '%s\0' "$@" > "$RUN/cmd"
: > "$RUN/env"
for v in ${KSMTUNED2_VM_ENV:-}; do
        [ -n "${!v+set}" ] && printf '%s=%s\n' "$v" "${!v}" >> "$RUN/env"
done
shares=$SRC
[ -n "${BUILD_ROOT:-}" ] && shares="$shares:$BUILD_ROOT"
[ -n "${KSMTUNED2_VM_SHARE:-}" ] && shares="$shares:$KSMTUNED2_VM_SHARE"
virtfs=()
: > "$RUN/mounts"
n=0
cwd=/
IFS=: read -r -a share_list <<< "$shares"
resolved=()
for d in "${share_list[@]}"; do
        [ -n "$d" ] || continue
        resolved+=("$(realpath -e "$d")") || die "cannot share $d: no such directory"
done
# Shortest first: a directory inside one already shared is mounted with it.
mapfile -t resolved < <(printf '%s\n' "${resolved[@]}" | awk '{ print length, $0 }' | sort -n -u | cut -d' ' -f2-)
added=()
for d in "${resolved[@]}"; do
        nested=
        for s in "${added[@]}"; do case $d/ in "$s"/*) nested=1;; esac; done
        [ -n "$nested" ] && continue
        # The mount point, in the tree the guest mounts read-only.
        mkdir -p "$rootfs$d" || die "cannot make the mount point $rootfs$d"
        virtfs+=(-virtfs "local,path=$d,mount_tag=share$n,security_model=passthrough,id=share$n")
        echo "share$n $d rw" >> "$RUN/mounts"
        added+=("$d")
        n=$((n + 1))
        case $PWD/ in "$d"/*) cwd=$PWD;; esac
done
echo "$cwd" > "$RUN/cwd"
: > "$RUN/stdout"
: > "$RUN/stderr"

t0=$(date +%s.%N)
# --pdeathsig: QEMU dies with this script even when it is SIGKILLed.
# mem-merge=off: the guest's RAM stays out of the host's KSM. Guests run
# beside host tests that need pages_shared at 0 (max_page_sharing can only
# be written then, EBUSY otherwise) and count the host's merged pages.
# thread=single: QEMU 7.2's multi-threaded TCG let a guest CPU run kernel
# text that another CPU had already patched back. The daemon's kprobe on
# lock_vma_under_rcu (armed for a contention window, then disarmed and
# removed) then panicked the patched guest with "Oops: int3" at
# lock_vma_under_rcu+0x1 on both CPUs at once, in user page faults, the
# int3 already gone from memory when the oops printed it: a CPU executing
# a breakpoint after text_poke_sync() had made every CPU see its removal.
# In CI once (2026-12-03), here 1 in 3 runs of the "fixes" set, 3 of 3
# runs of kernel-fixes + remote-methods repeated (crash after 157 s, and
# after 219 s with debug.kprobes-optimization=0, so not the optprobes);
# with thread=single none in 610 s of the same loop. The single thread
# runs both guest CPUs in turn: the "fixes" set takes ~110 s instead of
# ~75 s in the patched guest.
setpriv --pdeathsig KILL -- "$QEMU" -nodefaults -no-user-config -display none -no-reboot \
        -machine pc,mem-merge=off -accel tcg,thread="${KSMTUNED2_VM_TCG_THREAD:-single}" -smp "${KSMTUNED2_VM_SMP:-2}" -m "${KSMTUNED2_VM_MEM:-4G}" \
        -kernel "$kernel" \
        -append "console=ttyS0 quiet panic=-1 root=rootfs rootfstype=9p rootflags=trans=virtio,version=9p2000.L,msize=512000,cache=loose ro init=/sbin/ksmtuned2-vm-init" \
        -serial "file:$RUN/console.log" \
        -fsdev "local,id=rootfs,path=$rootfs,security_model=passthrough,readonly=on" \
        -device virtio-9p-pci,fsdev=rootfs,mount_tag=rootfs \
        -virtfs "local,path=$RUN,mount_tag=ksmrun,security_model=passthrough,id=ksmrun" \
        "${virtfs[@]}" </dev/null >"$RUN/qemu.log" 2>&1 &
qemu_pid=$!
# The command's output as it comes.
tail -n +1 -f --pid=$qemu_pid "$RUN/stdout" &
tails="$!"
tail -n +1 -f --pid=$qemu_pid "$RUN/stderr" >&2 &
tails="$tails $!"
deadline=$(( $(date +%s) + timeout ))
while kill -0 "$qemu_pid" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do
        sleep 0.2
done
if kill -0 "$qemu_pid" 2>/dev/null; then
        echo "run-in-guest: timeout after $timeout s; console:" >&2
        tail -20 "$RUN/console.log" >&2
        exit 124
fi
wait "$qemu_pid"
qemu_rc=$?
qemu_pid=
for p in $tails; do wait "$p" 2>/dev/null; done
tails=
t1=$(date +%s.%N)
if [ ! -f "$RUN/rc" ]; then
        echo "run-in-guest: the guest did not run the command (qemu exit $qemu_rc); qemu: $(cat "$RUN/qemu.log"); console:" >&2
        tail -30 "$RUN/console.log" >&2
        exit 125
fi
rc=$(cat "$RUN/rc")
echo "run-in-guest: $(basename "$(dirname "$kernel")"): exit $rc after $(echo "$t1 - $t0" | bc | cut -c1-6) s in the guest" >&2
exit "$rc"
