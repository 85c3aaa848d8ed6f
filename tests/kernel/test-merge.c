/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The merge actuator and ptrace injection against real processes on this
 * machine's kernel: merging by every mechanism it supports, and the
 * target's integrity through hundreds of injections, a foreign tracer,
 * seccomp, and an injector SIGKILLed at every phase of an injection. */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "inject.h"
#include "ksm-guard.h"
#include "merge.h"
#include "probe.h"
#include "proc-maps.h"
#include "procfs.h"
#include "root.h"
#include "syscalls.h"
#include "util.h"
#include "workload.h"

static Root *root;
static Probe probe;

static MergeContext context(void) {
        return (MergeContext) { .root = root, .probe = &probe };
}

static uint64_t start_time(int pid) {
        int dfd;
        ProcStat st;
        assert_int_equal(root_open_pid_dir(root, pid, &dfd), 0);
        assert_int_equal(procfs_read_stat(dfd, &st), 0);
        close(dfd);
        return st.start_time_ticks;
}

static ProcKsmStat ksm_stat_of(int pid) {
        int dfd;
        ProcKsmStat ks;
        assert_int_equal(root_open_pid_dir(root, pid, &dfd), 0);
        assert_int_equal(procfs_read_ksm_stat(dfd, &ks), 0);
        close(dfd);
        return ks;
}

static ProcStatus status_of(int pid) {
        int dfd;
        ProcStatus s;
        assert_int_equal(root_open_pid_dir(root, pid, &dfd), 0);
        assert_int_equal(procfs_read_status(dfd, &s), 0);
        close(dfd);
        return s;
}

static char state_of(int pid) {
        int dfd;
        ProcStat st;
        assert_int_equal(root_open_pid_dir(root, pid, &dfd), 0);
        assert_int_equal(procfs_read_stat(dfd, &st), 0);
        close(dfd);
        return st.state;
}

static MergeOutcome apply(const MergeContext *c, int pid, MergeAction action, MergeMethod method) {
        ProcessAction a = { .pid = pid, .start_time_ticks = start_time(pid), .action = action, .method = method };
        MergeOutcome o;
        strscpy(a.reason, sizeof a.reason, "test");
        assert_int_equal(merge_apply_one(c, &a, &o), 0);
        fprintf(stderr, "pid %d %s/%s -> %s: %s\n", pid, action == MERGE_ACTION_ENABLE ? "enable" : "disable",
                merge_method_to_string(method), merge_outcome_kind_to_string(o.kind), o.text);
        return o;
}

static void target_report(Workload *w, unsigned long *ret_errors, unsigned long *ret_main, unsigned long *ret_eintr) {
        char line[256];
        unsigned long e, m, i;
        assert_int_equal(workload_command(w, "report", line, sizeof line, 5000), 0);
        assert_int_equal(sscanf(line, "report errors=%lu main=%lu eintr=%lu", &e, &m, &i), 3);
        if (e || i)
                fprintf(stderr, "target report: %s\n", line);
        *ret_errors = e;
        *ret_main = m;
        *ret_eintr = i;
}

/* The target is alive, not stopped, not traced, and made progress with no
 * failed self-check since the last call; with strict, no raw nanosleep saw
 * EINTR either. */
static void check_target_healthy(Workload *w, unsigned long *last_main, bool strict) {
        unsigned long e, m, i;
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        char st = state_of(w->pid);
        assert_true(st != 'T' && st != 't' && st != 'Z');
        assert_int_equal(status_of(w->pid).tracer_pid, 0);
        target_report(w, &e, &m, &i);
        assert_int_equal(e, 0);
        if (strict)
                assert_int_equal(i, 0);
        assert_true(m > *last_main);
        *last_main = m;
}

static void assert_target_healthy(Workload *w, unsigned long *last_main) {
        check_target_healthy(w, last_main, true);
}

