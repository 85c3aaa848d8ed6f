/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Grouping 10,000 processes into 1,000 cgroups costs a number of string
 * comparisons linear in the processes. Every strcmp() in the test binary
 * goes through __wrap_strcmp (linked with -Wl,--wrap=strcmp), which counts
 * them: the grouping used to compare each process's cgroup with every
 * cgroup seen so far (about 5,000,000 comparisons here, 100 times the
 * 1,000-process figure instead of 10 times); it now hashes, one comparison
 * per process plus the sort's ties. Counting operations, not time: the
 * result is the same on a loaded machine. Also: the cap on replies
 * ("(other)" sums what is left out), the string map itself, and names an
 * attacker chooses (a long shared prefix, one byte apart). */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "savings.h"
#include "strmap.h"
#include "util.h"

int __real_strcmp(const char *a, const char *b);
int __wrap_strcmp(const char *a, const char *b);
static uint64_t n_strcmp;
int __wrap_strcmp(const char *a, const char *b) {
        n_strcmp++;
        return __real_strcmp(a, b);
}

/* n processes in n / per cgroups, named as a delegated subtree names them. */
static ProcessTable *tree(unsigned n, unsigned per) {
        ProcessTable *t;
        assert_int_equal(process_table_new(&t), 0);
        for (unsigned i = 0; i < n; i++) {
                Process *p;
                bool created;
                char cg[160];
                assert_int_equal(process_table_ensure(t, (int) i + 100, &p, &created), 0);
                snprintf(cg, sizeof cg, "user.slice/user-1000.slice/user@1000.service/app.slice/worker-%05u.scope",
                         i / per);
                p->cgroup = strdup(cg);
                p->unit = strdup(cg + strlen("user.slice/user-1000.slice/user@1000.service/app.slice/"));
                assert_non_null(p->cgroup);
                p->ksm_merging_pages = (i / per) % 7;
        }
        return t;
}

static uint64_t group_cost(unsigned n, unsigned per, uint64_t *ret_probes) {
        _cleanup_(process_table_freep) ProcessTable *t = tree(n, per);
        _cleanup_(savings_table_done) SavingsTable s = {};
        n_strcmp = 0;
        assert_int_equal(savings_by_cgroup_counted(t, &s, ret_probes), 0);
        uint64_t cost = n_strcmp;
        assert_int_equal(s.n, n / per);
        unsigned total = 0;
        for (size_t i = 0; i < s.n; i++) {
                assert_int_equal(s.items[i].processes, per);
                total += s.items[i].processes;
                if (i > 0)
                        assert_true(s.items[i - 1].merging_pages >= s.items[i].merging_pages);
        }
        assert_int_equal(total, n);
        return cost;
}

static void test_linear(void **state) {
        uint64_t probes_small = 0, probes_big = 0;
        uint64_t small = group_cost(1000, 10, &probes_small);
        uint64_t big = group_cost(10000, 10, &probes_big);
        print_message("strcmp calls: %" PRIu64 " for 1,000 processes in 100 cgroups, %" PRIu64
                      " for 10,000 in 1,000 (x%.1f); hash probes %" PRIu64 " and %" PRIu64 "\n",
                      small, big, (double) big / (double) MAX(small, UINT64_C(1)), probes_small, probes_big);
        /* one per process, and the sort's ties (n log n over the cgroups) */
        assert_true(big <= 3 * 10000);
        assert_true(big <= 15 * small);
        assert_true(probes_big <= 3 * 10000);
}

static void test_group_linear(void **state) {
        _cleanup_(process_table_freep) ProcessTable *t = tree(10000, 10);
        _cleanup_(savings_table_done) SavingsTable s = {};
        _cleanup_(savings_groups_done) SavingsGroups g = {};
        assert_int_equal(savings_by_cgroup(t, &s), 0);
        n_strcmp = 0;
        assert_int_equal(savings_group(&s, SAVINGS_BY_UNIT, &g), 0);
        print_message("strcmp calls grouping 1,000 cgroups into 1,000 units: %" PRIu64 "\n", n_strcmp);
        assert_int_equal(g.n, 1000);
        assert_true(n_strcmp <= 3 * 10000);
}

static void test_truncate(void **state) {
        _cleanup_(process_table_freep) ProcessTable *t = tree(3000, 2);
        _cleanup_(savings_table_done) SavingsTable s = {};
        assert_int_equal(savings_by_cgroup(t, &s), 0);
        assert_int_equal(s.n, 1500);
        uint64_t pages = 0, pages_after = 0;
        for (size_t i = 0; i < s.n; i++)
                pages += s.items[i].merging_pages;
        uint64_t kept_last = s.items[SAVINGS_LIST_MAX - 2].merging_pages;
        assert_int_equal(savings_table_truncate(&s, SAVINGS_LIST_MAX), 1);
        assert_int_equal(s.n, SAVINGS_LIST_MAX);
        const CgroupSavings *o = &s.items[s.n - 1];
        assert_string_equal(o->cgroup, SAVINGS_OTHER_NAME);
        assert_null(o->unit);
        assert_int_equal(o->processes, (1500 - (SAVINGS_LIST_MAX - 1)) * 2);
        assert_int_equal(s.items[s.n - 2].merging_pages, kept_last);
        for (size_t i = 0; i < s.n; i++)
                pages_after += s.items[i].merging_pages;
        assert_int_equal(pages_after, pages);
        assert_int_equal(savings_table_truncate(&s, SAVINGS_LIST_MAX), 0);
}

