/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "fake-tree.h"
#include "proc-maps.h"
#include "procfs.h"
#include "root.h"
#include "util.h"

static const char *stat_tail =
        " S 1 42 42 0 -1 4194560 100 0 0 0 12 34 0 0 20 0 3 0 5555 1048576 256 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";

static void test_stat_plain(void **state) {
        char buf[512];
        ProcStat s;
        snprintf(buf, sizeof buf, "42 (bash)%s", stat_tail);
        assert_int_equal(procfs_parse_stat(buf, &s), 0);
        assert_int_equal(s.pid, 42);
        assert_string_equal(s.comm, "bash");
        assert_int_equal(s.state, 'S');
        assert_int_equal(s.ppid, 1);
        assert_int_equal(s.utime_ticks, 12);
        assert_int_equal(s.stime_ticks, 34);
        assert_int_equal(s.num_threads, 3);
        assert_int_equal(s.start_time_ticks, 5555);
        assert_int_equal(s.rss_pages, 256);
        assert_false(proc_stat_is_kthread(&s));
        /* startcode endcode startstack; no fields 45-51 in this line */
        assert_int_equal(s.mm_layout[0], 1);
        assert_int_equal(s.mm_layout[2], 0);
        assert_int_equal(s.mm_layout[3], 0);

        /* a whole line of 6.18: the layout an exec changes */
        const char *full = "7 (a) b) S 1 7 7 0 -1 4194304 90 0 0 0 0 0 0 0 20 0 1 0 88 2273280 226 "
                           "18446744073709551615 94490091683840 94490091701857 140725782044400 0 0 0 0 0 0 1 0 0 17 "
                           "1 0 0 0 0 0 94490091712016 94490091713056 94490118369280 140725782049669 "
                           "140725782049689 140725782049689 140725782052842 0\n";
        assert_int_equal(procfs_parse_stat(full, &s), 0);
        assert_string_equal(s.comm, "a) b");
        assert_int_equal(s.mm_layout[0], 94490091683840ULL);
        assert_int_equal(s.mm_layout[2], 140725782044400ULL);
        assert_int_equal(s.mm_layout[3], 94490091712016ULL);
        assert_int_equal(s.mm_layout[9], 140725782052842ULL);
}

static void test_stat_hostile_comm(void **state) {
        /* comm with ") (", spaces and a newline: the last ')' ends it. */
        const char *comms[] = { "a) (b", ") S 1 2 3 (", "x\ny", "  ", "))))" };
        for (size_t i = 0; i < ELEMENTSOF(comms); i++) {
                char buf[512];
                ProcStat s;
                snprintf(buf, sizeof buf, "7 (%s)%s", comms[i], stat_tail);
                assert_int_equal(procfs_parse_stat(buf, &s), 0);
                assert_string_equal(s.comm, comms[i]);
                assert_int_equal(s.pid, 7);
                assert_int_equal(s.ppid, 1);
                assert_int_equal(s.num_threads, 3);
        }
}

static void test_stat_truncated(void **state) {
        ProcStat s;
        assert_int_equal(procfs_parse_stat("", &s), -EINVAL);
        assert_int_equal(procfs_parse_stat("42 (bash", &s), -EINVAL);
        assert_int_equal(procfs_parse_stat("42 (bash) S 1 2", &s), -EINVAL);
        assert_int_equal(procfs_parse_stat("x (bash) S 1 42 42 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 1 1 1 1", &s), -EINVAL);
        /* huge numbers overflow: rejected rather than wrapped */
        char buf[512];
        snprintf(buf, sizeof buf, "42 (b) S 1 42 42 0 -1 0 0 0 0 0 999999999999999999999999 2 0 0 20 0 1 0 1 1 1 1");
        assert_int_equal(procfs_parse_stat(buf, &s), -EINVAL);
}

static void test_stat_kthread(void **state) {
        ProcStat s;
        assert_int_equal(procfs_parse_stat("37 (ksmd) S 2 0 0 0 -1 2097216 0 0 0 0 0 0 0 0 25 5 1 0 24 0 0 "
                                           "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 1 0 0 0 0 0",
                                           &s),
                         0);
        assert_true(proc_stat_is_kthread(&s));
        assert_string_equal(s.comm, "ksmd");
}

