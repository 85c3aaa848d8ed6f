/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* The trace events the daemon reads (tracefs.h opens and reads the
 * instance) and what one sampled window of them says about who keeps ksmd
 * waiting: parsing and accounting, no I/O. */

typedef enum TraceEventType {
        TRACE_EVENT_START_LOCKING,      /* mmap_lock:mmap_lock_start_locking */
        TRACE_EVENT_ACQUIRE_RETURNED,   /* mmap_lock:mmap_lock_acquire_returned */
        TRACE_EVENT_RELEASED,           /* mmap_lock:mmap_lock_released */
        TRACE_EVENT_KSM_ENTER,          /* ksm:ksm_enter */
        TRACE_EVENT_KSM_EXIT,           /* ksm:ksm_exit */
        TRACE_EVENT_KSM_STOP_SCAN,      /* ksm:ksm_stop_scan: ksmd finished a full scan */
        TRACE_EVENT_LOST,               /* "CPU:1 [LOST 42 EVENTS]" */
        TRACE_EVENT_VMA_LOCK,           /* the daemon's kprobe on a VMA read-lock function (seed 001) */
        _TRACE_EVENT_MAX,
} TraceEventType;

typedef struct TraceEvent {
        TraceEventType type;
        char comm[TASK_COMM_SIZE];      /* as the trace printed it; may be "<...>" */
        int pid;                        /* the thread (common_pid) */
        int tgid;                       /* its process, -1 without options/record-tgid */
        unsigned cpu;
        uint64_t time_nsec;             /* trace clock */
        uint64_t mm;                    /* %p of the mm: hashed, but stable within a boot */
        uint64_t memcg_id;
        bool write;
        bool success;                   /* acquire_returned only */
        uint64_t lost;                  /* TRACE_EVENT_LOST: events the ring dropped */
        uint64_t seq;                   /* ksm_stop_scan: the scan's sequence number */
        uint64_t rmap_entries;          /* ksm_stop_scan: ksm_rmap_items at its end */
} TraceEvent;

/* The daemon's kprobe events (tracefs.h) are named this plus a digit:
 *   "ksmd-37 (   37) [001] d..1. 1146.52: ksmtuned2_vma_lock0: (lock_vma_under_rcu+0x0/0x170)" */
#define TRACE_VMA_PROBE_EVENT "ksmtuned2_vma_lock"

/* Parses one line of an instance's trace or trace_pipe, with or without the
 * tgid column:
 *   "  comm-812  (  810) [001] d..1. 1146.520942: mmap_lock_acquire_returned: mm=00000000906725b4 memcg_id=3665 write=true success=true"
 * Returns 0 and fills ret, -ENOMSG for a comment line or an event this code
 * does not use, -EINVAL for anything else. Pure: no allocation, no I/O, any
 * input (the fuzz target feeds it garbage). */
int tracefs_parse_line(const char *line, size_t len, TraceEvent *ret);

#define LOCK_HOLDER_MAX_TIDS 4

/* What one sampled window of mmap_lock events showed, per mm. */
typedef struct LockHolder {
        uint64_t mm;
        int tgid;                       /* of a writer seen acquiring or releasing it, -1 none;
                                         * the trace's hint until the daemon confirms it */
        /* The writer tasks (the trace's pid column), the first that tgid is
         * the hint of first, then the latest new ones: any one still
         * running tells the process, and a short-lived first writer (a
         * thread gone before the window ends) must not hide the others. Up
         * to LOCK_HOLDER_MAX_TIDS (holder_note_writer). */
        int tids[LOCK_HOLDER_MAX_TIDS];
        uint64_t tid_nsec[LOCK_HOLDER_MAX_TIDS]; /* each one's first write lock event (trace clock) */
        unsigned n_tids;
        uint64_t memcg_id;
        char comm[TASK_COMM_SIZE];
        uint64_t write_locks;
        uint64_t write_starts;          /* writers' lock calls, granted or not yet */
        uint64_t write_hold_nsec;       /* from acquire to release, paired per thread; a
                                         * release without its acquire adds a lower bound */
        uint64_t ksmd_locks;            /* ksmd's acquisitions of this mm */
        uint64_t ksmd_waits;            /* of those, ones that had to wait (>= ContendedNsec) */
        uint64_t ksmd_wait_nsec;        /* start_locking -> acquire_returned, less the
                                         * tracing's own share once finished */
        uint64_t ksmd_timed_waits;      /* the waits summed in ksmd_wait_nsec */
        uint64_t ksmd_long_wait_nsec;   /* of ksmd_wait_nsec, the ksmd_waits' (>= ContendedNsec) */
        uint64_t ksmd_trylock_failures; /* success=false: a trylock-patched ksmd skipped it */
        /* ksmd's time at this mm's pages: from each of its acquisitions of
         * it to ksmd's next lock call (the next page), gaps longer than
         * CONTENTION_WORK_GAP_NSEC (a sleep between batches) left out. With
         * ksmd_wait_nsec, the time ksmd spent on this process: what its
         * waits are a share of when ksmd also scans many others. */
        uint64_t ksmd_work_nsec;
        /* khugepaged's own write holds of this mm (collapse_huge_page): they
         * are khugepaged's, never the process's, and so are ksmd's waits
         * that ended when one of them did */
        uint64_t khugepaged_write_locks;
        uint64_t ksmd_wait_khugepaged_nsec;
        uint64_t khugepaged_released_nsec; /* its latest write release, 0 none */
} LockHolder;

