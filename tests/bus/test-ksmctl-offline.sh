#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ksmctl status with no daemon (and no bus), on a fake kernel tree
# ($KSMCTL_ROOT): it says plainly that the daemon is not running and shows
# the kernel's own KSM figures, exactly as below; exit status 3. Needs
# neither root nor KSM.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$tmp/no-bus-here"

mkdir -p "$tmp/proc/self" "$tmp/sys/kernel/mm/ksm"
echo "proc /proc proc rw 0 0" > "$tmp/proc/self/mounts"
k() { printf '%s\n' "$2" > "$tmp/sys/kernel/mm/ksm/$1"; }
k run 1; k pages_to_scan 1200; k sleep_millisecs 20; k advisor_mode "none [scan-time]"
k pages_shared 1000; k pages_sharing 262144; k pages_unshared 50; k pages_volatile 7
k full_scans 12; k general_profit -8192; k ksm_zero_pages 3
k bogus_file "not a number"   # unknown files are ignored

out=$(KSMCTL_ROOT=$tmp "$KSMCTL" status); rc=$?
[ $rc = 3 ] || fail "exit status $rc, want 3"
page=$(getconf PAGESIZE)
saved=$(awk -v b=$((262144 * page)) 'BEGIN { printf "%.1f GiB", b / 1073741824 }')
want="ksmtuned2 is not running (the system bus is not reachable: No such file or directory).
The kernel's own KSM figures:
Saved:      $saved (262144 pages sharing); general profit -8.0 KiB
Knobs:      run=1 pages_to_scan=1200 sleep_millisecs=20 advisor_mode=scan-time
Counters:   pages_shared=1000 pages_sharing=262144 pages_unshared=50
            pages_volatile=7 full_scans=12 general_profit=-8192
            ksm_zero_pages=3"
[ "$out" = "$want" ] || { diff <(echo "$want") <(echo "$out"); fail "ksmctl status output differs (- want, + got)"; }

KSMCTL_ROOT=$tmp "$KSMCTL" status --json > "$tmp/json"; rc=$?
[ $rc = 3 ] || fail "--json exit status $rc"
python3 - "$tmp/json" "$page" <<'PY' || fail "status --json: $(cat "$tmp/json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["daemon"] == {"running": False, "reason": "the system bus is not reachable: No such file or directory"}, d
assert d["savings"] == {"saved_bytes": 262144 * int(sys.argv[2]), "general_profit_bytes": -8192}, d
assert d["knobs"] == {"run": 1, "pages_to_scan": 1200, "sleep_millisecs": 20, "advisor_mode": "scan-time"}, d
assert d["counters"]["general_profit"] == -8192 and d["counters"]["pages_volatile"] == 7
assert set(d) == {"daemon", "savings", "knobs", "counters"}, d
PY

# No KSM at all: still a plain answer.
rm -rf "$tmp/sys/kernel/mm/ksm"
out=$(KSMCTL_ROOT=$tmp "$KSMCTL" status 2>&1); rc=$?
[ $rc = 3 ] || fail "without KSM: exit status $rc"
grep -q "^ksmtuned2 is not running" <<<"$out" && grep -q "^The kernel's KSM counters cannot be read either.$" <<<"$out" ||
        fail "without KSM: $out"
echo "PASS: ksmctl status without a daemon, on a fake tree, human and --json"
