/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel-fixes.h"
#include "string-table.h"
#include "util.h"

static const char *const kernel_fix_id_table[_KERNEL_FIX_MAX] = {
        [KERNEL_FIX_TRYLOCK] = "trylock",
        [KERNEL_FIX_PER_VMA] = "per-vma",
        [KERNEL_FIX_KHUGEPAGED] = "khugepaged",
        [KERNEL_FIX_RANGE_WALK] = "range-walk",
        [KERNEL_FIX_SMART_SCAN] = "smart-scan",
};

DEFINE_STRING_TABLE_TO_STRING(kernel_fix_id, KernelFixId);

static const char *const fix_state_table[_FIX_STATE_MAX] = {
        [FIX_UNKNOWN] = "unknown",
        [FIX_YES] = "yes",
        [FIX_NO] = "no",
};

DEFINE_STRING_TABLE_TO_STRING(fix_state, FixState);

const char *kernel_fix_seed(KernelFixId id) {
        static const char *const seeds[_KERNEL_FIX_MAX] = { "000", "001", "002", "003", "004" };
        return id < _KERNEL_FIX_MAX ? seeds[id] : NULL;
}

static void set_fix(KernelFixes *k, KernelFixId id, FixState s, const char *fmt, ...) _printf_(4, 5);
static void set_fix(KernelFixes *k, KernelFixId id, FixState s, const char *fmt, ...) {
        va_list ap;
        k->fix[id].state = s;
        va_start(ap, fmt);
        vsnprintf(k->fix[id].evidence, sizeof k->fix[id].evidence, fmt, ap);
        va_end(ap);
}

void kernel_fixes_init(KernelFixes *k) {
        *k = (KernelFixes) {};
        set_fix(k, KERNEL_FIX_TRYLOCK, FIX_UNKNOWN, "ksmd not yet seen meeting a write-held mmap_lock");
        set_fix(k, KERNEL_FIX_PER_VMA, FIX_UNKNOWN, "no trace window of a scanning ksmd yet");
        set_fix(k, KERNEL_FIX_KHUGEPAGED, FIX_UNKNOWN, "khugepaged not yet seen dropping a contended read lock");
        set_fix(k, KERNEL_FIX_RANGE_WALK, FIX_UNKNOWN, "the unmerge probe did not run");
        set_fix(k, KERNEL_FIX_SMART_SCAN, FIX_UNKNOWN, "no full scan watched yet");
}

void kernel_fixes_note_unmerge_probe(KernelFixes *k, const UnmergeProbe *p) {
        if (p->error != 0 || p->small_pages == 0 || p->large_pages <= p->small_pages) {
                set_fix(k, KERNEL_FIX_RANGE_WALK, FIX_UNKNOWN, "the unmerge probe %s: %s",
                        p->error == ETIMEDOUT ? "overran its deadline" : "could not run",
                        strerrorname_np(p->error) ?: "no figures");
                /* An overrun is the stock kernel's walk, only slower than
                 * the deadline: its cost per page is at least this. */
                if (p->error == ETIMEDOUT && p->large_pages > 0)
                        k->unmerge_nsec_per_page = MAX(k->unmerge_nsec_per_page,
                                                       (double) p->large_nsec / (double) p->large_pages);
                return;
        }
        double size_ratio = (double) p->large_pages / (double) p->small_pages;
        /* Timer resolution and the fixed cost of the call: a patched
         * kernel answers both in microseconds, so compare what grows. */
        double ratio = (double) MAX(p->large_nsec, UINT64_C(1000)) / (double) MAX(p->small_nsec, UINT64_C(1000));
        double per_page = (double) p->large_nsec / (double) p->large_pages;
        char small[32], large[32];

        format_timespan(small, sizeof small, p->small_nsec / NSEC_PER_USEC);
        format_timespan(large, sizeof large, p->large_nsec / NSEC_PER_USEC);
        if (ratio < KERNEL_FIX_RANGE_WALK_RATIO_YES * size_ratio / 16.0) {
                set_fix(k, KERNEL_FIX_RANGE_WALK, FIX_YES,
                        "MADV_UNMERGEABLE of %" PRIu64 " MiB sparse took %s, of %" PRIu64 " MiB %s: holes are skipped",
                        p->small_pages / 256, small, p->large_pages / 256, large);
                k->unmerge_nsec_per_page = 0;
        } else if (ratio > KERNEL_FIX_RANGE_WALK_RATIO_NO * size_ratio / 16.0) {
                set_fix(k, KERNEL_FIX_RANGE_WALK, FIX_NO,
                        "MADV_UNMERGEABLE of %" PRIu64 " MiB sparse took %s, of %" PRIu64
                        " MiB %s: every page is walked (%.0f ns each)",
                        p->small_pages / 256, small, p->large_pages / 256, large, per_page);
                k->unmerge_nsec_per_page = per_page;
        } else {
                set_fix(k, KERNEL_FIX_RANGE_WALK, FIX_UNKNOWN,
                        "MADV_UNMERGEABLE of %" PRIu64 " MiB sparse took %s, of %" PRIu64 " MiB %s: neither flat nor linear",
                        p->small_pages / 256, small, p->large_pages / 256, large);
                k->unmerge_nsec_per_page = per_page;
        }
}

