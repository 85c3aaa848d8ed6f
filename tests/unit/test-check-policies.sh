#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# ksmtuned2 --check-config validates the policies of PolicyDirectories= too,
# as an administrator would run it: exit 0 and "policies: OK" on good files,
# exit 3 with "file:line: key: reason" on bad ones.
set -u
umask 022 # policies must not be writable by others (the daemon rejects them)
dir=$(mktemp -d /tmp/ksmtuned2-check.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/etc" "$dir/lib"
printf '[Daemon]\nPolicyDirectories=%s/etc %s/lib %s/conf/policy.d\n' "$dir" "$dir" "$SOURCE_ROOT" > "$dir/k.conf"
fail=0

out=$("$KSMTUNED2" --check-config --config "$dir/k.conf" 2>&1); rc=$?
[ $rc = 0 ] || { echo "FAIL: shipped policies: exit $rc: $out"; fail=1; }
echo "$out" | grep -q '^policies: OK, 3 in use (0 masked)$' || { echo "FAIL: no OK line: $out"; fail=1; }

# an empty file in an earlier directory masks the shipped one
: > "$dir/etc/50-vms.policy"
out=$("$KSMTUNED2" --check-config --config "$dir/k.conf" 2>&1)
echo "$out" | grep -q '^policies: OK, 2 in use (2 masked)$' || { echo "FAIL: masking: $out"; fail=1; }

printf '[Match]\nComm=java\nColour=blue\n[Merge]\nMode=often\n' > "$dir/lib/20-java.policy"
printf '[Match\nComm=x\n' > "$dir/lib/30-broken.policy"
out=$("$KSMTUNED2" --check-config --config "$dir/k.conf" 2>&1); rc=$?
[ $rc = 3 ] || { echo "FAIL: bad policies: exit $rc"; fail=1; }
for want in "$dir/lib/20-java.policy:3: Colour: unknown key in \\[Match\\], this policy will match nothing" \
            "$dir/lib/20-java.policy:5: Mode: expected one of: always auto never (\"often\"), file rejected" \
            "$dir/lib/30-broken.policy:1: syntax error, file rejected"; do
        echo "$out" | grep -q "^$want\$" || { echo "FAIL: missing \"$want\" in: $out"; fail=1; }
done
echo "$out" | grep -q '^policies: OK' && { echo "FAIL: OK despite errors"; fail=1; }
exit $fail
