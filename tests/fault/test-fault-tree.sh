#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Faults on a fake tree (--root), one daemon each:
#   no-ksm:    sys/kernel/mm/ksm missing -> exit status 4, one clear message;
#   read-only: knob files on a read-only mount (root ignores file modes, so a
#              bind mount in a private mount namespace) -> the kernel's errno
#              is logged once per knob, not once per tick, and ticks go on;
#   bare:      no ksmd, no tracefs, no PSI, no cgroup2 -> it ticks and
#              writes its knobs, and restores them on SIGTERM;
#   pidns:     the real /proc of a new PID namespace, where the kernel takes
#              the connector's LISTEN and then sends nothing -> polling,
#              said once, and a process started later is in the model
#              (SIGUSR1 dump). Run as root: where the connector lets only
#              CAP_NET_ADMIN join its group (before 6.6, and 6.18.44 as
#              built here) dropping it would end at bind() already;
#   pid reuse: in that namespace, a process a policy matched exits and
#              another takes its pid (ns_last_pid) within one tick: the model
#              holds the new one with its own start time and verdict.
set -u
. "$SOURCE_ROOT/tests/lib/fake-tree.sh"
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -KILL $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; for f in "$tmp"/*.log; do echo "--- $f" >&2; tail -30 "$f" >&2; done; exit 1; }

conf() {
        mkdir -p "$tmp/run-$1" "$tmp/policy.d"
        cat > "$tmp/$1.conf" <<CONF
[Daemon]
Interval=100ms
RuntimeDirectory=$tmp/run-$1
PolicyDirectories=$tmp/policy.d
[Ksm]
UseZeroPages=yes
MaxPageSharing=512
CONF
}

# 1. KSM absent.
fake_tree_minimal "$tmp/no-ksm" no-ksm
conf no-ksm
"$KSMTUNED2" --root "$tmp/no-ksm" --config "$tmp/no-ksm.conf" 2>"$tmp/no-ksm.log"
rc=$?
[ "$rc" = 4 ] || fail "KSM absent: exit status $rc, want 4"
[ "$(grep -c . "$tmp/no-ksm.log")" = 1 ] || fail "KSM absent: want exactly one line"
grep -q "KSM is not available: $tmp/no-ksm/sys/kernel/mm/ksm does not exist" "$tmp/no-ksm.log" ||
        fail "KSM absent: message does not name the directory"
echo "KSM absent: exit 4, one line: $(cat "$tmp/no-ksm.log")"

# 2. Knobs read-only, for 20 ticks.
fake_tree_minimal "$tmp/ro"
conf ro
if unshare -m true 2>/dev/null; then
        unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" "$1" && shift && exec "$@"' sh \
                "$tmp/ro/sys/kernel/mm/ksm" "$KSMTUNED2" --root "$tmp/ro" --config "$tmp/ro.conf" 2>"$tmp/ro.log" &
        pid=$!
        sleep 2.2
        kill -TERM $pid; wait $pid; rc=$?; pid=
        [ "$rc" = 0 ] || fail "read-only: exit status $rc"
        grep -q "not writable: observing only" "$tmp/ro.log" || fail "read-only: not said at start"
        for k in use_zero_pages max_page_sharing; do
                n=$(grep -c "refused $k=.*Read-only file system" "$tmp/ro.log")
                [ "$n" = 1 ] || fail "read-only: $k refusal logged $n times, want once"
        done
        lines=$(grep -c . "$tmp/ro.log")
        # About 12 lines say the start, the configuration files, the
        # fallbacks, each refusal once and the stop; a line per tick would
        # be 20 more.
        [ "$lines" -le 16 ] || fail "read-only: $lines log lines in 20 ticks (spam)"
        echo "read-only knobs: EROFS said once per knob, $lines log lines over ~20 ticks:"; sed "s/^/    /" "$tmp/ro.log"
else
        echo "read-only knobs: skipped (no mount namespaces)"
fi

# 3. A bare tree: no ksmd, tracefs, PSI; still ticks and restores.
fake_tree_minimal "$tmp/bare"
conf bare
"$KSMTUNED2" --root "$tmp/bare" --config "$tmp/bare.conf" 2>"$tmp/bare.log" &
pid=$!
for _ in $(seq 50); do
        [ "$(cat "$tmp/bare/sys/kernel/mm/ksm/max_page_sharing")" = 512 ] && break
        sleep 0.1
done
[ "$(cat "$tmp/bare/sys/kernel/mm/ksm/max_page_sharing")" = 512 ] || fail "bare: knob not applied"
sleep 1
kill -TERM $pid; wait $pid; rc=$?; pid=
[ "$rc" = 0 ] || fail "bare: exit status $rc"
[ "$(cat "$tmp/bare/sys/kernel/mm/ksm/max_page_sharing")" = 256 ] || fail "bare: knob not restored"
[ "$(cat "$tmp/bare/sys/kernel/mm/ksm/use_zero_pages")" = 0 ] || fail "bare: knob not restored"
grep -E "Failed|refused|[Cc]annot|error" "$tmp/bare.log" && fail "bare: errors logged"
echo "bare tree (no ksmd, tracefs, PSI): ticks, applies, restores; $(grep -c . "$tmp/bare.log") log lines"

# 4. Proc connector unavailable: a PID namespace (dry run: nothing written).
if [ "$(id -u)" = 0 ] && unshare -p -f --mount-proc true 2>/dev/null; then
        conf pidns
        unshare -p -f --mount-proc sh -c '
                "$1" --dry-run --config "$2" 2>"$3" & d=$!
                for _ in $(seq 50); do grep -q "falls back to polling" "$3" && break; sleep 0.1; done
                sleep 30 & s=$!
                sleep 0.5
                kill -USR1 $d; sleep 0.5
                grep -q "\"$s " "$4" && echo found >"$5"
                kill $s; kill -TERM $d; wait $d; echo $? >"$6"' sh \
                "$KSMTUNED2" "$tmp/pidns.conf" "$tmp/pidns.log" "$tmp/run-pidns/state.json" "$tmp/pidns.found" \
                "$tmp/pidns.rc"
        [ "$(cat "$tmp/pidns.rc")" = 0 ] || fail "pidns: exit status $(cat "$tmp/pidns.rc")"
        [ "$(grep -c "falls back to polling" "$tmp/pidns.log")" = 1 ] || fail "pidns: polling not said exactly once"
        [ -f "$tmp/pidns.found" ] || fail "pidns: a process started later is not in the model"
        echo "connector unavailable (PID namespace): $(grep -o 'falls back to polling.*' "$tmp/pidns.log"); later process found"
else
        echo "connector unavailable: skipped (needs root and PID namespaces)"
fi

# 5. A pid reused within one tick (polling: no exit event to tell).
if [ "$(id -u)" = 0 ] && [ -w /proc/sys/kernel/ns_last_pid ] && unshare -p -f --mount-proc true 2>/dev/null; then
        conf reuse
        cat >> "$tmp/reuse.conf" <<CONF
[Daemon]
Interval=1s
CONF
        printf '[Match]\nComm=reuse-a\n[Merge]\nMode=auto\nMethod=any\n' >"$tmp/policy.d/50-reuse.policy"
        cp "$(command -v sleep)" "$tmp/reuse-a"
        cp "$(command -v sleep)" "$tmp/reuse-b"
        unshare -p -f --mount-proc sh -c '
                t=$1
                "$2" --dry-run --config "$t/reuse.conf" 2>"$t/reuse.log" & d=$!
                for _ in $(seq 50); do grep -q "falls back to polling" "$t/reuse.log" && break; sleep 0.1; done
                start() { sed "s/.*) //" /proc/$1/stat | cut -d" " -f20; }
                dump() { rm -f "$t/run-reuse/state.json"; kill -USR1 $d
                         for _ in $(seq 50); do [ -s "$t/run-reuse/state.json" ] && break; sleep 0.1; done; }
                "$t/reuse-a" 100 & a=$!
                sleep 2.5; dump
                echo "a $a $(start $a) $(grep -o "\"$a [0-9]* [a-z-]*\"" "$t/run-reuse/state.json")" >"$t/reuse.out"
                kill $a; wait $a 2>/dev/null
                echo $((a - 1)) >/proc/sys/kernel/ns_last_pid
                "$t/reuse-b" 100 & b=$!
                sleep 2.5; dump
                echo "b $b $(start $b) $(grep -o "\"$b [0-9]* [a-z-]*\"" "$t/run-reuse/state.json")" >>"$t/reuse.out"
                kill $b; kill -TERM $d; wait $d; echo $? >"$t/reuse.rc"' sh "$tmp" "$KSMTUNED2"
        [ "$(cat "$tmp/reuse.rc")" = 0 ] || fail "pid reuse: exit status $(cat "$tmp/reuse.rc")"
        read -r _ pa sa _ <<<"$(sed -n 1p "$tmp/reuse.out")"
        read -r _ pb sb _ <<<"$(sed -n 2p "$tmp/reuse.out")"
        [ "$pa" = "$pb" ] || fail "pid reuse: the namespace gave pid $pb, not $pa ($(cat "$tmp/reuse.out"))"
        [ "$(sed -n 1p "$tmp/reuse.out")" = "a $pa $sa \"$pa $sa merge\"" ] ||
                fail "pid reuse: the first process is not in the model with a merge verdict: $(sed -n 1p "$tmp/reuse.out")"
        [ "$(sed -n 2p "$tmp/reuse.out")" = "b $pb $sb \"$pb $sb leave-alone\"" ] ||
                fail "pid reuse: the model kept the old incarnation: $(cat "$tmp/reuse.out")"
        echo "pid reuse within one tick: pid $pa start $sa (merge) -> start $sb (leave-alone) in the model"
else
        echo "pid reuse: skipped (needs root, ns_last_pid and PID namespaces)"
fi
