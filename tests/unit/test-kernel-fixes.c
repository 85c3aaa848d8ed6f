/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The seed fixes told from behaviour (kernel-fixes.c) and what the daemon
 * does because of them: evidence evaluation, the chunked unmerge plan of
 * seed 003, the smart_scan workaround of 004, the pending skips of 000 and
 * the churners that 001 protects. Pure: hand-built windows and probes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "controller.h"
#include "kernel-fixes.h"
#include "model.h"
#include "util.h"

#define GIB (UINT64_C(1) << 30)
#define TIB (UINT64_C(1) << 40)

static void add(ContentionWindow *w, TraceEventType type, int pid, int tgid, uint64_t mm, bool write, bool success,
                uint64_t t_nsec) {
        TraceEvent e = { .type = type, .pid = pid, .tgid = tgid, .mm = mm, .write = write, .success = success,
                         .time_nsec = t_nsec };
        strscpy(e.comm, sizeof e.comm, "churn");
        contention_window_add(w, &e);
}

/* A writer (812) holds mm 0xA while ksmd (39) waits wait_usec for it. */
static void contended_wait(ContentionWindow *w, uint64_t t0, uint64_t wait_usec) {
        add(w, TRACE_EVENT_ACQUIRE_RETURNED, 813, 812, 0xA, true, true, t0);
        add(w, TRACE_EVENT_START_LOCKING, 39, -1, 0xA, false, false, t0 + 1000);
        add(w, TRACE_EVENT_RELEASED, 813, 812, 0xA, true, false, t0 + wait_usec * 1000);
        add(w, TRACE_EVENT_ACQUIRE_RETURNED, 39, -1, 0xA, false, true, t0 + wait_usec * 1000 + 500);
}

static void test_init_unknown(void **state) {
        KernelFixes k;
        kernel_fixes_init(&k);
        for (KernelFixId i = 0; i < _KERNEL_FIX_MAX; i++) {
                assert_int_equal(k.fix[i].state, FIX_UNKNOWN);
                assert_true(strlen(k.fix[i].evidence) > 0);
                assert_true(strlen(kernel_fix_adaptation(&k, i)) > 0);
        }
        assert_string_equal(kernel_fix_id_to_string(KERNEL_FIX_RANGE_WALK), "range-walk");
        assert_string_equal(kernel_fix_seed(KERNEL_FIX_SMART_SCAN), "004");
        assert_string_equal(fix_state_to_string(FIX_NO), "no");
}

static void test_unmerge_probe(void **state) {
        KernelFixes k;

        /* stock 6.18 as measured here: 463 us and 4.93 ms */
        kernel_fixes_init(&k);
        kernel_fixes_note_unmerge_probe(&k, &(UnmergeProbe) { .small_pages = 4096, .small_nsec = 463000,
                                                             .large_pages = 65536, .large_nsec = 4930000 });
        assert_int_equal(k.fix[KERNEL_FIX_RANGE_WALK].state, FIX_NO);
        assert_non_null(strstr(k.fix[KERNEL_FIX_RANGE_WALK].evidence, "every page is walked (75 ns each)"));
        assert_true(k.unmerge_nsec_per_page > 70 && k.unmerge_nsec_per_page < 80);

        /* the range walk: flat, and below the timer's noise */
        kernel_fixes_init(&k);
        kernel_fixes_note_unmerge_probe(&k, &(UnmergeProbe) { .small_pages = 4096, .small_nsec = 2100,
                                                             .large_pages = 65536, .large_nsec = 3900 });
        assert_int_equal(k.fix[KERNEL_FIX_RANGE_WALK].state, FIX_YES);
        assert_string_equal(kernel_fix_adaptation(&k, KERNEL_FIX_RANGE_WALK), "processes are switched off in one call");
        kernel_fixes_note_unmerge_probe(&k, &(UnmergeProbe) { .small_pages = 4096, .small_nsec = 300,
                                                             .large_pages = 65536, .large_nsec = 200 });
        assert_int_equal(k.fix[KERNEL_FIX_RANGE_WALK].state, FIX_YES);

        /* a slow emulator, stock: both slow, ratio 16 */
        kernel_fixes_note_unmerge_probe(&k, &(UnmergeProbe) { .small_pages = 4096, .small_nsec = 20000000,
                                                             .large_pages = 65536, .large_nsec = 320000000 });
        assert_int_equal(k.fix[KERNEL_FIX_RANGE_WALK].state, FIX_NO);

        /* in between: unknown, not a guess */
        kernel_fixes_note_unmerge_probe(&k, &(UnmergeProbe) { .small_pages = 4096, .small_nsec = 1000000,
                                                             .large_pages = 65536, .large_nsec = 3000000 });
        assert_int_equal(k.fix[KERNEL_FIX_RANGE_WALK].state, FIX_UNKNOWN);
        /* the stock 6.12 guest under TCG on a loaded host: 4.57 ms, 36 ms */
        kernel_fixes_note_unmerge_probe(&k, &(UnmergeProbe) { .small_pages = 4096, .small_nsec = 4570000,
                                                             .large_pages = 65536, .large_nsec = 36000000 });
        assert_int_equal(k.fix[KERNEL_FIX_RANGE_WALK].state, FIX_NO);

        /* overran: unknown, and the cost is at least what it waited */
        kernel_fixes_init(&k);
        kernel_fixes_note_unmerge_probe(&k, &(UnmergeProbe) { .error = ETIMEDOUT, .small_pages = 4096,
                                                             .large_pages = 65536, .large_nsec = 5000000000 });
        assert_int_equal(k.fix[KERNEL_FIX_RANGE_WALK].state, FIX_UNKNOWN);
        assert_non_null(strstr(k.fix[KERNEL_FIX_RANGE_WALK].evidence, "overran"));
        assert_true(k.unmerge_nsec_per_page > 70000);

        kernel_fixes_init(&k);
        kernel_fixes_note_unmerge_probe(&k, &(UnmergeProbe) { .error = EINVAL });
        assert_int_equal(k.fix[KERNEL_FIX_RANGE_WALK].state, FIX_UNKNOWN);
        assert_non_null(strstr(k.fix[KERNEL_FIX_RANGE_WALK].evidence, "EINVAL"));
}

