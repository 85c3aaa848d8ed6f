/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "contention.h"

/* Which of the kernel fixes in shared/seeds (000-004) this kernel carries,
 * told from behaviour, never from a version string (they are patches, not
 * releases), each with the evidence and the adaptation it puts in force.
 * Pure: the timed unmerge probe (probe.c) and the trace windows (tuner.c)
 * bring the observations in.
 *
 *   trylock     000  ksmd's unstable-tree walk uses mmap_read_trylock: yes once
 *                    one of ksmd's mmap_lock_acquire_returned says success=false
 *                    (a blocking mmap_read_lock cannot fail); no once ksmd
 *                    was seen waiting behind write-held locks
 *                    KERNEL_FIX_TRYLOCK_NO_WAITS times without one failed try,
 *                    unless per-vma is "yes": with per-VMA lookups the
 *                    trylock is only a fallback, and ksmd's scan itself
 *                    still blocks, so waits without failures say nothing
 *                    there. Where per-VMA lookups go undetected (kpatch's
 *                    port reads "unknown") this can say "no" wrongly, until
 *                    one failed try turns it to "yes".
 *   per-vma     001  ksmd's unstable-tree lookups take VMA locks, not the mmap
 *                    lock. Stock ksmd takes the mmap lock once per scanned
 *                    page (the scan itself) plus once per unstable-tree node
 *                    on the way down (about log2 N - 1.4 more for a tree of
 *                    N): summed over at least 8 windows and 20000 pages with
 *                    the tree at 1024 pages or more, no at 3 or more mmap
 *                    locks per scanned page (a stock 6.12 guest: 3.0), yes
 *                    under 0.1 (ksmd scanning under VMA locks too); between
 *                    is unknown: 6.18 took 0.32 (pages_scanned moves per
 *                    batch, and its scan takes fewer locks than 6.12's), and
 *                    kpatch's 6.12 port of 001 about 1.
 *                    Where kprobe events exist (tracefs.h), this is only the
 *                    fallback: the daemon probes the functions that take a
 *                    VMA read lock by address, filtered to ksmd, in its
 *                    windows; yes once ksmd hit one, no once it hit none in
 *                    8 windows with the probes armed that scanned 1024
 *                    pages and saw ksmd take 10 mmap locks or more while
 *                    the unstable tree held 1024 pages or more (its lookups
 *                    ran, under the mmap lock). Stock ksmd never calls them.
 *   khugepaged  002  khugepaged drops a contended mmap read lock between
 *                    batches of VMAs: yes once it was seen releasing a read
 *                    lock, another task write-locking that mm, and
 *                    khugepaged taking the read lock again within 1 ms, then
 *                    going on with its walk: after it releases that lock its
 *                    next lock is a read lock, not the write lock of a
 *                    collapse (whose revalidation drops and retakes the
 *                    read lock the same way: a stock 6.12 guest read "yes"
 *                    before this was told apart). Never
 *                    "no": a stock khugepaged only shows as the absence of
 *                    that, which needs an mm with very many VMAs to see.
 *   range-walk  003  break_ksm() skips holes: MADV_UNMERGEABLE of a sparse
 *                    region 16 times larger takes about as long (yes) or
 *                    clearly longer (no: over 4 times; 10-16 natively, 8-10
 *                    under TCG); the ratio, not a time, so it holds on a slow
 *                    emulator as on hardware.
 *   smart-scan  004  smart-scan skips aligned with the scan number: with the fix
 *                    a full scan whose number is a multiple of 8 skips no
 *                    page, without it old pages are skipped on their own
 *                    phase in any scan. From pages_skipped read at each
 *                    ksm:ksm_stop_scan while ksmd sleeps: no once a multiple
 *                    of 8 skipped pages, yes after 3 that skipped none while
 *                    the scans between them did; no also when the
 *                    workaround's full scan with smart_scan=0 merged pages
 *                    that stalled smart scans had left. */

typedef enum KernelFixId {
        KERNEL_FIX_TRYLOCK,
        KERNEL_FIX_PER_VMA,
        KERNEL_FIX_KHUGEPAGED,
        KERNEL_FIX_RANGE_WALK,
        KERNEL_FIX_SMART_SCAN,
        _KERNEL_FIX_MAX,
} KernelFixId;

typedef enum FixState {
        FIX_UNKNOWN,
        FIX_YES,
        FIX_NO,
        _FIX_STATE_MAX,
} FixState;

const char *kernel_fix_id_to_string(KernelFixId id);    /* "trylock", "per-vma", ... */
const char *kernel_fix_seed(KernelFixId id);            /* "000" ... "004" */
const char *fix_state_to_string(FixState s);            /* "unknown", "yes", "no" */

#define KERNEL_FIX_EVIDENCE_MAX 192
/* ksmd waits behind a writer, with no failed trylock, before "no trylock". */
#define KERNEL_FIX_TRYLOCK_NO_WAITS 20
/* ksmd's mmap lock calls a window must have seen to count towards "few
 * per page", and what the sums need before they decide. */
