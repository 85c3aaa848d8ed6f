#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Reload over the bus, as `systemctl reload ksmtuned2` does it (the unit's
# ExecReload= command, run here as written): it succeeds on a good file and
# fails on a rejected one, the daemon keeping the last good configuration
# and running on; Mode= sets the mode at start and again at every reload.
# The daemon runs with --dry-run on a private bus: no KSM lock needed.
set -u
umask 022
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (Reload is root's)"; exit 77; }
command -v dbus-daemon >/dev/null || { echo "SKIP: no dbus-daemon"; exit 77; }
command -v busctl >/dev/null || { echo "SKIP: no busctl"; exit 77; }
[ -d /sys/kernel/mm/ksm ] || { echo "SKIP: no KSM"; exit 77; }

. "$SOURCE_ROOT/tests/lib/private-bus.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"
IFACE=org.ksmtuned2.Manager1
. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin bus-reload
chmod 755 "$tmp"
daemon_log=$tmp/daemon.log
test_cleanup() { private_bus_stop; }
ok() { echo "ok: $*"; }
prop() { busctl get-property org.ksmtuned2 /org/ksmtuned2 $IFACE "$1"; }
wait_for() { # seconds command...
        local n=$(( $1 * 10 )); shift
        for _ in $(seq $n); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
        return 1
}

# The unit's own reload command, with the build's ksmctl for @bindir@/ksmctl.
exec_reload=$(sed -n 's/^ExecReload=//p' "$SOURCE_ROOT/systemd/ksmtuned2.service.in")
[ "$exec_reload" = "@bindir@/ksmctl reload" ] || fail "ExecReload= is \"$exec_reload\", which this test does not know"
systemctl_reload() { "$KSMCTL" reload; }

mkdir -p "$tmp/run" "$tmp/policy.d"
write_conf() { # extra lines for [Daemon]
        printf '[Daemon]\nInterval=300ms\nRuntimeDirectory=%s/run\nPolicyDirectories=%s/policy.d\n%s\n' \
                "$tmp" "$tmp" "$1" > "$tmp/k.conf"
}
write_conf "Mode=observe"
private_bus_start "$tmp" || exit 1
daemon_start "$tmp/daemon.log" --dry-run --config "$tmp/k.conf" || fail "daemon did not start"
wait_for 10 prop Mode || fail "daemon not on the bus"

# --- 1. Mode= at start; SetMode lasts until the next reload.
[ "$(prop Mode)" = 's "observe"' ] || fail "Mode= at start: $(prop Mode)"
grep -q "mode observe (was auto) (requested by Mode= of the configuration)" "$tmp/daemon.log" ||
        fail "the start-up mode is not logged with where it came from"
"$KSMCTL" set-mode auto || fail "ksmctl set-mode auto"
[ "$(prop Mode)" = 's "auto"' ] || fail "Mode after set-mode: $(prop Mode)"
systemctl_reload || fail "reload of a good file failed"
[ "$(prop Mode)" = 's "observe"' ] || fail "reload did not apply Mode= again: $(prop Mode)"
write_conf "Mode=tune-only
Interval=400ms"
systemctl_reload || fail "reload of a changed file failed"
[ "$(prop Mode)" = 's "tune-only"' ] && [ "$(prop IntervalUSec)" = "t 400000" ] ||
        fail "reload did not apply the changed file: $(prop Mode) $(prop IntervalUSec)"
ok "Mode= sets the mode at start; set-mode lasts until a reload, which applies Mode= again"

# --- 2. A rejected file: the reload command fails, saying why, and the
# daemon runs on with the configuration it had.
cp "$tmp/k.conf" "$tmp/k.conf.good"
for bad in "Interval: 1s" "[Daemon" "  continued"; do
        write_conf "Mode=auto
Interval=1s
$bad"
        out=$(systemctl_reload 2>&1); rc=$?
        [ $rc = 1 ] || fail "reload of a file with \"$bad\" exited $rc, want 1: $out"
        grep -q "Cannot reload: Reloading the configuration failed (it cannot be parsed); the running configuration is kept" <<<"$out" ||
                fail "reload of a bad file said: $out"
        grep -q "org.ksmtuned2.Error.ReloadFailed" <<<"$out" || fail "no ReloadFailed in: $out"
        grep -q "$tmp/k.conf:7: syntax error, file rejected" "$tmp/daemon.log" || fail "the log does not name file and line"
        kill -0 "$daemon_pid" || fail "daemon died of a bad file"
        [ "$(prop IntervalUSec)" = "t 400000" ] && [ "$(prop Mode)" = 's "tune-only"' ] ||
                fail "a rejected file changed the configuration: $(prop IntervalUSec) $(prop Mode)"
        : > "$tmp/daemon.log"
done
# What a foreign client sees: busctl fails too.
busctl call org.ksmtuned2 /org/ksmtuned2 $IFACE Reload 2>"$tmp/busctl.err" && fail "busctl Reload of a bad file succeeded"
grep -q "running configuration is kept" "$tmp/busctl.err" || fail "busctl said: $(cat "$tmp/busctl.err")"
# SIGHUP reads the same files and keeps the same configuration.
kill -HUP "$daemon_pid"
wait_for 5 grep -q "Reloading the configuration failed: it cannot be parsed (see above); keeping the running one." "$tmp/daemon.log" ||
        fail "SIGHUP on a bad file"
[ "$(prop IntervalUSec)" = "t 400000" ] || fail "SIGHUP on a bad file changed the configuration"
cp "$tmp/k.conf.good" "$tmp/k.conf"
systemctl_reload || fail "reload of the good file again"
[ "$(prop State)" = 's "running"' ] || fail "State after the reloads: $(prop State)"
ok "a rejected file: the reload command fails (exit 1, ReloadFailed), the log names file:line, the daemon keeps its configuration"

# --- 3. Bad values and unknown keys are reported but do not fail a reload.
write_conf "Mode=tune-only
interval=1s
Interval=fast"
systemctl_reload || fail "reload with ignored keys failed"
grep -q "$tmp/k.conf:6: interval: unknown key in \[Daemon\] (did you mean Interval=?), ignoring" "$tmp/daemon.log" ||
        fail "no did-you-mean for interval="
[ "$(prop IntervalUSec)" = "t 300000" ] || fail "an ignored key changed Interval: $(prop IntervalUSec)"
ok "ignored keys: reported with the name meant, the reload succeeds"

# --- 4. A rejected policy file fails the reload too, naming file and line:
# a mistyped value (a default in its place would turn Mode=never into auto),
# a FIFO (refused at once, not waited on), a file others may write.
write_conf "Mode=tune-only"
printf '[Match]\nComm=ssh-agent\n[Merge]\nMode=never\n' > "$tmp/policy.d/10-secrets.policy"
systemctl_reload || fail "reload with a good policy failed"
printf '[Match]\nComm=ssh-agent\n[Merge]\nMode=nevr\n' > "$tmp/policy.d/10-secrets.policy"
out=$(timeout 10 "$KSMCTL" reload 2>&1); rc=$?
[ $rc = 1 ] || fail "reload with Mode=nevr exited $rc, want 1: $out"
grep -q "Cannot reload: Reloading the policies failed: $tmp/policy.d/10-secrets.policy:4: Mode: expected one of: always auto never (\"nevr\"), file rejected" <<<"$out" ||
        fail "reload with Mode=nevr said: $out"
grep -q "org.ksmtuned2.Error.ReloadFailed" <<<"$out" || fail "no ReloadFailed in: $out"
grep -q "$tmp/policy.d/10-secrets.policy:0: keeping the previous version of this policy" "$tmp/daemon.log" ||
        fail "the log does not say the previous version is kept"
kill -0 "$daemon_pid" || fail "daemon died of a bad policy"
[ "$(prop IntervalUSec)" = "t 300000" ] || fail "the configuration of that reload is not in force: $(prop IntervalUSec)"
rm "$tmp/policy.d/10-secrets.policy"
mkfifo "$tmp/policy.d/20-fifo.policy"
out=$(timeout 10 "$KSMCTL" reload 2>&1); rc=$?
[ $rc = 1 ] && grep -q "Reloading the policies failed: $tmp/policy.d/20-fifo.policy:0: not a regular file, rejected" <<<"$out" ||
        fail "reload with a FIFO policy: exit $rc: $out"
rm "$tmp/policy.d/20-fifo.policy"
printf '[Match]\nComm=x\n' > "$tmp/policy.d/30-open.policy"; chmod 666 "$tmp/policy.d/30-open.policy"
out=$(timeout 10 "$KSMCTL" reload 2>&1); rc=$?
[ $rc = 1 ] && grep -q "$tmp/policy.d/30-open.policy:0: writable by group or others (mode 0666), rejected" <<<"$out" ||
        fail "reload with a policy others may write: exit $rc: $out"
rm "$tmp/policy.d/30-open.policy"
# A mask that is not root's masks nothing: the file it would hide stands in.
mkdir "$tmp/vendor.d"
printf '[Match]\nComm=gpg-agent\n[Merge]\nMode=never\n' > "$tmp/vendor.d/40-vendor.policy"
write_conf "Mode=tune-only
PolicyDirectories=$tmp/vendor.d"
systemctl_reload || fail "reload with a vendor directory"
: > "$tmp/policy.d/40-vendor.policy"; chown 65534 "$tmp/policy.d/40-vendor.policy"
out=$(timeout 10 "$KSMCTL" reload 2>&1); rc=$?
[ $rc = 1 ] && grep -q "$tmp/policy.d/40-vendor.policy:0: owned by uid 65534, not root, rejected" <<<"$out" ||
        fail "reload with nobody's mask: exit $rc: $out"
grep -q "$tmp/policy.d/40-vendor.policy:0: $tmp/vendor.d/40-vendor.policy is in force in its place" "$tmp/daemon.log" ||
        fail "the masked vendor policy does not stand in: $(tail -5 "$tmp/daemon.log")"
rm "$tmp/policy.d/40-vendor.policy"
systemctl_reload || fail "reload once the policies are good again"
ok "a rejected policy (bad value, FIFO, writable by others, nobody's mask): the reload fails naming file and line, the daemon runs on"

kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
[ $rc = 0 ] || fail "daemon exited $rc on SIGTERM"
echo "PASS"