void kernel_fixes_set_vma_probe(KernelFixes *k, const char *symbols) {
        strscpy(k->vma_probe_symbols, sizeof k->vma_probe_symbols, symbols ?: "");
}

bool kernel_fixes_want_vma_probe(const KernelFixes *k) {
        return k->vma_probe_symbols[0] && k->ksmd_vma_locks == 0 && k->fix[KERNEL_FIX_PER_VMA].state != FIX_NO;
}

/* 001 by the kprobes; returns false where none could be placed: the lock
 * count decides there instead. */
static bool note_vma_probe(KernelFixes *k, const ContentionWindow *w, uint64_t scanned_pages,
                           uint64_t unstable_pages) {
        if (!k->vma_probe_symbols[0])
                return false;
        if (!w->vma_probe)
                return true;
        k->ksmd_vma_locks += w->ksmd_vma_locks;
        if (unstable_pages >= 1024 && scanned_pages > 0 && contention_window_complete(w)) {
                k->probe_windows++;
                k->probe_scanned += scanned_pages;
                k->probe_locks += w->ksmd_acquired;
        }
        if (k->ksmd_vma_locks > 0)
                set_fix(k, KERNEL_FIX_PER_VMA, FIX_YES,
                        "ksmd took %" PRIu64 " VMA read locks (kprobe on %s) in %" PRIu64 " windows",
                        k->ksmd_vma_locks, k->vma_probe_symbols, k->windows);
        else if (k->probe_windows >= KERNEL_FIX_PER_VMA_MIN_WINDOWS &&
                 k->probe_scanned >= KERNEL_FIX_PER_VMA_PROBE_MIN_PAGES &&
                 k->probe_locks >= KERNEL_FIX_PER_VMA_MIN_LOCKS)
                set_fix(k, KERNEL_FIX_PER_VMA, FIX_NO,
                        "ksmd took %" PRIu64 " mmap locks and no VMA read lock (kprobe on %s) for %" PRIu64
                        " scanned pages in %" PRIu64 " windows, the unstable tree %" PRIu64 " pages",
                        k->probe_locks, k->vma_probe_symbols, k->probe_scanned, k->probe_windows, unstable_pages);
        return true;
}