#define CONTENTION_MAX_HOLDERS 128
#define CONTENTION_MAX_PENDING 256

typedef struct ContentionWindow {
        int ksmd_pid;
        uint64_t first_nsec, last_nsec; /* trace clock of the first and last event */
        uint64_t ksmd_first_nsec, ksmd_last_nsec; /* of ksmd's own events */
        uint64_t events;
        uint64_t lost_events;
        /* The reader stopped at its budget (the events after that point
         * were not read): like lost events, ksmd's figures cover only the
         * span of its events that were read. */
        bool truncated;
        /* ksmd's CPU time over the window (schedstat), when read: with its
         * waits, the time it was at work rather than asleep between
         * batches (model_add_window) */
        bool ksmd_cpu_known;
        uint64_t ksmd_cpu_nsec;
        uint64_t ksmd_start_locking;
        uint64_t ksmd_acquired;
        uint64_t ksmd_trylock_failures;
        uint64_t ksmd_wait_nsec;
        uint64_t ksmd_timed_waits;      /* the waits summed in ksmd_wait_nsec */
        /* the tracing's own share of each wait, taken off them once the
         * window is finished (contention_window_finish), and whether this
         * window's own lock calls measured it */
        uint64_t ksmd_wait_floor_nsec;
        bool ksmd_wait_floor_measured;
        bool finished;
        /* seed 001: the VMA read-lock probes were armed in this window
         * (contention_window_set_vma_probe), and ksmd's hits on them */
        bool vma_probe;
        uint64_t ksmd_vma_locks;
        LockHolder holders[CONTENTION_MAX_HOLDERS];
        size_t n_holders;
        uint64_t dropped_holders;       /* mms past CONTENTION_MAX_HOLDERS */

        /* khugepaged, when its pid is known (contention_window_set_khugepaged) */
        int khugepaged_pid;
        uint64_t khugepaged_yields;     /* contended read locks it dropped and took again (seed 002) */
        uint64_t khugepaged_wait_nsec;  /* ksmd's waits behind khugepaged's write holds */
        uint64_t khugepaged_read_released_mm, khugepaged_read_released_nsec;
        bool khugepaged_read_released;  /* it released a read lock, and took no other lock since */
        bool khugepaged_writer_since;   /* another task write-locked that mm since */
        /* A read lock taken again at once after a writer is a yield only
         * if what follows is more of its walk: a stock khugepaged that
         * collapses also drops its read lock (to allocate the huge page),
         * takes it again to revalidate, drops it and write-locks the mm. */
        enum {
                KHUGEPAGED_NO_CANDIDATE,
                KHUGEPAGED_RETAKEN,     /* taken again at once: a yield or a collapse's revalidation */
                KHUGEPAGED_RETAKEN_RELEASED, /* ... and released: its next lock tells which */
        } khugepaged_candidate;
        uint64_t khugepaged_candidate_mm;

        /* pairing state: ksmd's open start_locking, writers' open locks by thread */
        uint64_t ksmd_pending_mm, ksmd_pending_nsec;
        bool ksmd_pending;
        /* ksmd's last acquisition, until its next lock call ends its work there */
        uint64_t ksmd_holding_mm, ksmd_holding_nsec;
        bool ksmd_holding;
        struct {
                int pid;
                uint64_t mm, since_nsec;
        } pending[CONTENTION_MAX_PENDING];
        size_t n_pending;
} ContentionWindow;

