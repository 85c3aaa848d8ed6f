#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon's own cost on a host with 10,000 processes in 1,000 cgroups:
# real sleeping processes (tests/helpers/cgroup-fleet) in real cgroup v2
# directories, the daemon on the real /proc with its metrics file written
# every tick (what groups every process by cgroup, VM and unit) and a private
# bus. Prints CPU per tick and % of a core over 30 s, RSS, and the daemon's
# CPU per ListCgroups and ListProcesses call (what any unprivileged user can
# make it spend). The daemon runs with --dry-run: it reads KSM but writes no
# knob, so no KSM lock is taken. KSMTUNED2_OLD=path runs that binary too, in
# the same run, for a before/after table.
#   FLEET_PROCESSES=N FLEET_CGROUPS=M BENCH_SECONDS=S override the sizes.
set -u
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
CG2=/sys/fs/cgroup/unified
[ -f "$CG2/cgroup.procs" ] || { echo "SKIP: no cgroup v2 at $CG2"; exit 77; }
command -v dbus-daemon >/dev/null && command -v busctl >/dev/null || { echo "SKIP: no dbus-daemon/busctl"; exit 77; }
. "$SOURCE_ROOT/tests/lib/private-bus.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"
FLEET=${CGROUP_FLEET:-$BUILD_ROOT/tests/helpers/cgroup-fleet}
N=${FLEET_PROCESSES:-10000}
M=${FLEET_CGROUPS:-1000}
WINDOW=${BENCH_SECONDS:-30}
CALLS=20
IFACE=org.ksmtuned2.Manager1

tmp=$(mktemp -d /tmp/ksmtuned2-bench-cg.XXXXXX)
chmod 755 "$tmp"
cgdir=$CG2/ksmtuned2-bench.$$
fleet_pid= daemon_pid=
cleanup() {
        [ -n "$daemon_pid" ] && kill -KILL "$daemon_pid" 2>/dev/null
        exec 7>&- 2>/dev/null
        [ -n "$fleet_pid" ] && { kill -TERM "$fleet_pid" 2>/dev/null; wait "$fleet_pid" 2>/dev/null; }
        rmdir "$cgdir" 2>/dev/null
        private_bus_stop
        rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }
kib() { sed -n "s/^$2:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$1/status"; }
hz=$(getconf CLK_TCK)

mkdir "$cgdir" || fail "cannot create $cgdir"
mkfifo "$tmp/fleet.in"
"$FLEET" --processes "$N" --cgroups "$M" --dir "$cgdir" < "$tmp/fleet.in" > "$tmp/fleet.out" 2>&1 &
fleet_pid=$!
exec 7> "$tmp/fleet.in"
for _ in $(seq 600); do grep -q ready "$tmp/fleet.out" && break; kill -0 "$fleet_pid" 2>/dev/null || break; sleep 0.1; done
grep -q ready "$tmp/fleet.out" || fail "fleet not ready: $(cat "$tmp/fleet.out")"
private_bus_start "$tmp"
mkdir -p "$tmp/policy.d" "$tmp/metrics"
cat > "$tmp/k.conf" <<CONF
[Daemon]
Interval=1s
RuntimeDirectory=$tmp/run
PolicyDirectories=$tmp/policy.d
[Metrics]
TextfilePath=$tmp/metrics/ksmtuned2.prom
CONF
echo "$N sleeping processes in $M cgroups ($(ls /proc | grep -c '^[0-9]') processes on the host); daemon: Interval=1s, metrics every tick, --dry-run"

measure() { # label binary
        local label=$1 bin=$2 c0 c1 t0 t1 permille
        : > "$tmp/log"
        KSMTUNED2=$bin daemon_start "$tmp/log" --config "$tmp/k.conf" --dry-run || fail "$label: daemon did not start"
        # the first ticks read every process's facts once
        sleep 3
        c0=$(ticks "$daemon_pid") t0=$(ms)
        sleep "$WINDOW"
        c1=$(ticks "$daemon_pid") t1=$(ms)
        permille=$(( (c1 - c0) * 1000 * 1000 / hz / (t1 - t0) ))
        local per_tick=$(( (c1 - c0) * 1000 * 1000 / hz / ((t1 - t0) / 1000) ))
        local list_c list_p
        c0=$(ticks "$daemon_pid")
        for _ in $(seq $CALLS); do
                busctl --system call org.ksmtuned2 /org/ksmtuned2 $IFACE ListCgroups > "$tmp/cg.reply" || fail "ListCgroups"
        done
        c1=$(ticks "$daemon_pid")
        list_c=$(( (c1 - c0) * 1000 * 1000 / hz / CALLS ))
        c0=$(ticks "$daemon_pid")
        for _ in $(seq $CALLS); do
                busctl --system call org.ksmtuned2 /org/ksmtuned2 $IFACE ListProcesses > "$tmp/p.reply" || fail "ListProcesses"
        done
        c1=$(ticks "$daemon_pid")
        list_p=$(( (c1 - c0) * 1000 * 1000 / hz / CALLS ))
        printf '%-8s CPU %3d.%d%% of a core, %6d us per tick; RSS %6d KiB (peak %6d KiB); ListCgroups %6d us/call (%s entries), ListProcesses %6d us/call (%s entries)\n' \
                "$label" $((permille / 10)) $((permille % 10)) "$per_tick" "$(kib "$daemon_pid" VmRSS)" \
                "$(kib "$daemon_pid" VmHWM)" "$list_c" "$(awk '{print $2}' "$tmp/cg.reply")" "$list_p" \
                "$(awk '{print $2}' "$tmp/p.reply")"
        kill -TERM "$daemon_pid"; wait "$daemon_pid"; daemon_pid=
}
[ -n "${KSMTUNED2_OLD:-}" ] && measure before "$KSMTUNED2_OLD"
measure now "$KSMTUNED2"
echo "target (issue 14): <= 1% of a core, <= 32 MiB RSS"
