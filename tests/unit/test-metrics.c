/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Savings per process, per cgroup, per VM and per unit from a hand-built
 * process table, and the Prometheus file made from them, with hostile VM
 * names: labels by names that outlive a restart (no machined run id), the
 * cap on series, counters as counters; when promtool is installed
 * ($PROMTOOL) the file must pass `promtool check metrics`. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "decisions.h"
#include "metrics.h"
#include "savings.h"
#include "util.h"

static Process *add(ProcessTable *t, int pid, const char *cgroup, const char *unit, const char *vm, uint64_t pages,
                    int64_t profit, bool kthread) {
        Process *p;
        bool created;
        assert_int_equal(process_table_ensure(t, pid, &p, &created), 0);
        assert_true(created);
        snprintf(p->comm, sizeof p->comm, "p%d", pid);
        p->cgroup = cgroup ? strdup(cgroup) : NULL;
        p->unit = unit ? strdup(unit) : NULL;
        p->vm_name = vm ? strdup(vm) : NULL;
        p->ksm_merging_pages = pages;
        p->ksm_stat_valid = profit != 0;
        p->ksm_stat.process_profit = profit;
        p->kthread = kthread;
        return p;
}

static ProcessTable *fleet(void) {
        ProcessTable *t;
        assert_int_equal(process_table_new(&t), 0);
        add(t, 10, "machine.slice/machine-qemu\\x2d1\\x2dweb01.scope/libvirt/emulator", "machine-qemu\\x2d1\\x2dweb01.scope",
            "web01", 1000, 3000000, false);
        add(t, 11, "machine.slice/machine-qemu\\x2d1\\x2dweb01.scope/libvirt/emulator", "machine-qemu\\x2d1\\x2dweb01.scope",
            "web01", 500, 1000000, false);
        add(t, 12, "machine.slice/machine-qemu\\x2d1\\x2dweb01.scope/libvirt/vcpu0", "machine-qemu\\x2d1\\x2dweb01.scope",
            "web01", 100, 0, false);
        add(t, 20, "system.slice/app.service", "app.service", NULL, 4000, 0, false);
        add(t, 21, "system.slice/app.service/worker", "app.service", NULL, 10, 0, false);
        add(t, 30, "machine.slice/machine-qemu\\x2d2\\x2dodd.scope", "machine-qemu\\x2d2\\x2dodd.scope",
            "\"quoted\" back\\slash\nnewline \xff\xfe bad utf8 \xc3\xa9t\xc3\xa9", 7, 0, false);
        add(t, 31, "system.slice/idle.service", "idle.service", NULL, 0, 0, false);
        add(t, 40, "", NULL, NULL, 0, 0, false);
        add(t, 41, "user.slice", NULL, NULL, 3, 0, false);
        add(t, 2, "", NULL, NULL, 99999, 0, true); /* a kernel thread: never counted */
        return t;
}

static void test_sorted_processes(void **state) {
        _cleanup_(process_table_freep) ProcessTable *t = fleet();
        _cleanup_free_ const Process **list = NULL;
        static const int want[] = { 20, 10, 11, 12, 21, 30, 41, 31, 40 };
        size_t n;

        assert_int_equal(savings_sorted_processes(t, &list, &n), 0);
        assert_int_equal(n, ELEMENTSOF(want));
        for (size_t i = 0; i < n; i++)
                assert_int_equal(list[i]->pid, want[i]);
}

static void test_by_cgroup(void **state) {
        _cleanup_(process_table_freep) ProcessTable *t = fleet();
        _cleanup_(savings_table_done) SavingsTable s = {};

        assert_int_equal(savings_by_cgroup(t, &s), 0);
        assert_int_equal(s.n, 8);
        assert_string_equal(s.items[0].cgroup, "system.slice/app.service");
        assert_int_equal(s.items[0].merging_pages, 4000);
        assert_string_equal(s.items[1].vm_name, "web01");
        assert_int_equal(s.items[1].processes, 2);
        assert_int_equal(s.items[1].merging_pages, 1500);
        assert_int_equal(s.items[1].profit_bytes, 4000000);
        assert_int_equal(s.items[4].merging_pages, 7);
        assert_string_equal(s.items[6].cgroup, "");
        assert_int_equal(s.items[6].processes, 1); /* the kernel thread is not in it */
}

/* A dumpable process of uid u (all three uids), its gids all g. */
static ProcessOwner owned(uid_t u, gid_t g) {
        return (ProcessOwner) { .uid = u, .euid = u, .suid = u, .gid = g, .egid = g, .sgid = g, .dumpable = 1 };
}

