#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The injector process (injector.h) on real KSM:
# 1. the daemon runs without CAP_SYS_PTRACE (CapEff/CapPrm) and without
#    ptrace in its filter, its injector workers hold it and nothing else;
# 2. a real `qemu-system-x86_64 -sandbox on` (Seccomp: 2, libvirt's VM-host
#    case; mem-merge=off so that it marks nothing mergeable itself), matched
#    by Exe= (read through the injector: the daemon cannot readlink a root
#    process's exe any more), gets PR_SET_MEMORY_MERGE injected once its
#    filter was read and evaluated, and keeps running: alive, not stopped,
#    not traced, and its monitor still answers;
# 3. a process whose filter kills on prctl is refused with the reason, and
#    lives;
# 4. the inject worker SIGKILLed while the daemon runs: the daemon starts
#    another and the next process is merged; the supervisor SIGKILLed: the
#    daemon goes on, says so, and stops cleanly restoring its knobs.
set -u
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/ksm-flags.sh"

command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: no qemu-system-x86_64 (apt-get install qemu-system-x86)" >&2; exit 77; }

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin injector
qemu_pid= deny_pid= late_pid=
test_cleanup() { for p in $qemu_pid $deny_pid $late_pid; do kill -KILL "$p" 2>/dev/null; done; }
. "$SOURCE_ROOT/tests/lib/wait.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"
field() { sed -n "s/^$2:\t//p" "/proc/$1/status" 2>/dev/null; }
merge_any() { ksm_flag "$1" merge_any; }
is_merging() { [ "$(merge_any "$1")" = yes ]; }
log_has() { grep -q -e "$1" "$tmp/log"; }
healthy() { # pid: alive, not stopped, not traced
        local st
        st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) || return 1
        case $st in ''|T|t|Z|X) return 1;; esac
        [ "$(field "$1" TracerPid)" = 0 ]
}
has_cap() { # hex mask, capability number
        [ $(( (0x$1 >> $2) & 1 )) = 1 ]
}
children() { cat /proc/"$1"/task/*/children 2>/dev/null; }

mkdir -p "$tmp/policy.d" "$tmp/run"
cp "$KSM_INJECT_TARGET" "$tmp/ksmt2-secdeny"
cp "$KSM_INJECT_TARGET" "$tmp/ksmt2-late"
cat > "$tmp/policy.d/50-qemu.policy" <<POL
[Match]
Exe=*/qemu-system-x86_64
Cmdline=*ksmtuned2-injector.*
[Merge]
Mode=always
Method=inject
# mem-merge=off is the guest's own opt-out: only this key switches it on.
OverrideOptOut=yes
POL
cat > "$tmp/policy.d/51-deny.policy" <<POL
[Match]
Comm=ksmt2-secdeny ksmt2-late
[Merge]
Mode=always
Method=inject
POL
daemon_conf "$tmp/k.conf" Interval=200ms

# A QEMU as libvirt starts it with <seccomp_sandbox>: -sandbox on. -S: its
# vCPU never runs, so it idles; the monitor on a socket proves it still works.
qemu-system-x86_64 -sandbox on -machine pc,mem-merge=off -m 64 -S -nodefaults \
        -display none -monitor unix:"$tmp/mon",server=on,wait=off -serial none > "$tmp/qemu.log" 2>&1 &
qemu_pid=$!
# QEMU installs its filter late in its start-up (0.5 s here; up to 90 s
# allowed on a loaded machine).
qemu_filtered() { [ "$(field $qemu_pid Seccomp)" = 2 ]; }
wait_for 90 qemu_filtered ||
        fail "QEMU did not install its seccomp filter (state $(cut -d' ' -f3 /proc/$qemu_pid/stat 2>/dev/null), wchan $(cat /proc/$qemu_pid/wchan 2>/dev/null), syscall $(cat /proc/$qemu_pid/syscall 2>/dev/null), $(ls /proc/$qemu_pid/task 2>/dev/null | wc -l) threads, fds $(ls -l /proc/$qemu_pid/fd 2>/dev/null | awk '{ print $NF }' | tr '\n' ' ')): $(cat "$tmp/qemu.log")"
[ "$(merge_any $qemu_pid)" = no ] || fail "QEMU merges before the daemon runs"
[ "$(ksm_flag "$qemu_pid" mergeable)" = no ] || fail "QEMU marked ranges mergeable despite mem-merge=off"

# inject-target --seccomp-deny-merge: its filter kills it on
# prctl(PR_SET_MEMORY_MERGE); its stdin (a fifo we hold) keeps it running.
mkfifo "$tmp/deny.in" "$tmp/late.in"
"$tmp/ksmt2-secdeny" --seccomp-deny-merge < "$tmp/deny.in" > "$tmp/deny.out" &
deny_pid=$!
exec 7> "$tmp/deny.in"
wait_for 5 grep -q ready "$tmp/deny.out" || fail "seccomp target did not start"

: > "$tmp/log"
"$KSMTUNED2" --config "$tmp/k.conf" --log-level=debug 2>>"$tmp/log" &
daemon_pid=$!

# 1. Privileges, once the sandbox is applied.
wait_for 10 log_has "Sandbox: kept capabilities" || fail "sandbox not applied"
for set in CapEff CapPrm CapBnd; do
        v=$(field $daemon_pid $set)
        has_cap "$v" 19 && fail "the daemon still has CAP_SYS_PTRACE in $set ($v)"
done
log_has "Sandbox: kept capabilities cap_dac_read_search," || fail "daemon keeps more than cap_dac_read_search"
supervisor=
for c in $(children $daemon_pid); do
        tr '\0' ' ' < /proc/$c/cmdline 2>/dev/null | grep -q -- --injector && supervisor=$c
done
[ -n "$supervisor" ] || fail "no injector supervisor among the daemon's children ($(children $daemon_pid))"
echo "daemon: CapEff $(field $daemon_pid CapEff), CapPrm $(field $daemon_pid CapPrm); supervisor $supervisor"

# 2. QEMU merged through its filter, and still fine.
wait_for 20 is_merging $qemu_pid || fail "QEMU not merged"
wait_for 5 log_has "pid $qemu_pid (qemu-system-x86): method inject: enabled" || fail "QEMU outcome not logged"
sleep 0.5
healthy $qemu_pid || fail "QEMU stopped, traced or gone after the injection"
[ "$(field $qemu_pid Seccomp)" = 2 ] || fail "QEMU lost its filter?"
reply=$(timeout 10 python3 - "$tmp/mon" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"info status\n")
buf = b""
end = time.time() + 8
while b"VM status" not in buf or not buf.rstrip().endswith(b"(qemu)") and time.time() < end:
    s.settimeout(max(0.1, end - time.time()))
    try:
        d = s.recv(4096)
    except socket.timeout:
        break
    if not d:
        break
    buf += d
print(buf.decode(errors="replace"))
PY
)
printf '%s\n' "$reply" | grep -q "VM status: paused" || fail "QEMU's monitor does not answer: $reply"
echo "qemu: $(grep -o "method inject: enabled[^(]*([^)]*)" "$tmp/log" | head -1), Seccomp $(field $qemu_pid Seccomp), ksm_merge_any: $(merge_any "$qemu_pid")"
inject_worker=
for c in $(children $supervisor); do
        [ "$(field $c CapEff)" = 0000000000080004 ] && inject_worker=$c
