/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The merge actuator's pure parts: maps parsing with hostile paths, range
 * selection, and outcomes for actions that never reach a process. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <sys/syscall.h>

#include "merge.h"
#include "proc-maps.h"
#include "root.h"
#include "seccomp-eval.h"
#include "util.h"

static const char *maps =
        "55d0c0a00000-55d0c0a02000 r--p 00000000 fe:01 1234                       /usr/bin/qemu (deleted)\n"
        "55d0c0a02000-55d0c0a08000 r-xp 00002000 fe:01 1234                       /usr/bin/qemu (deleted)\n"
        "55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0                          [heap]\n"
        "7f0000000000-7f0040000000 rw-p 00000000 00:00 0 \n"
        "7f0040000000-7f0040001000 ---p 00000000 00:00 0 \n"
        "7f0040001000-7f0040801000 rw-p 00000000 00:00 0                          [anon:guest ram]\n"
        "7f0050000000-7f0050100000 rw-s 00000000 00:01 99                         /memfd:shared (deleted)\n"
        "7f0060000000-7f0060001000 r-xp 00000000 fe:01 77                         /lib/with space/libc.so.6\n"
        "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
        "7ffd000fe000-7ffd00100000 r-xp 00000000 00:00 0                          [vdso]\n"
        "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

static void test_maps_parse(void **state) {
        MapList l = {};
        assert_int_equal(proc_maps_parse(maps, &l), 0);
        assert_int_equal(l.n, 11);
        assert_int_equal(l.ranges[0].kind, MAP_KIND_FILE);
        assert_string_equal(l.ranges[0].path, "/usr/bin/qemu (deleted)");
        assert_true(l.ranges[1].exec);
        assert_int_equal(l.ranges[2].kind, MAP_KIND_ANON);
        assert_int_equal(l.ranges[3].kind, MAP_KIND_ANON);
        assert_int_equal(l.ranges[5].kind, MAP_KIND_ANON);
        assert_false(l.ranges[6].private_);
        assert_string_equal(l.ranges[7].path, "/lib/with space/libc.so.6");
        assert_true(l.ranges[9].vdso);
        assert_int_equal(l.ranges[10].kind, MAP_KIND_SPECIAL);

        MapList anon = {};
        assert_int_equal(map_list_anon_private(&l, &anon), 0);
        /* heap; the big anonymous run (guard page and guest RAM coalesced); stack */
        assert_int_equal(anon.n, 3);
        assert_int_equal(anon.ranges[1].start, 0x7f0000000000);
        assert_int_equal(anon.ranges[1].end, 0x7f0040801000);
        map_list_done(&anon);

        MapList runs = {};
        assert_int_equal(map_list_advisable_runs(&l, &runs), 0);
        /* the binary; heap; the anonymous run; the memfd; libc; stack (no vdso, vsyscall) */
        assert_int_equal(runs.n, 6);
        assert_int_equal(runs.ranges[0].start, 0x55d0c0a00000);
        assert_int_equal(runs.ranges[0].end, 0x55d0c0a08000);
        map_list_done(&runs);
        map_list_done(&l);
}

static void test_maps_garbage(void **state) {
        MapList l = {};
        assert_int_equal(proc_maps_parse("hello world\n", &l), -EINVAL);
        assert_int_equal(proc_maps_parse("2000-1000 rw-p 0 00:00 0\n", &l), -EINVAL);
        assert_int_equal(proc_maps_parse("", &l), 0);
        assert_int_equal(l.n, 0);
        map_list_done(&l);
}

/* A QEMU guest's RAM marked by QEMU itself, a heap it did not mark, and a
 * range right after the guest RAM marked as well (coalesced). */
static const char smaps[] =
        "55d0a0000000-55d0a0021000 rw-p 00000000 00:00 0                          [heap]\n"
        "Size:                132 kB\n"
        "Rss:                   8 kB\n"
        "VmFlags: rd wr mr mw me ac sd \n"
        "7f0000001000-7f0040001000 rw-p 00000000 00:00 0 \n"
        "Size:            1048576 kB\n"
        "KSM:                   0 kB\n"
        "VmFlags: rd wr mr mw me ac sd mg\n"
        "7f0040001000-7f0040801000 rw-p 00000000 00:00 0 \n"
        "Size:               8192 kB\n"
        "VmFlags: rd wr mr mw me ac mg sd\n"
        "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
        "Size:                132 kB\n"
        "VmFlags: rd wr mr mw me gd ac mgx\n";