static bool visible(ProcessOwner o, uid_t viewer) {
        return process_owner_visible_to(&o, viewer);
}

/* What callers see: a process's details go to root and to a viewer that
 * is its real, effective and saved uid, when it is dumpable and its gids
 * agree (the kernel's ptrace-read rule); nobody else, and never to an
 * unknown viewer. */
static void test_visibility(void **state) {
        ProcessOwner o = owned(1000, 1000);
        assert_true(visible(o, 0));
        assert_true(visible(o, 1000));
        assert_false(visible(o, 1001));
        o.euid = 0; /* a setuid program the user started */
        assert_false(visible(o, 1000));
        assert_true(visible(o, 0));
        o = owned(1000, 1000), o.uid = 0; /* root's, running as the user */
        assert_false(visible(o, 1000));
        o = owned(1000, 1000), o.suid = 0; /* dropped to the user's uid, root kept as the saved one */
        assert_false(visible(o, 1000));
        o = owned(1000, 1000), o.dumpable = 0; /* PR_SET_DUMPABLE 0, or after a credential change */
        assert_false(visible(o, 1000));
        assert_true(visible(o, 0));
        o.dumpable = -1; /* unknown: as not dumpable */
        assert_false(visible(o, 1000));
        o = owned(1000, 1000), o.egid = 5; /* a setgid program: no caller's one gid is all of them */
        assert_false(visible(o, 1000));
        o = owned(1000, 1000), o.sgid = 5;
        assert_false(visible(o, 1000));
        assert_false(visible(owned(0, 0), (uid_t) -1));
        assert_false(visible(owned((uid_t) -1, (gid_t) -1), (uid_t) -1));

        /* A Process's owner is read from its identity (uids, gids, dumpable). */
        Process p = { .uid = 1000, .euid = 1000,
                      .identity = { .uid = { 1000, 1000, 1000, 1000 }, .gid = { 7, 7, 7, 7 }, .dumpable = 1 } };
        assert_true(process_visible_to(&p, 1000));
        p.identity.uid[2] = 0;
        assert_false(process_visible_to(&p, 1000));
        p.identity.uid[2] = 1000, p.identity.dumpable = 0;
        assert_false(process_visible_to(&p, 1000));
}

/* ListCgroups for a user: the cgroups of its own processes, summed over
 * those only; root's, the whole table. */
static void test_by_cgroup_visible(void **state) {
        _cleanup_(process_table_freep) ProcessTable *t = fleet();
        _cleanup_(savings_table_done) SavingsTable all = {}, mine = {}, none = {};
        Process *p;

        /* web01's emulator thread group 11 and the app's worker are uid 1000's. */
        PROCESS_TABLE_FOREACH(p, t, i) {
                p->uid = p->euid = p->identity.uid[2] = (p->pid == 11 || p->pid == 21) ? 1000 : 0;
                p->identity.dumpable = 1;
        }
        assert_int_equal(savings_by_cgroup_visible(t, 0, &all), 0);
        assert_int_equal(all.n, 8);
        assert_int_equal(savings_by_cgroup_visible(t, 1000, &mine), 0);
        assert_int_equal(mine.n, 2);
        assert_string_equal(mine.items[0].cgroup, "machine.slice/machine-qemu\\x2d1\\x2dweb01.scope/libvirt/emulator");
        assert_int_equal(mine.items[0].processes, 1);
        assert_int_equal(mine.items[0].merging_pages, 500);     /* not pid 10's 1000 */
        assert_int_equal(mine.items[0].profit_bytes, 1000000);
        assert_string_equal(mine.items[1].cgroup, "system.slice/app.service/worker");
        assert_int_equal(savings_by_cgroup_visible(t, 1001, &none), 0);
        assert_int_equal(none.n, 0);
}

/* LastDecisions: a decision about a process keeps its owner, recorded or
 * looked up once right after; one whose process is gone is root's. */
static bool pid8_reused = false;

static bool owner_of(const void *userdata, int pid, ProcessOwner *ret) {
        if (pid != 7 && !(pid == 8 && pid8_reused))
                return false;
        *ret = owned(1000, 1000);
        return true;
}

