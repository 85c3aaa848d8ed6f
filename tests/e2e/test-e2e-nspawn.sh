#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# End to end: boot Debian 12 with systemd as PID 1 under systemd-nspawn,
# install this build into it, and run ksmtuned2 as the system service it is
# meant to be: enable --now reaches active with the unit's hardening and the
# daemon's own sandbox (seccomp fatal, so a missing system call fails here),
# the real system bus serves it to root and, read-only, to another user,
# systemd-analyze verify is clean and security scores it under 2.0, reload
# re-reads configuration and policies, stop restores the knobs, and the
# journal has the start-up line and the proc connector's polling fallback
# (no proc events reach a PID namespace).
#
# The Debian tree is built once by debootstrap and cached under the build
# directory (KSMTUNED2_E2E_DIR overrides); each run boots a copy of it.
# Skips (77) without root, KSM, systemd-nspawn, or where nspawn cannot run.
set -u
t_start=$(date +%s)
skip() { echo "SKIP: $*" >&2; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root"
command -v systemd-nspawn >/dev/null || skip "systemd-nspawn not installed (package systemd-container)"
command -v nsenter >/dev/null || skip "nsenter not installed"
[ -d /sys/kernel/mm/ksm ] || skip "no KSM"

E2E_DIR=${KSMTUNED2_E2E_DIR:-$BUILD_ROOT/e2e}
TREE=$E2E_DIR/debian-bookworm
mkdir -p "$E2E_DIR"

# Libraries the installed binaries need, as Debian packages; the tree is
# rebuilt when that list changes.
lib_packages() {
        for f in $(ldd "$KSMTUNED2" "$KSMCTL" | awk '/=> \//{print $3}' | sort -u); do
                dpkg -S "$f" 2>/dev/null || dpkg -S "${f#/usr}" 2>/dev/null || dpkg -S "/usr$f" 2>/dev/null
        done | cut -d: -f1 | sort -u | tr '\n' ',' | sed 's/,$//'
}
# Only Debian's archive is reachable: use the mirror apt uses here.
debian_mirror() {
        local m
        m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
                grep -v '^ *#' | grep -o -E 'https?://[^ ]*/debian/?( |$)' | grep -v security | head -1 | tr -d ' ')
        echo "${m:-http://deb.debian.org/debian}"
}
# procps for /bin/kill (ExecReload=), passwd for useradd.
PACKAGES="systemd,systemd-sysv,dbus,procps,passwd,$(lib_packages)"
MIRROR=$(debian_mirror)
STAMP="$TREE/.ksmtuned2-e2e-tree"
WANT_STAMP="bookworm minbase $PACKAGES $MIRROR"

build_tree() {
        command -v debootstrap >/dev/null || skip "debootstrap not installed and no cached tree"
        echo "Building the Debian 12 tree with debootstrap from $MIRROR (once; cached in $TREE)"
        local t0=$(date +%s)
        rm -rf "$TREE.tmp" "$TREE"
        if ! debootstrap --variant=minbase --include="$PACKAGES" bookworm "$TREE.tmp" "$MIRROR" \
                        >"$E2E_DIR/debootstrap.log" 2>&1; then
                tail -20 "$E2E_DIR/debootstrap.log" >&2
                rm -rf "$TREE.tmp"
                echo "FAIL: debootstrap failed (log: $E2E_DIR/debootstrap.log)" >&2
                exit 1
        fi
        echo "$WANT_STAMP" > "$TREE.tmp/.ksmtuned2-e2e-tree"
        mv "$TREE.tmp" "$TREE"
        echo "debootstrap took $(( $(date +%s) - t0 )) s"
}
(
        flock 8
        [ "$(cat "$STAMP" 2>/dev/null)" = "$WANT_STAMP" ] || build_tree
        # Copies left by a run that was killed (a timeout's SIGKILL skips the
        # EXIT trap); a live run holds its copy's lock.
        for d in "$E2E_DIR"/run.*; do
                if [ -d "$d" ] && flock -n "$d/.lock" true 2>/dev/null; then
                        rm -rf "$d"
                fi
        done
        true
) 8>"$E2E_DIR/.tree.lock" || exit $?
t_tree=$(date +%s)

