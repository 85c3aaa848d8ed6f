# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by shell kernel tests: a process's KSM switches as the daemon reads
# them (tests/helpers/ksm-flags.c, procfs_read_ksm_stat()), so that a test
# reads the same on a kernel whose ksm_stat prints ksm_merge_any and
# ksm_mergeable (the patched test kernel, 6.14 and later) and on one that
# does not (stock 6.12 and older: inferred from smaps).
#
#   ksm_flag PID|self merge_any|mergeable   prints yes, no or unknown;
#                                           nothing when PID is gone
KSM_FLAGS=${KSM_FLAGS:-$KSM_WORKLOAD_DIR/ksm-flags}
ksm_flag() { "$KSM_FLAGS" "$1" 2>/dev/null | sed -n "s/^ksm_$2: //p"; }
