#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# With the daemon running on real KSM: a process that churns its address
# space (a thread looping mmap/munmap of 256 MiB) beside 64 MiB of its own
# unique mergeable pages stalls ksmd on its mmap_lock while yielding
# nothing. The burst's contention window must attribute ksmd's waits to it
# and the controller must exclude it through the merge actuator, because its
# policy says Mode=auto; a second such process under Mode=always must keep
# merging. Both re-check their memory every second (--verify): the
# injection must change nothing they can see. Knobs are restored on SIGTERM.
set -u
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/ksm-flags.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin contention
test_cleanup() { exec 6>&- 2>/dev/null; }
fail_context() { echo "--- daemon log, without classification and tick lines"; grep -vE 'leave-alone|wait by|tick:' "$daemon_log" | tail -60; }
fail_log_lines=0

tracefs=/sys/kernel/tracing
[ -d "$tracefs/events" ] || mount -t tracefs nodev "$tracefs" 2>/dev/null
if [ ! -d "$tracefs/events/mmap_lock" ]; then
        echo "SKIP: no mmap_lock tracepoints: contention cannot be attributed" >&2
        exit 77
fi

echo 0 > $KSM/run
echo 100 > $KSM/pages_to_scan
echo 20 > $KSM/sleep_millisecs
echo none > $KSM/advisor_mode
before=$(ksm_guard_knobs_now)

mkdir -p "$tmp/run" "$tmp/policy.d"
# First match wins, in lexical order. Both mark their own memory
# (MADV_MERGEABLE on their buffer), so a policy has nothing to switch on;
# once the controller took the Mode=auto one out, only its readmission may
# (no MinAge= hides a policy that would switch it back on at the next tick).
cat > "$tmp/policy.d/40-always.policy" <<'POLICY'
[Match]
Cmdline=*--seed 32*
[Merge]
Mode=always
MinAge=1h
POLICY
cat > "$tmp/policy.d/50-auto.policy" <<'POLICY'
[Match]
Comm=ksm-workload
[Merge]
Mode=auto
Method=any
POLICY
# ReadmitAfter: long enough that the readmission cannot come before the
# SIGKILL 3 s after the exclusion, even on an emulated machine.
# ExcludeBlocked: this contender keeps ksmd waiting 20-27% of its work in a
# burst's windows here (3 ms of 10-15 ms): at the default ExcludeBlocked=20
# whether it is excluded is a coin toss. The test is about attribution and
# the exclusion's mechanics, not the threshold: half of it.
daemon_conf "$tmp/k.conf" Interval=1s LogLevel=debug \
        '[Tuning]' ReadmitAfter=10s ExcludeBlocked=10
# Started after the contender, as on a host where it runs already: a
# process that enters KSM while the daemon watches is judged only two full
# scans after it entered (its pages had their second look), and the burst
# may be over by then.
start_daemon() {
        daemon_start "$tmp/log" --config "$tmp/k.conf" || fail "daemon did not get ready"
        [ "$(cat $KSM/run)" = 1 ] || fail "daemon did not start ksmd"
}
stop_daemon() {
        kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
        [ "$rc" = 0 ] || fail "daemon exited $rc on SIGTERM"
        after=$(ksm_guard_knobs_now)
        [ "$before" = "$after" ] || fail "knobs differ after SIGTERM: before [$before] after [$after]"
}

mergeable() { ksm_flag "$1" mergeable; }
# Starts a contender on fd $1 with seed $2, output in $3; sets pid. It exits
# when its stdin closes.
contender=(--unique 65536 --copies 1 --verify --churn-threads 1 --churn-mib 256)
start_contender() {
        eval "exec $1> >(exec \"\$KSM_WORKLOAD\" \"\${contender[@]}\" --seed $2 > $3)"
        for _ in $(seq 100); do grep -q ready "$3" 2>/dev/null && break; sleep 0.05; done
        pid=$(awk '/ready/ {print $2}' "$3")
        [ -n "$pid" ] || fail "contender (seed $2) did not start"
        ksm_guard_track "$pid"
        [ "$(mergeable "$pid")" = yes ] || fail "contender $pid did not mark its memory mergeable"
}
# Waits up to $2 s (default 20) for the daemon's log to hold a line matching $1.
log_within() {
        for _ in $(seq $((${2:-20} * 10))); do
                grep -q "$1" "$tmp/log" && return 0
                sleep 0.1
        done
        return 1
}
alive_untouched() {
        kill -0 "$1" 2>/dev/null || fail "contender $1 died (memory changed under it?)"
        [ "$(awk '/^State:/ {print $2}' /proc/$1/status)" != T ] || fail "contender $1 left stopped"
        [ "$(awk '/^TracerPid:/ {print $2}' /proc/$1/status)" = 0 ] || fail "contender $1 left traced"
}