bool kernel_fixes_note_window(KernelFixes *k, const ContentionWindow *w, uint64_t scanned_pages,
                              uint64_t unstable_pages) {
        FixState before[_KERNEL_FIX_MAX];
        for (size_t i = 0; i < _KERNEL_FIX_MAX; i++)
                before[i] = k->fix[i].state;

        k->windows++;
        k->ksmd_trylock_failures += w->ksmd_trylock_failures;
        k->khugepaged_yields += w->khugepaged_yields;
        k->khugepaged_wait_nsec += w->khugepaged_wait_nsec;
        for (size_t i = 0; i < w->n_holders; i++) {
                const LockHolder *h = &w->holders[i];
                /* a wait behind a lock some other task held for writing;
                 * whose it was does not matter here: a writer that could
                 * not be confirmed (tgid -1, confirm_holders) still held it */
                if ((h->tgid > 0 || h->n_tids > 0) && h->write_locks > 0) {
                        k->ksmd_contended_waits += h->ksmd_waits;
                        k->ksmd_contended_wait_nsec += h->ksmd_wait_nsec;
                }
        }

        /* 001 (kernel-fixes.h): sums over windows, a window that lost
         * events undercounts the locks: it can say "many" but not "few".
         * "Few" needs windows that saw some of ksmd's lock calls: even a
         * per-VMA ksmd takes the mmap lock for its scan, and a window
         * that saw none says more about the window than about ksmd. */
        if (unstable_pages >= 1024 && scanned_pages > 0) {
                k->all_locks += w->ksmd_acquired;
                k->all_scanned += scanned_pages;
                k->all_windows++;
                if (contention_window_complete(w) && w->ksmd_acquired >= KERNEL_FIX_PER_VMA_MIN_LOCKS) {
                        k->clean_locks += w->ksmd_acquired;
                        k->clean_scanned += scanned_pages;
                        k->clean_windows++;
                }
        }
        bool enough = k->all_windows >= KERNEL_FIX_PER_VMA_MIN_WINDOWS && k->all_scanned >= KERNEL_FIX_PER_VMA_MIN_PAGES;
        if (note_vma_probe(k, w, scanned_pages, unstable_pages))
                ;       /* the probes decide */
        else if (enough && (double) k->all_locks >= 3.0 * (double) k->all_scanned)
                set_fix(k, KERNEL_FIX_PER_VMA, FIX_NO,
                        "ksmd took %" PRIu64 " mmap locks for %" PRIu64 " scanned pages in %" PRIu64
                        " windows, the unstable tree %" PRIu64 " pages",
                        k->all_locks, k->all_scanned, k->all_windows, unstable_pages);
        else if (k->fix[KERNEL_FIX_PER_VMA].state != FIX_NO && k->clean_windows >= KERNEL_FIX_PER_VMA_MIN_WINDOWS &&
                 k->clean_scanned >= KERNEL_FIX_PER_VMA_MIN_PAGES &&
                 (double) k->clean_locks < 0.1 * (double) k->clean_scanned)
                set_fix(k, KERNEL_FIX_PER_VMA, FIX_YES,
                        "ksmd took %" PRIu64 " mmap locks for %" PRIu64 " scanned pages in %" PRIu64
                        " windows, the unstable tree %" PRIu64 " pages",
                        k->clean_locks, k->clean_scanned, k->clean_windows, unstable_pages);
        else if (enough && k->fix[KERNEL_FIX_PER_VMA].state == FIX_UNKNOWN)
                set_fix(k, KERNEL_FIX_PER_VMA, FIX_UNKNOWN,
                        "ksmd took %" PRIu64 " mmap locks for %" PRIu64 " scanned pages in %" PRIu64
                        " windows: neither stock 6.12's 3+ nor a per-VMA scan's < 0.1%s",
                        k->all_locks, k->all_scanned, k->all_windows,
                        k->vma_probe_symbols[0] ? "" : "; no kprobe events to watch ksmd's VMA locks");

        /* 000: a blocking mmap_read_lock cannot fail; only the patch's
         * trylock in the unstable-tree walk reports success=false. Waits
         * without a failure mean "no" only where the walk is known to use
         * the mmap lock: not per-vma yes, and where the kprobes can tell
         * per-vma, only once they said no. Before that rule the patched
         * guest's bench read 000 "no" (38 waits, all in ksmd's scan, whose
         * lock the 6.12 port keeps) before its windows had told 001. A
         * "no" taken before 001 turned yes goes back to unknown. */
        FixState per_vma = k->fix[KERNEL_FIX_PER_VMA].state;
        if (k->ksmd_trylock_failures > 0)
                set_fix(k, KERNEL_FIX_TRYLOCK, FIX_YES,
                        "%" PRIu64 " of ksmd's mmap lock tries failed (acquire_returned success=false) in %" PRIu64
                        " windows",
                        k->ksmd_trylock_failures, k->windows);
        else if (per_vma == FIX_YES && k->fix[KERNEL_FIX_TRYLOCK].state == FIX_NO)
                set_fix(k, KERNEL_FIX_TRYLOCK, FIX_UNKNOWN,
                        "ksmd's waits behind writers were its scan's own lock: with per-VMA lookups the trylock is "
                        "only their fallback, not yet seen failing");
        else if (k->ksmd_contended_waits >= KERNEL_FIX_TRYLOCK_NO_WAITS && per_vma != FIX_YES &&
                 (!k->vma_probe_symbols[0] || per_vma == FIX_NO))
                set_fix(k, KERNEL_FIX_TRYLOCK, FIX_NO,
                        "ksmd waited %" PRIu64 " times (%" PRIu64 " ms) behind write-held mmap locks and never failed a try",
                        k->ksmd_contended_waits, k->ksmd_contended_wait_nsec / (NSEC_PER_USEC * 1000));

        /* 002 */
        if (k->khugepaged_yields > 0)
                set_fix(k, KERNEL_FIX_KHUGEPAGED, FIX_YES,
                        "khugepaged dropped a contended mmap read lock and took it again %" PRIu64 " times",
                        k->khugepaged_yields);

        for (size_t i = 0; i < _KERNEL_FIX_MAX; i++)
                if (before[i] != k->fix[i].state)
                        return true;
        return false;
}

