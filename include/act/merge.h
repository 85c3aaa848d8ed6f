/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inject.h"
#include "macro.h"
#include "merge-method.h"
#include "mm-reader.h"
#include "plan.h"
#include "proc-maps.h"
#include "probe.h"
#include "root.h"

/* The merge actuator: carries out ProcessAction entries (plan.h) through a
 * pidfd and reports what happened, one MergeOutcome per action. Errors of
 * one process (ESRCH, EPERM, EINVAL, ...) are outcomes, never failures of
 * the call; only -ENOMEM is returned.
 *
 * Mechanisms, chosen from the start-up Probe and the action's MergeMethod:
 *   process_ksm  process_ksm_enable/disable(pidfd, 0), out-of-tree syscalls
 *                whose numbers /sys/kernel/process_ksm publishes. Whole mm,
 *                like PR_SET_MEMORY_MERGE.
 *   madvise      process_madvise(pidfd, ranges, MADV_(UN)MERGEABLE) over the
 *                anonymous private ranges of /proc/<pid>/maps, on kernels that
 *                allow it remotely (upstream 6.18 answers EINVAL). Ranges
 *                only: mappings made later are not covered.
 *   inject       prctl(PR_SET_MEMORY_MERGE, 1|0) run inside the target with
 *                ptrace (inject.h); where a process marked ranges itself (QEMU
 *                guest RAM), disabling injects madvise(MADV_UNMERGEABLE) over
 *                its mappings instead, since PR_SET_MEMORY_MERGE 0 only acts
 *                on a process that has ksm_merge_any set.
 *   Method=any tries process_ksm, madvise, inject in that order (whole-mm
 *   mechanisms first: they also cover memory mapped later); Method=none is
 *   never touched. A named method this kernel lacks is an "unsupported"
 *   outcome, not a silent fallback.
 *
 * Before acting: the pid is opened as a pidfd, its start time compared with
 * the action's (a reused pid is "gone"), and ksm_stat read (like maps, with
 * the context's MmReader and its deadline: a process whose mmap_lock is
 * held for seconds is a "failed" outcome with ETIME and slow set after one
 * deadline, not a hold on every action queued behind it): a process
 * already merging (ksm_merge_any: yes, or ranges it marked itself) is
 * recognised and not touched; one not merging is not "disabled" again.
 * After acting, ksm_stat is read again to check that the kernel did it.
 * For inject, the action carries what its policy matched
 * (ProcessAction.identity); inject.c checks it again with the thread
 * stopped, and refuses a privileged process unless the policy says
 * InjectPrivileged=yes. Switching on by any method is refused for a
 * privileged process first (EPERM), unless InjectPrivileged=yes: merging
 * exposes it to KSM's side channel whatever the mechanism.
 *
 *
 * Capabilities (for the sandbox, sandbox.c):
 *   all          none for pidfd_open(2); CAP_DAC_OVERRIDE (or same uid) and
 *                PTRACE_MODE_READ for ksm_stat and maps of other users.
 *   process_ksm  CAP_SYS_NICE, plus PTRACE_MODE_READ_FSCREDS on the target
 *                (CAP_SYS_PTRACE for another uid or a non-dumpable process),
 *                as the patch's do_process_ksm_control() checks.
 *   madvise      the same: mainline process_madvise() takes
 *                mm_access(PTRACE_MODE_READ_FSCREDS) and then, for any remote
 *                advice, CAP_SYS_NICE (EPERM); patches that allow
 *                MADV_MERGEABLE remotely widen process_madvise_remote_valid()
 *                and keep those checks.
 *   inject       CAP_SYS_PTRACE (PTRACE_MODE_ATTACH_REALCREDS for
 *                PTRACE_SEIZE and /proc/<pid>/mem, read only:
 *                CAP_DAC_READ_SEARCH for other users' 0600 mem files;
 *                writing it would need CAP_DAC_OVERRIDE, hence
 *                PTRACE_POKEDATA, which is also bound to the tracee;
 *                Yama ptrace_scope 1 and 2 also need CAP_SYS_PTRACE, 3 forbids
 *                attaching at all). No CAP_SYS_NICE.
 *                For targets with a seccomp filter also CAP_SYS_ADMIN, and
 *                the daemon itself not under seccomp: seccomp_get_filter()
 *                answers EACCES otherwise, and then such targets are refused
 *                (InjectIntoSeccomp=yes skips reading their filters).
 *   System calls the actuator makes (seccomp allow-list): prctl (ksmctl
 *                exec only), pidfd_open, poll (pidfd liveness),
 *                process_madvise, the process_ksm numbers, ptrace, wait4/waitid,
 *                pread64 (mem), openat/read/close, dup3 (mem reopened),
 *                sched_yield, nanosleep/clock_nanosleep.
 *
 * Stopping the daemon unmerges nothing unless UnmergeOnExit=yes; then
 * merge_ledger_unmerge() disables what the daemon itself enabled. */