RUN=$(mktemp -d "$E2E_DIR/run.XXXXXX")
exec 7>"$RUN/.lock"
flock 7
nspawn_pid=
leader=
cleanup() {
        if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
                [ -n "$leader" ] && inside systemctl poweroff --no-block >/dev/null 2>&1
                for _ in $(seq 100); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.1; done
                kill -KILL "$nspawn_pid" 2>/dev/null
                wait "$nspawn_pid" 2>/dev/null
        fi
        rm -rf "$RUN"
}
fail() {
        echo "FAIL: $*" >&2
        if [ -n "$leader" ]; then
                echo "--- journal of ksmtuned2.service:" >&2
                inside journalctl -b -u ksmtuned2 --no-pager -o short-monotonic 2>/dev/null | tail -40 >&2
        fi
        exit 1
}
# Runs a command inside the container, with a clean environment.
inside() { nsenter -t "$leader" -a env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cp -a --reflink=auto "$TREE" "$RUN/root" || fail "cannot copy the tree"
# Install the build as a package would, then add what only the test needs.
meson install -C "$BUILD_ROOT" --no-rebuild --quiet --destdir "$RUN/root" >"$RUN/install.log" 2>&1 ||
        { cat "$RUN/install.log" >&2; fail "meson install failed"; }
mkdir -p "$RUN/root/etc/systemd/system/ksmtuned2.service.d"
# A system call missing from the daemon's allow-list ends the daemon here.
printf '[Service]\nEnvironment=KSMTUNED2_SECCOMP_FATAL=1\n' \
        > "$RUN/root/etc/systemd/system/ksmtuned2.service.d/e2e.conf"
cp /bin/sleep "$RUN/root/usr/local/bin/ksme2e-sleeper"

# On this host (no systemd as PID 1) nspawn can neither register nor make a
# scope: --register=no --keep-unit. Only the KSM directory is writable in
# the container's otherwise read-only /sys.
t_boot0=$(date +%s)
systemd-nspawn -D "$RUN/root" --register=no --keep-unit -b --machine="ksmtuned2-e2e-$$" \
        --bind=/sys/kernel/mm/ksm </dev/null >"$RUN/console.log" 2>&1 &
nspawn_pid=$!
for _ in $(seq 300); do
        leader=$(ps --ppid "$nspawn_pid" -o pid= 2>/dev/null | head -1 | tr -d ' ')
        [ -n "$leader" ] && [ "$(cat /proc/"$leader"/comm 2>/dev/null)" = systemd ] && break
        leader=
        if ! kill -0 "$nspawn_pid" 2>/dev/null; then
                tail -5 "$RUN/console.log" >&2
                nspawn_pid=
                skip "systemd-nspawn cannot run here"
        fi
        sleep 0.1
done
[ -n "$leader" ] || fail "no container init after 30 s"
# Until PID 1 answers on its private socket, systemctl fails at once; then
# --wait blocks until boot is done. Generous: benchmarks may load the host.
state=
for _ in $(seq 240); do
        state=$(timeout 120 nsenter -t "$leader" -a systemctl is-system-running --wait 2>/dev/null)
        case $state in running|degraded|maintenance|stopping) break;; esac
        sleep 0.5
done
case $state in
running|degraded) ;;
*) tail -20 "$RUN/console.log" >&2; fail "container did not boot (state: ${state:-timeout})";;
esac
t_boot=$(date +%s)
echo "container booted ($state) in $((t_boot - t_boot0)) s"

# The daemon writes the host's (global) KSM knobs: hold the KSM test lock
# from here, save them, restore them on every exit path (cleanup first).
t_lock0=$(date +%s)
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
trap 'cleanup; ksm_guard_restore' EXIT
before=$(ksm_guard_knobs_now)
t_lock=$(date +%s)
[ $((t_lock - t_lock0)) -gt 1 ] && echo "waited $((t_lock - t_lock0)) s for the KSM test lock"

