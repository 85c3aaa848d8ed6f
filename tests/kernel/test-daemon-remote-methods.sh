#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The remote merge methods for real, through the daemon as it runs
# (sandboxed, with its injector): Method=madvise (process_madvise() with
# MADV_MERGEABLE/MADV_UNMERGEABLE on another process, test kernel patch
# 0006) and Method=process_ksm (process_ksm_enable/disable, patch 0007)
# switch a process on, ksmd merges its duplicates, and UnmergeOnExit=yes
# switches it off again. The target runs as nobody, as real targets run as
# their own users. Skips (77) on a kernel with neither method (upstream:
# process_madvise() refuses MADV_MERGEABLE, no process_ksm); runs in the
# patched test guest (tests/vmkernel).
set -u
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root"; exit 77; fi
# --probe writes no KSM knob.
probe=$("$KSMTUNED2" --probe --json 2>/dev/null) || { echo "FAIL: ksmtuned2 --probe --json failed" >&2; exit 1; }
methods=
printf '%s\n' "$probe" | grep -q '"process_madvise_remote_mergeable": *true' && methods="madvise"
printf '%s\n' "$probe" | grep -q '"process_ksm_syscall": *true' && methods="$methods process_ksm"
if [ -z "$methods" ]; then
        echo "SKIP: this kernel has neither remote method (process_madvise refuses MADV_MERGEABLE, no process_ksm)"
        exit 77
fi
# Only now the KSM test lock (waiting for it is the slow part of a skip).
. "$SOURCE_ROOT/tests/lib/ksm-guard.sh"
. "$SOURCE_ROOT/tests/lib/ksm-flags.sh"

. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin remote
. "$SOURCE_ROOT/tests/lib/wait.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"
log_has() { grep -q -e "$1" "$tmp/log"; }
flags() { echo "$(ksm_flag "$1" merge_any)/$(ksm_flag "$1" mergeable)"; }
flags_are() { [ "$(flags "$1")" = "$2" ]; }
merging_at_least() { [ "$(cat "/proc/$1/ksm_merging_pages" 2>/dev/null || echo 0)" -ge "$2" ]; }

UNIQUE=256
COPIES=4
mkdir -p "$tmp/policy.d" "$tmp/run"
chmod 755 "$tmp"
# A comm of our own, so that nothing else on this shared machine matches.
cp "$KSM_WORKLOAD" "$tmp/ksmt2-remote"
daemon_conf "$tmp/k.conf" Interval=200ms UnmergeOnExit=yes

for m in $methods; do
        cat > "$tmp/policy.d/50-remote.policy" <<POL
[Match]
Comm=ksmt2-remote
[Merge]
Mode=always
Method=$m
POL
        # Madvise marks the ranges (ksm_mergeable), process_ksm the whole mm
        # (ksm_merge_any, which marks every mapping).
        case $m in madvise) on=no/yes;; process_ksm) on=yes/yes;; esac

        rm -f "$tmp/in"
        mkfifo "$tmp/in"
        setpriv --reuid=65534 --regid=65534 --clear-groups "$tmp/ksmt2-remote" --unique $UNIQUE --copies $COPIES \
                --merge none --verify --seed "$$" < "$tmp/in" > "$tmp/target.out" 2> "$tmp/target.err" &
        target_pid=$!
        ksm_guard_track "$target_pid"
        exec 8> "$tmp/in"
        wait_for 30 grep -q ready "$tmp/target.out" || fail "$m: target did not start"
        flags_are "$target_pid" no/no || fail "$m: target merges before the daemon runs: $(flags "$target_pid")"

        : > "$tmp/log"
        "$KSMTUNED2" --config "$tmp/k.conf" 2>>"$tmp/log" &
        daemon_pid=$!
        t0=$(date +%s%N)
        wait_for 60 log_has "pid $target_pid (ksmt2-remote): method $m: enabled" ||
                fail "$m: no 'method $m: enabled' outcome within 60 s"
        flags_are "$target_pid" "$on" || fail "$m: merge_any/mergeable $(flags "$target_pid") after enabling, want $on"
        # ksmd merges what the method marked (the daemon runs ksmd): every
        # copy of every unique page. Bounded by ksmd's progress, generously
        # for an emulated guest.
        wait_for 120 merging_at_least "$target_pid" $((UNIQUE * COPIES)) ||
                fail "$m: $(cat /proc/$target_pid/ksm_merging_pages) of $((UNIQUE * COPIES)) pages merged within 120 s"
        echo "$m: enabled, $(cat /proc/$target_pid/ksm_merging_pages) pages merging after" \
                "$((($(date +%s%N) - t0) / 1000000)) ms, flags $(flags "$target_pid")"

        # UnmergeOnExit=yes: the same method switches it off on a clean stop.
        kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?
        daemon_pid=
        [ "$rc" = 0 ] || fail "$m: daemon exited $rc on SIGTERM"
        log_has "pid $target_pid (ksmt2-remote): method $m: disabled" || fail "$m: not switched off by method $m"
        flags_are "$target_pid" no/no || fail "$m: merge_any/mergeable $(flags "$target_pid") after switching off"
        echo "$m: disabled on stop, flags $(flags "$target_pid")"

        # --verify: the target exits 3 if a page ever read back differently.
        exec 8>&-
        wait "$target_pid"; rc=$?
        target_pid=
        [ "$rc" = 0 ] || { cat "$tmp/target.err" >&2; fail "$m: target exited $rc"; }
done
echo "PASS"