/* A ksmd wait shorter than this is the uncontended fast path plus trace
 * overhead, not contention (an uncontended down_read is well under 1 us). */
#define CONTENTION_WAIT_THRESHOLD_NSEC UINT64_C(20000)
/* Longer than ksmd takes at one page (checksum, tree searches, a merge: a
 * few to tens of microseconds): between two of its lock calls, such a gap
 * is a sleep between batches, not work at the mm it last locked. */
#define CONTENTION_WORK_GAP_NSEC UINT64_C(1000000)

void contention_window_init(ContentionWindow *w, int ksmd_pid);
/* Tells khugepaged's events apart (its pid, 0 unknown): its write holds are
 * not blamed on the process, its read locks show whether it yields. */
void contention_window_set_khugepaged(ContentionWindow *w, int khugepaged_pid);
/* khugepaged releasing a read lock, a writer taking the mm and khugepaged
 * taking it again within this: the contended-lock drop of seed 002. */
#define CONTENTION_KHUGEPAGED_YIELD_NSEC UINT64_C(1000000)
/* Says the window had the seed-001 probes armed: no hit then means ksmd
 * took no VMA read lock. */
void contention_window_set_vma_probe(ContentionWindow *w, bool armed);
/* Accounts one parsed event. Pure. */
void contention_window_add(ContentionWindow *w, const TraceEvent *e);
/* Takes the tracing's own share off ksmd's waits, once, after the
 * window's last event. A wait is the time from ksmd's start_locking event
 * to its acquire_returned, and recording the first event (its record
 * written out in full, cgroup_id_from_mm() included) and reserving the
 * second are in it. Measured on 6.18 with no writer at all, 13,316 lock
 * calls of ksmd in 18 ms (nanosecond timestamps from a raw trace): waits
 * of 190 ns at least, 261 ns the median, 421 ns the 99th percentile, 3.6 ms
 * in all, 20% of ksmd's time "blocked" where nothing blocked it. The
 * daemon's windows read the same, 20-27% with no contender (Q1, S4). That
 * is ExcludeBlocked=20's bar: a process with a writer seen and one real
 * wait read as blocked by ksmd's own tracing.
 * The trace_pipe text has microseconds only, so each of those waits reads
 * 0 or 1 us; their mean is still the tracing's cost, the median is not.
 * So the cost is measured in each window where no wait can be
 * contention: ksmd's lock calls on mms no task wrote to or asked to write
 * to (a reader waits for writers only), but for waits of
 * CONTENTION_WAIT_THRESHOLD_NSEC or more (a writer's hold that spanned the
 * whole window leaves no event in it). Their mean wait, from at least
 * CONTENTION_FLOOR_MIN_WAITS of them, is taken off each of ksmd's waits
 * (ksmd_wait_floor_nsec), for the window and for each mm: sums less the
 * floor times their count, never below zero. A window with too few such
 * calls (ksmd at one mm with a writer throughout) takes fallback_nsec, the
 * last measured one. At most CONTENTION_WAIT_FLOOR_MAX_NSEC. Pure. */
#define CONTENTION_FLOOR_MIN_WAITS 256
#define CONTENTION_WAIT_FLOOR_MAX_NSEC UINT64_C(5000)
void contention_window_finish(ContentionWindow *w, uint64_t fallback_nsec);
/* Trace-clock span the events covered. */
uint64_t contention_window_span_nsec(const ContentionWindow *w);
/* The span ksmd's own events covered: when the ring overflowed (it keeps
 * the newest events), the time its waits are a share of. */
uint64_t contention_window_ksmd_span_nsec(const ContentionWindow *w);
/* Every event of the window was read: none lost, none left unread. */
bool contention_window_complete(const ContentionWindow *w);
/* The holder that kept ksmd waiting longest (or failed most of its
 * trylocks), NULL when ksmd never waited. */
const LockHolder *contention_window_worst(const ContentionWindow *w);
