#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The bus API on a private dbus-daemon: every property and method, as root
# and as nobody (reads allowed, changes refused with AccessDenied), malformed
# arguments, clients that vanish mid-call, PropertiesChanged, a foreign
# client (busctl, dbus-send, gdbus), the daemon coming up before the bus and
# surviving a bus restart, and ksmctl's output as a user reads it.
#
# The daemon runs with --dry-run: it reads KSM but never writes it, so this
# test needs no KSM lock (test-bus-pause.sh covers what pause does to knobs).
set -u
umask 022 # policies must not be writable by others (the daemon rejects them)
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (to call as nobody)"; exit 77; }
command -v dbus-daemon >/dev/null || { echo "SKIP: no dbus-daemon"; exit 77; }
command -v busctl >/dev/null || { echo "SKIP: no busctl"; exit 77; }
PROMTOOL=${PROMTOOL:-$(command -v promtool)}
[ -n "$PROMTOOL" ] || { echo "FAIL: no promtool: .ci/install-deps unpacks it into /var/cache/ksmtuned2-ci/bin" >&2; exit 1; }
[ -d /sys/kernel/mm/ksm ] || { echo "SKIP: no KSM"; exit 77; }

. "$SOURCE_ROOT/tests/lib/private-bus.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"
unset COLUMNS # ksmctl's tables take their natural width (not a terminal)
KSMCTL=${KSMCTL:-$BUILD_ROOT/src/ksmctl/ksmctl}
MEMBERS="$SOURCE_ROOT/tests/bus/introspect-members.py"
IFACE=org.ksmtuned2.Manager1
. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin bus
chmod 755 "$tmp"
daemon_log=$tmp/daemon.log
test_cleanup() {
        [ -n "${WORKLOAD_PID:-}" ] && kill -KILL "$WORKLOAD_PID" 2>/dev/null
        [ -n "${hostile_pid:-}" ] && kill -KILL "$hostile_pid" 2>/dev/null && wait "$hostile_pid" 2>/dev/null
        [ -n "${hostile_cg:-}" ] && rmdir "$hostile_cg" 2>/dev/null
        private_bus_stop
        jobs -p | xargs -r kill -KILL 2>/dev/null
}
ok() { echo "ok: $*"; }
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
prop() { busctl get-property org.ksmtuned2 /org/ksmtuned2 $IFACE "$1"; }
# dbus-send prints the D-Bus error name, which busctl does not.
send() { dbus-send --system --print-reply --dest=org.ksmtuned2 /org/ksmtuned2 "$IFACE.$1" "${@:2}" 2>&1; }
wait_for() { # seconds command...
        local n=$(( $1 * 10 )); shift
        for _ in $(seq $n); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
        return 1
}
state_is() { [ "$(prop State)" = "s \"$1\"" ]; }

mkdir -p "$tmp/run" "$tmp/policy.d"
daemon_conf "$tmp/k.conf" Interval=300ms \
        '[Metrics]' "TextfilePath=$tmp/metrics/ksmtuned2.prom"
mkdir -p "$tmp/metrics"
cat > "$tmp/policy.d/50-test.policy" <<POLICY
# A process of this test's own, never touched (Method=none).
[Match]
Exe=$KSM_WORKLOAD
[Merge]
Mode=auto
Method=none
POLICY
# Nothing is marked mergeable (--merge none), so no ksmd run by anyone else
# can merge it and disturb their figures.
coproc WORKLOAD { exec "$KSM_WORKLOAD" --merge none --unique 16 --copies 1; }
read -r _ wl_pid _ <&"${WORKLOAD[0]}" || fail "ksm-workload did not start"
start_daemon() {
        "$KSMTUNED2" --dry-run --config "$tmp/k.conf" 2>>"$tmp/daemon.log" &
        daemon_pid=$!
}

# --- 1. The daemon starts before the bus exists: it tunes on, says so once,
# and connects when the bus appears.
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$tmp/system_bus_socket"
out=$("$KSMCTL" status 2>&1); rc=$?
[ $rc = 3 ] || fail "ksmctl status without a bus exited $rc, want 3"
grep -q "^ksmtuned2 is not running" <<<"$out" || fail "ksmctl status without a bus: $out"
grep -q "^Knobs: .*run=[012]" <<<"$out" || fail "ksmctl status without a daemon does not show the kernel's knobs: $out"
# the counters wrap at the terminal's width: pages_sharing may be on the next line
grep -q "^Counters: " <<<"$out" && grep -q "pages_sharing=" <<<"$out" || fail "no kernel counters without a daemon: $out"
"$KSMCTL" status --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["daemon"]["running"] is False; assert "pages_sharing" in d["counters"]; assert isinstance(d["knobs"]["run"], int)' ||
        fail "ksmctl status --json without a daemon"
ok "ksmctl status without a daemon: says so, exit 3, shows the kernel's counters"

start_daemon
sleep 1.5
kill -0 "$daemon_pid" || fail "daemon died without a bus"
[ "$(grep -c "system bus is not reachable" "$tmp/daemon.log")" = 1 ] || fail "want one 'not reachable' line"
private_bus_start "$tmp" || exit 1
wait_for 20 state_is running || fail "daemon did not connect once the bus appeared"
ok "daemon without a bus: tunes on, said so once, connected when the bus appeared"

# --- 2. Introspection: busctl, a client that is not ours, sees the interface
# exactly as --bus-introspect prints it.
"$KSMTUNED2" --bus-introspect | "$MEMBERS" $IFACE | sort > "$tmp/want" || fail "--bus-introspect"
busctl introspect --xml-interface org.ksmtuned2 /org/ksmtuned2 | "$MEMBERS" $IFACE | sort > "$tmp/got" ||
        fail "busctl introspect"
diff -u "$tmp/want" "$tmp/got" || fail "the live interface differs from --bus-introspect"
as_nobody busctl introspect org.ksmtuned2 /org/ksmtuned2 $IFACE >/dev/null || fail "nobody cannot introspect"
ok "busctl introspects the live object as --bus-introspect describes it ($(wc -l < "$tmp/want") members)"

# --- 3. Every property is readable by root and by nobody, through Get and GetAll.
props=$(awk '$1 == "property" { print $2 }' "$tmp/want")
for p in $props; do
        prop "$p" >/dev/null || fail "root cannot read $p"
        as_nobody busctl get-property org.ksmtuned2 /org/ksmtuned2 $IFACE "$p" >/dev/null || fail "nobody cannot read $p"
