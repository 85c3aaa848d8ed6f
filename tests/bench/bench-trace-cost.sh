#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What the contention windows cost, measured in one run on this machine:
#   1. the daemon's: switching the three mmap_lock events on and off (each
#      switch patches kernel text: a static key and a static call per
#      tracepoint), which tracefs.c does for each window; the median of
#      ROUNDS on/off pairs, in ms of wall time;
#   2. the host's: a process looping mmap + write fault + munmap
#      (tests/helpers/mmap-rate, two write locks a loop, which the windows'
#      filter lets through for every task) with the events off (what the
#      daemon does between windows since commit 9fde544), armed (enabled, the
#      instance's tracing_on=0: between a window's switch and its
#      tracing_on, a few ms; between a burst's windows until 2026-12-04),
#      soft (registered soft-disabled by a disable_event trigger on
#      oom:mark_victim: between a burst's windows until commit 9fde544) and
#      recording (a window), in alternating rounds of SECONDS each; prints
#      the median rates and their ratios to off.
#   What armed costs ksmd, whose every tree comparison takes an mm lock, is
#   not measured here (it needs KSM and its lock): see tracefs.c, 4.0-4.4 s
#   of ksmd to merge S4's fleet armed, 2.9-3.0 s soft, 2.3-2.5 s off.
# Uses a scratch tracefs instance of its own with the daemon's filters
# (ksmd's pid); no KSM knob is touched. ROUNDS=N SECONDS=S override.
set -u
ROUNDS=${ROUNDS:-10}
SECS=${SECONDS_PER_ROUND:-2}
MMAP_RATE=${MMAP_RATE:-$BUILD_ROOT/tests/helpers/mmap-rate}
tracefs=/sys/kernel/tracing
[ -d "$tracefs/events" ] || mount -t tracefs nodev "$tracefs" 2>/dev/null
[ -d "$tracefs/events/mmap_lock" ] || { echo "SKIP: no mmap_lock tracepoints"; exit 77; }
ksmd=$(pgrep -x ksmd | head -1)
[ -n "$ksmd" ] || { echo "SKIP: no ksmd"; exit 77; }
inst="$tracefs/instances/bench-trace-cost-$$"
events=(mmap_lock_start_locking mmap_lock_acquire_returned mmap_lock_released)
cleanup() {
        [ -d "$inst" ] || return
        for e in "${events[@]}"; do echo 0 > "$inst/events/mmap_lock/$e/enable"; done 2>/dev/null
        for e in "${events[@]}"; do echo "!disable_event:mmap_lock:$e" > "$inst/events/oom/mark_victim/trigger"; done 2>/dev/null
        rmdir "$inst" 2>/dev/null
}
trap cleanup EXIT
mkdir "$inst" || { echo "SKIP: cannot make a tracefs instance"; exit 77; }
echo 0 > "$inst/tracing_on"
echo 1024 > "$inst/buffer_size_kb"
# the daemon's filters (tracefs.c tracer_window_arm, khugepaged left out)
echo "common_pid == $ksmd" > "$inst/events/mmap_lock/mmap_lock_start_locking/filter"
echo "common_pid == $ksmd || write == 1" > "$inst/events/mmap_lock/mmap_lock_acquire_returned/filter"
echo "(write == 1 && common_pid != $ksmd)" > "$inst/events/mmap_lock/mmap_lock_released/filter"
ns() { date +%s%N; }
switch() { for e in "${events[@]}"; do echo "$1" > "$inst/events/mmap_lock/$e/enable"; done; }
# soft-disabled first, then the trigger goes (tracefs.c switch_events)
soft() {
        local e
        if [ "$1" = 1 ]; then
                for e in "${events[@]}"; do
                        echo "disable_event:mmap_lock:$e" > "$inst/events/oom/mark_victim/trigger" || return 1
                done
        else
                switch 0
                for e in "${events[@]}"; do echo "!disable_event:mmap_lock:$e" > "$inst/events/oom/mark_victim/trigger"; done
        fi
}

on_ms=() off_ms=() rate_off=() rate_armed=() rate_rec=() rate_soft=()
for _ in $(seq "$ROUNDS"); do
        switch 0
        rate_off+=("$("$MMAP_RATE" "$SECS")")
        t0=$(ns); switch 1; t1=$(ns)
        on_ms+=("$(( (t1 - t0) / 1000 ))")
        rate_armed+=("$("$MMAP_RATE" "$SECS")")
        echo 1 > "$inst/tracing_on"
        rate_rec+=("$("$MMAP_RATE" "$SECS")")
        echo 0 > "$inst/tracing_on"
        echo > "$inst/trace"
        t0=$(ns); switch 0; t1=$(ns)
        off_ms+=("$(( (t1 - t0) / 1000 ))")
        if soft 1 2>/dev/null; then
                rate_soft+=("$("$MMAP_RATE" "$SECS")")
        else
                rate_soft+=(0)
        fi
        soft 0 2>/dev/null
done
python3 - "${on_ms[*]}" "${off_ms[*]}" "${rate_off[*]}" "${rate_armed[*]}" "${rate_rec[*]}" "${rate_soft[*]}" <<'PY'
import statistics as st, sys
on, off, r0, ra, rr, rs = ([float(x) for x in a.split()] for a in sys.argv[1:])
print("switching the 3 window events (the daemon's cost, each window):")
print("  on  %.1f ms median (%.1f-%.1f), off %.1f ms median (%.1f-%.1f), %d rounds" %
      (st.median(on) / 1000, min(on) / 1000, max(on) / 1000, st.median(off) / 1000, min(off) / 1000, max(off) / 1000, len(on)))
print("a process looping mmap + fault + munmap (the host's cost), loops/s:")
print("  off %.0f, armed %.0f, recording %.0f (medians)" % (st.median(r0), st.median(ra), st.median(rr)))
print("  armed/off %.3f, recording/off %.3f (median of the per-round ratios)" %
      (st.median([a / o for a, o in zip(ra, r0)]), st.median([r / o for r, o in zip(rr, r0)])))
if all(rs):
    print("  soft %.0f, soft/off %.3f (soft-disabled, as the daemon kept them between a burst's windows until commit 9fde544)" %
          (st.median(rs), st.median([x / o for x, o in zip(rs, r0)])))
else:
    print("  soft: the kernel refused the disable_event trigger")
PY