typedef enum MergeOutcomeKind {
        MERGE_OUTCOME_DONE,             /* changed, and ksm_stat confirms it */
        MERGE_OUTCOME_ALREADY,          /* already in the wanted state: not touched */
        MERGE_OUTCOME_DRY_RUN,          /* would have been changed */
        MERGE_OUTCOME_SKIPPED,          /* Method=none */
        MERGE_OUTCOME_UNSUPPORTED,      /* the kernel (or build) lacks the method */
        MERGE_OUTCOME_REFUSED,          /* not done to protect the target (traced, seccomp, stopped) */
        MERGE_OUTCOME_FAILED,           /* the kernel said no (EPERM, EINVAL, ...) */
        MERGE_OUTCOME_GONE,             /* exited, or the pid was reused */
        _MERGE_OUTCOME_KIND_MAX,
} MergeOutcomeKind;

const char *merge_outcome_kind_to_string(MergeOutcomeKind k); /* "done", "already", ... */

typedef struct MergeOutcome {
        int pid;
        uint64_t start_time_ticks;
        MergeAction action;
        MergeMethod requested;
        MergeMethod used;               /* the mechanism tried last; MERGE_METHOD_NONE when none */
        MergeOutcomeKind kind;
        int error;                      /* positive errno, 0 on success */
        uint64_t duration_usec;         /* the whole action */
        uint64_t pause_usec;            /* the target thread was held by ptrace (inject only) */
        uint64_t time_usec;             /* CLOCK_MONOTONIC when it finished */
        /* For status lines and the bus: "method inject: enabled (tid 812,
         * paused 74 us)", "method inject refused: EBUSY (already traced by pid
         * 77)", "method madvise unsupported: EINVAL (...)". */
        char text[192];
        char reason[192];               /* the action's reason (which policy wanted it) */
        bool restored_own;              /* ENABLE gave back merging the process had of its own (not the
                                         * daemon's doing): UnmergeOnExit= leaves it (merge_ledger_update) */
        bool inject_privileged;         /* the action's: the ledger disables with the same right */
        bool slow;                      /* a read of its ksm_stat or maps overran the deadline */
} MergeOutcome;

static inline bool merge_outcome_ok(const MergeOutcome *o) {
        return o->kind == MERGE_OUTCOME_DONE || o->kind == MERGE_OUTCOME_ALREADY ||
               o->kind == MERGE_OUTCOME_DRY_RUN || o->kind == MERGE_OUTCOME_SKIPPED;
}

typedef struct MergeReport {
        MergeOutcome *outcomes;
        size_t n;
} MergeReport;

void merge_report_done(MergeReport *r);
/* The latest outcome for pid in r, NULL when none. */
const MergeOutcome *merge_report_find(const MergeReport *r, int pid);

/* What a process merged before the daemon took it out of KSM (a
 * controller exclusion, or a policy's DISABLE), so that switching it back
 * on restores exactly that: a process that had marked only some ranges
 * (QEMU's guest RAM) gets those ranges back, not PR_SET_MEMORY_MERGE over
 * its whole mm. Kept by the merge worker's thread alone. */
typedef struct MergeRestoreEntry {
        int pid;
        uint64_t start_time_ticks;
        bool merge_any;                 /* it had ksm_merge_any: PR_SET_MEMORY_MERGE restores it */
        bool ours;                      /* the daemon had switched it on (it was in the ledger) */
        MapList ranges;                 /* else the VM_MERGEABLE ranges it had (smaps "mg") */
} MergeRestoreEntry;

typedef struct MergeRestoreBook {
        MergeRestoreEntry *entries;
        size_t n, alloc;
        /* Written again at each change, so that an instance started after
         * this one was killed restores what the processes had (the
         * controller's exclusions outlive a SIGKILL: exclusion journal).
         * NULL: not persisted. */
        char *path;
        /* The last write's error, 0 once it is written: a write that
         * failed (a full /run) is tried again (merge_restore_book_flush),
         * not only at the next change. */
        int write_error;
} MergeRestoreBook;

/* At most this many processes are remembered; the oldest goes first. */
#define MERGE_RESTORE_MAX 1024

void merge_restore_book_done(MergeRestoreBook *b);
/* One line per process: "PID START_TIME_TICKS any|ranges OURS(0|1)
 * [START-END ...]", addresses in hex. NULL on ENOMEM. */
char *merge_restore_book_format(const MergeRestoreBook *b);
/* Adds the lines of text to b (a process already in b is replaced). A line
 * that does not parse is skipped with a warning naming name and its line.
 * The number of processes taken, or -ENOMEM. */
