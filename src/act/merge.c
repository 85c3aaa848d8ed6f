/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The merge actuator: see merge.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fileio.h"
#include "inject.h"
#include "injector.h"
#include "kernel-fixes.h"
#include "log.h"
#include "merge.h"
#include "proc-maps.h"
#include "process-read.h"
#include "procfs.h"
#include "string-table.h"
#include "syscalls.h"
#include "util.h"

/* process_madvise() takes at most UIO_MAXIOV ranges per call. */
#define MADVISE_IOV_MAX 1024
/* Beyond this many runs of mappings an injected MADV_UNMERGEABLE goes over
 * the whole span in one call: the kernel walks every VMA in it and answers
 * ENOMEM for the holes, after having unmarked the rest. */
#define INJECT_RUNS_MAX 256
/* The worker's reads of ksm_stat and maps, unless the context says. */
#define MERGE_READ_DEADLINE_USEC (1 * USEC_PER_SEC)

static const char *const merge_outcome_kind_table[_MERGE_OUTCOME_KIND_MAX] = {
        [MERGE_OUTCOME_DONE] = "done",
        [MERGE_OUTCOME_ALREADY] = "already",
        [MERGE_OUTCOME_DRY_RUN] = "dry-run",
        [MERGE_OUTCOME_SKIPPED] = "skipped",
        [MERGE_OUTCOME_UNSUPPORTED] = "unsupported",
        [MERGE_OUTCOME_REFUSED] = "refused",
        [MERGE_OUTCOME_FAILED] = "failed",
        [MERGE_OUTCOME_GONE] = "gone",
};

DEFINE_STRING_TABLE_TO_STRING(merge_outcome_kind, MergeOutcomeKind);

void merge_report_done(MergeReport *r) {
        free(r->outcomes);
        *r = (MergeReport) {};
}

const MergeOutcome *merge_report_find(const MergeReport *r, int pid) {
        for (size_t i = r->n; i > 0; i--)
                if (r->outcomes[i - 1].pid == pid)
                        return &r->outcomes[i - 1];
        return NULL;
}

static int report_push(MergeReport *r, const MergeOutcome *o) {
        MergeOutcome *n = realloc(r->outcomes, (r->n + 1) * sizeof *n);
        if (!n)
                return -ENOMEM;
        r->outcomes = n;
        r->outcomes[r->n++] = *o;
        return 0;
}

static const char *errname(int e) {
        const char *s = strerrorname_np(e);
        return s ? s : "E?";
}

/* Notes and reasons are cut to their buffer on purpose. */
static void note_printf(char *buf, size_t n, const char *fmt, ...) _printf_(3, 4);
static void note_printf(char *buf, size_t n, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, n, fmt, ap);
        va_end(ap);
}

static void set_text(MergeOutcome *o, const char *fmt, ...) _printf_(2, 3);
static void set_text(MergeOutcome *o, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(o->text, sizeof o->text, fmt, ap);
        va_end(ap);
}

/* Why a method cannot be used on this kernel, or NULL when it can. */
static const char *method_unavailable(const MergeContext *c, MergeMethod m, int *ret_errno) {
        *ret_errno = EOPNOTSUPP;
        switch (m) {
        case MERGE_METHOD_PROCESS_KSM:
                if (!c->probe->process_ksm_syscall) {
                        *ret_errno = ENOSYS;
                        return "this kernel has no process_ksm syscalls";
                }
                return NULL;
        case MERGE_METHOD_MADVISE:
                if (!c->probe->process_madvise_remote_mergeable) {
                        *ret_errno = c->probe->process_madvise_errno ?: EINVAL;
                        return "this kernel refuses remote MADV_MERGEABLE";
                }
                return NULL;
        case MERGE_METHOD_INJECT:
                if (!inject_supported())
                        return "injection is implemented for x86-64 only";
                if (!c->probe->prctl_memory_merge) {
                        *ret_errno = EINVAL;
                        return "this kernel has no PR_SET_MEMORY_MERGE (Linux 6.4)";
                }
                if (c->probe->ptrace_scope == 3) {
                        *ret_errno = EPERM;
                        return "Yama ptrace_scope=3 forbids attaching";
                }
                return NULL;
        default:
                return "not a mechanism";
        }
}

/* Whether a mechanism can reach the wanted state from the current one:
 * whole-mm switches clear ksm_merge_any (and with it every VM_MERGEABLE),
 * but do nothing for ranges a process marked itself; remote madvise marks
 * and unmarks ranges but cannot clear ksm_merge_any. */
static bool method_fits(MergeMethod m, MergeAction a, const ProcKsmStat *f, const MapList *exact) {
        if (a == MERGE_ACTION_ENABLE)
                /* Restoring ranges: process_ksm only knows the whole mm. */
                return !(exact && exact->n > 0 && m == MERGE_METHOD_PROCESS_KSM);
        switch (m) {
        case MERGE_METHOD_PROCESS_KSM:
                return f->merge_any == 1;
        case MERGE_METHOD_MADVISE:
                return f->merge_any != 1;
        default:
                return true;
        }
}

/* The files that take the target's mmap_lock go through the context's
 * reader: a process whose lock is held for seconds costs this thread, and
 * every action queued behind it, one deadline and not the hold. -ETIME when
 * the read overran (or one of an earlier action is still stuck), -ENOLCK
 * when it never started: the reader's workers are all stuck on others
 * (not EAGAIN, which process_madvise and the injector answer for reasons of
 * their own). */
static int read_mm_file(const MergeContext *c, MmReadKind kind, int pid, uint64_t start_time_ticks, int pid_dirfd,
                        ProcKsmStat *ret_stat, MapList *ret_maps) {
        MmReadResult res;
        int r;

        if (!c->reader)
                return kind == MM_READ_MAPS             ? proc_maps_read(pid_dirfd, ret_maps)
                       : kind == MM_READ_SMAPS_MERGEABLE ? proc_smaps_read_mergeable(pid_dirfd, ret_maps)
                                                          : procfs_read_ksm_stat(pid_dirfd, ret_stat);
        r = mm_reader_read(c->reader, kind, pid, start_time_ticks, &res);
        if (r == -EALREADY)
                return -ETIME;
        if (r < 0)
                return r;
        if (res.error == -EAGAIN)
                res.error = -ENOLCK;
        if (res.error >= 0) {
                if (kind == MM_READ_MAPS || kind == MM_READ_SMAPS_MERGEABLE) {
                        *ret_maps = res.maps;
                        res.maps = (MapList) {};
                } else
                        *ret_stat = res.ksm_stat;
        }
        mm_read_result_done(&res);
        return res.error;
}

/* Ranges of the target's maps (injector.h InjectorRanges). maps and smaps
 * check ptrace access, which a daemon that runs an injector has given up
 * (CAP_SYS_PTRACE): the injector's read worker reads them then, with its own
 * deadline; else the context's reader. */
static int read_ranges(const MergeContext *c, InjectorRanges which, int pid, uint64_t start_time_ticks,
                       int pid_dirfd, MapList *ret) {
        MapList maps = {};
        int r;

        if (c->injector)
                return injector_client_read_ranges(c->injector, pid, start_time_ticks, which, ret);
        if (which == INJECTOR_RANGES_MERGEABLE)
                return read_mm_file(c, MM_READ_SMAPS_MERGEABLE, pid, start_time_ticks, pid_dirfd, NULL, ret);
        r = read_mm_file(c, MM_READ_MAPS, pid, start_time_ticks, pid_dirfd, NULL, &maps);
        if (r < 0)
                return r;
        r = which == INJECTOR_RANGES_ADVISABLE ? map_list_advisable_runs(&maps, ret) : map_list_anon_private(&maps, ret);
        map_list_done(&maps);
        return r;
}

/* The target's ksm_stat. On a kernel without its ksm_merge_any and
 * ksm_mergeable lines the reader infers them from smaps, which a daemon
 * that runs an injector cannot read (no CAP_SYS_PTRACE): then from the
 * injector's ranges, with the same inference (map_list_ksm_flags()). */
static int read_ksm_stat(const MergeContext *c, int pid, uint64_t start_time_ticks, int pid_dirfd,
                         ProcKsmStat *ret) {
        ProcKsmStat s;
        int r = read_mm_file(c, MM_READ_KSM_STAT, pid, start_time_ticks, pid_dirfd, &s, NULL);
        if (r < 0)
                return r;
        if (s.merge_any < 0 && s.mergeable < 0 && c->injector) {
                _cleanup_(map_list_done) MapList mergeable = {}, anon = {};
                r = read_ranges(c, INJECTOR_RANGES_MERGEABLE, pid, start_time_ticks, pid_dirfd, &mergeable);
                if (r >= 0)
                        r = read_ranges(c, INJECTOR_RANGES_ANON_PRIVATE, pid, start_time_ticks, pid_dirfd, &anon);
                if (r == -ESRCH || r == -ENOMEM)
                        return r;
                if (r >= 0) {
                        map_list_ksm_flags(&mergeable, &anon, &s.merge_any, &s.mergeable);
                        s.flags_inferred = true;
                } else
                        log_debug_errno(r, "pid %d: its ranges through the injector: %m; ksm_merge_any unknown", pid);
        }
        *ret = s;
        return 0;
}

