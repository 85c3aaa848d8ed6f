#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon, started on real KSM and stopped with SIGTERM, leaves every knob
# as it found it; after a SIGKILL a restarted daemon restores the values from
# before the first instance, not its own.
set -u
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin restore

# Non-default starting values, so "restored" cannot be confused with "defaults".
echo 0 > $KSM/use_zero_pages
echo 1 > $KSM/smart_scan
echo 300 > $KSM/max_page_sharing
before=$(ksm_guard_knobs_now)

daemon_conf "$tmp/k.conf" Interval=200ms \
        '[Ksm]' UseZeroPages=yes SmartScan=no MaxPageSharing=512
mkdir -p "$tmp/run"

# Ready means READY=1, sent after the first tick: after a SIGKILL the knobs
# already hold the configured values, so they cannot tell a restarted
# daemon that has read its journal from one that has not started yet.
start_daemon() {
        daemon_start "$tmp/log" --config "$tmp/k.conf" --log-level=debug || fail "daemon did not get ready"
        [ "$(cat $KSM/max_page_sharing)" = 512 ] || fail "daemon did not apply its configuration"
}

# 1. SIGTERM restores.
start_daemon
[ "$(cat $KSM/use_zero_pages)" = 1 ] || fail "use_zero_pages not set"
[ "$(cat $KSM/smart_scan)" = 0 ] || fail "smart_scan not set"
kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
[ "$rc" = 0 ] || fail "daemon exited $rc on SIGTERM"
after=$(ksm_guard_knobs_now)
[ "$before" = "$after" ] || fail "knobs differ after SIGTERM: before [$before] after [$after]"
[ ! -e "$tmp/run/saved-knobs" ] || fail "knob journal left behind after a clean stop"
echo "SIGTERM: knobs restored"

# 2. SIGKILL, then a restart: the second instance restores the first's originals.
start_daemon
kill -KILL "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=
[ -s "$tmp/run/saved-knobs" ] || fail "no knob journal after SIGKILL"
start_daemon
grep -q "saved by an earlier instance" "$tmp/log" || fail "restart did not pick up the journal"
kill -INT "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
[ "$rc" = 0 ] || fail "daemon exited $rc on SIGINT"
after=$(ksm_guard_knobs_now)
[ "$before" = "$after" ] || fail "knobs differ after SIGKILL+restart: before [$before] after [$after]"
echo "SIGKILL + restart: knobs restored"

# 3. RestoreKnobsOnExit=no keeps them (and the test guard puts them back).

sed -i 's/^\[Daemon\]$/[Daemon]\nRestoreKnobsOnExit=no/' "$tmp/k.conf"
start_daemon
kill -TERM "$daemon_pid"; wait "$daemon_pid"; daemon_pid=
[ "$(cat $KSM/max_page_sharing)" = 512 ] || fail "RestoreKnobsOnExit=no still restored"
echo "RestoreKnobsOnExit=no: knobs kept"

# 4. --dry-run writes nothing.
ksm_guard_restore
before=$(ksm_guard_knobs_now)
daemon_start "$tmp/dry.log" --config "$tmp/k.conf" --dry-run || fail "dry-run daemon did not get ready"
kill -TERM "$daemon_pid"; wait "$daemon_pid"; daemon_pid=
[ "$before" = "$(ksm_guard_knobs_now)" ] || fail "--dry-run changed knobs"
grep -q "would set max_page_sharing=512" "$tmp/dry.log" || fail "--dry-run did not say what it would do"
echo "--dry-run: nothing written"

# 5. A knob written by someone else while the daemon runs is left alone and
#    not restored at exit; the others are restored.
ksm_guard_restore
sed -i '/^RestoreKnobsOnExit=no$/d' "$tmp/k.conf"
echo 300 > $KSM/max_page_sharing
before_uzp=$(cat $KSM/use_zero_pages) before_ss=$(cat $KSM/smart_scan)
: > "$tmp/log"
start_daemon
echo 700 > $KSM/max_page_sharing || fail "cannot write max_page_sharing by hand"
wait_log() { for _ in $(seq 50); do grep -q -e "$1" "$tmp/log" && return 0; sleep 0.1; done; return 1; }
wait_log "max_page_sharing=700 written by someone else (this daemon wrote 512): leaving it alone" ||
        fail "the daemon did not notice max_page_sharing written by hand"
# Five more ticks (Interval=200ms) must not write it back.
sleep 1
[ "$(cat $KSM/max_page_sharing)" = 700 ] || fail "the daemon overwrote a knob set by hand"
kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
[ "$rc" = 0 ] || fail "daemon exited $rc on SIGTERM"
[ "$(cat $KSM/max_page_sharing)" = 700 ] || fail "a knob set by hand was 'restored' at exit"
[ "$(cat $KSM/use_zero_pages)" = "$before_uzp" ] && [ "$(cat $KSM/smart_scan)" = "$before_ss" ] ||
        fail "the daemon's own knobs were not restored next to the foreign one"
[ ! -e "$tmp/run/saved-knobs" ] || fail "knob journal left behind"
echo "ForeignKnobWrites=leave: max_page_sharing=700 set by hand kept while running and at exit, the rest restored"

# 6. ForeignKnobWrites=override writes it back and restores the original.
echo 300 > $KSM/max_page_sharing
sed -i 's/^\[Daemon\]$/[Daemon]\nForeignKnobWrites=override/' "$tmp/k.conf"
: > "$tmp/log"
start_daemon
echo 700 > $KSM/max_page_sharing || fail "cannot write max_page_sharing by hand"
wait_log "max_page_sharing=700 written by someone else (this daemon wrote 512): writing it back" ||
        fail "the daemon did not notice max_page_sharing written by hand (override)"
for _ in $(seq 50); do [ "$(cat $KSM/max_page_sharing)" = 512 ] && break; sleep 0.1; done
[ "$(cat $KSM/max_page_sharing)" = 512 ] || fail "ForeignKnobWrites=override did not write it back"
kill -TERM "$daemon_pid"; wait "$daemon_pid"; daemon_pid=
[ "$(cat $KSM/max_page_sharing)" = 300 ] || fail "ForeignKnobWrites=override did not restore the original"
echo "ForeignKnobWrites=override: written back to 512, original 300 restored at exit"
