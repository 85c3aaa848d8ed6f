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
unset COLUMNS # not a terminal: lists wrap at 79 columns

mkdir -p "$tmp/proc/self" "$tmp/sys/kernel/mm/ksm"
echo "proc /proc proc rw 0 0" > "$tmp/proc/self/mounts"
k() { printf '%s\n' "$2" > "$tmp/sys/kernel/mm/ksm/$1"; }
k run 1; k pages_to_scan 1200; k sleep_millisecs 20; k advisor_mode "none [scan-time]"
k pages_shared 1000; k pages_sharing 262144; k pages_unshared 50; k pages_volatile 7
k full_scans 12; k general_profit -8192; k ksm_zero_pages 1
k bogus_file "not a number"   # unknown files are ignored

out=$(KSMCTL_ROOT=$tmp "$KSMCTL" status); rc=$?
[ $rc = 3 ] || fail "exit status $rc, want 3"
page=$(getconf PAGESIZE)
# format_bytes() of n pages: IEC units, one decimal.
iec() { awk -v b=$(($1 * page)) 'BEGIN { split("B KiB MiB GiB TiB", u); i = 1
        while (b >= 1023.95 && i < 5) { b /= 1024; i++ }
        if (i == 1) printf "%d B", b; else printf "%.1f %s", b, u[i] }'; }
# Sizes in IEC units with the page count: the figures of the kernel's files, readable.
want="ksmtuned2 is not running (the system bus is not reachable: No such file or directory).
The kernel's own KSM figures:
Saved:      $(iec 262144) (262144 pages sharing); general profit -8.0 KiB
Knobs:      run=1 pages_to_scan=1200 sleep_millisecs=20 advisor_mode=scan-time
Counters:   pages_shared=$(iec 1000) (1000 pages), pages_sharing=$(iec 262144) (262144 pages), pages_unshared=$(iec 50) (50 pages), pages_volatile=$(iec 7) (7 pages), full_scans=12, general_profit=-8.0 KiB, ksm_zero_pages=$(iec 1) (1 page)"
# Where the lists wrap depends on the page size (the sizes' widths): compared
# joined, and each line of them within 79 columns.
unwrap() { sed -e ':a' -e '$!N;s/\n            / /;ta' -e 'P;D'; }
[ "$(unwrap <<<"$out")" = "$want" ] || { diff <(echo "$want") <(unwrap <<<"$out"); fail "ksmctl status output differs (- want, + got)"; }
[ -z "$(grep -E '^(Knobs:|Counters:|    )' <<<"$out" | awk 'length > 79')" ] || fail "lists not wrapped at 79 columns: $out"
[ "$(grep -c '^            ' <<<"$out")" -ge 2 ] || fail "counters not wrapped: $out"

KSMCTL_ROOT=$tmp "$KSMCTL" status --json > "$tmp/json"; rc=$?
[ $rc = 3 ] || fail "--json exit status $rc"
python3 - "$tmp/json" "$page" <<'PY' || fail "status --json: $(cat "$tmp/json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["daemon"] == {"running": False, "reason": "the system bus is not reachable: No such file or directory"}, d
assert d["savings"] == {"saved_bytes": 262144 * int(sys.argv[2]), "general_profit_bytes": -8192}, d
assert d["knobs"] == {"run": 1, "pages_to_scan": 1200, "sleep_millisecs": 20, "advisor_mode": "scan-time"}, d
assert d["counters"]["general_profit"] == -8192 and d["counters"]["pages_volatile"] == 7
assert d["counters"]["ksm_zero_pages"] == 1  # JSON keeps the kernel's pages
assert set(d) == {"daemon", "savings", "knobs", "counters"}, d
PY

# $COLUMNS (or a terminal's width) moves the wrapping of the lists.
out2=$(COLUMNS=50 KSMCTL_ROOT=$tmp "$KSMCTL" status | grep -A2 "^Knobs:")
want2="Knobs:      run=1 pages_to_scan=1200
            sleep_millisecs=20
            advisor_mode=scan-time"