static uint64_t read_deadline_msec(const MergeContext *c) {
        return (c->read_deadline_usec ?: MERGE_READ_DEADLINE_USEC) / USEC_PER_MSEC;
}

/* Seed 003: on a kernel whose break_ksm() walks every page of a range,
 * switching off a process with a large sparse mergeable mapping (a JVM's
 * reserved heap, a guest's RAM mapped MAP_NORESERVE) holds its thread (an
 * injected call) or its mmap_lock (a remote madvise) in the kernel for as
 * long as the walk takes: 256 GiB took 22 s on the test machine, a 32 TiB
 * one 9 min in the seed's thread. The plan says whether one call is cheap
 * enough, cuts the walk into chunks of about UNMERGE_CHUNK_BUDGET_USEC, or
 * refuses. The ranges are the exact ones the process had marked when known
 * (smaps), else every advisable run of its maps, read through the
 * context's reader with its deadline. */
static int unmerge_plan_for(const MergeContext *c, const ProcessAction *pa, int pid_dirfd, const MapList *exact,
                            UnmergePlan *ret, uint64_t (**ret_ranges)[2], size_t *ret_n) {
        MapList runs = {};
        KernelFixes k;
        int r;

        if (exact && exact->n > 0) {
                if (map_list_copy(exact, &runs) < 0)
                        return -ENOMEM;
        } else {
                r = read_ranges(c, INJECTOR_RANGES_ADVISABLE, pa->pid, pa->start_time_ticks, pid_dirfd, &runs);
                if (r < 0)
                        return r;
        }
        uint64_t (*ranges)[2] = calloc(MAX(runs.n, (size_t) 1), sizeof *ranges);
        if (!ranges) {
                map_list_done(&runs);
                return -ENOMEM;
        }
        for (size_t i = 0; i < runs.n; i++) {
                ranges[i][0] = runs.ranges[i].start;
                ranges[i][1] = runs.ranges[i].end;
        }
        size_t n = runs.n;
        map_list_done(&runs);
        probe_kernel_fixes(c->probe, &k);
        r = unmerge_plan_make(&k, (const uint64_t (*)[2]) ranges, n, page_size(), ret);
        if (r < 0) {
                free(ranges);
                return r;
        }
        *ret_ranges = ranges;
        *ret_n = n;
        return 0;
}

/* One chunk: the injected madvise or the remote one; returns -errno and
 * how long the target was held. */
typedef int (*UnmergeChunkFn)(const UnmergeChunk *chunk, void *userdata, uint64_t *ret_held_usec);

typedef struct ChunkedResult {
        size_t chunks;
        size_t slow_chunks;             /* that held the target more than twice the budget */
        uint64_t max_held_usec, total_held_usec;
} ChunkedResult;

static int unmerge_chunked(const MergeContext *c, const UnmergePlan *p, const uint64_t (*ranges)[2], size_t n,
                           UnmergeChunkFn fn, void *userdata, ChunkedResult *res) {
        uint64_t cursor = 0, chunk_pages = p->chunk_pages;
        UnmergeChunk chunk;

        while (unmerge_next_chunk(ranges, n, page_size(), chunk_pages, &cursor, &chunk)) {
                uint64_t held = 0;
                int r;

                if (c->give_up_usec) {
                        uint64_t g = atomic_load(c->give_up_usec);
                        if (g != 0 && now_usec(CLOCK_MONOTONIC) >= g)
                                return -ECANCELED;
                }
                r = fn(&chunk, userdata, &held);
                if (r < 0)
                        return r;
                res->chunks++;
                if (held > 2 * UNMERGE_CHUNK_BUDGET_USEC) {
                        res->slow_chunks++;
                        log_debug("Unmerge chunk %#" PRIx64 "-%#" PRIx64 " (%" PRIu64 " pages) held the target %" PRIu64
                                  " us (budget %d us)",
                                  chunk.start, chunk.end, chunk.pages, held, UNMERGE_CHUNK_BUDGET_USEC);
                }
                res->max_held_usec = MAX(res->max_held_usec, held);
                res->total_held_usec += held;
                chunk_pages = unmerge_next_chunk_pages(chunk_pages, held, p->chunk_pages / 4);
        }
        return 0;
}

static int remote_madvise_chunk(const UnmergeChunk *chunk, void *userdata, uint64_t *ret_held_usec) {
        int pidfd = *(int *) userdata;
        struct iovec iov = { .iov_base = (void *) (uintptr_t) chunk->start, .iov_len = (size_t) (chunk->end - chunk->start) };
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        long k = sys_process_madvise(pidfd, &iov, 1, MADV_UNMERGEABLE, 0);
        int e = errno;
        *ret_held_usec = now_usec(CLOCK_MONOTONIC) - t0;
        if (k < 0 && e != ENOMEM)
                return -e;
        return 0;
}

static int do_process_ksm(const MergeContext *c, int pidfd, MergeAction a) {
        long nr = a == MERGE_ACTION_ENABLE ? c->probe->process_ksm_enable_nr : c->probe->process_ksm_disable_nr;
        if (syscall(nr, pidfd, 0) < 0)
                return negative_errno();
        return 0;
}

static int do_remote_madvise(const MergeContext *c, int pidfd, const ProcessAction *pa, int pid_dirfd,
                             const MapList *exact, char *note, size_t note_size) {
        MapList runs = {};
        _cleanup_free_ struct iovec *iov = NULL;
        MergeAction a = pa->action;
        int r;

        if (a == MERGE_ACTION_DISABLE) {
                _cleanup_(unmerge_plan_done) UnmergePlan p = {};
                _cleanup_free_ uint64_t (*ranges)[2] = NULL;
                size_t n = 0;
                r = unmerge_plan_for(c, pa, pid_dirfd, exact, &p, &ranges, &n);
                if (r < 0)
                        return r;
                if (p.refused) {
                        note_printf(note, note_size, "%s", p.reason);
                        return -E2BIG;
                }
                if (p.chunked) {
                        ChunkedResult res = {};
                        r = unmerge_chunked(c, &p, (const uint64_t (*)[2]) ranges, n, remote_madvise_chunk, &pidfd, &res);
                        note_printf(note, note_size, " in %zu chunks, mmap_lock held <= %" PRIu64 " us, %zu over %d ms (%s)",
                                    res.chunks, res.max_held_usec, res.slow_chunks, 2 * UNMERGE_CHUNK_BUDGET_USEC / 1000,
                                    p.reason);
                        return r;
                }
        }

        if (exact && exact->n > 0) {
                if (map_list_copy(exact, &runs) < 0)
                        return -ENOMEM;
        } else {
                r = read_ranges(c, a == MERGE_ACTION_ENABLE ? INJECTOR_RANGES_ANON_PRIVATE : INJECTOR_RANGES_ADVISABLE,
                                pa->pid, pa->start_time_ticks, pid_dirfd, &runs);
                if (r < 0)
                        return r;
        }
        iov = calloc(MAX(runs.n, (size_t) 1), sizeof *iov);
        if (!iov) {
                map_list_done(&runs);
                return -ENOMEM;
        }
        for (size_t i = 0; i < runs.n; i++)
                iov[i] = (struct iovec) { .iov_base = (void *) (uintptr_t) runs.ranges[i].start,
                                          .iov_len = (size_t) (runs.ranges[i].end - runs.ranges[i].start) };
        int advice = a == MERGE_ACTION_ENABLE ? MADV_MERGEABLE : MADV_UNMERGEABLE;
        r = 0;
        for (size_t i = 0; i < runs.n && r >= 0; i += MADVISE_IOV_MAX)
                if (sys_process_madvise(pidfd, iov + i, MIN(runs.n - i, (size_t) MADVISE_IOV_MAX), advice, 0) < 0)
                        /* ENOMEM here is the target's (a range unmapped
                         * since its maps were read), not this daemon's
                         * memory: an outcome, never a reason to stop. */
                        r = errno == ENOMEM ? -EIO : negative_errno();
        map_list_done(&runs);
        return r;
}

