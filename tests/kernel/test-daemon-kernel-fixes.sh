#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What the daemon tells of the seeds' kernel fixes (000-004) on this kernel,
# from behaviour only, and the adaptation each answer puts in force.
#
# A process churns the layout of its own 16 MiB of unique mergeable pages
# (a thread changing the first page's protection back and forth, which
# splits and merges their VMA under the mmap lock and that VMA's lock held
# for writing): ksmd keeps an unstable tree of them to look pages up in,
# meets the churner's write-held mmap lock (000: a failed trylock, or waits
# without one; with per-VMA lookups the trylock is only their fallback,
# which an mmap/munmap elsewhere in the mm would never reach), takes VMA
# read locks or not for its lookups (001: the daemon's kprobes, where the
# kernel has kprobe events), and skips the unchanged pages on the phase of each
# page's age or of the scan number (004). The daemon's start-up probe times
# MADV_UNMERGEABLE of sparse regions (003). khugepaged runs fast beside it
# (002 can only say yes: its yield of a contended lock). The policy says
# Mode=always, so the churner is judged but never taken out (its tree stays).
#
# KSMTUNED2_EXPECT_FIXES="trylock=yes per-vma=no ..." names the answer each
# fix must reach (the vmkernel suite sets it for its stock and patched 6.12
# guests, tests/vmkernel/test-vmkernel.sh); without it, as on a host whose
# kernel is what it is, each of 000, 003 and 004 must be decided, yes or no,
# and 001 and 002 are printed. Every answer must appear the same in the
# metrics file (the bus property is tested in tests/bus). Waits for the decisions
# are bounded (KSMTUNED2_FIXES_WAIT seconds, default 120); the daemon's
# SIGTERM must restore every knob it changed.
set -u
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin fixes
thp=/sys/kernel/mm/transparent_hugepage
thp_saved=
# khugepaged's knobs as they were
test_cleanup() { for kv in $thp_saved; do echo "${kv#*=}" > "$thp/${kv%%=*}" 2>/dev/null; done; }
fail_context() { echo "--- kernel fixes, windows:"; grep -E 'Kernel fix|contention window|kprobe|tracefs' "$daemon_log" | tail -40; }
fail_log_lines=0
: > "$tmp/log"
wait_s=${KSMTUNED2_FIXES_WAIT:-120}

tracefs=/sys/kernel/tracing
[ -d "$tracefs/events" ] || mount -t tracefs nodev "$tracefs" 2>/dev/null
[ -d "$tracefs/events/mmap_lock" ] || { echo "SKIP: no mmap_lock tracepoints: the windows cannot run" >&2; exit 77; }

echo 0 > "$KSM/run"
echo 1 > "$KSM/smart_scan" 2>/dev/null
echo none > "$KSM/advisor_mode" 2>/dev/null
before=$(ksm_guard_knobs_now)

