/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "fileio.h"
#include "ksm-sysfs.h"
#include "ksmd.h"
#include "log-messages.h"
#include "log.h"
#include "process-read.h"
#include "procfs.h"
#include "tracefs.h"
#include "tuner.h"
#include "util.h"

/* What one read of trace_pipe may take on the loop: ksm_enter lines are
 * ~90 bytes, so this is thousands of them; a window's worth is read with
 * the larger budget once the window is closed. */
#define PIPE_READ_BUDGET (256 * 1024)
#define WINDOW_READ_BUDGET (4 * 1024 * 1024)
/* Without contention in sight a window is still taken now and then, to
 * learn the kernel's locking core and catch trylock failures (which do not
 * show as blocked time). */
#define QUIET_WINDOW_FACTOR 10
/* A window is cut short when ksmd scans fast: every scanned page costs it
 * about two mmap lock acquisitions (the page walk and the merge), each two
 * events, so at 250,000 pages/s a 200 ms window would overflow the ring and
 * cost the daemon tens of ms of parsing. Aim at this many ksmd events. */
#define WINDOW_KSMD_EVENTS 50000.0
#define WINDOW_MIN_USEC (10 * USEC_PER_MSEC)
#define MAINTENANCE_SAMPLE_FACTOR 5
/* Windows while bursting: every BURST_WINDOW_GAP for the first
 * BURST_WINDOWS of a burst, every BURST_WINDOW_SLOW_GAP after. */
#define BURST_WINDOW_GAP_USEC (500 * USEC_PER_MSEC)
#define BURST_WINDOWS 4
#define BURST_WINDOW_SLOW_GAP_USEC (5 * USEC_PER_SEC)
/* Each window switches its events on and off, patching kernel text
 * (tracefs.c): 1.5-3 ms each way on the test machine's 6.18, once 38 ms;
 * 1-110 ms under TCG (the vmkernel guests). Windows come no closer than
 * this many times what a window's two switches have cost on average, so
 * that switching takes at most a tenth of the daemon's time wherever it is
 * slow; at 50 times, the patched TCG guest's windows came ~5 s apart and
 * in 600 s none caught khugepaged dropping a contended lock (fix 002),
 * which it had within 100 s at 500 ms apart. */
#define WINDOW_SWITCH_SPACING 10
/* A burst window that saw ksmd take fewer mmap locks than this fell into
 * its sleep (a burst's sleep grows to ~300 ms after barren scans, its
 * windows are ~70 ms): it says nothing about contention and does not count
 * among the BURST_WINDOWS quick ones. Seen in the contention test on a
 * loaded machine: 4 windows, one with no lock of ksmd's, the burst over
 * before a window caught the contender. */
#define WINDOW_MIN_KSMD_LOCKS 16
/* No window while ksmd tracks less than this (4 MiB): maybe_start_window. */
#define WINDOW_MIN_PAGES 1024
/* A full scan's end wakes the controller during a burst, but not more often
 * than this: a small set is scanned hundreds of times a second, and there
 * a scan's end is no moment to catch. */
#define SCAN_END_MIN_GAP_USEC (20 * USEC_PER_MSEC)

/* Recent ksm_enter events, for the contenders' age in full scans. */
#define RECENT_ENTERS 64
/* Any user's fork loop calling PR_SET_MEMORY_MERGE makes thousands of
 * ksm_enter events a second. They wake the controller at most once per
 * BurstInterval= (the ones in between wake it once at the interval's end),
 * and at most ENTER_LOG_LINES of them per ENTER_LOG_PERIOD are logged, then
 * one line says how many were not. */
#define ENTER_WAKE_MIN_GAP_USEC (100 * USEC_PER_MSEC)
#define ENTER_LOG_LINES 10
#define ENTER_LOG_PERIOD_USEC (10 * USEC_PER_SEC)
/* A ksm_enter is taken into account at the next tick, once the proc
 * connector can tell whether it was a fork's: ksm_fork() puts the child's mm
 * into KSM in the parent's context, so the event names the parent. The
 * child's pages are the parent's, shared copy-on-write, and there is nothing
 * to merge in them; a burst for each fork of a process in KSM was measured
 * here (2026-12-04): a PR_SET_MEMORY_MERGE process of 256 MiB forking a
 * short-lived child every 2 s made 20 bursts in 40 s, 3.2 s of ksmd against
 * none without the forks (each burst a few full scans of all ksmd tracks:
 * seconds of ksmd each on a 16 GiB host). The fork event follows the
 * ksm_enter within the same fork() call, but only after the parent's page
 * tables were copied (ksm_fork() runs first in dup_mmap(), the connector at
 * the end of copy_process(): ~10 ms a GiB of parent), and the loop may read
 * it up to a storm batch later. So an event whose fork is not in yet waits
 * for it up to FORK_MATCH_NSEC, but only where the process's mm was in KSM
 * before the event (its ksm_stat said so, or it has merged pages: the
 * manager's lookup): an mm enters KSM once, and such an event is another
 * mm's. A process entering for the first time is neither held back nor
 * matched with a fork (vfork and posix_spawn make fork events too). An exec of a process with PR_SET_MEMORY_MERGE puts its new mm
 * into KSM in its own context, with no fork event: held for the window,
 * then a process entering, and bursts. */
#define PENDING_ENTERS 64
#define FORK_MATCH_NSEC (500 * NSEC_PER_MSEC)

struct Tuner {
        sd_event *event;
        Root *root;
        int ksmd_pid;
        void (*wake)(void *userdata);
        void *userdata;

        Model model;
        Controller controller;
        bool started;

