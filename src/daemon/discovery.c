/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "discovery.h"
#include "policy-load.h"
#include "process-read.h"
#include "savings.h"
#include "log.h"
#include "string-table.h"
#include "util.h"

#define LATENCY_RING 65536
/* A pid whose ksm_stat read overran (here or in the merge actuator) is not
 * read again, nor acted on, for this long after the stuck read returned:
 * its mmap_lock is busy, and every read we add queues behind the writers
 * like ksmd does. */
#define SLOW_BACKOFF_USEC (60 * USEC_PER_SEC)
/* A ksm_stat read that finds this many more pages ksmd has not met than
 * the read before (BurstMinNewPages= at its default) wakes the tuner, at
 * most every UNMET_WAKE_GAP: at start the first reads complete right after
 * the first tick, and the next one is an Interval= away. */
#define UNMET_WAKE_PAGES 1024
#define UNMET_WAKE_GAP_USEC (250 * USEC_PER_MSEC)

/* A child that forked and has not exec'd is read FORK_HOLD_USEC after its
 * fork, not at once: its merge state is its parent's (VM_MERGEABLE and
 * MMF_VM_MERGE_ANY are inherited), and most such children of a fork loop
 * are gone by then, so they cost nothing. Reading every one alive made the
 * daemon's CPU in a fork storm depend on whether the proc-events bucket
 * ran dry (3-12% of a core at 500 forks/s, test-daemon-enter-storm.sh).
 * An exec or uid change of the child reads it at once as before (a rename
 * of a process not in the table yet is no event to discovery). */
#define FORK_HOLD_USEC (100 * USEC_PER_MSEC)
#define FORK_HOLD_ACCURACY_USEC (10 * USEC_PER_MSEC)

static bool slow_backing_off(const Process *p, uint64_t now) {
        return p->slow && now - p->slow_since_usec < SLOW_BACKOFF_USEC;
}

typedef struct Pending {
        int pid;
        bool forked;            /* a fork event (of a known parent pid) */
        bool exited;
        uint64_t exec_ns;       /* kernel timestamp of an exec event, 0 for others */
        uint64_t seq;           /* arrival order */
        uint64_t at_usec;       /* arrival, CLOCK_MONOTONIC */
} Pending;

struct Discovery {
        sd_event *event;
        const Root *root;
        DiscoveryOptions opts;
        ProcessTable *table;
        ProcEvents *events;
        int events_fd;                  /* passed by the service manager, until start_events takes it */
        MmReader *reader;
        PolicySet policies;

        int self_pid;                   /* cached: classification runs per event */
        DiscoveryMode mode;
        char mode_reason[192];
        bool overflowed;                /* ENOBUFS since the last scan */
        uint64_t generation;
        uint64_t last_scan_done_usec;
        uint64_t last_scan_duration_usec;
        uint64_t full_scans, overflow_resyncs;
        uint64_t departed_rmap_max;     /* discovery_take_departed() */
        /* The latest forks the proc connector told (discovery_take_fork) */
        struct RecentFork {
                int parent, child;
                uint64_t ns;            /* the event's CLOCK_MONOTONIC */
                bool taken;
        } forks[DISCOVERY_RECENT_FORKS];
        unsigned n_forks;               /* ring: the newest at (n_forks - 1) % DISCOVERY_RECENT_FORKS */

        Pending *pending;
        size_t n_pending, n_pending_alloc;
        uint64_t pending_seq;
        sd_event_source *hold_source;   /* the held forks' next due time */

        uint32_t *latency_usec;         /* ring */
        uint64_t n_latency;

        /* A resync while events flow runs in slices (RESYNC_SLICE pids per
         * loop iteration, at idle priority), so 10,000 processes do not
         * stall the loop for the 0.4 s a full scan takes. */
        int *resync_pids;
        size_t n_resync, resync_pos, n_resync_alloc;
        sd_event_source *resync_source;
        uint64_t resync_started_usec;

        uint64_t unmet_wake_usec;       /* when unmet_grew was last called */

        /* Kept current on every change and removal of a process (index_update,
         * drop_process), so that a tick costs what changed, not the table:
         * with 10,000 processes, walks of the whole table per tick (status
         * counts, announcements, unmet pages, plans, the metrics' grouping)
         * cost 3-5% of a core. */
        uint64_t verdicts[_VERDICT_ACTION_MAX];
        uint64_t n_slow;
        Process **hot;                  /* is_hot(): what a tick looks at */
        size_t n_hot, n_hot_alloc;
        void *tick_copy;                /* a tick's copy of hot, as pids or pointers */
        size_t n_tick_copy_alloc;
        SavingsIndex savings;
        struct Announce {
                int pid;
                uint64_t start_time_ticks;
        } *announce;                    /* verdicts to announce at the next tick */
        size_t n_announce, n_announce_alloc;
};

#define RESYNC_SLICE 256

static const char *const discovery_mode_table[_DISCOVERY_MODE_MAX] = {
        [DISCOVERY_EVENTS] = "events",
        [DISCOVERY_POLLING] = "polling",
};

/* "?" rather than NULL: the state dump and the logs print it as it is. */
DEFINE_STRING_TABLE_TO_STRING_FALLBACK(discovery_mode, DiscoveryMode, "?");

static uint64_t boottime_usec(void) {
        return now_usec(CLOCK_BOOTTIME);
}

static void on_mm_read(MmReadResult *r, void *userdata);

