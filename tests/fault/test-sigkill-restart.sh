#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon SIGKILLed at random points (during start-up, between ticks, in
# the middle of one) and restarted, over and over, on real KSM while a
# process of ours merges and re-checks its memory every second. At the end:
# the process was never stopped, traced or killed, its memory never changed
# (ksm-workload --verify exits 3 on a difference), and one clean stop puts
# every knob back to its value from before the first instance.
set -u
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"
rounds=${KSMTUNED2_KILL_ROUNDS:-15}

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin sigkill
a_pid= b_pid=
test_cleanup() {
        for p in ${a_pid:-} ${b_pid:-}; do kill -KILL "$p" 2>/dev/null; done
        wait 2>/dev/null
        [ -n "${cg:-}" ] && rmdir "$cg" 2>/dev/null
}

# Knobs the daemon will change, at values that are not its targets.
echo 0 > $KSM/use_zero_pages
echo 1 > $KSM/smart_scan
echo 2000 > $KSM/stable_node_chains_prune_millisecs
echo 1000 > $KSM/pages_to_scan
echo 10 > $KSM/sleep_millisecs
echo 1 > $KSM/run
before=$(ksm_guard_knobs_now)

mkdir -p "$tmp/run" "$tmp/policy.d"
daemon_conf "$tmp/k.conf" Interval=100ms LogLevel=debug \
        '[Ksm]' UseZeroPages=yes SmartScan=no StableNodeChainsPruneMSec=3000
# Only our victims may match (other tests run ksm-workloads too): they live
# in a cgroup of this test's.
cg=
for d in /sys/fs/cgroup/unified /sys/fs/cgroup; do
        if [ "$(stat -f -c %T "$d" 2>/dev/null)" = cgroup2fs ]; then
                cg=$d/ksmtuned2-kill-$$
                mkdir "$cg" || fail "cannot create $cg"
                match="Cgroup=ksmtuned2-kill-$$"
                break
        fi
done
[ -n "$cg" ] || match="Comm=ksm-workload-none"
cat > "$tmp/policy.d/50-workload.policy" <<POLICY
[Match]
$match
[Merge]
Mode=auto
Method=any
POLICY

# Two victims verifying their memory every second: A marks itself
# mergeable (it merges while the daemons come and go), B does not (a target
# for the daemon's own merge method: injection is killed mid-way too).
start_victim() {
        mkfifo "$tmp/$1.in"
        sh -c '[ -n "$1" ] && echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$cg" \
                "$KSM_WORKLOAD" --unique 512 --copies 4 --merge "$2" --seed "$3" --verify <"$tmp/$1.in" >"$tmp/$1.out" 2>"$tmp/$1.err" &
        eval "$1_pid=$!"
        ksm_guard_track $!
}
start_victim a madvise 1
exec 7>"$tmp/a.in"
start_victim b none 2
exec 8>"$tmp/b.in"
for _ in $(seq 100); do grep -q ready "$tmp/a.out" && grep -q ready "$tmp/b.out" && break; sleep 0.05; done
grep -q ready "$tmp/a.out" && grep -q ready "$tmp/b.out" || fail "workloads did not start"

check_victim() {
        local st tracer pid
        for pid in $a_pid $b_pid; do
                kill -0 "$pid" 2>/dev/null || fail "victim $pid died ($1)"
                st=$(sed 's/.*) \(.\).*/\1/' /proc/$pid/stat)
                tracer=$(awk '/^TracerPid:/ {print $2}' /proc/$pid/status)
                case $st in T|t) fail "victim $pid left stopped ($1)";; esac
                [ "$tracer" = 0 ] || fail "victim $pid left traced by $tracer ($1)"
        done
}

kills_startup=0 kills_running=0
for i in $(seq "$rounds"); do
        "$KSMTUNED2" --config "$tmp/k.conf" 7>&- 8>&- 2>>"$tmp/log" &
        daemon_pid=$!
        # Odd rounds die within 40 ms of exec (start-up: probe, journal,
        # /proc scan), even rounds 50-800 ms in (between or inside ticks).
        if [ $((i % 2)) = 1 ]; then
                delay_ms=$((RANDOM % 40 + 1)); kills_startup=$((kills_startup + 1))
        else
                delay_ms=$((RANDOM % 750 + 50)); kills_running=$((kills_running + 1))
        fi
        sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
        kill -KILL "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=
        check_victim "after kill $i at ${delay_ms} ms"
done
leftover=$(find "$tmp/run" -name 'saved-knobs.*' | wc -l)

# One clean run and stop restores the values from before the first instance.
# A killed instance may have left use_zero_pages=1 already: READY=1 (after
# the journal is read and the first tick is done) is what only this one
# can make true.
daemon_start "$tmp/log" --config "$tmp/k.conf" 7>&- 8>&- || fail "last instance did not get ready"
[ "$(cat $KSM/use_zero_pages)" = 1 ] || fail "last instance did not apply its configuration"
kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
[ "$rc" = 0 ] || fail "clean stop exited $rc"
after=$(ksm_guard_knobs_now)
[ "$before" = "$after" ] || fail "knobs differ: before [$before] after [$after]"
[ ! -e "$tmp/run/saved-knobs" ] || fail "journal left after the clean stop"
check_victim "at the end"

merged_a=$(cat /proc/$a_pid/ksm_merging_pages) merged_b=$(cat /proc/$b_pid/ksm_merging_pages)
exec 7>&- 8>&-
for v in a b; do
        eval "pid=\$${v}_pid"
        wait "$pid"; wl_rc=$?
        [ "$wl_rc" = 0 ] || fail "victim $v exited $wl_rc (3: its memory changed): $(cat "$tmp/$v.err")"
done
echo "SIGKILL x$rounds ($kills_startup within 40 ms of exec, $kills_running at 50-800 ms) + restart: knobs restored," \
     "victim alive, never stopped or traced, memory intact (ksm_merging_pages at the end: A $merged_a, B $merged_b)," \
     "$leftover journal temp files left"