static void test_remote_madvise_reported(void **state) {
        const char *args[] = { "--unique", "64", "--copies", "2", "--merge", "none", NULL };
        MergeContext c = context();
        Workload w;

        assert_int_equal(workload_start(&w, args), 0);
        MergeOutcome o = apply(&c, w.pid, MERGE_ACTION_ENABLE, MERGE_METHOD_MADVISE);
        if (probe.process_madvise_remote_mergeable)
                assert_int_equal(o.kind, MERGE_OUTCOME_DONE);
        else {
                /* Upstream 6.18: process_madvise_remote_valid() has no MADV_MERGEABLE. */
                assert_int_equal(o.kind, MERGE_OUTCOME_UNSUPPORTED);
                assert_int_equal(o.error, EINVAL);
                assert_non_null(strstr(o.text, "method madvise unsupported: EINVAL"));
                assert_int_equal(ksm_stat_of(w.pid).mergeable, 0);
        }
        o = apply(&c, w.pid, MERGE_ACTION_ENABLE, MERGE_METHOD_PROCESS_KSM);
        if (!probe.process_ksm_syscall)
                assert_int_equal(o.kind, MERGE_OUTCOME_UNSUPPORTED);
        /* Method=any falls through to what this kernel has. */
        o = apply(&c, w.pid, MERGE_ACTION_DISABLE, MERGE_METHOD_ANY);
        o = apply(&c, w.pid, MERGE_ACTION_ENABLE, MERGE_METHOD_ANY);
        assert_int_equal(o.kind, MERGE_OUTCOME_DONE);
        if (!probe.process_madvise_remote_mergeable && !probe.process_ksm_syscall)
                assert_int_equal(o.used, MERGE_METHOD_INJECT);
        assert_int_equal(workload_stop(&w), 0);
}

/* One mechanism merges the workload's known duplicates: its merging pages
 * reach unique*copies and pages_sharing rises by about unique*(copies-1). */
static void merge_by(MergeMethod m) {
        /* A seed of its own: content no earlier process left stable nodes for. */
        char seed[32];
        snprintf(seed, sizeof seed, "%d", (int) getpid() * 4 + (int) m);
        const char *args[] = { "--unique", "2048", "--copies", "4", "--merge", "none", "--verify", "--seed", seed, NULL };
        MergeContext c = context();
        Workload w;

        assert_int_equal(workload_start(&w, args), 0);
        ksm_guard_set("pages_to_scan", "5000");
        ksm_guard_set("sleep_millisecs", "10");
        ksm_guard_set("run", "1");
        uint64_t sharing0 = ksm_read_counter("pages_sharing");
        /* Nothing is mergeable before: ksmd does not touch it. */
        assert_int_equal(ksm_stat_of(w.pid).merge_any, 0);

        MergeOutcome o = apply(&c, w.pid, MERGE_ACTION_ENABLE, m);
        assert_int_equal(o.kind, MERGE_OUTCOME_DONE);
        assert_int_equal(ksm_stat_of(w.pid).merge_any, m == MERGE_METHOD_MADVISE ? 0 : 1);
        uint64_t took = ksm_wait_merging(w.pid, 8192, 60 * USEC_PER_SEC);
        assert_true(took > 0);
        uint64_t sharing1 = ksm_read_counter("pages_sharing");
        fprintf(stderr, "FIGURE merge method=%s merging_pages=%" PRIu64 " pages_sharing %" PRIu64 " -> %" PRIu64
                        " in %.2f s (action %" PRIu64 " us, pause %" PRIu64 " us)\n",
                merge_method_to_string(m), ksm_process_merging_pages(w.pid), sharing0, sharing1,
                (double) took / 1e6, o.duration_usec, o.pause_usec);
        /* Stable pages of processes that exited earlier drop out lazily
         * while ksmd scans, so the global counter is checked for holding at
         * least this process's sharing, and its own count exactly. */
        assert_true(sharing1 >= 2048 * 3);
        /* Its 8192 copies, and with PR_SET_MEMORY_MERGE (the whole mm) a
         * few pages of its own heap or stack that happen to equal a page of
         * another process merging on this machine (seen: 8194 while QEMU
         * guests merged beside it). */
        uint64_t own = ksm_process_merging_pages(w.pid);
        if (m == MERGE_METHOD_MADVISE)
                assert_int_equal(own, 8192);
        else
                assert_in_range(own, 8192, 8192 + 64);

        /* Mode=never: merging off again, and the kernel unmerges at once. */
        o = apply(&c, w.pid, MERGE_ACTION_DISABLE, m);
        assert_int_equal(o.kind, MERGE_OUTCOME_DONE);
        ProcKsmStat ks = ksm_stat_of(w.pid);
        assert_int_equal(ks.merge_any, 0);
        assert_int_equal(ks.mergeable, 0);
        /* The pages are unshared inside the prctl (break_ksm), but the
         * process's ksm_merging_pages only drops when ksmd next passes over
         * its mm and frees the stale rmap_items: wait for that. */
        uint64_t left = UINT64_MAX;
        for (int i = 0; i < 500 && left != 0; i++) {
                left = ksm_process_merging_pages(w.pid);
                if (left)
                        usleep(20000);
        }
        assert_int_equal(left, 0);
        ksm_guard_set("run", "0");
        /* --verify: the workload exits 3 if any page read back differently. */
        assert_int_equal(workload_stop(&w), 0);
}