static void test_smaps_mergeable(void **state) {
        MapList l = {};
        assert_int_equal(proc_smaps_parse_mergeable(smaps, &l), 0);
        assert_int_equal(l.n, 1);
        assert_int_equal(l.ranges[0].start, 0x7f0000001000);
        assert_int_equal(l.ranges[0].end, 0x7f0040801000);
        assert_true(l.ranges[0].mergeable);
        map_list_done(&l);
        assert_int_equal(proc_smaps_parse_mergeable("VmFlags: rd wr mg\n", &l), -EINVAL);
        assert_int_equal(proc_smaps_parse_mergeable("", &l), 0);
        assert_int_equal(l.n, 0);
}

static void test_outcomes_without_process(void **state) {
        Probe p = {};
        MergeContext c = { .probe = &p };
        MergeOutcome o;
        ProcessAction a = { .pid = 1234, .action = MERGE_ACTION_ENABLE, .method = MERGE_METHOD_NONE };
        assert_int_equal(merge_apply_one(&c, &a, &o), 0);
        assert_int_equal(o.kind, MERGE_OUTCOME_SKIPPED);
        assert_string_equal(o.text, "Method=none: not touched");
        a = (ProcessAction) { .pid = -5, .action = MERGE_ACTION_ENABLE, .method = MERGE_METHOD_INJECT };
        assert_int_equal(merge_apply_one(&c, &a, &o), 0);
        assert_int_equal(o.kind, MERGE_OUTCOME_GONE);
        assert_string_equal(merge_outcome_kind_to_string(MERGE_OUTCOME_REFUSED), "refused");
}

/* Whatever a plan says, the actuator never touches PID 1 (here only a
 * dry run would have followed: it reads nothing that takes its locks). */
static void test_pid1_refused(void **state) {
        _cleanup_(root_freep) Root *root = NULL;
        Probe p = {};
        assert_int_equal(root_open(NULL, &root), 0);
        MergeContext c = { .root = root, .probe = &p, .dry_run = true };
        MergeOutcome o;
        ProcessAction a = { .pid = 1, .action = MERGE_ACTION_ENABLE, .method = MERGE_METHOD_INJECT };
        assert_int_equal(merge_apply_one(&c, &a, &o), 0);
        assert_int_equal(o.kind, MERGE_OUTCOME_REFUSED);
        assert_string_equal(o.text, "PID 1: not touched");
}