int merge_inject_local(const MergeContext *c, int pidfd, int pid, int pid_dirfd, const MergeInjectJob *job,
                       InjectStats *stats, bool *ret_call_failed) {
        MergeAction a = job->action;
        uint64_t start_time_ticks = job->start_time_ticks;
        _cleanup_free_ InjectSyscall *calls = NULL;
        size_t n = 0;
        int r;

        if (job->n_ranges > 0) {
                /* Exactly the ranges the process had marked: taken out
                 * (DISABLE), or given back (a readmission). */
                calls = calloc(job->n_ranges, sizeof *calls);
                if (!calls)
                        return -ENOMEM;
                for (size_t i = 0; i < MIN(job->n_ranges, (uint32_t) MERGE_INJECT_RANGES_MAX); i++)
                        calls[n++] = (InjectSyscall) {
                                .nr = SYS_madvise,
                                .args = { job->ranges[i][0], job->ranges[i][1] - job->ranges[i][0],
                                          a == MERGE_ACTION_ENABLE ? MADV_MERGEABLE : MADV_UNMERGEABLE },
                        };
        } else if (a == MERGE_ACTION_ENABLE || job->merge_any == 1) {
                calls = calloc(1, sizeof *calls);
                if (!calls)
                        return -ENOMEM;
                calls[n++] = (InjectSyscall) { .nr = SYS_prctl,
                                               .args = { PR_SET_MEMORY_MERGE, a == MERGE_ACTION_ENABLE } };
        } else {
                /* Ranges the process marked itself (QEMU guest RAM). */
                MapList maps = {}, runs = {};
                r = read_mm_file(c, MM_READ_MAPS, pid, start_time_ticks, pid_dirfd, NULL, &maps);
                if (r < 0)
                        return r;
                r = map_list_advisable_runs(&maps, &runs);
                map_list_done(&maps);
                if (r < 0)
                        return r;
                if (runs.n == 0) {
                        map_list_done(&runs);
                        return 0;
                }
                calls = calloc(MIN(runs.n, (size_t) INJECT_RUNS_MAX), sizeof *calls);
                if (!calls) {
                        map_list_done(&runs);
                        return -ENOMEM;
                }
                if (runs.n > INJECT_RUNS_MAX) {
                        uint64_t lo = runs.ranges[0].start, hi = runs.ranges[runs.n - 1].end;
                        calls[n++] = (InjectSyscall) { .nr = SYS_madvise, .args = { lo, hi - lo, MADV_UNMERGEABLE } };
                } else
                        for (size_t i = 0; i < runs.n; i++)
                                calls[n++] = (InjectSyscall) {
                                        .nr = SYS_madvise,
                                        .args = { runs.ranges[i].start, runs.ranges[i].end - runs.ranges[i].start,
                                                  MADV_UNMERGEABLE },
                                };
                map_list_done(&runs);
        }

        InjectOptions o = {
                .stop_timeout_usec = c->stop_timeout_usec,
                .allow_seccomp = c->inject_seccomp,
                .give_up_usec = c->give_up_usec,
                .expect = job->expect,
                .allow_privileged = job->allow_privileged,
                .get_filter = c->get_filter,
                .filter_userdata = c->filter_userdata,
        };
        r = inject_syscalls(c->root, pidfd, pid, calls, n, &o, stats);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                /* ENOMEM from an injected madvise reports unmapped holes in
                 * its range after it did the rest: the whole-span call's, or
                 * a range the process unmapped since its maps were read
                 * (seen in the contention test: a thread looping
                 * mmap/munmap of 256 MiB). */
                if (calls[i].ret == -ENOMEM && calls[i].nr == SYS_madvise)
                        continue;
                if (calls[i].ret < 0) {
                        snprintf(stats->reason, sizeof stats->reason, "the injected %s returned %s",
                                 calls[i].nr == SYS_prctl ? "prctl" : "madvise", errname((int) -calls[i].ret));
                        *ret_call_failed = true;
                        /* the target's errno, not this daemon's: an ENOMEM
                         * must not read as our own allocation failing */
                        return calls[i].ret == -ENOMEM ? -EIO : (int) calls[i].ret;
                }
        }
        return 0;
}

/* Method=inject: in the injector process when there is one (the daemon
 * holds no CAP_SYS_PTRACE: it checks the target again and injects), else
 * here. Exact ranges go MERGE_INJECT_RANGES_MAX to an injection. */
/* One job: in the injector process when there is one (the daemon holds no
 * CAP_SYS_PTRACE: it checks the target again and injects), else here. */
static int run_inject_job(const MergeContext *c, int pidfd, int pid, int pid_dirfd, const MergeInjectJob *job,
                          InjectStats *stats, bool *ret_call_failed) {
        if (c->injector) {
                InjectorResult res = {};
                int r = injector_client_inject(c->injector, pidfd, pid, job->start_time_ticks, job, c->inject_seccomp,
                                               c->stop_timeout_usec, c->give_up_usec, &res);
                if (r >= 0) {
                        r = res.r;
                        *stats = res.stats;
                        *ret_call_failed = res.call_failed;
                }
                return r;
        }
        return merge_inject_local(c, pidfd, pid, pid_dirfd, job, stats, ret_call_failed);
}

typedef struct InjectChunkCtx {
        const MergeContext *c;
        int pidfd, pid, pid_dirfd;
        const ProcessAction *a;
        int merge_any;
        InjectStats *stats;
        bool *call_failed;
} InjectChunkCtx;

/* One injection per chunk: the thread runs its own code between them. */
static int inject_chunk(const UnmergeChunk *chunk, void *userdata, uint64_t *ret_held_usec) {
        InjectChunkCtx *x = userdata;
        MergeInjectJob job = {
                .action = MERGE_ACTION_DISABLE,
                .start_time_ticks = x->a->start_time_ticks,
                .merge_any = x->merge_any,
                .expect = x->a->identity,
                .allow_privileged = x->a->inject_privileged,
                .n_ranges = 1,
                .ranges = { { chunk->start, chunk->end } },
        };
        InjectStats st = {};
        int r = run_inject_job(x->c, x->pidfd, x->pid, x->pid_dirfd, &job, &st, x->call_failed);
        *ret_held_usec = st.pause_usec;
        x->stats->tid = st.tid;
        x->stats->pause_usec = MAX(x->stats->pause_usec, st.pause_usec);
        x->stats->signals_suppressed += st.signals_suppressed;
        if (r < 0)
                strscpy(x->stats->reason, sizeof x->stats->reason, st.reason);
        return r;
}

/* Method=inject. Exact ranges go MERGE_INJECT_RANGES_MAX to an
 * injection; switching off a large sparse mapping on a kernel without the
 * range walk goes in chunks (seed 003), then, for a process with
 * ksm_merge_any, the prctl that finds nothing left to walk. */
static int do_inject(const MergeContext *c, int pidfd, int pid, int pid_dirfd, const ProcessAction *a,
                     const ProcKsmStat *f, const MapList *exact, uint64_t start_time_ticks, InjectStats *stats,
                     bool *ret_call_failed, char *note, size_t note_size) {
        bool use_exact = exact && exact->n > 0 && (a->action == MERGE_ACTION_ENABLE || f->merge_any != 1);
        size_t total = use_exact ? exact->n : 0, done = 0;
        uint64_t paused = 0;
        int r;

        if (a->action == MERGE_ACTION_DISABLE) {
                _cleanup_(unmerge_plan_done) UnmergePlan p = {};
                _cleanup_free_ uint64_t (*ranges)[2] = NULL;
                size_t n_ranges = 0;
                r = unmerge_plan_for(c, a, pid_dirfd, use_exact ? exact : NULL, &p, &ranges, &n_ranges);
                if (r < 0)
                        return r;
                if (p.refused) {
                        strscpy(stats->reason, sizeof stats->reason, p.reason);
                        return -E2BIG;
                }
                if (p.chunked) {
                        InjectChunkCtx x = { .c = c, .pidfd = pidfd, .pid = pid, .pid_dirfd = pid_dirfd, .a = a,
                                             .merge_any = f->merge_any, .stats = stats,
                                             .call_failed = ret_call_failed };
                        ChunkedResult res = {};
                        r = unmerge_chunked(c, &p, (const uint64_t (*)[2]) ranges, n_ranges, inject_chunk, &x, &res);
                        note_printf(note, note_size, " in %zu chunks, %zu over %d ms (%s)", res.chunks, res.slow_chunks,
                                    2 * UNMERGE_CHUNK_BUDGET_USEC / 1000, p.reason);
                        if (r < 0 || f->merge_any != 1)
                                return r;
                        /* every range done: only the prctl is left */
                        use_exact = false;
                        total = 0;
                }
        }

        do {
                MergeInjectJob job = {
                        .action = a->action,
                        .start_time_ticks = start_time_ticks,
                        .merge_any = f->merge_any,
                        .expect = a->identity,
                        .allow_privileged = a->inject_privileged,
                };
                for (; done < total && job.n_ranges < MERGE_INJECT_RANGES_MAX; done++, job.n_ranges++) {
                        job.ranges[job.n_ranges][0] = exact->ranges[done].start;
                        job.ranges[job.n_ranges][1] = exact->ranges[done].end;
                }
                uint64_t before = stats->pause_usec;
                r = run_inject_job(c, pidfd, pid, pid_dirfd, &job, stats, ret_call_failed);
                paused = MAX(paused, MAX(before, stats->pause_usec));
        } while (r >= 0 && done < total);
        stats->pause_usec = paused;
        return r;
}

static bool state_reached(MergeMethod m, MergeAction a, const ProcKsmStat *f, const MapList *exact) {
        /* Taking out the ranges a process marked itself: a range still
         * marked is one it marked after its smaps was read, its own doing
         * and not ours to take (QEMU marks every memory backend it adds:
         * Q1's guest churned over QMP marks ~240 a second, so ksm_mergeable
         * read 1 right after every exclusion). The calls' results say
         * whether the ranges read were unmarked. */
        if (a == MERGE_ACTION_DISABLE && exact && exact->n > 0)
                return f->merge_any != 1;
        if (a == MERGE_ACTION_DISABLE)
                return f->merge_any != 1 && f->mergeable != 1;
        if (exact && exact->n > 0)
                return f->mergeable == 1 && f->merge_any != 1;
        if (m == MERGE_METHOD_MADVISE)
                return f->mergeable == 1 || f->merge_any == 1;
        return f->merge_any == 1;
}

