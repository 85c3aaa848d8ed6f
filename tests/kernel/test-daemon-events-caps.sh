#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What the proc connector needs on this kernel, and that the installed
# service gets live events on it. The daemon runs with exactly the
# capability bounding set of the shipped unit (systemd/ksmtuned2.service.in,
# no CAP_NET_ADMIN).
# 1. As the unit starts it: with the socket ksmtuned2-proc-events.socket
#    passes (ListenNetlink=connector 1: a NETLINK_CONNECTOR socket joined to
#    group 1 by the service manager, emulated by listen-netlink.py as root).
#    A process started after the daemon is in its model within 2 s although
#    Interval= is an hour and the resync two minutes away: only a live proc
#    event can put it there. So is a child that forked and never exec'd
#    (read after discovery's fork hold, not at once).
# 2. Without the socket, what the kernel itself allows decides, found out
#    independently of the daemon (listen-netlink.py probe under the same
#    bounding set): joining the group needs CAP_NET_ADMIN before 6.6 and on
#    6.18.44 as built for the test machines (bind() EPERM), not on 6.6-6.12
#    (cn_bind(), NL_CFG_F_NONROOT_RECV). Either live events, or polling and
#    the reason.
# 3. Hostile or wrong sockets passed (not a connector socket, one not in the
#    group, not a socket at all): a warning naming the fd and what it is
#    not, the fd closed, and discovery as in 2.
# 4. Under a real service manager: systemd (this host's, as root's user
#    manager, which needs no systemd as PID 1) opens the shipped
#    ksmtuned2-proc-events.socket itself and starts a service wired to it as
#    the shipped unit is (its Wants=, After=, Sockets= and bounding set):
#    live events, the capability not in the daemon's bounding set, and the
#    socket stopped with the service (BindsTo=). Where there is no systemd
#    (the test kernels' guests) this part says so and is left out.
# --dry-run and Tracepoints=no: no KSM knob is written, so no KSM lock.
set -u
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
# In a mount namespace of its own: part 4 makes /run/systemd/system, which
# tells a user manager that systemd runs here, for this test's eyes only.
if [ -z "${KSMT2_PRIVATE_MOUNTS:-}" ] && unshare -m --propagation private true 2>/dev/null; then
        KSMT2_PRIVATE_MOUNTS=1 exec unshare -m --propagation private "$BASH" "$0" "$@"
fi
tmp=$(mktemp -d)
pid= probe=
forker=
manager=
# systemd moves every process of its own cgroup as it starts: it starts in
# a cgroup of its own (tests/lib/own-cgroups.sh).
. "$SOURCE_ROOT/tests/lib/own-cgroups.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"
stop_manager() {
        [ -n "$manager" ] || return 0
        kill -TERM $manager 2>/dev/null
        for _ in $(seq 100); do kill -0 $manager 2>/dev/null || break; sleep 0.1; done
        kill -KILL $manager 2>/dev/null
        wait $manager 2>/dev/null
        manager=
}
trap 'stop_manager; own_cgroups_remove; [ -n "$pid" ] && kill -KILL $pid 2>/dev/null; [ -n "$probe" ] && kill -KILL $probe 2>/dev/null; [ -n "$forker" ] && pkill -KILL -s $forker 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; grep -v "leave-alone: no policy" "$tmp/log" | tail -30 >&2; exit 1; }

