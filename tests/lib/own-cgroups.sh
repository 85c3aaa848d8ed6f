# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Cgroups of a test's own, for what moves processes between cgroups as it
# starts: systemd (as a user manager or as a container's PID 1) moves every
# process of its own cgroup into <that cgroup>/init.scope, in every
# hierarchy; systemd-nspawn --keep-unit makes "payload" and "supervisor"
# below its own. Started from the test's cgroup they would move the test
# runner and its parents, from a root cgroup every process of the host, and
# what they make stays behind. So they start in a cgroup named after the
# test, below the test's own in each hierarchy, and everything named after
# it goes at the end.
#
#   own_cgroups_make NAME     makes NAME below this process's cgroup in each
#                             hierarchy (OWN_CGROUPS: their paths); 1 when one
#                             cannot be made (a read-only cgroupfs)
#   own_cgroups_enter         moves the calling (sub)shell into them
#   own_cgroups_remove        removes every cgroup named NAME (and what is
#                             below it) in any hierarchy, killing what is
#                             left in them
#   own_cgroups_leftover      prints those that are still there

OWN_CGROUPS=()
OWN_CGROUPS_NAME=

own_cgroups_mounts() { findmnt -n -t cgroup,cgroup2 -o TARGET,FSTYPE,OPTIONS; }

own_cgroups_make() {
        local ctrls path t d f
        OWN_CGROUPS_NAME=${1:?own_cgroups_make NAME}
        # those of a run that was SIGKILLed with the same pid, and what
        # it left running in them
        own_cgroups_remove
        while IFS=: read -r _ ctrls path; do
                if [ -z "$ctrls" ]; then
                        t=$(own_cgroups_mounts | awk '$2 == "cgroup2" { print $1; exit }')
                else
                        t=$(own_cgroups_mounts | awk -v c="$ctrls" '$2 == "cgroup" {
                                n = split($3, o, ","); m = split(c, w, ","); ok = 1
                                for (i = 1; i <= m; i++) { f = 0; for (j = 1; j <= n; j++) if (o[j] == w[i]) f = 1; if (!f) ok = 0 }
                                if (ok) { print $1; exit } }')
                fi
                [ -n "$t" ] || continue
                d=$t${path%/}/$OWN_CGROUPS_NAME
                mkdir "$d" 2>/dev/null || return 1
                OWN_CGROUPS+=("$d")
                # a v1 cpuset takes no task before it has CPUs and nodes (ENOSPC)
                for f in cpuset.cpus cpuset.mems; do
                        if [ -e "$d/$f" ] && [ -z "$(cat "$d/$f")" ]; then cat "${d%/*}/$f" > "$d/$f"; fi
                done
        done < /proc/self/cgroup
        return 0
}

own_cgroups_enter() {
        local d
        for d in "${OWN_CGROUPS[@]}"; do echo "$BASHPID" > "$d/cgroup.procs" || return 1; done
}

# The cgroups named NAME below hierarchy $1 and everything below them: the
# name whole (ksmtuned2-e2e-12 is not ksmtuned2-e2e-123's).
own_cgroups_find() {
        find "$1" "${@:2}" -type d \( -path "*/$OWN_CGROUPS_NAME" -o -path "*/$OWN_CGROUPS_NAME/*" \) 2>/dev/null
}

own_cgroups_remove() {
        local t d
        [ -n "$OWN_CGROUPS_NAME" ] || return 0
        for t in $(own_cgroups_mounts | awk '{ print $1 }'); do
                for d in $(own_cgroups_find "$t" -depth); do
                        xargs -r kill -KILL < "$d/cgroup.procs" 2>/dev/null
                        for _ in $(seq 50); do rmdir "$d" 2>/dev/null && break; sleep 0.1; done
                done
        done
}

own_cgroups_leftover() {
        local t
        [ -n "$OWN_CGROUPS_NAME" ] || return 0
        for t in $(own_cgroups_mounts | awk '{ print $1 }'); do
                own_cgroups_find "$t"
        done
}