static void test_merge_by_each_mechanism(void **state) {
        merge_by(MERGE_METHOD_INJECT);
        if (probe.process_ksm_syscall)
                merge_by(MERGE_METHOD_PROCESS_KSM);
        else
                fprintf(stderr, "process_ksm: not on this kernel, skipped\n");
        if (probe.process_madvise_remote_mergeable)
                merge_by(MERGE_METHOD_MADVISE);
        else
                fprintf(stderr, "remote madvise: refused by this kernel (errno %d), skipped\n",
                        probe.process_madvise_errno);
}

static void test_already_merging_untouched(void **state) {
        const char *marked[] = { "--unique", "64", "--copies", "2", "--merge", "madvise", NULL };
        const char *prctl[] = { "--unique", "64", "--copies", "2", "--merge", "prctl", NULL };
        MergeContext c = context();
        Workload w;

        /* QEMU-style: the process marked its own ranges. */
        assert_int_equal(workload_start(&w, marked), 0);
        MergeOutcome o = apply(&c, w.pid, MERGE_ACTION_ENABLE, MERGE_METHOD_INJECT);
        assert_int_equal(o.kind, MERGE_OUTCOME_ALREADY);
        assert_non_null(strstr(o.text, "marked MADV_MERGEABLE itself"));
        assert_int_equal(ksm_stat_of(w.pid).merge_any, 0);
        /* PR_SET_MEMORY_MERGE 0 would not touch those ranges: disabling
         * injects madvise(MADV_UNMERGEABLE) over its mappings. */
        o = apply(&c, w.pid, MERGE_ACTION_DISABLE, MERGE_METHOD_INJECT);
        assert_int_equal(o.kind, MERGE_OUTCOME_DONE);
        assert_int_equal(ksm_stat_of(w.pid).mergeable, 0);
        o = apply(&c, w.pid, MERGE_ACTION_DISABLE, MERGE_METHOD_INJECT);
        assert_int_equal(o.kind, MERGE_OUTCOME_ALREADY);
        assert_int_equal(workload_stop(&w), 0);

        assert_int_equal(workload_start(&w, prctl), 0);
        o = apply(&c, w.pid, MERGE_ACTION_ENABLE, MERGE_METHOD_ANY);
        assert_int_equal(o.kind, MERGE_OUTCOME_ALREADY);
        assert_non_null(strstr(o.text, "ksm_merge_any: yes"));
        assert_int_equal(workload_stop(&w), 0);
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static void test_integrity_through_repeated_injections(void **state) {
        enum { CYCLES = 200 };
        const char *args[] = { NULL };
        MergeContext c = context();
        Workload w;
        uint64_t pause[2 * CYCLES], total[2 * CYCLES];
        unsigned long last = 0;

        assert_int_equal(workload_spawn(&w, "KSM_INJECT_TARGET", args, true), 0);
        assert_target_healthy(&w, &last);
        uint64_t before = ksm_stat_of(w.pid).merge_any;
        assert_int_equal(before, 0);
        for (int i = 0; i < CYCLES; i++) {
                for (int k = 0; k < 2; k++) {
                        ProcessAction a = { .pid = w.pid, .start_time_ticks = start_time(w.pid),
                                            .action = k == 0 ? MERGE_ACTION_ENABLE : MERGE_ACTION_DISABLE,
                                            .method = MERGE_METHOD_INJECT };
                        MergeOutcome o;
                        assert_int_equal(merge_apply_one(&c, &a, &o), 0);
                        if (o.kind != MERGE_OUTCOME_DONE)
                                fprintf(stderr, "cycle %d: %s\n", i, o.text);
                        assert_int_equal(o.kind, MERGE_OUTCOME_DONE);
                        pause[2 * i + k] = o.pause_usec;
                        total[2 * i + k] = o.duration_usec;
                        /* Now and then a signal arrives mid-way too. */
                        if (i % 10 == 0)
                                kill(w.pid, SIGUSR1);
                }
                if (i % 50 == 49)
                        assert_target_healthy(&w, &last);
        }
        assert_target_healthy(&w, &last);
        qsort(pause, 2 * CYCLES, sizeof pause[0], cmp_u64);
        qsort(total, 2 * CYCLES, sizeof total[0], cmp_u64);
        fprintf(stderr,
                "FIGURE inject n=%d action median=%" PRIu64 " us p99=%" PRIu64 " us; target pause median=%" PRIu64
                " us p99=%" PRIu64 " us max=%" PRIu64 " us\n",
                2 * CYCLES, total[CYCLES], total[2 * CYCLES * 99 / 100], pause[CYCLES],
                pause[2 * CYCLES * 99 / 100], pause[2 * CYCLES - 1]);
        assert_int_equal(workload_stop(&w), 0);
}

static void test_traced_target_refused(void **state) {
        const char *args[] = { NULL };
        MergeContext c = context();
        Workload w;
        unsigned long last = 0;
        int ready[2];

        assert_int_equal(workload_spawn(&w, "KSM_INJECT_TARGET", args, true), 0);
        assert_int_equal(pipe(ready), 0);
        pid_t tracer = fork();
        assert_true(tracer >= 0);
        if (tracer == 0) {
                /* Another debugger: seizes the target and just sits there. */
                if (ptrace(PTRACE_SEIZE, w.pid, NULL, NULL) < 0)
                        _exit(1);
                (void) !write(ready[1], "x", 1);
                for (;;)
                        pause();
        }
        ksm_guard_track_child(tracer);
        char ch;
        assert_int_equal(read(ready[0], &ch, 1), 1);
        close(ready[0]);
        close(ready[1]);

        MergeOutcome o = apply(&c, w.pid, MERGE_ACTION_ENABLE, MERGE_METHOD_INJECT);
        assert_int_equal(o.kind, MERGE_OUTCOME_REFUSED);
        assert_int_equal(o.error, EBUSY);
        assert_non_null(strstr(o.text, "method inject refused: EBUSY (already traced by pid"));
        assert_int_equal(ksm_stat_of(w.pid).merge_any, 0);

        kill(tracer, SIGKILL);
        waitpid(tracer, NULL, 0);
        ksm_guard_untrack_child(tracer);
        assert_target_healthy(&w, &last);
        assert_int_equal(workload_stop(&w), 0);
}

static void test_seccomp_target(void **state) {
        const char *allow[] = { "--seccomp", NULL };
        const char *deny[] = { "--seccomp-deny-merge", NULL };
        MergeContext c = context();
        Workload w;
        unsigned long last = 0;

        /* A filter that lets prctl and rt_sigreturn through: the daemon reads
         * it, runs it on the exact calls, and injects. */
        assert_int_equal(workload_spawn(&w, "KSM_INJECT_TARGET", allow, true), 0);
        assert_int_equal(status_of(w.pid).seccomp, 2);
        MergeOutcome o = apply(&c, w.pid, MERGE_ACTION_ENABLE, MERGE_METHOD_INJECT);
        assert_int_equal(o.kind, MERGE_OUTCOME_DONE);
        assert_int_equal(ksm_stat_of(w.pid).merge_any, 1);
        o = apply(&c, w.pid, MERGE_ACTION_DISABLE, MERGE_METHOD_INJECT);
        assert_int_equal(o.kind, MERGE_OUTCOME_DONE);
        assert_target_healthy(&w, &last);
        assert_int_equal(workload_stop(&w), 0);

        /* One that kills on PR_SET_MEMORY_MERGE: refused, and it lives on. */
        last = 0;
        assert_int_equal(workload_spawn(&w, "KSM_INJECT_TARGET", deny, true), 0);
        o = apply(&c, w.pid, MERGE_ACTION_ENABLE, MERGE_METHOD_INJECT);
        assert_int_equal(o.kind, MERGE_OUTCOME_REFUSED);
        assert_int_equal(o.error, EACCES);
        assert_non_null(strstr(o.text, "its seccomp filter would kill the process on syscall 157"));
        assert_int_equal(ksm_stat_of(w.pid).merge_any, 0);
        assert_target_healthy(&w, &last);
        assert_int_equal(workload_stop(&w), 0);
}

static char *sigblk_of(int pid, char *buf, size_t n) {
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/%d/status", pid);
        FILE *f = fopen(path, "re");
        assert_non_null(f);
        buf[0] = 0;
        while (fgets(line, sizeof line, f))
                if (strncmp(line, "SigBlk:", 7) == 0)
                        strscpy(buf, n, line + 7);
        fclose(f);
        return buf;
}

/* A main thread in ppoll() with a temporary mask: its real mask cannot be
 * read, so the injector takes another thread and leaves it alone. */
static void test_temporary_mask_thread_skipped(void **state) {
        const char *args[] = { "--ppoll-leader", NULL };
        Workload w;
        char before[64], after[64];
        unsigned long e, m, i;

        assert_int_equal(workload_spawn(&w, "KSM_INJECT_TARGET", args, true), 0);
        usleep(50000);
        sigblk_of(w.pid, before, sizeof before);
        int pidfd = sys_pidfd_open(w.pid, 0);
        for (int k = 0; k < 20; k++) {
                InjectSyscall call = { .nr = SYS_prctl, .args = { PR_SET_MEMORY_MERGE, (uint64_t) !(k & 1) } };
                InjectStats s;
                assert_int_equal(inject_syscalls(root, pidfd, w.pid, &call, 1, NULL, &s), 0);
                assert_int_equal(call.ret, 0);
                assert_int_not_equal(s.tid, w.pid);
                if (k == 0)
                        fprintf(stderr, "leader %d in ppoll: injected through thread %d\n", w.pid, s.tid);
        }
        close(pidfd);
        /* The leader's mask, as the kernel shows it while it waits in ppoll. */
        assert_string_equal(sigblk_of(w.pid, after, sizeof after), before);
        target_report(&w, &e, &m, &i);
        assert_int_equal(e, 0);
        assert_int_equal(workload_stop(&w), 0);
}

static void test_gone_and_reused(void **state) {
        const char *args[] = { "--unique", "16", "--copies", "2", "--merge", "none", NULL };
        MergeContext c = context();
        Workload w;

        assert_int_equal(workload_start(&w, args), 0);
        ProcessAction a = { .pid = w.pid, .start_time_ticks = start_time(w.pid) + 1, .action = MERGE_ACTION_ENABLE,
                            .method = MERGE_METHOD_INJECT };
        MergeOutcome o;
        /* Another start time: the pid now names another process. */
        assert_int_equal(merge_apply_one(&c, &a, &o), 0);
        assert_int_equal(o.kind, MERGE_OUTCOME_GONE);
        assert_non_null(strstr(o.text, "pid reused"));
        assert_int_equal(ksm_stat_of(w.pid).merge_any, 0);
        int pid = w.pid;
        a.start_time_ticks = start_time(pid);
        assert_int_equal(workload_stop(&w), 0);
        assert_int_equal(merge_apply_one(&c, &a, &o), 0);
        assert_int_equal(o.kind, MERGE_OUTCOME_GONE);
        assert_int_equal(o.error, ESRCH);
}

static void test_ledger_unmerges_only_its_own(void **state) {
        const char *none[] = { "--unique", "16", "--copies", "2", "--merge", "none", NULL };
        const char *prctl[] = { "--unique", "16", "--copies", "2", "--merge", "prctl", NULL };
        MergeContext c = context();
        Workload mine, theirs;
        MergeLedger l = {};
        MergeReport r = {}, u = {};

        assert_int_equal(workload_start(&mine, none), 0);
        assert_int_equal(workload_start(&theirs, prctl), 0);
        ProcessAction a[2] = {
                { .pid = mine.pid, .start_time_ticks = start_time(mine.pid), .action = MERGE_ACTION_ENABLE,
                  .method = MERGE_METHOD_ANY },
                { .pid = theirs.pid, .start_time_ticks = start_time(theirs.pid), .action = MERGE_ACTION_ENABLE,
                  .method = MERGE_METHOD_ANY },
        };
        assert_int_equal(merge_apply(&c, a, 2, &r), 0);
        assert_int_equal(r.n, 2);
        assert_int_equal(r.outcomes[0].kind, MERGE_OUTCOME_DONE);
        assert_int_equal(r.outcomes[1].kind, MERGE_OUTCOME_ALREADY);
        assert_int_equal(merge_ledger_update(&l, &r), 1); /* changed */
        assert_int_equal(l.n, 1);
        assert_int_equal(merge_ledger_unmerge(&c, &l, &u), 0);
        assert_int_equal(u.n, 1);
        assert_int_equal(u.outcomes[0].kind, MERGE_OUTCOME_DONE);
        assert_int_equal(ksm_stat_of(mine.pid).merge_any, 0);
        /* What merged on its own keeps merging. */
        assert_int_equal(ksm_stat_of(theirs.pid).merge_any, 1);
        merge_report_done(&r);
        merge_report_done(&u);
        merge_ledger_done(&l);
        assert_int_equal(workload_stop(&mine), 0);
        assert_int_equal(workload_stop(&theirs), 0);
}

static void test_worker(void **state) {
        const char *none[] = { "--unique", "16", "--copies", "2", "--merge", "none", NULL };
        MergeContext c = context();
        MergeWorker *wk = NULL;
        MergeReport r = {};
        Workload w;

        assert_int_equal(workload_start(&w, none), 0);
        assert_int_equal(merge_worker_start(&c, &wk), 0);
        ProcessAction a = { .pid = w.pid, .start_time_ticks = start_time(w.pid), .action = MERGE_ACTION_ENABLE,
                            .method = MERGE_METHOD_INJECT };
        assert_int_equal(merge_worker_submit(wk, &a, 1), 0);
        int got = 0;
        for (int i = 0; i < 500 && got == 0; i++) {
                usleep(10000);
                got = merge_worker_take(wk, &r);
        }
        assert_int_equal(got, 1);
        assert_int_equal(r.n, 1);
        assert_int_equal(r.outcomes[0].kind, MERGE_OUTCOME_DONE);
        assert_int_equal(ksm_stat_of(w.pid).merge_any, 1);
        /* UnmergeOnExit=yes at stop: what the worker enabled is disabled. */
        merge_report_done(&r);
        assert_int_equal(merge_worker_unmerge_all(wk, now_usec(CLOCK_MONOTONIC) + 5 * USEC_PER_SEC, &r), 0);
        assert_int_equal(r.n, 1);
        assert_int_equal(r.outcomes[0].kind, MERGE_OUTCOME_DONE);
        assert_int_equal(ksm_stat_of(w.pid).merge_any, 0);
        merge_report_done(&r);
        merge_worker_stop(wk);
        assert_int_equal(workload_stop(&w), 0);
}

/* Whether [start, end) is within a VM_MERGEABLE range of pid (smaps). */
static bool range_marked(int pid, uintptr_t start, uintptr_t end) {
        int dfd;
        MapList l = {};
        bool marked = false;
        assert_int_equal(root_open_pid_dir(root, pid, &dfd), 0);
        assert_int_equal(proc_smaps_read_mergeable(dfd, &l), 0);
        close(dfd);
        for (size_t i = 0; i < l.n; i++)
                if (l.ranges[i].start <= start && end <= l.ranges[i].end)
                        marked = true;
        map_list_done(&l);
        return marked;
}

static MergeOutcome worker_apply(MergeWorker *wk, int pid, MergeAction action) {
        ProcessAction a = { .pid = pid, .start_time_ticks = start_time(pid), .action = action,
                            .method = MERGE_METHOD_INJECT };
        MergeReport r = {};
        int got = 0;
        assert_int_equal(merge_worker_submit(wk, &a, 1), 0);
        for (int i = 0; i < 1000 && got == 0; i++) {
                usleep(10000);
                got = merge_worker_take(wk, &r);
        }
        assert_int_equal(got, 1);
        assert_int_equal(r.n, 1);
        MergeOutcome o = r.outcomes[0];
        fprintf(stderr, "pid %d %s -> %s: %s\n", pid, action == MERGE_ACTION_ENABLE ? "enable" : "disable",
                merge_outcome_kind_to_string(o.kind), o.text);
        merge_report_done(&r);
        return o;
}

/* Issue 14, Q1: a process that keeps marking new ranges itself (QEMU adding
 * memory backends over QMP) is taken out, its own ranges unmarked although
 * ksm_mergeable reads 1 again at once, and given back those ranges although
 * it is "merging" by its new marks at readmission. */
static void test_self_marking_churner_out_and_back(void **state) {
        const char *args[] = { "--unique", "64", "--copies", "2", "--merge", "madvise", "--churn-threads", "1",
                               "--churn-mib", "4", "--churn-mark", "yes", NULL };
        const size_t len = 128 * (size_t) sysconf(_SC_PAGESIZE);
        MergeContext c = context();
        MergeWorker *wk = NULL;
        Workload w;

        assert_int_equal(workload_start(&w, args), 0);
        assert_true(range_marked(w.pid, w.addr, w.addr + len));
        assert_int_equal(merge_worker_start(&c, &wk), 0);

        MergeOutcome o = worker_apply(wk, w.pid, MERGE_ACTION_DISABLE);
        assert_int_equal(o.kind, MERGE_OUTCOME_DONE);
        assert_false(range_marked(w.pid, w.addr, w.addr + len));
        assert_int_equal(ksm_stat_of(w.pid).merge_any, 0);

        o = worker_apply(wk, w.pid, MERGE_ACTION_ENABLE);
        assert_int_equal(o.kind, MERGE_OUTCOME_DONE);
        assert_true(range_marked(w.pid, w.addr, w.addr + len));
        /* its ranges, not the whole mm */
        assert_int_equal(ksm_stat_of(w.pid).merge_any, 0);

        merge_worker_stop(wk);
        assert_int_equal(workload_stop(&w), 0);
}

/* The injector runs in a child that parks at one phase; the test kills it
 * there with SIGKILL, as if the daemon had been killed mid-injection. */
typedef struct Park {
        InjectPhase at;
        int fd;
} Park;

static void park_hook(InjectPhase p, void *userdata) {
        const Park *k = userdata;
        if (p != k->at)
                return;
        (void) !write(k->fd, "p", 1);
        for (;;)
                pause();
}

static void kill_injector_at(Workload *w, InjectPhase phase, unsigned long *last) {
        int ready[2];
        assert_int_equal(pipe(ready), 0);
        pid_t inj = fork();
        assert_true(inj >= 0);
        if (inj == 0) {
                Park k = { .at = phase, .fd = ready[1] };
                InjectOptions o = { .phase_hook = park_hook, .userdata = &k };
                int pidfd = sys_pidfd_open(w->pid, 0);
                InjectSyscall call = { .nr = SYS_prctl, .args = { PR_SET_MEMORY_MERGE, 1 } };
                int r = inject_syscalls(root, pidfd, w->pid, &call, 1, &o, NULL);
                _exit(r < 0 ? 1 : 2); /* not parked: a failure */
        }
        ksm_guard_track_child(inj);
        char ch;
        assert_int_equal(read(ready[0], &ch, 1), 1);
        close(ready[0]);
        close(ready[1]);
        kill(inj, SIGKILL);
        int st;
        assert_int_equal(waitpid(inj, &st, 0), inj);
        ksm_guard_untrack_child(inj);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        int merge_any = ksm_stat_of(w->pid).merge_any;
        fprintf(stderr, "injector killed at %-13s: target state %c, merge_any=%d\n", inject_phase_to_string(phase),
                state_of(w->pid), merge_any);
        check_target_healthy(w, last, false);
}

static void test_sigkill_injector_mid_injection(void **state) {
        const char *args[] = { NULL };
        MergeContext c = context();
        Workload w;
        unsigned long last = 0;

        assert_int_equal(workload_spawn(&w, "KSM_INJECT_TARGET", args, true), 0);
        assert_target_healthy(&w, &last);
        for (int round = 0; round < 3; round++)
                for (InjectPhase p = 0; p < _INJECT_PHASE_MAX; p++) {
                        kill_injector_at(&w, p, &last);
                        /* And the next injection works as usual. */
                        MergeOutcome o = apply(&c, w.pid, MERGE_ACTION_DISABLE, MERGE_METHOD_INJECT);
                        assert_true(o.kind == MERGE_OUTCOME_DONE || o.kind == MERGE_OUTCOME_ALREADY);
                }

        /* Kills at random moments of back-to-back injections. */
        srand(42);
        for (int i = 0; i < 40; i++) {
                pid_t inj = fork();
                assert_true(inj >= 0);
                if (inj == 0) {
                        int pidfd = sys_pidfd_open(w.pid, 0);
                        for (long k = 0;; k++) {
                                InjectSyscall call = { .nr = SYS_prctl, .args = { PR_SET_MEMORY_MERGE, k & 1 } };
                                (void) inject_syscalls(root, pidfd, w.pid, &call, 1, NULL, NULL);
                        }
                }
                ksm_guard_track_child(inj);
                usleep(2000 + (unsigned) (rand() % 20000));
                kill(inj, SIGKILL);
                waitpid(inj, NULL, 0);
                ksm_guard_untrack_child(inj);
                char st = state_of(w.pid);
                assert_true(st != 'T' && st != 't');
        }
        check_target_healthy(&w, &last, false);
        assert_int_equal(workload_stop(&w), 0);
}

/* The target dies (SIGKILL) at each phase of an injection: the injector
 * answers ESRCH, leaves nothing attached, and the target's own parent (this
 * test; the injector is a separate process that stays alive meanwhile) can
 * reap it at once -- a tracer that never waits for a dead tracee keeps it
 * from its parent; the injector waits 20 ms, then leaves the exit to
 * inject_poll_abandoned(). */
typedef struct Killer {
        InjectPhase at;
        pid_t target;
} Killer;

static void kill_hook(InjectPhase p, void *userdata) {
        const Killer *k = userdata;
        if (p == k->at)
                kill(k->target, SIGKILL);
}

static void test_target_exits_mid_injection(void **state) {
        const char *args[] = { "--unique", "16", "--copies", "1", "--merge", "none", NULL };
        for (InjectPhase p = INJECT_PHASE_SEIZED; p <= INJECT_PHASE_FINAL_STOP; p++) {
                Workload w;
                int done[2];
                assert_int_equal(workload_start(&w, args), 0);
                assert_int_equal(pipe(done), 0);
                pid_t inj = fork();
                assert_true(inj >= 0);
                if (inj == 0) {
                        Killer k = { .at = p, .target = w.pid };
                        InjectOptions o = { .phase_hook = kill_hook, .userdata = &k };
                        InjectSyscall call = { .nr = SYS_prctl, .args = { PR_SET_MEMORY_MERGE, 1 } };
                        int pidfd = sys_pidfd_open(w.pid, 0);
                        int r = inject_syscalls(root, pidfd, w.pid, &call, 1, &o, NULL);
                        /* An exit not reported within 20 ms waits on the
                         * injecting thread's abandoned list, which the merge
                         * worker serves every 5 ms; so does this one. */
                        while (inject_poll_abandoned() > 0)
                                usleep(1000);
                        (void) !write(done[1], &r, sizeof r);
                        for (;;)
                                pause();
                }
                ksm_guard_track_child(inj);
                int r = 0;
                assert_int_equal(read(done[0], &r, sizeof r), (ssize_t) sizeof r);
                close(done[0]);
                close(done[1]);
                fprintf(stderr, "target killed at %-13s: inject -> %s\n", inject_phase_to_string(p),
                        strerrorname_np(-r) ?: "0");
                assert_int_equal(r, -ESRCH);
                int st = 0;
                pid_t got = 0;
                for (int i = 0; i < 200 && got == 0; i++) {
                        got = waitpid(w.pid, &st, WNOHANG);
                        if (got == 0)
                                usleep(10000);
                }
                assert_int_equal(got, w.pid);
                assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
                ksm_guard_untrack_child(w.pid);
                close(w.stdin_fd);
                kill(inj, SIGKILL);
                waitpid(inj, NULL, 0);
                ksm_guard_untrack_child(inj);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_remote_madvise_reported),
                cmocka_unit_test(test_merge_by_each_mechanism),
                cmocka_unit_test(test_already_merging_untouched),
                cmocka_unit_test(test_integrity_through_repeated_injections),
                cmocka_unit_test(test_traced_target_refused),
                cmocka_unit_test(test_seccomp_target),
                cmocka_unit_test(test_temporary_mask_thread_skipped),
                cmocka_unit_test(test_gone_and_reused),
                cmocka_unit_test(test_ledger_unmerges_only_its_own),
                cmocka_unit_test(test_worker),
                cmocka_unit_test(test_self_marking_churner_out_and_back),
                cmocka_unit_test(test_sigkill_injector_mid_injection),
                cmocka_unit_test(test_target_exits_mid_injection),
        };
        ksm_guard_acquire();
        if (!inject_supported()) {
                fprintf(stderr, "SKIP: injection needs x86-64\n");
                return 77;
        }
        if (root_open(NULL, &root) < 0 || probe_run(root, &probe) < 0)
                return 1;
        int r = cmocka_run_group_tests(tests, NULL, NULL);
        ksm_guard_restore();
        root_free(root);
        return r;
}