unit=$SOURCE_ROOT/systemd/ksmtuned2.service.in
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit")
[ -n "$caps" ] || fail "no CapabilityBoundingSet= in $unit"
case " $caps " in *" CAP_NET_ADMIN "*) echo "note: the unit keeps CAP_NET_ADMIN";; esac
bset=-all
for c in $caps; do c=${c#CAP_}; bset="$bset,+${c,,}"; done

mkdir -p "$tmp/run" "$tmp/policy.d"
cp /bin/sleep "$tmp/ksmsl-probe"
cp /bin/bash "$tmp/ksmsl-fork"
mkfifo "$tmp/fifo"
cat > "$tmp/policy.d/50-probe.policy" <<POLICY
[Match]
Comm=ksmsl-probe
[Merge]
Mode=auto
Method=none
POLICY
daemon_conf "$tmp/k.conf" Interval=1h LogLevel=debug \
        '[Tuning]' Tracepoints=no
listen=$SOURCE_ROOT/tests/helpers/listen-netlink.py
# start_daemon LOG [KIND]: the daemon under the unit's bounding set, with a
# socket of KIND passed as systemd passes one (none without KIND).
start_daemon() {
        local log=$1 kind=${2:-}
        if [ -n "$kind" ]; then
                python3 "$listen" "$kind" setpriv --bounding-set="$bset" --inh-caps=-all "$KSMTUNED2" --dry-run \
                        --config "$tmp/k.conf" > "$log" 2>&1 &
        else
                setpriv --bounding-set="$bset" --inh-caps=-all "$KSMTUNED2" --dry-run --config "$tmp/k.conf" > "$log" 2>&1 &
        fi
        pid=$!
        for _ in $(seq 100); do grep -q "Process discovery" "$log" && break; sleep 0.05; done
        grep -q "Process discovery" "$log" || { cp "$log" "$tmp/log"; fail "no discovery line from the daemon ($log)"; }
}
stop_daemon() { kill -TERM $pid; wait $pid 2>/dev/null; pid=; }
# what this kernel asks of a process that joins the group itself
if setpriv --bounding-set="$bset" --inh-caps=-all python3 "$listen" probe; then
        kernel_open=1; kernel_says="anyone in the initial namespaces may join the proc connector's group"
else
        kernel_open=; kernel_says="joining the proc connector's group needs CAP_NET_ADMIN (bind() EPERM without it)"
fi
echo "Linux $(uname -r): $kernel_says"

# 1. As the unit starts it.
start_daemon "$tmp/log" connector
grep "^ksmtuned2: Process discovery" "$tmp/log" | head -1
grep Cap[BE] /proc/$pid/status | tr '\n' ' '; echo
grep -q "Process discovery: proc connector events (self-test passed, on the socket passed by the service manager)" "$tmp/log" ||
        fail "the unit's capabilities ($caps) and the socket of ksmtuned2-proc-events.socket: no proc connector events"
# late_process_seen LOG: a process started after the daemon's first scan
# (pid $probe) is in its model, as LOG says, within 2 s.
late_process_seen() {
        local log=$1
        for _ in $(seq 100); do grep -q "Scanned [0-9]* processes" "$log" && break; sleep 0.05; done
        "$tmp/ksmsl-probe" 60 &
        probe=$!
        for _ in $(seq 40); do grep -q "pid $probe (ksmsl-probe)" "$log" && return 0; sleep 0.05; done
        return 1
}
late_process_seen "$tmp/log" || fail "pid $probe started after the daemon is not in its model within 2 s"
echo "ok: bounding set $caps and the passed socket: live proc events; $(grep -o "pid $probe (ksmsl-probe).*" "$tmp/log" | head -1)"

# A child that forks and never execs: a bash subshell running the builtin
# read, which blocks on the fifo until the parent is killed with its session.
setsid "$tmp/ksmsl-fork" -c '( read -r -t 60 _ <> "$1" ) & echo $! > "$2"; wait' _ "$tmp/fifo" "$tmp/child" &
forker=$!
for _ in $(seq 40); do [ -s "$tmp/child" ] && break; sleep 0.05; done
child=$(cat "$tmp/child" 2>/dev/null)
[ -n "$child" ] || fail "the forking probe did not start"
grep -q ksmsl-fork "/proc/$child/comm" || fail "pid $child is not the fork-only child"
# Waited for without forking (builtins only): any fork here would be a
# proc event that reads the held child in passing, and the test would not
# see whether the hold's own timer reads it.
mkfifo "$tmp/tick"
exec 9<> "$tmp/tick"
seen=
for _ in $(seq 40); do
        mapfile -t lines < "$tmp/log"
        for l in "${lines[@]}"; do [[ $l == *"pid $child (ksmsl-fork)"* ]] && { seen=1; break; }; done
        [ -n "$seen" ] && break
        read -r -t 0.05 -u 9 _
done
exec 9<&-
[ -n "$seen" ] || fail "fork-only child $child is not in the model within 2 s"
echo "ok: a fork-only child: $(grep -o "pid $child (ksmsl-fork).*" "$tmp/log" | head -1)"
stop_daemon
kill -KILL $probe 2>/dev/null; wait $probe 2>/dev/null; probe=

# 2. Without the socket: what the kernel allows.
start_daemon "$tmp/log2"
if [ -n "$kernel_open" ]; then
        grep -q "Process discovery: proc connector events (self-test passed)" "$tmp/log2" ||
                { cp "$tmp/log2" "$tmp/log"; fail "no socket passed, and $kernel_says: no proc connector events"; }
        echo "ok: no socket passed: live events all the same ($kernel_says)"
else
        grep -q "falls back to polling /proc every tick: proc connector unavailable (EPERM: this kernel wants CAP_NET_ADMIN" "$tmp/log2" ||
                { cp "$tmp/log2" "$tmp/log"; fail "no socket passed, and $kernel_says: no polling fallback with its reason"; }
        echo "ok: no socket passed: polls and says why: $(grep -o "proc connector unavailable.*" "$tmp/log2" | head -1)"
fi
stop_daemon

# 3. Wrong sockets: named, closed, and discovery as without one.
for kind in route unjoined file; do
        case $kind in
        route) want="not a NETLINK_CONNECTOR socket";;
        unjoined) want="not a member of the proc connector's group";;
        file) want="not a netlink socket";;
        esac
        start_daemon "$tmp/log3" $kind
        grep -q "Socket 3 passed by the service manager is $want" "$tmp/log3" ||
                { cp "$tmp/log3" "$tmp/log"; fail "a $kind fd passed: no warning that it is $want"; }
        # closed: no fd of the daemon is what was passed (fd 3 itself may
        # have been reused since)
        passed=$(sed -n 's/^listen-netlink: fd 3 is //p' "$tmp/log3")
        [ -n "$passed" ] || { cp "$tmp/log3" "$tmp/log"; fail "listen-netlink.py did not say what it passed"; }
        for f in /proc/$pid/fd/*; do
                [ "$(readlink "$f")" = "$passed" ] &&
                        { cp "$tmp/log3" "$tmp/log"; fail "a $kind fd passed: still open as ${f##*/}: $passed"; }
        done
        if [ -n "$kernel_open" ]; then
                grep -q "Process discovery: proc connector events (self-test passed)" "$tmp/log3" ||
                        { cp "$tmp/log3" "$tmp/log"; fail "a $kind fd passed: no events of its own"; }
        else
                grep -q "falls back to polling /proc every tick: proc connector unavailable (EPERM" "$tmp/log3" ||
                        { cp "$tmp/log3" "$tmp/log"; fail "a $kind fd passed: no polling fallback"; }
        fi
        echo "ok: a $kind fd passed: $(grep -o "Socket 3 passed.*" "$tmp/log3" | head -1)"
        stop_daemon