# The configuration and policy paths follow the build's prefix.
CONF=$(inside ksmtuned2 --help | sed -n 's/.*(default \(.*\))$/\1/p')
[ -n "$CONF" ] || fail "cannot learn the default configuration path from ksmtuned2 --help"
inside test -f "$CONF" || fail "meson install did not put the default configuration at $CONF"
POLICY_DIR=$(dirname "$CONF")/policy.d

# node_exporter's textfile directory, writable for the unit where it exists.
PROM=/var/lib/prometheus/node-exporter/ksmtuned2.prom
inside mkdir -p "$(dirname $PROM)"
old_mps=$(cat $KSM/max_page_sharing)
mps1=$((old_mps == 300 ? 301 : 300))
mps2=$((mps1 + 10))
write_conf() {
        inside sh -c "cat > '$CONF'" <<CONF
[Daemon]
Interval=500ms
LogLevel=debug
[Ksm]
MaxPageSharing=$1
[Metrics]
TextfilePath=$PROM
CONF
}
wait_knob() { # name value
        for _ in $(seq 100); do [ "$(cat $KSM/"$1")" = "$2" ] && return 0; sleep 0.1; done
        fail "$1 is $(cat $KSM/"$1"), want $2"
}
journal() { inside journalctl -b -u ksmtuned2 --no-pager -o cat; }
wait_journal() { # pattern
        for _ in $(seq 100); do journal | grep -q -E -e "$1" && return 0; sleep 0.1; done
        fail "journal lacks /$1/"
}

# 1. The unit is clean.
out=$(inside systemd-analyze verify --man=no ksmtuned2.service 2>&1) || fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify complains: $out"
echo "systemd-analyze verify: clean"

# A process of another user, so that the daemon's view of /proc through
# ProtectProc=invisible is tested.
inside useradd --system --no-create-home --shell /usr/sbin/nologin e2e-user || fail "useradd"
# nsenter itself in the background (not the function's subshell), so that
# the guard's kill reaches it, and off our stdout, which meson waits on.
nsenter -t "$leader" -a runuser -u e2e-user -- /usr/local/bin/ksme2e-sleeper 600 </dev/null >/dev/null 2>&1 &
ksm_guard_track $!
for _ in $(seq 50); do
        sleeper=$(inside pgrep -x ksme2e-sleeper) && break
        sleep 0.1
done
[ -n "${sleeper:-}" ] || fail "the other user's process did not start"

# 2. enable --now reaches active, with the daemon's sandbox in place.
write_conf $mps1
inside systemctl enable --now ksmtuned2.service >"$RUN/enable.log" 2>&1 || { cat "$RUN/enable.log" >&2; fail "enable --now"; }
[ "$(inside systemctl is-active ksmtuned2)" = active ] || fail "ksmtuned2 is not active"
inside systemctl is-enabled ksmtuned2 >/dev/null || fail "ksmtuned2 is not enabled"
wait_knob max_page_sharing $mps1
main=$(inside systemctl show -P MainPID ksmtuned2)
status=$(inside cat /proc/"$main"/status)
field() { printf '%s\n' "$status" | awk -v f="$1:" '$1 == f { print $2 }'; }
# cap_sys_ptrace, cap_dac_read_search; the unit bounds out cap_sys_nice
# whatever the kernel offers.
kept=0000000000080004
[ "$(field CapEff)" = $kept ] || fail "CapEff=$(field CapEff), want $kept"
[ "$(field CapBnd)" = $kept ] || fail "CapBnd=$(field CapBnd), want $kept"
[ "$(field Seccomp)" = 2 ] || fail "no seccomp filter"
[ "$(field NoNewPrivs)" = 1 ] || fail "no_new_privs not set"
echo "enable --now: active, pid $main with CapEff=$(field CapEff), seccomp, no_new_privs"
for _ in $(seq 100); do inside test -s $PROM && break; sleep 0.1; done
[ "$(inside stat -c %a $PROM 2>/dev/null)" = 644 ] || fail "no metrics file $PROM readable by node_exporter"
inside grep -q '^ksmtuned2_' $PROM || fail "$PROM has no ksmtuned2_ metric"
echo "metrics: $PROM written through ProtectSystem=strict, mode 644"