done
as_nobody busctl call org.ksmtuned2 /org/ksmtuned2 org.freedesktop.DBus.Properties GetAll s $IFACE >/dev/null ||
        fail "nobody cannot GetAll"
ok "all $(wc -w <<<"$props") properties readable by root and by nobody"

# The figures are the system's own.
[ "$(prop Version)" = "s \"$("$KSMTUNED2" --version | cut -d' ' -f2)\"" ] || fail "Version $(prop Version)"
[ "$(prop KernelRelease)" = "s \"$(uname -r)\"" ] || fail "KernelRelease $(prop KernelRelease)"
ksmd=$(ps -eo pid=,comm= | awk '$2 == "ksmd" { print $1 }')
[ "$(prop KsmdPID)" = "i $ksmd" ] || fail "KsmdPID $(prop KsmdPID), ksmd is $ksmd"
memtotal=$(( $(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) * 1024 ))
[ "$(prop MemTotalBytes)" = "t $memtotal" ] || fail "MemTotalBytes $(prop MemTotalBytes), want $memtotal"
[ "$(prop IntervalUSec)" = "t 300000" ] || fail "IntervalUSec $(prop IntervalUSec)"
[ "$(prop ConfigPath)" = "s \"$tmp/k.conf\"" ] || fail "ConfigPath $(prop ConfigPath)"
[ "$(prop DryRun)" = "b true" ] || fail "DryRun $(prop DryRun)"
[ "$(prop Mode)" = 's "auto"' ] || fail "Mode $(prop Mode)"
prop Features | grep -q '"ksm" true' || fail "Features lacks ksm: $(prop Features)"
# one (name state evidence adaptation) per seed fix, in seed order; the
# unmerge probe decides 003 at start
prop KernelFixes | grep -q '^a(ssss) 5 "trylock" "[a-z]*" ".*" "per-vma" .* "khugepaged" .* "range-walk" "\(yes\|no\)" .* "smart-scan" ' ||
        fail "KernelFixes: $(prop KernelFixes)"
prop Knobs | grep -q '"pages_to_scan" "[0-9]*"' || fail "Knobs: $(prop Knobs)"
prop Counters | grep -q '"full_scans" [0-9]' || fail "Counters: $(prop Counters)"
t1=$(prop Ticks | cut -d' ' -f2); sleep 0.7; t2=$(prop Ticks | cut -d' ' -f2)
[ "$t2" -gt "$t1" ] || fail "Ticks does not advance ($t1 -> $t2)"
prop ControllerPhase | grep -Eq '^s "(maintain|burst|decay|idle)"$' || fail "ControllerPhase $(prop ControllerPhase)"
prop ControllerReason | grep -q '^s ".' || fail "ControllerReason is empty"
# BurstAllowance=30s by default: the bucket holds at most that much ksmd CPU.
allowance=$(prop BurstAllowanceUSec | sed -n 's/^x \(-\?[0-9]*\)$/\1/p')
[ -n "$allowance" ] && [ "$allowance" -le 30000000 ] && [ "$allowance" -ge -30000000 ] ||
        fail "BurstAllowanceUSec $(prop BurstAllowanceUSec)"
ok "properties carry the system's figures (version, kernel, ksmd pid, memory, config, ticks, controller)"

# --- 3b. The metrics file: written every tick, atomically, valid for promtool.
wait_for 5 test -s "$tmp/metrics/ksmtuned2.prom" || fail "no metrics file"
"$PROMTOOL" check metrics < "$tmp/metrics/ksmtuned2.prom" || fail "promtool rejects the metrics file: $(cat "$tmp/metrics/ksmtuned2.prom")"
for m in ksmtuned2_saved_bytes ksmtuned2_ksm_pages_sharing ksmtuned2_ksm_run ksmtuned2_ksmd_cpu_ratio \
         'ksmtuned2_ksmd_blocked_ratio{on="mmap_lock"}' ksmtuned2_managed_processes ksmtuned2_dry_run; do
        grep -q "^$m [0-9]" "$tmp/metrics/ksmtuned2.prom" || fail "metrics file lacks $m"
done
grep -q '^ksmtuned2_info{version=".*",kernel="'"$(uname -r)"'"} 1$' "$tmp/metrics/ksmtuned2.prom" ||
        fail "metrics info line"
# The phase as a state set: one sample per phase, exactly one of them 1.
[ "$(grep -c '^ksmtuned2_controller_phase{phase="\(maintain\|burst\|decay\|idle\)"} [01]$' "$tmp/metrics/ksmtuned2.prom")" = 4 ] &&
        [ "$(grep -c '^ksmtuned2_controller_phase{.*} 1$' "$tmp/metrics/ksmtuned2.prom")" = 1 ] ||
        fail "metrics controller phase: $(grep controller_phase "$tmp/metrics/ksmtuned2.prom")"
grep -q '^ksmtuned2_controller_burst_allowance_seconds -\?[0-9.]*$' "$tmp/metrics/ksmtuned2.prom" ||
        fail "metrics file lacks the burst allowance"
grep -q '^ksmtuned2_mode{mode="auto"} 1$' "$tmp/metrics/ksmtuned2.prom" || fail "metrics mode state set"
! grep -q 'cgroup=' "$tmp/metrics/ksmtuned2.prom" || fail "a metric is labelled by cgroup path"
ticks() { awk '$1 == "ksmtuned2_ticks_total" { print $2 }' "$tmp/metrics/ksmtuned2.prom"; }
m1=$(ticks); sleep 0.7; m2=$(ticks)
[ "$m2" -gt "$m1" ] || fail "the metrics file is not rewritten every tick ($m1 -> $m2)"
ok "metrics file: replaced every tick, passes promtool check metrics"

# --- 3c. History: an entry per tick, for anyone, from a given time on.
history_count() { busctl call org.ksmtuned2 /org/ksmtuned2 $IFACE History t "$1" | awk '{ print $2 }'; }
h1=$(history_count 0); sleep 1; h2=$(history_count 0)
[ "$h1" -ge 1 ] && [ "$h2" -ge $((h1 + 2)) ] || fail "History does not grow with the ticks ($h1 -> $h2)"
as_nobody busctl call org.ksmtuned2 /org/ksmtuned2 $IFACE History t 0 | grep -q '^a(ttustxddttdu) [1-9][0-9]* [0-9]* ' ||
        fail "nobody cannot read History"
