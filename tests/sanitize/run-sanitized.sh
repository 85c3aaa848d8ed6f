#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs one suite of the sanitizer build (build-san/, ASan+UBSan, made by
# .ci/build) from a test of the plain build, so that the README's single
# `meson test -C build` also runs it. Any ASan report, leak or UBSan report
# fails the test.
set -eu
suite=$1
san=${SAN_BUILD_ROOT:-$BUILD_ROOT-san}
if [ ! -f "$san/build.ninja" ]; then
        echo "SKIP: $san not configured (.ci/build makes it)" >&2
        exit 77
fi
"$SOURCE_ROOT/tests/lib/ensure-built.sh" "$san"
leaks=1
# The daemon's seccomp filter (Sandbox=yes; KSMTUNED2_SECCOMP_FATAL=1 in
# tests) refuses the raw clone() LeakSanitizer makes at exit to stop the
# world: SIGSYS, exit 159. Leaks of the daemon are valgrind's job (suite
# 'valgrind'); here ASan and UBSan watch the bus paths.
[ "$suite" = bus ] && leaks=0
export ASAN_OPTIONS="detect_leaks=$leaks:halt_on_error=1:abort_on_error=1:print_summary=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1"
rc=0
meson test -C "$san" --no-rebuild --suite "$suite" --print-errorlogs --logbase "sanitized-$suite" >"$BUILD_ROOT/sanitized-$suite.log" 2>&1 || rc=$?
grep -E '^ *[0-9]+/[0-9]+ ' "$BUILD_ROOT/sanitized-$suite.log" || true
grep -E '^(Ok|Fail|Skipped|Timeout):' "$BUILD_ROOT/sanitized-$suite.log" | tr -s ' ' | tr '\n' ' '
echo
if [ "$rc" != 0 ]; then
        cat "$BUILD_ROOT/sanitized-$suite.log" >&2
        echo "FAIL: suite $suite under ASan+UBSan (log: $san/meson-logs/sanitized-$suite.txt)" >&2
        exit 1
fi