        Tracer *tracer;
        sd_event_source *pipe_source;
        sd_event_source *window_source;
        uint64_t window_start_usec;
        double window_scale;            /* of the computed length: shrinks after a window overflowed */
        uint64_t wait_floor_nsec;       /* the tracing's share of a ksmd wait, last measured */
        unsigned burst_windows;         /* windows taken in the current burst */
        uint64_t window_scanned_before;
        uint64_t window_ksmd_cpu_before;
        bool window_ksmd_cpu_ok;
        ContentionWindow window;
        KsmLockCore logged_core;
        int khugepaged_pid;
        FixState logged_fix[_KERNEL_FIX_MAX];
        SmartScanWorkaround smart_scan;
        uint64_t stop_seq, stop_skipped;        /* the latest ksm_stop_scan read cleanly */
        bool stop_clean;
        bool smart_scan_restore;        /* plan smart_scan=1 once: the workaround's, or a killed instance's */
        uint64_t created_usec;
        uint64_t lost_logged;
        bool have_unmet;
        uint64_t unmet_pages;           /* tuner_note_unmet(), for the next tick */
        uint64_t departed_rmap;         /* tuner_note_departed(), for the next tick */
        struct {
                int pid;
                uint64_t full_scans;
        } enters[RECENT_ENTERS];
        unsigned n_enters;              /* ring: the newest at (n_enters - 1) % RECENT_ENTERS */
        uint64_t enter_gap_usec;        /* BurstInterval= */
        uint64_t enter_woke_usec;       /* the latest wake-up for a ksm_enter */
        uint64_t enter_last_usec;       /* the latest ksm_enter */
        sd_event_source *enter_source;  /* the coalesced wake-up, armed while one is due */
        bool pipe_paused;               /* not watched until enter_source fires */
        uint64_t enter_log_since_usec;  /* the current log period */
        unsigned enter_logged;          /* lines in it */
        uint64_t enter_suppressed;      /* events in it not logged */
        TunerForkLookup fork_child;
        void *fork_userdata;
        struct PendingEnter {
                int pid;
                char comm[TASK_COMM_SIZE];
                uint64_t event_nsec;    /* trace clock (mono) */
                uint64_t seen_usec;     /* CLOCK_MONOTONIC when read */
                bool logged;
        } pending_enters[PENDING_ENTERS];
        unsigned n_pending_enters;
        uint64_t forks_seen;            /* ksm_enter events that were forks' */
};

static void on_trace_event(const TraceEvent *e, void *userdata);

static int on_enter_wake(sd_event_source *s, uint64_t usec, void *userdata) {
        Tuner *t = userdata;
        /* The pipe rested while the wake-up was due (on_pipe): what came
         * meanwhile is read now, in one go. */
        t->enter_woke_usec = now_usec(CLOCK_MONOTONIC);
        if (t->pipe_paused) {
                t->pipe_paused = false;
                (void) sd_event_source_set_enabled(t->pipe_source, SD_EVENT_ON);
                (void) tracer_read(t->tracer, PIPE_READ_BUDGET, on_trace_event, t);
        }
        if (t->wake)
                t->wake(t->userdata);
        return 0;
}

/* Wakes the controller now, or once at the end of the burst interval that
 * the latest wake-up started. Returns whether it woke it now. */
static bool enter_wake(Tuner *t, uint64_t now) {
        int on = SD_EVENT_OFF;
        if (!t->wake)
                return false;
        if (t->enter_woke_usec == 0 || now - t->enter_woke_usec >= t->enter_gap_usec) {
                t->enter_woke_usec = now;
                t->wake(t->userdata);
                return true;
        }
        if (!t->enter_source || (sd_event_source_get_enabled(t->enter_source, &on) >= 0 && on != SD_EVENT_OFF))
                return false;   /* one is due already (or no timer: the next tick sees it) */
        (void) sd_event_source_set_time(t->enter_source, t->enter_woke_usec + t->enter_gap_usec);
        (void) sd_event_source_set_enabled(t->enter_source, SD_EVENT_ONESHOT);
        return false;
}

/* Ends a log period that is over, with a line for what it left out. */
static void enter_log_roll(Tuner *t, uint64_t now) {
        if (now - t->enter_log_since_usec < ENTER_LOG_PERIOD_USEC)
                return;
        if (t->enter_suppressed > 0)
                log_debug("ksm_enter: %" PRIu64 " more processes made memory mergeable in the last %" PRIu64
                          " s (suppressed %" PRIu64 " lines)",
                          t->enter_suppressed, (now - t->enter_log_since_usec) / USEC_PER_SEC, t->enter_suppressed);
        t->enter_log_since_usec = now;
        t->enter_logged = 0;
        t->enter_suppressed = 0;
}

/* Whether this event gets a log line. */
static bool enter_log_allowed(Tuner *t, uint64_t now) {
        enter_log_roll(t, now);
        if (t->enter_logged < ENTER_LOG_LINES) {
                t->enter_logged++;
                return true;
        }
        t->enter_suppressed++;
        return false;
}

/* A seed fix whose state changed: once, with the evidence and what the
 * daemon does now because of it. */
static void log_kernel_fixes(Tuner *t) {
        const KernelFixes *k = &t->model.fixes;
        for (KernelFixId i = 0; i < _KERNEL_FIX_MAX; i++) {
                if (k->fix[i].state == t->logged_fix[i])
                        continue;
                t->logged_fix[i] = k->fix[i].state;
                log_struct(LOG_NOTICE, LOG_FIELDS(.decision = "kernel-fix"), "Kernel fix %s (%s): %s, %s; %s",
                           kernel_fix_seed(i), kernel_fix_id_to_string(i), fix_state_to_string(k->fix[i].state),
                           k->fix[i].evidence, kernel_fix_adaptation(k, i));
        }
}

/* Seed 004's cheap evidence: pages_skipped at each full scan's end. ksmd
 * sleeps sleep_millisecs after the scan that ends its batch, so a read
 * within the first half of that sleep counts that scan alone; a read later
 * (a window kept the pipe off, a busy loop) is dropped, and so is the next
 * scan, which it would have to be paired with. */
static void note_scan_end(Tuner *t, const TraceEvent *e) {
        uint64_t skipped, now = now_usec(CLOCK_MONOTONIC) * NSEC_PER_USEC;
        bool clean = t->model.smart_scan && !t->smart_scan.active && t->model.sleep_ms >= 10 &&
                     now >= e->time_nsec && now - e->time_nsec < t->model.sleep_ms * NSEC_PER_USEC * 1000 / 2 &&
                     ksm_sysfs_read_one(t->root, KSM_PAGES_SKIPPED, &skipped) >= 0;

        if (clean && t->stop_clean && e->seq == t->stop_seq + 1 && skipped >= t->stop_skipped &&
            kernel_fixes_note_scan_skips(&t->model.fixes, e->seq, skipped - t->stop_skipped))
                log_kernel_fixes(t);
        t->stop_clean = clean;
        t->stop_seq = e->seq;
        t->stop_skipped = clean ? skipped : 0;
}

/* A process entered KSM at now: the model starts a burst for it, and its
 * age as a contender counts from here. */