static void test_ledger(void **state) {
        MergeOutcome out[] = {
                { .pid = 10, .action = MERGE_ACTION_ENABLE, .kind = MERGE_OUTCOME_DONE, .used = MERGE_METHOD_INJECT,
                  .inject_privileged = true },
                { .pid = 11, .action = MERGE_ACTION_ENABLE, .kind = MERGE_OUTCOME_ALREADY },
                { .pid = 12, .action = MERGE_ACTION_ENABLE, .kind = MERGE_OUTCOME_DONE, .used = MERGE_METHOD_INJECT },
                { .pid = 12, .action = MERGE_ACTION_DISABLE, .kind = MERGE_OUTCOME_DONE },
                /* a readmission that gave back what the process had of its own */
                { .pid = 13, .action = MERGE_ACTION_ENABLE, .kind = MERGE_OUTCOME_DONE, .used = MERGE_METHOD_INJECT,
                  .restored_own = true },
        };
        MergeReport r = { .outcomes = out, .n = ELEMENTSOF(out) };
        MergeLedger l = {};
        assert_int_equal(merge_ledger_update(&l, &r), 1);
        assert_int_equal(l.n, 1);
        assert_int_equal(l.entries[0].pid, 10);
        assert_true(l.entries[0].inject_privileged); /* UnmergeOnExit= disables it with the same right */
        assert_ptr_equal(merge_report_find(&r, 12), &out[3]);
        assert_null(merge_report_find(&r, 99));
        /* what a killed instance leaves for the next one */
        char *text = merge_ledger_format(&l);
        assert_string_equal(text, "10 0 inject 1\n");
        MergeLedger back = {};
        assert_int_equal(merge_ledger_parse(&back, "10 0 inject 1\n11 5 madvise 0\n12 5 none 0\n13 5 any 0\n"
                                                   "14 5 inject 2\n0 5 inject 0\n15 x inject 0\n16 5 inject 0 more\n"
                                                   "11 6 process_ksm 0", "enabled"), 3);
        assert_int_equal(back.n, 2); /* pid 11 twice: the last wins */
        assert_int_equal(back.entries[0].pid, 10);
        assert_true(back.entries[0].inject_privileged);
        assert_int_equal(back.entries[0].method, MERGE_METHOD_INJECT);
        assert_int_equal(back.entries[1].pid, 11);
        assert_int_equal(back.entries[1].start_time_ticks, 6);
        free(text);
        merge_ledger_done(&back);
        MergeOutcome gone = { .pid = 10, .kind = MERGE_OUTCOME_GONE };
        MergeReport r2 = { .outcomes = &gone, .n = 1 };
        assert_int_equal(merge_ledger_update(&l, &r2), 1);
        assert_int_equal(l.n, 0);
        assert_int_equal(merge_ledger_update(&l, &r2), 0);
        /* a switch-off that did not take effect keeps the entry: the next
         * try (a later stop, another instance) must still find it */
        MergeOutcome off[] = {
                { .pid = 20, .action = MERGE_ACTION_ENABLE, .kind = MERGE_OUTCOME_DONE, .used = MERGE_METHOD_INJECT },
                { .pid = 20, .action = MERGE_ACTION_DISABLE, .kind = MERGE_OUTCOME_FAILED, .error = EPERM },
                { .pid = 21, .action = MERGE_ACTION_ENABLE, .kind = MERGE_OUTCOME_DONE, .used = MERGE_METHOD_INJECT },
                { .pid = 21, .action = MERGE_ACTION_DISABLE, .kind = MERGE_OUTCOME_DRY_RUN },
                { .pid = 22, .action = MERGE_ACTION_ENABLE, .kind = MERGE_OUTCOME_DONE, .used = MERGE_METHOD_INJECT },
                { .pid = 22, .action = MERGE_ACTION_DISABLE, .kind = MERGE_OUTCOME_ALREADY },
                { .pid = 23, .action = MERGE_ACTION_ENABLE, .kind = MERGE_OUTCOME_DONE, .used = MERGE_METHOD_INJECT },
                { .pid = 23, .action = MERGE_ACTION_DISABLE, .kind = MERGE_OUTCOME_REFUSED, .error = EBUSY },
                { .pid = 23, .action = MERGE_ACTION_ENABLE, .kind = MERGE_OUTCOME_ALREADY },
                /* Method=none now: "not touched", still merging */
                { .pid = 24, .action = MERGE_ACTION_ENABLE, .kind = MERGE_OUTCOME_DONE, .used = MERGE_METHOD_INJECT },
                { .pid = 24, .action = MERGE_ACTION_DISABLE, .kind = MERGE_OUTCOME_SKIPPED },
                /* an earlier incarnation of pid 25 gone: the entry is the later one's */
                { .pid = 25, .start_time_ticks = 9, .action = MERGE_ACTION_ENABLE, .kind = MERGE_OUTCOME_DONE,
                  .used = MERGE_METHOD_INJECT },
                { .pid = 25, .start_time_ticks = 8, .action = MERGE_ACTION_DISABLE, .kind = MERGE_OUTCOME_GONE },
        };
        MergeReport r3 = { .outcomes = off, .n = ELEMENTSOF(off) };
        assert_int_equal(merge_ledger_update(&l, &r3), 1);
        assert_int_equal(l.n, 5);
        assert_int_equal(l.entries[0].pid, 20);
        assert_int_equal(l.entries[1].pid, 21);
        assert_int_equal(l.entries[2].pid, 23);
        assert_int_equal(l.entries[3].pid, 24);
        assert_int_equal(l.entries[4].pid, 25);
        /* the stop's deadline already passed: nothing tried, all kept */
        _Atomic uint64_t past = 1;
        MergeContext late = { .give_up_usec = &past };
        MergeReport none = {};
        assert_int_equal(merge_ledger_unmerge(&late, &l, &none), 0);
        assert_int_equal(none.n, 0);
        assert_int_equal(l.n, 5);
        merge_ledger_done(&l);
}