static void test_sum_processes(void **state) {
        _cleanup_(process_table_freep) ProcessTable *t = tree(50, 5);
        _cleanup_free_ const Process **list = NULL;
        size_t n;
        SavingsGroup g;
        assert_int_equal(savings_sorted_processes(t, &list, &n), 0);
        assert_int_equal(n, 50);
        savings_sum_processes(list + 20, n - 20, &g);
        assert_string_equal(g.name, SAVINGS_OTHER_NAME);
        assert_int_equal(g.processes, 30);
        uint64_t pages = 0;
        for (size_t i = 20; i < n; i++)
                pages += list[i]->ksm_merging_pages;
        assert_int_equal(g.merging_pages, pages);
}

static void test_strmap(void **state) {
        _cleanup_(strmap_done) StrMap m = {};
        char keys[5000][24];
        size_t v;
        for (size_t i = 0; i < 5000; i++) {
                snprintf(keys[i], sizeof keys[i], "k%zu", i);
                assert_int_equal(strmap_put(&m, keys[i], i), 0);
        }
        assert_int_equal(m.n, 5000);
        for (size_t i = 0; i < 5000; i++) {
                assert_true(strmap_get(&m, keys[i], &v));
                assert_int_equal(v, i);
        }
        assert_false(strmap_get(&m, "k5000", &v));
        assert_false(strmap_get(&m, "", &v));
        assert_int_equal(strmap_put(&m, keys[7], 70), 0);
        assert_int_equal(m.n, 5000);
        assert_true(strmap_get(&m, "k7", &v));
        assert_int_equal(v, 70);
        /* a seed changes every hash */
        uint8_t a[16] = { 1 }, b[16] = { 2 };
        assert_true(siphash13("user.slice", 10, a) != siphash13("user.slice", 10, b));
        assert_true(siphash13("", 0, a) != siphash13("", 0, b));
}

/* Processes with no cgroup (unreadable) form one group of their own. */
static void test_no_cgroup(void **state) {
        _cleanup_(process_table_freep) ProcessTable *t = tree(10, 5);
        _cleanup_(savings_table_done) SavingsTable s = {};
        for (int pid = 200; pid < 203; pid++) {
                Process *p;
                bool created;
                assert_int_equal(process_table_ensure(t, pid, &p, &created), 0);
                p->ksm_merging_pages = 100;
        }
        assert_int_equal(savings_by_cgroup(t, &s), 0);
        assert_int_equal(s.n, 3);
        assert_null(s.items[0].cgroup);
        assert_int_equal(s.items[0].processes, 3);
}


/* The sums kept as processes change (SavingsIndex) equal the grouping of
 * the whole table after every step of a random history: processes come,
 * go, move between cgroups (some unknown, some in a VM), change their KSM
 * figures, start over under the same pid, become kernel threads; cgroups
 * empty out by the hundred, which makes the index drop them. */
static uint64_t rng_state = 88172645463325252ULL;
static uint64_t rng(void) {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        return rng_state;
}

static void place(Process *p, unsigned cg) {
        char name[64];
        free(p->cgroup), free(p->unit), free(p->vm_name);
        p->cgroup = p->unit = p->vm_name = NULL;
        if (cg == 0)
                return; /* unknown */
        snprintf(name, sizeof name, "machine.slice/g%u.scope", cg);
        p->cgroup = strdup(name);
        p->unit = strdup(name + strlen("machine.slice/"));
        if (cg % 5 == 0) {
                snprintf(name, sizeof name, "vm%u", cg);
                p->vm_name = strdup(name);
        }
}

static void assert_same_tables(const SavingsTable *a, const SavingsTable *b) {
        assert_int_equal(a->n, b->n);
        for (size_t i = 0; i < a->n; i++) {
                const CgroupSavings *x = &a->items[i], *y = &b->items[i];
                assert_string_equal(strempty(x->cgroup), strempty(y->cgroup));
                assert_true(!x->cgroup == !y->cgroup);
                assert_string_equal(strempty(x->unit), strempty(y->unit));
                assert_string_equal(strempty(x->vm_name), strempty(y->vm_name));
                assert_int_equal(x->processes, y->processes);
                assert_int_equal(x->merging_pages, y->merging_pages);
                assert_int_equal(x->profit_bytes, y->profit_bytes);
        }
}