static void note_enter(Tuner *t, int pid, const char *comm, uint64_t now, bool logged) {
        t->enter_last_usec = MAX(t->enter_last_usec, now);
        model_note_ksm_enter(&t->model, now, pid, comm);
        t->enters[t->n_enters % RECENT_ENTERS].pid = pid;
        t->enters[t->n_enters % RECENT_ENTERS].full_scans = t->model.full_scans;
        t->n_enters++;
        if (logged)
                log_debug("ksm_enter: pid %d (%s) made memory mergeable", pid, CESCAPE(comm, CESCAPE_ASCII));
}

/* A tick at due (CLOCK_MONOTONIC), or sooner, through the coalesced
 * wake-up's timer. */
static void wake_at(Tuner *t, uint64_t due) {
        int on = SD_EVENT_OFF;
        uint64_t armed = UINT64_MAX;
        if (!t->enter_source)
                return;
        if (sd_event_source_get_enabled(t->enter_source, &on) >= 0 && on != SD_EVENT_OFF)
                (void) sd_event_source_get_time(t->enter_source, &armed);
        if (armed <= due)
                return;
        (void) sd_event_source_set_time(t->enter_source, due);
        (void) sd_event_source_set_enabled(t->enter_source, SD_EVENT_ONESHOT);
}

/* The ksm_enter events read since the last tick, in their order: a fork's
 * is told apart (PENDING_ENTERS), the others are processes entering. all:
 * decide every one now (a full ring, the lookup going away), none waits
 * for its fork event. */
static void resolve_enters_now(Tuner *t, bool all) {
        uint64_t now_ns = now_usec(CLOCK_MONOTONIC) * NSEC_PER_USEC, due = UINT64_MAX;
        unsigned kept = 0;
        for (unsigned i = 0; i < t->n_pending_enters; i++) {
                const struct PendingEnter *p = &t->pending_enters[i];
                bool in_ksm = false;
                int child = t->fork_child ? t->fork_child(t->fork_userdata, p->pid, p->event_nsec,
                                                          p->event_nsec + FORK_MATCH_NSEC, &in_ksm)
                                          : 0;
                /* Only where its mm was in KSM before: a fork enters the
                 * child's only then, and a process entering for the first
                 * time that spawns a program at once (vfork and
                 * posix_spawn make fork events too, with no ksm_enter) is
                 * still an arrival. */
                if (child > 0 && in_ksm) {
                        t->forks_seen++;
                        if (p->logged)
                                log_debug("ksm_enter: pid %d (%s) forked pid %d, whose mm entered KSM with the "
                                          "parent's pages: nothing new to merge, no burst",
                                          p->pid, CESCAPE(p->comm, CESCAPE_ASCII), child);
                        continue;
                }
                if (!all && in_ksm && now_ns < p->event_nsec + FORK_MATCH_NSEC) {
                        /* its mm was in KSM already: another mm's, a fork's
                         * whose event is not in yet (or an exec's) */
                        due = MIN(due, (p->event_nsec + FORK_MATCH_NSEC) / NSEC_PER_USEC + 1);
                        t->pending_enters[kept++] = *p;
                        continue;
                }
                note_enter(t, p->pid, p->comm, p->seen_usec, p->logged);
        }
        t->n_pending_enters = kept;
        if (due != UINT64_MAX)
                wake_at(t, due);
}

static void resolve_enters(Tuner *t) {
        resolve_enters_now(t, false);
}

static void on_trace_event(const TraceEvent *e, void *userdata) {
        Tuner *t = userdata;

        if (e->type == TRACE_EVENT_KSM_STOP_SCAN)
                note_scan_end(t, e);
        if (e->type == TRACE_EVENT_KSM_STOP_SCAN) {
                /* ksmd ended its batch with the scan and sleeps now for
                 * sleep_millisecs: a burst that this scan ends must change
                 * the knobs before it starts the next one at burst rate
                 * (measured in S4: the 100000-page batch after a late
                 * back-off cost ~0.2 s of ksmd CPU). */
                TuneMode mode = t->controller.mode;
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                /* Not while processes keep entering KSM: each arrival
                 * restarts the count of barren scans (model_note_ksm_enter),
                 * so no scan end can end the burst then, and a fork loop
                 * calling PR_SET_MEMORY_MERGE keeps the mms small and the
                 * scans short: their ends woke a tick 20 times a second. The
                 * arrivals' own wake-up comes once per burst interval. */
                bool arriving = t->enter_last_usec > 0 && now - t->enter_last_usec < t->enter_gap_usec;
                if (tune_mode_is_burst(mode) && t->wake && !arriving &&
                    now - t->model.time_usec >= SCAN_END_MIN_GAP_USEC)
                        t->wake(t->userdata);
                return;
        }
        if (e->type == TRACE_EVENT_KSM_ENTER) {
                int pid = e->tgid > 0 ? e->tgid : e->pid;
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                char comm[TASK_COMM_SIZE];

                strscpy(comm, sizeof comm, e->comm);
                bool logged = log_get_max_level() >= LOG_DEBUG && enter_log_allowed(t, now);
                bool woke = enter_wake(t, now);
                /* The trace's tgid and comm are hints, often a former
                 * task's (process_read_task_tgid); the task, if it is still
                 * there, knows better (neither read takes the mmap lock).
                 * Asked for the events that count and where the hint names
                 * another process, not for every one of a storm. For a task
                 * gone before it could be asked the hint stands: a thread
                 * that entered its process in KSM and exited is common, and
                 * what hangs on this pid is a log line and a contender's
                 * age, never an action (tuner_confirm_holders is stricter). */
                if (logged || woke || (e->tgid > 0 && e->tgid != e->pid)) {
                        _cleanup_close_ int dfd = -EBADF;
                        _cleanup_free_ char *c = NULL;
                        int tgid;
                        if (process_read_task_tgid(t->root, e->pid, UINT64_MAX, &tgid) >= 0) {
                                if (logged && tgid != pid)
                                        log_debug("ksm_enter: the trace said pid %d for task %d, which belongs to pid %d",
                                                  pid, e->pid, tgid);
                                pid = tgid;
                        }
                        if (root_open_pid_dir(t->root, pid, &dfd) >= 0 && read_one_line_at(dfd, "comm", &c) >= 0)
                                strscpy(comm, sizeof comm, c);
                }
                if (!t->fork_child) {
                        note_enter(t, pid, comm, now, logged);
                        return;
                }
                if (t->n_pending_enters == PENDING_ENTERS)
                        resolve_enters(t); /* a storm between two ticks: what can be told, now */
                if (t->n_pending_enters == PENDING_ENTERS)
                        resolve_enters_now(t, true);
                struct PendingEnter *p = &t->pending_enters[t->n_pending_enters++];
                *p = (struct PendingEnter) { .pid = pid, .event_nsec = e->time_nsec, .seen_usec = now,
                                             .logged = logged };
                strscpy(p->comm, sizeof p->comm, comm);
        }
}