/* Refusals that protect the target, as inject.c reports them (a failing
 * injected call itself is a failure, not a refusal). */
static bool inject_refusal(int r) {
        switch (-r) {
        case EBUSY:
        case EACCES:
        case EAGAIN:
        case EOPNOTSUPP:
        case ENOEXEC:
        case EFAULT:
        case ETIMEDOUT:
        case ECANCELED:
        case EPERM:
        case EINVAL:
        case ESTALE:
                return true;
        default:
                return false;
        }
}

static int try_method(const MergeContext *c, MergeMethod m, int pidfd, int pid, int pid_dirfd,
                      const ProcessAction *a, const ProcKsmStat *f, const MapList *exact, MergeOutcome *o) {
        InjectStats stats = {};
        bool call_failed = false;
        char note[160] = "";
        int r;

        o->used = m;
        switch (m) {
        case MERGE_METHOD_PROCESS_KSM:
                r = do_process_ksm(c, pidfd, a->action);
                break;
        case MERGE_METHOD_MADVISE:
                r = do_remote_madvise(c, pidfd, a, pid_dirfd, exact, note, sizeof note);
                if (r == -E2BIG)
                        strscpy(stats.reason, sizeof stats.reason, note);
                break;
        case MERGE_METHOD_INJECT:
                r = do_inject(c, pidfd, pid, pid_dirfd, a, f, exact, o->start_time_ticks, &stats, &call_failed, note,
                              sizeof note);
                o->pause_usec = stats.pause_usec;
                break;
        default:
                r = -EINVAL;
        }
        const char *name = merge_method_to_string(m);
        if (r == -ENOMEM)
                return r;
        if (r == -ESRCH) {
                o->kind = MERGE_OUTCOME_GONE;
                o->error = ESRCH;
                set_text(o, "method %s: process exited", name);
                return 0;
        }
        if (r == -ETIME || r == -ENOLCK) {
                o->kind = MERGE_OUTCOME_FAILED;
                o->error = r == -ETIME ? ETIME : EAGAIN;
                o->slow = r == -ETIME;
                if (r == -ETIME)
                        set_text(o, "method %s: reading its maps took over %" PRIu64 " ms (mmap_lock busy): not "
                                 "touched, marked slow", name, read_deadline_msec(c));
                else
                        set_text(o, "method %s: maps not read: every reader is stuck on other processes' mmap_lock; "
                                 "not touched", name);
                return 0;
        }
        if (r < 0) {
                o->error = -r;
                if (r == -E2BIG) {
                        /* seed 003: not done, to protect the target */
                        o->kind = MERGE_OUTCOME_REFUSED;
                        set_text(o, "method %s refused: %s", name, stats.reason);
                } else if (m == MERGE_METHOD_INJECT && !call_failed && inject_refusal(r)) {
                        o->kind = MERGE_OUTCOME_REFUSED;
                        set_text(o, "method %s refused: %s (%s)", name, errname(-r), stats.reason);
                } else {
                        o->kind = MERGE_OUTCOME_FAILED;
                        set_text(o, "method %s failed: %s%s%s%s", name, errname(-r), stats.reason[0] ? " (" : "",
                                 stats.reason, stats.reason[0] ? ")" : "");
                }
                return 0;
        }

        ProcKsmStat after;
        r = read_ksm_stat(c, a->pid, a->start_time_ticks, pid_dirfd, &after);
        if (r == -ESRCH) {
                o->kind = MERGE_OUTCOME_GONE;
                o->error = ESRCH;
                set_text(o, "method %s: process exited", name);
                return 0;
        }
        if (r >= 0 && !state_reached(m, a->action, &after, exact)) {
                o->kind = MERGE_OUTCOME_FAILED;
                o->error = EIO;
                set_text(o, "method %s failed: the kernel accepted it but ksm_stat says merge_any=%d mergeable=%d%s",
                         name, after.merge_any, after.mergeable,
                         after.flags_inferred ? " (inferred from smaps: this kernel's ksm_stat has no such lines)" : "");
                return 0;
        }
        o->kind = MERGE_OUTCOME_DONE;
        o->error = 0;
        /* Done, but not confirmed: the next tick's reads say more. */
        o->slow = r == -ETIME;
        if (m == MERGE_METHOD_INJECT)
                set_text(o, "method %s: %sd (tid %d, paused %" PRIu64 " us)%s", name,
                         merge_action_to_string(a->action), stats.tid, stats.pause_usec, note);
        else
                set_text(o, "method %s: %sd%s", name, merge_action_to_string(a->action), note);
        return 0;
}

void merge_restore_book_done(MergeRestoreBook *b) {
        for (size_t i = 0; i < b->n; i++)
                map_list_done(&b->entries[i].ranges);
        free(b->entries);
        free(b->path);
        *b = (MergeRestoreBook) {};
}

char *merge_restore_book_format(const MergeRestoreBook *b) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        for (size_t i = 0; i < b->n; i++) {
                const MergeRestoreEntry *e = &b->entries[i];
                fprintf(f, "%d %" PRIu64 " %s %d", e->pid, e->start_time_ticks, e->merge_any ? "any" : "ranges",
                        e->ours ? 1 : 0);
                for (size_t k = 0; !e->merge_any && k < e->ranges.n; k++)
                        fprintf(f, " %" PRIx64 "-%" PRIx64, e->ranges.ranges[k].start, e->ranges.ranges[k].end);
                fputc('\n', f);
        }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

static void restore_drop(MergeRestoreBook *b, size_t i) {
        map_list_done(&b->entries[i].ranges);
        memmove(&b->entries[i], &b->entries[i + 1], (b->n - i - 1) * sizeof *b->entries);
        b->n--;
}

static bool restore_drop_pid(MergeRestoreBook *b, int pid) {
        bool dropped = false;
        for (size_t i = 0; b && i < b->n;)
                if (b->entries[i].pid == pid) {
                        restore_drop(b, i);
                        dropped = true;
                } else
                        i++;
        return dropped;
}

/* Takes over *ranges. */
static int restore_add(MergeRestoreBook *b, int pid, uint64_t start_time_ticks, bool merge_any, bool ours,
                       MapList *ranges) {
        (void) restore_drop_pid(b, pid);
        if (b->n >= MERGE_RESTORE_MAX)
                restore_drop(b, 0);
        if (greedy_realloc((void **) &b->entries, &b->alloc, b->n + 1, sizeof *b->entries, 16) < 0)
                return -ENOMEM;
        b->entries[b->n++] = (MergeRestoreEntry) {
                .pid = pid,
                .start_time_ticks = start_time_ticks,
                .merge_any = merge_any,
                .ours = ours,
                .ranges = *ranges,
        };
        *ranges = (MapList) {};
        return 0;
}

/* "PID START any|ranges OURS [START-END ...]": 0, -EINVAL with *why set, or
 * -ENOMEM. */
static int restore_parse_line(MergeRestoreBook *b, char *line, const char **why) {
        char *save = NULL, *tok;
        char *fields[4];
        uint64_t pid, start, ours;
        _cleanup_(map_list_done) MapList ranges = {};

        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                fields[i] = strtok_r(i == 0 ? line : NULL, " \t", &save);
                if (!fields[i]) {
                        *why = "fewer than 4 fields";
                        return -EINVAL;
                }
        }
        if (safe_atou64(fields[0], &pid) < 0 || pid == 0 || pid > INT32_MAX) {
                *why = "not a pid";
                return -EINVAL;
        }
        if (safe_atou64(fields[1], &start) < 0) {
                *why = "not a start time";
                return -EINVAL;
        }
        bool any = streq(fields[2], "any");
        if (!any && !streq(fields[2], "ranges")) {
                *why = "neither \"any\" nor \"ranges\"";
                return -EINVAL;
        }
        if (safe_atou64(fields[3], &ours) < 0 || ours > 1) {
                *why = "not 0 or 1";
                return -EINVAL;
        }
        while ((tok = strtok_r(NULL, " \t", &save))) {
                unsigned long long lo, hi;
                int used = 0;
                if (any || sscanf(tok, "%llx-%llx%n", &lo, &hi, &used) != 2 || tok[used] != 0 || lo >= hi) {
                        *why = any ? "ranges after \"any\"" : "not a range START-END";
                        return -EINVAL;
                }
                if (ranges.n >= 65536) {
                        *why = "more than 65536 ranges";
                        return -EINVAL;
                }
                MapRange *n = reallocarray(ranges.ranges, ranges.n + 1, sizeof *n);
                if (!n)
                        return -ENOMEM;
                ranges.ranges = n;
                ranges.ranges[ranges.n++] = (MapRange) { .start = lo, .end = hi, .mergeable = true };
        }
        if (!any && ranges.n == 0) {
                *why = "\"ranges\" without any";
                return -EINVAL;
        }
        return restore_add(b, (int) pid, start, any, ours == 1, &ranges);
}