#define KERNEL_FIX_PER_VMA_MIN_LOCKS 10
#define KERNEL_FIX_PER_VMA_MIN_WINDOWS 8
#define KERNEL_FIX_PER_VMA_MIN_PAGES 20000
/* With the kprobes, "no" needs far less: each page ksmd scans (not skipped)
 * with a tree of 1024 pages or more is looked up through about ten tree
 * nodes, each a VMA read lock on a per-VMA kernel; so 1024 scanned pages
 * without one hit is tens of thousands of lookups that took the mmap lock. */
#define KERNEL_FIX_PER_VMA_PROBE_MIN_PAGES 1024
/* The unmerge probe's regions: a large one 16 times the small one. Its
 * time is flat with the range walk (ratio ~1), and grows 10-16 times on a
 * stock kernel natively; under TCG the call's fixed cost weighs more and a
 * stock 6.12 guest showed 7.9 and 9.9. */
#define KERNEL_FIX_RANGE_WALK_RATIO_YES 2.5
#define KERNEL_FIX_RANGE_WALK_RATIO_NO 4.0

typedef struct KernelFix {
        FixState state;
        char evidence[KERNEL_FIX_EVIDENCE_MAX];
} KernelFix;

/* What the timed probe of MADV_UNMERGEABLE on sparse regions measured:
 * each region mapped MAP_NORESERVE with the same few pages touched. */
typedef struct UnmergeProbe {
        int error;                      /* positive errno when it did not run; ETIMEDOUT: overran */
        uint64_t small_pages, small_nsec;
        uint64_t large_pages, large_nsec;
} UnmergeProbe;

typedef struct KernelFixes {
        KernelFix fix[_KERNEL_FIX_MAX];

        /* the evidence so far, summed over trace windows */
        uint64_t windows;
        uint64_t ksmd_trylock_failures; /* ksmd's attempts skipped because the mm was contended */
        uint64_t ksmd_contended_waits;  /* ksmd's blocking acquisitions that waited behind a writer */
        uint64_t ksmd_contended_wait_nsec;
        uint64_t khugepaged_yields;     /* contended read locks khugepaged dropped and took again */
        uint64_t khugepaged_wait_nsec;  /* ksmd's waits behind khugepaged's own write holds */
        /* 001: ksmd's mmap locks and the pages scanned in windows (with the
         * unstable tree >= 1024 pages). Summed, because pages_scanned moves
         * once per batch of pages_to_scan (at its end), so one short window
         * is credited a whole batch or nothing: 0.11 and 16 locks "per
         * page" in two windows of one run on 6.18. Over many windows the
         * credit averages out. Clean windows only for "few"; any for "many". */
        uint64_t clean_locks, clean_scanned, clean_windows;
        uint64_t all_locks, all_scanned, all_windows;
        /* 001 by the kprobes: the functions probed ("" none: the lock
         * count above decides), ksmd's hits, and the windows that had them
         * armed while ksmd looked pages up */
        char vma_probe_symbols[96];
        uint64_t ksmd_vma_locks;
        uint64_t probe_windows, probe_scanned, probe_locks;

        /* 003: the walk cost per page of a sparse mapping, from the probe */
        double unmerge_nsec_per_page;   /* 0: not measured */

        /* 004: skips per scan, and the workaround's full scans without smart_scan */
        uint64_t aligned_scans_clean;   /* multiples of 8 that skipped nothing, others skipping */
        bool other_scan_skipped;        /* the latest other scan skipped pages */
        uint64_t workaround_scans;
        uint64_t workaround_gain_pages; /* new sharing those scans found */
} KernelFixes;

void kernel_fixes_init(KernelFixes *k);
void kernel_fixes_note_unmerge_probe(KernelFixes *k, const UnmergeProbe *p);
/* The functions the seed-001 kprobes sit on ("a, b"), NULL or "" when
 * none could be placed. */
void kernel_fixes_set_vma_probe(KernelFixes *k, const char *symbols);
/* Whether a window should arm those probes: until they decided 001. */
bool kernel_fixes_want_vma_probe(const KernelFixes *k);
/* One finished trace window, during which ksmd scanned scanned_pages with
 * unstable_pages in the unstable tree (pages_unshared). Returns true when a
 * state changed (to log it). */
bool kernel_fixes_note_window(KernelFixes *k, const ContentionWindow *w, uint64_t scanned_pages,
                              uint64_t unstable_pages);
/* Full scan number seq (ksm_stop_scan's) skipped skipped_pages with
 * smart_scan on. Returns true when a state changed. */
bool kernel_fixes_note_scan_skips(KernelFixes *k, uint64_t seq, uint64_t skipped_pages);
/* A full scan with smart_scan=0 ended that found gain_pages of new sharing
 * after stalled_scans smart scans had found none. Returns true when a
 * state changed. */
bool kernel_fixes_note_workaround_scan(KernelFixes *k, int64_t gain_pages, uint64_t stalled_scans);

