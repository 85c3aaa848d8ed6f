#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs one libFuzzer target of the sanitizer build for a bounded time on a
# scratch copy of its seed corpus (libFuzzer adds new inputs to the first
# directory it is given; the repository's corpus stays untouched). A crash
# leaves its input in $BUILD_ROOT/fuzz-artifacts/ and fails the test: turn it
# into tests/fuzz/regress/<target>/ and a unit test, then fix the parser.
set -eu
target=$1
san=${SAN_BUILD_ROOT:-$BUILD_ROOT-san}
exe=$san/tests/fuzz/$target
seconds=${KSMTUNED2_FUZZ_SECONDS:-20}

if [ ! -x "$exe" ]; then
        echo "SKIP: $exe not built (.ci/build makes it when clang is installed)" >&2
        exit 77
fi
"$SOURCE_ROOT/tests/lib/ensure-built.sh" "$san"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$BUILD_ROOT/fuzz-artifacts"
set -- "$work/corpus" "$SOURCE_ROOT/tests/fuzz/corpus/$target"
[ -d "$SOURCE_ROOT/tests/fuzz/regress/$target" ] && set -- "$@" "$SOURCE_ROOT/tests/fuzz/regress/$target"

rc=0
"$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
        -artifact_prefix="$BUILD_ROOT/fuzz-artifacts/$target-" "$@" >"$work/log" 2>&1 || rc=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
time=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$work/log")
cov=$(grep -o 'cov: [0-9]*' "$work/log" | tail -1)
echo "fuzz: $target: ${runs:-?} executions in ${time:-?} s, $(ls "$work/corpus" | wc -l) new inputs, ${cov:-cov: ?}"
if [ "$rc" != 0 ]; then
        tail -60 "$work/log" >&2
        echo "FAIL: $target exited $rc; artifacts in $BUILD_ROOT/fuzz-artifacts/" >&2
        exit 1
fi
