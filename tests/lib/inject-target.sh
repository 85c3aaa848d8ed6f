# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by shell tests that run tests/helpers/inject-target (a process
# that checks itself while the daemon merges it) as nobody, as real
# targets run as their own users. Needs $tmp, fail() and tests/lib/wait.sh.
#
#   target_start PROGRAM
#       runs PROGRAM (a copy of $KSM_INJECT_TARGET, named for a comm of the
#       test's own so that nothing else on the machine matches its policy)
#       as nobody, its stdin a fifo held open on fd 8, its output in
#       $tmp/target.out and $tmp/target.err; sets target_pid; fails the
#       test unless it says "ready" within 5 s.
#   target_stop
#       closes fd 8, so the target exits, and fails the test unless it
#       exited 0: every self-check passed, the daemon harmed nothing.
target_start() {
        rm -f "$tmp/in"
        mkfifo "$tmp/in"
        setpriv --reuid=65534 --regid=65534 --clear-groups "$1" \
                < "$tmp/in" > "$tmp/target.out" 2> "$tmp/target.err" &
        target_pid=$!
        exec 8> "$tmp/in"
        wait_for 5 grep -q ready "$tmp/target.out" || fail "target did not start"
}

target_stop() {
        local rc
        exec 8>&-
        wait "$target_pid"; rc=$?
        target_pid=
        [ "$rc" = 0 ] || { cat "$tmp/target.err" >&2; fail "target exited $rc: a self-check failed"; }
}
