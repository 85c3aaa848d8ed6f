#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon on real KSM, after start-up: every thread holds exactly the
# capabilities it keeps (cap_sys_ptrace, cap_dac_read_search; not
# cap_sys_nice where the kernel refuses remote MADV_MERGEABLE), no_new_privs
# and a seccomp filter;
# it still applies and restores knobs through the filter (fatal mode: a
# missing system call would kill it). Sandbox=no keeps everything; under
# valgrind the sandbox is skipped and the log says so.
set -u
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin sandbox
fail_log_lines=200

before=$(ksm_guard_knobs_now)
old_mps=$(cat $KSM/max_page_sharing)
want_mps=$((old_mps == 300 ? 301 : 300))
write_conf() {
        daemon_conf "$tmp/k.conf" Interval=200ms "Sandbox=$1" \
                '[Ksm]' "MaxPageSharing=$want_mps"
}
mkdir -p "$tmp/run"

start_daemon() { # [wrapper...]
        : > "$tmp/log"
        "$@" "$KSMTUNED2" --config "$tmp/k.conf" --log-level=debug 2>>"$tmp/log" &
        daemon_pid=$!
        for _ in $(seq 300); do
                [ "$(cat $KSM/max_page_sharing)" = $want_mps ] && grep -q "Sandbox" "$tmp/log" && return 0
                kill -0 $daemon_pid 2>/dev/null || fail "daemon died"
                sleep 0.1
        done
        fail "daemon did not apply its configuration"
}
stop_daemon() {
        kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
        [ "$rc" = 0 ] || fail "daemon exited $rc on SIGTERM"
        [ "$(cat $KSM/max_page_sharing)" = "$old_mps" ] || fail "max_page_sharing not restored through the sandbox"
}
field() { awk -v f="$1:" '$1 == f { print $2 }' "$2"; }

# 1. Sandbox=yes (the default)
write_conf yes
start_daemon
# CAP_DAC_READ_SEARCH (2); CAP_SYS_NICE (23) and CAP_SYS_PTRACE (19, for
# their mm_access()) where remote MADV_MERGEABLE or process_ksm is; else
# CAP_SYS_PTRACE only in the injector process.
probe=$("$KSMTUNED2" --probe --json | tr ',' '\n')
mask=$(( 1 << 2 ))
printf '%s\n' "$probe" | grep -q -E '"(process_madvise_remote_mergeable|process_ksm_syscall)": *true' &&
        mask=$((mask | (1 << 23) | (1 << 19)))
kept=$(printf '%016x' $mask)
sleep 0.5 # a few ticks through the filter
ntasks=0
for st in /proc/$daemon_pid/task/*/status; do
        ntasks=$((ntasks + 1))
        for f in CapEff CapPrm CapBnd; do
                [ "$(field $f "$st")" = $kept ] || fail "$st: $f=$(field $f "$st"), want $kept"
        done
        [ "$(field CapInh "$st")" = 0000000000000000 ] || fail "$st: inheritable capabilities left"
        [ "$(field CapAmb "$st")" = 0000000000000000 ] || fail "$st: ambient capabilities left"
        [ "$(field NoNewPrivs "$st")" = 1 ] || fail "$st: no_new_privs not set"
        [ "$(field Seccomp "$st")" = 2 ] || fail "$st: no seccomp filter"
done
[ $ntasks -ge 2 ] || fail "expected the ksmd sampler thread too, saw $ntasks task(s)"
grep -q "Sandbox: kept capabilities cap_[a-z_,]*, dropped all others; seccomp allow-list" \
        "$tmp/log" || fail "no sandbox line in the log"
stop_daemon
grep -q "refused system call" "$tmp/log" && fail "the filter refused a system call"
echo "Sandbox=yes: $ntasks threads at CapEff=$kept, no_new_privs, seccomp; knobs restored"

# 2. Sandbox=no keeps everything.
write_conf no
start_daemon
full=$(field CapBnd /proc/self/status)
[ "$(field CapEff /proc/$daemon_pid/status)" = "$full" ] || fail "Sandbox=no dropped capabilities"
[ "$(field Seccomp /proc/$daemon_pid/status)" = 0 ] || fail "Sandbox=no loaded a filter"
grep -q "Sandbox=no: keeping every capability" "$tmp/log" || fail "Sandbox=no not logged"
stop_daemon
echo "Sandbox=no: capabilities kept, no filter"

# 3. Under valgrind the sandbox is skipped, and the log says so.
if command -v valgrind >/dev/null; then
        write_conf yes
        start_daemon valgrind -q --trace-children=no
        grep -q "Sandbox skipped under valgrind" "$tmp/log" || fail "valgrind skip not logged"
        [ "$(field Seccomp /proc/$daemon_pid/status)" = 0 ] || fail "filter loaded under valgrind"
        stop_daemon
        echo "valgrind: sandbox skipped and said so"
else
        echo "valgrind not installed: skip check not run"
fi
[ "$before" = "$(ksm_guard_knobs_now)" ] || fail "knobs differ: before [$before] after [$(ksm_guard_knobs_now)]"
