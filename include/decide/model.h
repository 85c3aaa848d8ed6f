/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "contention.h"
#include "kernel-fixes.h"
#include "snapshot.h"

/* What the controller knows about ksmd's work: history and rates computed
 * from snapshots, plus what the trace windows and the process table add.
 * Pure: no I/O, no clock (times come in with the inputs). */

#define MODEL_HISTORY 64
#define MODEL_MAX_CONTENDERS 16

/* The rates of one tick (between two snapshots). */
typedef struct ModelTick {
        uint64_t time_usec;
        uint64_t dt_usec;
        uint64_t scanned_pages;         /* delta pages_scanned */
        uint64_t skipped_pages;         /* delta pages_skipped (smart_scan) */
        uint64_t full_scans;            /* delta full_scans */
        int64_t sharing_delta;          /* delta pages_sharing: new sharing */
        int64_t rmap_delta;             /* delta rmap_items: memory ksmd met for the first time (or lost) */
        uint64_t ksmd_cpu_nsec;
        uint64_t samples;               /* ksmd state samples */
        double blocked_fraction;        /* of them, in D on an mmap lock */
        bool run;                       /* run == 1 at the end of the tick */
} ModelTick;

/* How this kernel's ksmd takes mmap locks, as the trace windows show it. */
typedef enum KsmLockCore {
        KSM_LOCK_CORE_UNKNOWN,
        KSM_LOCK_CORE_BLOCKING,         /* stock: mmap_read_lock per scanned page, waits behind writers */
        KSM_LOCK_CORE_TRYLOCK,          /* trylock patch: contended mms are skipped (success=false) */
        KSM_LOCK_CORE_PER_VMA,          /* per-VMA locks: far fewer mmap locks than scanned pages */
        _KSM_LOCK_CORE_MAX,
} KsmLockCore;

const char *ksm_lock_core_to_string(KsmLockCore c);

/* A process whose mmap lock ksmd waited for (or failed to trylock) in the
 * latest trace window. */
typedef struct ModelContender {
        int pid;                        /* tgid */
        uint64_t start_time_ticks;      /* filled by the caller from stat, 0 unknown */
        uint64_t memcg_id;
        char comm[TASK_COMM_SIZE];
        double ksmd_blocked_fraction;   /* of the window's wall time, ksmd waiting for this mm */
        /* of ksmd's time on this process (its waits and its work at its
         * pages) over the recent windows (ContenderEvidence), waiting: what
         * the process costs ksmd's scan of it however many others ksmd
         * scans too; 0 while they hold too little of it to tell */
        double scan_blocked_fraction;
        /* ksmd's time on it so far is too little to tell that share (and
         * scan_blocked_fraction is 0 for that reason); what it shows so
         * far is scan_blocked_partial: worth more windows when that is high */
        bool scan_evidence_short;
        double scan_blocked_partial;
        double trylock_failure_fraction;/* of ksmd's tries on this mm */
        uint64_t ksmd_trylock_failures;
        double write_locks_per_sec;
        double write_hold_fraction;     /* of the window, this mm write-locked */
        int64_t merging_pages;          /* its ksm_merging_pages, -1 unknown (filled by the caller) */
        bool entered_seen;              /* its ksm_enter came while the daemon watched */
        uint64_t entered_full_scans;    /* full_scans as of then */
} ModelContender;

/* ksmd's time on one process summed over the windows of the last
 * CONTENDER_EVIDENCE_USEC (model.c): a window of ~15 ms catches ksmd at one
 * process's pages only when the scan is there, a few ms at most where ksmd
 * scans many; the windows' sum is what judges it. */
typedef struct ContenderEvidence {
        int pid;                        /* tgid; 0 a free slot */
        uint64_t mm;                    /* and its mm, as the trace names it: a reused pid or an exec starts anew */
        uint64_t since_usec, last_usec; /* first and last window that added to it */
        uint64_t wait_nsec, on_nsec;    /* ksmd's waits for its lock; waits and work at its pages */
        uint64_t waits;                 /* of those waits, ones >= CONTENTION_WAIT_THRESHOLD_NSEC */
} ContenderEvidence;

#define MODEL_MAX_EVIDENCE 32

