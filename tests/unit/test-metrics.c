/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Savings per process and per cgroup from a hand-built process table, and
 * the Prometheus file made from them, with hostile cgroup names; when
 * promtool is installed ($PROMTOOL) the file must pass `promtool check
 * metrics`. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

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
        add(t, 20, "system.slice/app.service", "app.service", NULL, 4000, 0, false);
        add(t, 30, "odd/\"quoted\" back\\slash\nnewline/\xff\xfe bad utf8/\xc3\xa9t\xc3\xa9", NULL, NULL, 7, 0, false);
        add(t, 40, "", NULL, NULL, 0, 0, false);
        add(t, 2, "", NULL, NULL, 99999, 0, true); /* a kernel thread: never counted */
        return t;
}

static void test_sorted_processes(void **state) {
        _cleanup_(process_table_freep) ProcessTable *t = fleet();
        _cleanup_free_ const Process **list = NULL;
        size_t n;

        assert_int_equal(savings_sorted_processes(t, &list, &n), 0);
        assert_int_equal(n, 5);
        assert_int_equal(list[0]->pid, 20);
        assert_int_equal(list[1]->pid, 10);
        assert_int_equal(list[2]->pid, 11);
        assert_int_equal(list[3]->pid, 30);
        assert_int_equal(list[4]->pid, 40);
}

static void test_by_cgroup(void **state) {
        _cleanup_(process_table_freep) ProcessTable *t = fleet();
        _cleanup_(savings_table_done) SavingsTable s = {};

        assert_int_equal(savings_by_cgroup(t, &s), 0);
        assert_int_equal(s.n, 4);
        assert_string_equal(s.items[0].cgroup, "system.slice/app.service");
        assert_int_equal(s.items[0].merging_pages, 4000);
        assert_string_equal(s.items[1].vm_name, "web01");
        assert_int_equal(s.items[1].processes, 2);
        assert_int_equal(s.items[1].merging_pages, 1500);
        assert_int_equal(s.items[1].profit_bytes, 4000000);
        assert_int_equal(s.items[2].merging_pages, 7);
        assert_string_equal(s.items[3].cgroup, "");
        assert_int_equal(s.items[3].processes, 1); /* the kernel thread is not in it */
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

static void test_format(void **state) {
        _cleanup_(process_table_freep) ProcessTable *t = fleet();
        _cleanup_(savings_table_done) SavingsTable s = {};
        _cleanup_free_ char *text = NULL;
        Snapshot snap = { .ksm_present = true, .ksmd_present = true };

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
                .mode = "auto",
                .ksmd_cpu_ratio = 0.125,
                .managed_processes = 3,
                .decisions_total = 9,
                .ticks = 12,
                .now_realtime_usec = 1700000000 * USEC_PER_SEC,
                .cgroups = &s,
        };
        assert_int_equal(metrics_format(&in, &text), 0);

        assert_non_null(strstr(text, "\nksmtuned2_saved_bytes 10240000\n"));
        assert_non_null(strstr(text, "\nksmtuned2_general_profit_bytes -4096\n"));
        assert_non_null(strstr(text, "\nksmtuned2_ksm_sleep_seconds 0.020\n"));
        assert_non_null(strstr(text, "\nksmtuned2_ksmd_cpu_seconds_total 1.500000\n"));
        assert_non_null(strstr(text, "\nksmtuned2_ksmd_blocked_ratio{on=\"mmap_lock\"} 0.250000\n"));
        assert_non_null(strstr(text, "kernel=\"6.18.0-\\\"test\\\"\""));
        assert_non_null(strstr(text, "\nksmtuned2_cgroup_merging_bytes{cgroup=\"/machine.slice/machine-qemu\\\\x2d1\\\\x2dweb01.scope"
                                     "/libvirt/emulator\",unit=\"machine-qemu\\\\x2d1\\\\x2dweb01.scope\",vm=\"web01\"} 6144000\n"));
        assert_non_null(strstr(text, "\nksmtuned2_cgroup_processes{cgroup=\"/system.slice/app.service\",unit=\"app.service\",vm=\"\"} 1\n"));
        assert_non_null(strstr(text, "cgroup=\"/odd/\\\"quoted\\\" back\\\\slash\\nnewline/\xef\xbf\xbd\xef\xbf\xbd bad utf8/\xc3\xa9t\xc3\xa9\""));
        /* the root cgroup saves nothing and is no VM: left out */
        assert_null(strstr(text, "cgroup=\"/\","));
        /* every sample line belongs to a family announced just before */
        assert_null(strstr(text, "\n\n"));

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
        snprintf(cmd, sizeof cmd, "'%s' check metrics < '%s'", promtool, path);
        int status = system(cmd);
        unlink(path);
        assert_int_equal(status, 0);
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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sorted_processes),
                cmocka_unit_test(test_by_cgroup),
                cmocka_unit_test(test_escape),
                cmocka_unit_test(test_format),
                cmocka_unit_test(test_controller),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
