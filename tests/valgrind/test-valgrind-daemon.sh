#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon's main paths under valgrind memcheck: start-up (probe, journal,
# discovery, bus attempt), ticks, two reloads (SIGHUP), a clean stop
# (SIGTERM). Any memcheck error or a definitely lost block fails.
#   fake: --root on a fake tree (knob writes go to files there);
#   real: this machine's /proc and KSM with --dry-run (reads only; the loop
#         classifies real processes, events come from the real connector);
#   storm: as real, while 200 processes a second are born and die for 5 s
#         (fork, exec and exit events, classification of processes that are
#         already gone, under memcheck; no overflow: 8 MiB of socket buffer
#         hold those 5 s even for the slowed daemon).
set -u
mode=${1:-fake}
command -v valgrind >/dev/null || { echo "SKIP: valgrind not installed" >&2; exit 77; }
. "$SOURCE_ROOT/tests/lib/fake-tree.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"

tmp=$(mktemp -d)
vg_pid=
child=
cleanup() {
        [ -n "$vg_pid" ] && kill -KILL "$vg_pid" 2>/dev/null
        [ -n "$child" ] && kill -KILL "$child" 2>/dev/null
        wait 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/vg.log" ] && tail -80 "$tmp/vg.log" >&2; exit 1; }

mkdir -p "$tmp/run" "$tmp/policy.d"
daemon_conf "$tmp/k.conf" Interval=200ms LogLevel=debug \
        '[Ksm]' UseZeroPages=yes MaxPageSharing=512
# A policy that matches a process of ours, so classification and planning
# run (nothing is carried out: dry run, or a fake tree).
cat > "$tmp/policy.d/50-sleep.policy" <<POLICY
[Match]
Comm=sleep
[Merge]
Mode=auto
Method=any
POLICY
sleep 300 &
child=$!

args=(--config "$tmp/k.conf")
if [ "$mode" = fake ]; then
        fake_tree_minimal "$tmp/root"
        args+=(--root "$tmp/root")
        ready='set use_zero_pages=1'
else
        [ -d /sys/kernel/mm/ksm ] || { echo "SKIP: no KSM" >&2; exit 77; }
        [ "$mode" = storm ] && [ -z "${PROC_STORM:-}" ] && { echo "SKIP: no proc-storm" >&2; exit 77; }
        args+=(--dry-run)
        ready='would set'
fi

valgrind --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=definite \
        --errors-for-leak-kinds=definite --child-silent-after-fork=yes --log-file="$tmp/vg.log" \
        "$KSMTUNED2" "${args[@]}" 2>"$tmp/daemon.log" &
vg_pid=$!

# Start-up under valgrind takes seconds; wait for the first tick's write.
for _ in $(seq 600); do
        grep -q "$ready" "$tmp/daemon.log" && break
        kill -0 "$vg_pid" 2>/dev/null || break
        sleep 0.1
done
grep -q "$ready" "$tmp/daemon.log" || { cat "$tmp/daemon.log" >&2; fail "daemon did not tick under valgrind"; }
sleep 1
if [ "$mode" = storm ]; then
        "$PROC_STORM" --rate 200 --seconds 5 >"$tmp/storm.out" || fail "storm helper failed"
fi
kill -HUP "$vg_pid"
sleep 0.7
kill -HUP "$vg_pid"
sleep 1
kill -TERM "$vg_pid"
wait "$vg_pid"
rc=$?
vg_pid=

grep -c "Reloaded configuration" "$tmp/daemon.log" | grep -q '^2$' || { cat "$tmp/daemon.log" >&2; fail "expected two reloads"; }
[ "$rc" = 99 ] && fail "valgrind reported errors"
[ "$rc" = 0 ] || { tail -20 "$tmp/daemon.log" >&2; fail "daemon exited $rc"; }
if grep -q "definitely lost" "$tmp/vg.log"; then fail "definitely lost blocks"; fi
[ "$mode" = fake ] && { [ "$(cat "$tmp/root/sys/kernel/mm/ksm/use_zero_pages")" = 0 ] || fail "knob not restored on stop"; }
[ "$mode" = storm ] && echo "during: $(cat "$tmp/storm.out"); $(grep -c "events were lost" "$tmp/daemon.log") overflow(s) logged"
echo "valgrind ($mode): 0 errors, 0 bytes definitely lost; start, ticks, 2 reloads, SIGTERM; $(grep -c . "$tmp/daemon.log") log lines"