[ "$(history_count $(( ($(date +%s) + 3600) * 1000000 )))" = 0 ] || fail "History since an hour from now is not empty"
ok "History: grows with every tick ($h1 -> $h2 entries), readable by nobody, from since_usec on"

# --- 4. Changes: refused to nobody with AccessDenied, state unchanged.
for call in "Pause" "Resume" "Reload" "SetMode string:observe"; do
        out=$(as_nobody dbus-send --system --print-reply --dest=org.ksmtuned2 /org/ksmtuned2 $IFACE.$call 2>&1)
        grep -q "org.freedesktop.DBus.Error.AccessDenied" <<<"$out" || fail "nobody's $call was not refused: $out"
done
state_is running || fail "nobody's Pause had an effect"
[ "$(prop Mode)" = 's "auto"' ] || fail "nobody's SetMode had an effect"
out=$(as_nobody "$KSMCTL" pause 2>&1); rc=$?
[ $rc = 4 ] || fail "ksmctl pause as nobody exited $rc, want 4"
grep -q "permission denied" <<<"$out" || fail "ksmctl pause as nobody said: $out"
# Only root may own the name (systemd/org.ksmtuned2.conf).
out=$(as_nobody dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.RequestName string:org.ksmtuned2 uint32:4 2>&1)
grep -q "AccessDenied" <<<"$out" || fail "nobody may own org.ksmtuned2: $out"
ok "nobody: every change refused with AccessDenied (ksmctl exit 4), cannot own the name"

# --- 5. Changes as root, and PropertiesChanged for them.
gdbus monitor --system --dest org.ksmtuned2 --object-path /org/ksmtuned2 > "$tmp/signals" 2>&1 &
monitor_pid=$!
sleep 0.5
send Pause >/dev/null || fail "Pause"
state_is paused || fail "State after Pause: $(prop State)"
prop LastDecisions | grep -q "paused.*uid 0" || fail "Pause not in LastDecisions: $(prop LastDecisions)"
send Pause >/dev/null || fail "a second Pause is not idempotent"
send Resume >/dev/null || fail "Resume"
state_is running || fail "State after Resume: $(prop State)"
for mode in observe tune-only auto; do
        send SetMode string:$mode >/dev/null || fail "SetMode $mode"
        [ "$(prop Mode)" = "s \"$mode\"" ] || fail "Mode after SetMode $mode: $(prop Mode)"
done
send Reload >/dev/null || fail "Reload"
sleep 1
kill "$monitor_pid"; wait "$monitor_pid" 2>/dev/null
grep -q "PropertiesChanged.*'State': <'paused'>" "$tmp/signals" || fail "no PropertiesChanged for State: $(head -c 2000 "$tmp/signals")"
grep -q "PropertiesChanged.*'Mode': <'observe'>" "$tmp/signals" || fail "no PropertiesChanged for Mode"
grep -q "PropertiesChanged.*'Ticks'" "$tmp/signals" || fail "no PropertiesChanged for Ticks"
! grep -q "PropertiesChanged.*'Version'" "$tmp/signals" || fail "a const property was sent as changed"
ok "root: Pause/Resume/SetMode/Reload work, are logged with the caller's uid, and emit PropertiesChanged"

# --- 6. Malformed calls get proper D-Bus errors, and the daemon lives on.
expect_error() { # error-name call args...
        local want=$1; shift
        out=$(send "$@")
        grep -q "$want" <<<"$out" || fail "$* answered [$out], want $want"
}
expect_error org.ksmtuned2.Error.InvalidMode SetMode string:bogus
grep -q 'Unknown mode "bogus"' <<<"$out" || fail "InvalidMode message: $out"
expect_error org.ksmtuned2.Error.InvalidMode SetMode "string:$(printf 'x\033[2Jy')"
expect_error org.freedesktop.DBus.Error.InvalidArgs SetMode uint32:3
expect_error org.freedesktop.DBus.Error.InvalidArgs SetMode
expect_error org.freedesktop.DBus.Error.InvalidArgs Pause string:now
expect_error org.freedesktop.DBus.Error.UnknownMethod Frobnicate
expect_error org.freedesktop.DBus.Error.InvalidArgs History string:1h
out=$(busctl set-property org.ksmtuned2 /org/ksmtuned2 $IFACE PagesToScan t 5000 2>&1) &&
        fail "a read-only property could be set"
grep -q "is not writable" <<<"$out" || fail "setting a read-only property said: $out"
echo "[Daemon" > "$tmp/bad.conf"; cp "$tmp/k.conf" "$tmp/k.conf.good"; cp "$tmp/bad.conf" "$tmp/k.conf"
expect_error org.ksmtuned2.Error.ReloadFailed Reload
grep -q "running configuration is kept" <<<"$out" || fail "ReloadFailed message: $out"
cp "$tmp/k.conf.good" "$tmp/k.conf"
[ "$(prop IntervalUSec)" = "t 300000" ] || fail "a failed reload changed the configuration"
# A metrics path that cannot be written: said once, tuning goes on.
sed "s|^TextfilePath=.*|TextfilePath=$tmp/no-such-dir/ksmtuned2.prom|" "$tmp/k.conf.good" > "$tmp/k.conf"
send Reload >/dev/null || fail "Reload with an unwritable metrics path"
t1=$(prop Ticks | cut -d' ' -f2); sleep 1.2; t2=$(prop Ticks | cut -d' ' -f2)
[ "$t2" -ge $((t1 + 2)) ] || fail "ticks stalled with an unwritable metrics path ($t1 -> $t2)"
[ "$(grep -c "Cannot write the metrics file $tmp/no-such-dir/ksmtuned2.prom, going on without it: No such file or directory" "$tmp/daemon.log")" = 1 ] ||
        fail "want one line about the unwritable metrics file"
cp "$tmp/k.conf.good" "$tmp/k.conf"
send Reload >/dev/null || fail "Reload back"
kill -0 "$daemon_pid" || fail "daemon died of malformed calls"
ok "malformed calls: InvalidMode, InvalidArgs, UnknownMethod, read-only, ReloadFailed; unwritable metrics said once; daemon unharmed"

# --- 7. Clients that disappear mid-call.
for i in $(seq 20); do
        busctl call org.ksmtuned2 /org/ksmtuned2 org.freedesktop.DBus.Properties GetAll s $IFACE >/dev/null 2>&1 &
        p=$!
        sleep 0.0$((i % 5))
        kill -KILL $p 2>/dev/null
        wait $p 2>/dev/null
        dbus-send --system --dest=org.ksmtuned2 /org/ksmtuned2 $IFACE.Resume 2>/dev/null # no wait for the reply
