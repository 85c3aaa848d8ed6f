#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A Method=inject target whose only thread sits in D (a vfork() parent whose
# child pause()s: it cannot stop for ptrace until the child is gone) must
# not hold the merge actuator, nor the daemon's stop:
#  1. SIGTERM while the worker waits for it: the daemon exits within 5 s
#     with every knob restored, and leaves the target neither stopped nor
#     traced.
#  2. The worker gives up after its stop timeout (ETIMEDOUT, "left
#     untouched"), the target is never stopped; SIGTERM afterwards: the same.
#  3. A normal target that comes after the stuck one gets merged meanwhile;
#     once the stuck one leaves D (its vfork child killed), the worker
#     detaches it within a second; UnmergeOnExit=yes still unmerges the
#     normal target at the stop, which stays within 5 s.
set -u
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin stuck
wait_for() { # tenths-of-a-second command...
        local n=$1; shift
        for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
        return 1
}
state() { sed 's/.*) //' "/proc/$1/stat" | cut -c1; }
tracer() { sed -n 's/^TracerPid:\t//p' "/proc/$1/status"; }
untraced() { [ "$(tracer "$1")" = 0 ]; }
traced() { [ "$(tracer "$1")" != 0 ]; }
not_stopped() { case $(state "$1") in T|t|Z|X) return 1;; esac; }
log_has() { grep -q -e "$1" "$tmp/log"; }
merge_any() { sed -n 's/^ksm_merge_any: //p' "/proc/$1/ksm_stat" 2>/dev/null; }
is_merging() { [ "$(merge_any "$1")" = yes ]; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Knobs the daemon changes, at values that are not its targets.
echo 0 > $KSM/use_zero_pages
echo 1 > $KSM/smart_scan
echo 1 > $KSM/run
before=$(ksm_guard_knobs_now)

mkdir -p "$tmp/run" "$tmp/policy.d"
# Comms of our own, so that nothing else on this shared machine matches.
cp "$VFORK_STUCK" "$tmp/ksmt2-vfork"
cp "$KSM_INJECT_TARGET" "$tmp/ksmt2-ok"
for c in ksmt2-vfork ksmt2-ok; do
        cat > "$tmp/policy.d/50-$c.policy" <<POL
[Match]
Comm=$c
[Merge]
Mode=always
Method=inject
POL
done
write_conf() {
        daemon_conf "$tmp/k.conf" Interval=200ms LogLevel=debug "UnmergeOnExit=$1" \
                '[Ksm]' UseZeroPages=yes SmartScan=no
}

# Starts a vfork-stuck target; sets stuck_pid and child_pid.
start_stuck() {
        "$tmp/ksmt2-vfork" > "$tmp/$1.out" 2>&1 &
        stuck_pid=$!
        pids="$pids $stuck_pid"
        wait_for 50 grep -q '^child' "$tmp/$1.out" || fail "$1: vfork child did not start"
        child_pid=$(sed -n 's/^child //p' "$tmp/$1.out")
        pids="$pids $child_pid"
        wait_for 20 sh -c "[ \"\$(sed 's/.*) //' /proc/$stuck_pid/stat | cut -c1)\" = D ]" ||
                fail "$1: vfork parent not in D ($(state "$stuck_pid"))"
}
start_daemon() {
        : > "$tmp/log"
        daemon_start "$tmp/log" --config "$tmp/k.conf" || fail "daemon did not get ready"
}
# SIGTERM; the daemon must be gone within 5 s, exit 0, knobs as before.
stop_daemon_bounded() {
        local t0 rc st
        t0=$(now_ms)
        kill -TERM "$daemon_pid"
        for _ in $(seq 250); do
                # bash may have reaped it already
                st=$(cat "/proc/$daemon_pid/stat" 2>/dev/null) || break
                case ${st##*) } in Z*) break;; esac
                sleep 0.02
        done
        stop_ms=$(($(now_ms) - t0))
        if [ "$stop_ms" -ge 5000 ]; then
                kill -KILL "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=
                fail "$1: daemon still running ${stop_ms} ms after SIGTERM"
        fi
        wait "$daemon_pid"; rc=$?; daemon_pid=
        [ "$rc" = 0 ] || fail "$1: daemon exited $rc on SIGTERM"
        after=$(ksm_guard_knobs_now)
        [ "$before" = "$after" ] || fail "$1: knobs differ: before [$before] after [$after]"
}
# Releases a vfork parent: its child killed, it prints "released" and must
# be running, untraced, within a second.
release() {
        local t0
        t0=$(now_ms)
        kill -KILL "$child_pid"
        wait_for 10 grep -q released "$tmp/$1.out" || fail "$1: parent not released after its child died"
        wait_for 10 untraced "$stuck_pid" || fail "$1: still traced by $(tracer "$stuck_pid") after leaving D"
        release_ms=$(($(now_ms) - t0))
        not_stopped "$stuck_pid" || fail "$1: left stopped ($(state "$stuck_pid"))"
        [ "$(merge_any "$stuck_pid")" = no ] || fail "$1: a target given up on was changed"
}

# 1. SIGTERM while the worker waits for the stuck thread.
write_conf no
start_stuck one
start_daemon
for _ in $(seq 250); do traced "$stuck_pid" && break; sleep 0.02; done
traced "$stuck_pid" || fail "1: the daemon never seized the stuck target"
stop_daemon_bounded 1
untraced "$stuck_pid" || fail "1: traced by $(tracer "$stuck_pid") after the daemon exited"
not_stopped "$stuck_pid" || fail "1: left stopped ($(state "$stuck_pid"))"
release one
echo "1. SIGTERM during the wait: exited in ${stop_ms} ms, knobs restored; target untraced, released in ${release_ms} ms"

# 2. The worker gives up; SIGTERM later.
start_stuck two
start_daemon
wait_for 100 log_has "pid $stuck_pid (ksmt2-vfork): method inject refused: ETIMEDOUT (did not stop within [0-9]* ms (uninterruptible sleep?); left untouched)" ||
        fail "2: no ETIMEDOUT for the stuck target"
not_stopped "$stuck_pid" || fail "2: left stopped after the timeout ($(state "$stuck_pid"))"
tracer_then=$(tracer "$stuck_pid")
stop_daemon_bounded 2
untraced "$stuck_pid" || fail "2: traced by $(tracer "$stuck_pid") after the daemon exited"
not_stopped "$stuck_pid" || fail "2: left stopped ($(state "$stuck_pid"))"
release two
echo "2. gave up (ETIMEDOUT; while in D still seized by tid $tracer_then, state D, as ptrace cannot detach a running tracee);" \
     "SIGTERM: exited in ${stop_ms} ms, knobs restored; target untraced, released in ${release_ms} ms"

# 3. Served meanwhile; detached promptly once out of D; UnmergeOnExit=yes.
write_conf yes
start_stuck three
start_daemon
t0=$(now_ms)
mkfifo "$tmp/ok.in"
"$tmp/ksmt2-ok" < "$tmp/ok.in" > "$tmp/ok.out" 2> "$tmp/ok.err" &
ok_pid=$!
pids="$pids $ok_pid"
exec 8> "$tmp/ok.in"
wait_for 50 grep -q ready "$tmp/ok.out" || fail "3: normal target did not start"
wait_for 100 is_merging "$ok_pid" || fail "3: normal target not merged within 10 s (actuator held by the stuck one?)"
ok_ms=$(($(now_ms) - t0))
wait_for 100 log_has "pid $stuck_pid (ksmt2-vfork): method inject refused: ETIMEDOUT" || fail "3: no ETIMEDOUT"
not_stopped "$stuck_pid" || fail "3: left stopped after the timeout"
release three
[ "$release_ms" -lt 1000 ] || fail "3: detached only after ${release_ms} ms"
kill -0 "$daemon_pid" || fail "3: daemon died"
stop_daemon_bounded 3
[ "$(merge_any "$ok_pid")" = no ] || fail "3: UnmergeOnExit=yes left the normal target merging"
log_has "pid $ok_pid (ksmt2-ok): method inject: disabled" || fail "3: no unmerge outcome logged"
exec 8>&-
wait "$ok_pid"; rc=$?
[ "$rc" = 0 ] || fail "3: normal target exited $rc (a self-check failed): $(cat "$tmp/ok.err")"
echo "3. normal target merged ${ok_ms} ms after the start, past the stuck one; stuck one detached ${release_ms} ms" \
     "after leaving D; SIGTERM with UnmergeOnExit=yes: exited in ${stop_ms} ms, unmerged, knobs restored"
echo PASS
