/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "fake-tree.h"
#include "process-read.h"
#include "root.h"
#include "util.h"

static void test_table_grow_remove_iterate(void **state) {
        _cleanup_(process_table_freep) ProcessTable *t = NULL;
        Process *p;
        bool created;

        assert_int_equal(process_table_new(&t), 0);
        /* far past the initial 1024 slots, so it rehashes several times */
        for (int pid = 1; pid <= 20000; pid++) {
                assert_int_equal(process_table_ensure(t, pid, &p, &created), 0);
                assert_true(created);
                assert_int_equal(p->pid, pid);
                p->threads = (unsigned) pid * 2;
        }
        assert_int_equal(process_table_size(t), 20000);
        assert_int_equal(process_table_ensure(t, 777, &p, &created), 0);
        assert_false(created);
        assert_int_equal(p->threads, 1554);

        /* remove every odd pid while iterating: each entry is visited once */
        size_t visited = 0;
        PROCESS_TABLE_FOREACH(p, t, i) {
                visited++;
                if (p->pid % 2)
                        assert_true(process_table_remove(t, p->pid));
        }
        assert_int_equal(visited, 20000);
        assert_int_equal(process_table_size(t), 10000);
        assert_null(process_table_get(t, 777));
        assert_non_null(process_table_get(t, 778));
        assert_false(process_table_remove(t, 777));

        /* churn (tombstones) does not lose entries nor grow without bound */
        for (int round = 0; round < 50; round++)
                for (int pid = 100001; pid <= 101000; pid++) {
                        assert_int_equal(process_table_ensure(t, pid, &p, NULL), 0);
                        assert_true(process_table_remove(t, pid));
                }
        assert_int_equal(process_table_size(t), 10000);
        for (int pid = 2; pid <= 20000; pid += 2)
                assert_non_null(process_table_get(t, pid));
}

static void write_proc_state(FakeTree *t, int pid, const char *comm, char state, int threads, unsigned flags,
                             unsigned long long start, const char *cgroup) {
        char rel[64], buf[1024];
        fake_write_stat(t, pid, comm, state, flags, threads, start);
        snprintf(rel, sizeof rel, "proc/%d/status", pid);
        snprintf(buf, sizeof buf,
                 "Name:\t%s\nTgid:\t%d\nPPid:\t1\nTracerPid:\t0\nUid:\t1000\t1001\t1000\t1000\n"
                 "Threads:\t3\nVmRSS:\t 9000 kB\nRssAnon:\t 8192 kB\n",
                 comm, pid);
        fake_write(t, rel, buf);
        snprintf(rel, sizeof rel, "proc/%d/cgroup", pid);
        fake_write(t, rel, cgroup);
        snprintf(rel, sizeof rel, "proc/%d/ksm_merging_pages", pid);
        fake_write(t, rel, "17\n");
}

static void write_proc(FakeTree *t, int pid, const char *comm, unsigned flags, unsigned long long start,
                       const char *cgroup) {
        write_proc_state(t, pid, comm, 'S', 3, flags, start, cgroup);
}