static void test_trylock_evidence(void **state) {
        KernelFixes k;
        ContentionWindow w;

        /* blocking waits behind a writer, no failed try, on a kernel
         * whose unstable-tree walk takes the mmap lock: unknown until there
         * were enough of them, then "no" */
        kernel_fixes_init(&k);
        k.fix[KERNEL_FIX_PER_VMA].state = FIX_NO;
        for (unsigned i = 0; i < KERNEL_FIX_TRYLOCK_NO_WAITS; i++) {
                contention_window_init(&w, 39);
                contended_wait(&w, 1000000, 500);
                assert_false(k.fix[KERNEL_FIX_TRYLOCK].state == FIX_NO);
                (void) kernel_fixes_note_window(&k, &w, 0, 0);
        }
        assert_int_equal(k.fix[KERNEL_FIX_TRYLOCK].state, FIX_NO);
        assert_int_equal(k.ksmd_contended_waits, KERNEL_FIX_TRYLOCK_NO_WAITS);

        /* the same waits where the daemon could not confirm whose the
         * writer was (gone, its trace pid a stale hint: tgid -1, not
         * blamed) still tell the kernel's lock: they count */
        kernel_fixes_init(&k);
        k.fix[KERNEL_FIX_PER_VMA].state = FIX_NO;
        for (unsigned i = 0; i < KERNEL_FIX_TRYLOCK_NO_WAITS; i++) {
                contention_window_init(&w, 39);
                contended_wait(&w, 1000000, 500);
                for (size_t j = 0; j < w.n_holders; j++)
                        if (w.holders[j].write_locks > 0) {
                                assert_int_equal(w.holders[j].n_tids, 1);
                                assert_int_equal(w.holders[j].tids[0], 813);
                                w.holders[j].tgid = -1;
                        }
                (void) kernel_fixes_note_window(&k, &w, 0, 0);
        }
        assert_int_equal(k.ksmd_contended_waits, KERNEL_FIX_TRYLOCK_NO_WAITS);
        assert_int_equal(k.fix[KERNEL_FIX_TRYLOCK].state, FIX_NO);

        /* the same where the walk uses VMA locks (per-vma yes): ksmd's
         * scan still blocks there, the trylock is only a fallback, so the
         * waits say nothing about it */
        {
                kernel_fixes_init(&k);
                k.fix[KERNEL_FIX_PER_VMA].state = FIX_YES;
                for (unsigned i = 0; i < 2 * KERNEL_FIX_TRYLOCK_NO_WAITS; i++) {
                        contention_window_init(&w, 39);
                        contended_wait(&w, 1000000, 500);
                        (void) kernel_fixes_note_window(&k, &w, 0, 0);
                }
                assert_int_equal(k.fix[KERNEL_FIX_TRYLOCK].state, FIX_UNKNOWN);
        }

        /* where the kprobes can tell 001, waits say "no" only once they
         * said no (the patched guest's bench read "no" from its scan's
         * waits before they said yes) */
        {
                kernel_fixes_init(&k);
                kernel_fixes_set_vma_probe(&k, "lock_vma_under_rcu");
                for (unsigned i = 0; i < 2 * KERNEL_FIX_TRYLOCK_NO_WAITS; i++) {
                        contention_window_init(&w, 39);
                        contended_wait(&w, 1000000, 500);
                        (void) kernel_fixes_note_window(&k, &w, 0, 0);
                }
                assert_int_equal(k.fix[KERNEL_FIX_TRYLOCK].state, FIX_UNKNOWN);
                k.fix[KERNEL_FIX_PER_VMA].state = FIX_NO;
                contention_window_init(&w, 39);
                contended_wait(&w, 1000000, 500);
                (void) kernel_fixes_note_window(&k, &w, 0, 0);
                assert_int_equal(k.fix[KERNEL_FIX_TRYLOCK].state, FIX_NO);
        }
        /* and a "no" taken before 001 turned yes goes back to unknown */
        {
                kernel_fixes_init(&k);
                for (unsigned i = 0; i < KERNEL_FIX_TRYLOCK_NO_WAITS; i++) {
                        contention_window_init(&w, 39);
                        contended_wait(&w, 1000000, 500);
                        (void) kernel_fixes_note_window(&k, &w, 0, 0);
                }
                assert_int_equal(k.fix[KERNEL_FIX_TRYLOCK].state, FIX_NO);
                k.fix[KERNEL_FIX_PER_VMA].state = FIX_YES;
                contention_window_init(&w, 39);
                assert_true(kernel_fixes_note_window(&k, &w, 0, 0));
                assert_int_equal(k.fix[KERNEL_FIX_TRYLOCK].state, FIX_UNKNOWN);
                assert_non_null(strstr(k.fix[KERNEL_FIX_TRYLOCK].evidence, "fallback"));
        }

        /* a wait shorter than the contention threshold is no evidence */
        kernel_fixes_init(&k);
        for (unsigned i = 0; i < 2 * KERNEL_FIX_TRYLOCK_NO_WAITS; i++) {
                contention_window_init(&w, 39);
                contended_wait(&w, 1000000, 5);
                (void) kernel_fixes_note_window(&k, &w, 0, 0);
        }
        assert_int_equal(k.fix[KERNEL_FIX_TRYLOCK].state, FIX_UNKNOWN);

        /* one failed try (success=false, no start_locking) says yes, and
         * overrides an earlier "no" */
        kernel_fixes_init(&k);
        k.fix[KERNEL_FIX_PER_VMA].state = FIX_NO;
        for (unsigned i = 0; i < KERNEL_FIX_TRYLOCK_NO_WAITS; i++) {
                contention_window_init(&w, 39);
                contended_wait(&w, 1000000, 500);
                (void) kernel_fixes_note_window(&k, &w, 0, 0);
        }
        contention_window_init(&w, 39);
        add(&w, TRACE_EVENT_ACQUIRE_RETURNED, 39, -1, 0xA, false, false, 5000);
        assert_true(kernel_fixes_note_window(&k, &w, 0, 0));
        assert_int_equal(k.fix[KERNEL_FIX_TRYLOCK].state, FIX_YES);
        assert_int_equal(k.ksmd_trylock_failures, 1);
        assert_false(kernel_fixes_note_window(&k, &w, 0, 0));      /* no change: nothing to log */
}

