#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Seed 004 on the real kernel: pairs of identical pages made mergeable at
# different times (0-20 full scans apart, as in the seed's reproducer).
# First without the daemon, at fixed knobs and smart_scan=1: on a kernel
# whose smart-scan skips count from each page's own start, some pairs are
# still unmerged 64 full scans after the last (the thread: 317/420), and
# stay so. Then the daemon runs: once merging stalled it does one full scan
# with smart_scan=0 and puts smart_scan back, and every pair ends up merged.
# The workaround's ksmd CPU is read from the daemon's log and metrics. A
# daemon SIGKILLed during the workaround scan leaves smart_scan=0, which the
# next instance puts back (its knob journal).
set -u
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin smartscan
pairs_pid=
test_cleanup() { [ -n "$pairs_pid" ] && kill -KILL "$pairs_pid" 2>/dev/null; }
fail_context() { echo "--- pairs:"; tail -5 "$tmp/pairs.out"; }
fail_log_lines=30
: > "$tmp/log"
ksmd_cpu_ms() { # utime + stime of ksmd, ms
        awk '{ sub(/.*\) /, ""); split($0, f, " "); print int((f[12] + f[13]) * 1000 / '"$(getconf CLK_TCK)"') }' "/proc/$(pgrep -x ksmd | head -1)/stat"
}

echo 1 > "$KSM/smart_scan"
echo 0 > "$KSM/use_zero_pages"
echo 2000 > "$KSM/pages_to_scan"
echo 10 > "$KSM/sleep_millisecs"
echo 1 > "$KSM/run"
mkfifo "$tmp/in"
"$SMART_SCAN_PAIRS" 20 20 64 < "$tmp/in" > "$tmp/pairs.out" 2>&1 &
pairs_pid=$!
ksm_guard_track "$pairs_pid"
exec 8> "$tmp/in"
for _ in $(seq 1200); do grep -q '^result' "$tmp/pairs.out" && break; sleep 0.1; done
result=$(grep '^result' "$tmp/pairs.out") || fail "the reproducer did not finish in 120 s"
echo "without the daemon: $result"
read -r merged total < <(sed -n 's/^result merged \([0-9]*\)\/\([0-9]*\).*/\1 \2/p' "$tmp/pairs.out")
stuck=0
if [ "$merged" -lt "$total" ]; then
        # they stay unmerged: 36 more full scans change nothing
        f0=$(cat "$KSM/full_scans")
        for _ in $(seq 600); do [ "$(cat "$KSM/full_scans")" -ge $((f0 + 36)) ] && break; sleep 0.05; done
        now=$(tail -1 "$tmp/pairs.out" | sed -n 's/.*merged \([0-9]*\)\/.*/\1/p')
        echo "36 full scans later: $now/$total merged"
        stuck=1
else
        echo "every pair merged without help: smart-scan skips are aligned on this kernel, or luck"
fi

# The daemon, maintaining at one full scan a second.
mkdir -p "$tmp/run" "$tmp/policy.d"
daemon_conf "$tmp/k.conf" Interval=200ms \
        '[Tuning]' MaintenanceScanTime=1s IdleAfter=1h
cpu0=$(ksmd_cpu_ms)
daemon_start "$tmp/log" --config "$tmp/k.conf" || fail "daemon did not start"
for _ in $(seq 1200); do grep -q "merged $total/$total" "$tmp/pairs.out" && break; sleep 0.1; done
grep -q "merged $total/$total" "$tmp/pairs.out" || fail "not every pair merged with the daemon in 120 s: $(tail -1 "$tmp/pairs.out")"
echo "with the daemon: $(tail -1 "$tmp/pairs.out")"
if [ $stuck = 1 ]; then
        grep -q "one full scan with smart_scan=0" "$tmp/log" || fail "merged, but not by the workaround"
fi
for _ in $(seq 300); do grep -q "the full scan without smart_scan ended" "$tmp/log" && break; sleep 0.1; done
grep -o "the full scan without smart_scan ended.*" "$tmp/log" | head -1
[ "$(cat "$KSM/smart_scan")" = 1 ] || fail "smart_scan not back to 1 after the workaround"
cpu1=$(ksmd_cpu_ms)
echo "ksmd CPU while the daemon ran: $((cpu1 - cpu0)) ms"
[ $stuck = 0 ] || grep -q "Kernel fix 004 (smart-scan): no" "$tmp/log" || fail "fix 004 not reported absent"

# A SIGKILL during the workaround's scan: the next instance puts smart_scan back.
kill -KILL "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=
# as if it had been killed in the middle of the workaround's scan: the
# journal it left holds smart_scan's value from before, 1
echo 0 > "$KSM/smart_scan"
{ grep -v '^smart_scan=' "$tmp/run/saved-knobs" 2>/dev/null; echo smart_scan=1; } > "$tmp/saved"
mv "$tmp/saved" "$tmp/run/saved-knobs"
: > "$tmp/log2"
daemon_start "$tmp/log2" --config "$tmp/k.conf" || fail "second daemon did not start"
for _ in $(seq 50); do [ "$(cat "$KSM/smart_scan")" = 1 ] && break; sleep 0.1; done
[ "$(cat "$KSM/smart_scan")" = 1 ] || fail "smart_scan=0 left by a killed instance was not put back"
echo "smart_scan=0 left by a killed daemon: put back by the next one"
kill -TERM "$daemon_pid"; wait "$daemon_pid"; daemon_pid=
echo PASS