done
[ -n "$inject_worker" ] || fail "no inject worker with exactly CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH"
[ "$(field $inject_worker Seccomp)" = 2 ] || fail "the inject worker has no seccomp filter"

# 3. The filter that kills prctl: refused, with the reason, and alive.
wait_for 10 log_has "pid $deny_pid (ksmt2-secdeny): method inject refused: EACCES (its seccomp filter would kill the [a-z]* on syscall 157" ||
        fail "filtered target not refused with its reason"
healthy $deny_pid || fail "the filtered target was harmed"
[ "$(merge_any $deny_pid)" = no ] || fail "the filtered target merges"
echo "deny: $(grep -o "method inject refused: EACCES ([^)]*)" "$tmp/log" | head -1)"

# 4a. The inject worker killed: another one serves the next process.
kill -KILL $inject_worker
"$tmp/ksmt2-late" < "$tmp/late.in" > "$tmp/late.out" &
late_pid=$!
exec 6> "$tmp/late.in"
wait_for 20 is_merging $late_pid || fail "process started after the worker's death not merged"
healthy $late_pid || fail "late target harmed"
wait_for 5 log_has "Injector inject worker (pid $inject_worker) is gone" || fail "the worker's death not reported"
echo "worker $inject_worker killed: $(grep -o "Injector inject worker started again as pid [0-9]*" "$tmp/log" | head -1)"

# 4b. The supervisor killed: the daemon lives on, and stops cleanly.
kill -KILL $supervisor
sleep 0.5
kill -0 $daemon_pid 2>/dev/null || fail "the daemon died with its injector"
kill -TERM $daemon_pid; wait $daemon_pid; rc=$?; daemon_pid=
[ "$rc" = 0 ] || fail "daemon exited $rc on SIGTERM"
log_has "KSM knobs restored\|No KSM knob to restore" || fail "knobs not restored at stop"
healthy $qemu_pid || fail "QEMU harmed by the end"
# The self-checking targets: every check passed (exit 0 at EOF).
exec 7>&- 6>&-
wait $deny_pid; rc=$?; deny_pid=
[ "$rc" = 0 ] || fail "the filtered target's self-checks failed ($rc)"
wait $late_pid; rc=$?; late_pid=
[ "$rc" = 0 ] || fail "the late target's self-checks failed ($rc)"
echo "PASS"