static int restore_parse_one(char *line, const char **why, void *userdata) {
        int r = restore_parse_line(userdata, line, why);
        return r < 0 ? r : 1;
}

int merge_restore_book_parse(MergeRestoreBook *b, const char *text, const char *name) {
        return state_file_parse_lines(text, name, restore_parse_one, b);
}

static void restore_persist(MergeRestoreBook *b) {
        if (!b->path)
                return;
        _cleanup_free_ char *text = merge_restore_book_format(b);
        (void) write_state_file_logged(b->path, text,
                                       "what excluded processes had, for their readmission after a restart",
                                       &b->write_error);
}

int merge_restore_book_flush(MergeRestoreBook *b) {
        if (b->write_error < 0)
                restore_persist(b);
        return b->path ? b->write_error : 0;
}

/* A state file an earlier instance wrote (the restore book, the ledger):
 * *path_field becomes path, for writing it from now on; *ret_text its text,
 * NULL when there is none yet. */
static int state_file_read(char **path_field, const char *path, char **ret_text) {
        *ret_text = NULL;
        free(*path_field);
        *path_field = strdup(path);
        if (!*path_field)
                return -ENOMEM;
        int r = read_full_file_at(AT_FDCWD, path, 16 * 1024 * 1024, ret_text, NULL);
        return r == -ENOENT ? 0 : r;
}

/* Whether pid is still the process that started then: what was written
 * for one that is gone, or whose pid a new one has now, means nothing.
 * Without a root, every one is. */
static bool process_is(const Root *root, int pid, uint64_t start_time_ticks) {
        _cleanup_close_ int dfd = -EBADF;
        ProcStat st;
        return !root || (root_open_pid_dir(root, pid, &dfd) >= 0 && procfs_read_stat(dfd, &st) >= 0 &&
                         st.start_time_ticks == start_time_ticks);
}

int merge_restore_book_load(MergeRestoreBook *b, const char *path, const Root *root) {
        _cleanup_free_ char *text = NULL;
        int r = state_file_read(&b->path, path, &text);
        if (r < 0 || !text)
                return r;
        r = merge_restore_book_parse(b, text, path);
        if (r < 0)
                return r;
        size_t before = b->n;
        for (size_t i = 0; i < b->n;)
                if (!process_is(root, b->entries[i].pid, b->entries[i].start_time_ticks))
                        restore_drop(b, i);
                else
                        i++;
        if (b->n != before)
                restore_persist(b);
        return (int) b->n;
}

const MergeRestoreEntry *merge_restore_find(const MergeRestoreBook *b, int pid, uint64_t start_time_ticks) {
        for (size_t i = 0; b && i < b->n; i++)
                if (b->entries[i].pid == pid && b->entries[i].start_time_ticks == start_time_ticks)
                        return &b->entries[i];
        return NULL;
}

static void restore_forget(MergeRestoreBook *b, int pid) {
        if (restore_drop_pid(b, pid))
                restore_persist(b);
}

static bool ledger_has(const MergeLedger *l, int pid, uint64_t start_time_ticks) {
        for (size_t i = 0; l && i < l->n; i++)
                if (l->entries[i].pid == pid && l->entries[i].start_time_ticks == start_time_ticks)
                        return true;
        return false;
}

/* Takes over *ranges. */
static int restore_remember(MergeRestoreBook *b, int pid, uint64_t start_time_ticks, bool merge_any, bool ours,
                            MapList *ranges) {
        int r = restore_add(b, pid, start_time_ticks, merge_any, ours, ranges);
        if (r >= 0)
                restore_persist(b);
        return r;
}

static int apply_checked(const MergeContext *c, const ProcessAction *a, int pidfd, int pid_dirfd, MergeOutcome *o) {
        ProcStat st;
        ProcKsmStat f;
        int r;

        r = procfs_read_stat(pid_dirfd, &st);
        if (r < 0 || (a->start_time_ticks && st.start_time_ticks != a->start_time_ticks) ||
            pidfd_is_alive(pidfd) != 1) {
                if (r == -ENOMEM)
                        return r;
                o->kind = MERGE_OUTCOME_GONE;
                o->error = ESRCH;
                set_text(o, "%s", r >= 0 && a->start_time_ticks && st.start_time_ticks != a->start_time_ticks
                                          ? "pid reused by another process: not touched"
                                          : "process exited");
                return 0;
        }
        /* The identity the injector checks again (an action may come without one). */
        o->start_time_ticks = st.start_time_ticks;
        /* PID 1 again, whatever a plan says (classify leaves it alone):
         * everything depends on it, and a stop of it stalls the host. */
        if (proc_stat_is_kthread(&st) || a->pid == getpid() || a->pid == 1) {
                o->kind = MERGE_OUTCOME_REFUSED;
                o->error = EINVAL;
                set_text(o, "%s: not touched",
                         a->pid == 1 ? "PID 1" : proc_stat_is_kthread(&st) ? "kernel thread" : "ksmtuned2 itself");
                return 0;
        }

        r = read_ksm_stat(c, a->pid, st.start_time_ticks, pid_dirfd, &f);
        if (r == -ETIME) {
                o->kind = MERGE_OUTCOME_FAILED;
                o->error = ETIME;
                o->slow = true;
                set_text(o, "reading its ksm_stat took over %" PRIu64 " ms (mmap_lock busy): not touched, marked slow",
                         read_deadline_msec(c));
                return 0;
        }
        if (r == -ENOLCK) {
                /* Not its fault: it is tried again after the retry back-off. */
                o->kind = MERGE_OUTCOME_FAILED;
                o->error = EAGAIN;
                set_text(o, "not read: every ksm_stat reader is stuck on other processes' mmap_lock; not touched");
                return 0;
        }
        if (r == -EINVAL) {
                /* A process past exit_mm() shows an empty ksm_stat, which
                 * does not parse; it is exiting (PF_EXITING) or a zombie:
                 * gone, not a failure (tests/fault/test-inject-race saw
                 * one in ten exiting targets reported "failed"). */
                ProcStat now;
                if (procfs_read_stat(pid_dirfd, &now) < 0 || now.state == 'Z' || now.state == 'X' ||
                    (now.flags & PF_EXITING_FLAG))
                        r = -ESRCH;
        }
        if (r < 0) {
                o->kind = r == -ESRCH ? MERGE_OUTCOME_GONE : MERGE_OUTCOME_FAILED;
                o->error = -r;
                set_text(o, "cannot read ksm_stat: %s", errname(-r));
                return r == -ENOMEM ? r : 0;
        }
        /* A process the daemon took out gets back what it had even when
         * it marked a new range of its own meanwhile (QEMU adding a memory
         * backend): only merge_any says it already has all of it. */
        const MergeRestoreEntry *rec = a->action == MERGE_ACTION_ENABLE
                                               ? merge_restore_find(c->restore, a->pid, a->start_time_ticks)
                                               : NULL;
        if (a->action == MERGE_ACTION_ENABLE && (f.merge_any == 1 || (f.mergeable == 1 && !rec))) {
                o->kind = MERGE_OUTCOME_ALREADY;
                set_text(o, "%s", f.merge_any == 1 ? "already merging (ksm_merge_any: yes): not touched"
                                                   : "already merging (ranges it marked MADV_MERGEABLE itself): not touched");
                return 0;
        }
        if (a->action == MERGE_ACTION_DISABLE && f.merge_any != 1 && f.mergeable != 1) {
                o->kind = MERGE_OUTCOME_ALREADY;
                set_text(o, "not merging: not touched");
                return 0;
        }

        /* What switching off takes away and switching on gives back. Off,
         * for a process that marked ranges itself: exactly its VM_MERGEABLE
         * ranges (smaps), remembered for when it comes back. On, after the
         * daemon took it out: what it had, not more. */
        _cleanup_(map_list_done) MapList exact = {};
        if (a->action == MERGE_ACTION_DISABLE && f.merge_any != 1) {
                r = read_ranges(c, INJECTOR_RANGES_MERGEABLE, a->pid, a->start_time_ticks, pid_dirfd, &exact);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        log_debug_errno(r, "pid %d: smaps: %m; unmarking every advisable range", a->pid);
        } else if (rec) {
                if (!rec->merge_any && map_list_copy(&rec->ranges, &exact) < 0)
                        return -ENOMEM;
        }

        /* Switching merging on exposes a process to KSM's side channel
         * whatever the mechanism, so InjectPrivileged= decides for every
         * method, not only for inject: a setuid program that a user's
         * symlink gave a policy's Comm= is not merged on their behalf by
         * process_ksm or remote madvise either. Those calls check the
         * daemon against the target themselves (PTRACE_MODE_READ_FSCREDS,
         * on its credentials at the call, through the pidfd), but where
         * the kernel has them the daemon keeps CAP_SYS_PTRACE, which that
         * check needs for another user's process (sandbox_keep_mask()),
         * so it lets every target through: this check is what holds, and
         * an exec between it and the call is not seen, nor is AT_SECURE
         * (auxv is not read here); inject checks everything again, stopped.
         * Switching off is never refused: it only takes exposure away. */
        if (a->action == MERGE_ACTION_ENABLE && !a->inject_privileged) {
                ProcessIdentity now;
                char why[128];
                r = process_read_identity(pid_dirfd, true, &now);
                if (r == -ENOMEM)
                        return r;
                if (r >= 0 && process_identity_privileged(&now, why, sizeof why)) {
                        o->used = a->method;
                        o->kind = MERGE_OUTCOME_REFUSED;
                        o->error = EPERM;
                        /* Worded as inject.c's own refusal of it. */
                        set_text(o, "method %s refused: EPERM (pid %d is %s; InjectPrivileged=no)",
                                 merge_method_to_string(a->method), a->pid, why);
                        return 0;
                }
        }

        MergeMethod chain[3];
        size_t n = 0;
        if (a->method == MERGE_METHOD_ANY) {
                chain[n++] = MERGE_METHOD_PROCESS_KSM;
                chain[n++] = MERGE_METHOD_MADVISE;
                chain[n++] = MERGE_METHOD_INJECT;
        } else
                chain[n++] = a->method;

        char tried[96] = "";
        bool any_tried = false;
        for (size_t i = 0; i < n; i++) {
                int e;
                const char *why = method_unavailable(c, chain[i], &e);
                const char *name = merge_method_to_string(chain[i]);
                if (why || !method_fits(chain[i], a->action, &f, &exact)) {
                        if (n > 1)
                                continue;
                        o->used = chain[i];
                        o->kind = MERGE_OUTCOME_UNSUPPORTED;
                        o->error = why ? e : EOPNOTSUPP;
                        set_text(o, "method %s unsupported: %s (%s)", name, errname(o->error),
                                 why ?: "it cannot change ranges the process marked itself");
                        return 0;
                }
                if (c->dry_run) {
                        o->used = chain[i];
                        o->kind = MERGE_OUTCOME_DRY_RUN;
                        set_text(o, "[dry-run] would %s merging with method %s",
                                 merge_action_to_string(a->action), name);
                        return 0;
                }
                any_tried = true;
                r = try_method(c, chain[i], pidfd, a->pid, pid_dirfd, a, &f, &exact, o);
                if (r < 0)
                        return r;
                if (o->kind == MERGE_OUTCOME_GONE)
                        restore_forget(c->restore, a->pid);
                if (o->kind == MERGE_OUTCOME_DONE && c->restore) {
                        if (a->action == MERGE_ACTION_ENABLE) {
                                o->restored_own = rec && !rec->ours;
                                restore_forget(c->restore, a->pid);
                        } else {
                                r = restore_remember(c->restore, a->pid, a->start_time_ticks, f.merge_any == 1,
                                                     ledger_has(c->ledger, a->pid, a->start_time_ticks), &exact);
                                if (r < 0)
                                        return r;
                        }
                }
                if (o->kind == MERGE_OUTCOME_DONE || o->kind == MERGE_OUTCOME_GONE)
                        break;
                /* Method=any goes on to the next mechanism; keep what failed. */
                if (i + 1 < n) {
                        size_t l = strlen(tried);
                        snprintf(tried + l, sizeof tried - l, "%s%s: %s", l ? ", " : "", name, errname(o->error));
                }
        }
        if (!any_tried) {
                o->kind = MERGE_OUTCOME_UNSUPPORTED;
                o->error = EOPNOTSUPP;
                set_text(o, "no method this kernel offers can %s merging for it", merge_action_to_string(a->action));
                return 0;
        }
        if (tried[0] && o->kind == MERGE_OUTCOME_DONE) {
                size_t l = strlen(o->text);
                snprintf(o->text + l, sizeof o->text - l, " after %s", tried);
        }
        return 0;
}