# 3. The journal: the start-up line with the probe summary, the sandbox, and
# discovery's fallback to polling (the shipped unit lacks CAP_NET_ADMIN).
wait_journal "^ksmtuned2 [^ ]+ starting; kernel [^ ]+: ksm=yes "
wait_journal "^Sandbox: kept capabilities cap_dac_read_search,cap_sys_ptrace, dropped all others"
wait_journal "^Process discovery falls back to polling /proc every tick: "
wait_journal "^Connected to the system bus as org.ksmtuned2"
# Another user's process is visible to the daemon despite ProtectProc=invisible.
wait_journal "^pid $sleeper \(ksme2e-sleeper\): "
echo "journal: start-up line, sandbox, polling fallback, sees pid $sleeper of e2e-user"

# 4. The real system bus: anyone reads, only root changes.
v=$(inside busctl get-property org.ksmtuned2 /org/ksmtuned2 org.ksmtuned2.Manager1 Version) || fail "root cannot read Version"
u=$(inside runuser -u e2e-user -- busctl get-property org.ksmtuned2 /org/ksmtuned2 org.ksmtuned2.Manager1 State) ||
        fail "another user cannot read State"
if out=$(inside runuser -u e2e-user -- busctl call org.ksmtuned2 /org/ksmtuned2 org.ksmtuned2.Manager1 Pause 2>&1); then
        fail "another user may call Pause"
fi
case $out in *"ccess denied"*|*AccessDenied*) ;; *) fail "Pause by another user: unexpected answer: $out";; esac
inside busctl call org.ksmtuned2 /org/ksmtuned2 org.ksmtuned2.Manager1 Pause || fail "root cannot Pause"
inside busctl call org.ksmtuned2 /org/ksmtuned2 org.ksmtuned2.Manager1 Resume || fail "root cannot Resume"
echo "system bus: Version $v to root, State $u to e2e-user, Pause refused to e2e-user, allowed to root"
inside ksmctl status >"$RUN/status.root" 2>&1 || { cat "$RUN/status.root" >&2; fail "ksmctl status as root"; }
grep -q -E '^ksmtuned2 [^ ]+: running' "$RUN/status.root" || { cat "$RUN/status.root" >&2; fail "ksmctl status: not running?"; }
inside runuser -u e2e-user -- ksmctl status >"$RUN/status.user" 2>&1 ||
        { cat "$RUN/status.user" >&2; fail "ksmctl status as e2e-user"; }
grep -q -E '^ksmtuned2 [^ ]+: running' "$RUN/status.user" || { cat "$RUN/status.user" >&2; fail "ksmctl status as e2e-user"; }
inside runuser -u e2e-user -- ksmctl pause >"$RUN/pause.user" 2>&1
rc=$?
[ $rc = 4 ] || { cat "$RUN/pause.user" >&2; fail "ksmctl pause as e2e-user exited $rc, want 4 (access denied)"; }
echo "ksmctl: status as root and as e2e-user, pause refused to e2e-user (exit 4)"

# 5. reload re-reads the configuration and the policies.
n_before=$(journal | sed -n 's/^\([0-9]*\) policies in use.*/\1/p' | tail -1)
write_conf $mps2
inside sh -c "cat > '$POLICY_DIR/40-e2e.policy'" <<'POLICY'
[Match]
Comm=ksme2e-sleeper
User=e2e-user
[Merge]
Mode=always
Method=any
POLICY
inside systemctl reload ksmtuned2 || fail "systemctl reload"
wait_knob max_page_sharing $mps2
wait_journal "^Reloaded configuration $CONF\."
wait_journal "^$((n_before + 1)) policies in use"
wait_journal "^pid $sleeper \(ksme2e-sleeper\): [a-z-]+ by $POLICY_DIR/40-e2e.policy:"
[ "$(inside systemctl is-active ksmtuned2)" = active ] || fail "not active after reload"
# The policy merges it: on this stock kernel by injecting prctl(PR_SET_MEMORY_MERGE)
# into another user's process, through the unit's filter (ptrace), bounding
# set and the daemon's kept capabilities (CAP_SYS_PTRACE; without
# CAP_DAC_OVERRIDE, so the write goes through process_vm_writev).
for _ in $(seq 150); do
        inside grep -q "^ksm_merge_any: yes" /proc/"$sleeper"/ksm_stat 2>/dev/null && break
        sleep 0.1
