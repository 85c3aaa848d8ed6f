/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "savings.h"
#include "strmap.h"
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

static void swap_processes(const Process **a, size_t i, size_t j) {
        const Process *x = a[i];
        a[i] = a[j];
        a[j] = x;
}

/* Moves the k first of a[0..n) in compare_processes() order to a[0..k), in
 * no order: quickselect, expected O(n), with pivots from a generator seeded
 * by the array, so that no order of entries is reliably quadratic. */
static void select_first(const Process **a, size_t n, size_t k) {
        uint64_t seed = (uint64_t) (uintptr_t) a ^ (n * UINT64_C(0x9e3779b97f4a7c15)) ^ 1;
        size_t lo = 0, hi = n;

        while (hi - lo > 1 && k > lo && k < hi) {
                seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
                swap_processes(a, lo + (size_t) (seed % (hi - lo)), hi - 1);
                const Process *pivot = a[hi - 1];
                size_t store = lo;
                for (size_t i = lo; i < hi - 1; i++)
                        if (compare_processes(&a[i], &pivot) < 0)
                                swap_processes(a, i, store++);
                swap_processes(a, store, hi - 1);
                if (k <= store)
                        hi = store;
                else if (k > store + 1)
                        lo = store + 1;
                else
                        break;
        }
}