int merge_restore_book_parse(MergeRestoreBook *b, const char *text, const char *name);
/* Reads path (none yet is an empty book), keeps the processes that still
 * run with the same start time (root NULL: all), and persists b at path
 * from now on. The number of processes kept, or a negative errno. */
int merge_restore_book_load(MergeRestoreBook *b, const char *path, const Root *root);
/* Writes b to its path again when the last write failed: 0 when the file
 * holds b now (or b is not persisted), else the write's negative errno. The
 * merge worker calls it every MERGE_SAVE_RETRY_USEC while it fails. */
int merge_restore_book_flush(MergeRestoreBook *b);
#define MERGE_SAVE_RETRY_USEC (5 * USEC_PER_SEC)
const MergeRestoreEntry *merge_restore_find(const MergeRestoreBook *b, int pid, uint64_t start_time_ticks);

typedef struct MergeContext {
        MergeRestoreBook *restore;      /* NULL: switching on is always whole-mm (or all anon ranges) */
        const char *restore_path;       /* merge_worker_start(): the book's file (RuntimeDirectory=); NULL none */
        const char *ledger_path;        /* merge_worker_start(): the ledger's file; NULL none */
        const struct MergeLedger *ledger; /* what the daemon switched on, for MergeRestoreEntry.ours; NULL */
        const Root *root;
        const Probe *probe;
        bool dry_run;
        bool inject_seccomp;            /* InjectIntoSeccomp=: inject into Seccomp: 2 processes */
        uint64_t stop_timeout_usec;     /* for inject; 0: its default */
        const _Atomic uint64_t *give_up_usec; /* for inject: no wait past it (InjectOptions); NULL */
        /* Method=inject through the injector process (injector.h); NULL:
         * in this process, which then needs CAP_SYS_PTRACE. */
        struct InjectorClient *injector;
        /* For injection in this process: where seccomp filters come from
         * (InjectOptions.get_filter); NULL: PTRACE_SECCOMP_GET_FILTER. */
        long (*get_filter)(int tid, unsigned long idx, const struct sock_filter **ret_prog, void *userdata);
        void *filter_userdata;
        /* Reads ksm_stat and maps with a deadline (mm_reader_read()): made
         * with e == NULL and cb == NULL, used by this thread only. NULL: read
         * directly, with no deadline (tests of one target); the worker
         * makes its own when NULL. */
        MmReader *reader;
        uint64_t read_deadline_usec;    /* for the worker's own reader; 0: 1 s */
} MergeContext;

/* One injection, as plain values (the injector's request carries it): an
 * exact list of ranges to mark or unmark (MergeRestoreBook), or else
 * prctl/madvise as below; the identity the target must still have
 * (ProcessIdentity) and whether its policy allows a privileged one. More
 * ranges than fit go in several injections. */
#define MERGE_INJECT_RANGES_MAX 64
typedef struct MergeInjectJob {
        MergeAction action;
        uint64_t start_time_ticks;      /* the identity, for reads with a deadline (MergeContext.reader) */
        int merge_any;                  /* ksm_stat's ksm_merge_any as read before (-1 unknown) */
        ProcessIdentity expect;
        bool allow_privileged;          /* InjectPrivileged=yes */
        uint32_t n_ranges;              /* > 0: madvise exactly these [start, end) */
        uint64_t ranges[MERGE_INJECT_RANGES_MAX][2];
} MergeInjectJob;

/* Method=inject in this process: prctl(PR_SET_MEMORY_MERGE) for an enable
 * or a process with ksm_merge_any set (merge_any == 1), else
 * madvise(MADV_UNMERGEABLE) over the ranges it marked itself. 0 when every
 * injected call succeeded; -errno as inject_syscalls() refuses, or the
 * failing call's errno with *ret_call_failed set (the reason in stats).
 * The injector's inject worker runs this; the daemon only with Sandbox=no. */
int merge_inject_local(const MergeContext *c, int pidfd, int pid, int pid_dirfd, const MergeInjectJob *job,
                       InjectStats *stats, bool *ret_call_failed);

/* Carries out one action. Returns 0 (the outcome says what happened) or
 * -ENOMEM. */
int merge_apply_one(const MergeContext *c, const ProcessAction *a, MergeOutcome *ret);
/* Carries out n actions in order, appending one outcome each to ret. */
int merge_apply(const MergeContext *c, const ProcessAction *a, size_t n, MergeReport *ret);

/* The processes the daemon itself enabled (pid, start time, mechanism), so
 * that UnmergeOnExit=yes disables exactly those and nothing else. */
typedef struct MergeLedgerEntry {
        int pid;
        uint64_t start_time_ticks;
        MergeMethod method;
        bool inject_privileged;         /* enabled under InjectPrivileged=yes: disabled likewise */
} MergeLedgerEntry;