done
kill -0 "$daemon_pid" || fail "daemon died of vanishing clients"
state_is running || fail "daemon does not answer after vanishing clients"
ok "20 clients killed mid-call, 20 that never wait for the reply: daemon answers on"

# --- 8. ksmctl as a user reads it.
out=$(as_nobody "$KSMCTL" status); rc=$?
[ $rc = 0 ] || fail "ksmctl status as nobody exited $rc"
grep -q "^ksmtuned2 .*: running, mode auto (dry run: nothing is written), every 300ms$" <<<"$out" ||
        fail "status headline: $out"
grep -q "^Saved: .* ([0-9]* pages sharing); general profit" <<<"$out" || fail "status savings: $out"
grep -q "^ksmd: .*CPU [0-9.]*%, blocked on mmap_lock [0-9.]*%, elsewhere [0-9.]*% ([0-9]* samples), pid $ksmd$" <<<"$out" ||
        fail "status ksmd line: $out"
grep -Eq "^Controller: (maintain|burst|decay|idle), allowance ([0-9.]+(us|ms|s|min) left|overdrawn by .*|spent): .+$" <<<"$out" ||
        fail "status controller line: $out"
grep -q "^Knobs: .*pages_to_scan=[0-9]" <<<"$out" || fail "status knobs: $out"
# Pages as sizes, with the count; full_scans is a plain number.
grep -q "^Counters:   pages_shared=[0-9.]* \([KMGTP]i\)\?B ([0-9]* pages\?)," <<<"$out" || fail "status counters: $out"
grep -q " full_scans=[0-9]*,\?$\| full_scans=[0-9]*, " <<<"$out" || fail "status full_scans: $out"
grep -q "^Features: .*ksm " <<<"$out" || fail "status features: $out"
grep -q "^Kernel fixes:$" <<<"$out" || fail "status has no Kernel fixes block: $out"
grep -q "^  range-walk  \(yes\|no\) *MADV_UNMERGEABLE of 16 MiB sparse took" <<<"$out" || fail "status range-walk: $out"
grep -q "^  smart-scan  \(unknown\|yes\|no\) " <<<"$out" || fail "status smart-scan: $out"
grep -q "^Processes: *[1-9][0-9]* managed$" <<<"$out" || fail "status processes: $out"
grep -q "^Memory: .* available of .*iB$" <<<"$out" || fail "status memory: $out"
grep -q "^Last decisions ([0-9]* in all):" <<<"$out" || fail "status decisions: $out"
grep -q "^  [0-9-]* [0-9:]*  admin    configuration reloaded (requested over the bus by uid 0)$" <<<"$out" ||
        fail "status does not show the last decisions: $out"
as_nobody "$KSMCTL" status --json > "$tmp/status.json" || fail "ksmctl status --json"
python3 - "$tmp/status.json" "$ksmd" <<'PY' || fail "ksmctl status --json content: $(cat "$tmp/status.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["daemon"]["running"] is True and d["daemon"]["mode"] == "auto" and d["daemon"]["dry_run"] is True
assert d["daemon"]["state"] == "running" and d["daemon"]["interval_usec"] == 300000
assert d["ksmd"]["pid"] == int(sys.argv[2]) and 0 <= d["ksmd"]["cpu_fraction"] <= 2
assert isinstance(d["knobs"]["pages_to_scan"], int) and d["knobs"]["advisor_mode"] in ("none", "scan-time")
assert isinstance(d["savings"]["saved_bytes"], int)
assert d["kernel"]["features"]["ksm"] is True
fixes = {x["name"]: x for x in d["kernel"]["fixes"]}
assert list(fixes) == ["trylock", "per-vma", "khugepaged", "range-walk", "smart-scan"], fixes
assert fixes["range-walk"]["state"] in ("yes", "no") and fixes["range-walk"]["adaptation"], fixes
c = d["controller"]
assert c["phase"] in ("maintain", "burst", "decay", "idle") and isinstance(c["burst_allowance_usec"], int) and c["reason"]
admin = [x for x in d["decisions"] if x["kind"] == "admin"]
assert admin[0]["text"].startswith("configuration reloaded"), admin
assert any("mode auto (was tune-only)" in x["text"] for x in d["decisions"])
PY
"$KSMCTL" set-mode observe || fail "ksmctl set-mode observe"
"$KSMCTL" status | grep -q "mode observe" || fail "ksmctl status after set-mode observe"
"$KSMCTL" set-mode auto || fail "ksmctl set-mode auto"
out=$("$KSMCTL" set-mode warp 2>&1); rc=$?
[ $rc = 1 ] && grep -q 'Unknown mode "warp": expected auto, tune-only or observe' <<<"$out" || fail "set-mode warp: $rc $out"
"$KSMCTL" pause && "$KSMCTL" status | grep -q ": paused, " || fail "ksmctl pause"
"$KSMCTL" resume && "$KSMCTL" status | grep -q ": running, " || fail "ksmctl resume"
"$KSMCTL" reload || fail "ksmctl reload"
"$KSMCTL" | grep -q "^ksmtuned2 .*: running, " || fail "ksmctl without a command is not status"
out=$(as_nobody "$KSMCTL" -q); rc=$?
[ $rc = 0 ] && [ -z "$out" ] || fail "ksmctl -q while the daemon runs: $rc $out"
"$KSMCTL" status extra >/dev/null 2>&1; [ $? = 2 ] || fail "ksmctl status extra: want usage error"
"$KSMCTL" --cgroups status >/dev/null 2>&1; [ $? = 2 ] || fail "--cgroups outside list: want usage error"
# monitor: refreshes, one JSON object per frame, exits 0 on Ctrl-C.
setpriv --reuid=65534 --regid=65534 --clear-groups -- "$KSMCTL" monitor --json --interval=300ms > "$tmp/monitor.json" &
mon=$!
sleep 2
kill -INT $mon; wait $mon; rc=$?
[ $rc = 0 ] || fail "ksmctl monitor exited $rc on SIGINT"
frames=$(wc -l < "$tmp/monitor.json")
[ "$frames" -ge 4 ] || fail "ksmctl monitor drew $frames frames in 2 s"
python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$tmp/monitor.json" || fail "monitor --json lines"
"$KSMCTL" monitor > "$tmp/monitor.txt" & mon=$!
sleep 1; kill -TERM $mon; wait $mon; rc=$?
[ $rc = 0 ] && grep -q "^ksmtuned2 .*: running" "$tmp/monitor.txt" || fail "ksmctl monitor (human) rc=$rc"
# On a terminal each frame clears the screen; Ctrl-C still ends it with 0.
if command -v script >/dev/null; then
        script -qec "timeout --preserve-status -s INT 1.5 '$KSMCTL' monitor --interval=200ms" "$tmp/tty" >/dev/null; rc=$?
        [ $rc = 0 ] || fail "ksmctl monitor on a terminal exited $rc on SIGINT"
        [ "$(grep -o $'\033\[2J' "$tmp/tty" | wc -l)" -ge 3 ] || fail "ksmctl monitor on a terminal did not redraw"