/* The restore book a killed daemon leaves in its runtime directory: what an
 * instance started after it reads back is what was written, and a line it
 * cannot read costs that line only. */
static void test_restore_book(void **state) {
        MergeRestoreBook a = {}, b = {};
        const char *text = "812 4711 ranges 0 7f0000000000-7f0010000000 7f0020000000-7f0020200000\n"
                           "\n"
                           "813 99 any 1\n"
                           "814 5 ranges 0\n"                      /* ranges without any */
                           "815 5 any 0 1000-2000\n"               /* ranges after any */
                           "816 5 ranges 0 2000-1000\n"            /* empty range */
                           "0 5 any 0\n"                           /* not a pid */
                           "817 x any 0\n"
                           "818 5 some 0\n"
                           "819 5 any 2\n"
                           "820 5 ranges 0 10-20zz\n"
                           "821 5\n"
                           "812 4712 ranges 1 1000-3000";            /* the same pid again: the last wins */
        assert_int_equal(merge_restore_book_parse(&a, text, "restore-ranges"), 3);
        assert_int_equal(a.n, 2);
        const MergeRestoreEntry *e = merge_restore_find(&a, 813, 99);
        assert_non_null(e);
        assert_true(e->merge_any);
        assert_true(e->ours);
        assert_null(merge_restore_find(&a, 812, 4711));
        e = merge_restore_find(&a, 812, 4712);
        assert_non_null(e);
        assert_false(e->merge_any);
        assert_int_equal(e->ranges.n, 1);
        assert_int_equal(e->ranges.ranges[0].start, 0x1000);
        assert_int_equal(e->ranges.ranges[0].end, 0x3000);

        char *out = merge_restore_book_format(&a);
        assert_non_null(out);
        assert_string_equal(out, "813 99 any 1\n812 4712 ranges 1 1000-3000\n");
        assert_int_equal(merge_restore_book_parse(&b, out, "round trip"), 2);
        char *again = merge_restore_book_format(&b);
        assert_string_equal(again, out);
        free(again);
        free(out);

        /* load: a missing file is an empty book, persisted from then on */
        char dir[] = "/tmp/test-restore-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[64];
        snprintf(path, sizeof path, "%s/restore-ranges", dir);
        MergeRestoreBook c = {};
        assert_int_equal(merge_restore_book_load(&c, path, NULL), 0);
        assert_string_equal(c.path, path);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs("900 1 any 0\nnonsense\n", f);
        fclose(f);
        assert_int_equal(merge_restore_book_load(&c, path, NULL), 1);
        assert_non_null(merge_restore_find(&c, 900, 1));
        unlink(path);
        rmdir(dir);
        merge_restore_book_done(&a);
        merge_restore_book_done(&b);
        merge_restore_book_done(&c);
}

static char *read_text(const char *path) {
        static char buf[256];
        FILE *f = fopen(path, "r");
        if (!f)
                return NULL;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        return buf;
}

/* A state file whose write failed (a full /run, a directory gone) is written
 * again by the flush the merge worker calls while idle, not only at its next
 * change: a restart in between would read what it was before. */
