#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ksmctl exec runs a command with merging on (PR_SET_MEMORY_MERGE), without
# the daemon; the command's children and grandchildren inherit it. Touches
# no KSM knob, so it needs no KSM lock (ksmd, if running, may scan these
# short-lived processes; that changes nothing for other tests).
set -u
[ -r /proc/self/ksm_stat ] || { echo "SKIP: no /proc/PID/ksm_stat (KSM)"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# Without ksmctl nothing merges.
. "$SOURCE_ROOT/tests/lib/ksm-flags.sh"
base=$(sh -c '"$0" self' "$KSM_FLAGS" | sed -n 's/^ksm_merge_any: //p')
[ "$base" = no ] || fail "baseline: ksm_merge_any is '$base'"

# The command (sh), a child (ksm-flags) and a grandchild (sh -> ksm-flags), and one more
# level through a subshell in the background.
# ksm-flags reads the flags as the daemon does (the lines, or smaps on 6.12).
out=$("$KSMCTL" exec -- sh -c '
        f=$0
        "$f" $$ | sed -n "s/^ksm_merge_any: /self /p"
        "$f" self | sed -n "s/^ksm_merge_any: /child /p"
        sh -c "\"\$0\" self | sed -n \"s/^ksm_merge_any: /grandchild /p\"" "$f"
        ( sh -c "\"\$0\" self | sed -n \"s/^ksm_merge_any: /great-grandchild /p\"" "$f" ) & wait
' "$KSM_FLAGS")
echo "$out"
[ "$(printf '%s\n' "$out" | grep -c ' yes$')" = 4 ] || fail "not every descendant merges: $out"

# Without "--" as well; the exit status is the command's own.
"$KSMCTL" exec sh -c 'exit 7'; rc=$?
[ "$rc" = 7 ] || fail "exit status $rc, want the command's 7"

# Usage and exec errors, as env(1) reports them.
"$KSMCTL" exec 2>/dev/null; rc=$?
[ "$rc" = 2 ] || fail "no command: exit $rc, want 2"
"$KSMCTL" exec -- /nonexistent/command 2>"${TMPDIR:-/tmp}/ksmctl-exec.$$"; rc=$?
grep -q "cannot execute /nonexistent/command: No such file or directory" "${TMPDIR:-/tmp}/ksmctl-exec.$$" ||
        fail "no clear error for a missing command"
rm -f "${TMPDIR:-/tmp}/ksmctl-exec.$$"
[ "$rc" = 127 ] || fail "missing command: exit $rc, want 127"

# Options after the verb belong to the command, not to ksmctl.
out=$("$KSMCTL" exec -- sh -c 'echo "$1"' sh --json) || fail "exec -- sh --json failed"
[ "$out" = "--json" ] || fail "arguments not passed through: '$out'"
echo PASS