int discovery_new(sd_event *e, const Root *root, const DiscoveryOptions *o, Discovery **ret) {
        _cleanup_(discovery_freep) Discovery *d = NULL;
        int r;

        d = calloc(1, sizeof *d);
        if (!d)
                return -ENOMEM;
        d->event = sd_event_ref(e);
        d->root = root;
        if (o)
                d->opts = *o;
        if (!d->opts.resync_interval_usec)
                d->opts.resync_interval_usec = 2 * 60 * USEC_PER_SEC;
        if (!d->opts.mm_read_deadline_usec)
                d->opts.mm_read_deadline_usec = 1 * USEC_PER_SEC;
        if (!d->opts.mm_read_threads)
                d->opts.mm_read_threads = 4;
        if (!d->opts.self_test_timeout_usec)
                d->opts.self_test_timeout_usec = 1 * USEC_PER_SEC;
        if (!d->opts.action_retry_usec)
                d->opts.action_retry_usec = 60 * USEC_PER_SEC;
        d->mode = DISCOVERY_POLLING;
        strscpy(d->mode_reason, sizeof d->mode_reason, "not started");
        d->self_pid = getpid();
        d->events_fd = -EBADF;

        r = process_table_new(&d->table);
        if (r < 0)
                return r;
        d->latency_usec = calloc(LATENCY_RING, sizeof *d->latency_usec);
        if (!d->latency_usec)
                return -ENOMEM;
        r = mm_reader_new(root, e, d->opts.mm_read_threads, d->opts.mm_read_deadline_usec, on_mm_read, d,
                          &d->reader);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(d);
        return 0;
}

Discovery *discovery_free(Discovery *d) {
        if (!d)
                return NULL;
        sd_event_source_disable_unref(d->resync_source);
        sd_event_source_disable_unref(d->hold_source);
        free(d->resync_pids);
        proc_events_free(d->events);
        safe_close(d->events_fd);
        mm_reader_free(d->reader);
        process_table_free(d->table);
        savings_index_done(&d->savings);
        free(d->hot);
        free(d->tick_copy);
        free(d->announce);
        policy_set_done(&d->policies);
        free(d->pending);
        free(d->latency_usec);
        sd_event_unref(d->event);
        free(d);
        return NULL;
}

void discovery_note_exclusion(Discovery *d, const ProcessAction *a) {
        Process *p = process_table_get(d->table, a->pid);
        if (p && p->start_time_ticks == a->start_time_ticks)
                p->excluded = a->action == MERGE_ACTION_DISABLE;
}

const ProcessTable *discovery_processes(const Discovery *d) {
        return d->table;
}

const PolicySet *discovery_policies(const Discovery *d) {
        return &d->policies;
}

static void record_latency(Discovery *d, uint64_t exec_ns) {
        uint64_t now_ns = now_usec(CLOCK_MONOTONIC) * NSEC_PER_USEC;
        /* The event's timestamp is ktime_get_ns(): CLOCK_MONOTONIC. */
        uint64_t usec = now_ns > exec_ns ? (now_ns - exec_ns) / NSEC_PER_USEC : 0;
        d->latency_usec[d->n_latency++ % LATENCY_RING] = (uint32_t) MIN(usec, UINT32_MAX);
}

size_t discovery_exec_latencies(const Discovery *d, uint64_t *buf, size_t n) {
        size_t have = (size_t) MIN(d->n_latency, (uint64_t) LATENCY_RING), k = MIN(have, n);
        for (size_t i = 0; i < k; i++)
                buf[i] = d->latency_usec[(d->n_latency - k + i) % LATENCY_RING];
        return k;
}

/* Worth a look every tick: a policy matched it (facts refresh, ksm_stat,
 * plans), it is in KSM (ksm_stat), its ksm_stat is known (its unmet pages
 * count) or it is slow (the status counts it). The rest of the table
 * changes only by events and resyncs, which update the sums as they go. */
static bool is_hot(const Process *p) {
        return (p->have_verdict && p->verdict.action != VERDICT_LEAVE_ALONE) || p->ksm_merging_pages > 0 ||
               p->ksm_stat_valid || p->slow;
}

static void hot_remove(Discovery *d, Process *p) {
        size_t at = p->index.hot_pos - 1;
        Process *last = d->hot[--d->n_hot];
        d->hot[at] = last;
        last->index.hot_pos = at + 1;
        p->index.hot_pos = 0;
}

/* Counts p as it is now, after any change of its facts, verdict, KSM
 * figures or slowness. -ENOMEM (p is then left out of some sum until its
 * next change). */
static int index_update(Discovery *d, Process *p) {
        ProcessIndexState *x = &p->index;

        if (x->verdict_counted)
                d->verdicts[x->counted_action]--;
        x->verdict_counted = p->have_verdict && (unsigned) p->verdict.action < _VERDICT_ACTION_MAX;
        if (x->verdict_counted) {
                x->counted_action = p->verdict.action;
                d->verdicts[x->counted_action]++;
        }
        if (x->slow_counted != p->slow) {
                d->n_slow = p->slow ? d->n_slow + 1 : d->n_slow - 1;
                x->slow_counted = p->slow;
        }
        bool hot = is_hot(p);
        if (hot && !x->hot_pos) {
                if (greedy_realloc((void **) &d->hot, &d->n_hot_alloc, d->n_hot + 1, sizeof *d->hot, 64) < 0)
                        return -ENOMEM;
                d->hot[d->n_hot++] = p;
                x->hot_pos = d->n_hot;
        } else if (!hot && x->hot_pos)
                hot_remove(d, p);
        return savings_index_update(&d->savings, p);
}