done

# 4. Under a real service manager.
systemd=/lib/systemd/systemd
if [ ! -x "$systemd" ] || ! command -v systemctl >/dev/null || [ -z "${KSMT2_PRIVATE_MOUNTS:-}" ]; then
        echo "note: no systemd (or no unshare) here: the real ListenNetlink= is not tried"
        exit 0
fi
sd=$tmp/sd
units=$sd/cfg/systemd/user
mkdir -p "$sd/run" "$units"
cp "$SOURCE_ROOT/systemd/ksmtuned2-proc-events.socket" "$units/"
wiring=$(grep -E '^(Wants|After)=ksmtuned2-proc-events\.socket$' "$unit")
sockets=$(grep -E '^Sockets=' "$unit")
[ -n "$wiring" ] && [ -n "$sockets" ] || fail "$unit is not wired to ksmtuned2-proc-events.socket (Wants=, After=, Sockets=)"
cat > "$units/ksmtuned2.service" <<UNIT
[Unit]
Description=ksmtuned2 as its unit starts it (test-daemon-events-caps.sh)
$wiring
[Service]
Type=notify
NotifyAccess=main
ExecStart=$KSMTUNED2 --dry-run --config $tmp/k.conf
$sockets
CapabilityBoundingSet=$caps
AmbientCapabilities=
StandardOutput=append:$tmp/log4
StandardError=append:$tmp/log4
Environment=KSMTUNED2_SECCOMP_FATAL=1
UNIT
# The manager's default unit: nothing of its own (the service still pulls in
# the user manager's basic.target, which this configuration leaves empty).
printf '[Unit]\nDescription=nothing (test-daemon-events-caps.sh)\n' > "$units/ksmt2-nothing.target"
mkdir -p /run/systemd && mount -t tmpfs -o mode=0755 tmpfs /run/systemd && mkdir /run/systemd/system ||
        fail "cannot make a private /run/systemd/system"
if ! own_cgroups_make "ksmtuned2-test-$$"; then
        echo "note: cannot make a cgroup for the service manager here: the real ListenNetlink= is not tried"
        exit 0