fi
ok "ksmctl: status (human, --json, as nobody), set-mode, pause, resume, reload, monitor ($frames frames, clean Ctrl-C)"

# --- 8b. Processes: list, list --cgroups, explain, as nobody too.
wait_for 10 sh -c "'$KSMCTL' list | grep -q '^$wl_pid '" || fail "ksmctl list lacks the test workload: $("$KSMCTL" list)"
# nobody sees none of root's processes (test-bus-visibility.sh has the rest).
out=$(as_nobody "$KSMCTL" list --all) || fail "ksmctl list as nobody"
! grep -q "^$wl_pid " <<<"$out" || fail "nobody's ksmctl list shows root's workload: $out"
grep -q "^Only your own processes are listed" <<<"$out" || fail "nobody's ksmctl list does not say why: $out"
out=$("$KSMCTL" list) || fail "ksmctl list"
# WHERE: the unit when the cgroup names one (a runner in a session or init
# scope), else the cgroup path.
grep -q "^$wl_pid  *ksm-workload  *0 B  *0 B merge  *none  *no  [^ ][^ ]*  *$tmp/policy.d/50-test.policy:2$" <<<"$out" ||
        fail "ksmctl list line for the workload: $out"
grep -q "^PID  *COMM  *MERGED  *PROFIT  *VERDICT  *METHOD  *ON  *WHERE  *POLICY$" <<<"$out" || fail "list header: $out"
grep -q "^[0-9]* of [0-9]* processes shown (--all for every one); .* merging in all.$" <<<"$out" || fail "list footer: $out"
! grep -q " $" <<<"$out" || fail "list: a line ends in a blank: $out"
# --no-legend: the rows alone, for scripts (and the completion of pids).
out=$("$KSMCTL" list --no-legend) || fail "ksmctl list --no-legend"
grep -q "^$wl_pid " <<<"$out" && ! grep -qv "^[0-9]" <<<"$out" || fail "list --no-legend: $out"
[ -z "$("$KSMCTL" list --cgroups --no-legend | grep -v "^ *[0-9.]* [KMGTP]\?i\?B ")" ] || fail "list --cgroups --no-legend"
# The terminal's width ($COLUMNS here): the widest column is cut, with an ellipsis.
LC_ALL=C.UTF-8 COLUMNS=60 "$KSMCTL" list > "$tmp/list60" || fail "COLUMNS=60 ksmctl list"
LC_ALL=C.UTF-8 COLUMNS=40 "$KSMCTL" list --cgroups > "$tmp/cgroups40" || fail "COLUMNS=40 ksmctl list --cgroups"
python3 - "$tmp/list60" "$tmp/cgroups40" "$wl_pid" <<'PY' || fail "list at 60 and 40 columns: $(cat "$tmp/list60" "$tmp/cgroups40")"
import sys
# The table, above the blank line; the footer is a sentence, never cut.
text = open(sys.argv[1], encoding="utf-8").read()
rows, footer = text.split("\n\n")
rows = rows.splitlines()
assert all(len(l) <= 60 for l in rows), [l for l in rows if len(l) > 60]
assert rows[0].split() == ["PID", "COMM", "MERGED", "PROFIT", "VERDICT", "METHOD", "ON", "WHERE", "POLICY"], rows[0]
wl = [l for l in rows if l.startswith(sys.argv[3] + " ")]
assert len(wl) == 1 and wl[0].endswith("\u2026"), wl  # the policy path, widest, is cut
assert footer.endswith("merging in all.\n"), footer
cg = open(sys.argv[2], encoding="utf-8").read().split("\n\n")[0].splitlines()
assert all(len(l) <= 40 for l in cg), [l for l in cg if len(l) > 40]
assert cg[0].split() == ["MERGED", "PROFIT", "PROCS", "VM/UNIT", "CGROUP"], cg[0]
PY
out=$("$KSMCTL" list -q); rc=$?
[ $rc = 0 ] && [ -z "$out" ] || fail "list -q: $rc: $out"
[ "$("$KSMCTL" list --all | wc -l)" -gt "$(wc -l <<<"$out")" ] || fail "list --all shows no more than list"
"$KSMCTL" list --json | python3 -c '
import json, sys
procs = json.load(sys.stdin)
wl = [p for p in procs if p["pid"] == int(sys.argv[1])]
assert len(wl) == 1, procs
wl = wl[0]
assert wl["comm"] == "ksm-workload" and wl["verdict"] == "merge" and wl["method"] == "none" and wl["merging"] is False
assert wl["policy"].endswith("50-test.policy:2") and isinstance(wl["merging_pages"], int)
pages = [p["merging_pages"] for p in procs]
assert pages == sorted(pages, reverse=True), "not largest first"
' "$wl_pid" || fail "ksmctl list --json"
out=$("$KSMCTL" list --cgroups) || fail "ksmctl list --cgroups"
grep -q "^ *MERGED  *PROFIT  *PROCS  *VM/UNIT  *CGROUP$" <<<"$out" || fail "list --cgroups header: $out"
mycg=$(sed -n 's/^0:://p' /proc/$wl_pid/cgroup)
"$KSMCTL" list --cgroups --json | python3 -c '
import json, sys
cgs = json.load(sys.stdin)
assert any("/" + c["cgroup"] == sys.argv[1] and c["processes"] >= 1 for c in cgs), (sys.argv[1], cgs)
pages = [c["merging_pages"] for c in cgs]
assert pages == sorted(pages, reverse=True)
' "$mycg" || fail "ksmctl list --cgroups --json"
# nobody is not told what a root process is, as ksm_stat and exe in /proc.
out=$(as_nobody "$KSMCTL" explain $wl_pid 2>&1); rc=$?
[ $rc = 4 ] && grep -q "Process $wl_pid is another user's" <<<"$out" || fail "explain of root's process as nobody: $rc $out"
out=$("$KSMCTL" explain $wl_pid) || fail "ksmctl explain"
grep -q "^pid $wl_pid (ksm-workload), uid 0, $KSM_WORKLOAD$" <<<"$out" || fail "explain headline as root: $out"
grep -q "^  verdict: merge, method none$" <<<"$out" || fail "explain verdict: $out"
grep -q "^  policy:  $tmp/policy.d/50-test.policy:2$" <<<"$out" || fail "explain policy: $out"
grep -q "^  because: Mode=auto" <<<"$out" || fail "explain reason: $out"
grep -q "^  merging: off, 0 B (0 pages), profit 0 B; anon RSS [0-9.]* [KMG]iB$" <<<"$out" || fail "explain merging: $out"
"$KSMCTL" explain $wl_pid --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["pid"] == int(sys.argv[1]) and d["verdict"] == "merge" and d["rss_anon_bytes"] > 0 and d["kernel_thread"] is False
' "$wl_pid" || fail "ksmctl explain --json"
out=$("$KSMCTL" explain 999999999 2>&1); rc=$?
[ $rc = 5 ] && grep -q "No process with pid 999999999" <<<"$out" || fail "explain of a missing pid: $rc $out"
out=$("$KSMCTL" explain 12abc 2>&1); [ $? = 2 ] || fail "explain 12abc: $out"
out=$("$KSMCTL" -q explain 999999999 2>/dev/null); rc=$?
[ $rc = 5 ] && [ -z "$out" ] || fail "explain -q of a missing pid: $rc $out"
out=$("$KSMCTL" -q explain $wl_pid); rc=$?
[ $rc = 0 ] && [ -z "$out" ] || fail "explain -q: $rc $out"
expect_error org.ksmtuned2.Error.NoSuchProcess Explain uint32:999999999
expect_error org.freedesktop.DBus.Error.InvalidArgs Explain uint32:0
expect_error org.freedesktop.DBus.Error.InvalidArgs Explain string:1
[ "$(prop ManagedProcesses | cut -d' ' -f2)" -ge 1 ] || fail "ManagedProcesses $(prop ManagedProcesses)"
busctl call org.ksmtuned2 /org/ksmtuned2 $IFACE ListProcesses | grep -q "\"ksm-workload\"" || fail "busctl ListProcesses"
as_nobody busctl call org.ksmtuned2 /org/ksmtuned2 $IFACE ListCgroups >/dev/null || fail "busctl ListCgroups as nobody"
# A hostile process name: escaped for the terminal, exact in JSON.
hostile=$'a b"c\033[2J\xff'
cp "$KSM_WORKLOAD" "$tmp/$hostile"
mkfifo "$tmp/hostile.in"
# ... in a cgroup with a hostile name too, where cgroup v2 lets us make one.
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
hostile_cg=
if [ -n "$cg2" ] && mkdir "$cg2/ksmtuned2-test-$$ \"q\"\\x2d"$'\001\xff' 2>/dev/null; then
        hostile_cg="$cg2/ksmtuned2-test-$$ \"q\"\\x2d"$'\001\xff'