typedef struct Model {
        uint64_t page_size;

        /* the previous snapshot's counters */
        bool have_last;
        uint64_t last_time_usec;
        uint64_t last_scanned, last_skipped, last_full_scans, last_cpu_nsec;
        int64_t last_sharing, last_rmap;

        ModelTick ticks[MODEL_HISTORY]; /* ring, newest at (head - 1) */
        size_t n_ticks, head;

        /* the latest values */
        uint64_t time_usec;
        bool run;
        bool advisor_scan_time;         /* advisor_mode=scan-time */
        bool smart_scan;
        uint64_t pages_to_scan, sleep_ms;
        uint64_t pages_shared, pages_sharing, pages_unshared, pages_volatile;
        uint64_t rmap_items;            /* pages ksmd tracks: the mergeable memory it has met */
        uint64_t full_scans;

        /* rates, exponentially averaged over ticks that had enough work */
        double cpu_nsec_per_page;       /* ksmd CPU per scanned page; 0 until measured */
        double sharing_per_page;        /* new sharing per scanned page */
        double sharing_per_cpu_sec;     /* new sharing per ksmd CPU-second */
        double full_scan_usec;          /* time per full scan; 0 until one was seen */
        double ksmd_cpu_fraction;       /* latest tick: ksmd CPU / wall time */
        double blocked_fraction;        /* averaged */

        /* merge progress, counted in full scans */
        int64_t scan_sharing_gain;      /* sharing gained since the last full scan ended */
        int64_t scan_rmap_gain;         /* rmap items gained since then */
        uint64_t scan_skipped;          /* pages smart_scan skipped since then */
        /* consecutive full scans that did not pay a burst's round: new
         * sharing under model_gain_floor() and no new memory met */
        uint64_t scans_without_gain;
        /* consecutive full scans that found nothing above MinGainPages=, and
         * when one last did: "still merging", for idle and the smart-scan
         * workaround, whatever the set's size */
        uint64_t scans_without_find;
        uint64_t last_gain_usec;
        int64_t last_scan_gain_pages;   /* sharing gained by the full scan(s) that ended last */
        int64_t last_scan_rmap_gain;    /* rmap items gained by them */
        /* A full scan "settled" when it ended with fewer than min_gain_pages
         * volatile pages, met no new memory, and nothing new was announced
         * since it began (unmet memory in the process table) or since the
         * end of the scan before it (ksm_enter: the mm is put behind
         * ksmd's cursor): then every page ksmd knows had its second look with an
         * unchanged checksum, every duplicate among them met in this pass's
         * trees, and another pass can only find what changes later. A page
         * smart_scan skips leaves the unstable tree and reads as volatile
         * until its next look (seen on 6.18: volatile rose by a victim's
         * 16384 unique pages per maintenance pass), so the pages skipped in
         * the pass are allowed on top. */
        bool last_scan_settled;
        uint64_t settled_usec;          /* when a settled scan was last seen, 0 never */
        uint64_t news;                  /* ksm_enter events, ever */
        uint64_t news_at_scan_end[2];   /* news when the latest two full scans were seen ending */
        uint64_t unmet_notes;           /* model_note_unmet() growths, ever */
        uint64_t unmet_notes_at_scan_end; /* unmet_notes when the latest full scan was seen ending */
        uint64_t min_gain_pages;        /* below this a scan "found nothing" (noise) */
        uint64_t burst_min_new_pages;   /* BurstMinNewPages=, the least new memory that starts a
                                         * burst (model_unmet_floor); 0: min_gain_pages */

        /* newly mergeable memory */
        uint64_t new_mergeable_total;   /* pages: rmap growth and announced memory, ever (monotonic) */
        uint64_t new_mergeable_usec;    /* when it last grew */
        uint64_t entered_usec;          /* last ksm_enter (0 never) */
        unsigned entered_count;         /* ksm_enter events so far */
        int entered_pid;
        char entered_comm[TASK_COMM_SIZE];
        /* Mergeable memory ksmd has not met, whether or not an event told of
         * it (model_note_unmet): the latest estimate, its low-water mark
         * since it last grew (what ksmd cannot meet: the rest of a
         * process's heap), and the growth above that mark, ever
         * (monotonic, like new_mergeable_total). */
        uint64_t unmet_pages;
        uint64_t unmet_floor;
        uint64_t unmet_new_total;
        uint64_t unmet_usec;            /* when it last grew, 0 never */
        bool unmet_known;               /* the floor is known: false at start and after model_forget_unmet() */

        /* need */
        double mem_available_ratio;     /* MemAvailable / MemTotal, 1 when unknown */
        bool psi_present;
        double psi_some_avg10, psi_full_avg10;

        uint64_t last_scan_skipped;     /* pages smart_scan skipped in the full scan(s) that ended last */

        /* contention */
        KernelFixes fixes;              /* which seed fixes the kernel carries, as seen so far */
        bool fixes_changed;             /* the latest window changed one: for the caller to log */
        uint64_t pending_skips;         /* ksmd's failed tries (seed 000) since the latest full scan ended */
        uint64_t pending_scans;         /* full scans in a row that ended with such skips */
        /* full scans still to end after an exclusion: ksmd drops the
         * excluded process's rmap items as it meets them, which cancels the
         * growth of memory met meanwhile in the net figure a scan is paid by */
        uint64_t exclusion_scans;
        /* full scans still to end that may meet memory announced by
         * ksm_enter (3) or found unmet (2): memory met pays a burst's
         * round at MinGainPages= in them, at model_gain_floor() outside */
        uint64_t meet_scans;
        KsmLockCore lock_core;
        uint64_t window_usec;           /* when the latest window ended, 0 never */
        uint64_t window_full_scans;     /* full_scans as of then */
        double window_ksmd_blocked_fraction;
        uint64_t window_lost_events;
        ModelContender contenders[MODEL_MAX_CONTENDERS];
        ContenderEvidence evidence[MODEL_MAX_EVIDENCE];
        size_t n_contenders;
} Model;

