# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by shell kernel tests: the same contract as ksm-guard.c. Takes the
# KSM test lock, saves every knob, restores them and kills tracked children
# on every exit path (EXIT, INT, TERM, HUP).
KSM=/sys/kernel/mm/ksm
if [ "$(id -u)" != 0 ] || [ ! -w "$KSM/run" ]; then
        echo "SKIP: needs root and a writable $KSM" >&2
        exit 77
fi
exec 9>"${KSMTUNED2_TEST_LOCK:-/run/ksmtuned2-ksm-tests.lock}"
flock 9
KSM_GUARD_KNOBS="pages_to_scan sleep_millisecs smart_scan use_zero_pages max_page_sharing stable_node_chains_prune_millisecs advisor_max_cpu advisor_min_pages_to_scan advisor_max_pages_to_scan advisor_target_scan_time advisor_mode merge_across_nodes run"
KSM_GUARD_SAVED=
KSM_GUARD_PIDS=
ksm_knob() { v=$(cat "$KSM/$1" 2>/dev/null) || return 1; case $v in *\[*) v=${v#*[}; v=${v%%]*};; esac; echo "$v"; }
for k in $KSM_GUARD_KNOBS; do
        v=$(ksm_knob "$k") || continue
        [ "$k" = run ] && [ "$v" = 2 ] && v=0
        KSM_GUARD_SAVED="$KSM_GUARD_SAVED $k=$v"
done
# Pages of exited test processes stay in the stable tree while run=0 (ksmd
# drops an exited mm only when its scan reaches it) and keep pages_shared > 0,
# which makes max_page_sharing and merge_across_nodes writes fail with EBUSY.
# Let ksmd run until they are gone or two passes went by, at most 5 s.
ksm_guard_settle() {
        [ "$(cat $KSM/pages_shared)" = 0 ] && return 0
        _f0=$(cat $KSM/full_scans) _r0=$(cat $KSM/run)
        [ "$_r0" = 2 ] && _r0=0
        echo 1 > $KSM/run || return 0
        for _ in $(seq 250); do
                [ "$(cat $KSM/pages_shared)" = 0 ] && break
                [ "$(cat $KSM/full_scans)" -ge $((_f0 + 2)) ] && break
                sleep 0.02
        done
        echo "$_r0" > $KSM/run
}
ksm_guard_settle
ksm_guard_track() { KSM_GUARD_PIDS="$KSM_GUARD_PIDS $*"; }
ksm_guard_restore() {
        for p in $KSM_GUARD_PIDS; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
        KSM_GUARD_PIDS=
        echo none > "$KSM/advisor_mode" 2>/dev/null
        ksm_guard_settle
        for kv in $KSM_GUARD_SAVED; do
                k=${kv%%=*}; v=${kv#*=}
                [ "$(ksm_knob "$k")" = "$v" ] || echo "$v" > "$KSM/$k" 2>/dev/null
        done
}
ksm_guard_knobs_now() {
        for k in $KSM_GUARD_KNOBS; do v=$(ksm_knob "$k") && printf '%s=%s ' "$k" "$v"; done
}
trap 'ksm_guard_restore' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