static void test_read_facts(void **state) {
        FakeTree t;
        _cleanup_(root_freep) Root *root = NULL;
        Process p = {};

        fake_tree_init(&t);
        fake_tree_populate_minimal(&t);
        write_proc(&t, 4242, "qemu) (x", 0, 5555,
                   "1:name=systemd:/machine.slice/machine-qemu\\x2d3\\x2dweb01.scope/libvirt/emulator\n"
                   "0::/machine.slice/machine-qemu\\x2d3\\x2dweb01.scope/libvirt/emulator\n");
        char link[512];
        snprintf(link, sizeof link, "%s/proc/4242/exe", t.path);
        assert_int_equal(symlink("/usr/bin/qemu-system-x86_64", link), 0);
        assert_int_equal(root_open(t.path, &root), 0);

        assert_int_equal(process_read_facts(root, 4242, &p), 0);
        assert_int_equal(p.pid, 4242);
        assert_string_equal(p.comm, "qemu) (x");
        assert_int_equal(p.uid, 1000);
        assert_int_equal(p.euid, 1001);
        assert_int_equal(p.rss_anon_kib, 8192);
        assert_int_equal(p.threads, 3);
        assert_int_equal(p.start_time_ticks, 5555);
        assert_int_equal(p.ksm_merging_pages, 17);
        assert_string_equal(p.exe, "/usr/bin/qemu-system-x86_64");
        assert_string_equal(p.cgroup, "machine.slice/machine-qemu\\x2d3\\x2dweb01.scope/libvirt/emulator");
        assert_string_equal(p.unit, "machine-qemu\\x2d3\\x2dweb01.scope");
        assert_string_equal(p.vm_name, "web01");

        /* same incarnation: the verdict survives a refresh */
        p.have_verdict = true;
        assert_int_equal(process_read_facts(root, 4242, &p), 0);
        assert_true(p.have_verdict);
        /* a resync while events flow keeps the exe of the same incarnation
         * (an exec would have been an event); a plain read sees the new one */
        assert_int_equal(unlink(link), 0);
        assert_int_equal(symlink("/usr/bin/qemu-system-aarch64", link), 0);
        assert_int_equal(process_read_facts_flags(root, 4242, &p, PROCESS_READ_KEEP_EXE), 0);
        assert_string_equal(p.exe, "/usr/bin/qemu-system-x86_64");
        assert_true(p.have_verdict);
        assert_int_equal(process_read_facts(root, 4242, &p), 0);
        assert_string_equal(p.exe, "/usr/bin/qemu-system-aarch64");
        /* pid reused (other start time): everything but the pid starts over,
         * the exe too, whatever the flags */
        write_proc(&t, 4242, "sh", 0, 9999, "0::/user.slice/user-0.slice/session-1.scope\n");
        assert_int_equal(unlink(link), 0);
        assert_int_equal(symlink("/usr/bin/dash", link), 0);
        assert_int_equal(process_read_facts_flags(root, 4242, &p, PROCESS_READ_KEEP_EXE), 0);
        assert_string_equal(p.exe, "/usr/bin/dash");
        assert_false(p.have_verdict);
        assert_string_equal(p.comm, "sh");
        assert_string_equal(p.unit, "session-1.scope");
        assert_null(p.vm_name);

        /* a binary replaced by an upgrade */
        char link2[512];
        write_proc(&t, 4343, "sshd", 0, 77, "0::/system.slice/ssh.service\n");
        snprintf(link2, sizeof link2, "%s/proc/4343/exe", t.path);
        assert_int_equal(symlink("/usr/sbin/sshd (deleted)", link2), 0);
        Process u = {};
        assert_int_equal(process_read_facts(root, 4343, &u), 0);
        assert_string_equal(u.exe, "/usr/sbin/sshd");
        assert_string_equal(u.unit, "ssh.service");
        process_done(&u);

        /* kernel thread: no exe, no status needed */
        write_proc(&t, 2, "kthreadd", PF_KTHREAD_FLAG, 1, "0::/\n");
        Process k = {};
        assert_int_equal(process_read_facts(root, 2, &k), 0);
        assert_true(k.kthread);
        assert_null(k.exe);
        assert_string_equal(k.cgroup, "");

        /* a zombie is gone (its reaping sends no event); a zombie leader
         * with live threads is not */
        Process z = {};
        write_proc_state(&t, 77, "defunct", 'Z', 1, 0, 100, "0::/\n");
        assert_int_equal(process_read_facts(root, 77, &z), -ESRCH);
        write_proc_state(&t, 77, "main-exited", 'Z', 4, 0, 100, "0::/\n");
        assert_int_equal(process_read_facts(root, 77, &z), 0);
        assert_true(z.zombie_leader);
        process_done(&z);

        /* gone */
        Process g = {};
        assert_int_equal(process_read_facts(root, 31337, &g), -ESRCH);
        fake_remove(&t, "proc/4242/stat");
        assert_int_equal(process_read_facts(root, 4242, &g), -ESRCH);

        process_done(&p);
        process_done(&k);
        process_done(&g);
        fake_tree_done(&t);
}

static void check_cmdline(const char *buf, size_t len, const char *want) {
        char *s = NULL;
        assert_int_equal(procfs_parse_cmdline(buf, len, &s), 0);
        assert_string_equal(s, want);
        free(s);
}