static void test_status(void **state) {
        ProcStatus s;
        const char *text = "Name:\tqemu-system-x86\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t812\nNgid:\t0\n"
                           "Pid:\t812\nPPid:\t1\nTracerPid:\t0\nUid:\t64055\t64055\t64055\t64055\n"
                           "Gid:\t100\t101\t100\t100\nNSpid:\t812\nVmRSS:\t  4194304 kB\nRssAnon:\t 4000000 kB\n"
                           "RssFile:\t  194304 kB\nRssShmem:\t       0 kB\nVmSwap:\t       0 kB\nThreads:\t9\n"
                           "Seccomp:\t2\n";
        assert_int_equal(procfs_parse_status(text, &s), 0);
        assert_string_equal(s.name, "qemu-system-x86");
        assert_int_equal(s.tgid, 812);
        assert_int_equal(s.uid_real, 64055);
        assert_int_equal(s.uid_fs, 64055);
        assert_int_equal(s.gid_effective, 101);
        assert_int_equal(s.gid_saved, 100);
        assert_int_equal(s.cap_permitted, 0);
        ProcStatus suid;
        assert_int_equal(procfs_parse_status("Tgid:\t5\nUid:\t1000\t0\t0\t0\nCapPrm:\t000001ffffffffff\n", &suid), 0);
        assert_int_equal(suid.uid_effective, 0);
        assert_int_equal(suid.uid_saved, 0);
        assert_int_equal(suid.cap_permitted, 0x1ffffffffffULL);
        assert_int_equal(s.rss_anon_kib, 4000000);
        assert_int_equal(s.threads, 9);
        assert_int_equal(s.seccomp, 2);
        assert_int_equal(s.nspid_depth, 1);
        assert_true(s.has_mm);
        assert_false(s.shadow_stack);

        /* the x86_Thread_features line alone says whether shstk is on */
        assert_int_equal(procfs_parse_status("Tgid:\t5\nx86_Thread_features:\tshstk wrss\n"
                                             "x86_Thread_features_locked:\t\n", &s), 0);
        assert_true(s.shadow_stack);
        assert_int_equal(procfs_parse_status("Tgid:\t5\nx86_Thread_features:\t\n"
                                             "x86_Thread_features_locked:\tshstk\n", &s), 0);
        assert_false(s.shadow_stack);

        /* a kernel thread: no Vm lines */
        assert_int_equal(procfs_parse_status("Name:\tksmd\nTgid:\t37\nPPid:\t2\nThreads:\t1\n", &s), 0);
        assert_false(s.has_mm);
        /* garbage and truncation */
        assert_int_equal(procfs_parse_status("Name:\tx\n", &s), -EINVAL);
        assert_int_equal(procfs_parse_status("Tgid:\t1\nRssAnon:\tlots kB\n", &s), -EINVAL);
        assert_int_equal(procfs_parse_status("", &s), -EINVAL);
}

static void test_cgroup(void **state) {
        char *p = NULL;
        assert_int_equal(procfs_parse_cgroup("12:pids:/foo\n1:name=systemd:/bar\n0::/machine.slice/machine-qemu\\x2d3\\x2dweb01.scope\n", &p), 0);
        assert_string_equal(p, "machine.slice/machine-qemu\\x2d3\\x2dweb01.scope");
        free(p);
        assert_int_equal(procfs_parse_cgroup("0::/\n", &p), 0);
        assert_string_equal(p, "");
        free(p);
        assert_int_equal(procfs_parse_cgroup("3:cpu:/x\n", &p), -ENODATA);
        assert_int_equal(procfs_parse_cgroup("0::relative\n", &p), -EINVAL);
        assert_int_equal(procfs_parse_cgroup("", &p), -ENODATA);
}

