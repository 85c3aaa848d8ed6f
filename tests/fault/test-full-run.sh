#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A full runtime directory (a tmpfs /run out of space) on real KSM: the
# daemon must not change a knob whose original value it cannot save, since
# a crash would then leave the knob changed with nothing to restore it
# (the next instance restores what saved-knobs says). It says so, once,
# naming the file and the reason; once there is room it saves and tunes;
# SIGKILLed then, the next instance restores every knob at its stop.
# What it switched merging on for (RuntimeDirectory=/enabled, for
# UnmergeOnExit= after a restart) cannot be written either; that write is
# tried again until it succeeds, not only at the file's next change.
set -u
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"
. "$SOURCE_ROOT/tests/lib/wait.sh"
. "$SOURCE_ROOT/tests/lib/inject-target.sh"

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin full-run
test_cleanup() { wait 2>/dev/null; mountpoint -q "$tmp/run" && umount "$tmp/run"; }
fail_log_lines=30

mkdir -p "$tmp/run" "$tmp/policy.d"
mount -t tmpfs -o size=64k,mode=0755 ksmtuned2-test "$tmp/run" || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
# every block taken
dd if=/dev/zero of="$tmp/run/filler" bs=4k 2>/dev/null
[ "$(stat -f -c %a "$tmp/run")" = 0 ] || fail "the tmpfs still has $(stat -f -c %a "$tmp/run") free blocks"

# Knobs at values the daemon will change (it starts ksmd and sets its own
# sleep), and the rest as they are.
echo 0 > $KSM/run
echo 1234 > $KSM/pages_to_scan
echo 77 > $KSM/sleep_millisecs
before=$(ksm_guard_knobs_now)

daemon_conf "$tmp/k.conf" Interval=100ms LogLevel=debug \
        '[Tuning]' Tracepoints=no

# A process the daemon switches merging on for (a comm of our own, so that
# nothing else on this shared machine matches), running as nobody.
chmod 755 "$tmp"
cp "$KSM_INJECT_TARGET" "$tmp/ksmt2-fulltgt"
cat > "$tmp/policy.d/50-target.policy" <<POL
[Match]
Comm=ksmt2-fulltgt
[Merge]
Mode=always
Method=inject
POL
target_start "$tmp/ksmt2-fulltgt"

daemon_start "$tmp/log" --config "$tmp/k.conf" || fail "the daemon did not start with a full $tmp/run"
grep -q "Cannot save the original [a-z_]*=[0-9]* in $tmp/run/saved-knobs: No space left on device; not changing it" "$tmp/log" ||
        fail "no warning that the original could not be saved in $tmp/run/saved-knobs"
# READY=1 comes after the first tick's knob writes: they were refused by
# then. Ten more ticks must not change anything either.
[ "$(ksm_guard_knobs_now)" = "$before" ] || fail "knobs changed without their originals saved: $(ksm_guard_knobs_now), were $before"
ticks=$(grep -c "Scanned [0-9]* processes" "$tmp/log")
for _ in $(seq 100); do [ "$(grep -c "Scanned [0-9]* processes" "$tmp/log")" -ge $((ticks + 10)) ] && break; sleep 0.1; done
[ "$(ksm_guard_knobs_now)" = "$before" ] || fail "knobs changed later without their originals saved: $(ksm_guard_knobs_now)"
n=$(grep -c "Cannot save the original" "$tmp/log")
[ "$n" = 1 ] || fail "the warning came $n times, want once"
echo "ok: a full $tmp/run: no knob changed, said once: $(grep -o "Cannot save the original.*" "$tmp/log" | head -1 | cut -c1-120)..."
ledger_failed() { grep -q "Cannot write $tmp/run/enabled (what this daemon switched on, .*): No space left on device" "$tmp/log"; }
wait_for 20 ledger_failed || fail "no warning that $tmp/run/enabled could not be written (target merging: $(grep -c . "$tmp/run/enabled" 2>/dev/null))"
[ "$(grep -c "Cannot write $tmp/run/enabled" "$tmp/log")" = 1 ] || fail "the ledger's warning came more than once"

rm "$tmp/run/filler"
# written again with room, not only at its next change (there is none)
wait_for 15 grep -q "Wrote $tmp/run/enabled again" "$tmp/log" || fail "$tmp/run/enabled not written again within 15 s of room"
grep -q "^$target_pid [0-9]* inject " "$tmp/run/enabled" || fail "$tmp/run/enabled lacks the target: $(cat "$tmp/run/enabled")"
echo "ok: what it switched on, written again once there was room: $(cat "$tmp/run/enabled")"
for _ in $(seq 100); do grep -q "Saved the original KSM knob values" "$tmp/log" && break; sleep 0.1; done
grep -q "Saved the original KSM knob values in $tmp/run/saved-knobs; changing them again" "$tmp/log" ||
        fail "no knob saved within 10 s of room in $tmp/run"
for _ in $(seq 100); do [ "$(ksm_knob run)" = 1 ] && break; sleep 0.1; done
[ "$(ksm_knob run)" = 1 ] || fail "run not set once its original could be saved"
grep -qx "run=0" "$tmp/run/saved-knobs" || fail "saved-knobs lacks run=0: $(cat "$tmp/run/saved-knobs")"
echo "ok: with room: saved ($(tr '\n' ' ' < "$tmp/run/saved-knobs")) and tuning: $(ksm_guard_knobs_now)"

kill -KILL "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=
[ "$(ksm_guard_knobs_now)" != "$before" ] || fail "the knobs were back before any restore (nothing to test)"
daemon_start "$tmp/log" --config "$tmp/k.conf" || fail "the second instance did not start"
kill -TERM "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=
[ "$(ksm_guard_knobs_now)" = "$before" ] || fail "after SIGKILL and a restarted instance's stop: $(ksm_guard_knobs_now), want $before"
echo "ok: SIGKILLed, the next instance restored every knob at its stop"
# the target was never harmed: its own checks pass
target_stop
