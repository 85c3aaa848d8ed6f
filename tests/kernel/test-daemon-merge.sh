#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon merges a process its policy names (Method=inject) and reports
# the outcome; UnmergeOnExit=yes switches off exactly what it switched on,
# UnmergeOnExit=no (the default) leaves it; a daemon SIGKILLed at random
# moments while it starts and injects leaves its target running, unstopped,
# untraced and correct (the target checks itself and exits non-zero if not).
# The target runs as nobody, as real targets run as their own users: the
# daemon (root, sandboxed by default) reaches it with CAP_SYS_PTRACE alone.
set -u
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/ksm-flags.sh"

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin merge
fail_log_lines=50
. "$SOURCE_ROOT/tests/lib/wait.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"
. "$SOURCE_ROOT/tests/lib/inject-target.sh"
merge_any() { ksm_flag "$1" merge_any; }
is_merging() { [ "$(merge_any "$1")" = yes ]; }
not_merging() { [ "$(merge_any "$1")" = no ]; }
log_has() { grep -q -e "$1" "$tmp/log"; }
healthy() { # pid: alive, not stopped, not traced
        local st tr
        st=$(sed 's/.*) //' "/proc/$1/stat" | cut -c1) || return 1
        tr=$(sed -n 's/^TracerPid:\t//p' "/proc/$1/status")
        case $st in T|t|Z|X) return 1;; esac
        [ "$tr" = 0 ]
}

mkdir -p "$tmp/policy.d" "$tmp/run"
chmod 755 "$tmp"
# A comm of our own, so that nothing else on this shared machine matches.
cp "$KSM_INJECT_TARGET" "$tmp/ksmt2-target"
cat > "$tmp/policy.d/50-target.policy" <<POL
[Match]
Comm=ksmt2-target
[Merge]
Mode=always
Method=inject
POL
write_conf() {
        daemon_conf "$tmp/k.conf" Interval=200ms "UnmergeOnExit=$1"
}

start_daemon() {
        : > "$tmp/log"
        "$KSMTUNED2" --config "$tmp/k.conf" 2>>"$tmp/log" &
        daemon_pid=$!
}
stop_daemon() {
        kill -TERM "$daemon_pid"; wait "$daemon_pid"; local rc=$?
        daemon_pid=
        [ "$rc" = 0 ] || fail "daemon exited $rc on SIGTERM"
}

# 1. The policy's process gets merged by injection, with the outcome logged.
write_conf yes
target_start "$tmp/ksmt2-target"
not_merging "$target_pid" || fail "target merges before the daemon runs"
start_daemon
wait_for 10 is_merging "$target_pid" || fail "target not merged"
[ "$(stat -c %U /proc/$target_pid)" = nobody ] || fail "target does not run as nobody"
wait_for 5 log_has "pid $target_pid (ksmt2-target): method inject: enabled (tid $target_pid, paused [0-9]* us) (50-target.policy:1: Mode=always" ||
        fail "outcome not logged"
healthy "$target_pid" || fail "target unhealthy after injection"
echo "merged: $(grep -o 'method inject: enabled[^(]*([^)]*)' "$tmp/log" | head -1)"

# 2. UnmergeOnExit=yes: a clean stop switches it off again.
stop_daemon
not_merging "$target_pid" || fail "UnmergeOnExit=yes left the target merging"
log_has "UnmergeOnExit=yes: disabling merging" || fail "no UnmergeOnExit line"
echo "UnmergeOnExit=yes: unmerged on stop"

# 2b. The same across a SIGKILL: the next instance finds the target merging
# already ("not touched"), and only the ledger the killed one left in the
# runtime directory says it was the daemon's doing, to be undone at its stop.
start_daemon
wait_for 10 is_merging "$target_pid" || fail "target not merged again"
wait_for 5 grep -q "^$target_pid " "$tmp/run/enabled" || fail "no ledger entry for the target in $tmp/run/enabled"
kill -KILL "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=
start_daemon
wait_for 10 log_has "enabled: 1 process(es) an earlier instance switched on" || fail "the ledger was not read back"
stop_daemon
not_merging "$target_pid" || fail "UnmergeOnExit=yes after a SIGKILL and restart left the target merging"
[ ! -e "$tmp/run/enabled" ] || fail "ledger left after the unmerge: $(cat "$tmp/run/enabled")"
healthy "$target_pid" || fail "target unhealthy"
echo "UnmergeOnExit=yes after SIGKILL + restart: unmerged on stop"

# 3. UnmergeOnExit=no (default): merging stays on after the daemon stops.
write_conf no
start_daemon
wait_for 10 is_merging "$target_pid" || fail "target not merged again"
stop_daemon
is_merging "$target_pid" || fail "UnmergeOnExit=no unmerged"
healthy "$target_pid" || fail "target unhealthy"
target_stop
echo "UnmergeOnExit=no: left merging"

# 4. SIGKILL of the daemon at random moments of start-up and injection.
for i in $(seq 8); do
        target_start "$tmp/ksmt2-target"
        start_daemon
        sleep "$((RANDOM % 2)).$(printf "%03d" $((RANDOM % 1000)))"
        kill -KILL "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=
        sleep 0.05
        healthy "$target_pid" || fail "round $i: target stopped or traced after the daemon's SIGKILL"
        echo "round $i: daemon killed, target $(merge_any "$target_pid" | sed 's/yes/merging/;s/no/not merging/'), running"
        target_stop
done
echo "PASS"