done
inside grep -q "^ksm_merge_any: yes" /proc/"$sleeper"/ksm_stat ||
        fail "pid $sleeper of e2e-user was not made mergeable: $(journal | grep "pid $sleeper" | tail -3)"
out=$(inside runuser -u e2e-user -- ksmctl explain "$sleeper" 2>&1) || fail "ksmctl explain $sleeper: $out"
case $out in *40-e2e.policy*) ;; *) fail "ksmctl explain $sleeper does not name 40-e2e.policy: $out";; esac
echo "reload: max_page_sharing=$mps2, $((n_before + 1)) policies, pid $sleeper now merged (ksm_merge_any) by 40-e2e.policy"

# 6. The exposure score systemd-analyze gives the unit (README records it).
score=$(inside systemd-analyze security ksmtuned2.service | sed -n 's/.*Overall exposure level for ksmtuned2.service: \([0-9.]*\).*/\1/p')
[ -n "$score" ] || fail "no exposure score"
awk -v s="$score" 'BEGIN { exit !(s < 2.0) }' || fail "exposure $score is not under 2.0"
echo "systemd-analyze security: exposure $score"

# 7. With CAP_NET_ADMIN added by a drop-in (as ksmtuned2(8) explains), the
# proc connector accepts the daemon, but no event reaches a PID namespace:
# the daemon finds out with its self-test, polls and says why. It still
# drops CAP_NET_ADMIN after start-up. A short watchdog shows that the
# daemon pings it: the service outlives several periods unrestarted.
inside sh -c 'cat > /etc/systemd/system/ksmtuned2.service.d/netadmin.conf' <<'DROPIN'
[Service]
CapabilityBoundingSet=CAP_NET_ADMIN
WatchdogSec=1s
DROPIN
inside systemctl daemon-reload
inside systemctl restart ksmtuned2 || fail "restart with CAP_NET_ADMIN"
invocation=$(inside systemctl show -P InvocationID ksmtuned2)
journal_now() { inside journalctl -b _SYSTEMD_INVOCATION_ID="$invocation" --no-pager -o cat; }
for _ in $(seq 100); do
        journal_now | grep -q "^Process discovery falls back to polling /proc every tick: no proc event for a test child" && break
        sleep 0.1
done
journal_now | grep -q "^Process discovery falls back to polling /proc every tick: no proc event for a test child" ||
        fail "with CAP_NET_ADMIN: no PID-namespace fallback in the journal: $(journal_now | grep -i discovery)"
main=$(inside systemctl show -P MainPID ksmtuned2)
status=$(inside cat /proc/"$main"/status)
[ "$(field CapBnd)" = $kept ] || fail "with CAP_NET_ADMIN: CapBnd=$(field CapBnd), want $kept (NET_ADMIN dropped)"
echo "CAP_NET_ADMIN drop-in: no proc events in the container, polling and saying so; dropped after start-up"
sleep 4
[ "$(inside systemctl show -P MainPID ksmtuned2)" = "$main" ] && [ "$(inside systemctl is-active ksmtuned2)" = active ] ||
        fail "WatchdogSec=1s: the daemon did not keep the watchdog happy ($(inside systemctl show -P Result ksmtuned2))"
[ "$(inside systemctl show -P NRestarts ksmtuned2)" = 0 ] || fail "restarted $(inside systemctl show -P NRestarts ksmtuned2) times"
echo "WatchdogSec=1s: still pid $main after 4 s"