int merge_apply_one(const MergeContext *c, const ProcessAction *a, MergeOutcome *ret) {
        _cleanup_close_ int pidfd = -EBADF, pid_dirfd = -EBADF;
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        MergeOutcome o = {
                .pid = a->pid,
                .start_time_ticks = a->start_time_ticks,
                .action = a->action,
                .requested = a->method,
                .used = MERGE_METHOD_NONE,
        };
        int r = 0;

        strscpy(o.reason, sizeof o.reason, a->reason);
        o.inject_privileged = a->inject_privileged;
        if (a->method == MERGE_METHOD_NONE) {
                o.kind = MERGE_OUTCOME_SKIPPED;
                set_text(&o, "Method=none: not touched");
        } else if (a->pid <= 0) {
                o.kind = MERGE_OUTCOME_GONE;
                o.error = ESRCH;
                set_text(&o, "invalid pid %d", a->pid);
        } else {
                /* The pidfd first: from here on a reused pid is noticed. */
                pidfd = sys_pidfd_open(a->pid, 0);
                if (pidfd < 0) {
                        o.kind = errno == ESRCH ? MERGE_OUTCOME_GONE : MERGE_OUTCOME_FAILED;
                        o.error = errno;
                        set_text(&o, "pidfd_open: %s", errname(o.error));
                } else {
                        r = root_open_pid_dir(c->root, a->pid, &pid_dirfd);
                        if (r < 0) {
                                o.kind = MERGE_OUTCOME_GONE;
                                o.error = ESRCH;
                                set_text(&o, "process exited");
                                r = 0;
                        } else
                                r = apply_checked(c, a, pidfd, pid_dirfd, &o);
                }
        }
        if (r < 0)
                return r;
        o.time_usec = now_usec(CLOCK_MONOTONIC);
        o.duration_usec = o.time_usec - t0;
        *ret = o;
        return 0;
}

int merge_apply(const MergeContext *c, const ProcessAction *a, size_t n, MergeReport *ret) {
        for (size_t i = 0; i < n; i++) {
                MergeOutcome o;
                int r = merge_apply_one(c, &a[i], &o);
                if (r < 0)
                        return r;
                r = report_push(ret, &o);
                if (r < 0)
                        return r;
                /* The caller decides what is worth more than debug. */
                log_debug("pid %d: %s merging (%s): %s", o.pid, merge_action_to_string(o.action),
                          a[i].reason[0] ? a[i].reason : "no reason given", o.text);
        }
        return 0;
}

void merge_ledger_done(MergeLedger *l) {
        free(l->entries);
        free(l->path);
        *l = (MergeLedger) {};
}

char *merge_ledger_format(const MergeLedger *l) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        for (size_t i = 0; i < l->n; i++)
                fprintf(f, "%d %" PRIu64 " %s %d\n", l->entries[i].pid, l->entries[i].start_time_ticks,
                        merge_method_to_string(l->entries[i].method), l->entries[i].inject_privileged ? 1 : 0);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

static int ledger_add(MergeLedger *l, const MergeLedgerEntry *e) {
        for (size_t i = 0; i < l->n; i++)
                if (l->entries[i].pid == e->pid) {
                        l->entries[i] = *e;
                        return 0;
                }
        if (greedy_realloc((void **) &l->entries, &l->alloc, l->n + 1, sizeof *l->entries, 16) < 0)
                return -ENOMEM;
        l->entries[l->n++] = *e;
        return 0;
}

static int ledger_parse_one(char *line, const char **why, void *userdata) {
        char method[32];
        int pid = 0, priv = -1, used = 0;
        unsigned long long start = 0;
        MergeMethod m = _MERGE_METHOD_INVALID;

        *why = "not \"PID START_TIME_TICKS METHOD 0|1\"";
        if (sscanf(line, "%d %llu %31s %d%n", &pid, &start, method, &priv, &used) == 4 && line[used] == 0)
                m = merge_method_from_string(method);
        if (pid <= 0 || m < 0 || m == MERGE_METHOD_NONE || m == MERGE_METHOD_ANY || (priv != 0 && priv != 1))
                return -EINVAL;
        if (ledger_add(userdata, &(MergeLedgerEntry) { pid, start, m, priv == 1 }) < 0)
                return -ENOMEM;
        return 1;
}

int merge_ledger_parse(MergeLedger *l, const char *text, const char *name) {
        return state_file_parse_lines(text, name, ledger_parse_one, l);
}

static void ledger_persist(MergeLedger *l) {
        if (!l->path)
                return;
        _cleanup_free_ char *text = merge_ledger_format(l);
        (void) write_state_file_logged(l->path, text,
                                       "what this daemon switched on, for UnmergeOnExit= after a restart",
                                       &l->write_error);
}

int merge_ledger_flush(MergeLedger *l) {
        if (l->write_error < 0)
                ledger_persist(l);
        return l->path ? l->write_error : 0;
}

int merge_ledger_load(MergeLedger *l, const char *path, const Root *root) {
        _cleanup_free_ char *text = NULL;
        int r = state_file_read(&l->path, path, &text);
        if (r < 0 || !text)
                return r;
        r = merge_ledger_parse(l, text, path);
        if (r < 0)
                return r;
        size_t before = l->n;
        for (size_t i = 0; i < l->n;)
                if (!process_is(root, l->entries[i].pid, l->entries[i].start_time_ticks))
                        l->entries[i] = l->entries[--l->n];
                else
                        i++;
        if (l->n != before)
                ledger_persist(l);
        return (int) l->n;
}

