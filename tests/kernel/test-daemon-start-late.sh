#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Mergeable memory that ksmd has not met is new to the controller however it
# came, not only when a ksm_enter event announced it: on real KSM, a quiet
# victim (2048 unique pages x 4, MADV_MERGEABLE by itself) merges within the
# issue-5 bound, max(2x aggressive, aggressive + 1 s), measured against a
# fixed aggressive setting in this same run, when
#   1. it was mergeable before the daemon started (ksmd off),
#   2. it appeared while the daemon was SIGKILLed, and the daemon restarts
#      (the knob journal case: the restart must still restore the knobs),
#   3. it appeared while the daemon was paused, and `ksmctl resume` follows,
#   4. it appeared in mode observe, and `ksmctl set-mode auto` follows;
# and 5. a victim already in KSM maps as much again (hot-plugged guest RAM:
# no second ksm_enter for an mm): merged within one Interval= (the next tick,
# where the daemon reads its RSS) plus the bound; and 6. a merged victim
# exits while the daemon is SIGKILLed and ksmd stopped, a new one enters,
# and the daemon restarts: it cannot see the departure; 7. it appeared while
# the configuration file said Mode=observe, and the file is edited to auto
# and reloaded (SIGHUP).
# The daemon runs at the shipped Interval= (5 s) with a policy that matches
# this build's ksm-workload (not another checkout's) and never touches it
# (Method=none): it only tunes.
# Timed from the daemon's exec, the restart's exec (daemon_exec_ms: not from
# before the readiness waiter's python start, which took ~0.5 s of the ~1 s
# bound on this machine), the resume, the set-mode, the reload.
set -u
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"
. "$SOURCE_ROOT/tests/lib/private-bus.sh"
. "$SOURCE_ROOT/tests/lib/wait.sh"
KSMCTL=${KSMCTL:-$BUILD_ROOT/src/ksmctl/ksmctl}

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin start-late
chmod 755 "$tmp"
log=$daemon_log
fail_log_lines=60
test_cleanup() {
        private_bus_stop
        for fd in ${victim_fds:-}; do eval "exec $fd>&-"; done
}
ms() { echo $(( $(date +%s%N) / 1000000 )); }

# start_victim SEED: a victim, ready and mergeable; sets victim_pid.
victim_fds=
start_victim() {
        local out=$tmp/victim-$1 fd
        exec {fd}> >(exec "$KSM_WORKLOAD" --unique 2048 --copies 4 --seed "$1" > "$out")
        victim_fds="$victim_fds $fd"
        victim_fd=$fd
        victim_pid=
        for _ in $(seq 200); do grep -q ready "$out" 2>/dev/null && break; sleep 0.05; done
        victim_pid=$(awk '/ready/ {print $2}' "$out")
        [ -n "$victim_pid" ] || fail "victim (seed $1) did not start"
        ksm_guard_track "$victim_pid"
}
# wait_merged PID SINCE_MS LIMIT_MS [PAGES]: prints the time from SINCE_MS
# until PAGES (8192) pages of PID merge; 1 when that takes longer than LIMIT_MS.
wait_merged() {
        local now
        while :; do
                now=$(ms)
                [ "$(cat /proc/$1/ksm_merging_pages)" -ge "${4:-8192}" ] && { echo $(( now - $2 )); return 0; }
                [ $(( now - $2 )) -gt "$3" ] && { echo $(( now - $2 )); return 1; }
                sleep 0.01
        done
}
stop_victim() { kill -KILL "$victim_pid" 2>/dev/null; }

echo 0 > $KSM/run
echo 100 > $KSM/pages_to_scan
echo 20 > $KSM/sleep_millisecs
echo none > $KSM/advisor_mode
before=$(ksm_guard_knobs_now)

# The reference: a fixed aggressive setting on the same shape, this run.
start_victim 31
t0=$(ms)
echo 100000 > $KSM/pages_to_scan
echo 0 > $KSM/sleep_millisecs
echo 1 > $KSM/run
aggr_ms=$(wait_merged "$victim_pid" "$t0" 30000) || fail "aggressive did not merge the victim within 30 s"
echo 0 > $KSM/run
echo 100 > $KSM/pages_to_scan
echo 20 > $KSM/sleep_millisecs
stop_victim
ksm_guard_settle
bound_ms=$(( 2 * aggr_ms > aggr_ms + 1000 ? 2 * aggr_ms : aggr_ms + 1000 ))
echo "aggressive: ${aggr_ms} ms; bound ${bound_ms} ms"