# 8. stop restores the knobs, and nothing was refused by the filter.
inside systemctl stop ksmtuned2 || fail "systemctl stop"
[ "$(inside systemctl is-active ksmtuned2)" != active ] || fail "still active after stop"
after=$(ksm_guard_knobs_now)
[ "$before" = "$after" ] || fail "knobs not restored by stop: before [$before] after [$after]"
journal | grep -q "refused system call" && fail "the seccomp filter refused a system call: $(journal | grep 'refused system call')"
[ "$(inside systemctl show -P Result ksmtuned2)" = success ] || fail "unit result $(inside systemctl show -P Result ksmtuned2)"
echo "stop: knobs restored, no refused system call"

# 9. Bus activation: while the unit is enabled, a call starts the daemon (the
# dbus-org.ksmtuned2.service alias); once disabled, it does not.
inside busctl get-property org.ksmtuned2 /org/ksmtuned2 org.ksmtuned2.Manager1 Version >/dev/null ||
        fail "bus activation of the enabled unit failed"
[ "$(inside systemctl is-active ksmtuned2)" = active ] || fail "bus activation did not start ksmtuned2"
inside systemctl disable --now ksmtuned2 >/dev/null 2>&1 || fail "disable --now"
if inside timeout 10 busctl get-property org.ksmtuned2 /org/ksmtuned2 org.ksmtuned2.Manager1 Version >/dev/null 2>&1; then
        fail "the bus activated a disabled ksmtuned2"
fi
[ "$(inside systemctl is-active ksmtuned2)" != active ] || fail "a disabled ksmtuned2 was started"
[ "$before" = "$(ksm_guard_knobs_now)" ] || fail "knobs not restored after the activated instance"
echo "bus activation: starts the enabled unit, not the disabled one"

# --- structured journal fields (issue 15) ---
# The entries carry fields and MESSAGE_IDs (ksmtuned2(8), JOURNAL FIELDS)
# that journalctl matches on: start, sandbox, reload, stop and restore,
# the policy's verdict on the sleeper, its merging enabled, a knob write.
jmatch() { # field matches...: prints the matching entries in export format
        for _ in $(seq 50); do
                out=$(inside journalctl -b -q --no-pager -o export SYSLOG_IDENTIFIER=ksmtuned2 "$@")
                [ -n "$out" ] && { printf '%s\n' "$out"; return 0; }
                sleep 0.1
        done
        fail "no journal entry with $*"
}
for id in 726f25f7a051491583517d710326e24e 511ca4df099945fe98b0b1cc0c69e4f1 db0b501fb53f4a298bde81ee5c609e39 \
          79287bdc6aa940c98d05390aecd9f96e d844039a6d5c442c8c77971f77df7532; do
        jmatch MESSAGE_ID=$id >/dev/null
done
jmatch KSMTUNED2_DECISION=policy KSMTUNED2_VERDICT=merge KSMTUNED2_PID="$sleeper" | grep -q "^KSMTUNED2_POLICY=$POLICY_DIR/40-e2e.policy:" ||
        fail "the verdict on pid $sleeper does not name 40-e2e.policy in KSMTUNED2_POLICY="
jmatch MESSAGE_ID=c8f151ff43444f75aef4d49f4ff6a4d9 KSMTUNED2_ACTION=enable KSMTUNED2_OUTCOME=done \
        KSMTUNED2_PID="$sleeper" | grep -q '^KSMTUNED2_METHOD=[a-z_]' || fail "pid $sleeper enabled without KSMTUNED2_METHOD="
jmatch KSMTUNED2_ACTION=set KSMTUNED2_KNOB=max_page_sharing KSMTUNED2_VALUE=$mps2 KSMTUNED2_OUTCOME=done >/dev/null
echo "journal fields: start, sandbox, reload, stop, restore by MESSAGE_ID; pid $sleeper's verdict and enable; a knob write"
t_end=$(date +%s)
echo "durations: tree $((t_tree - t_start)) s, boot $((t_boot - t_boot0)) s, lock wait $((t_lock - t_lock0)) s," \
     "whole test $((t_end - t_start)) s"
