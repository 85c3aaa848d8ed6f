#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon classifies real processes by its policy files from their exec
# events, and a SIGHUP with a broken file keeps that file's last good
# version. Runs the daemon with --dry-run and no [Ksm] settings: no KSM knob
# is written, so the KSM test lock is not needed.
set -u
umask 022 # policies must not be writable by others (the daemon rejects them)
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root"; exit 77; fi
[ -d /sys/kernel/mm/ksm ] || { echo "SKIP: no KSM"; exit 77; }
. "$SOURCE_ROOT/tests/lib/daemon.sh"

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin policies
fail_log_lines=200
wait_log() { # pattern: waits up to 5 s for a log line matching it
        for _ in $(seq 50); do
                grep -q -e "$1" "$tmp/log" && return 0
                sleep 0.1
        done
        return 1
}

mkdir -p "$tmp/policy.d" "$tmp/run"
daemon_conf "$tmp/k.conf" Interval=1s
# The comm of a copy of sleep under a name of our own, so no other process
# on this shared machine matches.
cp /bin/sleep "$tmp/ksmt2-sleeper"
cat > "$tmp/policy.d/50-sleeper.policy" <<POL
# a comment, so the [Match] header is on line 2
[Match]
Comm=ksmt2-sleeper
[Merge]
Mode=always
Method=inject
POL

# One started before the daemon (found by the initial scan) ...
"$tmp/ksmt2-sleeper" 60 & early=$!; pids="$pids $early"
"$KSMTUNED2" --config "$tmp/k.conf" --dry-run 2>"$tmp/log" &
daemon_pid=$!
wait_log "Process discovery: proc connector events" || fail "no proc connector events"
wait_log "pid $early (ksmt2-sleeper): merge by $tmp/policy.d/50-sleeper.policy:2: Mode=always" ||
        fail "process from the initial scan not classified"
# ... and one after (from its exec event).
"$tmp/ksmt2-sleeper" 61 & late=$!; pids="$pids $late"
wait_log "pid $late (ksmt2-sleeper): merge by $tmp/policy.d/50-sleeper.policy:2: Mode=always" ||
        fail "new process not classified"
wait_log "pid $late (ksmt2-sleeper): \[dry-run\] would enable merging with method inject (50-sleeper.policy:2: Mode=always" ||
        fail "no merge action planned"

# Break the file and reload: its last good version stays in force.
printf '[Match\nComm=ksmt2-sleeper\n' > "$tmp/policy.d/50-sleeper.policy"
kill -HUP "$daemon_pid"
wait_log "$tmp/policy.d/50-sleeper.policy:1: syntax error, file rejected" || fail "broken file not reported"
wait_log "$tmp/policy.d/50-sleeper.policy:0: keeping the previous version of this policy" ||
        fail "previous version not kept"
"$tmp/ksmt2-sleeper" 62 & third=$!; pids="$pids $third"
wait_log "pid $third (ksmt2-sleeper): merge by $tmp/policy.d/50-sleeper.policy:2" ||
        fail "last good policy not applied after the failed reload"

# A fixed file with another mode applies to the processes already known.
printf '[Match]\nComm=ksmt2-sleeper\n[Merge]\nMode=never\n' > "$tmp/policy.d/50-sleeper.policy"
kill -HUP "$daemon_pid"
wait_log "pid $early (ksmt2-sleeper): dont-merge by $tmp/policy.d/50-sleeper.policy:1: Mode=never" ||
        fail "reload did not reclassify"

kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
[ "$rc" = 0 ] || fail "daemon exited $rc"
echo "ok"