void model_init(Model *m, uint64_t page_size, uint64_t min_gain_pages);

/* What a full scan's new sharing must amount to for it to pay a burst's
 * round, and what new memory must amount to before it starts a burst: the
 * floor given (MinGainPages=, BurstMinNewPages=), or 1/MODEL_GAIN_SHARE of
 * the pages ksmd tracks when that is more. A burst's every round is a full
 * scan of all of them, so what makes one worth it grows with them. Only the
 * burst's decisions use it: idle and the smart-scan workaround ask whether a
 * scan found anything at all (scans_without_find). */
#define MODEL_GAIN_SHARE 128
uint64_t model_gain_floor(const Model *m, uint64_t floor_pages);
/* What memory found unmet in the process table (model_note_unmet) must
 * amount to before it starts a burst: the floor given (BurstMinNewPages=),
 * or 1/MODEL_UNMET_SHARE of the pages ksmd tracks. Higher than a gain's:
 * such memory trickles in (guests faulting in their RAM), every burst it
 * starts costs two full scans of everything at the burst's rate, and the
 * maintenance scans meet what stays under it. Q1 (issue 14): with the gain
 * floor (~3.2 MiB of 105k pages) 5.9, 7.5 and 10.3 MiB of booting guests'
 * RAM each started a burst, ksmd 10.05 s against the defaults' 2.21 s.
 * The controller asks the same of memory ksmd meets that no event announced
 * (rmap growth): it is that memory, met by a maintenance scan first. */
#define MODEL_UNMET_SHARE 32
uint64_t model_unmet_floor(const Model *m, uint64_t floor_pages);

/* Takes one snapshot. */
void model_update(Model *m, const Snapshot *s);

/* ksm:ksm_enter: an mm became mergeable, in the context of pid. */
void model_note_ksm_enter(Model *m, uint64_t now_usec, int pid, const char *comm);
/* The controller took a process out of KSM, or one in KSM exited: the next
 * two full scans that find nothing (its rmap items going away) are not
 * barren ones. */
void model_note_exclusion(Model *m);

/* The estimate of mergeable memory ksmd has not met yet, in pages, from
 * the process table (process_unmet_pages summed): growth above its
 * low-water mark of at least min_new_pages (BurstMinNewPages=) is new
 * memory, however it came (the daemon started late, a restart, memory added
 * to an mm already in KSM); smaller growth waits until it adds up. */
void model_note_unmet(Model *m, uint64_t now_usec, uint64_t pages, uint64_t min_new_pages);
/* Forgets the low-water mark: all of the next estimate counts as new (after
 * a pause, observe or a reload, when the controller's view of the memory
 * ksmd has met is stale). The first estimate after this (and after
 * model_init) also counts pages_volatile, the pages ksmd met once and has not
 * looked at again: a merge in progress that no instance of the controller
 * has seen start (the daemon SIGKILLed mid-merge and restarted). Call it
 * after model_update(). */
void model_forget_unmet(Model *m);

/* A finished trace window of wall_usec, during which ksmd scanned
 * scanned_pages (from pages_scanned before and after). */
void model_add_window(Model *m, const ContentionWindow *w, uint64_t now_usec, uint64_t wall_usec,
                      uint64_t scanned_pages);

/* i = 0 is the newest tick, NULL past the end. */
const ModelTick *model_tick(const Model *m, size_t i);
/* ksmd CPU per scanned page, with a default until it was measured. */
double model_cpu_nsec_per_page(const Model *m);