static ContentionWindow *ksmd_locks(unsigned n, uint64_t lost) {
        static ContentionWindow w;
        contention_window_init(&w, 39);
        for (unsigned i = 0; i < n; i++)
                add(&w, TRACE_EVENT_ACQUIRE_RETURNED, 39, -1, 0xB, false, true, (uint64_t) i * 1000);
        w.lost_events = lost;
        return &w;
}

static void windows(KernelFixes *k, unsigned n, unsigned locks, uint64_t lost, uint64_t scanned, uint64_t tree) {
        for (unsigned i = 0; i < n; i++)
                (void) kernel_fixes_note_window(k, ksmd_locks(locks, lost), scanned, tree);
}

static void test_per_vma_evidence(void **state) {
        KernelFixes k;

        /* one lock per scanned page with a tree of 4096: the scan's own lock
         * only, the lookups took none (kpatch's 0002 on 6.12); decided once
         * 8 windows and 20000 pages were seen */
        kernel_fixes_init(&k);
        windows(&k, 7, 30, 0, 3000, 4096);
        assert_int_equal(k.fix[KERNEL_FIX_PER_VMA].state, FIX_UNKNOWN);
        windows(&k, 1, 30, 0, 3000, 4096);
        assert_int_equal(k.fix[KERNEL_FIX_PER_VMA].state, FIX_YES);
        assert_non_null(strstr(k.fix[KERNEL_FIX_PER_VMA].evidence, "240 mmap locks for 24000 scanned pages in 8 windows"));
        /* about one per page (kpatch's 6.12 port) or 0.32 (6.18): unknown */
        kernel_fixes_init(&k);
        windows(&k, 20, 3300, 0, 3000, 4096);
        assert_int_equal(k.fix[KERNEL_FIX_PER_VMA].state, FIX_UNKNOWN);
        assert_non_null(strstr(k.fix[KERNEL_FIX_PER_VMA].evidence, "neither stock 6.12's 3+"));

        /* pages_scanned moves once per batch: windows credited a whole
         * batch or nothing (0.11 and 16 "per page" seen on 6.18) average
         * out to what a stock ksmd takes */
        kernel_fixes_init(&k);
        for (int i = 0; i < 8; i++) {
                (void) kernel_fixes_note_window(&k, ksmd_locks(4240, 0), 38190, 16384);
                (void) kernel_fixes_note_window(&k, ksmd_locks(5460, 0), 345, 16384);
        }
        assert_int_equal(k.fix[KERNEL_FIX_PER_VMA].state, FIX_UNKNOWN);
        /* then a stretch at ~11 per page: the sums cross 3 per page */
        for (int i = 0; i < 16; i++)
                (void) kernel_fixes_note_window(&k, ksmd_locks(11000, 0), 1000, 16384);
        assert_int_equal(k.fix[KERNEL_FIX_PER_VMA].state, FIX_UNKNOWN);
        for (int i = 0; i < 16; i++)
                (void) kernel_fixes_note_window(&k, ksmd_locks(110000, 0), 10000, 16384);
        assert_int_equal(k.fix[KERNEL_FIX_PER_VMA].state, FIX_NO);

        /* windows that saw none of ksmd's locks never make "few" */
        kernel_fixes_init(&k);
        windows(&k, 20, 0, 0, 1425, 11182);
        assert_int_equal(k.fix[KERNEL_FIX_PER_VMA].state, FIX_UNKNOWN);
        /* an empty tree: a stock ksmd takes one per page too */
        windows(&k, 20, 1100, 0, 1000, 10);
        assert_int_equal(k.fix[KERNEL_FIX_PER_VMA].state, FIX_UNKNOWN);
        /* windows that lost events cannot say "few" */
        windows(&k, 20, 1100, 10, 1000, 4096);
        assert_int_equal(k.fix[KERNEL_FIX_PER_VMA].state, FIX_UNKNOWN);
        /* but they can say "many": stock, ~11 per page for a tree of 4096 */
        kernel_fixes_init(&k);
        windows(&k, 8, 11000, 10, 3000, 4096);
        assert_int_equal(k.fix[KERNEL_FIX_PER_VMA].state, FIX_NO);
        /* and "no" is not undone by quiet windows */
        windows(&k, 40, 1100, 0, 1000, 4096);
        assert_int_equal(k.fix[KERNEL_FIX_PER_VMA].state, FIX_NO);
}