/* start_time_ticks 0: whatever incarnation of pid (an outcome without it). */
static bool ledger_forget(MergeLedger *l, int pid, uint64_t start_time_ticks) {
        for (size_t i = 0; i < l->n; i++)
                if (l->entries[i].pid == pid &&
                    (start_time_ticks == 0 || l->entries[i].start_time_ticks == start_time_ticks)) {
                        l->entries[i] = l->entries[--l->n];
                        return true;
                }
        return false;
}

int merge_ledger_update(MergeLedger *l, const MergeReport *r) {
        bool changed = false;
        for (size_t i = 0; i < r->n; i++) {
                const MergeOutcome *o = &r->outcomes[i];
                bool enabled = o->kind == MERGE_OUTCOME_DONE && o->action == MERGE_ACTION_ENABLE;
                /* A switch-off that failed, was refused, gave up at the
                 * deadline, was only a dry run or skipped (Method=none)
                 * leaves what this daemon switched on as it was: the entry
                 * stays for the next try. */
                bool off = o->action == MERGE_ACTION_DISABLE &&
                           (o->kind == MERGE_OUTCOME_DONE || o->kind == MERGE_OUTCOME_ALREADY);
                /* GONE for an earlier incarnation must not drop a later one's entry */
                if (enabled || off || o->kind == MERGE_OUTCOME_GONE)
                        changed |= ledger_forget(l, o->pid, o->kind == MERGE_OUTCOME_GONE ? o->start_time_ticks : 0);
                if (!enabled || o->restored_own)
                        continue;
                if (ledger_add(l, &(MergeLedgerEntry) { o->pid, o->start_time_ticks, o->used, o->inject_privileged }) < 0)
                        return -ENOMEM;
                changed = true;
        }
        if (changed)
                ledger_persist(l);
        return changed;
}

int merge_ledger_unmerge(const MergeContext *c, MergeLedger *l, MergeReport *ret) {
        size_t first = ret->n;
        for (size_t i = 0; i < l->n; i++) {
                /* Past the stop's deadline the rest stays in the ledger (and
                 * its file), for an instance started after this one. */
                uint64_t g = c->give_up_usec ? atomic_load(c->give_up_usec) : 0;
                if (g != 0 && now_usec(CLOCK_MONOTONIC) >= g)
                        break;
                ProcessAction a = {
                        .pid = l->entries[i].pid,
                        .start_time_ticks = l->entries[i].start_time_ticks,
                        .action = MERGE_ACTION_DISABLE,
                        .method = l->entries[i].method,
                        .inject_privileged = l->entries[i].inject_privileged,
                };
                strscpy(a.reason, sizeof a.reason, MERGE_REASON_UNMERGE_ON_EXIT);
                int r = merge_apply(c, &a, 1, ret);
                if (r < 0)
                        return r;
        }
        /* Forgets what was switched off or is gone, keeps the rest. */
        MergeReport mine = { .outcomes = ret->n > first ? ret->outcomes + first : NULL, .n = ret->n - first };
        return merge_ledger_update(l, &mine) < 0 ? -ENOMEM : 0;
}

/* Actions waiting behind a running batch; beyond, submit says EBUSY. */
#define MERGE_WORKER_QUEUE_MAX 4096
/* How often threads given up on (inject_poll_abandoned) are looked at while
 * any is left: a thread that leaves D is detached within this. */
#define ABANDONED_POLL_USEC (5 * USEC_PER_MSEC)
/* How long merge_worker_stop() waits for the thread by default. */
#define MERGE_WORKER_STOP_USEC (2 * USEC_PER_SEC)

struct MergeWorker {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;            /* CLOCK_MONOTONIC */
        MergeContext ctx;
        /* The worker's own copies: a worker left behind at stop must not
         * read what the manager frees after it (only proc_fd is used). */
        Probe probe;
        Root root;
        _Atomic uint64_t give_up_usec;  /* set at stop: the running action gives up at once */
        _Atomic uint64_t unmerge_deadline_usec; /* for the UnmergeOnExit= job */
        ProcessAction *pending;
        size_t n_pending;
        bool have_pending, running, stopping, finished;
        bool unmerge_requested, unmerge_done;
        bool finish_unmerge;            /* the stop job unmerges the ledger too */
        ProcessAction *finish;          /* the stop job's actions, before that */
        size_t n_finish;
        MergeReport done;
        bool have_done;
        MergeLedger ledger;
        MergeRestoreBook restore;       /* this thread's alone */
        MmReader *reader;               /* ours, when the context brought none */
        uint64_t save_retry_usec;       /* a state file's write failed: the next try, 0 none */
};

static void cond_wait_until(MergeWorker *w, uint64_t until_usec) {
        struct timespec ts = { .tv_sec = (time_t) (until_usec / USEC_PER_SEC),
                               .tv_nsec = (long) (until_usec % USEC_PER_SEC) * 1000 };
        (void) pthread_cond_timedwait(&w->cond, &w->lock, &ts);
}

static void push_done_locked(MergeWorker *w, MergeReport *rep) {
        if (merge_ledger_update(&w->ledger, rep) < 0)
                log_oom();
        for (size_t i = 0; i < rep->n; i++)
                if (report_push(&w->done, &rep->outcomes[i]) < 0) {
                        log_oom();
                        break;
                }
        merge_report_done(rep);
        w->have_done = true;
}

/* Runs a batch one action at a time, serving abandoned tracees in between;
 * a stop (or an unmerge at stop) drops the rest of it: discovery plans it
 * again. Called and returns with the lock held. */
static void worker_run_batch_locked(MergeWorker *w, ProcessAction *a, size_t n) {
        MergeContext ctx = w->ctx;
        for (size_t i = 0; i < n && !w->stopping && !w->unmerge_requested; i++) {
                pthread_mutex_unlock(&w->lock);
                MergeReport rep = {};
                (void) inject_poll_abandoned();
                int r = merge_apply(&ctx, &a[i], 1, &rep);
                if (r < 0)
                        log_error_errno(r, "Merge actuator: %m");
                pthread_mutex_lock(&w->lock);
                push_done_locked(w, &rep);
        }
}

/* A state file whose write failed is written again every
 * MERGE_SAVE_RETRY_USEC until it is. A restart before its next change would
 * read what it was before the change (a readmission without the process's
 * ranges, an UnmergeOnExit= that misses what was switched on). Only this
 * thread touches the book and the ledger, so the lock is not held for the
 * write (an fsync where RuntimeDirectory= is on disk). */
static void worker_retry_saves(MergeWorker *w) {
        bool failed = w->restore.write_error < 0 || w->ledger.write_error < 0;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        if (!failed) {
                w->save_retry_usec = 0;
                return;
        }
        if (w->save_retry_usec == 0)
                /* just failed, in an action: the first try again in a while */
                w->save_retry_usec = now + MERGE_SAVE_RETRY_USEC;
        if (now < w->save_retry_usec)
                return;
        bool unsaved = merge_restore_book_flush(&w->restore) < 0;
        unsaved |= merge_ledger_flush(&w->ledger) < 0;
        w->save_retry_usec = unsaved ? now + MERGE_SAVE_RETRY_USEC : 0;
}

static void *worker_main(void *userdata) {
        MergeWorker *w = userdata;

        pthread_mutex_lock(&w->lock);
        for (;;) {
                pthread_mutex_unlock(&w->lock);
                size_t left = inject_poll_abandoned();
                worker_retry_saves(w);
                pthread_mutex_lock(&w->lock);

                if (w->unmerge_requested) {
                        MergeContext ctx = w->ctx;
                        ctx.give_up_usec = &w->unmerge_deadline_usec;
                        ProcessAction *fa = TAKE_PTR(w->finish);
                        size_t fn = w->n_finish;
                        w->n_finish = 0;
                        pthread_mutex_unlock(&w->lock);
                        for (size_t i = 0; i < fn && now_usec(CLOCK_MONOTONIC) < w->unmerge_deadline_usec; i++) {
                                MergeReport one = {};
                                (void) inject_poll_abandoned();
                                int r = merge_apply(&ctx, &fa[i], 1, &one);
                                if (r < 0)
                                        log_error_errno(r, "Merge actuator: %m");
                                pthread_mutex_lock(&w->lock);
                                push_done_locked(w, &one);
                                pthread_mutex_unlock(&w->lock);
                        }
                        free(fa);
                        MergeReport rep = {};
                        /* the ledger is this thread's alone until unmerge_done */
                        int r = w->finish_unmerge ? merge_ledger_unmerge(&ctx, &w->ledger, &rep) : 0;
                        if (r < 0)
                                log_error_errno(r, "Merge actuator: %m");
                        pthread_mutex_lock(&w->lock);
                        push_done_locked(w, &rep);
                        w->unmerge_requested = false;
                        w->unmerge_done = true;
                        pthread_cond_broadcast(&w->cond);
                        continue;
                }
                if (w->stopping)
                        break;
                if (w->have_pending) {
                        ProcessAction *a = TAKE_PTR(w->pending);
                        size_t n = w->n_pending;
                        w->n_pending = 0;
                        w->have_pending = false;
                        w->running = true;
                        worker_run_batch_locked(w, a, n);
                        free(a);
                        w->running = false;
                        pthread_cond_broadcast(&w->cond);
                        continue;
                }
                if (left > 0)
                        cond_wait_until(w, now_usec(CLOCK_MONOTONIC) + ABANDONED_POLL_USEC);
                else if (w->save_retry_usec > 0)
                        cond_wait_until(w, w->save_retry_usec);
                else
                        pthread_cond_wait(&w->cond, &w->lock);
        }
        /* Threads still abandoned are detached by the kernel when this
         * thread exits (the tracer is a thread), as safe as our own detach. */
        w->finished = true;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

static MergeWorker *worker_free(MergeWorker *w) {
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->cond);
        mm_reader_free(w->reader);
        safe_close(w->root.proc_fd);
        free(w->pending);
        free(w->finish);
        merge_report_done(&w->done);
        merge_ledger_done(&w->ledger);
        merge_restore_book_done(&w->restore);
        free(w);
        return NULL;
}

