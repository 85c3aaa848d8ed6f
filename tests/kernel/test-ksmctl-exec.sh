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
base=$(sh -c 'sed -n "s/^ksm_merge_any: //p" /proc/self/ksm_stat')
[ "$base" = no ] || fail "baseline: ksm_merge_any is '$base'"

# The command (sh), a child (sed) and a grandchild (sh -> sed), and one more
# level through a subshell in the background.
out=$("$KSMCTL" exec -- sh -c '
        sed -n "s/^ksm_merge_any: /self /p" /proc/$$/ksm_stat
        sed -n "s/^ksm_merge_any: /child /p" /proc/self/ksm_stat
        sh -c "sed -n \"s/^ksm_merge_any: /grandchild /p\" /proc/self/ksm_stat"
        ( sh -c "sed -n \"s/^ksm_merge_any: /great-grandchild /p\" /proc/self/ksm_stat" ) & wait
')
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