bool kernel_fixes_note_scan_skips(KernelFixes *k, uint64_t seq, uint64_t skipped_pages) {
        FixState before = k->fix[KERNEL_FIX_SMART_SCAN].state;

        if (seq % 8 != 0) {
                k->other_scan_skipped = skipped_pages > 0;
                return false;
        }
        if (skipped_pages > 0)
                set_fix(k, KERNEL_FIX_SMART_SCAN, FIX_NO,
                        "full scan %" PRIu64 " (a multiple of 8) skipped %" PRIu64
                        " pages: skips follow each page's own age",
                        seq, skipped_pages);
        else if (k->other_scan_skipped && k->fix[KERNEL_FIX_SMART_SCAN].state != FIX_NO &&
                 ++k->aligned_scans_clean >= 3)
                set_fix(k, KERNEL_FIX_SMART_SCAN, FIX_YES,
                        "%" PRIu64 " full scans numbered a multiple of 8 skipped no page, the scans between them did",
                        k->aligned_scans_clean);
        k->other_scan_skipped = false;
        return before != k->fix[KERNEL_FIX_SMART_SCAN].state;
}

bool kernel_fixes_note_workaround_scan(KernelFixes *k, int64_t gain_pages, uint64_t stalled_scans) {
        FixState before = k->fix[KERNEL_FIX_SMART_SCAN].state;
        k->workaround_scans++;
        if (gain_pages > 0)
                k->workaround_gain_pages += (uint64_t) gain_pages;
        /* With the fix, any two old pages meet at least every 8th scan: 16
         * scans without gain followed by a gain in a scan without skips is
         * what only misaligned skips do (a page that changed meanwhile
         * could do it too, hence "no" only once new sharing was found
         * twice or in quantity). */
        if (gain_pages > 0 && stalled_scans >= SMART_SCAN_WORKAROUND_STALLED_SCANS &&
            (k->workaround_gain_pages >= 16 || k->workaround_scans >= 2))
                set_fix(k, KERNEL_FIX_SMART_SCAN, FIX_NO,
                        "%" PRIu64 " full scans without smart_scan merged %" PRIu64
                        " pages that %" PRIu64 " smart scans in a row had left",
                        k->workaround_scans, k->workaround_gain_pages, stalled_scans);
        return before != k->fix[KERNEL_FIX_SMART_SCAN].state;
}