# khugepaged scanning every 10 ms (saved first, restored on every exit)
if [ -w "$thp/khugepaged/scan_sleep_millisecs" ]; then
        for k in enabled khugepaged/scan_sleep_millisecs khugepaged/alloc_sleep_millisecs khugepaged/pages_to_scan; do
                v=$(cat "$thp/$k"); case $v in *\[*) v=${v#*[}; v=${v%%]*};; esac
                thp_saved="$thp_saved $k=$v"
        done
        echo always > "$thp/enabled"
        echo 10 > "$thp/khugepaged/scan_sleep_millisecs"
        echo 10 > "$thp/khugepaged/alloc_sleep_millisecs"
        echo 4096 > "$thp/khugepaged/pages_to_scan"
fi

mkdir -p "$tmp/run" "$tmp/policy.d"
cat > "$tmp/policy.d/50-churner.policy" <<'POLICY'
[Match]
Comm=ksm-workload
[Merge]
Mode=always
MinAge=1h
POLICY
# MaintenanceScanTime: a full scan a second once the burst is over: seed
# 004's answer needs scans 8, 16, 24 (the default, 2 min a scan, takes most
# of an hour)
daemon_conf "$tmp/k.conf" Interval=1s LogLevel=debug \
        '[Tuning]' ContentionInterval=1s MaintenanceScanTime=1s \
        '[Metrics]' "TextfilePath=$tmp/metrics.prom"

mkfifo "$tmp/in"
"$KSM_WORKLOAD" --unique 4096 --copies 1 --churn-threads 1 --churn-mprotect yes --vmas 20000 --seed 41 < "$tmp/in" > "$tmp/wl.out" 2>&1 &
wl=$!
ksm_guard_track "$wl"
exec 7> "$tmp/in"
for _ in $(seq 200); do grep -q ready "$tmp/wl.out" && break; sleep 0.05; done
grep -q ready "$tmp/wl.out" || fail "the churner did not start"

daemon_start "$tmp/log" --config "$tmp/k.conf" || fail "daemon did not get ready"

# name=seed pairs, in the order of the daemon's table
fixes="trylock=000 per-vma=001 khugepaged=002 range-walk=003 smart-scan=004"
expect() { # the expected state of $1, "" when none is set
        local kv
        for kv in ${KSMTUNED2_EXPECT_FIXES:-}; do [ "${kv%%=*}" = "$1" ] && { echo "${kv#*=}"; return; }; done
        case ${KSMTUNED2_EXPECT_FIXES:-}:$1 in :trylock|:range-walk|:smart-scan) echo "yes|no";; esac
}
# The latest state the daemon logged for fix $1 (name), "" before any.
logged() {
        grep -o "Kernel fix [0-9]* ($1): [a-z]*" "$tmp/log" | tail -1 | sed 's/.*: //'
}
deadline=$(( $(date +%s) + wait_s ))
for kv in $fixes; do
        name=${kv%%=*}
        want=$(expect "$name")
        [ -n "$want" ] || continue
        while :; do
                got=$(logged "$name")
                echo "$got" | grep -qxE "$want" && break
                [ "$(date +%s)" -lt "$deadline" ] || fail "fix ${kv#*=} ($name) is '${got:-unknown}' after $wait_s s, expected $want"
                kill -0 "$daemon_pid" 2>/dev/null || fail "daemon died"
                sleep 0.5
        done
done

# Each answer, its evidence and its adaptation, as the daemon logged it; and
# the same state in the metrics file.
for kv in $fixes; do
        name=${kv%%=*} seed=${kv#*=}
        state=$(logged "$name"); state=${state:-unknown}
        echo "$seed $name: $state"
        grep -o "Kernel fix $seed ($name): .*" "$tmp/log" | tail -1 | cut -c1-300 | sed 's/^/    /'
        want=$(expect "$name")
        [ -z "$want" ] || echo "$state" | grep -qxE "$want" || fail "fix $seed ($name) went back to $state"
        for _ in $(seq 40); do
                grep -q "^ksmtuned2_kernel_fix{fix=\"$name\",seed=\"$seed\",state=\"$state\"} 1" "$tmp/metrics.prom" \
                        2>/dev/null && break
                sleep 0.25
        done
        grep -q "^ksmtuned2_kernel_fix{fix=\"$name\",seed=\"$seed\",state=\"$state\"} 1" "$tmp/metrics.prom" ||
                fail "metrics file does not say $name=$state: $(grep kernel_fix "$tmp/metrics.prom" 2>/dev/null)"
done

kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
[ "$rc" = 0 ] || fail "daemon exited $rc on SIGTERM"
after=$(ksm_guard_knobs_now)
[ "$before" = "$after" ] || fail "knobs differ after SIGTERM: before [$before] after [$after]"
if [ -r "$tracefs/kprobe_events" ] && grep -q "ksmtuned2_" "$tracefs/kprobe_events"; then
        fail "kprobe events left behind: $(grep ksmtuned2_ "$tracefs/kprobe_events")"
fi
echo "SIGTERM: knobs restored, no kprobe left"