static void test_index(void **state) {
        _cleanup_(process_table_freep) ProcessTable *t = NULL;
        _cleanup_(savings_index_done) SavingsIndex x = {};
        assert_int_equal(process_table_new(&t), 0);

        for (unsigned step = 0; step < 200; step++) {
                /* the cgroups in use drift, so that old ones empty out */
                unsigned base = step * 10;
                for (unsigned k = 0; k < 300; k++) {
                        int pid = (int) (rng() % 2000) + 1;
                        Process *p = process_table_get(t, pid);
                        unsigned op = (unsigned) (rng() % 10);
                        if (!p) {
                                bool created;
                                assert_int_equal(process_table_ensure(t, pid, &p, &created), 0);
                                place(p, rng() % 50 == 0 ? 0 : base + (unsigned) (rng() % 200) + 1);
                                p->kthread = rng() % 100 == 0;
                        } else if (op == 0) {
                                savings_index_remove(&x, p);
                                assert_true(process_table_remove(t, pid));
                                continue;
                        } else if (op == 1)
                                place(p, base + (unsigned) (rng() % 200) + 1);
                        else if (op == 2) {
                                /* a new incarnation: facts start over, the index state stays */
                                ProcessIndexState keep = p->index;
                                process_done(p);
                                p->pid = pid;
                                p->index = keep;
                                place(p, base + (unsigned) (rng() % 200) + 1);
                        } else if (op == 3)
                                p->kthread = !p->kthread;
                        p->ksm_merging_pages = rng() % 3 == 0 ? rng() % 1000 : 0;
                        p->ksm_stat_valid = rng() % 2;
                        p->ksm_stat.process_profit = (int64_t) (rng() % 100000) - 20000;
                        assert_int_equal(savings_index_update(&x, p), 0);
                }
                _cleanup_(savings_table_done) SavingsTable whole = {}, kept = {};
                assert_int_equal(savings_by_cgroup(t, &whole), 0);
                assert_int_equal(savings_index_table(&x, &kept), 0);
                assert_same_tables(&whole, &kept);
        }
        /* The emptied cgroups were dropped: what is left is at most twice
         * what is in use (and the 64 the index keeps before it bothers). */
        _cleanup_(savings_table_done) SavingsTable live = {};
        assert_int_equal(savings_index_table(&x, &live), 0);
        assert_true(x.n_groups <= 2 * live.n + 64);

        /* Everything removed: nothing left to report. */
        Process *p;
        PROCESS_TABLE_FOREACH(p, t, i) {
                savings_index_remove(&x, p);
                process_table_remove(t, p->pid);
        }
        _cleanup_(savings_table_done) SavingsTable none = {};
        assert_int_equal(savings_index_table(&x, &none), 0);
        assert_int_equal(none.n, 0);
}

/* The bounded list finds the same leading processes, in the same order,
 * as sorting everything and filtering by viewer, and leaves the same rest
 * to sum: many ties (the pid decides), two owners, kernel threads, sizes
 * around the cap. */
static void test_top_processes(void **state) {
        static const size_t sizes[] = { 0, 1, 5, 99, 100, 101, 3000 };
        for (size_t z = 0; z < ELEMENTSOF(sizes); z++) {
                _cleanup_(process_table_freep) ProcessTable *t = NULL;
                assert_int_equal(process_table_new(&t), 0);
                for (size_t i = 0; i < sizes[z]; i++) {
                        Process *p;
                        bool created;
                        assert_int_equal(process_table_ensure(t, (int) (rng() % 100000) + 1, &p, &created), 0);
                        p->uid = p->euid = p->identity.uid[2] = rng() % 3 == 0 ? 1000 : 0;
                        p->identity.dumpable = 1; /* gids all 0: equal, as visibility wants */
                        p->kthread = rng() % 50 == 0;
                        p->ksm_merging_pages = rng() % 4 == 0 ? rng() % 8 : 0;
                        p->ksm_stat_valid = true;
                        p->ksm_stat.process_profit = (int64_t) (rng() % 3);
                }
                for (uid_t viewer = 0; viewer <= 1000; viewer += 1000) {
                        _cleanup_free_ const Process **all = NULL, **top = NULL;
                        size_t n_all, n, shown, k = 0;
                        assert_int_equal(savings_sorted_processes(t, &all, &n_all), 0);
                        for (size_t i = 0; i < n_all; i++)
                                if (process_visible_to(all[i], viewer))
                                        all[k++] = all[i];
                        assert_int_equal(savings_top_processes(t, viewer, 100, &top, &n, &shown), 0);
                        assert_int_equal(n, k);
                        if (sizes[z] == 3000)
                                assert_true(k > 100); /* the viewer's own are many, past the cap */
                        assert_int_equal(shown, k > 100 ? 99 : k);
                        for (size_t i = 0; i < shown; i++)
                                assert_int_equal(top[i]->pid, all[i]->pid);
                        SavingsGroup a, b;
                        savings_sum_processes(all + shown, k - shown, &a);
                        savings_sum_processes(top + shown, n - shown, &b);
                        assert_int_equal(a.processes, b.processes);
                        assert_int_equal(a.merging_pages, b.merging_pages);
                        assert_int_equal(a.profit_bytes, b.profit_bytes);
                }
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_linear),       cmocka_unit_test(test_group_linear),
                cmocka_unit_test(test_truncate),     cmocka_unit_test(test_sum_processes),
                cmocka_unit_test(test_strmap),       cmocka_unit_test(test_no_cgroup),
                cmocka_unit_test(test_index),        cmocka_unit_test(test_top_processes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