static void test_decision_visibility(void **state) {
        DecisionLog l = {};
        Process p = { .pid = 5, .uid = 1000, .euid = 1000,
                      .identity = { .uid = { 1000, 1000, 1000, 1000 }, .gid = { 1000, 1000, 1000, 1000 },
                                    .dumpable = 1 } };

        decision_log_add(&l, "tuning", "1.0 GiB newly mergeable");
        decision_log_add_about(&l, DECISION_SUBJECT_PROCESS(&p), "policy", "pid 5 (a): merge");
        decision_log_add_about(&l, DECISION_SUBJECT_PID(7), "exclude", "excluding pid 7 (b)");
        decision_log_add_about(&l, DECISION_SUBJECT_PID(8), "exclude", "excluding pid 8 (gone)");
        decision_log_add_about(&l, (DecisionSubject) { .pid = 9 }, "merge", "pid 9 (reused)");
        decision_log_resolve_owners(&l, owner_of, NULL);

        const Decision *reused = decision_log_get(&l, 0), *gone = decision_log_get(&l, 1),
                       *excluded = decision_log_get(&l, 2), *policy = decision_log_get(&l, 3),
                       *host = decision_log_get(&l, 4);
        assert_true(decision_visible_to(host, 1001));
        assert_true(decision_visible_to(host, (uid_t) -1));
        assert_true(decision_visible_to(policy, 1000));
        assert_false(decision_visible_to(policy, 1001));
        assert_true(decision_visible_to(excluded, 1000));
        assert_false(decision_visible_to(excluded, 1001));
        assert_false(decision_visible_to(gone, 1000));
        assert_false(decision_visible_to(reused, 1000));
        for (unsigned i = 0; i < 5; i++)
                assert_true(decision_visible_to(decision_log_get(&l, i), 0));

        /* Looked up once: a later process under pid 8 does not inherit it. */
        pid8_reused = true;
        decision_log_resolve_owners(&l, owner_of, NULL);
        assert_false(decision_visible_to(gone, 1000));
}

/* Per VM over all the VM's cgroups, per unit over the rest: each process once. */
static void test_by_vm_and_unit(void **state) {
        _cleanup_(process_table_freep) ProcessTable *t = fleet();
        _cleanup_(savings_table_done) SavingsTable s = {};
        _cleanup_(savings_groups_done) SavingsGroups vms = {}, units = {};

        assert_int_equal(savings_by_cgroup(t, &s), 0);
        assert_int_equal(savings_group(&s, SAVINGS_BY_VM, &vms), 0);
        assert_int_equal(vms.n, 2);
        assert_string_equal(vms.items[0].name, "web01");
        assert_int_equal(vms.items[0].processes, 3);
        assert_int_equal(vms.items[0].merging_pages, 1600);
        assert_int_equal(vms.items[0].profit_bytes, 4000000);
        assert_int_equal(vms.items[1].merging_pages, 7);

        assert_int_equal(savings_group(&s, SAVINGS_BY_UNIT, &units), 0);
        assert_int_equal(units.n, 3);
        assert_string_equal(units.items[0].name, "app.service");
        assert_int_equal(units.items[0].processes, 2);
        assert_int_equal(units.items[0].merging_pages, 4010);
        assert_null(units.items[1].name); /* user.slice and the root: in no unit */
        assert_int_equal(units.items[1].processes, 2);
        assert_int_equal(units.items[1].merging_pages, 3);
        assert_string_equal(units.items[2].name, "idle.service");
        for (size_t i = 0; i < units.n; i++)
                assert_false(units.items[i].name && strstr(units.items[i].name, "machine-"));
}