/* What the daemon does differently because of the state: one sentence. */
const char *kernel_fix_adaptation(const KernelFixes *k, KernelFixId id);

/* ---- 003: switching a process off where break_ksm walks every page ---- */

/* Without the measured cost, what 6.18 took on the test machine
 * (220-360 ns per page of a sparse mapping). */
#define UNMERGE_DEFAULT_NSEC_PER_PAGE 400.0
/* Each chunk aims at this much of the target's time in the kernel: on the
 * loaded 2-core test machine a 30 ms chunk was held up to 135 ms of wall
 * time (preempted inside the call), 53 of 1254 chunks over 60 ms... */
#define UNMERGE_CHUNK_BUDGET_USEC (10 * 1000)
/* ...and a switch-off estimated longer than this in all is refused. */
#define UNMERGE_MAX_TOTAL_USEC (180 * 1000 * 1000)

typedef struct UnmergeChunk {
        uint64_t start, end;            /* one MADV_UNMERGEABLE call */
        uint64_t pages;                 /* of VMAs inside it: what the kernel walks */
} UnmergeChunk;

typedef struct UnmergePlan {
        bool chunked;                   /* false: the usual call in one go is cheap enough */
        bool refused;
        uint64_t walk_pages;            /* every page the kernel would walk */
        uint64_t estimate_usec;         /* the whole of it, in one go */
        uint64_t chunk_pages;
        UnmergeChunk *chunks;
        size_t n_chunks;
        char reason[192];
} UnmergePlan;

void unmerge_plan_done(UnmergePlan *p);
/* ranges: the target's advisable ranges (start, end), sorted, disjoint.
 * On a kernel whose break_ksm walks every page (range-walk not "yes") a
 * switch-off that would hold the target longer than the chunk budget is
 * cut into chunks of about that budget each; one past
 * UNMERGE_MAX_TOTAL_USEC is refused with a reason. -ENOMEM. */
int unmerge_plan_make(const KernelFixes *k, const uint64_t (*ranges)[2], size_t n, uint64_t page_size,
                      UnmergePlan *ret);
/* The next chunk of at most chunk_pages from *cursor (an address; 0 at
 * the start) over ranges; moves the cursor past it. False when no range is
 * left. Consecutive ranges share a chunk while it has room: madvise()
 * crosses the holes between VMAs (ENOMEM after doing the rest). */
bool unmerge_next_chunk(const uint64_t (*ranges)[2], size_t n, uint64_t page_size, uint64_t chunk_pages,
                        uint64_t *cursor, UnmergeChunk *ret);
/* The next chunk's size from how long the last one held the target:
 * the estimate scales with what was measured, growing at most twofold and
 * shrinking at most fourfold per step, never below min_pages. The caller
 * passes a quarter of the plan's chunk: below it the walk itself is well
 * within the budget by the probe's measure, and what a chunk still holds
 * the target is the call's own cost (an injection's ptrace round trips,
 * 20-640 ms a call in a loaded emulated guest), which smaller chunks only
 * multiply: there they shrank to one page each and switching off a
 * 256 MiB contender took minutes. */
uint64_t unmerge_next_chunk_pages(uint64_t chunk_pages, uint64_t held_usec, uint64_t min_pages);

/* ---- 004: smart_scan's lost pairs ---- */

/* Smart scans in a row without new sharing before a full scan with
 * smart_scan=0 is worth its cost, and the least time between two such
 * scans. */
#define SMART_SCAN_WORKAROUND_STALLED_SCANS 16
#define SMART_SCAN_WORKAROUND_MIN_GAP_USEC (10 * 60 * UINT64_C(1000000))

typedef struct SmartScanWorkaround {
        bool active;                    /* smart_scan=0 is planned now */
        uint64_t full_scans_at_start;
        uint64_t stalled_scans;         /* what preceded it */
        int64_t sharing_at_start;
        uint64_t last_usec;             /* when the latest one ended, 0 never */
        uint64_t count;
        uint64_t cpu_nsec;              /* ksmd CPU during them */
        uint64_t cpu_at_start;
} SmartScanWorkaround;

/* Whether the workaround wants smart_scan=0 now. Inputs: the state of fix
 * 004, whether smart_scan is on (as the kernel reads it, and not by
 * someone else's choice), the full scans that found nothing
 * (scans_without_find), whether smart scan skipped pages in them, whether
 * memory that is not shared remains (pages_unshared + pages_volatile > 0),
 * the counters now. Ends itself after
 * two full scans (the one it started in, then a whole one), and then calls
 * kernel_fixes_note_workaround_scan(). */
bool smart_scan_workaround_step(SmartScanWorkaround *w, KernelFixes *k, bool smart_scan_on,
                                uint64_t scans_without_find, bool skipped_pages, bool unshared_left,
                                uint64_t full_scans, int64_t pages_sharing, uint64_t ksmd_cpu_nsec,
                                uint64_t now_usec);