const char *kernel_fix_adaptation(const KernelFixes *k, KernelFixId id) {
        FixState s = k->fix[id].state;
        switch (id) {
        case KERNEL_FIX_TRYLOCK:
                return s == FIX_YES ? "pages skipped on contended mms count as work pending, not a barren scan; "
                                      "exclusion weighs ksmd's blocked time and its failed-try share"
                                    : "exclusion weighs ksmd's blocked time on a process's mmap lock";
        case KERNEL_FIX_PER_VMA:
                return s == FIX_YES ? "a churner is excluded only for the time ksmd still waits on its lock, not for failed tries"
                                    : "processes that keep ksmd blocked on their mmap lock may be excluded";
        case KERNEL_FIX_KHUGEPAGED:
                return "ksmd's waits behind khugepaged's write holds are khugepaged's, never the process's";
        case KERNEL_FIX_RANGE_WALK:
                return s == FIX_YES ? "processes are switched off in one call"
                                    : "switching off a process with large mergeable mappings unmerges in chunks "
                                      "that hold it ~10 ms each, and is not done at all past 3 min";
        case KERNEL_FIX_SMART_SCAN:
                return s == FIX_YES ? "none needed"
                                    : "after 16 smart scans without gain, one full scan with smart_scan=0 "
                                      "(at most every 10 min), then smart_scan back";
        default:
                return "";
        }
}

/* ---- 003 ---- */

void unmerge_plan_done(UnmergePlan *p) {
        free(p->chunks);
        *p = (UnmergePlan) {};
}

static double walk_nsec_per_page(const KernelFixes *k) {
        if (k->fix[KERNEL_FIX_RANGE_WALK].state == FIX_YES)
                return 0;
        /* The probe's small regions walk faster per page than a large
         * mapping does (75 ns per page for 256 MiB, 220-360 ns for 1-256
         * GiB on the test machine's 6.18): the default is a floor, and the
         * chunks adapt to what each one really took. */
        return MAX(k->unmerge_nsec_per_page, UNMERGE_DEFAULT_NSEC_PER_PAGE);
}

int unmerge_plan_make(const KernelFixes *k, const uint64_t (*ranges)[2], size_t n, uint64_t page_size,
                      UnmergePlan *ret) {
        UnmergePlan p = {};
        double per_page = walk_nsec_per_page(k);
        char a[32], b[32];

        if (page_size == 0)
                page_size = PAGE_SIZE_DEFAULT;
        for (size_t i = 0; i < n; i++)
                if (ranges[i][1] > ranges[i][0])
                        p.walk_pages += (ranges[i][1] - ranges[i][0]) / page_size;
        p.estimate_usec = (uint64_t) ((double) p.walk_pages * per_page / NSEC_PER_USEC);
        if (p.estimate_usec <= UNMERGE_CHUNK_BUDGET_USEC) {
                *ret = p;
                return 0;
        }
        if (p.estimate_usec > UNMERGE_MAX_TOTAL_USEC) {
                p.refused = true;
                snprintf(p.reason, sizeof p.reason,
                         "switching it off would walk %s of mergeable mappings, ~%s of its thread's time in the kernel "
                         "without the break_ksm range walk (seed 003)",
                         format_bytes(a, sizeof a, p.walk_pages * page_size),
                         format_timespan(b, sizeof b, p.estimate_usec));
                *ret = p;
                return 0;
        }

        p.chunked = true;
        p.chunk_pages = MAX((uint64_t) ((double) UNMERGE_CHUNK_BUDGET_USEC * NSEC_PER_USEC / per_page), UINT64_C(1));
        size_t alloc = (size_t) (p.walk_pages / p.chunk_pages) + n + 1;
        p.chunks = calloc(alloc, sizeof *p.chunks);
        if (!p.chunks)
                return -ENOMEM;
        uint64_t cursor = 0;
        while (p.n_chunks < alloc &&
               unmerge_next_chunk(ranges, n, page_size, p.chunk_pages, &cursor, &p.chunks[p.n_chunks]))
                p.n_chunks++;
        snprintf(p.reason, sizeof p.reason, "no break_ksm range walk: %s mergeable, ~%s in one go",
                 format_bytes(a, sizeof a, p.walk_pages * page_size), format_timespan(b, sizeof b, p.estimate_usec));
        *ret = p;
        return 0;
}