start_contender 7 31 "$tmp/auto"; auto_pid=$pid
start_daemon
# By whichever method this kernel offers (Method=any): injection upstream,
# remote madvise on the patched test kernel (the contender marked ranges,
# which process_ksm cannot take back). There ksmd still blocks on the
# contender's lock in the scan itself (the 6.12 port of seed 001 converts
# only the unstable-tree lookup), so excluding it is still right.
# Which window catches ksmd behind the contender's lock is chance (ksmd
# sleeps ~200 ms between batches late in a burst, a window lasts ~70 ms):
# with a TCG guest running beside it (nice 19), ksmd waited 1-12% of the
# windows in 5 runs of 14 where it waits 30-70% in the others, and the
# exclusion came 13-27 s after the start or not within 60 s. On a quiet
# machine it comes from the burst's windows. The bound is on the daemon
# acting at all, not on how soon.
log_within "pid $auto_pid (ksm-workload): method [a-z_]*: disabled" 60; excluded=$?
grep -E 'contention window|excluding' "$tmp/log" | head -4
[ "$excluded" = 0 ] || fail "the Mode=auto contender was not excluded within 60 s"
# Blocked: of all ksmd's time, or of its time on the contender where that
# is more (controller.c judge_contenders).
grep -qE "excluding pid $auto_pid \(ksm-workload\): ([0-9]+% of ksmd time blocked on its mmap lock|ksmd blocked [0-9]+% of its time on it \([0-9]+% of all its time\)), 0 pages merged" \
        "$tmp/log" || fail "exclusion without its reason"
[ "$(mergeable "$auto_pid")" = no ] || fail "excluded contender still has mergeable memory"
alive_untouched "$auto_pid"
echo "excluded: $(grep -o "excluding pid $auto_pid .*" "$tmp/log" | head -1)"
merge_any() { ksm_flag "$1" merge_any; }
[ "$(merge_any "$auto_pid")" = no ] || fail "contender $auto_pid had ksm_merge_any before readmission"

# The exclusion sticks for ReadmitAfter=10s: discovery, whose policy verdict
# is still "merge", must not switch it back on at its next ticks (1 s each).
# Only its readmission may (by the reason in its outcome line).
not_back_on() {
        grep "pid $auto_pid (ksm-workload): method [a-z_]*: enabled" "$tmp/log" | grep -v "(readmitting pid $auto_pid " |
                grep -q . && fail "discovery switched the excluded contender back on before its readmission ($1)"
        grep -q "readmitting pid $auto_pid" "$tmp/log" || [ "$(mergeable "$auto_pid")" = no ] ||
                fail "excluded contender $auto_pid merges again before its readmission ($1)"
}
sleep 3
not_back_on "3 s after the exclusion"

