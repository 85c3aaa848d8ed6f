/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "process.h"
#include "strmap.h"

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
/* What a bounded reply lists: the user processes viewer may see
 * (process_visible_to()), *ret_n of them; when they are more than max, the
 * first max - 1 in that order (found without sorting the rest), sorted,
 * then the rest in no order, for savings_sum_processes(); else all, sorted.
 * *ret_shown says how many lead sorted. The same leading entries as
 * savings_sorted_processes() filtered by viewer. */
int savings_top_processes(const ProcessTable *t, uid_t viewer, size_t max, const Process ***ret, size_t *ret_n,
                          size_t *ret_shown);

/* One entry per cgroup that holds at least one user process, largest
 * first (merging pages, then profit, then path). The strings unit and
 * vm_name are borrowed from t. */
int savings_by_cgroup(const ProcessTable *t, SavingsTable *ret);
/* The same over the processes viewer may see (process_visible_to()): an
 * unprivileged caller's cgroups, summed over its own processes only. */
int savings_by_cgroup_visible(const ProcessTable *t, uid_t viewer, SavingsTable *ret);
/* The same, and how many hash slots the grouping looked at (a test of its
 * cost: linear in processes, whatever the number of cgroups). */
int savings_by_cgroup_counted(const ProcessTable *t, SavingsTable *ret, uint64_t *ret_probes);
void savings_table_done(SavingsTable *s);

/* savings_by_cgroup(), kept current as processes change instead of
 * recomputed from the whole table: the owner of the table calls
 * savings_index_update() after every change of a process's cgroup or KSM
 * figures and savings_index_remove() before the process leaves the table,
 * and savings_index_table() then costs O(cgroups), not O(processes). Each
 * process remembers its share in p->index (process.h). Unit and VM names
 * are copied once per cgroup: they are functions of its path
 * (cgroup_path_get_unit, cgroup_path_get_machine). */
typedef struct SavingsIndexGroup {
        CgroupSavings sums;             /* sums.cgroup is the key; unit and vm_name point below */
        char *unit, *vm_name;
} SavingsIndexGroup;

typedef struct SavingsIndex {
        StrMap map;                     /* cgroup path -> position in groups */
        SavingsIndexGroup **groups;     /* stable: a process points at its group */
        size_t n_groups, n_alloc;
        SavingsIndexGroup *unknown;     /* processes whose cgroup is not known */
        size_t n_empty;                 /* groups with no process left, freed in bulk */
} SavingsIndex;

int savings_index_update(SavingsIndex *x, Process *p);
void savings_index_remove(SavingsIndex *x, Process *p);
/* The same table as savings_by_cgroup() of the processes indexed. */
int savings_index_table(const SavingsIndex *x, SavingsTable *ret);
void savings_index_done(SavingsIndex *x);

/* What one unprivileged call may cost is bounded: ListCgroups and
 * ListProcesses answer with the SAVINGS_LIST_MAX largest entries at most,
 * the last of them "(other)" summing everything left out (as the metrics
 * file sums the series past METRICS_MAX_GROUP_SERIES). */
#define SAVINGS_LIST_MAX 1000
#define SAVINGS_OTHER_NAME "(other)"
/* Folds the entries of the sorted table s from the max-th on into one,
 * cgroup "(other)" with no unit or VM, so that s holds max entries. 1 when
 * it did, 0 when s had no more than max, -ENOMEM. */
int savings_table_truncate(SavingsTable *s, size_t max);

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

/* The sum of n processes (those past the list's cap), named "(other)". */
void savings_sum_processes(const Process *const *list, size_t n, SavingsGroup *ret);

static inline int64_t process_profit_bytes(const Process *p) {
        return p->ksm_stat_valid ? p->ksm_stat.process_profit : 0;
}
