# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by shell tests that run the daemon: start it and wait until it
# says READY=1 (sent after its first tick: journal read, knobs applied,
# processes scanned), which only this instance can make true.
#
#   daemon_start LOG [ENV=VALUE...] [--] ARG...
#       starts "$KSMTUNED2" ARG... with stderr appended to LOG, sets
#       daemon_pid, returns 0 once it is ready, 1 when it did not get there
#       within DAEMON_READY_TIMEOUT seconds (default 30) or died; a prefix
#       command (e.g. setpriv ...) goes in DAEMON_PREFIX. daemon_exec_ms is
#       the wall clock in ms (as date +%s%N / 1000000) just before the exec:
#       a test that times the daemon from its start must not count the
#       readiness waiter's own start (python, 0.3-0.5 s on a busy machine).
#
#   daemon_conf FILE [LINE...]
#       writes a test daemon's configuration to FILE:
#         [Daemon]
#         RuntimeDirectory=DIR/run
#         PolicyDirectories=DIR/policy.d
#       where DIR is FILE's directory, then each LINE on its own line, as given
#       (Key=Value lines belong to [Daemon] until a LINE "[Section]" starts
#       another; a "# comment" LINE is kept as a comment). Policies come
#       from DIR/policy.d only, not from the machine's policy directories;
#       neither directory is created.
daemon_start() {
        local log=$1 dir sock rc
        shift
        dir=$(mktemp -d)
        sock=$dir/notify
        python3 "$SOURCE_ROOT/tests/lib/notify-wait.py" "$sock" "${DAEMON_READY_TIMEOUT:-30}" "$dir/pid" &
        local waiter=$!
        for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.02; done
        daemon_exec_ms=${EPOCHREALTIME//[!0-9]/}
        daemon_exec_ms=$(( daemon_exec_ms / 1000 ))
        NOTIFY_SOCKET=$sock ${DAEMON_PREFIX:-} "$KSMTUNED2" "$@" 2>>"$log" &
        daemon_pid=$!
        echo "$daemon_pid" >"$dir/pid"
        wait "$waiter"; rc=$?
        rm -rf "$dir"
        [ "$rc" = 0 ] && return 0
        echo "daemon_start: pid $daemon_pid $([ "$rc" = 2 ] && echo died || echo 'not ready in time'); its log:" >&2
        tail -30 "$log" >&2
        return 1
}

daemon_conf() {
        local file=$1 dir
        shift
        case $file in
        */*) dir=${file%/*} ;;
        *) dir=. ;;
        esac
        printf '%s\n' '[Daemon]' "RuntimeDirectory=$dir/run" "PolicyDirectories=$dir/policy.d" "$@" >"$file"
}