void discovery_process_changed(Discovery *d, Process *p) {
        if (index_update(d, p) < 0)
                log_oom();
}

/* Uncounts and removes pid: every removal from the table goes here. */
static void drop_process(Discovery *d, int pid) {
        Process *p = process_table_get(d->table, pid);
        if (!p)
                return;
        /* ksmd drops a gone mm's rmap items as it passes: discovery_take_departed() */
        if (p->ksm_stat_valid)
                d->departed_rmap_max = MAX(d->departed_rmap_max, p->ksm_stat.rmap_items);
        ProcessIndexState *x = &p->index;
        if (x->verdict_counted)
                d->verdicts[x->counted_action]--;
        if (x->slow_counted)
                d->n_slow--;
        if (x->hot_pos)
                hot_remove(d, p);
        savings_index_remove(&d->savings, p);
        process_table_remove(d->table, pid);
}

int discovery_savings_by_cgroup(const Discovery *d, SavingsTable *ret) {
        return savings_index_table(&d->savings, ret);
}

const char *discovery_verify_index(Discovery *d, char *buf, size_t n) {
        uint64_t verdicts[_VERDICT_ACTION_MAX] = {}, slow = 0, hot = 0;
        _cleanup_(savings_table_done) SavingsTable whole = {}, kept = {};
        const Process *p;

        PROCESS_TABLE_FOREACH(p, d->table, i) {
                if (p->have_verdict && (unsigned) p->verdict.action < _VERDICT_ACTION_MAX)
                        verdicts[p->verdict.action]++;
                slow += p->slow;
                if (is_hot(p) != (p->index.hot_pos != 0) ||
                    (p->index.hot_pos && (p->index.hot_pos > d->n_hot || d->hot[p->index.hot_pos - 1] != p))) {
                        snprintf(buf, n, "pid %d is%s in the hot list, should%s be", p->pid,
                                 p->index.hot_pos ? "" : " not", is_hot(p) ? "" : " not");
                        return buf;
                }
                hot += is_hot(p);
        }
        if (hot != d->n_hot)
                return snprintf(buf, n, "%zu processes in the hot list, %" PRIu64 " hot", d->n_hot, hot), buf;
        if (slow != d->n_slow)
                return snprintf(buf, n, "%" PRIu64 " slow counted, %" PRIu64 " slow", d->n_slow, slow), buf;
        for (VerdictAction a = 0; a < _VERDICT_ACTION_MAX; a++)
                if (verdicts[a] != d->verdicts[a])
                        return snprintf(buf, n, "%" PRIu64 " processes counted as %s, %" PRIu64 " are", d->verdicts[a],
                                        verdict_action_to_string(a), verdicts[a]),
                               buf;
        if (savings_by_cgroup(d->table, &whole) < 0 || savings_index_table(&d->savings, &kept) < 0)
                return snprintf(buf, n, "out of memory"), buf;
        if (whole.n != kept.n)
                return snprintf(buf, n, "%zu cgroups summed, %zu have processes", kept.n, whole.n), buf;
        for (size_t i = 0; i < whole.n; i++) {
                const CgroupSavings *x = &whole.items[i], *y = &kept.items[i];
                if (!streq(strempty(x->cgroup), strempty(y->cgroup)) || x->processes != y->processes ||
                    x->merging_pages != y->merging_pages || x->profit_bytes != y->profit_bytes)
                        return snprintf(buf, n, "cgroup %s: summed %u processes %" PRIu64 " pages, has %u, %" PRIu64,
                                        strempty(y->cgroup), y->processes, y->merging_pages, x->processes,
                                        x->merging_pages),
                               buf;
        }
        return NULL;
}

/* What announce_verdict() would log for this verdict, once it is announced. */
static bool verdict_is_news(const Verdict *v) {
        /* Left alone is news only when a policy matched and the process's
         * own opt-out decided it: the administrator may wonder why a guest
         * under 50-vms.policy does not merge. */
        return !(v->action == VERDICT_LEAVE_ALONE && !v->opted_out) && v->action != VERDICT_WAIT;
}

/* Classifies p and says so when the outcome changed. -ENOMEM. */
static int classify_one(Discovery *d, Process *p) {
        ClassifyContext ctx = { .now_boottime_usec = boottime_usec(), .self_pid = d->self_pid };
        Verdict v;

        classify_process(&d->policies, &ctx, p, &v);
        bool changed = !p->have_verdict || p->verdict.action != v.action || p->verdict.method != v.method ||
                       p->verdict.policy_line != v.policy_line || !streq(p->verdict.policy_file, v.policy_file);
        p->verdict = v;
        p->verdict_usec = now_usec(CLOCK_MONOTONIC);
        p->have_verdict = true;
        if (v.needs_cmdline && !p->cmdline_read && !p->slow)
                (void) mm_reader_queue(d->reader, MM_READ_CMDLINE, p->pid, p->start_time_ticks);
        int r = index_update(d, p);
        if (r < 0)
                return r;
        if (!changed)
                return 0;
        /* Announced at info level only once the process outlived a tick
         * (announce_verdict): a fork-per-connection server under a policy
         * would otherwise log a line per connection. Only a verdict that is
         * news is queued for it; one that is not becomes news only by
         * changing again, which queues it then. */
        p->verdict_logged = false;
        if (verdict_is_news(&v)) {
                if (greedy_realloc((void **) &d->announce, &d->n_announce_alloc, d->n_announce + 1,
                                   sizeof *d->announce, 64) < 0)
                        return -ENOMEM;
                d->announce[d->n_announce++] = (struct Announce) { p->pid, p->start_time_ticks };
        }
        if (log_get_max_level() >= LOG_DEBUG) {
                const char *comm = CESCAPE(p->comm, CESCAPE_ASCII);
                if (v.action == VERDICT_LEAVE_ALONE)
                        log_debug("pid %d (%s): %s: %s", p->pid, comm, verdict_action_to_string(v.action),
                                  v.reason);
                else
                        log_debug("pid %d (%s): %s by %s:%u: %s", p->pid, comm,
                                  verdict_action_to_string(v.action), v.policy_file, v.policy_line, v.reason);
        }
        return 0;
}