static int on_pipe(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Tuner *t = userdata;
        int on = SD_EVENT_OFF;
        int r = tracer_read(t->tracer, PIPE_READ_BUDGET, on_trace_event, t);
        if (r < 0) {
                log_warning_errno(r, "Cannot read the tracefs instance's trace_pipe, no longer watching ksm_enter: %m");
                (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
                return 0;
        }
        /* A coalesced wake-up is due: nothing read before it changes what
         * it does, so the pipe rests until then rather than wake the loop
         * for every event of a storm (buffer_percent=0 wakes it per event). */
        if (t->enter_source && sd_event_source_get_enabled(t->enter_source, &on) >= 0 && on != SD_EVENT_OFF) {
                t->pipe_paused = true;
                (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
        }
        return 0;
}

/* Fills what the trace cannot know about a contender: how much of its
 * memory is merged (ksm_merging_pages is lock-free, unlike ksm_stat) and
 * its start time, to guard the action against pid reuse. */
static void contender_facts(Tuner *t, ModelContender *x) {
        ProcStat st;
        uint64_t pages;

        if (process_read_brief(t->root, x->pid, &st, &pages) < 0)
                return;
        x->start_time_ticks = st.start_time_ticks;
        strscpy(x->comm, sizeof x->comm, st.comm);
        if (pages != UINT64_MAX)
                x->merging_pages = (int64_t) pages;
        for (unsigned i = 0; i < MIN(t->n_enters, (unsigned) RECENT_ENTERS); i++)
                if (t->enters[i].pid == x->pid && (!x->entered_seen || t->enters[i].full_scans > x->entered_full_scans)) {
                        x->entered_seen = true;
                        x->entered_full_scans = t->enters[i].full_scans;
                }
}

/* The merged pages of each followed contender that waits for them to hold
 * still, read for the controller's judgement between windows: -1 once the
 * process is gone or its pid names another. */
static void note_pending_contenders(Tuner *t) {
        for (size_t i = 0; i < CONTROLLER_MAX_FOLLOWED; i++) {
                const FollowedContender *f = &t->controller.followed[i];
                ProcStat st;
                uint64_t pages;
                int64_t merging = -1;

                if (f->pid == 0 || !f->pending)
                        continue;
                if (process_read_brief(t->root, f->pid, &st, &pages) >= 0 &&
                    st.start_time_ticks == f->start_time_ticks && pages != UINT64_MAX)
                        merging = (int64_t) pages;
                controller_note_merging_pages(&t->controller, f->pid, f->start_time_ticks, merging);
        }
}

/* What a window's two switches of its events (on, then off) cost on
 * average so far, ns; 0 before the first. */
static uint64_t window_switch_nsec(const Tuner *t) {
        unsigned switches;
        uint64_t ns = tracer_switch_nsec(t->tracer, &switches);
        return switches ? 2 * ns / switches : 0;
}

/* Whether the next window comes BURST_WINDOW_GAP after this one, not
 * BURST_WINDOW_SLOW_GAP: a burst's first BURST_WINDOWS, those that follow
 * a contender seen once, and those of a burst whose samples find ksmd
 * blocked on an mmap lock (ContentionMinBlocked=): a window tells whose.
 * Seen in Q1 (2026-12-04): a burst's four quick windows came while the
 * late guests booted, before ksmd reached the churning one; its ticks then
 * sampled ksmd blocked 15-92% of the time for 8 s, the windows 5 s apart
 * never showed that guest, and it was never judged. */
static bool windows_soon(const Tuner *t, const TuningConfig *cfg, uint64_t now) {
        if (controller_follow_until(&t->controller, now) > now)
                return true;
        if (!tune_mode_is_burst(t->controller.mode))
                return false;
        return t->burst_windows < BURST_WINDOWS ||
               t->model.blocked_fraction * 100.0 >= cfg->contention_min_blocked_percent;
}

/* The "-locks" instance carries the window's events only (tracefs.c). */
static void on_window_event(const TraceEvent *e, void *userdata) {
        Tuner *t = userdata;
        contention_window_add(&t->window, e);
}

/* The process to blame for each mm's write locks, from a writer task's
 * own /proc entry: the trace's tgid is a hint that may name a former task
 * of that pid number (process_read_task_tgid), and blaming it would exclude
 * an innocent process. Any writer task still running tells it (the tasks
 * of one mm are one process's). When all are gone the hint is trusted only
 * where it names one of them itself, its process's main thread; a task
 * that started after its own event is not the writer (its number was
 * reused), and does not vouch for it. The events' times are the trace's
 * CLOCK_MONOTONIC ("mono", tracefs.c); /proc/PID/stat counts from boot, so
 * each is moved to CLOCK_BOOTTIME by the two clocks' offset now. An event
 * time outside the window (another trace clock) falls back to the
 * window's start: a thread started within the window then reads as
 * reused, and its process is judged by the next window instead. */
void tuner_confirm_holders(ContentionWindow *w, const Root *root, uint64_t window_start_usec, uint64_t mono_now,
                           uint64_t boot_now) {
        for (size_t i = 0; i < w->n_holders; i++) {
                LockHolder *h = &w->holders[i];
                bool confirmed = false, main_gone = false;
                if (h->n_tids == 0 || h->tgid <= 0)
                        continue;
                /* one that ksmd never met is blamed for nothing: not read */
                if (h->ksmd_waits == 0 && h->ksmd_trylock_failures == 0 && h->ksmd_wait_nsec + h->ksmd_work_nsec == 0)
                        continue;
                for (unsigned j = 0; j < h->n_tids && !confirmed; j++) {
                        uint64_t at = h->tid_nsec[j] / NSEC_PER_USEC;
                        if (at < window_start_usec || at > mono_now)
                                at = window_start_usec;
                        uint64_t started_by = boot_now - MIN(boot_now, mono_now - at);
                        int tgid;
                        int r = process_read_task_tgid(root, h->tids[j], started_by, &tgid);
                        if (r >= 0) {
                                if (tgid != h->tgid)
                                        log_debug("contention window: writer task %d belongs to pid %d, not pid %d "
                                                  "as the trace said", h->tids[j], tgid, h->tgid);
                                h->tgid = tgid;
                                confirmed = true;
                        } else if (r != -ESTALE && h->tids[j] == h->tgid)
                                main_gone = true;
                }
                if (!confirmed && !main_gone) {
                        log_debug("contention window: the %u writer task%s of pid %d (the trace's) are gone or their "
                                  "numbers reused, and it cannot be confirmed; not blaming it",
                                  h->n_tids, h->n_tids == 1 ? "" : "s", h->tgid);
                        h->tgid = -1;
                }
        }
}

static int on_window_end(sd_event_source *s, uint64_t usec, void *userdata) {
        Tuner *t = userdata;
        uint64_t now = now_usec(CLOCK_MONOTONIC), scanned = 0;
        int r;

        (void) tracer_window_stop(t->tracer);
        uint64_t cpu = 0;
        bool cpu_ok = t->window_ksmd_cpu_ok && ksmd_read_cpu_nsec(t->root, t->ksmd_pid, &cpu) >= 0;
        r = tracer_read_window(t->tracer, WINDOW_READ_BUDGET, on_window_event, t);
        if (r >= (int) WINDOW_READ_BUDGET)
                t->window.truncated = true;
        if (cpu_ok && cpu >= t->window_ksmd_cpu_before) {
                t->window.ksmd_cpu_known = true;
                t->window.ksmd_cpu_nsec = cpu - t->window_ksmd_cpu_before;
        }
        (void) sd_event_source_set_enabled(t->window_source, SD_EVENT_OFF);
        if (r < 0) {
                log_debug_errno(r, "Cannot read the contention window: %m");
                return 0;
        }

        if (ksm_sysfs_read_one(t->root, KSM_PAGES_SCANNED, &scanned) >= 0 && scanned >= t->window_scanned_before)
                scanned -= t->window_scanned_before;
        else
                scanned = 0;
        contention_window_finish(&t->window, t->wait_floor_nsec);
        if (t->window.ksmd_wait_floor_measured)
                t->wait_floor_nsec = t->window.ksmd_wait_floor_nsec;
        tuner_confirm_holders(&t->window, t->root, t->window_start_usec, now_usec(CLOCK_MONOTONIC),
                              now_usec(CLOCK_BOOTTIME));
        model_add_window(&t->model, &t->window, now, now - t->window_start_usec, scanned);
        for (size_t i = 0; i < t->model.n_contenders; i++) {
                ModelContender *x = &t->model.contenders[i];
                contender_facts(t, x);
                char on_it[48] = "its time on it not used";
                if (x->scan_evidence_short)
                        strscpy(on_it, sizeof on_it, "too little of its time on it seen yet");
                else if (x->scan_blocked_fraction > 0)
                        snprintf(on_it, sizeof on_it, "%.0f%% of its time on it", x->scan_blocked_fraction * 100.0);
                log_debug("contender pid %d (%s): ksmd blocked %.0f%% of the window, %s, %.0f write locks/s, "
                          "%" PRIi64 " pages merged%s",
                          x->pid, x->comm, x->ksmd_blocked_fraction * 100.0, on_it, x->write_locks_per_sec,
                          x->merging_pages, x->entered_seen ? ", entered KSM while watched" : "");
        }

        const ContentionWindow *w = &t->window;
        if (w->ksmd_acquired < WINDOW_MIN_KSMD_LOCKS && t->burst_windows > 0 &&
            tune_mode_is_burst(t->controller.mode))
                t->burst_windows--;
        log_debug("contention window: %" PRIu64 " events, ksmd %" PRIu64 " locks (%" PRIu64 " failed) for %" PRIu64
                  " scanned pages in %" PRIu64 " ms, ksmd waited %.0f%% of its work (%.1f ms CPU, %.1f ms waiting beyond the "
                  "%" PRIu64 " ns of tracing in each%s)%s, %zu contenders, %" PRIu64 " lost%s; its events switched on and off in "
                  "%.1f ms on average",
                  w->events, w->ksmd_acquired, w->ksmd_trylock_failures, scanned,
                  (now - t->window_start_usec) / USEC_PER_MSEC, t->model.window_ksmd_blocked_fraction * 100.0,
                  w->ksmd_cpu_known ? (double) w->ksmd_cpu_nsec / 1e6 : -1.0, (double) w->ksmd_wait_nsec / 1e6,
                  w->ksmd_wait_floor_nsec, w->ksmd_wait_floor_measured ? "" : ", as last measured",
                  contention_window_complete(w) ? "" : " (over the span of its events read)", t->model.n_contenders,
                  w->lost_events, w->truncated ? ", read cut at its budget" : "",
                  (double) window_switch_nsec(t) / 1e6);
        log_kernel_fixes(t);
        if (t->model.lock_core != t->logged_core) {
                log_info("ksmd's mmap locking: %s (%" PRIu64 " mmap locks for %" PRIu64 " scanned pages, %" PRIu64
                         " failed trylocks)",
                         ksm_lock_core_to_string(t->model.lock_core), w->ksmd_acquired, scanned,
                         w->ksmd_trylock_failures);
                t->logged_core = t->model.lock_core;
        }
        /* The writers' events fill the ring too, and their rate is not
         * known beforehand (a process looping mmap/munmap wrote ~400,000
         * a second and overflowed a 98 ms window): a window that lost
         * events, or more than the read budget, halves the next one, a
         * clean one lets it grow back. */
        t->window_scale = !contention_window_complete(w) ? MAX(t->window_scale / 2, 1.0 / 64)
                                             : MIN(t->window_scale * 1.25, 1.0);
        if (w->lost_events > 0 && t->lost_logged++ == 0)
                log_notice("Contention window lost %" PRIu64 " trace events (ring full); figures are a lower bound.",
                           w->lost_events);
        return 0;
}

static void maybe_start_window(Tuner *t, const Snapshot *s, const TuningConfig *cfg) {
        const ModelTick *tick = model_tick(&t->model, 0);
        uint64_t now = s->time_usec, interval = cfg->contention_interval_usec;
        int r;

        if (!tracer_has_mmap_lock_events(t->tracer) || t->ksmd_pid <= 0 || tracer_window_active(t->tracer))
                return;
        if (!tick || !tick->run || tick->scanned_pages == 0)
                return;         /* ksmd idle: nothing to learn */
        bool bursting = tune_mode_is_burst(t->controller.mode);
        /* Bursting, or following a contender seen once (controller.c): a
         * window every BURST_WINDOW_GAP until one shows it again. */
        if (controller_quick_windows(&t->controller, now)) {
                /* A window early in every burst and every second while it
                 * lasts, whatever the samples say:
                 * a ksmd waiting for an mmap_lock whose writer is running
                 * spins (rwsem optimistic spinning) and shows as R, not D.
                 * Measured on 6.18, S2 with one churn thread: the samples
                 * saw ksmd blocked 0.1% of the time while its CPU per page
                 * tripled and the contender fell to a seventh of its rate;
                 * the trace window times the wait itself. The window is cut
                 * to the scan rate (WINDOW_KSMD_EVENTS), so each costs a
                 * parse of up to ~30,000 events; one window alone proved
                 * too little (a window at a burst's start, in ksmd's fast
                 * checksum pass, saw 2-10% waiting where the next pass
                 * waited 40-65% of the time). */
                if (bursting && t->window_start_usec < t->controller.mode_since_usec)
                        t->burst_windows = 0;   /* the first of this burst: at once */
                else if (now - t->window_start_usec <
                         (windows_soon(t, cfg, now) ? BURST_WINDOW_GAP_USEC : BURST_WINDOW_SLOW_GAP_USEC))
                        return;
                if (bursting)
                        t->burst_windows++;
                interval = 0;
        } else if (t->model.blocked_fraction * 100.0 < cfg->contention_min_blocked_percent) {
                /* Nothing suggests contention: an occasional window, and
                 * no more during a burst, when every lock call of a fast
                 * ksmd would be traced for nothing. */
                if (bursting)
                        return;
                interval *= QUIET_WINDOW_FACTOR;
                /* The first quiet window comes one quiet interval after
                 * start, not at once: on a busy host a window traces every
                 * task's write locks, and there is no reason for one yet. */
                if (t->window_start_usec == 0 && now - t->created_usec < interval)
                        return;
        }
        if (t->window_start_usec != 0 && now - t->window_start_usec < interval)
                return;
        /* However soon one is wanted, switching the events stays a small
         * share of the daemon's time (WINDOW_SWITCH_SPACING). */
        if (t->window_start_usec != 0 &&
            now - t->window_start_usec < WINDOW_SWITCH_SPACING * window_switch_nsec(t) / NSEC_PER_USEC)
                return;

        /* A set this small is scanned in a few ms at any rate, and a burst
         * for it ends after two barren full scans: no stall behind a lock
         * can cost ksmd or its holder much, and a window would cost the
         * daemon more than it could find. A fork loop calling
         * PR_SET_MEMORY_MERGE (test-daemon-enter-storm.sh: 500 children a
         * second, ~1 MiB mergeable in all) burst every few seconds, and its
         * windows' switching took 20% of a core. */
        if (t->model.rmap_items + t->model.unmet_pages < WINDOW_MIN_PAGES)
                return;

        contention_window_init(&t->window, t->ksmd_pid);
        contention_window_set_khugepaged(&t->window, t->khugepaged_pid);
        uint64_t ns0 = tracer_switch_nsec(t->tracer, NULL);
        r = tracer_window_start(t->tracer, t->ksmd_pid, t->khugepaged_pid,
                                kernel_fixes_want_vma_probe(&t->model.fixes));
        if (r >= 0)
                log_debug("contention window started: its events switched on in %.1f ms",
                          (double) (tracer_switch_nsec(t->tracer, NULL) - ns0) / 1e6);
        if (r < 0) {
                log_debug_errno(r, "Cannot start a contention window: %m");
                t->window_start_usec = now;
                return;
        }
        contention_window_set_vma_probe(&t->window, tracer_window_vma_probe_armed(t->tracer));
        t->window_start_usec = now_usec(CLOCK_MONOTONIC);
        t->window_ksmd_cpu_ok = ksmd_read_cpu_nsec(t->root, t->ksmd_pid, &t->window_ksmd_cpu_before) >= 0;
        /* As of now, not of the snapshot: the pages ksmd scanned since the
         * tick began have no events in the window (a TCG guest showed
         * 1425 pages "scanned" by a window with none of ksmd's locks). */
        if (ksm_sysfs_read_one(t->root, KSM_PAGES_SCANNED, &t->window_scanned_before) < 0)
                t->window_scanned_before = s->ksm.value[KSM_PAGES_SCANNED];
        /* the faster of what ksmd just did and what it was just told to do */
        double rate = tick->dt_usec ? (double) tick->scanned_pages * USEC_PER_SEC / (double) tick->dt_usec : 0;
        rate = MAX(rate, t->controller.rate_pages_per_sec);
        uint64_t len = cfg->contention_window_usec;
        if (rate > 0)
                len = MIN((uint64_t) (WINDOW_KSMD_EVENTS / (4.0 * rate) * USEC_PER_SEC), len);
        len = MAX((uint64_t) ((double) len * t->window_scale), WINDOW_MIN_USEC);
        (void) sd_event_source_set_time(t->window_source, t->window_start_usec + len);
        (void) sd_event_source_set_enabled(t->window_source, SD_EVENT_ONESHOT);
}

int tuner_new(sd_event *event, Root *root, int ksmd_pid, const Config *config, void (*wake)(void *userdata),
              void *userdata, Tuner **ret) {
        _cleanup_(tuner_freep) Tuner *t = NULL;
        const TuningConfig *cfg = &config->tuning;
        bool mounted = false;
        int r;

        t = calloc(1, sizeof *t);
        if (!t)
                return -ENOMEM;
        t->event = sd_event_ref(event);
        t->root = root;
        t->ksmd_pid = ksmd_pid;
        t->wake = wake;
        t->userdata = userdata;
        t->created_usec = now_usec(CLOCK_MONOTONIC);
        t->window_scale = 1.0;
        t->enter_gap_usec = MAX(cfg->burst_interval_usec, ENTER_WAKE_MIN_GAP_USEC);
        t->enter_log_since_usec = t->created_usec;
        t->khugepaged_pid = -1;
        model_init(&t->model, page_size(), cfg->min_gain_pages);
        for (KernelFixId i = 0; i < _KERNEL_FIX_MAX; i++)
                t->logged_fix[i] = t->model.fixes.fix[i].state;
        controller_init(&t->controller, cfg, now_usec(CLOCK_MONOTONIC));

        if (!cfg->tracepoints) {
                log_info("Tracepoints=no: tuning from KSM counters and ksmd samples only.");
                *ret = TAKE_PTR(t);
                return 0;
        }
        r = tracer_open(root, cfg->mount_tracefs, &t->tracer, &mounted);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                log_notice_errno(r, "No private tracefs instance (%m): new mergeable memory is noticed from "
                                    "KSM counters only, and mmap lock holders are not attributed.");
                *ret = TAKE_PTR(t);
                return 0;
        }
        if (mounted)
                log_notice("tracefs was not mounted; mounted it at %s.", root->tracefs_path);

        r = sd_event_add_io(event, &t->pipe_source, tracer_fd(t->tracer), EPOLLIN, on_pipe, t);
        if (r < 0)
                return r;
        /* 1 ms accuracy: at the default 250 ms a window cut to 10 ms for a
         * fast ksmd would run up to 260 ms and overflow the ring. */
        r = sd_event_add_time(event, &t->window_source, CLOCK_MONOTONIC, UINT64_MAX, USEC_PER_MSEC, on_window_end, t);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(t->window_source, SD_EVENT_OFF);
        r = sd_event_add_time(event, &t->enter_source, CLOCK_MONOTONIC, UINT64_MAX, USEC_PER_MSEC, on_enter_wake, t);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(t->enter_source, SD_EVENT_OFF);
        char syms[96];
        if (tracer_vma_probe_symbols(t->tracer, syms, sizeof syms) > 0)
                kernel_fixes_set_vma_probe(&t->model.fixes, syms);
        log_info("Private tracefs instance %s/%s: watching ksm_enter%s%s%s.", root->tracefs_path,
                 tracer_name(t->tracer),
                 tracer_has_mmap_lock_events(t->tracer) ? ", sampling mmap_lock contention" : "",
                 syms[0] ? ", kprobes on ksmd's VMA locks: " : "", syms);
        *ret = TAKE_PTR(t);
        return 0;
}

Tuner *tuner_free(Tuner *t) {
        if (!t)
                return NULL;
        sd_event_source_disable_unref(t->pipe_source);
        sd_event_source_disable_unref(t->window_source);
        sd_event_source_disable_unref(t->enter_source);
        tracer_free(t->tracer);
        sd_event_unref(t->event);
        free(t);
        return NULL;
}

/* Seed 004: unless the kernel is known to align smart-scan skips with the
 * scan number, two identical old pages may never be looked at in one scan.
 * Once merging stalled, one full scan with smart_scan=0, then smart_scan
 * back (kernel-fixes.h). The knob goes through the plan, so the knob journal
 * records smart_scan's value from before and a stop or a restart after a
 * SIGKILL puts it back. */
static void smart_scan_step(Tuner *t, const Snapshot *s, DecisionLog *log, Plan *plan) {
        const Model *m = &t->model;
        bool was = t->smart_scan.active;
        char cpu[32];

        if (!ksm_state_has(&s->ksm, KSM_SMART_SCAN))
                return;
        bool now = smart_scan_workaround_step(&t->smart_scan, &t->model.fixes, m->smart_scan, m->scans_without_find,
                                              m->last_scan_skipped > 0, m->pages_unshared + m->pages_volatile > 0,
                                              m->full_scans, (int64_t) m->pages_sharing,
                                              s->ksmd_present ? s->ksmd.cpu_ns : 0, s->time_usec);
        if (now) {
                knob_plan_set(&plan->knobs, KSM_SMART_SCAN, 0);
                if (!was) {
                        const Decision *d = decision_log_add(
                                log, "smart-scan",
                                "%" PRIu64 " full scans without new sharing while smart_scan skipped pages: one full "
                                "scan with smart_scan=0, so that identical pages whose skips fell out of step meet "
                                "(kernel fix 004 %s)",
                                t->smart_scan.stalled_scans,
                                fix_state_to_string(m->fixes.fix[KERNEL_FIX_SMART_SCAN].state));
                        if (d)
                                log_struct(LOG_INFO, LOG_FIELDS(.decision = "smart-scan"), "%s", d->text);
                }
                return;
        }
        if (was) {
                t->smart_scan_restore = true;
                const Decision *d = decision_log_add(
                        log, "smart-scan",
                        "the full scan without smart_scan ended: %" PRIi64 " pages of new sharing, %s of ksmd CPU "
                        "(%" PRIu64 " such scans so far, %s in all); smart_scan=1 again",
                        m->fixes.workaround_scans ? (int64_t) m->pages_sharing - t->smart_scan.sharing_at_start : 0,
                        format_timespan(cpu, sizeof cpu,
                                        (s->ksmd_present && s->ksmd.cpu_ns >= t->smart_scan.cpu_at_start
                                                 ? s->ksmd.cpu_ns - t->smart_scan.cpu_at_start
                                                 : 0) /
                                                NSEC_PER_USEC),
                        t->smart_scan.count, format_timespan((char[32]) {}, 32, t->smart_scan.cpu_nsec / NSEC_PER_USEC));
                if (d)
                        log_struct(LOG_INFO, LOG_FIELDS(.decision = "smart-scan"), "%s", d->text);
                log_kernel_fixes(t);
        }
        if (t->smart_scan_restore) {
                if (!m->smart_scan)
                        knob_plan_set(&plan->knobs, KSM_SMART_SCAN, 1);
                else
                        t->smart_scan_restore = false;
        }
}

int tuner_tick(Tuner *t, const Snapshot *s, const Config *config, DecisionLog *log, Plan *plan,
               uint64_t *ret_next_usec) {
        const TuningConfig *cfg = &config->tuning;
        ControllerDecisions d = {};
        int r;

        if (!t || !s->ksm_present) {
                *ret_next_usec = config->interval_usec;
                return 0;
        }
        t->model.min_gain_pages = MAX(cfg->min_gain_pages, UINT64_C(1));
        t->model.burst_min_new_pages = cfg->burst_min_new_pages;
        t->enter_gap_usec = MAX(cfg->burst_interval_usec, ENTER_WAKE_MIN_GAP_USEC);
        enter_log_roll(t, now_usec(CLOCK_MONOTONIC));
        /* Before the scans that end in this update are counted: a process
         * that left KSM by exiting takes its rmap items and its sharing with
         * it in the next passes, as an excluded one does. Seen on 6.18 in
         * test-daemon-start-late.sh (CI): a merged 32 MiB victim exited and a
         * new one entered while paused; after the resume the pass that met
         * the newcomer's 8,192 pages dropped the departed one's 8,192, net
         * rmap +0 and sharing -6,000, and the burst ended on "2 full scans
         * without new sharing" with the newcomer unmerged. */
        if (t->departed_rmap >= t->model.min_gain_pages) {
                log_debug("a process in KSM with %" PRIu64 " rmap items went away: the next two full scans that "
                          "do not pay are not barren", t->departed_rmap);
                model_note_exclusion(&t->model);
        }
        t->departed_rmap = 0;
        resolve_enters(t);
        model_update(&t->model, s);
        if (t->have_unmet)
                /* after model_update: a fresh estimate counts pages_volatile too */
                model_note_unmet(&t->model, s->time_usec, t->unmet_pages,
                                 model_unmet_floor(&t->model, cfg->burst_min_new_pages));
        t->have_unmet = false;

        const ModelTick *tick = model_tick(&t->model, 0);
        if (tick)
                log_debug("tick: %s scanned %" PRIu64 " full_scans +%" PRIu64 " sharing %+" PRIi64 " rmap %+" PRIi64
                          " (%" PRIu64 " items, %" PRIu64 " volatile) cpu %.1f ms (%.0f ns/page) blocked %.0f%% scans_without_gain %" PRIu64
                          " without_find %" PRIu64 " allowance %.2f s",
                          tune_mode_to_string(t->controller.mode), tick->scanned_pages, tick->full_scans,
                          tick->sharing_delta, tick->rmap_delta, t->model.rmap_items, t->model.pages_volatile,
                          (double) tick->ksmd_cpu_nsec / 1e6, model_cpu_nsec_per_page(&t->model),
                          tick->blocked_fraction * 100.0, t->model.scans_without_gain, t->model.scans_without_find,
                          t->controller.allowance_nsec / 1e9);
        note_pending_contenders(t);
        r = controller_decide(&t->controller, &t->model, cfg, s->time_usec, plan, &d);
        if (r < 0)
                return r;
        for (size_t i = 0; i < d.n; i++) {
                const ControllerDecision *x = &d.d[i];
                /* An exclusion and a readmission act on a process: KSMTUNED2_ACTION= too. */
                const char *id = streq(x->kind, "exclude")   ? KSMTUNED2_MESSAGE_PROCESS_EXCLUDED
                                 : streq(x->kind, "readmit") ? KSMTUNED2_MESSAGE_PROCESS_READMITTED
                                                             : NULL;
                decision_log_add_about(log, DECISION_SUBJECT_PID(x->pid), x->kind, "%s", x->text);
                if (streq(x->kind, "exclude"))
                        model_note_exclusion(&t->model);
                log_struct(LOG_INFO,
                           LOG_FIELDS(.message_id = id, .pid = x->pid, .decision = x->kind,
                                      .action = id ? x->kind : NULL),
                           "%s", x->text);
        }

        smart_scan_step(t, s, log, plan);
        *ret_next_usec = controller_next_interval_usec(&t->controller, cfg, config->interval_usec);
        return 0;
}

void tuner_tick_windows(Tuner *t, const Snapshot *s, const Config *config) {
        if (!t || !s->ksm_present)
                return;
        maybe_start_window(t, s, &config->tuning);
}

void tuner_quiesce(Tuner *t) {
        if (!t || !t->tracer)
                return;
        if (tracer_window_active(t->tracer)) {
                (void) tracer_window_stop(t->tracer);
                (void) sd_event_source_set_enabled(t->window_source, SD_EVENT_OFF);
                (void) tracer_read_window(t->tracer, SIZE_MAX, NULL, NULL);
        }
}

void tuner_note_unmet(Tuner *t, uint64_t pages) {
        if (!t)
                return;
        t->unmet_pages = pages;
        t->have_unmet = true;
}

void tuner_set_fork_lookup(Tuner *t, TunerForkLookup fork_child, void *userdata) {
        if (!t)
                return;
        resolve_enters_now(t, true);
        t->fork_child = fork_child;
        t->fork_userdata = userdata;
}

void tuner_note_departed(Tuner *t, uint64_t rmap_items) {
        if (t)
                t->departed_rmap = MAX(t->departed_rmap, rmap_items);
}

void tuner_forget_unmet(Tuner *t) {
        if (t)
                model_forget_unmet(&t->model);
}

uint64_t tuner_sample_interval_usec(const Tuner *t, uint64_t configured_usec) {
        const ModelTick *tick;
        if (!t)
                return configured_usec;
        if (tune_mode_is_burst(t->controller.mode))
                return configured_usec;
        tick = model_tick(&t->model, 0);
        if (tick && tick->scanned_pages == 0)
                return 0;
        return configured_usec * MAINTENANCE_SAMPLE_FACTOR;
}

void tuner_set_kernel(Tuner *t, const Probe *p, int smart_scan_journaled) {
        if (!t)
                return;
        t->khugepaged_pid = p->khugepaged_pid;
        kernel_fixes_note_unmerge_probe(&t->model.fixes, &p->unmerge);
        log_kernel_fixes(t);
        /* smart_scan=0 with 1 in the journal: an instance was killed in
         * the middle of its workaround scan. */
        if (smart_scan_journaled == 1)
                t->smart_scan_restore = true;
}

const SmartScanWorkaround *tuner_smart_scan_workaround(const Tuner *t) {
        return t ? &t->smart_scan : NULL;
}

const Model *tuner_model(const Tuner *t) {
        return &t->model;
}

const Controller *tuner_controller(const Tuner *t) {
        return &t->controller;
}

int tuner_adopt_exclusion(Tuner *t, int pid, uint64_t start_time_ticks, uint64_t since_usec, bool due,
                          const char *comm, uint64_t now_usec) {
        return controller_adopt_exclusion(&t->controller, pid, start_time_ticks, since_usec, due, comm, now_usec);
}
