#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench-kernels.sh [OUTDIR]: the tuning benchmark's contention scenarios (S2:
# a victim beside a churning contender; S3: the victim and the churn thread
# in one process) in a stock and then a patched 6.12 guest (issue 12), one
# guest at a time, then one table of both: per scenario and peer the merge
# time, ksmd's CPU and blocked fraction, the contender against its KSM-off
# reference, whether ksmtuned2 excluded the contender; and the ratios
# ksmtuned2/peer within each kernel and patched/stock per peer. Emulation
# (TCG) makes absolute figures meaningless; ratios measured in the same
# guest, and the same peer on two kernels, are what to read.
#
# OUTDIR (default $BUILD_ROOT/meson-logs/bench-kernels) gets one directory
# per kernel: the bench's results.json, the daemon's logs, the guest's
# console (console.log) and the bench's output (bench.txt).
#
#   KSMTUNED2_BENCH_KERNELS  the kernels, in order (default "stock patched"),
#                            each "stock", "patched" or "host" (the bench
#                            here, on this machine's kernel); ratios between
#                            kernels are against the first
#   KSMTUNED2_BENCH_ARGS     more ksm-tuning-bench.py options, appended
#   KSMTUNED2_VM_TIMEOUT     seconds per guest (default 3600)
#   KSMTUNED2_VM_TCG_THREAD  "single" (run-in-guest.sh's default since
#                            2026-12-03) or "multi": the guests' two CPUs
#                            take turns on one host thread, so a writer and
#                            ksmd meet at a lock less often than before and
#                            S2/S3 contention figures from earlier runs
#                            (multi) do not compare; multi risks the guest
#                            panic run-in-guest.sh describes
# Needs root. The kernels and the guests' tree are built first if missing
# (build-kernel.sh, build-rootfs.sh: minutes, under their own locks); then
# each guest runs under the KSM test lock ($KSMTUNED2_TEST_LOCK, default
# /run/ksmtuned2-ksm-tests.lock), which the machine's engineers also take
# for their emulation: a TCG guest takes both CPUs of the test machine,
# and two at once measure each other. So do not wrap this script in flock
# on that file yourself (the host run's bench takes it for each of its
# runs, and would wait for ever). Exits 1 when a kernel's run failed (the
# table still prints what the others measured), 77 without root, qemu (guests) or KSM (host).
set -uo pipefail
# The body is one block: bash reads a script as it runs, and this one runs
# for minutes to an hour, long enough for an edit or a checkout to change
# the lines it has not read yet (the first real run ended in a syntax
# error after 38 minutes that way).
{
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
skip() { echo "SKIP: $*" >&2; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (KSM, 9p passthrough shares)"
export BUILD_ROOT=${BUILD_ROOT:-$SRC/build}
BUILD_ROOT=$(realpath -e "$BUILD_ROOT") || exit 1
out=${1:-$BUILD_ROOT/meson-logs/bench-kernels}
mkdir -p "$out" && out=$(realpath -e "$out") || exit 1
bench=$SRC/tests/bench/ksm-tuning-bench.py
# Copies, so that every kernel runs the same daemon: the build directory
# may be rebuilt while the guests run (half an hour or more).
mkdir -p "$out/bin"
for b in src/daemon/ksmtuned2 tests/helpers/ksm-workload; do
        [ -x "$BUILD_ROOT/$b" ] || { echo "bench-kernels: missing $BUILD_ROOT/$b: build first (.ci/build)" >&2; exit 1; }
        cp "$BUILD_ROOT/$b" "$out/bin/" || exit 1
done
daemon=$out/bin/ksmtuned2
workload=$out/bin/ksm-workload
echo "bench-kernels: $(git -C "$SRC" describe --always --dirty 2>/dev/null), daemon $(sha256sum "$daemon" | cut -c1-12) built $(date -r "$BUILD_ROOT/src/daemon/ksmtuned2" '+%F %T')"

# The merge timeout: under TCG the defaults peer (100 pages / 20 ms) took
# 5 to 12 s to merge (two full scans of the victim and the contender's
# 64 MiB), but ksmd's CPU per page is 4 times the host's and the guest
# shares the host with other engineers' work; 300 s leaves room for a
# slower machine. A peer that times out runs once.
# shellcheck disable=SC2206,SC2054
bench_args=(--scenarios S2,S3 --peers defaults,aggressive,ksmtuned2 --repeats 1 --timeout 300
            --ksmtuned2 "$daemon" --workload "$workload" ${KSMTUNED2_BENCH_ARGS:-})

# The output directory goes into the guest at the same path (unless the
# checkout or the build directory already holds it).
export KSMTUNED2_VM_SHARE=${KSMTUNED2_VM_SHARE:+$KSMTUNED2_VM_SHARE:}$out
export KSMTUNED2_VM_ENV="${KSMTUNED2_VM_ENV:-} BUILD_ROOT KSMTUNED2_SECCOMP_FATAL"
# 6 runs of at most 300 s + 2 x 5 s of contender reference + 20 s of tail,
# the boot and the daemon's start-ups: about 35 minutes at worst (about 4
# minutes measured per guest).
export KSMTUNED2_VM_TIMEOUT=${KSMTUNED2_VM_TIMEOUT:-3600}

kernels=${KSMTUNED2_BENCH_KERNELS:-stock patched}
lock=${KSMTUNED2_TEST_LOCK:-/run/ksmtuned2-ksm-tests.lock}
T0=$(date +%s)
for k in $kernels; do
        case $k in
        host) [ -d /sys/kernel/mm/ksm ] || skip "no KSM on this host";;
        stock|patched)
                command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed (package qemu-system-x86)"
                "$HERE/build-kernel.sh" "$k" >/dev/null || { echo "bench-kernels: no $k kernel" >&2; exit 1; }
                "$HERE/build-rootfs.sh" >/dev/null || { echo "bench-kernels: no guests' root tree" >&2; exit 1; };;
        *) echo "bench-kernels: unknown kernel $k (stock, patched, host)" >&2; exit 1;;
        esac
done
rc=0
specs=()
summary=()
for k in $kernels; do
        dir=$out/$k
        rm -rf "$dir"
        mkdir -p "$dir"
        t0=$(date +%s)
        if [ "$k" = host ]; then
                python3 "$bench" "${bench_args[@]}" --output "$dir" 2>&1 | tee "$dir/bench.txt"
                krc=${PIPESTATUS[0]}
        else
                KSMTUNED2_VM_CONSOLE=$dir/console.log flock "$lock" "$HERE/run-in-guest.sh" "$k" \
                        python3 "$bench" "${bench_args[@]}" --output "$dir" 2>&1 | tee "$dir/bench.txt"
                krc=${PIPESTATUS[0]}
        fi
        t1=$(date +%s)
        summary+=("$k: exit $krc in $((t1 - t0)) s")
        if [ "$krc" != 0 ]; then
                echo "bench-kernels: the $k run exited $krc (output: $dir/bench.txt, console: $dir/console.log)" >&2
                rc=1
        fi
        [ -f "$dir/results.json" ] && specs+=("$k=$dir/results.json")
done

echo
echo "== bench-kernels: S2, S3 on ${kernels// /, } in $(($(date +%s) - T0)) s (results in $out)"
printf '%s\n' "${summary[@]}"
[ ${#specs[@]} -gt 0 ] || { echo "bench-kernels: no results to compare" >&2; exit 1; }
python3 "$bench" --compare "${specs[@]}" | tee "$out/combined.txt"
exit $rc
}
