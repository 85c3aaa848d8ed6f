#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What Pause, Resume and SetMode do to the real KSM knobs: paused, the daemon
# writes nothing (a knob set by hand stays), resumed it applies its settings
# again within a tick; in mode observe it only says what it would do; on
# SIGTERM every knob is back as it was. Holds the KSM test lock.
set -u
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/private-bus.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"
KSMCTL=${KSMCTL:-$BUILD_ROOT/src/ksmctl/ksmctl}
tmp=$(mktemp -d)
chmod 755 "$tmp"
daemon_pid=
cleanup() {
        [ -n "$daemon_pid" ] && kill -TERM "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
        private_bus_stop
        rm -rf "$tmp"
        ksm_guard_restore
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; cat "$tmp/daemon.log" >&2; exit 1; }
knob() { cat "$KSM/$1"; }
wait_knob() { # knob value seconds
        for _ in $(seq $(( $3 * 10 ))); do [ "$(knob "$1")" = "$2" ] && return 0; sleep 0.1; done
        return 1
}

echo 1 > "$KSM/smart_scan" || fail "cannot set smart_scan"
before=$(ksm_guard_knobs_now)
mkdir -p "$tmp/run" "$tmp/policy.d"
daemon_conf "$tmp/k.conf" Interval=300ms \
        '[Ksm]' SmartScan=no
private_bus_start "$tmp" || exit 1
"$KSMTUNED2" --config "$tmp/k.conf" 2>"$tmp/daemon.log" &
daemon_pid=$!
wait_knob smart_scan 0 10 || fail "daemon did not apply SmartScan=no"
for _ in $(seq 50); do "$KSMCTL" status >/dev/null 2>&1 && break; sleep 0.1; done

# A burst's windows switch the mmap_lock events on for each window ("1")
# and off after it ("0"; tracefs.c), since every mmap lock call on the host
# passes through them while on. Pausing stops a window that runs (its
# events off at once) and starts none while paused, however much the burst
# would want them: the first window comes at the burst's start, then
# every 500 ms. 256 MiB of unique mergeable pages make a burst of a few
# seconds. enable_seen MS: whether a read of the enable file saw the events
# on within that many ms (read without a fork: a window can be 10 ms).
locks_enable=
enable_seen() {
        local end v
        end=$(( ${EPOCHREALTIME/./} + $1 * 1000 ))
        while [ "${EPOCHREALTIME/./}" -lt "$end" ]; do
                read -r v < "$locks_enable" && [ "$v" != 0 ] && return 0
        done
        return 1
}
inst=$(grep -o "Private tracefs instance [^:]*" "$tmp/daemon.log" | awk '{print $4}')
if [ -n "$inst" ] && [ -e "$inst-locks/events/mmap_lock/mmap_lock_released/enable" ]; then
        locks_enable="$inst-locks/events/mmap_lock/mmap_lock_released/enable"
        exec 7> >(exec "$KSM_WORKLOAD" --unique 65536 --copies 1 --seed 77 > "$tmp/workload")
        enable_seen 20000 || fail "no burst window switched the contention events on within 20 s"
fi

# Paused: hands off, even for a knob set by hand; the tuned knobs stay too.
"$KSMCTL" pause || fail "ksmctl pause"
if [ -n "$locks_enable" ]; then
        [ "$(cat "$locks_enable")" = 0 ] || fail "paused daemon left the contention events switched on"
        ! enable_seen 1500 || fail "paused daemon switched the contention events on for a window"
        exec 7>&-
        echo "ok: paused in a burst: contention events off, and no window for 1.5 s"
fi
tuned=$(for k in run pages_to_scan sleep_millisecs; do printf '%s=%s ' $k "$(knob $k)"; done)
echo 1 > "$KSM/smart_scan"
sleep 1.5
[ "$(knob smart_scan)" = 1 ] || fail "paused daemon rewrote smart_scan"
now=$(for k in run pages_to_scan sleep_millisecs; do printf '%s=%s ' $k "$(knob $k)"; done)
[ "$tuned" = "$now" ] || fail "paused daemon changed tuned knobs: [$tuned] -> [$now]"
"$KSMCTL" status | grep -q ": paused, " || fail "status does not say paused"
echo "ok: paused: smart_scan set by hand stays for 1.5 s, tuned knobs unchanged ($tuned)"

"$KSMCTL" resume || fail "ksmctl resume"
wait_knob smart_scan 0 2 || fail "resumed daemon did not apply SmartScan=no again within 2 s"
echo "ok: resumed: smart_scan=0 again"

# Observe: decide and log, write nothing.
"$KSMCTL" set-mode observe || fail "set-mode observe"
echo 1 > "$KSM/smart_scan"
sleep 1.5
[ "$(knob smart_scan)" = 1 ] || fail "observing daemon wrote smart_scan"
grep -q "would set smart_scan=0" "$tmp/daemon.log" || fail "observing daemon did not say what it would do"
"$KSMCTL" status | grep -q "mode observe (dry run" || fail "status in observe mode"
"$KSMCTL" set-mode auto || fail "set-mode auto"
wait_knob smart_scan 0 2 || fail "mode auto did not apply SmartScan=no again"
echo "ok: observe: nothing written, 'would set' logged; auto applies again"

kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
[ $rc = 0 ] || fail "daemon exited $rc"
after=$(ksm_guard_knobs_now)
[ "$before" = "$after" ] || fail "knobs not restored: before [$before] after [$after]"
echo "ok: SIGTERM restored every knob"