fi
sh -c '[ -z "$1" ] || echo $$ > "$1/cgroup.procs"; exec "$2" --merge none --unique 1 --copies 1' sh \
        "$hostile_cg" "$tmp/$hostile" < "$tmp/hostile.in" > "$tmp/hostile.out" &
hostile_pid=$!
exec 7>"$tmp/hostile.in" # holds its stdin open: it runs until we close it
wait_for 5 grep -q "^ready $hostile_pid " "$tmp/hostile.out" || fail "hostile workload did not start"
wait_for 5 sh -c "'$KSMCTL' list --all | grep -q '^$hostile_pid '" || fail "hostile process not listed"
"$KSMCTL" list --all | grep "^$hostile_pid " | grep -qF 'a b"c\x1b[2J\xef\xbf\xbd  ' || fail "hostile comm not escaped: $("$KSMCTL" list --all | grep "^$hostile_pid ")"
! "$KSMCTL" list --all | grep -q $'\033' || fail "an escape character reached the terminal"
"$KSMCTL" list --all --json | python3 -c '
import json, os, sys
p = [p for p in json.load(sys.stdin) if p["pid"] == int(sys.argv[1])]
# not UTF-8 on the bus either: the bad byte arrives as U+FFFD
assert p and p[0]["comm"] == os.fsencode(sys.argv[2]).decode("utf-8", "replace"), p
' "$hostile_pid" "$hostile" || fail "hostile comm in JSON"
if [ -n "$hostile_cg" ]; then
        out=$("$KSMCTL" list --cgroups)
        grep -qF "/${hostile_cg#$cg2/}" <<<"$out" && fail "a control character reached the terminal: $out"
        grep -qF "/ksmtuned2-test-$$ \"q\"\\x2d\\x01"$'\xef\xbf\xbd' <<<"$out" || fail "hostile cgroup not shown escaped: $out"
        "$KSMCTL" list --cgroups --json | python3 -c '
import json, os, sys
want = os.fsencode(sys.argv[1]).decode("utf-8", "replace")
assert any(c["cgroup"] == want for c in json.load(sys.stdin))
' "${hostile_cg#$cg2/}" || fail "hostile cgroup in JSON"
fi
exec 7>&-; wait "$hostile_pid"; hostile_pid=
[ -z "$hostile_cg" ] || rmdir "$hostile_cg" || fail "cannot remove $hostile_cg"; hostile_cg=

# reload picks up a policy that now decides otherwise, and explain says so.
printf '[Match]\nExe=%s\n[Merge]\nMode=never\n' "$KSM_WORKLOAD" > "$tmp/policy.d/40-never.policy"
"$KSMCTL" reload || fail "ksmctl reload with a new policy"
wait_for 5 sh -c "'$KSMCTL' explain $wl_pid | grep -q '^  verdict: dont-merge'" || fail "reload did not reclassify: $("$KSMCTL" explain $wl_pid)"
"$KSMCTL" explain $wl_pid | grep -q "^  policy:  $tmp/policy.d/40-never.policy:1$" || fail "explain after reload: $("$KSMCTL" explain $wl_pid)"
rm "$tmp/policy.d/40-never.policy"; "$KSMCTL" reload || fail "ksmctl reload"
ok "ksmctl list (--all, --json), list --cgroups (--json), explain (--json, missing pid exit 5), as nobody too; hostile names escaped; reload reclassifies"

