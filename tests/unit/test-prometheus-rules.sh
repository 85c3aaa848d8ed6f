#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The alerting rules of conf/prometheus/ parse and pass promtool's lint
# (check rules), fire on the series of ksmtuned2.rules.test.yml where it
# expects and nowhere else (test rules), and use only series that
# ksmtuned2.metrics(7) documents, so that renaming a metric without its rule
# fails here. Skips (77) without promtool ($PROMTOOL).
set -u
[ -n "${PROMTOOL:-}" ] || { echo "SKIP: promtool not installed"; exit 77; }
rules=$SOURCE_ROOT/conf/prometheus/ksmtuned2.rules.yml
fail=0
"$PROMTOOL" check rules "$rules" || fail=1
"$PROMTOOL" test rules "$SOURCE_ROOT/tests/unit/ksmtuned2.rules.test.yml" || fail=1
for m in $(grep -o 'ksmtuned2_[a-z_]*' "$rules" | sort -u); do
        grep -q "^\.B[RI]* $m\([{ ]\|$\)" "$SOURCE_ROOT/man/ksmtuned2.metrics.7" ||
                { echo "FAIL: $rules uses $m, which ksmtuned2.metrics(7) does not list" >&2; fail=1; }
done
exit $fail