[ "$out2" = "$want2" ] || { diff <(echo "$want2") <(echo "$out2"); fail "COLUMNS=50: knobs not wrapped at 49"; }

# No command is status (as systemctl); -q says it by the exit status alone.
out2=$(KSMCTL_ROOT=$tmp "$KSMCTL"); rc=$?
[ $rc = 3 ] && [ "$out2" = "$out" ] || fail "ksmctl without a command: rc $rc: $out2"
for q in "-q" "--quiet status" "status -q"; do
        out2=$(KSMCTL_ROOT=$tmp "$KSMCTL" $q 2>&1); rc=$?
        [ $rc = 3 ] && [ -z "$out2" ] || fail "ksmctl $q: rc $rc, printed: $out2"
done

# --json=pretty|short|off as systemctl; plain --json is pretty, as it always was.
for mode in "--json" "--json=pretty" "--json=short" "--json=off --json=short"; do
        KSMCTL_ROOT=$tmp "$KSMCTL" status $mode > "$tmp/json.$mode" || [ $? = 3 ] || fail "status $mode"
        python3 - "$tmp/json" "$tmp/json.$mode" <<'PY' || fail "status $mode differs from --json: $(cat "$tmp/json.$mode")"
import json, sys
assert json.load(open(sys.argv[1])) == json.load(open(sys.argv[2]))
PY
done
cmp -s "$tmp/json" "$tmp/json.--json=pretty" || fail "--json is not --json=pretty"
[ "$(wc -l < "$tmp/json.--json=short")" = 1 ] || fail "--json=short is not one line"
[ "$(wc -l < "$tmp/json")" -gt 10 ] || fail "--json is not indented"
out2=$(KSMCTL_ROOT=$tmp "$KSMCTL" status --json --json=off); [ "$out2" = "$out" ] || fail "--json=off: $out2"
out2=$("$KSMCTL" status --json=long 2>&1); rc=$?
[ $rc = 2 ] && grep -q 'Bad --json=long: pretty, short or off' <<<"$out2" || fail "--json=long: rc $rc: $out2"

# The pager: only on a terminal, $KSMCTL_PAGER before $SYSTEMD_PAGER before
# $PAGER, none with --no-pager or an empty or "cat" value.
KSMCTL_ROOT=$tmp KSMCTL_PAGER="touch $tmp/paged; cat" "$KSMCTL" status >/dev/null
[ ! -e "$tmp/paged" ] || fail "a pager ran while stdout was not a terminal"
if command -v script >/dev/null; then
        # Runs the shell command $1 on a terminal; what reached it is in $tmp/tty.
        on_tty() {
                printf '%s\n' "$1" > "$tmp/cmd"
                env -u KSMCTL_PAGER -u SYSTEMD_PAGER -u PAGER KSMCTL_ROOT="$tmp" \
                        script -qec "sh $tmp/cmd" /dev/null < /dev/null > "$tmp/tty"
        }
        paged() { [ -s "$tmp/$1" ] && grep -q "^Counters: " "$tmp/$1"; }
        k=$(printf %q "$KSMCTL")
        on_tty "KSMCTL_PAGER='cat > $tmp/by-ksmctl' SYSTEMD_PAGER='cat > $tmp/by-systemd' PAGER='cat > $tmp/by-pager' $k status"
        paged by-ksmctl && [ ! -e "$tmp/by-systemd" ] && [ ! -e "$tmp/by-pager" ] || fail "\$KSMCTL_PAGER not used first"
        ! grep -q "^Counters: " "$tmp/tty" || fail "output reached the terminal besides the pager"
        rm -f "$tmp"/by-*
        on_tty "SYSTEMD_PAGER='cat > $tmp/by-systemd' PAGER='cat > $tmp/by-pager' $k"
        paged by-systemd && [ ! -e "$tmp/by-pager" ] || fail "\$SYSTEMD_PAGER not used before \$PAGER"
        on_tty "PAGER='cat > $tmp/by-pager' $k --help"
        grep -q "^Commands:" "$tmp/by-pager" || fail "--help not paged through \$PAGER"
        rm -f "$tmp"/by-*
        for none in "--no-pager status" "status --no-pager" "-h --no-pager"; do
                on_tty "PAGER='cat > $tmp/by-pager' $k $none"
                [ ! -e "$tmp/by-pager" ] && grep -q "^\(Counters\|Commands\):" "$tmp/tty" || fail "$none: paged anyway"
        done
        for value in "" "cat"; do
                on_tty "KSMCTL_PAGER='$value' PAGER='cat > $tmp/by-pager' $k status"
                [ ! -e "$tmp/by-pager" ] && grep -q "^Counters: " "$tmp/tty" || fail "KSMCTL_PAGER='$value' did not turn the pager off"
        done
