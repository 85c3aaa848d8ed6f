#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# With the daemon running on real KSM: a victim's duplicates merge quickly
# (the daemon sees it enter KSM through its private tracefs instance and
# bursts), ksmd's rate comes back down once full scans stop finding new
# sharing, the decisions say why, a fork of the merged victim starts no
# burst, and SIGTERM puts every knob back and removes the tracefs instance.
set -u
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"
. "$SOURCE_ROOT/tests/lib/wait.sh"

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin tuning
victim_pid=
fail_log_lines=200

tracefs=/sys/kernel/tracing
if [ ! -d "$tracefs/events" ]; then
        mount -t tracefs nodev "$tracefs" 2>/dev/null || echo "note: no tracefs; the daemon tunes from counters alone"
fi

# The state the machine is left in between tests.
echo 0 > $KSM/run
echo 100 > $KSM/pages_to_scan
echo 20 > $KSM/sleep_millisecs
echo none > $KSM/advisor_mode
before=$(ksm_guard_knobs_now)
rate() { echo $(( $(cat $KSM/pages_to_scan) * 1000 / ($(cat $KSM/sleep_millisecs) + 1) )); }

mkdir -p "$tmp/run" "$tmp/policy.d"
daemon_conf "$tmp/k.conf" Interval=1s LogLevel=debug
daemon_start "$tmp/log" --config "$tmp/k.conf" || fail "daemon did not get ready"
[ "$(cat $KSM/run)" = 1 ] || fail "daemon did not start ksmd"
# Nothing to merge yet: the daemon must not scan hard.
sleep 1
[ "$(rate)" -le 5000 ] || fail "idle rate $(rate) pages/s is above the kernel defaults"
if [ -d "$tracefs/instances/ksmtuned2" ]; then have_trace=1; else have_trace=0; fi

# ksmd's CPU time in ms (utime + stime): merging takes what ksmd needs to
# scan, which an emulated guest makes 50 times longer; the wake-up is about
# the rest, the time ksmd is not yet scanning.
ksmd_pid=$(pgrep -x ksmd | head -1)
ksmd_cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); print int(($12 + $13) * 1000 / hz) }' "/proc/$ksmd_pid/stat"; }
# The victim: 2048 unique pages x 4 copies, marked MADV_MERGEABLE by itself.
ksmd0=$(ksmd_cpu_ms)
start=$(date +%s%N)
exec 8> >(exec "$KSM_WORKLOAD" --unique 2048 --copies 4 --seed 11 > "$tmp/victim")
for _ in $(seq 100); do grep -q ready "$tmp/victim" 2>/dev/null && break; sleep 0.05; done
victim_pid=$(awk '/ready/ {print $2}' "$tmp/victim")
[ -n "$victim_pid" ] || fail "victim did not start"
ksm_guard_track "$victim_pid"
# From its "ready" on: filling 32 MiB is the victim's own time (seconds in
# a loaded emulated guest), not the daemon's; it marked them just before.
start=$(date +%s%N)
merged=
for _ in $(seq 300); do
        [ "$(cat /proc/$victim_pid/ksm_merging_pages)" -ge 8192 ] && { merged=1; break; }
        sleep 0.05
done
took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
ksmd_ms=$(( $(ksmd_cpu_ms) - ksmd0 ))
[ -n "$merged" ] || fail "victim not merged within 15 s ($(cat /proc/$victim_pid/ksm_merging_pages) of 8192 pages)"
echo "victim merged in $took_ms ms, ksmd busy $ksmd_ms ms of it"
grep -q "burst: " "$tmp/log" || fail "no burst decision logged"
if [ "$have_trace" = 1 ]; then
        grep -q "burst: pid $victim_pid (ksm-workload) entered KSM" "$tmp/log" || fail "ksm_enter did not start the burst"
        # Seen at once, not at the next 1 s tick: the time ksmd was not
        # scanning stays well under three ticks.
        [ $((took_ms - ksmd_ms)) -lt 3000 ] ||
                fail "merging took $took_ms ms with the ksm_enter wake-up, ksmd busy only $ksmd_ms ms of it"
fi

# Once full scans find nothing new, the rate comes back down.
down=
for _ in $(seq 100); do
        [ "$(rate)" -le 5000 ] && grep -q "maintenance: " "$tmp/log" && { down=1; break; }
        sleep 0.1
done
[ -n "$down" ] || fail "ksmd's rate did not come back down: $(cat $KSM/pages_to_scan) pages / $(cat $KSM/sleep_millisecs) ms"
grep -Eq "backing off: ([0-9]* full scans without new sharing|the last full scan left .* volatile and met no new memory)" \
        "$tmp/log" || fail "no back-off decision logged"
echo "back down to $(rate) pages/s: $(grep -o 'backing off: .*' "$tmp/log" | head -1)"
# and stays down while nothing changes
sleep 3
[ "$(rate)" -le 5000 ] || fail "rate went up again without new memory: $(rate) pages/s"
[ "$(cat /proc/$victim_pid/ksm_merging_pages)" -ge 8192 ] || fail "victim lost its merged pages"

# A fork of a process in KSM puts the child's mm into KSM in the parent's
# name (ksm_fork). The child's pages are its parent's, shared copy-on-write:
# nothing to merge, and no burst (there was one per fork: 3.2 s of ksmd in
# 40 s for a 256 MiB process forking every 2 s). Told apart by the proc
# connector's fork event.
if [ "$have_trace" = 1 ] && grep -q "Process discovery: proc connector events" "$tmp/log"; then
        bursts=$(grep -c "^ksmtuned2: burst: " "$tmp/log")
        forked_logged() { grep -q "ksm_enter: pid $victim_pid (ksm-workload) forked pid $1," "$tmp/log"; }
        ticks() { grep -c "^ksmtuned2: tick: " "$tmp/log"; }
        for i in 1 2 3; do
                echo fork >&8
                wait_for 5 eval '[ "$(grep -c "^forked " "$tmp/victim")" -ge '$i' ]' || fail "the victim did not fork"
                child=$(awk '/^forked/ {c = $2} END {print c}' "$tmp/victim")
                wait_for 10 forked_logged "$child" || fail "fork $i (child $child) not told apart from a process entering KSM"
        done
        # the tick that told the last one and the one after it have decided
        t0=$(ticks)
        wait_for 10 eval '[ "$(ticks)" -ge $((t0 + 2)) ]' || fail "no tick after the forks"
        [ "$(grep -c "^ksmtuned2: burst: " "$tmp/log")" = "$bursts" ] ||
                fail "a fork of the victim started a burst: $(grep "^ksmtuned2: burst: " "$tmp/log" | tail -1)"
        [ "$(rate)" -le 5000 ] || fail "rate went up after the forks: $(rate) pages/s"
        echo "3 forks of the merged victim: told apart (child $child last), no burst, rate $(rate) pages/s"
else
        echo "note: no tracefs instance or no proc connector: forks are not told apart here"
fi

kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
[ "$rc" = 0 ] || fail "daemon exited $rc on SIGTERM"
after=$(ksm_guard_knobs_now)
[ "$before" = "$after" ] || fail "knobs differ after SIGTERM: before [$before] after [$after]"
[ ! -e "$tracefs/instances/ksmtuned2" ] && [ ! -e "$tracefs/instances/ksmtuned2-locks" ] || fail "tracefs instance left behind"
echo "SIGTERM: knobs restored, tracefs instance removed"
