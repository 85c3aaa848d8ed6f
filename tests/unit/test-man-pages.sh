#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Every long option that ksmtuned2 --help and ksmctl --help print is documented
# in their manual page, and every page formats without groff warnings.
set -u
fail=0
check_options() { # binary page: each option must head a paragraph of OPTIONS
        opts=$(awk '/^\.SH /{in_opts = ($2 == "OPTIONS")} in_opts && prev == ".TP" && /^\.B[IR]? /; {prev = $0}' "$2" | sed 's/\\-/-/g')
        for opt in $("$1" --help | grep -o -e '--[a-z][a-z-]*' | sort -u); do
                printf '%s\n' "$opts" | grep -q -e "$opt\([^a-z-]\|$\)" ||
                        { echo "FAIL: $2 does not document $opt under OPTIONS" >&2; fail=1; }
        done
}
check_options "$KSMTUNED2" "$SOURCE_ROOT/man/ksmtuned2.8"
check_options "$KSMCTL" "$SOURCE_ROOT/man/ksmctl.1"

# .BR, .IR and the like alternate fonts between their arguments with no
# space: prose after the first one runs together ("tracing_on.Withoutit").
bad=$(grep -nE '^\.(IR|BR|RI|RB|IB|BI) ' "$SOURCE_ROOT"/man/*.[1-8] | grep -v '"' |
        grep -E ' [A-Za-z][a-z]+ [a-z]+ [a-z]+( |$)')
[ -z "$bad" ] || { echo "FAIL: prose on a font-alternating macro line (its words run together):" >&2; echo "$bad" >&2; fail=1; }

if command -v groff >/dev/null; then
        for page in "$SOURCE_ROOT"/man/*.[1-8]; do
                out=$(groff -man -ww -z "$page" 2>&1)
                [ -z "$out" ] || { echo "FAIL: groff warnings in $page:" >&2; echo "$out" >&2; fail=1; }
        done
else
        echo "groff not installed: formatting not checked"
fi
exit $fail