static void test_ksm_stat(void **state) {
        ProcKsmStat s;
        assert_int_equal(procfs_parse_ksm_stat("ksm_rmap_items 8192\nksm_zero_pages 0\nksm_merging_pages 8192\n"
                                               "ksm_process_profit 33030144\nksm_merge_any: no\nksm_mergeable: yes\n",
                                               &s),
                         0);
        assert_int_equal(s.rmap_items, 8192);
        assert_int_equal(s.merging_pages, 8192);
        assert_int_equal(s.process_profit, 33030144);
        assert_int_equal(s.merge_any, 0);
        assert_int_equal(s.mergeable, 1);
        /* older kernel: no merge_any/mergeable lines, negative profit */
        assert_int_equal(procfs_parse_ksm_stat("ksm_rmap_items 5\nksm_merging_pages 0\nksm_process_profit -160\n", &s), 0);
        assert_int_equal(s.merge_any, -1);
        assert_int_equal(s.process_profit, -160);
        assert_int_equal(procfs_parse_ksm_stat("ksm_rmap_items 5\n", &s), -EINVAL);
        assert_int_equal(procfs_parse_ksm_stat("ksm_merging_pages x\n", &s), -EINVAL);
        assert_int_equal(procfs_parse_ksm_stat("ksm_merging_pages 1\nksm_merge_any: maybe\n", &s), -EINVAL);
}

/* Linux 6.12 (as the stock test kernel prints them): ksm_stat without
 * ksm_merge_any/ksm_mergeable, and smaps. A process under
 * PR_SET_MEMORY_MERGE: the kernel marked its program's private file
 * mappings as well as its heap and anonymous memory (not the shared
 * mapping: not KSM-compatible). */
static const char ksm_stat_612[] = "ksm_rmap_items 8192\nksm_zero_pages 0\nksm_merging_pages 4096\n"
                                   "ksm_process_profit 16633856\n";
static const char smaps_612_merge_any[] =
        "55f1c0a00000-55f1c0a02000 r--p 00000000 fe:01 1311001                    /usr/bin/ksm-workload\n"
        "Size:                  8 kB\n"
        "KSM:                   0 kB\n"
        "VmFlags: rd mr mw me dw sd mg\n"
        "55f1c0a02000-55f1c0a04000 r-xp 00002000 fe:01 1311001                    /usr/bin/ksm-workload\n"
        "Size:                  8 kB\n"
        "VmFlags: rd ex mr mw me dw sd mg\n"
        "55f1c1a00000-55f1c1a21000 rw-p 00000000 00:00 0                          [heap]\n"
        "Size:                132 kB\n"
        "VmFlags: rd wr mr mw me ac sd mg\n"
        "7f3a00000000-7f3a02000000 rw-p 00000000 00:00 0 \n"
        "Size:              32768 kB\n"
        "KSM:               16384 kB\n"
        "VmFlags: rd wr mr mw me ac sd mg\n"
        "7f3a02000000-7f3a02100000 rw-s 00000000 00:01 4242                       /dev/zero (deleted)\n"
        "Size:               1024 kB\n"
        "VmFlags: rd wr sh mr mw me ms sd \n"
        "7ffd10000000-7ffd10021000 rw-p 00000000 00:00 0                          [stack]\n"
        "Size:                132 kB\n"
        "VmFlags: rd wr mr mw me gd ac \n"
        "7ffd10100000-7ffd10102000 r-xp 00000000 00:00 0                          [vdso]\n"
        "Size:                  8 kB\n"
        "VmFlags: rd ex mr mw me de sd \n";
/* QEMU marking its guest RAM itself (MADV_MERGEABLE): anonymous only. */
static const char smaps_612_ranges[] =
        "55d0a0000000-55d0a0400000 r-xp 00000000 fe:01 2000                       /usr/bin/qemu-system-x86_64\n"
        "Size:               4096 kB\n"
        "VmFlags: rd ex mr mw me sd \n"
        "7f0000000000-7f0040000000 rw-p 00000000 00:00 0 \n"
        "Size:            1048576 kB\n"
        "VmFlags: rd wr mr mw me nr sd mg\n"
        "7f0040000000-7f0040200000 rw-p 00000000 00:00 0 \n"
        "Size:               2048 kB\n"
        "VmFlags: rd wr mr mw me ac sd \n";
static const char smaps_612_none[] =
        "55d0a0000000-55d0a0400000 r-xp 00000000 fe:01 2000                       /usr/bin/sleep\n"
        "VmFlags: rd ex mr mw me sd \n"
        "55d0a1000000-55d0a1021000 rw-p 00000000 00:00 0                          [heap]\n"
        "VmFlags: rd wr mr mw me ac sd \n";

