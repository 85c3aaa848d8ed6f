#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# One process whose mmap_lock is held delays nobody else's merging: the
# merge actuator reads ksm_stat and maps with a deadline, marks the process
# slow, and discovery plans no action for it until the slow back-off passed.
#
# The hog (tests/helpers/mmap-lock-hog) holds its mmap_lock for as long as
# this test wants: a thread stuck in a FUSE read under mmap_read_lock, then
# a writer queued behind it, so every later reader of ksm_stat blocks. It is
# first left readable until the daemon has read its ksm_stat (Explain says
# merging=0), then locked, then grown past its policy's MinAnonMiB, so its
# enabling is planned while the lock is held; the victim starts after that,
# so its action queues behind the hog's. Before the fix the actuator waited
# for the hog's ksm_stat for as long as the lock was held (here: until the
# test ends) and the victim was never enabled.
set -u
command -v dbus-daemon >/dev/null || { echo "SKIP: no dbus-daemon"; exit 77; }
command -v busctl >/dev/null || { echo "SKIP: no busctl"; exit 77; }
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/ksm-flags.sh"
. "$SOURCE_ROOT/tests/lib/private-bus.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"
HOG=${KSM_MMAP_LOCK_HOG:-$BUILD_ROOT/tests/helpers/mmap-lock-hog}
IFACE=org.ksmtuned2.Manager1
BOUND_MS=4000

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin slow
chmod 755 "$tmp"
victim_pid= hog_pid=
# EOF on fd 7 releases the lock (the hog aborts its FUSE connection), kills
# and reaps its target; SIGTERM does the same.
test_cleanup() {
        [ -n "$victim_pid" ] && kill -KILL "$victim_pid" 2>/dev/null
        exec 7>&-
        [ -n "$hog_pid" ] && kill -TERM "$hog_pid" 2>/dev/null
        private_bus_stop
}
. "$SOURCE_ROOT/tests/lib/wait.sh"
ms() { echo $(( $(date +%s%N) / 1000000 )); }
# Never of the hog while it is locked: the read would wait with the rest.
merging() { [ "$(ksm_flag "$1" merge_any)" = yes ]; }
explain() { busctl --system call org.ksmtuned2 /org/ksmtuned2 $IFACE Explain u "$1" 2>/dev/null; }
explained_merging_no() { explain "$1" | grep -q '"merging" i 0'; }
explained_slow() { explain "$1" | grep -q '"slow" b true'; }
hog_says() { wait_for 10 grep -qx "$1" "$tmp/hog.out"; }

mkdir -p "$tmp/policy.d" "$tmp/run"
private_bus_start "$tmp"
cp "$KSM_INJECT_TARGET" "$tmp/ksmt2-victim"
cat > "$tmp/policy.d/40-hog.policy" <<POL
[Match]
Comm=lock-hog-target
[Merge]
Mode=auto
MinAnonMiB=32
Method=inject
POL
cat > "$tmp/policy.d/50-victim.policy" <<POL
[Match]
Comm=ksmt2-victim
[Merge]
Mode=always
Method=inject
POL
daemon_conf "$tmp/k.conf" Interval=300ms

mkfifo "$tmp/hog.in"
"$HOG" < "$tmp/hog.in" > "$tmp/hog.out" 2> "$tmp/hog.err" &
hog_pid=$!
exec 7> "$tmp/hog.in"
wait_for 10 grep -q '^target ' "$tmp/hog.out" || fail "hog did not start: $(cat "$tmp/hog.err")"
target=$(sed -n 's/^target //p' "$tmp/hog.out")

daemon_start "$tmp/log" --config "$tmp/k.conf" || fail "daemon did not start"
# Readable until the daemon knows it does not merge yet (the plan needs it).
wait_for 10 explained_merging_no "$target" || fail "the daemon never read the hog's ksm_stat"
echo lock >&7
hog_says locked || fail "the hog's writer did not block"
echo grow >&7
hog_says grown || fail "the hog did not grow"
# Its enabling is planned at the next tick, the victim's after its own
# first ksm_stat read, a tick later at the earliest: behind the hog's.
t0=$(ms)
mkfifo "$tmp/victim.in"
"$tmp/ksmt2-victim" < "$tmp/victim.in" > "$tmp/victim.out" 2>&1 &
victim_pid=$!
exec 8> "$tmp/victim.in"
wait_for 15 merging "$victim_pid"
t1=$(ms)
merging "$victim_pid" || fail "the victim was not enabled within 15 s behind the locked hog"
echo "victim enabled $((t1 - t0)) ms after its start, with the hog's mmap_lock held"
[ $((t1 - t0)) -le $BOUND_MS ] || fail "the victim waited $((t1 - t0)) ms (bound $BOUND_MS ms)"
grep -q "pid $target (lock-hog-target): reading its ksm_stat took over 1000 ms (mmap_lock busy): not touched, marked slow" "$tmp/log" ||
        grep -q "pid $target (lock-hog-target):.*marked slow" "$tmp/log" || fail "the hog was not reported slow"
explained_slow "$target" || fail "Explain does not say the hog is slow"
explain "$target" | grep -q '"merging" i 1' && fail "the hog merges although its lock was held"
# Slow: neither read nor acted on again during the back-off.
n=$(grep -c "pid $target (lock-hog-target): reading its ksm_stat took over" "$tmp/log")
sleep 2
[ "$(grep -c "pid $target (lock-hog-target): reading its ksm_stat took over" "$tmp/log")" = "$n" ] ||
        fail "the actuator tried the slow hog again within the back-off"
echo "hog: $(grep -o "pid $target (lock-hog-target): [^(]*(mmap_lock busy)[^(]*" "$tmp/log" | head -1)"
kill -TERM "$daemon_pid"
wait "$daemon_pid" || fail "daemon exited $? on SIGTERM"
daemon_pid=
echo "ok"