fi
before=$(cat /proc/1/cgroup /proc/$$/cgroup)
(
        own_cgroups_enter || exit 1
        exec env XDG_RUNTIME_DIR="$sd/run" XDG_CONFIG_HOME="$sd/cfg" "$systemd" --user --unit=ksmt2-nothing.target \
                --log-target=console
) > "$tmp/manager.log" 2>&1 &
manager=$!
for _ in $(seq 100); do [ -S "$sd/run/systemd/private" ] && break; sleep 0.1; done
[ -S "$sd/run/systemd/private" ] || { cp "$tmp/manager.log" "$tmp/log"; fail "systemd --user did not start"; }
sctl() { XDG_RUNTIME_DIR=$sd/run timeout 60 systemctl --user --no-pager "$@"; }
# start_service: systemd starts the service as the shipped unit would be
# started; its log in $tmp/log4 (and $tmp/log, for fail).
start_service() {
        : > "$tmp/log4"
        sctl start ksmtuned2.service ||
                { cp "$tmp/log4" "$tmp/log"; fail "systemd could not start the service: $(sctl status ksmtuned2.service ksmtuned2-proc-events.socket 2>&1 | tr '\n' ' ')"; }
        cp "$tmp/log4" "$tmp/log"
        main=$(sctl show -P MainPID ksmtuned2.service)
}
# passed_socket_works: the socket active, its events reaching the daemon,
# CAP_NET_ADMIN not in the daemon's bounding set, and the socket stopped
# with the service.
passed_socket_works() {
        [ "$(sctl is-active ksmtuned2-proc-events.socket)" = active ] ||
                fail "ksmtuned2-proc-events.socket is not active: $(sctl status ksmtuned2-proc-events.socket 2>&1 | tr '\n' ' ')"
        grep -q "Process discovery: proc connector events (self-test passed, on the socket passed by the service manager)" "$tmp/log4" ||
                { cp "$tmp/log4" "$tmp/log"; fail "systemd's ListenNetlink= socket: no proc connector events"; }
        bnd=$(sed -n 's/^CapBnd:[[:space:]]*//p' /proc/"$main"/status)
        (( (0x$bnd >> 12) & 1 )) && fail "CAP_NET_ADMIN in the bounding set of the service's daemon (CapBnd $bnd)"
        late_process_seen "$tmp/log4" ||
                { cp "$tmp/log4" "$tmp/log"; fail "under systemd: pid $probe started after the daemon is not in its model within 2 s"; }
        echo "ok: systemd $sd_version opened ksmtuned2-proc-events.socket and passed it: pid $main (CapBnd $bnd) gets live events; $(grep -o "pid $probe (ksmsl-probe).*" "$tmp/log4" | head -1)"
        kill -KILL $probe; wait $probe 2>/dev/null; probe=
        sctl stop ksmtuned2.service
        [ "$(sctl is-active ksmtuned2-proc-events.socket)" = inactive ] ||
                fail "ksmtuned2-proc-events.socket outlived its service: $(sctl is-active ksmtuned2-proc-events.socket)"
        echo "ok: the socket stopped with the service (BindsTo=)"
}
sd_version=$(systemctl --version | head -1 | cut -d' ' -f2)
start_service
if virt=$(systemd-detect-virt --container 2>/dev/null); then
        # The socket's ConditionVirtualization=!container: skipped, and the
        # service started all the same (Wants=), with discovery as without
        # a socket. The test machines say "docker" (they have a /.dockerenv)
        # while the kernel under test is their own; so the socket is tried
        # there too, with the condition taken away by a drop-in.
        [ "$(sctl show -P ConditionResult ksmtuned2-proc-events.socket)" = no ] ||
                fail "in a container ($virt): ksmtuned2-proc-events.socket was not skipped by its condition"
        grep -q "Process discovery: proc connector events (self-test passed)\|falls back to polling /proc every tick: " "$tmp/log4" ||
                fail "in a container ($virt), without the socket: no discovery line"
        echo "ok: systemd-detect-virt says $virt: the socket skipped by its condition, the service started: $(grep -o "Process discovery.*" "$tmp/log4" | head -1)"
        sctl stop ksmtuned2.service
        mkdir -p "$units/ksmtuned2-proc-events.socket.d"
        printf '[Unit]\nConditionVirtualization=\n' > "$units/ksmtuned2-proc-events.socket.d/test.conf"
        sctl daemon-reload
        start_service
fi
passed_socket_works
stop_manager
own_cgroups_remove
[ "$(cat /proc/1/cgroup /proc/$$/cgroup)" = "$before" ] ||
        fail "the service manager moved processes out of their cgroups: $(cat /proc/$$/cgroup | tr '\n' ' ')"
leftover=$(own_cgroups_leftover)
[ -z "$leftover" ] || fail "cgroups left behind: $leftover"
echo "ok: the service manager ran in a cgroup of its own, moved nothing else and left no cgroup behind"
