#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Seed 003 on the real kernel. `ksmtuned2 --probe --json` answers whether
# break_ksm() skips the holes of a sparse mapping (yes/no, with its
# figures). Then a process with a 1 TiB sparse mergeable mapping
# (MAP_NORESERVE, a few pages touched, PR_SET_MEMORY_MERGE 1) is switched
# off by the daemon (Mode=never, Method=inject): on a kernel without the
# range walk a blind PR_SET_MEMORY_MERGE 0 holds the target's thread for
# as long as the walk of every page takes (256 GiB took 22 s on the test
# machine's 6.18); the daemon unmerges in chunks instead, and the target
# measures from its own side that its thread was never held for more than
# 100 ms (less what a second thread of its own, which the injector does
# not touch, saw of the machine stalling at the same time: a whole-VM stall
# of a shared CI host is not the daemon's doing). ksmd stays off throughout (IdleMode=stop from the first tick, and
# Tracepoints=no so that another user's process entering KSM on this shared
# machine does not start a burst): a stock ksmd walks the same holes under
# the target's mmap_read_lock, and the chunks' madvise waits for it.
set -u
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/ksm-flags.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin sparse
fail_log_lines=30
merge_any() { ksm_flag "$1" merge_any; }
hold_us() { sed -n 's/^max_hold_us \([0-9]*\).*/\1/p' "$tmp/hold" 2>/dev/null; }
own_hold_us() { sed -n 's/.* own_hold_us \([0-9]*\).*/\1/p' "$tmp/hold" 2>/dev/null; }
: > "$tmp/log"

# 1. The probe: a state with its figures, and bounded in time.
t0=$(date +%s%N)
"$KSMTUNED2" --probe --json > "$tmp/probe.json" || fail "ksmtuned2 --probe --json failed"
t1=$(date +%s%N)
read -r state evidence small large < <(python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
f = {x["name"]: x for x in p["kernel_fixes"]}
u = p["unmerge_probe"]
print(f["range-walk"]["state"], f["range-walk"]["evidence"].replace(" ", "_"), u["small_nsec"], u["large_nsec"])
' "$tmp/probe.json") || fail "no kernel_fixes in --probe --json: $(cat "$tmp/probe.json")"
case $state in yes|no) ;; *) fail "range-walk is \"$state\" ($evidence): the probe did not decide";; esac
echo "probe: range-walk $state: ${evidence//_/ } (whole --probe: $(((t1 - t0) / 1000000)) ms)"
[ $(((t1 - t0) / 1000000)) -lt 10000 ] || fail "--probe took more than 10 s"
"$KSMTUNED2" --probe | grep -q "^  003 range-walk: *$state " || fail "--probe does not print 003 range-walk $state"
for fix in trylock per-vma khugepaged smart-scan; do
        python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); f={x["name"]:x for x in p["kernel_fixes"]}; sys.exit(f[sys.argv[2]]["state"] != "unknown")' \
                "$tmp/probe.json" "$fix" || fail "$fix is not unknown before the daemon watched ksmd"
done

# 2. A 1 TiB sparse mergeable process, switched off by the daemon.
echo 0 > "$KSM/run"
mkdir -p "$tmp/policy.d" "$tmp/run"
cp "$SPARSE_TARGET" "$tmp/ksmt2-sparse"
cat > "$tmp/policy.d/50-sparse.policy" <<POL
[Match]
Comm=ksmt2-sparse
[Merge]
Mode=never
Method=inject
POL
daemon_conf "$tmp/k.conf" Interval=200ms \
        '[Tuning]' IdleAfter=1ms IdleMode=stop Tracepoints=no
"$tmp/ksmt2-sparse" 1024 16 "$tmp/hold" > "$tmp/target.out" 2>&1 &
target_pid=$!
ksm_guard_track "$target_pid"
for _ in $(seq 100); do grep -q ready "$tmp/target.out" && break; sleep 0.05; done
grep -q ready "$tmp/target.out" || fail "target did not start: $(cat "$tmp/target.out")"
[ "$(merge_any "$target_pid")" = yes ] || fail "target does not merge before the daemon runs"
# What this shared machine alone does to a 1 ms sleep, for the record.
sleep 2
baseline=$(hold_us)
echo "baseline: the target's longest 1 ms sleep overran by ${baseline:-?} us in 2 s without the daemon"
kill -USR1 "$target_pid"
for _ in $(seq 50); do [ "$(hold_us)" = 0 ] && break; sleep 0.02; done

start=$(date +%s)
daemon_start "$tmp/log" --config "$tmp/k.conf" || fail "daemon did not start"
[ "$(cat "$KSM/run")" = 0 ] || fail "ksmd was started (run=$(cat "$KSM/run"))"
# The outcome line is written only once the switch-off is over.
for _ in $(seq 3000); do grep -q "pid $target_pid (ksmt2-sparse): method inject" "$tmp/log" && break; sleep 0.1; done
line=$(grep -o "pid $target_pid (ksmt2-sparse): method inject.*" "$tmp/log" | head -1)
[ -n "$line" ] || fail "no outcome for the target within 300 s"
end=$(date +%s)
sleep 0.3       # one more report of the target's (every 100 ms)
echo "outcome after $((end - start)) s: $line"
[ "$(merge_any "$target_pid")" = no ] || fail "target still merges: $line"
held=$(hold_us) own=$(own_hold_us)
[ -n "$held" ] && [ -n "$own" ] || fail "the target reported nothing"
echo "longest hold of the target's thread: $own us ($held us before taking off what its other thread saw the machine stall)"
# The measure is only right if the injector held the thread that measures.
grep -q "(tid $target_pid," <<<"$line" || fail "the injector did not take the main thread: $line"
[ "$own" -lt 100000 ] || fail "the target's thread was held $own us (> 100 ms; $held us in all; the machine alone: ${baseline:-?} us)"
if [ "$state" = no ]; then
        grep -q "in [0-9]* chunks, [0-9]* over [0-9]* ms (no break_ksm range walk" <<<"$line" || fail "not unmerged in chunks: $line"
fi
kill -0 "$target_pid" || fail "target died"
grep -q "Kernel fix 003 (range-walk): $state" "$tmp/log" || fail "the daemon did not log fix 003"
echo "PASS"