mkdir -p "$tmp/run" "$tmp/policy.d"
cat > "$tmp/policy.d/50-victims.policy" <<POLICY
[Match]
Exe=$KSM_WORKLOAD
[Merge]
Mode=auto
Method=none
POLICY
daemon_conf "$tmp/k.conf" LogLevel=debug
private_bus_start "$tmp" || exit 1

# 1. Started late: the victim is mergeable and ksmd is off.
start_victim 32
daemon_start "$tmp/log" --config "$tmp/k.conf" || fail "daemon did not get ready"
t0=$daemon_exec_ms
took=$(wait_merged "$victim_pid" "$t0" "$bound_ms") ||
        fail "started late: victim merged $(cat /proc/$victim_pid/ksm_merging_pages)/8192 pages in $took ms, bound $bound_ms ms"
grep -q "burst: .* mergeable that ksmd has not met yet" "$tmp/log" || fail "started late: no burst for unmet memory logged"
echo "ok: started late: merged in $took ms (bound $bound_ms ms): $(grep -o 'burst: .*not met yet' "$tmp/log" | head -1)"
# The burst's knobs are written before a window's events are switched on
# (each switch blocks the loop; soft arming once took 85-99 ms of it on this
# VM), not after: the debug log's order.
order=$(awk '/burst: .*not met yet/ && !b { b = NR }
             b && /set pages_to_scan=/ && !k { k = NR }
             b && /contention window started/ && !w { w = NR }
             END { print (k ? k : 0), (w ? w : 0) }' "$tmp/log")
read -r knob_line switch_line <<<"$order"
[ "$knob_line" -gt 0 ] || fail "started late: no pages_to_scan written after the burst"
[ "$switch_line" = 0 ] || [ "$knob_line" -lt "$switch_line" ] ||
        fail "started late: the window events were switched on (log line $switch_line) before the burst's knobs (line $knob_line)"
# This victim stays until the end. One that exits leaves its rmap items and
# sharing to ksmd, which drops them in the pass that meets the next victim:
# net rmap +0, sharing down, and the burst ended on "2 full scans without new
# sharing" with the newcomer unmerged (seen in CI, 0/8192 after a resume and
# after a restart). A daemon that sees the exit counts those passes as not
# barren (tuner_note_departed): parts 3 and 4 stop their predecessor while
# the daemon runs. One started after the exit cannot see it: part 6.

# 2. SIGKILL, a victim appears without a daemon, the daemon restarts.
for _ in $(seq 100); do grep -q "backing off" "$tmp/log" && break; sleep 0.1; done
kill -KILL "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=
start_victim 33
log=$tmp/log2
daemon_start "$log" --config "$tmp/k.conf" || fail "restarted daemon did not get ready"
t0=$daemon_exec_ms
grep -q "saved by an earlier instance" "$log" || fail "restart did not pick up the knob journal"
took=$(wait_merged "$victim_pid" "$t0" "$bound_ms") ||
        fail "restart: victim merged $(cat /proc/$victim_pid/ksm_merging_pages)/8192 pages in $took ms, bound $bound_ms ms"
echo "ok: SIGKILL + restart: merged in $took ms (bound $bound_ms ms)"
stop_victim

# 3. Paused while a victim appears, then resumed.
for _ in $(seq 50); do "$KSMCTL" -q status && break; sleep 0.1; done
for _ in $(seq 100); do grep -q "backing off" "$log" && break; sleep 0.1; done
"$KSMCTL" pause || fail "ksmctl pause"
echo 0 > $KSM/run      # paused, the knobs are anybody's: ksmd off, as an administrator might leave it
start_victim 34
sleep 1
t0=$(ms)
"$KSMCTL" resume || fail "ksmctl resume"
took=$(wait_merged "$victim_pid" "$t0" "$bound_ms") ||
        fail "resume: victim merged $(cat /proc/$victim_pid/ksm_merging_pages)/8192 pages in $took ms, bound $bound_ms ms"
echo "ok: pause + resume: merged in $took ms (bound $bound_ms ms)"
stop_victim

# 4. Observe while a victim appears, then set-mode auto.
for _ in $(seq 100); do [ "$(grep -c "backing off" "$log")" -ge 2 ] && break; sleep 0.1; done
"$KSMCTL" set-mode observe || fail "ksmctl set-mode observe"
echo 0 > $KSM/run
start_victim 35
# observe decides (a burst it does not carry out) and backs off again
sleep 3
t0=$(ms)
"$KSMCTL" set-mode auto || fail "ksmctl set-mode auto"
took=$(wait_merged "$victim_pid" "$t0" "$bound_ms") ||
        fail "set-mode auto: victim merged $(cat /proc/$victim_pid/ksm_merging_pages)/8192 pages in $took ms, bound $bound_ms ms"
echo "ok: observe + set-mode auto: merged in $took ms (bound $bound_ms ms)"

# 5. The same victim maps 8192 more pages (no ksm_enter: the mm is in KSM).
for _ in $(seq 100); do [ "$(grep -c "backing off" "$log")" -ge 3 ] && break; sleep 0.1; done
backoffs=$(grep -c "backing off" "$log")
t0=$(ms)
echo grow >&$victim_fd
for _ in $(seq 100); do grep -q grown "$tmp/victim-35" && break; sleep 0.05; done
grep -q "grown 0x" "$tmp/victim-35" || fail "victim did not grow"
limit=$(( 5000 + bound_ms ))
took=$(wait_merged "$victim_pid" "$t0" "$limit" 16384) ||
        fail "hot-plugged memory: $(cat /proc/$victim_pid/ksm_merging_pages)/16384 pages merged in $took ms, limit $limit ms"
echo "ok: 32 MiB added to an mm in KSM: merged in $took ms (Interval=5s + bound $bound_ms ms)"

# 6. A departure the daemon cannot see: SIGKILLed, ksmd stopped (as an
# administrator might leave it), the merged victim of part 5 exits and a new
# one enters, then the daemon restarts. ksmd still holds the departed mm's
# 16,384 rmap items and its sharing; it drops them when its cursor reaches
# that mm, in the pass that was in progress or in the one that meets the
# newcomer (net rmap down, sharing down). The pass in progress at the
# start counts neither way, and one such pass is within BackoffFullScans=2.
# part 5's burst over first: the departed victim is a merged one
backed_off() { [ "$(grep -c "backing off" "$log")" -gt "$backoffs" ]; }
wait_for 30 backed_off || fail "part 5's burst did not back off within 30 s"
kill -KILL "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=
echo 0 > $KSM/run
departed=$(cat /proc/$victim_pid/ksm_merging_pages)
stop_victim
wait_for 5 pid_gone "$victim_pid" || fail "victim $victim_pid did not exit"
start_victim 36
log=$tmp/log3
daemon_start "$log" --config "$tmp/k.conf" || fail "daemon did not get ready after the departure"
t0=$daemon_exec_ms
took=$(wait_merged "$victim_pid" "$t0" "$bound_ms") ||
        fail "restart after a departure: victim merged $(cat /proc/$victim_pid/ksm_merging_pages)/8192 pages in $took ms, bound $bound_ms ms"
echo "ok: restart after a merged victim ($departed pages) exited unseen: merged in $took ms (bound $bound_ms ms)"

# 7. A reload: the configuration file said Mode=observe while a victim
# appeared, the administrator edits it to Mode=auto and reloads (SIGHUP, as
# `systemctl reload` does). The file's mode wins over the running one, and
# what ksmd met meanwhile is unknown to the controller as after set-mode.
backoffs=0     # $log is this daemon's since part 6: its first back-off is part 6's burst's
wait_for 30 backed_off || fail "part 6's burst did not back off within 30 s"
sed -i 's/^LogLevel=debug$/LogLevel=debug\nMode=observe/' "$tmp/k.conf"
kill -HUP "$daemon_pid"
wait_for 10 grep -q "mode observe (was auto)" "$log" || fail "reload: Mode=observe from the file not taken"
echo 0 > $KSM/run
stop_victim
start_victim 37
# observe decides (a burst it does not carry out) and backs off again
sleep 3
[ "$(cat /proc/$victim_pid/ksm_merging_pages)" = 0 ] || fail "reload: victim merged while observing with ksmd off"
sed -i '/^Mode=observe$/d' "$tmp/k.conf"
t0=$(ms)
kill -HUP "$daemon_pid"
took=$(wait_merged "$victim_pid" "$t0" "$bound_ms") ||
        fail "reload to Mode=auto: victim merged $(cat /proc/$victim_pid/ksm_merging_pages)/8192 pages in $took ms, bound $bound_ms ms"
grep -q "mode auto (was observe)" "$log" || fail "reload: the file's Mode=auto not taken"
echo "ok: observe by the file + reload to auto: merged in $took ms (bound $bound_ms ms)"

kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
[ "$rc" = 0 ] || fail "daemon exited $rc on SIGTERM"
after=$(ksm_guard_knobs_now)
[ "$before" = "$after" ] || fail "knobs differ after SIGTERM: before [$before] after [$after]"
echo "ok: SIGTERM after the restart: knobs as before the first start"
