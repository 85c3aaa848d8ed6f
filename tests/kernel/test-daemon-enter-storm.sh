#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Any user's fork loop calling prctl(PR_SET_MEMORY_MERGE, 1) makes a
# ksm:ksm_enter event per child. Each used to wake a full tick at once (no
# rate limit) and, at debug level, write a line: the daemon followed the
# storm. Now ksm_enter wakes at most one extra tick per BurstInterval= and
# its lines are rate-limited with a "suppressed N" line.
#   1. The storm (tests/helpers/proc-storm --prctl-merge, 500 children a
#      second for 10 s, as nobody, forks without exec) with the daemon at its default level
#      (info) must leave it under 10% of a core (utime+stime of all its
#      threads from /proc/PID/stat over the storm), under 40 log lines, and
#      tick at most 12 times a second (the loop's tick count from its
#      SIGUSR1 state dump): on this small test host a tick is cheap, on one
#      with 10,000 processes it costs ~30 ms (bench-cgroups), so the tick
#      count is what says whether a storm can drive the daemon.
#   2. At debug level a 3 s storm gives at most 10 ksm_enter lines per 10 s,
#      then one line saying how many were suppressed.
# STORM_RATE=N STORM_SECONDS=S override the storm; KSMTUNED2=old binary
# gives the figures before the fix.
set -u
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"
RATE=${STORM_RATE:-500}
SECONDS_STORM=${STORM_SECONDS:-10}
MAX_CPU_PERMILLE=100
MAX_LINES=10

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin enter
chmod 755 "$tmp"
storm_pid=
test_cleanup() { [ -n "$storm_pid" ] && kill -TERM "$storm_pid" 2>/dev/null; }
fail_log_lines=20
ticks() { # utime + stime of the whole process, in clock ticks
        sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}
ms() { echo $(( $(date +%s%N) / 1000000 )); }

mkdir -p "$tmp/policy.d" "$tmp/run"
daemon_conf "$tmp/k.conf"
: > "$tmp/log"

storm() { # seconds
        setpriv --reuid=65534 --regid=65534 --clear-groups "$PROC_STORM" --rate "$RATE" --seconds "$1" \
                --prctl-merge > "$tmp/storm.out" 2>&1 &
        storm_pid=$!
        wait "$storm_pid"; local rc=$?
        storm_pid=
        [ "$rc" = 0 ] || fail "storm failed: $(cat "$tmp/storm.out")"
}
loop_ticks() { # the loop's tick count, from a fresh SIGUSR1 dump
        rm -f "$tmp/run/state.json"
        kill -USR1 "$daemon_pid"
        for _ in $(seq 50); do [ -s "$tmp/run/state.json" ] && break; sleep 0.1; done
        python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["loop"]["ticks"])' "$tmp/run/state.json"
}
stop_daemon() {
        kill -TERM "$daemon_pid"
        wait "$daemon_pid" || fail "daemon exited $? on SIGTERM"
        daemon_pid=
}

# 1.
daemon_start "$tmp/log" --config "$tmp/k.conf" || fail "daemon did not start"
grep -q "watching ksm_enter" "$tmp/log" || { echo "SKIP: no ksm_enter tracepoint here"; exit 77; }
lines0=$(wc -l < "$tmp/log")
n0=$(loop_ticks) || fail "no state dump"
c0=$(ticks "$daemon_pid") t0=$(ms)
storm "$SECONDS_STORM"
c1=$(ticks "$daemon_pid") t1=$(ms)
n1=$(loop_ticks) || fail "no state dump"
lines1=$(wc -l < "$tmp/log")
kill -0 "$daemon_pid" 2>/dev/null || fail "daemon died in the storm"
hz=$(getconf CLK_TCK)
permille=$(( (c1 - c0) * 1000 * 1000 / hz / (t1 - t0) ))
lines=$((lines1 - lines0))
cat "$tmp/storm.out"
echo "daemon over the storm (info): $(( (c1 - c0) * 1000 / hz )) ms CPU in $((t1 - t0)) ms wall = $((permille / 10)).$((permille % 10))% of a core; $((n1 - n0)) ticks; $lines log lines"
[ $(( (n1 - n0) * 1000 / (t1 - t0) )) -le 12 ] || fail "$((n1 - n0)) ticks in $((t1 - t0)) ms (bound 12 a second)"
[ "$permille" -lt "$MAX_CPU_PERMILLE" ] || fail "daemon used $((permille / 10)).$((permille % 10))% of a core in the storm (bound 10%)"
[ "$lines" -le 40 ] || fail "$lines log lines in the storm (bound 40)"
stop_daemon

# 2.
: > "$tmp/log"
daemon_start "$tmp/log" --config "$tmp/k.conf" --log-level=debug || fail "daemon did not start at debug level"
storm 3
enter_lines() { grep -c "ksm_enter: pid" "$tmp/log"; }
has_summary() { grep -q "ksm_enter: [0-9]* more processes made memory mergeable .*suppressed" "$tmp/log"; }
# the summary comes at the first tick after the 10 s period: only the rate limit writes it
for _ in $(seq 150); do has_summary && break; sleep 0.1; done
echo "debug level, 3 s storm: $(enter_lines) ksm_enter lines; $(grep -o 'ksm_enter: [0-9]* more.*' "$tmp/log" | head -1)"
[ "$(enter_lines)" -le "$MAX_LINES" ] || fail "$(enter_lines) ksm_enter lines (bound $MAX_LINES)"
has_summary || fail "no line saying how many ksm_enter lines were suppressed"
stop_daemon
echo "ok"
