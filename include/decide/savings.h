/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "process.h"

/* What merging buys, per process and summed per cgroup / VM / unit, for the
 * bus (ListProcesses, ListCgroups) and the metrics file. Pure: it only reads
 * a ProcessTable. "Merging pages" is the kernel's ksm_merging_pages of each
 * process (lock-free, current every tick); "profit" is ksm_stat's
 * ksm_process_profit (merged bytes minus KSM's rmap_item overhead), known
 * once the off-loop reader has read it, 0 before. */

typedef struct CgroupSavings {
        char *cgroup;                   /* v2 path relative to the root; "" root; NULL unknown */
        const char *unit;               /* borrowed from a member process; NULL none */
        const char *vm_name;            /* borrowed; NULL none */
        unsigned processes;
        uint64_t merging_pages;
        int64_t profit_bytes;
} CgroupSavings;

typedef struct SavingsTable {
        CgroupSavings *items;
        size_t n;
} SavingsTable;

/* User processes only (kernel threads have no mm), largest first: by
 * merging pages, then profit, then pid. The array holds borrowed pointers
 * into t, valid until t changes. */
int savings_sorted_processes(const ProcessTable *t, const Process ***ret, size_t *ret_n);

/* One entry per cgroup that holds at least one user process, largest
 * first (merging pages, then profit, then path). The strings unit and
 * vm_name are borrowed from t. */
int savings_by_cgroup(const ProcessTable *t, SavingsTable *ret);
void savings_table_done(SavingsTable *s);

static inline int64_t process_profit_bytes(const Process *p) {
        return p->ksm_stat_valid ? p->ksm_stat.process_profit : 0;
}