static void test_controller_respects_policy(void **state) {
        Verdict v = { .action = VERDICT_MERGE, .method = MERGE_METHOD_ANY };

        /* Mode=auto: exclusion and readmission are the daemon's to do */
        assert_null(verdict_refuses_controller(&v, false));
        assert_null(verdict_refuses_controller(&v, true));
        /* waiting (MinAge, MinAnonMiB): may be excluded, not switched on */
        v.action = VERDICT_WAIT;
        assert_null(verdict_refuses_controller(&v, false));
        assert_non_null(verdict_refuses_controller(&v, true));
        /* Mode=always is never taken out */
        v = (Verdict) { .action = VERDICT_MERGE, .method = MERGE_METHOD_ANY, .always = true };
        assert_string_equal(verdict_refuses_controller(&v, false), "its policy says Mode=always");
        assert_null(verdict_refuses_controller(&v, true));
        /* Mode=never (e.g. after a reload): never readmitted */
        v = (Verdict) { .action = VERDICT_DONT_MERGE, .method = MERGE_METHOD_ANY };
        assert_string_equal(verdict_refuses_controller(&v, true), "its policy says Mode=never now");
        assert_non_null(verdict_refuses_controller(&v, false));
        /* no policy, or Method=none: never touched */
        v = (Verdict) { .action = VERDICT_LEAVE_ALONE };
        assert_non_null(verdict_refuses_controller(&v, false));
        assert_non_null(verdict_refuses_controller(&v, true));
        v = (Verdict) { .action = VERDICT_MERGE, .method = MERGE_METHOD_NONE };
        assert_non_null(verdict_refuses_controller(&v, false));
}

/* The pure halves of the actuator's re-check (process.h). */
static void test_identity(void **state) {
        char buf[128];
        ProcessIdentity a = {
                .valid = true, .exe_dev = 8, .exe_ino = 1234,
                .uid = { 1000, 1000, 1000, 1000 }, .gid = { 1000, 1000, 1000, 1000 },
                .mm_layout = { 0x5000, 0x6000, 0x7ffd0000 },
                .dumpable = 1, .secure_exec = 0,
        };
        ProcessIdentity b = a;
        assert_null(process_identity_changed(&a, &b, buf, sizeof buf));
        assert_null(process_identity_privileged(&a, buf, sizeof buf));
        b.exe_ino = 99;
        assert_string_equal(process_identity_changed(&a, &b, buf, sizeof buf), "another executable (ino 1234 -> 99)");
        b = a;
        b.uid[1] = b.uid[2] = 0;
        assert_string_equal(process_identity_changed(&a, &b, buf, sizeof buf),
                            "other credentials (euid 1000 egid 1000 -> euid 0 egid 1000)");
        assert_string_equal(process_identity_privileged(&b, buf, sizeof buf),
                            "setuid or setgid (uid 1000 0 0 1000 gid 1000 1000 1000 1000)");
        b = a;
        b.mm_layout[2] = 0x7ffe0000;
        assert_string_equal(process_identity_changed(&a, &b, buf, sizeof buf), "an exec since (stack 7ffd0000 -> 7ffe0000)");
        /* dumpable and AT_SECURE are not compared, they are judged */
        b = a;
        b.dumpable = 0;
        assert_null(process_identity_changed(&a, &b, buf, sizeof buf));
        assert_string_equal(process_identity_privileged(&b, buf, sizeof buf), "not dumpable");
        b.dumpable = -1;
        assert_null(process_identity_privileged(&b, buf, sizeof buf));
        b.secure_exec = 1;
        assert_string_equal(process_identity_privileged(&b, buf, sizeof buf), "privileged exec (AT_SECURE)");
        b = a;
        b.gid[3] = 0;
        assert_non_null(process_identity_privileged(&b, buf, sizeof buf));
        b = a;
        b.cap_permitted = 1 << 21;
        assert_string_equal(process_identity_privileged(&b, buf, sizeof buf), "uid 1000 holds capabilities (CapPrm 200000)");
        b.uid[0] = b.uid[1] = b.uid[2] = b.uid[3] = 0;
        assert_null(process_identity_privileged(&b, buf, sizeof buf));
}

static void test_unmet_pages(void **state) {
        Process p = { .rss_anon_kib = 32868 };
        /* ksm_stat not read yet, or merging off: nothing to say */
        assert_int_equal(process_unmet_pages(&p, 4096), 0);
        p.ksm_stat_valid = true;
        p.ksm_stat = (ProcKsmStat) { .merge_any = 0, .mergeable = 0 };
        assert_int_equal(process_unmet_pages(&p, 4096), 0);
        /* the victim as ksmd off found it: 8217 pages of anon RSS, no rmap item */
        p.ksm_stat.mergeable = 1;
        assert_int_equal(process_unmet_pages(&p, 4096), 8217);
        /* after a full scan: its heap and stack stay */
        p.ksm_stat.rmap_items = 8192;
        assert_int_equal(process_unmet_pages(&p, 4096), 25);
        /* pages merged into the zero page left RSS but kept their items */
        p.ksm_stat.rmap_items = 9000;
        assert_int_equal(process_unmet_pages(&p, 4096), 0);
        p.ksm_stat = (ProcKsmStat) { .merge_any = 1, .mergeable = -1 };
        assert_int_equal(process_unmet_pages(&p, 4096), 8217);
        assert_int_equal(process_unmet_pages(&p, 0), 0);
}