else
        echo "script(1) not installed: the pager on a terminal not checked"
fi

# -H and -M through sd-bus: no remote host or container here, so what is
# checked is the arguments, what reaches ssh, and a plain error (status 1,
# or 2 for a name sd-bus refuses) instead of this host's kernel figures.
mkdir "$tmp/bin"
cat > "$tmp/bin/ssh" <<'SSH'
#!/bin/sh
printf '%s\n' "$*" >> "${0%/*}/ssh.log"
echo "ssh: Could not resolve hostname somewhere: Name or service not known" >&2
exit 255
SSH
chmod +x "$tmp/bin/ssh"
for args in "-H user@somewhere status" "status --host=user@somewhere" "--host user@somewhere"; do
        out2=$(PATH="$tmp/bin:$PATH" KSMCTL_ROOT=$tmp "$KSMCTL" $args 2>"$tmp/err"); rc=$?
        [ $rc = 1 ] && [ -z "$out2" ] || fail "ksmctl $args: rc $rc (want 1), printed: $out2"
        grep -qx "ksmctl: Cannot reach ksmtuned2: the system bus of host user@somewhere is not reachable: .*\." "$tmp/err" ||
                fail "ksmctl $args said: $(cat "$tmp/err")"
done
# sd-bus runs ssh -xT ... -- user@somewhere systemd-stdio-bridge, as for systemctl -H.
[ "$(grep -c -- "-- user@somewhere systemd-stdio-bridge" "$tmp/bin/ssh.log")" = 3 ] || fail "ssh ran as: $(cat "$tmp/bin/ssh.log")"
out2=$(KSMCTL_ROOT=$tmp "$KSMCTL" -M ksmctl-test-no-such-container 2>&1); rc=$?
[ $rc = 1 ] && [ "$out2" = "ksmctl: Cannot reach ksmtuned2: the system bus of container ksmctl-test-no-such-container is not reachable: no container of that name is running." ] ||
        fail "-M with no such container: rc $rc: $out2"
out2=$(KSMCTL_ROOT=$tmp "$KSMCTL" list --machine=bad/name 2>&1); rc=$?
[ $rc = 2 ] && grep -q "container bad/name is not reachable: not a valid container name" <<<"$out2" || fail "-M bad/name: rc $rc: $out2"
for bad in "-H ''" "--machine=" "-H a -M b" "-M c exec true"; do
        out2=$(eval "\"\$KSMCTL\" $bad status" 2>&1); rc=$?
        [ $rc = 2 ] || fail "ksmctl $bad: rc $rc (want 2): $out2"
done

# No KSM at all: still a plain answer.
rm -rf "$tmp/sys/kernel/mm/ksm"
out=$(KSMCTL_ROOT=$tmp "$KSMCTL" status 2>&1); rc=$?
[ $rc = 3 ] || fail "without KSM: exit status $rc"
grep -q "^ksmtuned2 is not running" <<<"$out" && grep -q "^The kernel's KSM counters cannot be read either.$" <<<"$out" ||
        fail "without KSM: $out"
echo "PASS: ksmctl status without a daemon, on a fake tree, human and --json"
