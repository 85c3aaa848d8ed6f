#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What callers see (ksmtuned2(8)): on a private bus, root, nobody and a
# second unprivileged user each run a workload. Each user sees the full
# detail of their own process only, in ListProcesses, ListCgroups, Explain,
# LastDecisions and `ksmctl list`, and no broadcast carries it; root sees
# all three; everyone reads the host's totals. state.json is root's alone,
# the metrics file root's and its group's. Two processes of the second
# user's uid that the kernel hides from that user (not dumpable; root kept
# as the saved uid) are not theirs to see either.
#
# The daemon runs with --dry-run on a private bus: it never writes KSM, so
# no KSM lock is needed.
set -u
umask 022 # policies must not be writable by others (the daemon rejects them)
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (to call as other users)"; exit 77; }
command -v dbus-daemon >/dev/null || { echo "SKIP: no dbus-daemon"; exit 77; }
command -v busctl >/dev/null || { echo "SKIP: no busctl"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
[ -d /sys/kernel/mm/ksm ] || { echo "SKIP: no KSM"; exit 77; }

. "$SOURCE_ROOT/tests/lib/private-bus.sh"
. "$SOURCE_ROOT/tests/lib/daemon.sh"
unset COLUMNS
IFACE=org.ksmtuned2.Manager1
. "$SOURCE_ROOT/tests/lib/scaffold.sh"
test_begin bus-visibility
chmod 755 "$tmp"
daemon_log=$tmp/daemon.log
wl_pids=()
test_cleanup() {
        for p in "${wl_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
        private_bus_stop
        wait 2>/dev/null
        for cg in "${cgs[@]}"; do rmdir "$cg" 2>/dev/null; done
}
ok() { echo "ok: $*"; }
wait_for() { # seconds command...
        local n=$(( $1 * 10 )); shift
        for _ in $(seq $n); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
        return 1
}

# A second unprivileged user. dbus-daemon refuses a uid without an account
# (it looks up its groups), so one is made once and kept for later runs.
TEST_USER=ksmtuned2-test
if ! getent passwd "$TEST_USER" >/dev/null; then
        command -v useradd >/dev/null || { echo "SKIP: no useradd to make $TEST_USER"; exit 77; }
        useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin --user-group "$TEST_USER" ||
                fail "useradd $TEST_USER"
fi
other=$(id -u "$TEST_USER") other_gid=$(id -g "$TEST_USER")
gid_of() { if [ "$1" = "$other" ]; then echo "$other_gid"; else echo "$1"; fi; } # nobody's: nogroup, 65534
as_uid() { # uid command...: as that uid, with its own group
        local u=$1; shift
        setpriv --reuid="$u" --regid="$(gid_of "$u")" --clear-groups -- "$@"
}
as_nobody() { as_uid 65534 "$@"; }
as_other() { as_uid "$other" "$@"; }
# busctl's JSON, for python; the caller's own uid.
call_json() { # uid method [args]
        local u=$1; shift
        as_uid "$u" busctl --json=short call org.ksmtuned2 /org/ksmtuned2 $IFACE "$@"
}
prop_as() { as_uid "$1" busctl get-property org.ksmtuned2 /org/ksmtuned2 $IFACE "$2"; }

mkdir -p "$tmp/run" "$tmp/policy.d" "$tmp/metrics"
daemon_conf "$tmp/k.conf" Interval=300ms \
        '[Metrics]' "TextfilePath=$tmp/metrics/ksmtuned2.prom"
cat > "$tmp/policy.d/50-test.policy" <<POLICY
[Match]
Exe=$KSM_WORKLOAD
[Merge]
Mode=auto
Method=none
POLICY

# One workload per user, each kept alive by a pipe the test holds open and,
# where cgroup v2 lets us make them, each in a cgroup of its own.
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
cgs=()
start_workload() { # name uid [program args...]: the workload, or another program that prints "ready PID"
        local name=$1 u=$2 pid cg=
        shift 2
        [ $# -gt 0 ] || set -- "$KSM_WORKLOAD" --merge none --unique 4 --copies 1
        if [ -n "$cg2" ] && mkdir "$cg2/ksmtuned2-vis-$$-$name" 2>/dev/null; then
                cg=$cg2/ksmtuned2-vis-$$-$name
                cgs+=("$cg")
        fi
        mkfifo "$tmp/$name.in"
        sh -c '[ -z "$1" ] || echo $$ > "$1/cgroup.procs"; shift; exec "$@"' sh "$cg" \
                setpriv --reuid="$u" --regid="$(gid_of "$u")" --clear-groups -- \
                "$@" < "$tmp/$name.in" > "$tmp/$name.out" &
        wl_pids+=($!)
        exec {fd}>"$tmp/$name.in"
        wait_for 10 grep -q "^ready " "$tmp/$name.out" || fail "workload of uid $u did not start"
        pid=$(awk '{ print $2; exit }' "$tmp/$name.out")
        printf -v "pid_$name" %s "$pid"
}
start_workload root 0
start_workload nobody 65534
start_workload other "$other"
# uid $other's too, hidden from that uid by the kernel: made non-dumpable,
# and dropped to it from root keeping root as the saved uid.
start_workload undumpable "$other" "$TRUST_TARGET" --undumpable
start_workload saved 0 "$TRUST_TARGET" --keep-saved-root "$other" "$other_gid"
for p in $pid_undumpable $pid_saved; do
        [ "$(awk '/^Uid:/ { print $2 "," $3 }' "/proc/$p/status")" = "$other,$other" ] ||
                fail "pid $p does not run as uid $other: $(grep '^Uid:' "/proc/$p/status")"
        # The kernel's own answer, which the daemon follows: its ptrace-read
        # rule (PTRACE_MODE_READ_FSCREDS), which guards exe, the path Explain
        # shows. (ksm_stat and ksm_merging_pages are guarded by their mode
        # alone, 0400 owned by the process's euid when it is dumpable: 6.18
        # shows them to uid $other for the process that kept root as its
        # saved uid.)
        as_other readlink "/proc/$p/exe" >/dev/null 2>&1 && fail "uid $other reads pid $p's exe"
done
as_other readlink "/proc/$pid_other/exe" >/dev/null || fail "uid $other cannot read its own workload's exe"

private_bus_start "$tmp" || exit 1
daemon_start "$tmp/daemon.log" --dry-run --config "$tmp/k.conf" || fail "daemon did not start"
# Root's view by Explain, which is not bounded: ListProcesses answers with
# the SAVINGS_LIST_MAX largest (a machine running thousands of other
# processes leaves idle workloads out of root's list).
known_to_root() { # pid comm [policy]: the daemon knows it (and its policy)
        local out; out=$("$KSMCTL" explain "$1" 2>/dev/null) || return 1
        grep -q "^pid $1 ($2)" <<<"$out" && { [ -z "${3:-}" ] || grep -q "$3" <<<"$out"; }
}
classified() { for p in $pid_root $pid_nobody $pid_other; do known_to_root "$p" ksm-workload 50-test.policy || return 1; done; }
wait_for 20 classified || fail "the workloads are not classified for root: $("$KSMCTL" explain "$pid_root" 2>&1)"

# --- 1. ListProcesses: one's own processes only; root's all.
check_list() { # uid own_pid hidden_pids...
        local u=$1 own=$2; shift 2
        call_json "$u" ListProcesses > "$tmp/list.$u" || fail "ListProcesses as uid $u"
        python3 - "$tmp/list.$u" "$u" "$own" "$@" <<'PY' || fail "ListProcesses as uid $u: $(cat "$tmp/list.$u")"
import json, os, sys
rows = json.load(open(sys.argv[1]))["data"][0]
uid, own, hidden = int(sys.argv[2]), int(sys.argv[3]), [int(p) for p in sys.argv[4:]]
pids = [r[0] for r in rows]
assert own in pids, ("own process missing", own, pids)
for p in hidden:
    assert p not in pids, ("another user's process listed", p)
# Nothing of anyone else's: every pid listed is the caller's (real and effective uid).
for p in pids:
    try:
        st = os.stat("/proc/%d" % p)
    except FileNotFoundError:
        continue
    uids = [int(x) for x in open("/proc/%d/status" % p).read().split("Uid:")[1].split()[:2]]
    assert uids == [uid, uid], ("pid %d of uids %s listed to uid %d" % (p, uids, uid))
mine = [r for r in rows if r[0] == own][0]
assert mine[1] == "ksm-workload" and mine[5].endswith("50-test.policy:1") and mine[6] == "merge", mine
PY
}
check_list 65534 "$pid_nobody" "$pid_root" "$pid_other"
wait_for 20 known_to_root "$pid_saved" trust-target && wait_for 20 known_to_root "$pid_undumpable" trust-target ||
        fail "the daemon does not know the trust targets: $("$KSMCTL" explain "$pid_saved" 2>&1)"
check_list "$other" "$pid_other" "$pid_root" "$pid_nobody" "$pid_undumpable" "$pid_saved"
if [ "$(call_json 0 ListProcesses | grep -o '"[0-9]* more processes, not listed"')" = "" ]; then
        call_json 0 ListProcesses | grep -q "\[$pid_nobody,\"ksm-workload\"" || fail "root does not see nobody's process"
fi
ok "ListProcesses: nobody and uid $other see their own workload only (not uid $other's non-dumpable one, nor" \
   "the one with root as its saved uid), root sees all"

# --- 2. ListCgroups: over the caller's own processes only.
if [ ${#cgs[@]} = 5 ]; then
        cg_count() { # uid cgroup: its process count in uid's ListCgroups, 0 when absent
                call_json "$1" ListCgroups | python3 -c '
import json, sys
rows = [r for r in json.load(sys.stdin)["data"][0] if "/" + r[0] == sys.argv[1]]
print(rows[0][3] if rows else 0)' "${2#$cg2}"
        }
        own_name() { case $1 in 65534) echo nobody ;; "$other") echo other ;; esac; }
        for u in 0 65534 "$other"; do
                for name in root nobody other undumpable saved; do
                        want=0
                        [ "$u" = 0 ] || [ "$(own_name "$u")" = "$name" ] && want=1
                        got=$(cg_count "$u" "$cg2/ksmtuned2-vis-$$-$name")
                        [ "$got" = "$want" ] || fail "uid $u's ListCgroups counts $got processes in $name's cgroup, want $want"
                done
        done
        ok "ListCgroups: each user's own workload's cgroup only (not the hidden ones of uid $other), root's all five"
else
        echo "skip: ListCgroups by cgroup (cannot make cgroup v2 directories)"
fi
# --- 3. Explain: another user's process is refused, one's own explained.
out=$(as_nobody dbus-send --system --print-reply --dest=org.ksmtuned2 /org/ksmtuned2 $IFACE.Explain uint32:$pid_root 2>&1)
grep -q "org.ksmtuned2.Error.ProcessHidden" <<<"$out" || fail "nobody's Explain of root's process: $out"
out=$(as_other "$KSMCTL" explain "$pid_nobody" 2>&1); rc=$?
[ $rc = 4 ] && grep -q "is another user's" <<<"$out" || fail "ksmctl explain of nobody's process as uid $other: $rc $out"
for p in $pid_undumpable $pid_saved; do
        out=$(as_other "$KSMCTL" explain "$p" 2>&1); rc=$?
        [ $rc = 4 ] && grep -q "is another user's" <<<"$out" || fail "ksmctl explain of pid $p as uid $other: $rc $out"
        "$KSMCTL" explain "$p" | grep -q "^pid $p (trust-target), uid $other" || fail "root's explain of pid $p"
done
out=$(as_other "$KSMCTL" explain "$pid_other") || fail "ksmctl explain of its own process as uid $other"
grep -q "^pid $pid_other (ksm-workload), uid $other, $KSM_WORKLOAD$" <<<"$out" || fail "explain of one's own: $out"
"$KSMCTL" explain "$pid_other" | grep -q "^pid $pid_other (ksm-workload), uid $other" || fail "root's explain of uid $other's"
ok "Explain: another user's process refused (ProcessHidden, ksmctl exit 4), one's own in full, root all"

# --- 4. LastDecisions: the policy decisions about each workload, text for its owner only.
decisions() { prop_as "$1" LastDecisions; }
wait_for 10 sh -c "busctl get-property org.ksmtuned2 /org/ksmtuned2 $IFACE LastDecisions | grep -q 'pid $pid_root (ksm-workload)'" ||
        fail "no decision about root's workload: $(decisions 0)"
out=$(decisions 65534)
grep -q "pid $pid_nobody (ksm-workload)" <<<"$out" || fail "nobody does not see the decision about its own process: $out"
! grep -q "pid $pid_root (\|pid $pid_other (" <<<"$out" || fail "nobody sees decisions about others' processes: $out"
grep -q "(about another user" <<<"$out" || fail "nobody's LastDecisions has no hidden entry: $out"
# As many entries as root's, read between two equal DecisionsTotal.
same=
for _ in 1 2 3 4 5; do
        t1=$(prop_as 0 DecisionsTotal)
        n0=$(decisions 0 | cut -d' ' -f2); n1=$(decisions 65534 | cut -d' ' -f2)
        [ "$(prop_as 0 DecisionsTotal)" = "$t1" ] && { same=$n0:$n1; break; }
done
[ -n "$same" ] && [ "${same%:*}" = "${same#*:}" ] || fail "nobody's LastDecisions has not as many entries as root's ($same)"
ok "LastDecisions: the text about another user's process hidden, the entry and its kind kept"

# --- 4b. Broadcasts carry no caller-dependent value: a subscriber (nobody)
# learns that LastDecisions changed, not what it says for root.
if command -v gdbus >/dev/null; then
        as_nobody gdbus monitor --system --dest org.ksmtuned2 --object-path /org/ksmtuned2 > "$tmp/signals" 2>&1 &
        monitor_pid=$!; wl_pids+=($monitor_pid)
        wait_for 5 grep -q "Monitoring signals" "$tmp/signals" || fail "gdbus monitor as nobody: $(cat "$tmp/signals")"
        "$KSMCTL" pause && "$KSMCTL" resume || fail "root's pause and resume"
        wait_for 10 grep -q "PropertiesChanged.*'LastDecisions'" "$tmp/signals" ||
                fail "no PropertiesChanged naming LastDecisions: $(cat "$tmp/signals")"
        kill "$monitor_pid"
        grep -q "'LastDecisions': <\|'ControllerReason': <" "$tmp/signals" &&
                fail "PropertiesChanged broadcasts a caller-dependent value: $(grep PropertiesChanged "$tmp/signals")"
        grep -q "pid $pid_root (" "$tmp/signals" && fail "a signal names root's workload: $(cat "$tmp/signals")"
        ok "PropertiesChanged invalidates LastDecisions and ControllerReason, never carries their value"
fi

# --- 5. ksmctl list as an unprivileged user: no other user's figures.
out=$(as_nobody "$KSMCTL" list --all) || fail "ksmctl list as nobody"
grep -q "^$pid_nobody  *ksm-workload " <<<"$out" || fail "nobody's ksmctl list lacks its own workload: $out"
! grep -q "^$pid_root \|^$pid_other " <<<"$out" || fail "nobody's ksmctl list shows another user's process: $out"
grep -q "^Only your own processes are listed; ksmtuned2 shows other users' processes to root only\.$" <<<"$out" ||
        fail "ksmctl list as nobody does not say others are hidden: $out"
grep -q "^The host in all: [0-9.]* [KMGTP]\?i\?B saved, [0-9]* processes managed\.$" <<<"$out" ||
        fail "ksmctl list as nobody lacks the host's totals: $out"
out=$("$KSMCTL" list --all) || fail "root's ksmctl list"
# (Bounded as ListProcesses is: with thousands of processes on the machine
# root's idle workload may be among the ones not listed.)
grep -q "^0  *(other) " <<<"$out" || grep -q "^$pid_root " <<<"$out" || fail "root's ksmctl list lacks root's workload"
"$KSMCTL" list --all | grep -q "Only your own" && fail "root's ksmctl list says others are hidden"
out=$(as_other "$KSMCTL" list --cgroups) || fail "ksmctl list --cgroups as uid $other"
grep -q "^Only your own processes are counted" <<<"$out" || fail "ksmctl list --cgroups as uid $other: $out"
ok "ksmctl list as nobody: its own process, no other user's, and a line saying so"

# --- 6. The host's totals are everyone's.
# (Read, not compared: ksmd and other tests move them between two calls.)
for p in SavedBytes ManagedProcesses Counters GeneralProfitBytes KsmdCPUFraction DecisionsTotal ControllerReason; do
        for u in 65534 "$other"; do
                prop_as "$u" $p | grep -q '^[a-z{]' || fail "uid $u cannot read $p: $(prop_as "$u" $p)"
        done
done
# Host-wide, not the caller's own: nobody owns one managed process here, root two more.
[ "$(prop_as 65534 ManagedProcesses | cut -d' ' -f2)" -ge 3 ] || fail "nobody's ManagedProcesses: $(prop_as 65534 ManagedProcesses)"
out=$(as_nobody "$KSMCTL" status) || fail "ksmctl status as nobody"
grep -q "full_scans=" <<<"$out" || fail "ksmctl status as nobody lacks the counters: $out"
ok "host totals (SavedBytes, ManagedProcesses host-wide, Counters, ...) readable by nobody and uid $other"

# --- 7. Files: state.json root's alone, the metrics file root's and its group's.
kill -USR1 "$daemon_pid"
wait_for 5 test -s "$tmp/run/state.json" || fail "no state.json after SIGUSR1"
[ "$(stat -c %a:%u "$tmp/run/state.json")" = "600:0" ] || fail "state.json is $(stat -c %a:%u "$tmp/run/state.json")"
as_nobody cat "$tmp/run/state.json" >/dev/null 2>&1 && fail "nobody reads state.json"
wait_for 5 test -s "$tmp/metrics/ksmtuned2.prom" || fail "no metrics file"
[ "$(stat -c %a:%u:%g "$tmp/metrics/ksmtuned2.prom")" = "640:0:0" ] ||
        fail "the metrics file is $(stat -c %a:%u:%g "$tmp/metrics/ksmtuned2.prom")"
as_nobody cat "$tmp/metrics/ksmtuned2.prom" >/dev/null 2>&1 && fail "nobody reads the metrics file"
# A setgid directory hands its group on: a textfile collector's group reads it.
chgrp 65534 "$tmp/metrics" && chmod 2755 "$tmp/metrics"
wait_for 5 sh -c "[ \"\$(stat -c %g '$tmp/metrics/ksmtuned2.prom')\" = 65534 ]" || fail "the metrics file did not take its directory's group"
setpriv --reuid=65533 --regid=65534 --clear-groups -- cat "$tmp/metrics/ksmtuned2.prom" >/dev/null ||
        fail "the directory's group cannot read the metrics file"
ok "state.json 0600 root; the metrics file 0640 root:root, or the group of a setgid directory"

kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
[ $rc = 0 ] || fail "daemon exited $rc on SIGTERM"
echo "PASS"