int savings_top_processes(const ProcessTable *t, uid_t viewer, size_t max, const Process ***ret, size_t *ret_n,
                          size_t *ret_shown) {
        _cleanup_free_ const Process **list = NULL;
        const Process *p;
        size_t n = 0;

        list = calloc(process_table_size(t) + 1, sizeof *list);
        if (!list)
                return -ENOMEM;
        PROCESS_TABLE_FOREACH(p, t, i)
                if (!p->kthread && process_visible_to(p, viewer))
                        list[n++] = p;
        size_t shown = n > max ? (max > 0 ? max - 1 : 0) : n;
        if (shown < n)
                select_first(list, n, shown);
        qsort(list, shown, sizeof *list, compare_processes);
        *ret = TAKE_PTR(list);
        *ret_n = n;
        *ret_shown = shown;
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

/* The entry of name (NULL: the one for no name) in an array of n through
 * index, or n, with *ret_new, when there is none yet. */
static size_t find_group(StrMap *index, size_t null_at, const char *name, size_t n, bool *ret_new) {
        size_t at = null_at;
        bool found = name ? strmap_get(index, name, &at) : null_at != SIZE_MAX;
        *ret_new = !found;
        return found ? at : n;
}

static int by_cgroup(const ProcessTable *t, uid_t viewer, SavingsTable *ret, uint64_t *ret_probes) {
        _cleanup_(strmap_done) StrMap index = {};
        SavingsTable s = {};
        size_t null_at = SIZE_MAX;
        const Process *p;
        int r;

        s.items = calloc(process_table_size(t) + 1, sizeof *s.items);
        if (!s.items)
                return -ENOMEM;
        /* Linear: a user with a delegated subtree makes as many cgroups as
         * it likes, and this runs on every tick with metrics and for every
         * unprivileged ListCgroups. */
        PROCESS_TABLE_FOREACH(p, t, i) {
                bool created;
                if (p->kthread || !process_visible_to(p, viewer))
                        continue;
                size_t j = find_group(&index, null_at, p->cgroup, s.n, &created);
                CgroupSavings *c = &s.items[j];
                if (created) {
                        if (p->cgroup && !(c->cgroup = strdup(p->cgroup))) {
                                savings_table_done(&s);
                                return -ENOMEM;
                        }
                        /* the copy is the key: items never move */
                        r = p->cgroup ? strmap_put(&index, c->cgroup, j) : 0;
                        if (r < 0) {
                                free(c->cgroup);
                                c->cgroup = NULL;
                                savings_table_done(&s);
                                return r;
                        }
                        if (!p->cgroup)
                                null_at = j;
                        c->unit = p->unit;
                        c->vm_name = p->vm_name;
                        s.n++;
                }
                c->processes++;
                c->merging_pages += p->ksm_merging_pages;
                c->profit_bytes += process_profit_bytes(p);
        }
        qsort(s.items, s.n, sizeof *s.items, compare_cgroups);
        if (ret_probes)
                *ret_probes = index.probes;
        *ret = s;
        return 0;
}

int savings_by_cgroup(const ProcessTable *t, SavingsTable *ret) {
        return by_cgroup(t, 0, ret, NULL);
}

int savings_by_cgroup_visible(const ProcessTable *t, uid_t viewer, SavingsTable *ret) {
        return by_cgroup(t, viewer, ret, NULL);
}

int savings_by_cgroup_counted(const ProcessTable *t, SavingsTable *ret, uint64_t *ret_probes) {
        return by_cgroup(t, 0, ret, ret_probes);
}

static int compare_groups(const void *a, const void *b) {
        const SavingsGroup *x = a, *y = b;
        return compare_savings(x->merging_pages, x->profit_bytes, x->name, y->merging_pages, y->profit_bytes,
                               y->name);
}

int savings_group(const SavingsTable *c, SavingsKey key, SavingsGroups *ret) {
        _cleanup_(strmap_done) StrMap index = {};
        SavingsGroups g = {};
        size_t null_at = SIZE_MAX;

        g.items = calloc(c->n + 1, sizeof *g.items);
        if (!g.items)
                return -ENOMEM;
        for (size_t i = 0; i < c->n; i++) {
                const CgroupSavings *x = &c->items[i];
                bool in_vm = x->vm_name, created;

                /* A VM's processes count for the VM only, not for its scope unit as well. */
                if (in_vm != (key == SAVINGS_BY_VM))
                        continue;
                const char *name = in_vm ? x->vm_name : x->unit;
                size_t j = find_group(&index, null_at, name, g.n, &created);
                SavingsGroup *e = &g.items[j];
                if (created) {
                        /* name is borrowed from the process table: stable */
                        if (name && strmap_put(&index, name, j) < 0) {
                                savings_groups_done(&g);
                                return -ENOMEM;
                        }
                        if (!name)
                                null_at = j;
                        e->name = name;
                        g.n++;
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

int savings_table_truncate(SavingsTable *s, size_t max) {
        if (s->n <= max)
                return 0;
        CgroupSavings other = { .cgroup = strdup(SAVINGS_OTHER_NAME) };
        if (!other.cgroup)
                return -ENOMEM;
        /* max == 0 keeps the "(other)" entry alone */
        size_t keep = max > 0 ? max - 1 : 0;
        for (size_t i = keep; i < s->n; i++) {
                other.processes += s->items[i].processes;
                other.merging_pages += s->items[i].merging_pages;
                other.profit_bytes += s->items[i].profit_bytes;
                free(s->items[i].cgroup);
        }
        s->items[keep] = other;
        s->n = keep + 1;
        return 1;
}

void savings_sum_processes(const Process *const *list, size_t n, SavingsGroup *ret) {
        SavingsGroup g = { .name = SAVINGS_OTHER_NAME };
        for (size_t i = 0; i < n; i++) {
                g.processes++;
                g.merging_pages += list[i]->ksm_merging_pages;
                g.profit_bytes += process_profit_bytes(list[i]);
        }
        *ret = g;
}

static bool group_is(const SavingsIndexGroup *g, const char *cgroup) {
        return g->sums.cgroup ? cgroup && streq(g->sums.cgroup, cgroup) : !cgroup;
}

static SavingsIndexGroup *group_new(const Process *p) {
        SavingsIndexGroup *g = calloc(1, sizeof *g);
        if (!g)
                return NULL;
        if ((p->cgroup && !(g->sums.cgroup = strdup(p->cgroup))) || (p->unit && !(g->unit = strdup(p->unit))) ||
            (p->vm_name && !(g->vm_name = strdup(p->vm_name)))) {
                free(g->sums.cgroup);
                free(g->unit);
                free(g);
                return NULL;
        }
        g->sums.unit = g->unit;
        g->sums.vm_name = g->vm_name;
        return g;
}

static void group_free(SavingsIndexGroup *g) {
        if (!g)
                return;
        free(g->sums.cgroup);
        free(g->unit);
        free(g->vm_name);
        free(g);
}

/* Drops the groups no process is in any more, once they are as many as the
 * live ones: a host whose containers come and go does not grow the index
 * for good, and the rebuild is paid for by as many removals. */
static int index_compact(SavingsIndex *x) {
        _cleanup_(strmap_done) StrMap map = {};
        size_t n = 0;

        if (x->n_empty < 64 || x->n_empty * 2 < x->n_groups)
                return 0;
        /* The new map first: a failure leaves the index as it was. */
        for (size_t i = 0; i < x->n_groups; i++)
                if (x->groups[i]->sums.processes > 0 && strmap_put(&map, x->groups[i]->sums.cgroup, n++) < 0)
                        return -ENOMEM;
        n = 0;
        for (size_t i = 0; i < x->n_groups; i++) {
                if (x->groups[i]->sums.processes == 0)
                        group_free(x->groups[i]);
                else
                        x->groups[n++] = x->groups[i];
        }
        x->n_groups = n;
        x->n_empty = 0;
        strmap_done(&x->map);
        x->map = TAKE_STRUCT(map);
        return 1;
}

static int index_join(SavingsIndex *x, Process *p) {
        SavingsIndexGroup *g = NULL;
        size_t at;
        int r;

        if (!p->cgroup)
                g = x->unknown;
        else if (strmap_get(&x->map, p->cgroup, &at))
                g = x->groups[at];
        if (!g) {
                g = group_new(p);
                if (!g)
                        return -ENOMEM;
                if (!p->cgroup)
                        x->unknown = g;
                else {
                        if (greedy_realloc((void **) &x->groups, &x->n_alloc, x->n_groups + 1, sizeof *x->groups,
                                           64) < 0 ||
                            (r = strmap_put(&x->map, g->sums.cgroup, x->n_groups)) < 0) {
                                group_free(g);
                                return -ENOMEM;
                        }
                        x->groups[x->n_groups++] = g;
                }
        } else if (g->sums.processes == 0 && g != x->unknown)
                x->n_empty--;
        g->sums.processes++;
        p->index.savings_group = g;
        p->index.savings_pages = 0;
        p->index.savings_profit = 0;
        return 0;
}

void savings_index_remove(SavingsIndex *x, Process *p) {
        SavingsIndexGroup *g = p->index.savings_group;
        if (!g)
                return;
        g->sums.processes--;
        g->sums.merging_pages -= p->index.savings_pages;
        g->sums.profit_bytes -= p->index.savings_profit;
        if (g->sums.processes == 0 && g != x->unknown)
                x->n_empty++;
        p->index.savings_group = NULL;
        p->index.savings_pages = 0;
        p->index.savings_profit = 0;
}

int savings_index_update(SavingsIndex *x, Process *p) {
        int r;

        /* As savings_by_cgroup(): kernel threads have no mm and no group. */
        if (p->kthread) {
                savings_index_remove(x, p);
                return 0;
        }
        if (!p->index.savings_group || !group_is(p->index.savings_group, p->cgroup)) {
                savings_index_remove(x, p);
                r = index_join(x, p);
                if (r < 0)
                        return r;
        }
        SavingsIndexGroup *g = p->index.savings_group;
        g->sums.merging_pages += p->ksm_merging_pages - p->index.savings_pages;
        g->sums.profit_bytes += process_profit_bytes(p) - p->index.savings_profit;
        p->index.savings_pages = p->ksm_merging_pages;
        p->index.savings_profit = process_profit_bytes(p);
        (void) index_compact(x); /* a failure keeps the empty groups until the next try */
        return 0;
}

int savings_index_table(const SavingsIndex *x, SavingsTable *ret) {
        SavingsTable s = {};

        s.items = calloc(x->n_groups - x->n_empty + 2, sizeof *s.items);
        if (!s.items)
                return -ENOMEM;
        for (size_t i = 0; i <= x->n_groups; i++) {
                const SavingsIndexGroup *g = i < x->n_groups ? x->groups[i] : x->unknown;
                if (!g || g->sums.processes == 0)
                        continue;
                CgroupSavings *c = &s.items[s.n];
                *c = g->sums;
                if (g->sums.cgroup && !(c->cgroup = strdup(g->sums.cgroup))) {
                        savings_table_done(&s);
                        return -ENOMEM;
                }
                s.n++;
        }
        qsort(s.items, s.n, sizeof *s.items, compare_cgroups);
        *ret = s;
        return 0;
}

void savings_index_done(SavingsIndex *x) {
        for (size_t i = 0; i < x->n_groups; i++)
                group_free(x->groups[i]);
        group_free(x->unknown);
        free(x->groups);
        strmap_done(&x->map);
        *x = (SavingsIndex) {};
}