/* A window with the seed-001 kprobes armed in which ksmd took `locks` mmap
 * locks and hit the probes `vma` times. */
static ContentionWindow *probed(unsigned locks, unsigned vma, uint64_t lost) {
        ContentionWindow *w = ksmd_locks(locks, lost);
        contention_window_set_vma_probe(w, true);
        for (unsigned i = 0; i < vma; i++)
                add(w, TRACE_EVENT_VMA_LOCK, 39, -1, 0, false, false, (uint64_t) i * 1000 + 7);
        /* a hit of another task (a filter that did not take) is not ksmd's */
        add(w, TRACE_EVENT_VMA_LOCK, 812, 812, 0, false, false, 3);
        return w;
}

static void test_per_vma_probe(void **state) {
        KernelFixes k;

        /* without probes placed, windows are never armed */
        kernel_fixes_init(&k);
        assert_false(kernel_fixes_want_vma_probe(&k));
        kernel_fixes_set_vma_probe(&k, "lock_vma_under_rcu");
        assert_true(kernel_fixes_want_vma_probe(&k));

        /* one hit by ksmd: yes at once, whatever the lock count says
         * (kpatch's port: about one mmap lock per page, "unknown" by count) */
        (void) kernel_fixes_note_window(&k, probed(3000, 1, 0), 3000, 4096);
        assert_int_equal(k.fix[KERNEL_FIX_PER_VMA].state, FIX_YES);
        assert_non_null(strstr(k.fix[KERNEL_FIX_PER_VMA].evidence, "1 VMA read locks (kprobe on lock_vma_under_rcu)"));
        assert_false(kernel_fixes_want_vma_probe(&k));
        /* and later unarmed windows at 3+ per page do not undo it */
        windows(&k, 20, 11000, 0, 3000, 4096);
        assert_int_equal(k.fix[KERNEL_FIX_PER_VMA].state, FIX_YES);

        /* another task's hits never count */
        kernel_fixes_init(&k);
        kernel_fixes_set_vma_probe(&k, "lock_vma_under_rcu");
        for (int i = 0; i < 7; i++)
                (void) kernel_fixes_note_window(&k, probed(3000, 0, 0), 3000, 4096);
        assert_int_equal(k.fix[KERNEL_FIX_PER_VMA].state, FIX_UNKNOWN);
        /* no hit in 8 armed windows that scanned 24000 pages with lookups
         * to do: no, even at ~1 lock per page (which the count leaves
         * unknown: 6.18 takes 0.32) */
        (void) kernel_fixes_note_window(&k, probed(3000, 0, 0), 3000, 4096);
        assert_int_equal(k.fix[KERNEL_FIX_PER_VMA].state, FIX_NO);
        assert_non_null(strstr(k.fix[KERNEL_FIX_PER_VMA].evidence, "no VMA read lock (kprobe on lock_vma_under_rcu)"));
        assert_false(kernel_fixes_want_vma_probe(&k));

        /* an empty tree (no lookups) or lost events decide nothing */
        kernel_fixes_init(&k);
        kernel_fixes_set_vma_probe(&k, "lock_vma_under_rcu, lock_next_vma");
        for (int i = 0; i < 20; i++) {
                (void) kernel_fixes_note_window(&k, probed(3000, 0, 0), 3000, 10);
                (void) kernel_fixes_note_window(&k, probed(3000, 0, 5), 3000, 4096);
        }
        assert_int_equal(k.fix[KERNEL_FIX_PER_VMA].state, FIX_UNKNOWN);
        /* nor does the lock count, while the probes have the say: ~1 per
         * page without probes would stay unknown, < 0.1 would be yes */
        windows(&k, 20, 100, 0, 3000, 4096);
        assert_int_equal(k.fix[KERNEL_FIX_PER_VMA].state, FIX_UNKNOWN);
        assert_true(kernel_fixes_want_vma_probe(&k));
}

static void test_smart_scan_skips(void **state) {
        KernelFixes k;

        /* aligned: multiples of 8 skip nothing, the others do */
        kernel_fixes_init(&k);
        for (uint64_t seq = 1; seq <= 24; seq++)
                (void) kernel_fixes_note_scan_skips(&k, seq, seq % 8 == 0 ? 0 : 900);
        assert_int_equal(k.fix[KERNEL_FIX_SMART_SCAN].state, FIX_YES);
        /* a multiple of 8 that skipped: not aligned, and that wins */
        assert_true(kernel_fixes_note_scan_skips(&k, 32, 17));
        assert_int_equal(k.fix[KERNEL_FIX_SMART_SCAN].state, FIX_NO);
        assert_non_null(strstr(k.fix[KERNEL_FIX_SMART_SCAN].evidence, "full scan 32 (a multiple of 8) skipped 17"));
        for (uint64_t seq = 33; seq <= 80; seq++)
                (void) kernel_fixes_note_scan_skips(&k, seq, seq % 8 == 0 ? 0 : 900);
        assert_int_equal(k.fix[KERNEL_FIX_SMART_SCAN].state, FIX_NO);

        /* nothing skipped at all (young pages, smart_scan's first scans):
         * no evidence either way */
        kernel_fixes_init(&k);
        for (uint64_t seq = 1; seq <= 40; seq++)
                (void) kernel_fixes_note_scan_skips(&k, seq, 0);
        assert_int_equal(k.fix[KERNEL_FIX_SMART_SCAN].state, FIX_UNKNOWN);
}