typedef struct MergeLedger {
        MergeLedgerEntry *entries;
        size_t n, alloc;
        /* Written again at each change (RuntimeDirectory=/enabled), so that
         * UnmergeOnExit=yes in an instance started after this one was
         * killed still switches off what this one switched on. NULL: not
         * persisted. */
        char *path;
        int write_error;        /* as MergeRestoreBook's */
} MergeLedger;

/* The reason of the ledger's switch-offs at a stop. */
#define MERGE_REASON_UNMERGE_ON_EXIT "UnmergeOnExit=yes"

void merge_ledger_done(MergeLedger *l);
/* Records DONE enables and forgets disables that took effect (DONE,
 * ALREADY) and GONE processes; a disable that failed, was refused or gave
 * up keeps its entry. 1 when the ledger changed, 0 when not, -ENOMEM. */
int merge_ledger_update(MergeLedger *l, const MergeReport *r);
/* One line per process: "PID START_TIME_TICKS METHOD PRIVILEGED(0|1)".
 * NULL on ENOMEM. */
char *merge_ledger_format(const MergeLedger *l);
/* Adds the lines of text to l; a line that does not parse is skipped with
 * a warning naming name and its line. The number taken, or -ENOMEM. */
int merge_ledger_parse(MergeLedger *l, const char *text, const char *name);
/* As merge_restore_book_load(), for the ledger. */
int merge_ledger_load(MergeLedger *l, const char *path, const Root *root);
/* As merge_restore_book_flush(), for the ledger. */
int merge_ledger_flush(MergeLedger *l);
/* Disables every entry (with the method that enabled it) until
 * c->give_up_usec; outcomes go to ret. What was not switched off (failed,
 * refused, not reached before the deadline) stays in the ledger and its
 * file. */
int merge_ledger_unmerge(const MergeContext *c, MergeLedger *l, MergeReport *ret);

/* A thread that applies plans off the event loop: reading maps and ksm_stat
 * takes the target's mmap_lock, and a ptrace stop waits for the target. The
 * loop submits the plan's actions and takes the report on a later tick. The
 * worker is the only thread that ptraces (a tracer is a thread, not a
 * process): it also detaches the threads an injection gave up on as soon as
 * they stop, looking every 5 ms while any is left, between and during
 * actions (inject_poll_abandoned). */
typedef struct MergeWorker MergeWorker;

/* c->root and c->probe must outlive the worker. */
int merge_worker_start(const MergeContext *c, MergeWorker **ret);
/* Queues a copy of the actions, behind a batch that is running. 0 when
 * queued (also for n == 0), -EBUSY when 4096 actions already wait (try
 * again later), -ENOMEM. */
int merge_worker_submit(MergeWorker *w, const ProcessAction *a, size_t n);
bool merge_worker_busy(MergeWorker *w);
/* Moves the finished batch's outcomes into ret (appending). Returns 1 when
 * there was one, 0 when none is ready. */
int merge_worker_take(MergeWorker *w, MergeReport *ret);
/* Changes dry_run / inject_seccomp for later batches (reload). */
void merge_worker_set_options(MergeWorker *w, bool dry_run, bool inject_seccomp);
/* For UnmergeOnExit=yes: drops the queued actions, makes the running one
 * give up on its target at once, then has the worker thread --
 * the tracer of any thread it gave up on -- disable what it enabled.
 * Outcomes, with those of the batch it cut short, go into ret (may be
 * NULL). -ETIMEDOUT when that did not finish by the deadline (it goes on
 * until merge_worker_stop_until() ends it), -ENOMEM. */
int merge_worker_unmerge_all(MergeWorker *w, uint64_t deadline_usec, MergeReport *ret);
/* The same, with the n actions a carried out first (the readmissions of
 * the controller's exclusions at a clean stop: merging given back as the
 * process had it, from the restore book), and the ledger's unmerge only
 * with unmerge. Everything by deadline_usec. */
int merge_worker_finish(MergeWorker *w, const ProcessAction *a, size_t n, bool unmerge, uint64_t deadline_usec,
                        MergeReport *ret);
/* Stops the thread: the running action (or unmerge) gives up on its target
 * at once, the rest is dropped, and the thread is joined and freed if it
 * ends by deadline_usec (CLOCK_MONOTONIC) + 200 ms. Otherwise (stuck
 * in the kernel, say on a hung process's mmap_lock) it is left to end with
 * the process, which is safe: process exit detaches its tracees, whose
 * signal frames bring them home (inject.h). Returns NULL. */
MergeWorker *merge_worker_stop_until(MergeWorker *w, uint64_t deadline_usec);
/* merge_worker_stop_until() 2 s from now. */
MergeWorker *merge_worker_stop(MergeWorker *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(MergeWorker *, merge_worker_stop);
