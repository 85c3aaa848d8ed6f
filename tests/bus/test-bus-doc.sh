#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# org.ksmtuned2(5) cannot drift from the interface: its INTERFACE block must
# equal the members sd-bus generates from the vtable (ksmtuned2
# --bus-introspect), and every member must have a paragraph of its own under
# PROPERTIES or METHODS. Needs no bus.
set -u
page="$SOURCE_ROOT/man/org.ksmtuned2.5"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$KSMTUNED2" --bus-introspect > "$tmp/xml" || { echo "FAIL: ksmtuned2 --bus-introspect" >&2; exit 1; }
python3 "$SOURCE_ROOT/tests/bus/introspect-members.py" org.ksmtuned2.Manager1 < "$tmp/xml" | sort > "$tmp/want" ||
        { echo "FAIL: cannot read the introspection XML" >&2; exit 1; }
sed -n '/^\.\\" BEGIN INTERFACE/,/^\.\\" END INTERFACE/p' "$page" | grep -v '^\.' | sed 's/\\-/-/g' > "$tmp/got"
if ! diff -u "$tmp/want" "$tmp/got"; then
        echo "FAIL: the INTERFACE block of $page differs from ksmtuned2 --bus-introspect (- generated, + page)" >&2
        exit 1
fi

fail=0
for name in $(awk '{ sub(/\(.*/, "", $2); print $2 }' "$tmp/want"); do
        # A paragraph head: ".B Name", ".B Name()" or ".BI Name( arg )" right after .TP/.TQ.
        awk -v n="$name" 'prev ~ /^\.T[PQ]$/ && ($0 == ".B " n || $0 == ".B " n "()" || index($0, ".BI " n "(") == 1) { found = 1 }
                         { prev = $0 } END { exit !found }' "$page" ||
                { echo "FAIL: $page has no paragraph for $name" >&2; fail=1; }
done
[ $fail = 0 ] && echo "org.ksmtuned2(5) matches the vtable: $(wc -l < "$tmp/want") members, each described"
exit $fail
