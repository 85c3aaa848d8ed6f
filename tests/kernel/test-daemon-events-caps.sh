#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What the proc connector needs on this kernel: the daemon runs with exactly
# the capability bounding set of the shipped unit (systemd/ksmtuned2.service.in,
# no CAP_NET_ADMIN), and a process started after it is in its model within
# 2 s although Interval= is an hour and the resync two minutes away: only a
# live proc event can put it there. So is a child that forked and never
# exec'd (read after discovery's fork hold, not at once). Since Linux 6.6 joining the connector's
# group needs no capability (drivers/connector/connector.c cn_bind(), cn_proc.c
# cn_proc_mcast_ctl(): initial user and PID namespaces only). Before 6.6 the
# daemon must say it polls, and why. --dry-run and Tracepoints=no: no KSM
# knob is written, so no KSM lock.
set -u
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
tmp=$(mktemp -d)
pid= probe=
forker=
trap '[ -n "$pid" ] && kill -KILL $pid 2>/dev/null; [ -n "$probe" ] && kill -KILL $probe 2>/dev/null; [ -n "$forker" ] && pkill -KILL -s $forker 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
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
cat > "$tmp/k.conf" <<CONF
[Daemon]
Interval=1h
RuntimeDirectory=$tmp/run
PolicyDirectories=$tmp/policy.d
LogLevel=debug
[Tuning]
Tracepoints=no
CONF
setpriv --bounding-set="$bset" --inh-caps=-all "$KSMTUNED2" --dry-run --config "$tmp/k.conf" > "$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "Process discovery" "$tmp/log" && break; sleep 0.05; done
grep "^ksmtuned2: Process discovery" "$tmp/log" | head -1
grep Cap[BE] /proc/$pid/status | tr '\n' ' '; echo

read -r major minor _ <<<"$(uname -r | tr '.-' '  ')"
if [ "$major" -lt 6 ] || { [ "$major" = 6 ] && [ "$minor" -lt 6 ]; }; then
        grep -q "falls back to polling /proc every tick: proc connector unavailable (EPERM: needs CAP_NET_ADMIN" "$tmp/log" ||
                fail "Linux $major.$minor without CAP_NET_ADMIN: no polling fallback with its reason"
        echo "ok: Linux $major.$minor: without CAP_NET_ADMIN the daemon polls and says why"
        exit 0
fi
grep -q "Process discovery: proc connector events (self-test passed)" "$tmp/log" ||
        fail "Linux $major.$minor, the unit's capabilities ($caps): no proc connector events"
for _ in $(seq 100); do grep -q "Scanned [0-9]* processes" "$tmp/log" && break; sleep 0.05; done
"$tmp/ksmsl-probe" 60 &
probe=$!
seen=
for _ in $(seq 40); do grep -q "pid $probe (ksmsl-probe)" "$tmp/log" && { seen=1; break; }; sleep 0.05; done
[ -n "$seen" ] || fail "pid $probe started after the daemon is not in its model within 2 s"
echo "ok: Linux $major.$minor, bounding set $caps: live proc events; $(grep -o "pid $probe (ksmsl-probe).*" "$tmp/log" | head -1)"

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