# The daemon is killed while the exclusion holds (Restart=on-failure, the
# OOM killer): the next instance keeps it, from the exclusion journal in the
# runtime directory, until ReadmitAfter= from the exclusion itself, not
# from the restart (it says how long ago: 3 s at least), and readmits it
# with what the process had (the restore book written beside it), not with
# what its policy would give a process that merges nothing.
kill -KILL "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=
[ -s "$tmp/run/exclusions" ] || fail "no exclusion journal in the runtime directory after the exclusion"
[ -s "$tmp/run/restore-ranges" ] || fail "no restore book in the runtime directory after the exclusion"
start_daemon
kept=$(grep -o "Keeping the exclusion of pid $auto_pid (ksm-workload) an earlier instance made [0-9.]*s ago" "$tmp/log")
[ -n "$kept" ] || fail "the restarted daemon did not keep the exclusion of pid $auto_pid"
age=${kept##* made }; age=${age%s ago}
[ "${age%%.*}" -ge 3 ] || fail "the restarted daemon dated the exclusion $age s ago, not from the exclusion (3 s at least)"
echo "restarted after SIGKILL: $kept"
sleep 1.5
not_back_on "after the restart"

# Readmitted, it gets back exactly what it had: its MADV_MERGEABLE buffer,
# not PR_SET_MEMORY_MERGE over its whole mm (ksm_merge_any). Read at once:
# the next contention window, which could take it out again, is 30 s away.
readmitted=
for _ in $(seq 400); do
        if grep -q "pid $auto_pid (ksm-workload): method [a-z_]*: enabled" "$tmp/log"; then
                readmitted=$(mergeable "$auto_pid")/$(merge_any "$auto_pid")
                break
        fi
        sleep 0.05
done
grep "readmitting pid $auto_pid" "$tmp/log" | head -1
[ -n "$readmitted" ] || fail "contender $auto_pid not readmitted within 20 s (ReadmitAfter=10s)"
[ "$readmitted" = yes/no ] ||
        fail "readmission gave contender $auto_pid mergeable/merge_any = $readmitted, not what it had (yes/no)"
alive_untouched "$auto_pid"
echo "readmitted with exactly its own ranges: ksm_mergeable/ksm_merge_any = $readmitted"

# It goes (stdin closed), so the next one contends alone, as this one did.
stop_daemon
exec 7>&-
for _ in $(seq 100); do kill -0 "$auto_pid" 2>/dev/null || break; sleep 0.05; done

# The Mode=always one is judged the same way and never taken out.
start_contender 8 32 "$tmp/always"; always_pid=$pid
start_daemon
log_within "pid $always_pid: excluding .*not done: its policy says Mode=always" ||
        fail "the Mode=always contender was not judged a contender within 20 s"
grep -q "pid $always_pid (ksm-workload): method [a-z_]*: disabled" "$tmp/log" && fail "Mode=always process excluded"
[ "$(mergeable "$always_pid")" = yes ] || fail "Mode=always process lost its mergeable memory"
alive_untouched "$always_pid"
echo "Mode=always contender judged and kept"

# The windows that saw ksmd wait behind the contenders also tell whether
# ksmd trylocks (seed 000): a failed try (yes) or 20 waits without one (no).
# One window may see fewer than 20 (seen in CI: one window, 54% blocked,
# undecided): wait for the decision, which only the windows can make.
log_within "Kernel fix 000 (trylock): \(yes\|no\)," || fail "the contention windows did not decide fix 000"
grep -o "Kernel fix 00[0-4] ([a-z-]*): .*" "$tmp/log" | cut -c1-200
stop_daemon
echo "SIGTERM: knobs restored"
exec 8>&-

# A clean stop ends the exclusions: no instance may come to readmit, so the
# process gets back what it had (its own ranges, not ksm_merge_any), and the
# journal is left empty for the next instance.
start_contender 6 33 "$tmp/last"; last_pid=$pid
start_daemon
log_within "pid $last_pid (ksm-workload): method [a-z_]*: disabled" 60 ||
        fail "the second Mode=auto contender was not excluded within 60 s"
[ "$(mergeable "$last_pid")/$(merge_any "$last_pid")" = no/no ] || fail "excluded contender $last_pid still merges"
stop_daemon
grep -q "readmitting pid $last_pid (ksm-workload) as the daemon stops: excluded " "$tmp/log" ||
        fail "the exclusion of pid $last_pid was not ended at the stop"
got=$(mergeable "$last_pid")/$(merge_any "$last_pid")
[ "$got" = yes/no ] || fail "readmitted at the stop, contender $last_pid has mergeable/merge_any = $got, not yes/no"
[ ! -e "$tmp/run/exclusions" ] || fail "exclusions left in the journal after they were ended: $(cat "$tmp/run/exclusions")"
alive_untouched "$last_pid"
echo "SIGTERM while a contender is out: readmitted with its own ranges ($got)"

# A readmission decided on paper (Mode=observe, as the configuration file
# says after a reload) changes nothing, and the exclusion stays in the
# journal; once the daemon acts again, the process is readmitted for real.
# Only the lines from here on: the log holds the first exclusion's already.
mark=$(wc -l < "$tmp/log")
log_within() {
        for _ in $(seq $((${2:-20} * 10))); do
                tail -n +$((mark + 1)) "$tmp/log" | grep -q "$1" && return 0
                sleep 0.1
        done
        return 1
}
start_daemon
log_within "excluding pid $last_pid " 60 || fail "pid $last_pid not excluded again within 60 s"
log_within "pid $last_pid (ksm-workload): method [a-z_]*: disabled .*(excluding pid $last_pid " 10 ||
        fail "the second exclusion of pid $last_pid not carried out"
sed -i 's/^LogLevel=debug$/LogLevel=debug\nMode=observe/' "$tmp/k.conf"
kill -HUP "$daemon_pid"
log_within "mode observe (was auto)" 10 || fail "reload to Mode=observe not taken"
# From the switch on: a readmission before it (a slow machine) is a real one.
mark=$(grep -n "mode observe (was auto)" "$tmp/log" | tail -1 | cut -d: -f1)
grep -q "readmitting pid $last_pid (ksm-workload): excluded" <(tail -n +$((mark + 1)) "$tmp/log") &&
        fail "pid $last_pid readmitted before Mode=observe took effect (ReadmitAfter=10s too short here)"
log_within "readmitting pid $last_pid (ksm-workload): excluded" 20 || fail "no readmission of pid $last_pid decided in observe"
sleep 1
[ "$(mergeable "$last_pid")" = no ] || fail "a readmission decided in Mode=observe switched pid $last_pid on"
[ -s "$tmp/run/exclusions" ] || fail "the exclusion left the journal with a readmission on paper"
sed -i '/^Mode=observe$/d' "$tmp/k.conf"
kill -HUP "$daemon_pid"
log_within "Keeping the exclusion of pid $last_pid (ksm-workload) made before observing" 10 ||
        fail "acting again, the daemon did not take the exclusion of pid $last_pid back"
readmitted=
for _ in $(seq 200); do
        if tail -n +$((mark + 1)) "$tmp/log" | grep "pid $last_pid (ksm-workload): method [a-z_]*: enabled" |
                grep -q "readmitting pid $last_pid"; then
                readmitted=$(mergeable "$last_pid")/$(merge_any "$last_pid")
                break
        fi
        sleep 0.05
done
[ "$readmitted" = yes/no ] || fail "after observing, pid $last_pid readmitted with mergeable/merge_any = ${readmitted:-nothing in 10 s}"
stop_daemon
[ ! -e "$tmp/run/exclusions" ] || fail "exclusions left in the journal after the readmission: $(cat "$tmp/run/exclusions")"
alive_untouched "$last_pid"
echo "a readmission decided in Mode=observe carried out once acting again ($readmitted)"
exec 6>&-