static void test_khugepaged(void **state) {
        ContentionWindow w;
        KernelFixes k;
        const int khugepaged = 55;

        /* khugepaged write-locks the process's mm (a collapse) and ksmd
         * waits for it: khugepaged's wait, the process is not blamed */
        contention_window_init(&w, 39);
        contention_window_set_khugepaged(&w, khugepaged);
        add(&w, TRACE_EVENT_ACQUIRE_RETURNED, 813, 812, 0xA, true, true, 0);   /* the process wrote once */
        add(&w, TRACE_EVENT_RELEASED, 813, 812, 0xA, true, false, 1000);
        add(&w, TRACE_EVENT_ACQUIRE_RETURNED, khugepaged, khugepaged, 0xA, true, true, 2000);
        add(&w, TRACE_EVENT_START_LOCKING, 39, -1, 0xA, false, false, 3000);
        add(&w, TRACE_EVENT_RELEASED, khugepaged, khugepaged, 0xA, true, false, 5000000);
        add(&w, TRACE_EVENT_ACQUIRE_RETURNED, 39, -1, 0xA, false, true, 5001000);
        assert_int_equal(w.n_holders, 1);
        assert_int_equal(w.holders[0].tgid, 812);
        assert_int_equal(w.holders[0].ksmd_waits, 0);
        assert_int_equal(w.holders[0].ksmd_wait_nsec, 0);
        assert_int_equal(w.holders[0].khugepaged_write_locks, 1);
        assert_true(w.khugepaged_wait_nsec >= 4990000);
        assert_null(contention_window_worst(&w));
        Model m;
        model_init(&m, 4096, 64);
        model_add_window(&m, &w, 1, 200 * USEC_PER_MSEC, 0);
        assert_int_equal(m.n_contenders, 0);

        /* without khugepaged's pid the same trace blamed the process */
        contention_window_init(&w, 39);
        add(&w, TRACE_EVENT_ACQUIRE_RETURNED, 813, 812, 0xA, true, true, 0);
        add(&w, TRACE_EVENT_RELEASED, 813, 812, 0xA, true, false, 1000);
        add(&w, TRACE_EVENT_ACQUIRE_RETURNED, khugepaged, khugepaged, 0xA, true, true, 2000);
        add(&w, TRACE_EVENT_START_LOCKING, 39, -1, 0xA, false, false, 3000);
        add(&w, TRACE_EVENT_RELEASED, khugepaged, khugepaged, 0xA, true, false, 5000000);
        add(&w, TRACE_EVENT_ACQUIRE_RETURNED, 39, -1, 0xA, false, true, 5001000);
        assert_int_equal(w.holders[0].ksmd_waits, 1);

        /* seed 002: read lock released, a writer in, taken again at once */
        kernel_fixes_init(&k);
        contention_window_init(&w, 39);
        contention_window_set_khugepaged(&w, khugepaged);
        add(&w, TRACE_EVENT_START_LOCKING, khugepaged, khugepaged, 0xC, false, false, 0);
        add(&w, TRACE_EVENT_ACQUIRE_RETURNED, khugepaged, khugepaged, 0xC, false, true, 100);
        add(&w, TRACE_EVENT_RELEASED, khugepaged, khugepaged, 0xC, false, false, 90000000);
        add(&w, TRACE_EVENT_ACQUIRE_RETURNED, 901, 900, 0xC, true, true, 90000100);
        add(&w, TRACE_EVENT_RELEASED, 901, 900, 0xC, true, false, 90000300);
        add(&w, TRACE_EVENT_START_LOCKING, khugepaged, khugepaged, 0xC, false, false, 90000400);
        add(&w, TRACE_EVENT_ACQUIRE_RETURNED, khugepaged, khugepaged, 0xC, false, true, 90000450);
        /* not yet: a collapse's revalidation looks the same so far */
        assert_int_equal(w.khugepaged_yields, 0);
        /* its walk goes on: released, then its next read lock */
        add(&w, TRACE_EVENT_RELEASED, khugepaged, khugepaged, 0xC, false, false, 95000000);
        add(&w, TRACE_EVENT_START_LOCKING, khugepaged, khugepaged, 0xF, false, false, 105000000);
        assert_int_equal(w.khugepaged_yields, 1);
        assert_true(kernel_fixes_note_window(&k, &w, 0, 0));
        assert_int_equal(k.fix[KERNEL_FIX_KHUGEPAGED].state, FIX_YES);

        /* a stock khugepaged moving on to the next mm, or taking the lock
         * again much later, is no yield */
        contention_window_init(&w, 39);
        contention_window_set_khugepaged(&w, khugepaged);
        add(&w, TRACE_EVENT_RELEASED, khugepaged, khugepaged, 0xC, false, false, 1000);
        add(&w, TRACE_EVENT_ACQUIRE_RETURNED, 901, 900, 0xC, true, true, 2000);
        add(&w, TRACE_EVENT_START_LOCKING, khugepaged, khugepaged, 0xD, false, false, 3000);
        add(&w, TRACE_EVENT_RELEASED, khugepaged, khugepaged, 0xD, false, false, 4000);
        add(&w, TRACE_EVENT_ACQUIRE_RETURNED, 901, 900, 0xD, true, true, 5000);
        add(&w, TRACE_EVENT_START_LOCKING, khugepaged, khugepaged, 0xD, false, false, 10005000);
        /* nor its own collapse (it writes itself in between) */
        add(&w, TRACE_EVENT_RELEASED, khugepaged, khugepaged, 0xE, false, false, 20000000);
        add(&w, TRACE_EVENT_ACQUIRE_RETURNED, khugepaged, khugepaged, 0xE, true, true, 20000100);
        add(&w, TRACE_EVENT_RELEASED, khugepaged, khugepaged, 0xE, true, false, 20000200);
        add(&w, TRACE_EVENT_START_LOCKING, khugepaged, khugepaged, 0xE, false, false, 20000300);
        assert_int_equal(w.khugepaged_yields, 0);

        /* nor a stock collapse (seen in the stock 6.12 guest as "yes"):
         * read lock dropped to allocate the huge page, the process writes
         * meanwhile, read lock again to revalidate, dropped, write lock */
        contention_window_init(&w, 39);
        contention_window_set_khugepaged(&w, khugepaged);
        add(&w, TRACE_EVENT_ACQUIRE_RETURNED, khugepaged, khugepaged, 0xC, false, true, 100);
        add(&w, TRACE_EVENT_RELEASED, khugepaged, khugepaged, 0xC, false, false, 1000);
        add(&w, TRACE_EVENT_ACQUIRE_RETURNED, 901, 900, 0xC, true, true, 1100);
        add(&w, TRACE_EVENT_RELEASED, 901, 900, 0xC, true, false, 1200);
        add(&w, TRACE_EVENT_START_LOCKING, khugepaged, khugepaged, 0xC, false, false, 1300);
        add(&w, TRACE_EVENT_ACQUIRE_RETURNED, khugepaged, khugepaged, 0xC, false, true, 1350);
        add(&w, TRACE_EVENT_RELEASED, khugepaged, khugepaged, 0xC, false, false, 9000);
        add(&w, TRACE_EVENT_START_LOCKING, khugepaged, khugepaged, 0xC, true, false, 9100);
        add(&w, TRACE_EVENT_ACQUIRE_RETURNED, khugepaged, khugepaged, 0xC, true, true, 9200);
        add(&w, TRACE_EVENT_RELEASED, khugepaged, khugepaged, 0xC, true, false, 30000);
        add(&w, TRACE_EVENT_START_LOCKING, khugepaged, khugepaged, 0xC, false, false, 10000000);
        assert_int_equal(w.khugepaged_yields, 0);
}