static void announce_verdict(Discovery *d, Process *p) {
        if (!p->have_verdict || p->verdict_logged || !verdict_is_news(&p->verdict))
                return;
        p->verdict_logged = true;
        const char *comm = CESCAPE(p->comm, CESCAPE_ASCII);
        const Verdict *v = &p->verdict;
        char policy[VERDICT_POLICY_MAX + 16];
        snprintf(policy, sizeof policy, "%s:%u", v->policy_file, v->policy_line);
        log_struct(LOG_INFO,
                   LOG_FIELDS(.pid = p->pid, .unit = p->unit, .vm = p->vm_name, .decision = "policy",
                              .verdict = verdict_action_to_string(v->action),
                              .method = merge_method_to_string(v->method), .policy = policy),
                   "pid %d (%s): %s by %s: %s", p->pid, comm, verdict_action_to_string(v->action), policy, v->reason);
        if (d->opts.decisions)
                decision_log_add_about(d->opts.decisions, DECISION_SUBJECT_PROCESS(p), "policy",
                                       "pid %d (%s): %s by %s: %s", p->pid, comm,
                                       verdict_action_to_string(v->action), policy, v->reason);
}

/* Reads the facts of pid into the table and classifies it. 0 when the
 * process is gone (and dropped), 1 when classified, -ENOMEM. */
static int refresh_pid_flags(Discovery *d, int pid, uint64_t exec_ns, unsigned read_flags) {
        Process *p;
        bool created;
        int r = process_table_ensure(d->table, pid, &p, &created);
        if (r < 0)
                return r;
        if (exec_ns && !created)
                process_forget_exec_state(p);
        r = process_read_facts_flags(d->root, pid, p, read_flags);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                /* Gone between event and read (or unreadable): expected. */
                log_debug_errno(r, "pid %d: cannot read its facts, dropping: %m", pid);
                drop_process(d, pid);
                return 0;
        }
        p->generation = d->generation;
        r = classify_one(d, p);
        if (r < 0)
                return r;
        if (exec_ns)
                record_latency(d, exec_ns);
        return 1;
}

static int refresh_pid(Discovery *d, int pid, uint64_t exec_ns) {
        return refresh_pid_flags(d, pid, exec_ns, 0);
}

static int pending_add_full(Discovery *d, int pid, bool forked, uint64_t exec_ns, bool exited) {
        if (greedy_realloc((void **) &d->pending, &d->n_pending_alloc, d->n_pending + 1, sizeof *d->pending, 256) < 0)
                return -ENOMEM;
        d->pending[d->n_pending++] = (Pending) { pid, forked, exited, exec_ns, d->pending_seq++,
                                                 now_usec(CLOCK_MONOTONIC) };
        return 0;
}

static int pending_add(Discovery *d, int pid, uint64_t exec_ns, bool exited) {
        return pending_add_full(d, pid, false, exec_ns, exited);
}

static void on_event(const ProcEvent *ev, void *userdata) {
        Discovery *d = userdata;

        /* Threads fork, exec (as the leader, after de_thread), rename and
         * exit too; only the thread group matters here. But when the main
         * thread exited first, the last thread's exit is the only sign the
         * process is gone: look again. */
        if (ev->tid != ev->pid) {
                Process *p;
                if (ev->type == PROC_EV_EXIT && (p = process_table_get(d->table, ev->pid)) && p->zombie_leader)
                        (void) pending_add(d, ev->pid, 0, false);
                return;
        }
        switch (ev->type) {
        case PROC_EV_FORK:
                if (ev->parent_pid > 0)
                        d->forks[d->n_forks++ % DISCOVERY_RECENT_FORKS] = (struct RecentFork) {
                                .parent = ev->parent_pid, .child = ev->pid, .ns = ev->timestamp_ns
                        };
                (void) pending_add_full(d, ev->pid, ev->parent_pid > 0, 0, false);
                break;
        case PROC_EV_UID:
                (void) pending_add(d, ev->pid, 0, false);
                break;
        case PROC_EV_EXEC:
                (void) pending_add(d, ev->pid, ev->timestamp_ns, false);
                break;
        case PROC_EV_COMM: {
                Process *p = process_table_get(d->table, ev->pid);
                if (p)
                        (void) pending_add(d, ev->pid, 0, false);
                break;
        }
        case PROC_EV_EXIT:
                /* The leader's exit: the process is gone for our purposes
                 * (a leader that exits before its threads leaves a zombie
                 * with no classification worth keeping; a resync re-adds it
                 * if it still has an mm). */
                drop_process(d, ev->pid);
                (void) pending_add(d, ev->pid, 0, true);
                break;
        default:
                break;
        }
}

