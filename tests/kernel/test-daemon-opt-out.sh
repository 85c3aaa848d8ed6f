#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Admin intent wins (issue 14): a real QEMU started with -machine
# mem-merge=off (libvirt's <nosharepages/>) has opted out of KSM, and a
# policy that would switch merging on for guests leaves it alone; only a
# policy with OverrideOptOut=yes switches it on. A guest with the default
# mem-merge=on marks its RAM itself and is not touched either way.
# Runs the daemon with --dry-run and no [Ksm] settings: no KSM knob is
# written and no process is changed, so the KSM test lock is not needed.
set -u
umask 022
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root"; exit 77; fi
[ -d /sys/kernel/mm/ksm ] || { echo "SKIP: no KSM"; exit 77; }
QEMU=$(command -v qemu-system-x86_64) || { echo "SKIP: qemu-system-x86_64 not installed (package qemu-system-x86)"; exit 77; }

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin optout
fail_log_lines=200
wait_log() { # pattern: waits up to 20 s for a log line matching it
        for _ in $(seq 200); do
                grep -q -e "$1" "$tmp/log" && return 0
                sleep 0.1
        done
        return 1
}
. "$SOURCE_ROOT/tests/lib/ksm-flags.sh"
. "$SOURCE_ROOT/tests/lib/wait.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"

# Two idle guests (-S: no CPU runs), told apart by a -name of this test's own
# so that no other QEMU on the machine matches the policies.
tag=ksmt2-optout-$$
# Started here, not in a $(...) subshell: cleanup must know their pids.
start_qemu() { # name machine-options; sets qemu_pid
        "$QEMU" -name "$tag-$1" -machine "$2" -m 64 -S -nodefaults -nographic -display none \
                -accel tcg </dev/null >"$tmp/qemu-$1.log" 2>&1 &
        qemu_pid=$!
        pids="$pids $qemu_pid"
}
start_qemu off pc,mem-merge=off; off=$qemu_pid
start_qemu on pc; on=$qemu_pid
for _ in $(seq 100); do
        [ "$(ksm_flag "$on" mergeable)" = yes ] && break
        sleep 0.1
done
kill -0 "$off" 2>/dev/null || { cat "$tmp/qemu-off.log"; fail "QEMU (mem-merge=off) did not start"; }
[ "$(ksm_flag "$on" mergeable)" = yes ] || { cat "$tmp/qemu-on.log"; fail "QEMU (mem-merge=on) did not mark its RAM"; }
[ "$(ksm_flag "$off" mergeable)" = no ] || fail "QEMU with mem-merge=off marked memory mergeable"

mkdir -p "$tmp/policy.d" "$tmp/run"
daemon_conf "$tmp/k.conf" Interval=1s
# As the shipped 50-vms.policy: switch merging on for guests by any means.
cat > "$tmp/policy.d/50-guests.policy" <<POL
[Match]
Cmdline=*-name $tag-*
[Merge]
Mode=auto
Method=inject
POL

run_daemon() {
        : > "$tmp/log"
        "$KSMTUNED2" --config "$tmp/k.conf" --dry-run 2>"$tmp/log" &
        daemon_pid=$!
}
stop_daemon() {
        kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
        [ "$rc" = 0 ] || fail "daemon exited $rc on SIGTERM"
}

run_daemon
wait_log "pid $off (qemu-system-x86): leave-alone by $tmp/policy.d/50-guests.policy:1: opted out of KSM itself (-machine pc,mem-merge=off)" ||
        fail "the guest that opted out was not left alone with its reason"
wait_log "pid $on (qemu-system-x86): merge by $tmp/policy.d/50-guests.policy:1" || fail "the other guest not classified"
# Two more ticks: a planned action would be logged by now.
sleep 2
grep -q "pid $off (qemu-system-x86): \[dry-run\] would enable" "$tmp/log" &&
        fail "the daemon would switch merging on for a guest that opted out"
grep -q "pid $on (qemu-system-x86): \[dry-run\] would enable" "$tmp/log" &&
        fail "the daemon would touch a guest that marks its RAM itself"
stop_daemon
echo "mem-merge=off guest left alone: $(grep -o "pid $off .*opted out[^;]*" "$tmp/log" | head -1)"

# An administrator's explicit key overrides the guest's choice.
printf 'OverrideOptOut=yes\n' >> "$tmp/policy.d/50-guests.policy"
run_daemon
wait_log "pid $off (qemu-system-x86): \[dry-run\] would enable merging with method inject" ||
        fail "OverrideOptOut=yes did not switch merging on for the guest"
grep -q "pid $on (qemu-system-x86): \[dry-run\] would enable" "$tmp/log" &&
        fail "the daemon would touch a guest that marks its RAM itself"
stop_daemon
for p in $off $on; do kill -0 "$p" 2>/dev/null || fail "QEMU $p died"; done
echo "OverrideOptOut=yes: would enable"
test_end; trap - EXIT
for p in $off $on; do
        pid_gone "$p" || { echo "FAIL: QEMU $p outlived the test" >&2; exit 1; }
done
echo PASS