static void test_unmerge_plan(void **state) {
        KernelFixes k;
        UnmergePlan p;

        kernel_fixes_init(&k);
        kernel_fixes_note_unmerge_probe(&k, &(UnmergeProbe) { .small_pages = 4096, .small_nsec = 463000,
                                                             .large_pages = 65536, .large_nsec = 4930000 });
        /* an ordinary process: one call */
        uint64_t small[][2] = { { 0x400000, 0x400000 + 8 * (UINT64_C(1) << 20) }, { 0x7f0000000000, 0x7f0000021000 } };
        assert_int_equal(unmerge_plan_make(&k, small, ELEMENTSOF(small), 4096, &p), 0);
        assert_false(p.chunked);
        assert_false(p.refused);
        unmerge_plan_done(&p);

        /* 1 TiB sparse heap beside a small library: chunks of about the
         * budget at the floor cost, together exactly the ranges */
        uint64_t big[][2] = { { 0x10000000, 0x10000000 + 64 * 4096 }, { 0x100000000000, 0x100000000000 + TIB } };
        assert_int_equal(unmerge_plan_make(&k, big, ELEMENTSOF(big), 4096, &p), 0);
        assert_true(p.chunked);
        assert_false(p.refused);
        assert_int_equal(p.walk_pages, 64 + TIB / 4096);
        assert_int_equal(p.chunk_pages, (uint64_t) (UNMERGE_CHUNK_BUDGET_USEC * 1000.0 / UNMERGE_DEFAULT_NSEC_PER_PAGE));
        uint64_t pages = 0;
        for (size_t i = 0; i < p.n_chunks; i++) {
                assert_true(p.chunks[i].pages <= p.chunk_pages);
                assert_true(p.chunks[i].end > p.chunks[i].start);
                if (i > 0)
                        assert_true(p.chunks[i].start >= p.chunks[i - 1].end);
                pages += p.chunks[i].pages;
        }
        assert_int_equal(pages, p.walk_pages);
        assert_int_equal(p.chunks[0].start, 0x10000000);
        assert_int_equal(p.chunks[p.n_chunks - 1].end, 0x100000000000 + TIB);
        /* the library and the first part of the heap share the first chunk */
        assert_int_equal(p.chunks[0].pages, p.chunk_pages);
        unmerge_plan_done(&p);

        /* 32 TiB, the seed's example: minutes of the thread's time, refused */
        uint64_t huge[][2] = { { 0x100000000000, 0x100000000000 + 32 * TIB } };
        assert_int_equal(unmerge_plan_make(&k, huge, ELEMENTSOF(huge), 4096, &p), 0);
        assert_true(p.refused);
        assert_non_null(strstr(p.reason, "32.0 TiB"));
        assert_non_null(strstr(p.reason, "seed 003"));
        unmerge_plan_done(&p);

        /* with the range walk: one call, whatever the size */
        kernel_fixes_note_unmerge_probe(&k, &(UnmergeProbe) { .small_pages = 4096, .small_nsec = 2000,
                                                             .large_pages = 65536, .large_nsec = 2500 });
        assert_int_equal(unmerge_plan_make(&k, huge, ELEMENTSOF(huge), 4096, &p), 0);
        assert_false(p.chunked);
        assert_false(p.refused);
        unmerge_plan_done(&p);

        /* unknown: the floor cost, so chunks */
        kernel_fixes_init(&k);
        assert_int_equal(unmerge_plan_make(&k, big, ELEMENTSOF(big), 4096, &p), 0);
        assert_true(p.chunked);
        unmerge_plan_done(&p);

        /* the next chunk follows what the last one held */
        assert_int_equal(unmerge_next_chunk_pages(1000, UNMERGE_CHUNK_BUDGET_USEC, 0), 1000);
        assert_int_equal(unmerge_next_chunk_pages(1000, UNMERGE_CHUNK_BUDGET_USEC * 2, 0), 500);
        assert_int_equal(unmerge_next_chunk_pages(1000, UNMERGE_CHUNK_BUDGET_USEC * 10, 0), 250);
        assert_int_equal(unmerge_next_chunk_pages(1000, UNMERGE_CHUNK_BUDGET_USEC / 4, 0), 2000);
        assert_int_equal(unmerge_next_chunk_pages(1000, 0, 0), 2000);
        assert_int_equal(unmerge_next_chunk_pages(1, UNMERGE_CHUNK_BUDGET_USEC * 100, 0), 1);
        /* a slow call, not a slow walk: never below the floor (a quarter
         * of the plan's chunk), however long each call held the target */
        assert_int_equal(unmerge_next_chunk_pages(2000, UNMERGE_CHUNK_BUDGET_USEC * 10, 1924), 1924);
        assert_int_equal(unmerge_next_chunk_pages(1924, UNMERGE_CHUNK_BUDGET_USEC * 64, 1924), 1924);
}

