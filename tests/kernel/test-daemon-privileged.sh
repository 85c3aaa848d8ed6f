#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# No user can point the root ptracer at a privileged process: a real
# setuid-root binary that nobody runs under the name a policy's Comm= wants
# (a symlink) is not injected, and the reason shows in Explain (ksmctl
# explain) and the decisions; a plain copy under the same name, also run
# by nobody, is merged, so it is the privilege that is refused. Then a
# policy with InjectPrivileged=yes, after a reload, merges the setuid one.
set -u
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/ksm-flags.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"
. "$SOURCE_ROOT/tests/lib/private-bus.sh"

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin priv /var/tmp
suid_pid=
plain_pid=
test_cleanup() {
        [ -n "$suid_pid" ] && kill -KILL "$suid_pid" 2>/dev/null
        [ -n "$plain_pid" ] && kill -KILL "$plain_pid" 2>/dev/null
        private_bus_stop
}
fail_log_lines=30
. "$SOURCE_ROOT/tests/lib/wait.sh"
merge_any() { ksm_flag "$1" merge_any; }
is_merging() { [ "$(merge_any "$1")" = yes ]; }
asleep() { [ "$(cut -d' ' -f1 "/proc/$1/syscall" 2>/dev/null)" = 230 ]; } # clock_nanosleep: exec complete
explained() { "$KSMCTL" explain "$1" --json 2>/dev/null | grep -q -e "$2"; }

chmod 755 "$tmp"
mkdir -p "$tmp/policy.d" "$tmp/run" "$tmp/suid" "$tmp/plain"
chmod 755 "$tmp/suid" "$tmp/plain"
cp /bin/sleep "$tmp/suid/sleep" && chown 0:0 "$tmp/suid/sleep" && chmod 4755 "$tmp/suid/sleep" || fail "cannot make a setuid binary"
cp /bin/sleep "$tmp/plain/sleep"
# A name of our own, so that nothing else on this shared machine matches.
ln -s sleep "$tmp/suid/ksmt2-java"
ln -s sleep "$tmp/plain/ksmt2-java"
cat > "$tmp/policy.d/50-java.policy" <<POL
[Match]
Comm=ksmt2-java
[Merge]
Mode=always
Method=inject
POL
daemon_conf "$tmp/k.conf" Interval=200ms

setpriv --reuid=65534 --regid=65534 --clear-groups "$tmp/suid/ksmt2-java" 1000 &
suid_pid=$!
setpriv --reuid=65534 --regid=65534 --clear-groups "$tmp/plain/ksmt2-java" 1000 &
plain_pid=$!
wait_for 5 asleep "$suid_pid" || fail "setuid target did not start"
wait_for 5 asleep "$plain_pid" || fail "plain target did not start"
[ "$(sed -n 's/^Uid:\t//p' "/proc/$suid_pid/status")" = "$(printf '65534\t0\t0\t0')" ] || fail "target is not setuid"

private_bus_start "$tmp" || exit 1
daemon_start "$tmp/log" --config "$tmp/k.conf" || fail "daemon did not start"

wait_for 10 is_merging "$plain_pid" || fail "the plain copy was not merged"
want="method inject refused: EPERM (pid $suid_pid is setuid or setgid (uid 65534 0 0 0"
wait_for 10 explained "$suid_pid" "$want" || {
        "$KSMCTL" explain "$suid_pid" >&2
        fail "ksmctl explain does not show the refusal"
}
is_merging "$suid_pid" && fail "the setuid process was injected"
grep -q "pid $suid_pid (ksmt2-java): $want" "$tmp/log" || fail "the decision is not logged"
"$KSMCTL" status 2>/dev/null | grep -q "pid $suid_pid (ksmt2-java): method inject refused: EPERM" ||
        fail "ksmctl status does not list the refusal among the last decisions"
[ "$(sed -n 's/^TracerPid:\t//p' "/proc/$suid_pid/status")" = 0 ] || fail "setuid process left traced"

# The explicit opt-in.
echo "InjectPrivileged=yes" >> "$tmp/policy.d/50-java.policy"
kill -HUP "$daemon_pid"
wait_for 70 is_merging "$suid_pid" || fail "InjectPrivileged=yes did not merge the setuid process"
echo "ok: setuid target refused (EPERM, in explain, status and log), merged with InjectPrivileged=yes"