static void test_ksm_stat_612(void **state) {
        int any = 7, mg = 7;

        assert_int_equal(proc_smaps_parse_ksm_flags(smaps_612_merge_any, &any, &mg), 0);
        assert_int_equal(any, 1);
        assert_int_equal(mg, 1);
        assert_int_equal(proc_smaps_parse_ksm_flags(smaps_612_ranges, &any, &mg), 0);
        assert_int_equal(any, 0);
        assert_int_equal(mg, 1);
        assert_int_equal(proc_smaps_parse_ksm_flags(smaps_612_none, &any, &mg), 0);
        assert_int_equal(any, 0);
        assert_int_equal(mg, 0);
        assert_int_equal(proc_smaps_parse_ksm_flags("VmFlags: rd wr mg\n", &any, &mg), -EINVAL);

        /* The pure inference on runs, as the injector hands them over: a
         * marked run reaching past the anonymous memory is whole-mm. */
        MapRange m[] = { { .start = 0x1000, .end = 0x5000 } }, a[] = { { .start = 0x0, .end = 0x3000 },
                                                                      { .start = 0x3000, .end = 0x5000 } };
        MapList ml = { m, 1 }, al = { a, 2 }, al1 = { a, 1 }, none = {};
        map_list_ksm_flags(&ml, &al, &any, &mg);
        assert_int_equal(any, 0);
        assert_int_equal(mg, 1);
        map_list_ksm_flags(&ml, &al1, &any, &mg);
        assert_int_equal(any, 1);
        map_list_ksm_flags(&none, &al, &any, &mg);
        assert_int_equal(any, 0);
        assert_int_equal(mg, 0);

        /* The reader: the lines absent, smaps read and both inferred. */
        FakeTree t;
        Root *r = NULL;
        int dfd;
        ProcKsmStat s;
        fake_tree_init(&t);
        fake_tree_populate_minimal(&t);
        fake_write(&t, "proc/100/ksm_stat", ksm_stat_612);
        fake_write(&t, "proc/100/smaps", smaps_612_merge_any);
        fake_write(&t, "proc/200/ksm_stat", ksm_stat_612);
        fake_write(&t, "proc/200/smaps", smaps_612_ranges);
        /* smaps not readable (EACCES without ptrace access; here EISDIR):
         * unknown, not an error */
        fake_write(&t, "proc/300/ksm_stat", ksm_stat_612);
        fake_mkdir(&t, "proc/300/smaps");
        /* a newer kernel: its own lines win, smaps is not read */
        fake_write(&t, "proc/400/ksm_stat", "ksm_rmap_items 1\nksm_merging_pages 0\nksm_merge_any: no\nksm_mergeable: no\n");
        fake_write(&t, "proc/400/smaps", smaps_612_merge_any);
        assert_int_equal(root_open(t.path, &r), 0);

        assert_int_equal(root_open_pid_dir(r, 100, &dfd), 0);
        assert_int_equal(procfs_read_ksm_stat(dfd, &s), 0);
        assert_int_equal(s.merging_pages, 4096);
        assert_int_equal(s.merge_any, 1);
        assert_int_equal(s.mergeable, 1);
        assert_true(s.flags_inferred);
        close(dfd);
        assert_int_equal(root_open_pid_dir(r, 200, &dfd), 0);
        assert_int_equal(procfs_read_ksm_stat(dfd, &s), 0);
        assert_int_equal(s.merge_any, 0);
        assert_int_equal(s.mergeable, 1);
        close(dfd);
        assert_int_equal(root_open_pid_dir(r, 300, &dfd), 0);
        assert_int_equal(procfs_read_ksm_stat(dfd, &s), 0);
        assert_int_equal(s.merge_any, -1);
        assert_int_equal(s.mergeable, -1);
        assert_false(s.flags_inferred);
        assert_int_equal(s.rmap_items, 8192);
        close(dfd);
        assert_int_equal(root_open_pid_dir(r, 400, &dfd), 0);
        assert_int_equal(procfs_read_ksm_stat(dfd, &s), 0);
        assert_int_equal(s.merge_any, 0);
        assert_int_equal(s.mergeable, 0);
        assert_false(s.flags_inferred);
        close(dfd);
        root_free(r);
        fake_tree_done(&t);
}