static void test_state_files_written_again(void **state) {
        char dir[] = "/tmp/test-flush-XXXXXX", sub[64], path[96], book_path[96];
        assert_non_null(mkdtemp(dir));
        snprintf(sub, sizeof sub, "%s/run", dir);
        snprintf(path, sizeof path, "%s/enabled", sub);
        snprintf(book_path, sizeof book_path, "%s/restore-ranges", sub);

        /* the directory is not there yet: the change is kept, the write fails */
        MergeLedger l = {};
        assert_int_equal(merge_ledger_load(&l, path, NULL), 0);
        MergeOutcome on = { .pid = 30, .start_time_ticks = 7, .action = MERGE_ACTION_ENABLE,
                            .kind = MERGE_OUTCOME_DONE, .used = MERGE_METHOD_INJECT };
        MergeReport r = { .outcomes = &on, .n = 1 };
        assert_int_equal(merge_ledger_update(&l, &r), 1);
        assert_int_equal(l.n, 1);
        assert_true(l.write_error < 0);
        assert_true(merge_ledger_flush(&l) < 0);
        assert_null(read_text(path));

        MergeRestoreBook b = {};
        assert_int_equal(merge_restore_book_load(&b, book_path, NULL), 0);
        assert_int_equal(merge_restore_book_parse(&b, "31 8 any 1\n", "test"), 1);
        b.write_error = -ENOSPC; /* as a failed write leaves it */
        assert_true(merge_restore_book_flush(&b) < 0);

        /* there again: the next flush writes both, and a flush with
         * nothing failed writes nothing */
        assert_int_equal(mkdir(sub, 0700), 0);
        assert_int_equal(merge_ledger_flush(&l), 0);
        assert_string_equal(read_text(path), "30 7 inject 0\n");
        assert_int_equal(merge_restore_book_flush(&b), 0);
        assert_string_equal(read_text(book_path), "31 8 any 1\n");
        unlink(path);
        assert_int_equal(merge_ledger_flush(&l), 0);
        assert_null(read_text(path));

        /* not persisted: nothing to flush */
        MergeLedger none = {};
        assert_int_equal(merge_ledger_flush(&none), 0);

        unlink(book_path);
        rmdir(sub);
        rmdir(dir);
        merge_ledger_done(&l);
        merge_restore_book_done(&b);
}

static void test_seccomp_eval(void **state) {
        const struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xc000003e, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prctl, 0, 3),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 67, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
                BPF_STMT(BPF_MISC | BPF_TAX, 0),
                BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf0),
                BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x80, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct seccomp_data d = { .nr = SYS_prctl, .arch = 0xc000003e, .args = { 67, 1 } };
        assert_int_equal(seccomp_eval(f, ELEMENTSOF(f), &d), SECCOMP_RET_ERRNO | 1);
        assert_false(seccomp_action_allows(SECCOMP_RET_ERRNO | 1));
        d.args[0] = 38;
        assert_int_equal(seccomp_eval(f, ELEMENTSOF(f), &d), SECCOMP_RET_ALLOW);
        d.nr = 0x85; /* nr & 0xf0 has 0x80 */
        assert_int_equal(seccomp_eval(f, ELEMENTSOF(f), &d), SECCOMP_RET_TRAP);
        d.arch = 0x40000003; /* i386 */
        assert_int_equal(seccomp_eval(f, ELEMENTSOF(f), &d), SECCOMP_RET_KILL_PROCESS);
        assert_true(seccomp_action_allows(SECCOMP_RET_LOG));

        /* What the kernel's checker would reject is "may not". */
        const struct sock_filter out_of_bounds[] = { BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 64),
                                                     BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
        assert_int_equal(seccomp_eval(out_of_bounds, 2, &d), -EINVAL);
        const struct sock_filter jump_out[] = { BPF_JUMP(BPF_JMP | BPF_JA, 5, 0, 0),
                                                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
        assert_int_equal(seccomp_eval(jump_out, 2, &d), -EINVAL);
        const struct sock_filter no_ret[] = { BPF_STMT(BPF_LD | BPF_IMM, 1) };
        assert_int_equal(seccomp_eval(no_ret, 1, &d), -EINVAL);
        const struct sock_filter div0[] = { BPF_STMT(BPF_LDX | BPF_IMM, 0), BPF_STMT(BPF_ALU | BPF_DIV | BPF_X, 0),
                                            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
        assert_int_equal(seccomp_eval(div0, 3, &d), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_seccomp_eval),
                cmocka_unit_test(test_maps_parse),
                cmocka_unit_test(test_maps_garbage),
                cmocka_unit_test(test_smaps_mergeable),
                cmocka_unit_test(test_outcomes_without_process),
                cmocka_unit_test(test_pid1_refused),
                cmocka_unit_test(test_ledger),
                cmocka_unit_test(test_restore_book),
                cmocka_unit_test(test_state_files_written_again),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