static void test_smart_scan_workaround(void **state) {
        SmartScanWorkaround w = {};
        KernelFixes k;
        uint64_t now = 1000 * USEC_PER_SEC;

        kernel_fixes_init(&k);
        /* not stalled long enough, nothing skipped, or nothing unshared */
        assert_false(smart_scan_workaround_step(&w, &k, true, SMART_SCAN_WORKAROUND_STALLED_SCANS - 1, true, true, 100,
                                                5000, 0, now));
        assert_false(smart_scan_workaround_step(&w, &k, true, 40, false, true, 100, 5000, 0, now));
        assert_false(smart_scan_workaround_step(&w, &k, true, 40, true, false, 100, 5000, 0, now));
        assert_false(smart_scan_workaround_step(&w, &k, false, 40, true, true, 100, 5000, 0, now));

        /* stalled: smart_scan=0 until two more full scans ended */
        assert_true(smart_scan_workaround_step(&w, &k, true, 20, true, true, 100, 5000, 1000000, now));
        assert_true(w.active);
        assert_true(smart_scan_workaround_step(&w, &k, false, 20, true, true, 101, 5000, 2000000, now + 1));
        /* it ends having merged 105 pairs' worth */
        assert_false(smart_scan_workaround_step(&w, &k, false, 0, true, true, 102, 5210, 9000000, now + 2));
        assert_false(w.active);
        assert_int_equal(w.count, 1);
        assert_int_equal(w.cpu_nsec, 8000000);
        assert_int_equal(k.workaround_scans, 1);
        assert_int_equal(k.workaround_gain_pages, 210);
        assert_int_equal(k.fix[KERNEL_FIX_SMART_SCAN].state, FIX_NO);
        assert_non_null(strstr(k.fix[KERNEL_FIX_SMART_SCAN].evidence, "merged 210 pages"));

        /* not again before the gap */
        assert_false(smart_scan_workaround_step(&w, &k, true, 40, true, true, 200, 5210, 9000000, now + 60 * USEC_PER_SEC));
        assert_true(smart_scan_workaround_step(&w, &k, true, 40, true, true, 200, 5210, 9000000,
                                               now + 2 + SMART_SCAN_WORKAROUND_MIN_GAP_USEC));
        assert_int_equal(w.count, 1);
        assert_int_equal(w.cpu_nsec, 8000000);

        /* a scan that finds nothing says nothing */
        kernel_fixes_init(&k);
        w = (SmartScanWorkaround) {};
        assert_true(smart_scan_workaround_step(&w, &k, true, 20, true, true, 100, 5000, 0, now));
        assert_false(smart_scan_workaround_step(&w, &k, false, 22, true, true, 102, 5000, 0, now + 1));
        assert_int_equal(k.fix[KERNEL_FIX_SMART_SCAN].state, FIX_UNKNOWN);

        /* known fixed: never */
        k.fix[KERNEL_FIX_SMART_SCAN].state = FIX_YES;
        w = (SmartScanWorkaround) {};
        assert_false(smart_scan_workaround_step(&w, &k, true, 100, true, true, 100, 5000, 0, now));
}

/* Seed 000: on a trylock kernel a full scan that skipped contended pages
 * is pending work, for at most 8 scans in a row; elsewhere it is barren. */