static void test_meminfo_psi(void **state) {
        Meminfo m;
        Psi p;
        assert_int_equal(procfs_parse_meminfo("MemTotal:       24000000 kB\nMemFree:  1000 kB\nMemAvailable:   2000 kB\n"
                                              "AnonPages: 300 kB\nSwapTotal: 0 kB\n",
                                              &m),
                         0);
        assert_int_equal(m.mem_total_kib, 24000000);
        assert_int_equal(m.mem_available_kib, 2000);
        assert_int_equal(m.anon_pages_kib, 300);
        /* no MemAvailable (ancient kernel): falls back to MemFree */
        assert_int_equal(procfs_parse_meminfo("MemTotal: 10 kB\nMemFree: 4 kB\n", &m), 0);
        assert_int_equal(m.mem_available_kib, 4);
        assert_int_equal(procfs_parse_meminfo("MemFree: 4 kB\n", &m), -EINVAL);
        assert_int_equal(procfs_parse_meminfo("MemTotal: 99999999999999999999999 kB\n", &m), -EINVAL);

        assert_int_equal(procfs_parse_psi("some avg10=1.50 avg60=0.20 avg300=0.00 total=12345\n"
                                          "full avg10=0.50 avg60=0.10 avg300=0.00 total=678\n",
                                          &p),
                         0);
        assert_true(p.present);
        assert_true(p.some.avg10 > 1.49 && p.some.avg10 < 1.51);
        assert_int_equal(p.full.total_usec, 678);
        assert_int_equal(procfs_parse_psi("some avg10=500.00 avg60=0 avg300=0 total=1\n", &p), -ERANGE);
        assert_int_equal(procfs_parse_psi("garbage\n", &p), -EINVAL);
}

static void test_fake_tree_readers(void **state) {
        FakeTree t;
        Root *r = NULL;
        int dfd;
        ProcStat st;
        Psi psi;
        uint64_t pages;

        fake_tree_init(&t);
        fake_tree_populate_minimal(&t);
        fake_write(&t, "proc/100/stat", "100 (evil) (name) R 1 100 100 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 9 4096 1 0");
        fake_write(&t, "proc/100/ksm_merging_pages", "77\n");
        fake_write(&t, "proc/200/stat", "200 (trunc");
        assert_int_equal(root_open(t.path, &r), 0);

        assert_int_equal(root_open_pid_dir(r, 100, &dfd), 0);
        assert_int_equal(procfs_read_stat(dfd, &st), 0);
        assert_string_equal(st.comm, "evil) (name");
        assert_int_equal(procfs_read_ksm_merging_pages(dfd, &pages), 0);
        assert_int_equal(pages, 77);
        /* the pid vanishes between reads: its files answer "gone", not garbage */
        fake_remove(&t, "proc/100");
        assert_int_equal(procfs_read_stat(dfd, &st), -ESRCH);
        assert_int_equal(procfs_read_ksm_merging_pages(dfd, &pages), -ESRCH);
        close(dfd);

        assert_int_equal(root_open_pid_dir(r, 200, &dfd), 0);
        assert_int_equal(procfs_read_stat(dfd, &st), -EINVAL);
        close(dfd);
        assert_int_equal(root_open_pid_dir(r, 300, &dfd), -ESRCH);

        /* PSI absent is not an error */
        assert_int_equal(procfs_read_psi_memory(r, &psi), 0);
        assert_false(psi.present);

        root_free(r);
        fake_tree_done(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stat_plain),        cmocka_unit_test(test_stat_hostile_comm),
                cmocka_unit_test(test_stat_truncated),    cmocka_unit_test(test_stat_kthread),
                cmocka_unit_test(test_status),            cmocka_unit_test(test_cgroup),
                cmocka_unit_test(test_ksm_stat),          cmocka_unit_test(test_ksm_stat_612),
                cmocka_unit_test(test_meminfo_psi),
                cmocka_unit_test(test_fake_tree_readers),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
