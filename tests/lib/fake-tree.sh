# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by shell tests: the same minimal tree as fake_tree_populate_minimal()
# in fake-tree.c, for running the daemon with --root on a fake proc and sys.
# fake_tree_minimal DIR [no-ksm]
fake_tree_minimal() {
        _t=$1
        mkdir -p "$_t/proc/self" "$_t/sys/fs/cgroup/unified" "$_t/sys/kernel/mm"
        cat > "$_t/proc/self/mounts" <<MOUNTS
proc /proc proc rw 0 0
sysfs /sys sysfs rw 0 0
tmpfs /sys/fs/cgroup tmpfs rw 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0
MOUNTS
        printf 'MemTotal:       24000000 kB\nMemFree:        20000000 kB\nMemAvailable:   22000000 kB\nAnonPages:        100000 kB\n' \
                > "$_t/proc/meminfo"
        [ "${2:-}" = no-ksm ] && return 0
        mkdir -p "$_t/sys/kernel/mm/ksm"
        for kv in run=0 pages_to_scan=100 sleep_millisecs=20 pages_shared=0 pages_sharing=0 pages_unshared=0 \
                  pages_volatile=0 full_scans=0 general_profit=0 "advisor_mode=[none] scan-time" smart_scan=1 \
                  use_zero_pages=0 max_page_sharing=256 merge_across_nodes=1; do
                echo "${kv#*=}" > "$_t/sys/kernel/mm/ksm/${kv%%=*}"
        done
}
