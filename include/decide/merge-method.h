/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* How merging is switched on or off for one process (DESIGN.md §4). Shared
 * by policies (Method=), the actuators and the bus. */
typedef enum MergeMethod {
        MERGE_METHOD_ANY,       /* the best this kernel offers, injection included */
        MERGE_METHOD_MADVISE,   /* process_madvise(MADV_(UN)MERGEABLE) remotely */
        MERGE_METHOD_PROCESS_KSM, /* out-of-tree process_ksm_enable/disable(pidfd) */
        MERGE_METHOD_INJECT,    /* prctl(PR_SET_MEMORY_MERGE) injected with ptrace */
        MERGE_METHOD_NONE,      /* never touch the process; tuning only */
        _MERGE_METHOD_MAX,
        _MERGE_METHOD_INVALID = -22,
} MergeMethod;

/* Names as written in policies and shown by ksmctl: any, madvise,
 * process_ksm, inject, none. The table (string-table.h) is public for
 * conf_parse_enum(). */
extern const char *const merge_method_table[_MERGE_METHOD_MAX];
const char *merge_method_to_string(MergeMethod m);
MergeMethod merge_method_from_string(const char *s);