static void set_polling(Discovery *d, const char *fmt, ...) _printf_(2, 3);

static void on_events_error(int error, void *userdata) {
        Discovery *d = userdata;
        /* The socket is freed at the next tick, not from inside its callback. */
        set_polling(d, "reading proc events failed (%s)", strerrorname_np(-error) ?: "?");
}

static int pending_cmp(const void *a, const void *b) {
        const Pending *x = a, *y = b;
        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void on_batch(void *userdata);

static int on_hold_due(sd_event_source *s, uint64_t usec, void *userdata) {
        on_batch(userdata);
        return 0;
}

/* Wakes on_batch when the earliest held fork is due. */
static void hold_arm(Discovery *d, uint64_t due) {
        int r = d->hold_source ? sd_event_source_set_time(d->hold_source, due)
                               : sd_event_add_time(d->event, &d->hold_source, CLOCK_MONOTONIC, due,
                                                   FORK_HOLD_ACCURACY_USEC, on_hold_due, d);
        if (r >= 0)
                r = sd_event_source_set_enabled(d->hold_source, SD_EVENT_ONESHOT);
        if (r < 0)
                /* Not lost: the next batch or Interval='s scan reads them. */
                log_debug_errno(r, "Cannot arm the held forks' timer: %m");
}

static void on_batch(void *userdata) {
        Discovery *d = userdata;
        uint64_t now = now_usec(CLOCK_MONOTONIC), due = UINT64_MAX;
        size_t kept = 0;

        if (d->n_pending == 0)
                return;
        /* One read per pid per batch: fork+exec of the same child, or a
         * burst of renames, coalesce; a child that already exited in this
         * batch is not in the table any more and costs nothing. */
        qsort(d->pending, d->n_pending, sizeof *d->pending, pending_cmp);
        for (size_t i = 0; i < d->n_pending;) {
                int pid = d->pending[i].pid;
                uint64_t exec_ns = 0;
                bool exited = false, forked = false, fork_only = true;
                size_t fork_at = i;
                /* Only what followed the last exit counts (a pid reused
                 * within one batch); a process that forked, exec'd and
                 * exited within it is never read at all. */
                for (; i < d->n_pending && d->pending[i].pid == pid; i++) {
                        const Pending *e = &d->pending[i];
                        exited = e->exited;
                        if (exited) {
                                exec_ns = 0, forked = false, fork_only = true;
                                continue;
                        }
                        exec_ns = MAX(exec_ns, e->exec_ns);
                        if (e->forked)
                                forked = true, fork_at = i;
                        else
                                fork_only = false;
                }
                if (exited)
                        continue;
                if (fork_only && forked && now < d->pending[fork_at].at_usec + FORK_HOLD_USEC) {
                        /* kept <= fork_at: the array is compacted in place. */
                        d->pending[kept++] = d->pending[fork_at];
                        due = MIN(due, d->pending[fork_at].at_usec + FORK_HOLD_USEC);
                        continue;
                }
                /* A held child read in full, not copied from its parent:
                 * in 100 ms the parent may have exec'd, changed its uid,
                 * or exited and its pid gone to another process. */
                int r = refresh_pid(d, pid, exec_ns);
                if (r == -ENOMEM)
                        log_oom();
        }
        d->n_pending = kept;
        if (kept > 0)
                hold_arm(d, due);
}

static int resync_begin(Discovery *d);

static void on_overflow(void *userdata) {
        Discovery *d = userdata;
        if (!d->overflowed)
                log_warning("Process events were lost (socket buffer overflow, ENOBUFS); rescanning /proc.");
        d->overflowed = true;
        /* Resync now rather than at the next tick (and start over if one is
         * under way: its pid list predates the loss). */
        d->overflow_resyncs++;
        if (resync_begin(d) == -ENOMEM)
                log_oom();
}

static void sweep(Discovery *d, uint64_t started_usec) {
        Process *p;
        PROCESS_TABLE_FOREACH(p, d->table, i)
                if (p->generation != d->generation)
                        drop_process(d, p->pid);
        d->overflowed = false;
        d->full_scans++;
        d->last_scan_done_usec = now_usec(CLOCK_MONOTONIC);
        d->last_scan_duration_usec = d->last_scan_done_usec - started_usec;
        log_debug("Scanned %zu processes in %" PRIu64 " ms.", process_table_size(d->table),
                  d->last_scan_duration_usec / USEC_PER_MSEC);
}

static int collect_pid(int pid, void *userdata) {
        Discovery *d = userdata;
        if (greedy_realloc((void **) &d->resync_pids, &d->n_resync_alloc, d->n_resync + 1, sizeof *d->resync_pids,
                           1024) < 0)
                return -ENOMEM;
        d->resync_pids[d->n_resync++] = pid;
        return 0;
}

static int on_resync_slice(sd_event_source *s, void *userdata) {
        Discovery *d = userdata;
        size_t end = MIN(d->resync_pos + RESYNC_SLICE, d->n_resync);
        /* While proc events flow and none were lost, every exec was seen:
         * a known process keeps its exe (reading 10,000 of them through the
         * injector was a third of a periodic resync's CPU, bench-cgroups). A
         * resync after lost events reads everything. */
        unsigned flags = d->events && !d->overflowed ? PROCESS_READ_KEEP_EXE : 0;
        for (; d->resync_pos < end; d->resync_pos++)
                if (refresh_pid_flags(d, d->resync_pids[d->resync_pos], 0, flags) == -ENOMEM) {
                        log_oom();
                        break;
                }
        if (d->resync_pos >= d->n_resync) {
                /* Mark and sweep, sliced: entries an event added or
                 * refreshed meanwhile carry the current generation too, so
                 * only what is gone without an exit event (lost, or missed)
                 * is swept. */
                sweep(d, d->resync_started_usec);
                d->n_resync = d->resync_pos = 0;
                (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
        }
        return 0;
}

static bool resync_running(const Discovery *d) {
        int on = SD_EVENT_OFF;
        return d->resync_source && sd_event_source_get_enabled(d->resync_source, &on) >= 0 && on != SD_EVENT_OFF;
}

static int resync_begin(Discovery *d) {
        int r;

        d->n_resync = d->resync_pos = 0;
        r = procfs_for_each_pid(d->root, collect_pid, d);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return log_warning_errno(r, "Cannot list %s: %m", d->root->proc_path);
        d->generation++;
        d->resync_started_usec = now_usec(CLOCK_MONOTONIC);
        if (!d->resync_source) {
                r = sd_event_add_defer(d->event, &d->resync_source, on_resync_slice, d);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_priority(d->resync_source, SD_EVENT_PRIORITY_IDLE);
        }
        return sd_event_source_set_enabled(d->resync_source, SD_EVENT_ON);
}

typedef struct ScanState {
        Discovery *d;
        int error;
} ScanState;

static int scan_one(int pid, void *userdata) {
        ScanState *s = userdata;
        int r = refresh_pid(s->d, pid, 0);
        if (r == -ENOMEM) {
                s->error = r;
                return r;
        }
        return 0;
}

int discovery_scan(Discovery *d) {
        ScanState s = { .d = d };
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        int r;

        /* A sliced resync under way is superseded. */
        if (resync_running(d)) {
                (void) sd_event_source_set_enabled(d->resync_source, SD_EVENT_OFF);
                d->n_resync = d->resync_pos = 0;
        }

        /* Mark and sweep: everything the scan does not see is gone. The
         * scan runs on the loop, so events that arrive meanwhile wait in
         * the socket and are applied after the sweep. */
        d->generation++;
        r = procfs_for_each_pid(d->root, scan_one, &s);
        if (s.error < 0)
                return s.error;
        if (r < 0)
                return log_warning_errno(r, "Cannot list %s: %m", d->root->proc_path);
        d->n_pending = 0;
        sweep(d, t0);
        return 0;
}

static void set_polling(Discovery *d, const char *fmt, ...) {
        va_list ap;
        d->mode = DISCOVERY_POLLING;
        va_start(ap, fmt);
        vsnprintf(d->mode_reason, sizeof d->mode_reason, fmt, ap);
        va_end(ap);
        log_notice("Process discovery falls back to polling /proc every tick: %s.", d->mode_reason);
}

/* Opens and verifies the connector; on any failure says why and polls. */
static int start_events(Discovery *d) {
        char t[32];
        int r;

        bool passed = d->events_fd >= 0;
        r = proc_events_open(d->opts.events_rcvbuf_bytes, TAKE_FD(d->events_fd), &d->events);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                set_polling(d, "proc connector unavailable (%s%s)", strerrorname_np(-r) ?: "?",
                            r == -EPERM ? ": this kernel wants CAP_NET_ADMIN in the initial user namespace to join "
                                          "its group; ksmtuned2-proc-events.socket passes a joined socket"
                                        : passed ? ": the socket passed by the service manager" : "");
                return 0;
        }
        r = proc_events_self_test(d->events, d->opts.self_test_timeout_usec);
        if (r < 0) {
                d->events = proc_events_free(d->events);
                if (r == -ETIMEDOUT)
                        set_polling(d, "no proc event for a test child within %s (%s; a PID namespace?)",
                                    format_timespan(t, sizeof t, d->opts.self_test_timeout_usec),
                                    strerrorname_np(-r) ?: "?");
                else
                        set_polling(d, "the kernel refused the request for proc events (%s%s)",
                                    strerrorname_np(-r) ?: "?",
                                    r == -EPERM ? ": before Linux 6.6 the request wants CAP_NET_ADMIN, "
                                                  "on a passed socket too"
                                                : "");
                return 0;
        }
        ProcEventsHandlers h = { .on_event = on_event, .on_overflow = on_overflow, .on_batch = on_batch,
                                 .on_error = on_events_error, .userdata = d };
        r = proc_events_attach(d->events, d->event, &h);
        if (r < 0) {
                d->events = proc_events_free(d->events);
                set_polling(d, "cannot watch the connector socket (%s)", strerrorname_np(-r) ?: "?");
                return 0;
        }
        d->mode = DISCOVERY_EVENTS;
        strscpy(d->mode_reason, sizeof d->mode_reason, "proc connector");
        log_info("Process discovery: proc connector events (self-test passed%s).",
                 passed ? ", on the socket passed by the service manager" : "");
        return 0;
}

void discovery_set_events_fd(Discovery *d, int fd) {
        safe_close(d->events_fd);
        d->events_fd = fd;
}

int discovery_start(Discovery *d) {
        int r = 0;

        if (d->opts.force_polling)
                set_polling(d, "polling requested");
        else if (!isempty(d->root->prefix))
                /* The connector reports the real host's processes, not the tree's. */
                set_polling(d, "proc and sys are read below %s", d->root->prefix);
        else
                r = start_events(d);
        /* A passed socket start_events() did not take: left open unread, it
         * would fill with every event another listener asks for. */
        d->events_fd = safe_close(d->events_fd);
        if (r < 0)
                return r;
        return discovery_scan(d);
}

int discovery_load_policies(Discovery *d, char *const *dirs, ConfDiag *diag) {
        PolicySet s;
        Process *p;
        int r = policy_set_load(dirs, &d->policies, &s, diag);
        if (r < 0)
                return r;
        policy_set_done(&d->policies);
        d->policies = s;
        PROCESS_TABLE_FOREACH(p, d->table, i)
                if (classify_one(d, p) < 0)
                        return -ENOMEM;
        return (int) MIN(s.n_rejected + s.n_kept, (size_t) INT_MAX);
}

static void on_mm_read(MmReadResult *r, void *userdata) {
        Discovery *d = userdata;
        Process *p = process_table_get(d->table, r->pid);
        if (!p || p->start_time_ticks != r->start_time_ticks)
                return; /* gone, or a new incarnation */
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        if (r->error == -ETIME) {
                if (!p->slow) {
                        const char *comm = CESCAPE(p->comm, CESCAPE_ASCII);
                        log_notice("pid %d (%s): reading its %s took over %" PRIu64 " ms (mmap_lock busy); "
                                   "marked slow, not read again for a while.",
                                   p->pid, comm, r->kind == MM_READ_CMDLINE ? "cmdline" : "ksm_stat",
                                   r->duration_usec / USEC_PER_MSEC);
                }
                p->slow = true;
                p->slow_since_usec = now;
                discovery_process_changed(d, p);
                return;
        }
        if (r->late) {
                /* Returned at last: keep it slow, start the backoff from now. */
                p->slow_since_usec = now;
        } else if (p->slow && now - p->slow_since_usec >= SLOW_BACKOFF_USEC) {
                p->slow = false;
                p->slow_since_usec = 0;
        }
        discovery_process_changed(d, p); /* slowness may have ended */
        if (r->kind == MM_READ_CMDLINE) {
                /* Unreadable counts as read: a Cmdline= policy then does
                 * not match, rather than wait forever. */
                if (r->error == -ESRCH)
                        return;
                if (r->error < 0)
                        log_debug_errno(r->error, "pid %d: cmdline: %m", r->pid);
                free(p->cmdline);
                p->cmdline = TAKE_PTR(r->cmdline);
                p->cmdline_read = true;
                if (classify_one(d, p) < 0)
                        log_oom();
                return;
        }
        if (r->error < 0) {
                log_debug_errno(r->error, "pid %d: ksm_stat: %m", r->pid);
                return;
        }
        uint64_t unmet_before = process_unmet_pages(p, page_size());
        p->ksm_stat = r->ksm_stat;
        p->ksm_stat_valid = true;
        p->ksm_stat_usec = now;
        p->ksm_merging_pages = r->ksm_stat.merging_pages;
        discovery_process_changed(d, p);
        if (d->opts.unmet_grew && process_unmet_pages(p, page_size()) >= unmet_before + UNMET_WAKE_PAGES &&
            now - d->unmet_wake_usec >= UNMET_WAKE_GAP_USEC) {
                d->unmet_wake_usec = now;
                d->opts.unmet_grew(d->opts.userdata);
        }
}

int discovery_take_fork(Discovery *d, int parent, uint64_t since_ns, uint64_t until_ns) {
        struct RecentFork *best = NULL;
        for (unsigned i = 0; i < MIN(d->n_forks, (unsigned) DISCOVERY_RECENT_FORKS); i++) {
                struct RecentFork *f = &d->forks[i];
                if (!f->taken && f->parent == parent && f->ns >= since_ns && f->ns <= until_ns &&
                    (!best || f->ns < best->ns))
                        best = f;
        }
        if (!best)
                return 0;
        best->taken = true;
        return best->child;
}

bool discovery_was_in_ksm(Discovery *d, int pid, uint64_t before_ns) {
        const Process *p = process_table_get(d->table, pid);
        return p && p->ksm_stat_valid && p->ksm_stat_usec * NSEC_PER_USEC < before_ns &&
               (p->ksm_stat.mergeable == 1 || p->ksm_stat.merge_any == 1 || p->ksm_stat.rmap_items > 0);
}

uint64_t discovery_take_departed(Discovery *d) {
        uint64_t r = d->departed_rmap_max;
        d->departed_rmap_max = 0;
        return r;
}

uint64_t discovery_unmet_pages(Discovery *d) {
        uint64_t ps = page_size(), sum = 0;
        /* Only a process whose ksm_stat is known has unmet pages: all hot. */
        for (size_t i = 0; i < d->n_hot; i++)
                sum += process_unmet_pages(d->hot[i], ps);
        return sum;
}

static bool wants_ksm_stat(const Process *p) {
        if (p->kthread)
                return false;
        return (p->have_verdict && p->verdict.action != VERDICT_LEAVE_ALONE) || p->ksm_merging_pages > 0;
}

static int plan_process(Discovery *d, Process *p, uint64_t now, Plan *plan) {
        if (!p->have_verdict || p->verdict.method == MERGE_METHOD_NONE)
                return 0;
        int on = process_merging_enabled(p);
        MergeAction a;
        if (p->verdict.action == VERDICT_MERGE && on == 0) {
                /* Excluded by the controller: only its readmission switches
                 * merging back on. */
                if (p->excluded)
                        return 0;
                a = MERGE_ACTION_ENABLE;
        }
        else if (p->verdict.action == VERDICT_DONT_MERGE && on == 1)
                a = MERGE_ACTION_DISABLE;
        else
                return 0;
        /* Planned already and not carried out (no actuator, or it failed):
         * ask again only after a while. */
        if (p->action_planned_usec && now - p->action_planned_usec < d->opts.action_retry_usec)
                return 0;
        /* Its mmap_lock is busy: the actuator's reads would overrun too, and
         * hold the actions of everyone else behind it for a deadline each. */
        if (slow_backing_off(p, now))
                return 0;
        ProcessAction pa = {
                .pid = p->pid,
                .start_time_ticks = p->start_time_ticks,
                .action = a,
                .method = p->verdict.method,
        };
        char reason[VERDICT_POLICY_MAX + VERDICT_REASON_MAX + 16];
        const char *base = strrchr(p->verdict.policy_file, '/');
        snprintf(reason, sizeof reason, "%s:%u: %s", base ? base + 1 : p->verdict.policy_file,
                 p->verdict.policy_line, p->verdict.reason);
        strscpy(pa.reason, sizeof pa.reason, reason);
        int r = plan_add_action(plan, &pa);
        if (r < 0)
                return r;
        p->action_planned_usec = now;
        return 1;
}

/* A copy of the hot list for a tick to walk while what it does changes the
 * list (a refresh drops a process that is gone, a verdict leaves it): as
 * pids when the walk may free entries, else as pointers. NULL on ENOMEM. */
static void *hot_copy(Discovery *d, bool as_pids) {
        if (greedy_realloc(&d->tick_copy, &d->n_tick_copy_alloc, d->n_hot + 1, MAX(sizeof(int), sizeof(Process *)),
                           64) < 0)
                return NULL;
        for (size_t i = 0; i < d->n_hot; i++)
                if (as_pids)
                        ((int *) d->tick_copy)[i] = d->hot[i]->pid;
                else
                        ((Process **) d->tick_copy)[i] = d->hot[i];
        return d->tick_copy;
}

int discovery_tick(Discovery *d, Plan *plan) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        int r;

        /* Results that arrived since the last dispatch (the eventfd may not
         * have been served yet when the tick fires first). */
        (void) mm_reader_dispatch(d->reader);

        if (d->mode == DISCOVERY_POLLING) {
                d->events = proc_events_free(d->events); /* after a read error */
                /* Sliced too: a scan per tick must not stall the loop either. */
                if (!resync_running(d)) {
                        r = resync_begin(d);
                        if (r == -ENOMEM)
                                return r;
                }
        } else {
                if (!resync_running(d) && (d->overflowed || now - d->last_scan_done_usec >= d->opts.resync_interval_usec)) {
                        r = resync_begin(d);
                        if (r == -ENOMEM)
                                return r;
                }
                /* Between scans the processes a policy matched still change:
                 * anon RSS grows past MinAnonMiB, age passes MinAge. Those
                 * are all hot; a refresh may drop one that is gone. */
                size_t n = d->n_hot;
                int *pids = hot_copy(d, true);
                if (!pids)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++) {
                        Process *p = process_table_get(d->table, pids[i]);
                        if (p && p->have_verdict && p->verdict.action != VERDICT_LEAVE_ALONE) {
                                r = refresh_pid(d, p->pid, 0);
                                if (r == -ENOMEM)
                                        return r;
                        }
                }
        }

        /* The verdicts reached since the last tick, of the processes that
         * outlived it. */
        for (size_t i = 0; i < d->n_announce; i++) {
                Process *p = process_table_get(d->table, d->announce[i].pid);
                if (p && p->start_time_ticks == d->announce[i].start_time_ticks)
                        announce_verdict(d, p);
        }
        d->n_announce = 0;

        /* ksm_stat reads and plans concern hot processes only: a leave-alone
         * process out of KSM is neither read nor planned. Nothing below
         * frees one, but a read result may move it in or out of the list. */
        size_t n = d->n_hot;
        Process **hot = hot_copy(d, false);
        if (!hot)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                Process *p = hot[i];
                if (wants_ksm_stat(p) && !slow_backing_off(p, now)) {
                        r = mm_reader_queue(d->reader, MM_READ_KSM_STAT, p->pid, p->start_time_ticks);
                        if (r == -ENOMEM)
                                return r;
                }
                if (plan) {
                        r = plan_process(d, p, now, plan);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

void discovery_get_status(Discovery *d, DiscoveryStatus *ret) {
        DiscoveryStatus s = { .mode = d->mode };

        strscpy(s.mode_reason, sizeof s.mode_reason, d->mode_reason);
        s.processes = process_table_size(d->table);
        s.full_scans = d->full_scans;
        s.overflow_resyncs = d->overflow_resyncs;
        s.last_scan_usec = d->last_scan_duration_usec;
        if (d->events)
                proc_events_get_counters(d->events, &s.events);
        mm_reader_get_counters(d->reader, &s.mm_reads);
        s.policies = d->policies.n;
        /* Counted as processes change (index_update), not by a walk. */
        s.slow_processes = d->n_slow;
        memcpy(s.verdicts, d->verdicts, sizeof s.verdicts);
        *ret = s;
}