static void test_escape(void **state) {
        _cleanup_free_ char *a = metrics_escape_label("a\"b\\c\nd");
        _cleanup_free_ char *b = metrics_escape_label("\xff" "x" "\xc3\xa9" "\xed\xa0\x80");
        _cleanup_free_ char *c = metrics_escape_label(NULL);
        assert_string_equal(a, "a\\\"b\\\\c\\nd");
        assert_string_equal(b, "\xef\xbf\xbd" "x" "\xc3\xa9" "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
        assert_string_equal(c, "");

        /* The same rule for strings sent over the bus. */
        _cleanup_free_ char *d = utf8_make_valid("ok \xc3\xa9 \xff \xe2\x82 \xf0\x9f\x98\x80");
        assert_string_equal(d, "ok \xc3\xa9 \xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd \xf0\x9f\x98\x80");
        assert_true(utf8_is_valid(d));
        assert_false(utf8_is_valid("\xc0\xaf")); /* overlong '/' */
        assert_true(utf8_is_valid(""));
}

static const char *const modes[] = { "auto", "tune-only", "observe" };

/* The metrics file of fleet(), with at most max VMs and units of their own. */
static char *format_fleet(size_t max) {
        _cleanup_(process_table_freep) ProcessTable *t = fleet();
        _cleanup_(savings_table_done) SavingsTable s = {};
        Snapshot snap = { .ksm_present = true, .ksmd_present = true };
        static const MetricsActionCount actions[] = {
                { "enable", "inject", "done", 3 },
                { "disable", "none", "gone", 1 },
        };
        char *text = NULL;

        snap.ksm.value[KSM_PAGES_SHARING] = 2500;
        snap.ksm.value[KSM_GENERAL_PROFIT] = (uint64_t) INT64_C(-4096);
        snap.ksm.value[KSM_SLEEP_MILLISECS] = 20;
        snap.ksm.present_mask = (UINT64_C(1) << KSM_PAGES_SHARING) | (UINT64_C(1) << KSM_GENERAL_PROFIT) |
                                (UINT64_C(1) << KSM_SLEEP_MILLISECS);
        snap.ksmd.cpu_ns = 1500000000;
        snap.ksmd_waits.samples = 100;
        snap.ksmd_waits.by_wait[KSMD_BLOCKED_MMAP_LOCK] = 25;
        assert_int_equal(savings_by_cgroup(t, &s), 0);
        MetricsInput in = {
                .snapshot = &snap,
                .page_size = 4096,
                .version = "0.1.0",
                .kernel_release = "6.18.0-\"test\"",
                .modes = modes,
                .n_modes = ELEMENTSOF(modes),
                .mode = 1,
                .ksmd_cpu_ratio = 0.125,
                .ksmd_cpu_budget_ratio = 0.1,
                /* since start: more than this tick's snapshot */
                .ksmd_samples = { .samples = 1000, .by_wait = { [KSMD_RUNNING] = 500, [KSMD_SLEEPING] = 300,
                                                               [KSMD_BLOCKED_MMAP_LOCK] = 200 } },
                .actions = actions,
                .n_actions = ELEMENTSOF(actions),
                .managed_processes = 3,
                .decisions_total = 9,
                .ticks = 12,
                .now_realtime_usec = 1700000000 * USEC_PER_SEC,
                .cgroups = &s,
                .max_group_series = max,
        };
        assert_int_equal(metrics_format(&in, &text), 0);
        return text;
}

static bool has_line(const char *text, const char *line) {
        size_t n = strlen(line);
        for (const char *p = text; (p = strstr(p, line)); p++)
                if ((p == text || p[-1] == '\n') && p[n] == '\n')
                        return true;
        return false;
}

/* Every "# TYPE" is a counter exactly when its name ends in _total, and
 * every sample line belongs to the family announced last. */
static void assert_families(const char *text) {
        char family[128] = "";
        for (const char *l = text; *l;) {
                const char *eol = strchr(l, '\n');
                assert_non_null(eol);
                char name[128], type[32];
                if (sscanf(l, "# TYPE %127s %31s", name, type) == 2) {
                        bool total = endswith(name, "_total");
                        if (total != streq(type, "counter"))
                                fail_msg("%s is a %s", name, type);
                        strscpy(family, sizeof family, name);
                } else if (*l != '#') {
                        size_t k = strlen(family);
                        if (k == 0 || strncmp(l, family, k) != 0 || (l[k] != ' ' && l[k] != '{'))
                                fail_msg("%.*s outside its family %s", (int) (eol - l), l, family);
                }
                l = eol + 1;
        }
}

/* Whether the manual page names the family: the name, then no more of a name. */
static bool page_names(const char *page, const char *name) {
        size_t n = strlen(name);
        for (const char *p = page; (p = strstr(p, name)); p++)
                if (p[n] == 0 || !strchr("abcdefghijklmnopqrstuvwxyz0123456789_", p[n]))
                        return true;
        return false;
}

/* Every family the file has is listed in ksmtuned2.metrics(7). */
static void assert_documented(const char *text) {
        const char *src = getenv("SOURCE_ROOT");
        char path[1024], page[1 << 16];
        FILE *f;

        assert_non_null(src);
        snprintf(path, sizeof path, "%s/man/ksmtuned2.metrics.7", src);
        f = fopen(path, "re");
        assert_non_null(f);
        size_t n = fread(page, 1, sizeof page - 1, f);
        fclose(f);
        assert_true(n > 0 && n < sizeof page - 1);
        page[n] = 0;
        for (const char *l = text; (l = strstr(l, "# TYPE ")); l++) {
                char name[128];
                assert_int_equal(sscanf(l, "# TYPE %127s", name), 1);
                if (!page_names(page, name))
                        fail_msg("%s does not list %s", path, name);
        }
}

static void test_format(void **state) {
        _cleanup_free_ char *text = format_fleet(METRICS_MAX_GROUP_SERIES);

        assert_true(has_line(text, "ksmtuned2_info{version=\"0.1.0\",kernel=\"6.18.0-\\\"test\\\"\"} 1"));
        /* the mode as a state set, not a label that changes */
        assert_true(has_line(text, "ksmtuned2_mode{mode=\"auto\"} 0"));
        assert_true(has_line(text, "ksmtuned2_mode{mode=\"tune-only\"} 1"));
        assert_true(has_line(text, "ksmtuned2_mode{mode=\"observe\"} 0"));
        assert_true(has_line(text, "ksmtuned2_saved_bytes 10240000"));
        assert_true(has_line(text, "ksmtuned2_general_profit_bytes -4096"));
        assert_true(has_line(text, "ksmtuned2_ksm_sleep_seconds 0.020"));
        assert_true(has_line(text, "ksmtuned2_ksmd_cpu_seconds_total 1.500000"));
        assert_true(has_line(text, "ksmtuned2_ksmd_cpu_budget_ratio 0.100000"));
        /* the latest tick's ratio, and the counters since start beside it */
        assert_true(has_line(text, "ksmtuned2_ksmd_blocked_ratio{on=\"mmap_lock\"} 0.250000"));
        assert_true(has_line(text, "ksmtuned2_ksmd_samples_total{state=\"blocked-mmap-lock\"} 200"));
        assert_true(has_line(text, "ksmtuned2_ksmd_samples_total{state=\"running\"} 500"));
        assert_true(has_line(text, "ksmtuned2_ksmd_samples_total{state=\"blocked-other\"} 0"));
        assert_true(has_line(text, "ksmtuned2_actions_total{action=\"enable\",method=\"inject\",outcome=\"done\"} 3"));
        assert_true(has_line(text, "ksmtuned2_actions_total{action=\"disable\",method=\"none\",outcome=\"gone\"} 1"));
        assert_true(has_line(text, "ksmtuned2_ticks_total 12"));

        /* per VM by its name, over the VM's emulator and vcpu cgroups */
        assert_true(has_line(text, "ksmtuned2_vm_merging_bytes{vm=\"web01\"} 6553600"));
        assert_true(has_line(text, "ksmtuned2_vm_profit_bytes{vm=\"web01\"} 4000000"));
        assert_true(has_line(text, "ksmtuned2_vm_processes{vm=\"web01\"} 3"));
        assert_true(has_line(text, "ksmtuned2_vm_merging_bytes{vm=\"\\\"quoted\\\" back\\\\slash\\nnewline "
                                   "\xef\xbf\xbd\xef\xbf\xbd bad utf8 \xc3\xa9t\xc3\xa9\"} 28672"));
        /* per unit by its name, the unit's cgroups together */
        assert_true(has_line(text, "ksmtuned2_unit_merging_bytes{unit=\"app.service\"} 16424960"));
        assert_true(has_line(text, "ksmtuned2_unit_processes{unit=\"app.service\"} 2"));
        assert_true(has_line(text, "ksmtuned2_unit_merging_bytes{unit=\"" METRICS_NO_UNIT_LABEL "\"} 12288"));
        /* a unit that saves nothing has no series; nothing is over the cap */
        assert_null(strstr(text, "idle.service"));
        assert_null(strstr(text, METRICS_OTHER_LABEL));
        /* no label carries a cgroup path or machined's run id */
        assert_null(strstr(text, "cgroup"));
        assert_null(strstr(text, "machine-"));
        assert_null(strstr(text, "x2d"));
        assert_families(text);
        assert_documented(text);

        const char *promtool = getenv("PROMTOOL");
        if (isempty(promtool)) {
                printf("promtool not installed: format not checked by it\n");
                return;
        }
        char path[] = "/tmp/test-metrics.XXXXXX", cmd[512];
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        close(fd);
        /* check metrics lints too: a counter without _total, a unit in the
         * wrong place, HELP missing */
        snprintf(cmd, sizeof cmd, "'%s' check metrics < '%s'", promtool, path);
        int status = system(cmd);
        unlink(path);
        assert_int_equal(status, 0);
}

/* Beyond the cap, the smaller VMs and units are summed under "(other)". */
static void test_format_cap(void **state) {
        _cleanup_free_ char *text = format_fleet(1);

        assert_true(has_line(text, "ksmtuned2_vm_merging_bytes{vm=\"web01\"} 6553600"));
        assert_true(has_line(text, "ksmtuned2_vm_merging_bytes{vm=\"" METRICS_OTHER_LABEL "\"} 28672"));
        assert_true(has_line(text, "ksmtuned2_vm_processes{vm=\"" METRICS_OTHER_LABEL "\"} 1"));
        assert_null(strstr(text, "quoted"));
        assert_true(has_line(text, "ksmtuned2_unit_merging_bytes{unit=\"app.service\"} 16424960"));
        /* idle units count neither on their own nor in the rest */
        assert_true(has_line(text, "ksmtuned2_unit_merging_bytes{unit=\"" METRICS_OTHER_LABEL "\"} 12288"));
        assert_true(has_line(text, "ksmtuned2_unit_processes{unit=\"" METRICS_OTHER_LABEL "\"} 2"));
        assert_null(strstr(text, METRICS_NO_UNIT_LABEL));
        assert_families(text);
}

/* The controller's phase as a state set, one sample per phase, and its
 * allowance; without a tuning stage, neither. */
static void test_controller(void **state) {
        _cleanup_free_ char *text = NULL, *none = NULL;
        Snapshot snap = { .ksm_present = true };
        Controller c = { .mode = TUNE_MODE_DECAY, .allowance_nsec = -1.25e9 };
        MetricsInput in = { .snapshot = &snap, .page_size = 4096, .version = "0.1.0", .controller = &c };

        assert_int_equal(metrics_format(&in, &text), 0);
        assert_non_null(strstr(text, "\n# TYPE ksmtuned2_controller_phase gauge\n"
                                     "ksmtuned2_controller_phase{phase=\"maintain\"} 0\n"
                                     "ksmtuned2_controller_phase{phase=\"burst\"} 0\n"
                                     "ksmtuned2_controller_phase{phase=\"decay\"} 1\n"
                                     "ksmtuned2_controller_phase{phase=\"idle\"} 0\n"));
        assert_non_null(strstr(text, "\nksmtuned2_controller_burst_allowance_seconds -1.250\n"));

        in.controller = NULL;
        assert_int_equal(metrics_format(&in, &none), 0);
        assert_null(strstr(none, "ksmtuned2_controller_"));
}

static void test_kernel_fixes(void **state) {
        _cleanup_free_ char *text = NULL;
        Snapshot snap = { .ksm_present = true };
        KernelFixes k;
        SmartScanWorkaround w = { .count = 2, .cpu_nsec = 31500000 };

        kernel_fixes_init(&k);
        k.fix[KERNEL_FIX_RANGE_WALK].state = FIX_NO;
        k.ksmd_trylock_failures = 7;
        MetricsInput in = { .snapshot = &snap, .page_size = 4096, .version = "0.1.0", .fixes = &k, .smart_scan = &w };
        assert_int_equal(metrics_format(&in, &text), 0);
        assert_true(has_line(text, "ksmtuned2_kernel_fix{fix=\"range-walk\",seed=\"003\",state=\"no\"} 1"));
        assert_true(has_line(text, "ksmtuned2_kernel_fix{fix=\"range-walk\",seed=\"003\",state=\"yes\"} 0"));
        assert_true(has_line(text, "ksmtuned2_kernel_fix{fix=\"trylock\",seed=\"000\",state=\"unknown\"} 1"));
        assert_true(has_line(text, "ksmtuned2_ksmd_trylock_failures_total 7"));
        assert_true(has_line(text, "ksmtuned2_smart_scan_workaround_scans_total 2"));
        assert_true(has_line(text, "ksmtuned2_smart_scan_workaround_ksmd_cpu_seconds_total 0.031500"));
        assert_documented(text);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kernel_fixes),
                cmocka_unit_test(test_sorted_processes),
                cmocka_unit_test(test_by_cgroup),
                cmocka_unit_test(test_visibility),
                cmocka_unit_test(test_by_cgroup_visible),
                cmocka_unit_test(test_decision_visibility),
                cmocka_unit_test(test_by_vm_and_unit),
                cmocka_unit_test(test_escape),
                cmocka_unit_test(test_format),
                cmocka_unit_test(test_controller),
                cmocka_unit_test(test_format_cap),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
