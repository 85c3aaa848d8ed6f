/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "proc-maps.h"
#include "procfs.h"
#include "root.h"

/* Reads the per-process files that take the target's mmap_lock (ksm_stat,
 * whose ksm_mergeable line needs mmap_read_lock, cmdline and maps) on worker
 * threads, never on the event loop nor on the merge actuator's thread. A read that does not return within
 * the deadline marks that pid slow and is left to finish on its own: the
 * kernel's wait (mmap_read_lock_killable) cannot be cancelled from here,
 * so the pool starts another worker rather than wait for it, and accepts no
 * new read of that pid until the stuck one returns. Results come back to
 * the loop through an eventfd. */

typedef enum MmReadKind {
        MM_READ_KSM_STAT,
        MM_READ_CMDLINE,
        MM_READ_MAPS,
        MM_READ_SMAPS_MERGEABLE,        /* the VM_MERGEABLE ranges, into maps (proc_smaps_read_mergeable) */
        _MM_READ_KIND_MAX,
} MmReadKind;

typedef struct MmReadResult {
        MmReadKind kind;
        int pid;
        uint64_t start_time_ticks;      /* of the incarnation the read was for */
        int error;                      /* 0, or -errno (-ESRCH gone or pid reused, -ETIME overran) */
        ProcKsmStat ksm_stat;           /* MM_READ_KSM_STAT */
        char *cmdline;                  /* MM_READ_CMDLINE; the handler may take it (set it NULL) */
        MapList maps;                   /* MM_READ_MAPS, _SMAPS_MERGEABLE; the handler may take it (zero it) */
        uint64_t duration_usec;         /* how long the read took (so far, for -ETIME) */
        bool late;                      /* the read finished, but after its deadline had been reported */
} MmReadResult;

typedef void (*MmReadHandler)(MmReadResult *r, void *userdata);

typedef struct MmReaderCounters {
        uint64_t queued;
        uint64_t completed;
        uint64_t overran;               /* reads that passed their deadline */
        uint64_t threads;               /* workers started */
        uint64_t stuck_now;             /* workers inside a read past its deadline */
        uint64_t queue_len;
} MmReaderCounters;

typedef struct MmReader MmReader;

/* max_threads bounds the workers that are not stuck past a deadline; stuck
 * ones are replaced, up to MM_READER_MAX_THREADS_FACTOR * max_threads in all
 * (several contended processes must not starve everyone else's reads). e
 * may be NULL: then the caller polls with mm_reader_dispatch(). */
#define MM_READER_MAX_THREADS_FACTOR 4
int mm_reader_new(const Root *root, sd_event *e, unsigned max_threads, uint64_t deadline_usec,
                  MmReadHandler cb, void *userdata, MmReader **ret);
/* Stops the workers that are idle and detaches those stuck in the kernel
 * (they exit when their read returns). */
MmReader *mm_reader_free(MmReader *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(MmReader *, mm_reader_free);

/* Queues a read. -EALREADY when one of that kind for pid is queued or
 * running (a stuck one included), -ENOMEM. */
int mm_reader_queue(MmReader *r, MmReadKind kind, int pid, uint64_t start_time_ticks);
/* Is any read of pid queued or running? */
bool mm_reader_busy(const MmReader *r, int pid);

/* Delivers finished reads and reports reads past their deadline (once
 * each, error -ETIME). Called by the loop on the eventfd and on a timer;
 * tests call it directly. Returns the number of results delivered. */
int mm_reader_dispatch(MmReader *r);

void mm_reader_get_counters(MmReader *r, MmReaderCounters *ret);

/* For a thread that may wait, but not for longer than the deadline (the
 * merge actuator): queues a read and waits for it at most the reader's
 * deadline, counted from the call. 0 with *ret filled, ret->error saying
 * how the read went: -ETIME when it did not finish in time (it is left to
 * finish on its own, its result dropped, and no new read of that pid is
 * accepted until it returned); -EAGAIN when it never started, every worker
 * the pool may have being stuck on other pids (then this pid is not the
 * slow one). -EALREADY when a read of pid from an earlier
 * call is still stuck, -ENOMEM. Only for a reader made with e == NULL and
 * cb == NULL, used from one thread. Free *ret with mm_read_result_done(). */
int mm_reader_read(MmReader *r, MmReadKind kind, int pid, uint64_t start_time_ticks, MmReadResult *ret);
void mm_read_result_done(MmReadResult *r);