# --- 8c. top and history, as a user reads them (top as root: its rows are
# the cgroups of root's workload).
out=$("$KSMCTL" top -n 2 --interval=300ms); rc=$?
[ $rc = 0 ] || fail "ksmctl top -n 2 exited $rc: $out"
[ "$(grep -c '^ksmtuned2 top, [0-9:]*, every 300ms' <<<"$out")" = 2 ] || fail "ksmctl top -n 2 did not draw 2 frames: $out"
! grep -q $'\033' <<<"$out" || fail "ksmctl top wrote an escape sequence to a pipe"
frame1=$(awk '/^ksmtuned2 top/ { n++ } n == 1' <<<"$out")
frame2=$(awk '/^ksmtuned2 top/ { n++ } n == 2' <<<"$out")
for f in "$frame1" "$frame2"; do
        grep -q "^Saved: *[0-9.]* [KMGTP]\?i\?B.*; general profit " <<<"$f" || fail "top: savings line: $f"
        grep -q "^ksmd: *CPU [0-9.]*% now; [0-9.]*[a-z]* since boot" <<<"$f" || fail "top: ksmd line: $f"
        grep -q "^Controller: " <<<"$f" || fail "top: controller line: $f"
        grep -q "^ *MERGED  *DELTA  *PROFIT  *DELTA  *PROCS  *VM/UNIT  *CGROUP$" <<<"$f" || fail "top: column header: $f"
done
# The test workload's cgroup: no change to show on the first frame, a change
# (of 0 B, it merges nothing) on the second.
row() { awk -v cg=" $mycg" 'length($0) >= length(cg) && substr($0, length($0) - length(cg) + 1) == cg'; }
row <<<"$frame1" | grep -Eq '^ *[0-9.]+ [KMGTP]?i?B +- +-?[0-9.]+ [KMGTP]?i?B +- +[1-9][0-9]*  ' ||
        fail "top: first frame's line for $mycg: $frame1"
row <<<"$frame2" | grep -Eq '^ *[0-9.]+ [KMGTP]?i?B +[+-]?[0-9.]+ [KMGTP]?i?B +-?[0-9.]+ [KMGTP]?i?B +[+-]?[0-9.]+ [KMGTP]?i?B +[1-9][0-9]*  ' ||
        fail "top: second frame's line for $mycg: $frame2"
grep -q "^Saved: .* ([+-]\?[0-9.]* [KMGTP]\?i\?B); general profit .* ([+-]\?[0-9.]* [KMGTP]\?i\?B)$" <<<"$frame2" ||
        fail "top: the second frame's header has no changes: $frame2"
"$KSMCTL" top -n 2 --interval=300ms --json | python3 -c '
import json, sys
frames = [json.loads(l) for l in sys.stdin]
assert len(frames) == 2, frames
for f in frames:
    assert isinstance(f["saved_bytes"], int) and isinstance(f["ksmd_cpu_usec"], int) and f["controller"]["phase"]
    sizes = [c["merging_bytes"] for c in f["cgroups"]]
    assert sizes == sorted(sizes, reverse=True), "not largest first"
mine = lambda f: [c for c in f["cgroups"] if "/" + c["cgroup"] == sys.argv[1]][0]
assert mine(frames[0])["merging_bytes_delta"] is None and mine(frames[0])["profit_bytes_delta"] is None
assert isinstance(mine(frames[1])["merging_bytes_delta"], int) and mine(frames[1])["processes"] >= 1
' "$mycg" || fail "ksmctl top --json"
# Ctrl-C ends it with 0, on a terminal too, where each frame clears the screen.
"$KSMCTL" top --interval=200ms > "$tmp/top.txt" & topp=$!
sleep 1; kill -INT $topp; wait $topp; rc=$?
[ $rc = 0 ] && [ "$(grep -c '^ksmtuned2 top' "$tmp/top.txt")" -ge 2 ] || fail "ksmctl top on SIGINT: rc=$rc"
if command -v script >/dev/null; then
        script -qec "timeout --preserve-status -s INT 1.5 '$KSMCTL' top --interval=200ms" "$tmp/tty" >/dev/null; rc=$?
        [ $rc = 0 ] && [ "$(grep -o $'\033\[2J' "$tmp/tty" | wc -l)" -ge 3 ] || fail "ksmctl top on a terminal: rc=$rc"
fi

out=$(as_nobody env COLUMNS=100 "$KSMCTL" history); rc=$?
[ $rc = 0 ] || fail "ksmctl history exited $rc: $out"
grep -q "^Memory saved (pages_sharing)$" <<<"$out" && grep -q "^ksmd CPU (of one core)$" <<<"$out" ||
        fail "history: chart titles: $out"
# two charts of 8 rows, each with its time axis, and every line of them as
# wide as the terminal
[ "$(grep -Ec '^.{10} \|' <<<"$out")" = 16 ] && [ "$(grep -Ec '^ {10} \+-' <<<"$out")" = 2 ] ||
        fail "history: not two charts of 8 rows: $out"
[ "$(grep -E '^.{10} [|+]' <<<"$out" | awk 'length($0) != 100' | wc -l)" = 0 ] || fail "history: not 100 columns wide: $out"
grep -q '^ *[0-9.]* [KMGTP]\?i\?B |' <<<"$out" && grep -q '^ *[0-9.]*% |' <<<"$out" || fail "history: axis labels: $out"
grep -Eq '^ {12}[0-9]{2}:[0-9]{2}:[0-9]{2} ' <<<"$out" || fail "history: no times under the axis: $out"
grep -q "^Shown: *[0-9-]* [0-9:]* to [0-9:]* (.*), [1-9][0-9]* entries$" <<<"$out" || fail "history: span: $out"
grep -q "^Saved: .* now, at most .*; general profit " <<<"$out" || fail "history: savings: $out"
grep -q "^ksmd: .* of CPU in that time ([0-9.]*% of a core, blocked on mmap_lock [0-9.]*%), .* since boot$" <<<"$out" ||
        fail "history: cost: $out"
