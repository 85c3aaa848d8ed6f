#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Any user's fork loop calling prctl(PR_SET_MEMORY_MERGE, 1) makes a
# ksm:ksm_enter event per child. Each used to wake a full tick at once (no
# rate limit): the daemon followed the storm at up to a full core and wrote
# a line per event. Now ksm_enter wakes at most one extra tick per
# BurstInterval= and its log lines are rate-limited with a "suppressed N"
# line. The storm (tests/helpers/proc-storm --prctl-merge, 500 children a
# second for 10 s, as nobody) must leave the daemon under 10% of a core
# (utime+stime of all its threads from /proc/PID/stat over the storm) and
# its ksm_enter log lines under 25; the daemon runs at debug level, where
# every event used to be a line.
#   STORM_RATE=N STORM_SECONDS=S override the storm; KSMTUNED2=old binary
#   gives the figures before the fix.
set -u
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"
RATE=${STORM_RATE:-500}
SECONDS_STORM=${STORM_SECONDS:-10}
MAX_CPU_PERMILLE=100
MAX_LINES=25

tmp=$(mktemp -d /tmp/ksmtuned2-enter.XXXXXX)
chmod 755 "$tmp"
daemon_pid= storm_pid=
cleanup() {
        [ -n "$storm_pid" ] && kill -TERM "$storm_pid" 2>/dev/null
        [ -n "$daemon_pid" ] && kill -KILL "$daemon_pid" 2>/dev/null
        wait 2>/dev/null
        rm -rf "$tmp"
}
trap 'cleanup; ksm_guard_restore' EXIT
fail() { echo "FAIL: $*" >&2; echo "--- daemon log (tail):" >&2; tail -20 "$tmp/log" >&2; exit 1; }
ticks() { # utime + stime of the whole process, in clock ticks
        sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}
ms() { echo $(( $(date +%s%N) / 1000000 )); }

mkdir -p "$tmp/policy.d" "$tmp/run"
cat > "$tmp/k.conf" <<CONF
[Daemon]
RuntimeDirectory=$tmp/run
PolicyDirectories=$tmp/policy.d
CONF
: > "$tmp/log"
daemon_start "$tmp/log" --config "$tmp/k.conf" --log-level=debug || fail "daemon did not start"
grep -q "watching ksm_enter" "$tmp/log" || { echo "SKIP: no ksm_enter tracepoint here"; exit 77; }

lines0=$(wc -l < "$tmp/log")
c0=$(ticks "$daemon_pid") t0=$(ms)
setpriv --reuid=65534 --regid=65534 --clear-groups "$PROC_STORM" --rate "$RATE" --seconds "$SECONDS_STORM" \
        --prctl-merge > "$tmp/storm.out" 2>&1 &
storm_pid=$!
wait "$storm_pid"; rc=$?
storm_pid=
c1=$(ticks "$daemon_pid") t1=$(ms)
lines1=$(wc -l < "$tmp/log")
[ "$rc" = 0 ] || fail "storm failed: $(cat "$tmp/storm.out")"
kill -0 "$daemon_pid" 2>/dev/null || fail "daemon died in the storm"

hz=$(getconf CLK_TCK)
permille=$(( (c1 - c0) * 1000 * 1000 / hz / (t1 - t0) ))
lines=$((lines1 - lines0))
enters=$(tail -n +$((lines0 + 1)) "$tmp/log" | grep -c "ksm_enter")
echo "$(cat "$tmp/storm.out")"
echo "daemon over the storm: $(( (c1 - c0) * 1000 / hz )) ms CPU in $((t1 - t0)) ms wall = $((permille / 10)).$((permille % 10))% of a core; $lines log lines ($enters ksm_enter lines)"
grep -q "suppressed" "$tmp/log" && echo "rate limit: $(grep -m1 -o 'ksm_enter:.*suppressed.*' "$tmp/log")"
[ "$permille" -lt "$MAX_CPU_PERMILLE" ] || fail "daemon used $((permille / 10)).$((permille % 10))% of a core in the storm (bound 10%)"
[ "$enters" -le "$MAX_LINES" ] || fail "$enters ksm_enter log lines in the storm (bound $MAX_LINES)"
kill -TERM "$daemon_pid"
wait "$daemon_pid" || fail "daemon exited $? on SIGTERM"
daemon_pid=
echo "ok"