static void test_merging_enabled(void **state) {
        Process p = {};
        assert_int_equal(process_merging_enabled(&p), -1);
        p.ksm_stat_valid = true;
        p.ksm_stat = (ProcKsmStat) { .merge_any = 0, .mergeable = 1 };
        assert_int_equal(process_merging_enabled(&p), 1);
        p.ksm_stat = (ProcKsmStat) { .merge_any = 0, .mergeable = 0, .rmap_items = 5 };
        assert_int_equal(process_merging_enabled(&p), 0);
        /* 6.12 without smaps access: neither line nor inference, so ksmd's
         * rmap items (only pages of VM_MERGEABLE mappings get one) say it */
        p.ksm_stat = (ProcKsmStat) { .merge_any = -1, .mergeable = -1 };
        assert_int_equal(process_merging_enabled(&p), 0);
        p.ksm_stat.rmap_items = 8192;
        assert_int_equal(process_merging_enabled(&p), 1);
        p.ksm_stat = (ProcKsmStat) { .merge_any = -1, .mergeable = -1, .merging_pages = 3 };
        assert_int_equal(process_merging_enabled(&p), 1);
}

/* The process a trace's task belongs to: its own status, not the trace's
 * hint; a task that started after the window began had its number reused. */
static void test_task_tgid(void **state) {
        FakeTree t;
        _cleanup_(root_freep) Root *root = NULL;
        long hz = sysconf(_SC_CLK_TCK);
        uint64_t tick = USEC_PER_SEC / (uint64_t) (hz > 0 ? hz : 100);
        int tgid = 0;

        fake_tree_init(&t);
        fake_tree_populate_minimal(&t);
        /* task 4243, a thread of 4242, started at tick 5555 */
        write_proc(&t, 4243, "worker", 0, 5555, "0::/\n");
        fake_write(&t, "proc/4243/status", "Name:\tworker\nTgid:\t4242\nPid:\t4243\nUid:\t0\t0\t0\t0\n");
        assert_int_equal(root_open(t.path, &root), 0);

        assert_int_equal(process_read_task_tgid(root, 4243, UINT64_MAX, &tgid), 0);
        assert_int_equal(tgid, 4242);
        /* a window that began at or after its start: the same task */
        tgid = 0;
        assert_int_equal(process_read_task_tgid(root, 4243, 5555 * tick, &tgid), 0);
        assert_int_equal(tgid, 4242);
        assert_int_equal(process_read_task_tgid(root, 4243, 9000 * tick, &tgid), 0);
        /* one that began two ticks before it: the number's next task */
        assert_int_equal(process_read_task_tgid(root, 4243, 5553 * tick, &tgid), -ESTALE);
        /* gone, or never a task */
        assert_int_equal(process_read_task_tgid(root, 4244, UINT64_MAX, &tgid), -ESRCH);
        assert_int_equal(process_read_task_tgid(root, 0, UINT64_MAX, &tgid), -ESRCH);
        /* a status without a usable Tgid is no answer */
        fake_write(&t, "proc/4243/status", "Name:\tworker\nTgid:\t-3\n");
        assert_true(process_read_task_tgid(root, 4243, UINT64_MAX, &tgid) < 0);
        fake_write(&t, "proc/4243/status", "Name:\tworker\n");
        assert_true(process_read_task_tgid(root, 4243, UINT64_MAX, &tgid) < 0);
        fake_tree_done(&t);
}

static void test_parse_cmdline(void **state) {
        check_cmdline("/usr/bin/java\0-jar\0app.jar\0", 26, "/usr/bin/java -jar app.jar");
        check_cmdline("", 0, "");
        check_cmdline("\0\0\0", 3, "");
        /* setproctitle() style: one string with spaces, no trailing NUL */
        check_cmdline("postgres: checkpointer", 22, "postgres: checkpointer");
        /* control characters and runs of NULs collapse to one space */
        check_cmdline("a\n\tb\0\0c\x7f", 8, "a b c");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table_grow_remove_iterate),
                cmocka_unit_test(test_read_facts),
                cmocka_unit_test(test_parse_cmdline),
                cmocka_unit_test(test_identity),
                cmocka_unit_test(test_unmet_pages),
                cmocka_unit_test(test_merging_enabled),
                cmocka_unit_test(test_task_tgid),
                cmocka_unit_test(test_controller_respects_policy),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
