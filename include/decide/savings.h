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
/* The same over the processes viewer may see (process_visible_to()): an
 * unprivileged caller's cgroups, summed over its own processes only. */
int savings_by_cgroup_visible(const ProcessTable *t, uid_t viewer, SavingsTable *ret);
void savings_table_done(SavingsTable *s);

/* The same sums under names that outlive a restart, for the metrics file:
 * per VM or container by its name, per systemd unit for the processes in no
 * VM, so that every process counts once. Not by cgroup path: machined's
 * scope of a VM carries a run id ("machine-qemu\x2d3\x2dweb01.scope"; the
 * 3 changes at every start of the VM), and a label that changes starts a
 * new series. */
typedef enum SavingsKey {
        SAVINGS_BY_VM,                  /* the cgroups with a vm_name, by it */
        SAVINGS_BY_UNIT,                /* the others, by unit */
} SavingsKey;

typedef struct SavingsGroup {
        const char *name;               /* borrowed from the table; NULL: in no unit */
        unsigned processes;
        uint64_t merging_pages;
        int64_t profit_bytes;
} SavingsGroup;

typedef struct SavingsGroups {
        SavingsGroup *items;
        size_t n;
} SavingsGroups;

/* The cgroups of c summed by key, largest first (merging pages, then
 * profit, then name). -ENOMEM. */
int savings_group(const SavingsTable *c, SavingsKey key, SavingsGroups *ret);
void savings_groups_done(SavingsGroups *g);

static inline int64_t process_profit_bytes(const Process *p) {
        return p->ksm_stat_valid ? p->ksm_stat.process_profit : 0;
}