bool unmerge_next_chunk(const uint64_t (*ranges)[2], size_t n, uint64_t page_size, uint64_t chunk_pages,
                        uint64_t *cursor, UnmergeChunk *ret) {
        UnmergeChunk c = {};
        bool any = false;

        if (page_size == 0)
                page_size = PAGE_SIZE_DEFAULT;
        chunk_pages = MAX(chunk_pages, UINT64_C(1));
        for (size_t i = 0; i < n && c.pages < chunk_pages; i++) {
                uint64_t s = MAX(ranges[i][0], *cursor), e = ranges[i][1];
                if (s >= e)
                        continue;
                if (!any) {
                        c.start = s;
                        any = true;
                }
                uint64_t take = MIN(e - s, (chunk_pages - c.pages) * page_size);
                c.end = s + take;
                c.pages += take / page_size;
        }
        if (!any)
                return false;
        *cursor = c.end;
        *ret = c;
        return true;
}

uint64_t unmerge_next_chunk_pages(uint64_t chunk_pages, uint64_t held_usec, uint64_t min_pages) {
        double f = held_usec > 0 ? (double) UNMERGE_CHUNK_BUDGET_USEC / (double) held_usec : 2.0;
        f = CLAMP(f, 0.25, 2.0);
        return MAX((uint64_t) ((double) chunk_pages * f), MAX(min_pages, UINT64_C(1)));
}

/* ---- 004 ---- */

bool smart_scan_workaround_step(SmartScanWorkaround *w, KernelFixes *k, bool smart_scan_on,
                                uint64_t scans_without_find, bool skipped_pages, bool unshared_left,
                                uint64_t full_scans, int64_t pages_sharing, uint64_t ksmd_cpu_nsec,
                                uint64_t now_usec) {
        if (w->active) {
                /* the scan it started in, then one whole scan without skips */
                if (full_scans < w->full_scans_at_start + 2)
                        return true;
                w->active = false;
                w->last_usec = now_usec;
                w->count++;
                if (ksmd_cpu_nsec >= w->cpu_at_start)
                        w->cpu_nsec += ksmd_cpu_nsec - w->cpu_at_start;
                (void) kernel_fixes_note_workaround_scan(k, pages_sharing - w->sharing_at_start, w->stalled_scans);
                return false;
        }
        if (k->fix[KERNEL_FIX_SMART_SCAN].state == FIX_YES || !smart_scan_on)
                return false;
        if (scans_without_find < SMART_SCAN_WORKAROUND_STALLED_SCANS || !skipped_pages || !unshared_left)
                return false;
        if (w->last_usec != 0 && now_usec - w->last_usec < SMART_SCAN_WORKAROUND_MIN_GAP_USEC)
                return false;
        *w = (SmartScanWorkaround) {
                .active = true,
                .full_scans_at_start = full_scans,
                .stalled_scans = scans_without_find,
                .sharing_at_start = pages_sharing,
                .last_usec = w->last_usec,
                .count = w->count,
                .cpu_nsec = w->cpu_nsec,
                .cpu_at_start = ksmd_cpu_nsec,
        };
        return true;
}