static void test_pending_skips(void **state) {
        Model m;
        Snapshot s = { .time_usec = 1000 * USEC_PER_SEC, .ksm_present = true };
        ContentionWindow w;

        s.ksm.present_mask = ~UINT64_C(0);
        s.ksm.value[KSM_RUN] = 1;
        s.ksm.value[KSM_PAGES_VOLATILE] = 10000;
        model_init(&m, 4096, 64);
        model_update(&m, &s);

        for (int scan = 0; scan < 12; scan++) {
                contention_window_init(&w, 39);
                add(&w, TRACE_EVENT_ACQUIRE_RETURNED, 813, 812, 0xA, true, true, 0);
                add(&w, TRACE_EVENT_ACQUIRE_RETURNED, 39, -1, 0xA, false, false, 1000);
                model_add_window(&m, &w, s.time_usec, 200 * USEC_PER_MSEC, 0);
                assert_int_equal(m.fixes.fix[KERNEL_FIX_TRYLOCK].state, FIX_YES);
                s.time_usec += USEC_PER_SEC;
                s.ksm.value[KSM_PAGES_SCANNED] += 10000;
                s.ksm.value[KSM_FULL_SCANS]++;
                model_update(&m, &s);
                assert_int_equal(m.scans_without_gain, scan < 8 ? 0 : (uint64_t) scan - 7);
                assert_int_equal(m.scans_without_find, m.scans_without_gain);
        }
        /* a scan without skips is barren at once */
        s.time_usec += USEC_PER_SEC;
        s.ksm.value[KSM_FULL_SCANS]++;
        model_update(&m, &s);
        assert_int_equal(m.scans_without_gain, 4 + 1);
        assert_int_equal(m.scans_without_find, 4 + 1);

        /* a stock kernel: the same scans are barren */
        model_init(&m, 4096, 64);
        model_update(&m, &s);
        for (int scan = 0; scan < 3; scan++) {
                s.time_usec += USEC_PER_SEC;
                s.ksm.value[KSM_FULL_SCANS]++;
                model_update(&m, &s);
        }
        assert_int_equal(m.scans_without_gain, 3);
        assert_int_equal(m.scans_without_find, 3);
}

/* Seed 001: a churner whose mmap lock ksmd fails to try 75% of the time
 * but never waits for is excluded on a trylock-only kernel (each failure
 * costs the victim's pages a full scan), not where per-VMA lookups protect
 * ksmd; one that keeps ksmd waiting is excluded on both. */
static void test_per_vma_keeps_churners(void **state) {
        for (int per_vma = 0; per_vma <= 1; per_vma++)
                for (int blocking = 0; blocking <= 1; blocking++) {
                        TuningConfig cfg = TUNING_CONFIG_DEFAULTS;
                        Model m;
                        Controller c;
                        Plan plan = {};
                        ControllerDecisions d = {};
                        ContentionWindow w;
                        Snapshot s = { .time_usec = 1000 * USEC_PER_SEC, .ksm_present = true };

                        s.ksm.present_mask = ~UINT64_C(0);
                        s.ksm.value[KSM_RUN] = 1;
                        s.ksm.value[KSM_FULL_SCANS] = 100;      /* a ksmd that has run */
                        model_init(&m, 4096, cfg.min_gain_pages);
                        controller_init(&c, &cfg, s.time_usec);
                        model_update(&m, &s);
                        s.time_usec += USEC_PER_SEC;
                        model_update(&m, &s);

                        contention_window_init(&w, 39);
                        if (blocking)
                                contended_wait(&w, 0, 80000);   /* 40% of 200 ms */
                        else
                                add(&w, TRACE_EVENT_ACQUIRE_RETURNED, 813, 812, 0xA, true, true, 0);
                        for (int i = 0; i < 4; i++)
                                add(&w, TRACE_EVENT_ACQUIRE_RETURNED, 39, -1, 0xA, false, i == 0, 100000000 + i * 1000);
                        if (per_vma)
                                m.fixes.fix[KERNEL_FIX_PER_VMA].state = FIX_YES;
                        model_add_window(&m, &w, s.time_usec, 200 * USEC_PER_MSEC, 0);
                        assert_int_equal(m.lock_core, KSM_LOCK_CORE_TRYLOCK);
                        assert_int_equal(m.n_contenders, 1);
                        m.contenders[0].merging_pages = 0;
                        /* an earlier window showed it, with as few merged,
                         * CONTROLLER_YIELD_FULL_SCANS full scans ago:
                         * judged once they held still (controller.c) */
                        c.yields[0] = (ContenderYield) { .pid = 812,
                                                         .full_scans = m.window_full_scans - CONTROLLER_YIELD_FULL_SCANS,
                                                         .usec = s.time_usec };
                        assert_int_equal(controller_decide(&c, &m, &cfg, s.time_usec, &plan, &d), 0);
                        assert_int_equal(plan.n_actions, blocking || !per_vma ? 1 : 0);
                        plan_done(&plan);
                }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_init_unknown),
                cmocka_unit_test(test_unmerge_probe),
                cmocka_unit_test(test_trylock_evidence),
                cmocka_unit_test(test_per_vma_evidence),
                cmocka_unit_test(test_per_vma_probe),
                cmocka_unit_test(test_smart_scan_skips),
                cmocka_unit_test(test_khugepaged),
                cmocka_unit_test(test_unmerge_plan),
                cmocka_unit_test(test_smart_scan_workaround),
                cmocka_unit_test(test_pending_skips),
                cmocka_unit_test(test_per_vma_keeps_churners),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
