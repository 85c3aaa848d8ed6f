#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# ksmtuned2 --cat-config and --check-config as an administrator reads them,
# on a file named with --config (the drop-in search of /etc, /run and
# /usr/lib is test-conf's, and the e2e test's on a real system).
set -u
umask 022
dir=$(mktemp -d /tmp/ksmtuned2-cli.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/policy.d"
fail=0

# --cat-config: "# PATH", then the file as it is (a missing last newline added)
printf '[Daemon]\nPolicyDirectories=%s/policy.d\n; comment\n[Tuning]\nCpuBudget=10%%' "$dir" > "$dir/k.conf"
out=$("$KSMTUNED2" --cat-config --config "$dir/k.conf"); rc=$?
want=$(printf '# %s/k.conf\n[Daemon]\nPolicyDirectories=%s/policy.d\n; comment\n[Tuning]\nCpuBudget=10%%' "$dir" "$dir")
[ $rc = 0 ] && [ "$out" = "$want" ] || { echo "FAIL: --cat-config (exit $rc): $out"; fail=1; }
# --config FILE is that file alone: FILE.d is not read
mkdir "$dir/k.conf.d"
printf '[Daemon]\nInterval=1s\n' > "$dir/k.conf.d/50-x.conf"
out=$("$KSMTUNED2" --cat-config --config "$dir/k.conf")
[ "$out" = "$want" ] || { echo "FAIL: --cat-config read a drop-in of --config: $out"; fail=1; }
out=$("$KSMTUNED2" --check-config --config "$dir/k.conf" 2>&1); rc=$?
[ $rc = 0 ] || { echo "FAIL: --check-config of a good file: exit $rc: $out"; fail=1; }
echo "$out" | grep -qx "$dir/k.conf: OK" || { echo "FAIL: no OK line: $out"; fail=1; }

: > "$dir/empty.conf"
out=$("$KSMTUNED2" --check-config --config "$dir/empty.conf" 2>&1); rc=$?
[ $rc = 0 ] && echo "$out" | grep -qx "$dir/empty.conf: OK (empty: built-in defaults)" ||
        { echo "FAIL: --check-config of an empty file (exit $rc): $out"; fail=1; }

out=$("$KSMTUNED2" --cat-config --config "$dir/missing.conf" 2>&1); rc=$?
[ $rc = 3 ] || { echo "FAIL: --cat-config of a missing file: exit $rc"; fail=1; }
echo "$out" | grep -qx "$dir/missing.conf:0: cannot be read: No such file or directory" ||
        { echo "FAIL: --cat-config of a missing file said: $out"; fail=1; }

# --check-config names file and line of every problem, with what was meant
printf '[Daemon]\ninterval=1s\nLogLevel: debug\n[tuning]\nCpuBudget=10\n' > "$dir/bad.conf"
out=$("$KSMTUNED2" --check-config --config "$dir/bad.conf" 2>&1); rc=$?
[ $rc = 3 ] || { echo "FAIL: --check-config of a bad file: exit $rc"; fail=1; }
for want in "$dir/bad.conf:2: interval: unknown key in \\[Daemon\\] (did you mean Interval=?), ignoring" \
            "$dir/bad.conf:3: \"LogLevel: debug\": keys take '=', not ':'" \
            "$dir/bad.conf:4: unknown section \\[tuning\\] (did you mean \\[Tuning\\]?), ignoring" \
            "$dir/bad.conf:3: syntax error, file rejected"; do
        echo "$out" | grep -qx "$want" || { echo "FAIL: missing \"$want\" in: $out"; fail=1; }
done
echo "$out" | grep -q ': OK$' && { echo "FAIL: OK despite errors: $out"; fail=1; }
exit $fail