grep -Eq "^Phases: +maintain [0-9]+%, burst [0-9]+%, decay [0-9]+%, idle [0-9]+%$" <<<"$out" || fail "history: phases: $out"
grep -q "^Controller: " <<<"$out" || fail "history: controller line: $out"
[ "$(COLUMNS=60 "$KSMCTL" history | grep -E '^.{10} [|+]' | awk 'length($0) != 60' | wc -l)" = 0 ] ||
        fail "history: not as wide as COLUMNS=60"
# history_json SECONDS [ARGS...]: checks ksmctl history --json ARGS, whose
# entries must all end at most SECONDS (0: any) before ksmctl started, and
# counts them. From the start, not from when python runs: on a loaded
# machine ksmctl and python take seconds of their own.
history_json() { local within=$1 t0; t0=$(date +%s.%N); shift; as_nobody "$KSMCTL" history --json "$@" | python3 -c '
import json, sys
h = json.load(sys.stdin)
keys = {"realtime_usec", "time", "duration_usec", "ticks", "phase", "saved_bytes", "general_profit_bytes",
        "ksmd_cpu_fraction", "ksmd_blocked_fraction", "pages_to_scan", "sleep_millisecs", "scan_pages_per_sec",
        "managed_processes"}
for e in h:
    assert set(e) == keys, e
    assert e["phase"] in ("maintain", "burst", "decay", "idle") and e["ticks"] >= 1 and e["duration_usec"] >= 0
    assert 0 <= e["ksmd_cpu_fraction"] <= 2 and 0 <= e["ksmd_blocked_fraction"] <= 1
    assert all(isinstance(e[k], int) for k in ("saved_bytes", "pages_to_scan", "sleep_millisecs", "managed_processes"))
assert [e["realtime_usec"] for e in h] == sorted(e["realtime_usec"] for e in h), "not oldest first"
if float(sys.argv[1]) > 0:
    assert all(e["realtime_usec"] >= (float(sys.argv[2]) - float(sys.argv[1])) * 1e6 for e in h)
print(len(h))
' "$within" "$t0"; }
n1=$(history_json 0) || fail "ksmctl history --json"
sleep 1
n2=$(history_json 0) || fail "ksmctl history --json"
[ "$n1" -ge 1 ] && [ "$n2" -ge $((n1 + 2)) ] || fail "ksmctl history --json does not grow with the ticks ($n1 -> $n2)"
n3=$(history_json 2 --since=2s) || fail "ksmctl history --since=2s --json"
[ "$n3" -ge 1 ] && [ "$n3" -lt "$n2" ] || fail "history --since=2s: $n3 entries of $n2"
for bad in "history --since=soon" "history --since=0" "top -n 0" "top --iterations=x" "status --since=1h" "list -n 2"; do
        $KSMCTL $bad >/dev/null 2>&1; rc=$?
        [ $rc = 2 ] || fail "ksmctl $bad exited $rc, want 2"
done
ok "ksmctl top (-n 2, --json, Ctrl-C, terminal) and history (charts as wide as \$COLUMNS, --json growing $n1 -> $n2, --since), as nobody too"

# --- 8d. -H: sd-bus runs "ssh ... HOST systemd-stdio-bridge"; this ssh runs
# the bridge here, on the private bus, so ksmctl goes the whole remote way.
mkdir -p "$tmp/bin"
cat > "$tmp/bin/ssh" <<'SSH'
#!/bin/sh
printf '%s\n' "$*" >> "${0%/*}/ssh.log"
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift 2 # "--" and [USER@]HOST
exec "$@" --bus-path="$DBUS_SYSTEM_BUS_ADDRESS"
SSH
chmod +x "$tmp/bin/ssh"
remote() { PATH="$tmp/bin:$PATH" "$KSMCTL" -H root@ksmctl-test-host "$@"; }
if command -v systemd-stdio-bridge >/dev/null; then
        out=$(remote status) || fail "ksmctl -H status: $out"
        grep -q "^ksmtuned2 .*: running, mode auto (dry run: nothing is written), every 300ms$" <<<"$out" || fail "-H status: $out"
        remote list --no-legend | grep -q "^$wl_pid  *ksm-workload " || fail "-H list: $(remote list)"
        remote explain $wl_pid | grep -q "^  verdict: merge, method none$" || fail "-H explain: $(remote explain $wl_pid)"
        remote status --json | python3 -c 'import json,sys; assert json.load(sys.stdin)["daemon"]["running"] is True' ||
                fail "-H status --json"
        grep -q -- "-- root@ksmctl-test-host systemd-stdio-bridge" "$tmp/bin/ssh.log" || fail "ssh ran as: $(cat "$tmp/bin/ssh.log")"
        ok "ksmctl -H: status, list, explain through ssh and systemd-stdio-bridge"
else
        echo "no systemd-stdio-bridge: ksmctl -H not checked end to end"
fi

# --- 9. The bus goes away and comes back: the daemon tunes on and reconnects.
private_bus_stop
sleep 1
kill -0 "$daemon_pid" || fail "daemon died with the bus"
out=$("$KSMCTL" status 2>&1); [ $? = 3 ] || fail "ksmctl status with the bus gone: $out"
private_bus_start "$tmp" || exit 1
wait_for 20 state_is running || fail "daemon did not reconnect to the restarted bus"
[ "$(grep -c "Lost the system bus" "$tmp/daemon.log")" = 1 ] || fail "want one 'Lost the system bus' line"
ok "bus restarted: daemon tuned on, said so once, reconnected"

kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
[ $rc = 0 ] || fail "daemon exited $rc on SIGTERM"
# The host's bus answers without the daemon: "not running" (3), and not this
# host's kernel figures under the other's name.
if command -v systemd-stdio-bridge >/dev/null; then
        out=$(remote status 2>&1); rc=$?
        [ $rc = 3 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -q "^ksmtuned2 is not running (" <<<"$out" ||
                fail "-H status with the daemon stopped: rc $rc: $out"
        remote status --json | python3 -c 'import json,sys; d = json.load(sys.stdin); assert list(d) == ["daemon"] and d["daemon"]["running"] is False, d' ||
                fail "-H status --json with the daemon stopped"
        out=$(remote pause 2>&1); [ $? = 3 ] || fail "-H pause with the daemon stopped: $out"
fi
# Written beside the file and renamed: nothing else is left behind.
[ "$(ls "$tmp/metrics")" = ksmtuned2.prom ] || fail "temporary files left in the metrics directory: $(ls "$tmp/metrics")"
echo "PASS"