/* What an earlier instance left for this worker (merge_*_load()): before
 * the thread, whose alone it is from then on. Only ENOMEM fails the start. */
static int worker_load(const char *path, int r, const char *what) {
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                log_warning_errno(r, "Cannot read %s, ignoring: %m", path);
        else if (r > 0)
                log_info("%s: %d process(es) %s.", path, r, what);
        return 0;
}

int merge_worker_start(const MergeContext *c, MergeWorker **ret) {
        MergeWorker *w = calloc(1, sizeof *w);
        int r = 0;
        if (!w)
                return -ENOMEM;
        pthread_mutex_init(&w->lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&w->cond, &ca);
        pthread_condattr_destroy(&ca);
        w->ctx = *c;
        w->probe = *c->probe;
        w->root = (Root) {
                .proc_fd = fcntl(c->root->proc_fd, F_DUPFD_CLOEXEC, 3),
                .sys_fd = -EBADF,
                .ksm_fd = -EBADF,
                .cgroup2_fd = -EBADF,
                .tracefs_fd = -EBADF,
        };
        if (w->root.proc_fd < 0) {
                r = negative_errno();
                worker_free(w);
                return r;
        }
        w->ctx.probe = &w->probe;
        w->ctx.root = &w->root;
        w->ctx.give_up_usec = &w->give_up_usec;
        w->ctx.restore = &w->restore;
        w->ctx.ledger = &w->ledger;
        w->ctx.restore_path = w->ctx.ledger_path = NULL;
        if (c->restore_path)
                r = worker_load(c->restore_path, merge_restore_book_load(&w->restore, c->restore_path, &w->root),
                                "with what they had before an earlier instance switched merging off, for their "
                                "readmission");
        if (r >= 0 && c->ledger_path)
                r = worker_load(c->ledger_path, merge_ledger_load(&w->ledger, c->ledger_path, &w->root),
                                "an earlier instance switched on, for UnmergeOnExit=");
        if (r >= 0 && !w->ctx.reader) {
                /* One worker; a stuck one is replaced (up to 4). */
                r = mm_reader_new(&w->root, NULL, 1, c->read_deadline_usec ?: MERGE_READ_DEADLINE_USEC, NULL, NULL,
                                  &w->reader);
                w->ctx.reader = w->reader;
        }
        if (r >= 0)
                r = -pthread_create(&w->thread, NULL, worker_main, w);
        if (r < 0) {
                worker_free(w);
                return r;
        }
        (void) pthread_setname_np(w->thread, "ksm-merge");
        *ret = w;
        return 0;
}

int merge_worker_submit(MergeWorker *w, const ProcessAction *a, size_t n) {
        int r = 0;
        if (n == 0)
                return 0;
        pthread_mutex_lock(&w->lock);
        if (w->n_pending + n > MERGE_WORKER_QUEUE_MAX)
                r = -EBUSY;
        else {
                /* Queued behind the running batch, if there is one. */
                ProcessAction *q = realloc(w->pending, (w->n_pending + n) * sizeof *q);
                if (!q)
                        r = -ENOMEM;
                else {
                        memcpy(q + w->n_pending, a, n * sizeof *q);
                        w->pending = q;
                        w->n_pending += n;
                        w->have_pending = true;
                        pthread_cond_broadcast(&w->cond);
                }
        }
        pthread_mutex_unlock(&w->lock);
        return r;
}

bool merge_worker_busy(MergeWorker *w) {
        pthread_mutex_lock(&w->lock);
        bool b = w->running || w->have_pending;
        pthread_mutex_unlock(&w->lock);
        return b;
}

static int take_locked(MergeWorker *w, MergeReport *ret) {
        int r = 0;
        if (w->have_done) {
                for (size_t i = 0; i < w->done.n && r >= 0; i++)
                        r = report_push(ret, &w->done.outcomes[i]);
                merge_report_done(&w->done);
                w->have_done = false;
                if (r >= 0)
                        r = 1;
        }
        return r;
}

int merge_worker_take(MergeWorker *w, MergeReport *ret) {
        pthread_mutex_lock(&w->lock);
        int r = take_locked(w, ret);
        pthread_mutex_unlock(&w->lock);
        return r;
}

void merge_worker_set_options(MergeWorker *w, bool dry_run, bool inject_seccomp) {
        pthread_mutex_lock(&w->lock);
        w->ctx.dry_run = dry_run;
        w->ctx.inject_seccomp = inject_seccomp;
        pthread_mutex_unlock(&w->lock);
}

/* From here on no wait on a target goes past deadline_usec. */
static void give_up_at(_Atomic uint64_t *v, uint64_t deadline_usec) {
        uint64_t cur = atomic_load(v);
        if (cur == 0 || deadline_usec < cur)
                atomic_store(v, deadline_usec);
}

int merge_worker_unmerge_all(MergeWorker *w, uint64_t deadline_usec, MergeReport *ret) {
        return merge_worker_finish(w, NULL, 0, true, deadline_usec, ret);
}

int merge_worker_finish(MergeWorker *w, const ProcessAction *a, size_t n, bool unmerge, uint64_t deadline_usec,
                        MergeReport *ret) {
        MergeReport local = {};
        int r = 0;

        ProcessAction *copy = NULL;
        if (n > 0) {
                copy = malloc(n * sizeof *a);
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, a, n * sizeof *a);
        }
        pthread_mutex_lock(&w->lock);
        free(w->finish);
        w->finish = copy;
        w->n_finish = n;
        w->finish_unmerge = unmerge;
        /* What waits is dropped, and the running action gives up on its
         * target now: switching off what we switched on comes first. */
        give_up_at(&w->give_up_usec, now_usec(CLOCK_MONOTONIC));
        give_up_at(&w->unmerge_deadline_usec, deadline_usec);
        free(TAKE_PTR(w->pending));
        w->n_pending = 0;
        w->have_pending = false;
        w->unmerge_requested = true;
        w->unmerge_done = false;
        pthread_cond_broadcast(&w->cond);
        while (!w->unmerge_done && !w->finished && now_usec(CLOCK_MONOTONIC) < deadline_usec)
                cond_wait_until(w, deadline_usec);
        if (!w->unmerge_done)
                r = -ETIMEDOUT;
        int k = take_locked(w, ret ?: &local);
        pthread_mutex_unlock(&w->lock);
        merge_report_done(&local);
        return k < 0 ? k : r;
}

MergeWorker *merge_worker_stop_until(MergeWorker *w, uint64_t deadline_usec) {
        if (!w)
                return NULL;
        pthread_mutex_lock(&w->lock);
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        give_up_at(&w->give_up_usec, now);
        give_up_at(&w->unmerge_deadline_usec, MIN(now, deadline_usec));
        w->stopping = true;
        pthread_cond_broadcast(&w->cond);
        /* The worker's waits on targets end now; the deadline is for
         * anything else it may be inside. Then it is left: stuck in the kernel
         * (a read of a hung process's maps), it ends with the process, and
         * the kernel detaches any tracee of it, which the signal frame
         * written first makes safe (inject.h). */
        uint64_t until = deadline_usec + 200 * USEC_PER_MSEC;
        while (!w->finished && now_usec(CLOCK_MONOTONIC) < until)
                cond_wait_until(w, until);
        bool finished = w->finished;
        pthread_mutex_unlock(&w->lock);
        if (!finished) {
                log_warning("Merge actuator still busy past the stop deadline; leaving it to end with the process.");
                (void) pthread_detach(w->thread);
                return NULL; /* w stays: the thread still uses it */
        }
        pthread_join(w->thread, NULL);
        return worker_free(w);
}

MergeWorker *merge_worker_stop(MergeWorker *w) {
        return merge_worker_stop_until(w, now_usec(CLOCK_MONOTONIC) + MERGE_WORKER_STOP_USEC);
}
