/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "savings.h"
#include "util.h"

static int compare_processes(const void *a, const void *b) {
        const Process *x = *(const Process *const *) a, *y = *(const Process *const *) b;
        if (x->ksm_merging_pages != y->ksm_merging_pages)
                return x->ksm_merging_pages > y->ksm_merging_pages ? -1 : 1;
        if (process_profit_bytes(x) != process_profit_bytes(y))
                return process_profit_bytes(x) > process_profit_bytes(y) ? -1 : 1;
        return x->pid < y->pid ? -1 : x->pid > y->pid;
}

int savings_sorted_processes(const ProcessTable *t, const Process ***ret, size_t *ret_n) {
        _cleanup_free_ const Process **list = NULL;
        const Process *p;
        size_t n = 0;

        list = calloc(process_table_size(t) + 1, sizeof *list);
        if (!list)
                return -ENOMEM;
        PROCESS_TABLE_FOREACH(p, t, i)
                if (!p->kthread)
                        list[n++] = p;
        qsort(list, n, sizeof *list, compare_processes);
        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}

/* Largest first: merging pages, then profit, then name. */
static int compare_savings(uint64_t x_pages, int64_t x_profit, const char *x_name, uint64_t y_pages,
                           int64_t y_profit, const char *y_name) {
        if (x_pages != y_pages)
                return x_pages > y_pages ? -1 : 1;
        if (x_profit != y_profit)
                return x_profit > y_profit ? -1 : 1;
        return strcmp(x_name ?: "", y_name ?: "");
}

static int compare_cgroups(const void *a, const void *b) {
        const CgroupSavings *x = a, *y = b;
        return compare_savings(x->merging_pages, x->profit_bytes, x->cgroup, y->merging_pages, y->profit_bytes,
                               y->cgroup);
}

/* Equal strings, or both NULL (no cgroup, no unit). */
static bool same_name(const char *a, const char *b) {
        return (!a && !b) || (a && b && streq(a, b));
}

int savings_by_cgroup(const ProcessTable *t, SavingsTable *ret) {
        return savings_by_cgroup_visible(t, 0, ret);
}

int savings_by_cgroup_visible(const ProcessTable *t, uid_t viewer, SavingsTable *ret) {
        SavingsTable s = {};
        const Process *p;

        s.items = calloc(process_table_size(t) + 1, sizeof *s.items);
        if (!s.items)
                return -ENOMEM;
        /* Quadratic in cgroups, linear in processes: hosts have hundreds of
         * cgroups at most, and this runs once per tick or call. */
        PROCESS_TABLE_FOREACH(p, t, i) {
                CgroupSavings *c = NULL;
                if (p->kthread || !process_visible_to(p, viewer))
                        continue;
                for (size_t j = 0; j < s.n && !c; j++)
                        if (same_name(s.items[j].cgroup, p->cgroup))
                                c = &s.items[j];
                if (!c) {
                        c = &s.items[s.n];
                        if (p->cgroup && !(c->cgroup = strdup(p->cgroup))) {
                                savings_table_done(&s);
                                return -ENOMEM;
                        }
                        c->unit = p->unit;
                        c->vm_name = p->vm_name;
                        s.n++;
                }
                c->processes++;
                c->merging_pages += p->ksm_merging_pages;
                c->profit_bytes += process_profit_bytes(p);
        }
        qsort(s.items, s.n, sizeof *s.items, compare_cgroups);
        *ret = s;
        return 0;
}

static int compare_groups(const void *a, const void *b) {
        const SavingsGroup *x = a, *y = b;
        return compare_savings(x->merging_pages, x->profit_bytes, x->name, y->merging_pages, y->profit_bytes,
                               y->name);
}

int savings_group(const SavingsTable *c, SavingsKey key, SavingsGroups *ret) {
        SavingsGroups g = {};

        g.items = calloc(c->n + 1, sizeof *g.items);
        if (!g.items)
                return -ENOMEM;
        for (size_t i = 0; i < c->n; i++) {
                const CgroupSavings *x = &c->items[i];
                bool in_vm = x->vm_name;
                SavingsGroup *e = NULL;

                /* A VM's processes count for the VM only, not for its scope unit as well. */
                if (in_vm != (key == SAVINGS_BY_VM))
                        continue;
                const char *name = in_vm ? x->vm_name : x->unit;
                for (size_t j = 0; j < g.n && !e; j++)
                        if (same_name(g.items[j].name, name))
                                e = &g.items[j];
                if (!e) {
                        e = &g.items[g.n++];
                        e->name = name;
                }
                e->processes += x->processes;
                e->merging_pages += x->merging_pages;
                e->profit_bytes += x->profit_bytes;
        }
        qsort(g.items, g.n, sizeof *g.items, compare_groups);
        *ret = g;
        return 0;
}

void savings_groups_done(SavingsGroups *g) {
        free(g->items);
        *g = (SavingsGroups) {};
}

void savings_table_done(SavingsTable *s) {
        for (size_t i = 0; i < s->n; i++)
                free(s->items[i].cgroup);
        free(s->items);
        *s = (SavingsTable) {};
}
