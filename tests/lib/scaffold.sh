# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by the shell tests that start the daemon or processes of their
# own: a scratch directory, one cleanup that runs on every exit, and fail().
#
#   test_begin NAME [DIR]
#       $tmp: a new directory DIR/ksmtuned2-NAME.XXXXXX (DIR /tmp unless
#       given, e.g. /var/tmp where /tmp is mounted nosuid); daemon_pid and
#       target_pid empty; daemon_log "$tmp/log" unless the test set it
#       before. On exit, whatever the reason, in this order: SIGKILL to
#       $daemon_pid, $target_pid and each pid in $pids; the test's own
#       test_cleanup, when it defines one (a bus to stop, a cgroup to
#       remove, a helper that must see EOF first); fds 7 and 8 closed;
#       every child reaped; $tmp removed; KSM's knobs restored when
#       tests/lib/ksm-guard.sh was sourced (ksm_guard_restore). SIGINT,
#       SIGTERM (meson's timeout) and SIGHUP exit through the same way.
#   fail MESSAGE...
#       "FAIL: MESSAGE" on stderr, then what the test's fail_context prints
#       when it defines one, then the last $fail_log_lines (default 40)
#       lines of $daemon_log (none with fail_log_lines=0), without the other
#       processes' "leave-alone: no policy" lines; exits 1.
test_begin() {
        tmp=$(mktemp -d "${2:-/tmp}/ksmtuned2-$1.XXXXXX") || { echo "FAIL: cannot make a scratch directory" >&2; exit 1; }
        daemon_pid=
        target_pid=
        pids=
        daemon_log=${daemon_log:-$tmp/log}
        trap test_end EXIT
        trap 'exit 130' INT
        trap 'exit 143' TERM
        trap 'exit 129' HUP
}

test_end() {
        local p
        for p in ${daemon_pid:-} ${target_pid:-} ${pids:-}; do
                kill -KILL "$p" 2>/dev/null
        done
        declare -F test_cleanup > /dev/null && test_cleanup
        exec 7>&- 8>&- 2>/dev/null
        wait 2>/dev/null
        rm -rf "$tmp"
        declare -F ksm_guard_restore > /dev/null && ksm_guard_restore
}

fail() {
        echo "FAIL: $*" >&2
        declare -F fail_context > /dev/null && fail_context >&2
        if [ -f "$daemon_log" ] && [ "${fail_log_lines:-40}" != 0 ]; then
                echo "--- daemon log:" >&2
                grep -v "leave-alone: no policy" "$daemon_log" | tail -"${fail_log_lines:-40}" >&2
        fi
        exit 1
}
