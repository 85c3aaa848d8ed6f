/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "controller.h"
#include "string-table.h"
#include "util.h"

/* Rate changes smaller than this are noise: the knobs stay. */
#define RATE_DEADBAND 0.25
/* Outside bursts the knobs are lowered at most this often. */
#define SLOW_CHANGE_INTERVAL_USEC (30 * USEC_PER_SEC)
/* A burst that the scan results (not new memory) call for waits this long
 * after the last back-off, so a workload whose sharing wobbles around
 * MinGainPages cannot make ksmd flap between burst and maintenance. */
#define REBURST_COOLDOWN_USEC (30 * USEC_PER_SEC)
/* A burst with nothing to scan (the mm that entered is gone already) ends
 * after this long. */
#define EMPTY_BURST_USEC (2 * USEC_PER_SEC)
/* Arrivals: a ksm_enter less than ARRIVAL_GAP after the one before belongs
 * to a stream of them, and the burst holds at the maintenance rate until
 * the stream pauses for ARRIVAL_HOLD, at most ARRIVAL_MAX_HOLD after the
 * stream began. Measured in S4 when its processes entered ~0.3 s apart:
 * ksmd spent ~1.5 s of CPU rescanning the first ones while the others were
 * still being created, as much as the merge itself. A single arrival
 * waits ARRIVAL_HOLD too, since a stream begins with one (2026-12-04, S4
 * with its processes entering ~150 ms apart: bursting at the first
 * arrival, ksmd's 100,000-page batch ran 1.4 passes, ~0.4 s, over the
 * first process alone before the hold of the second could take effect,
 * at batch end; a single process's merge waits 400 ms more, against a
 * bound of aggressive's time + 1 s). On 6.18 earlier each S4 process took 0.8-0.9 s to fill
 * its 256 MiB (ksmd off or not), so they enter 0.72-0.81 s apart and are no
 * stream: holding them (1.5x the gap) or pacing ksmd at a third or a half of
 * the burst's share through them was tried (2026-12-03) and traded merge
 * time for ksmd CPU without meeting both S4 targets: 3.7-4.4 s of ksmd but
 * 2.7-3.0 s to merge (bound ~2.1 s), or 4.8 s and 2.2-2.3 s, against
 * 5.0 s and 1.3 s bursting through. Each pass over the fleet re-searches
 * every unmerged page in the unstable tree (4-10 us a page), and the last
 * arrival needs one.
 *
 * Why bursting through costs what it does (2026-12-04): a page identical to
 * one already merged still needs two looks. cmp_and_merge_page() returns
 * when the page's checksum differs from the one of its previous look (a new
 * rmap item has none) before it searches the stable tree (mm/ksm.c, 6.12;
 * on 6.18 S4's later arrivals merged in the pass after the one that met
 * them, as the first pair did). An arrival put behind ksmd's cursor is met
 * a lap later, and merges a lap after that: two laps over everything in KSM
 * per arrival. Measured in S4 bursting through: 2.85M pages scanned, 2.07
 * laps of the fleet as it grew (a lap of k processes is k x 65536 pages,
 * 1.38M summed over the six), 4.9 s of ksmd. Fewer laps need one arrival's
 * second lap to be the next one's first, a lap as long as the gap between
 * arrivals (~1 s here); then the last arrival merges about two gaps after
 * it entered, over S4's bound (aggressive's ~0.4 s + 1 s). */
#define ARRIVAL_GAP_USEC (500 * USEC_PER_MSEC)
#define ARRIVAL_HOLD_USEC (400 * USEC_PER_MSEC)
#define ARRIVAL_MAX_HOLD_USEC (5 * USEC_PER_SEC)
/* Memory that trickles into mms already in KSM (Q1: two TCG guests
 * faulting in their RAM for ~15 s beside 585 MiB already merged) keeps a
 * burst going pass after pass: 4.1 s of ksmd's 6.4 s went into ~17 passes
 * of that burst, each finding 1-2% of what it scanned (2026-12-03, ksmd
 * sampled every 0.5 s against the daemon's timestamped log). Pacing such a
 * burst to one full pass every 3 s once a pass found under 1/16 of what it
 * scanned was tried the same day (one run): ksmd 3.30 s (the defaults' ~2 s
 * would pass), but the burst settled with 163 MiB volatile, the guests
 * ended with 412 MiB merged against 448 (the window's savings target
 * fails), and the churning guest, visited every 3 s, was never excluded.
 * Not kept. */

static const char *const tune_mode_table[_TUNE_MODE_MAX] = {
        [TUNE_MODE_MAINTAIN] = "maintain",
        [TUNE_MODE_BURST] = "burst",
        [TUNE_MODE_DECAY] = "decay",
        [TUNE_MODE_IDLE] = "idle",
};

DEFINE_STRING_TABLE_TO_STRING(tune_mode, TuneMode);

/* NULL when the tick has CONTROLLER_MAX_DECISIONS already. */
_printf_(3, 4) static ControllerDecision *decide(ControllerDecisions *d, const char *kind, const char *fmt, ...) {
        va_list ap;
        if (d->n >= CONTROLLER_MAX_DECISIONS)
                return NULL;
        ControllerDecision *x = &d->d[d->n++];
        strscpy(x->kind, sizeof x->kind, kind);
        va_start(ap, fmt);
        vsnprintf(x->text, sizeof x->text, fmt, ap);
        va_end(ap);
        return x;
}

static void decide_about(ControllerDecisions *d, const char *kind, const ProcessAction *a) {
        ControllerDecision *x = decide(d, kind, "%s", a->reason);
        if (x)
                x->pid = a->pid;
}

/* A tuning decision, "what: why", whose why is from now on the reason ksmd
 * runs at its rate (Controller.reason). */
/* pid: the process the why names (it entered KSM), 0 when none: the bus
 * shows a process's name and pid to its owner and root only. */
_printf_(5, 6) static void because(Controller *c, ControllerDecisions *d, int pid, const char *what, const char *fmt,
                                   ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->reason, sizeof c->reason, fmt, ap);
        va_end(ap);
        c->reason_pid = pid;
        ControllerDecision *x = decide(d, "tuning", "%s: %s", what, c->reason);
        if (x)
                x->pid = pid;
}

static const char *fmt_pages(char *buf, size_t n, const Model *m, uint64_t pages) {
        return format_bytes(buf, n, pages * m->page_size);
}

void controller_init(Controller *c, const TuningConfig *cfg, uint64_t now_usec) {
        *c = (Controller) {
                .mode = TUNE_MODE_MAINTAIN,
                .mode_since_usec = now_usec,
                .allowance_nsec = (double) cfg->burst_allowance_usec * NSEC_PER_USEC,
                .run = true,
                .mode_full_scans = UINT64_MAX, /* set from the first model */
        };
        char t[32];
        snprintf(c->reason, sizeof c->reason, "a full scan every %s until new mergeable memory appears",
                 format_timespan(t, sizeof t, cfg->maintenance_scan_time_usec));
}

double controller_need(const Model *m, const TuningConfig *cfg) {
        double plenty = cfg->mem_plentiful_percent / 100.0, tight = cfg->mem_tight_percent / 100.0;
        double r = m->mem_available_ratio, mem = 0, psi = 0;

        if (plenty <= tight)
                mem = r <= tight ? 1 : 0;
        else
                mem = CLAMP((plenty - r) / (plenty - tight), 0.0, 1.0);
        if (m->psi_present && cfg->psi_high_percent > 0)
                psi = CLAMP(m->psi_some_avg10 / cfg->psi_high_percent, 0.0, 1.0);
        return MAX(mem, psi);
}

double controller_budget(const TuningConfig *cfg, double need) {
        double lo = cfg->cpu_budget_percent, hi = MAX(cfg->cpu_budget_pressure_percent, lo);
        return (lo + (hi - lo) * CLAMP(need, 0.0, 1.0)) / 100.0;
}

void controller_knobs_for_rate(const TuningConfig *cfg, double rate, double cpu_nsec_per_page,
                               uint64_t *ret_pages_to_scan, uint64_t *ret_sleep_ms) {
        uint64_t min_pages = MIN(cfg->min_pages_to_scan, cfg->max_pages_to_scan);
        uint64_t max_pages = MAX(cfg->min_pages_to_scan, cfg->max_pages_to_scan);
        uint64_t min_sleep = MIN(cfg->min_sleep_ms, cfg->max_sleep_ms);
        uint64_t max_sleep = MAX(cfg->min_sleep_ms, cfg->max_sleep_ms);
        double duty, pages, sleep_ms;

        if (!(rate > 0))
                rate = 1;
        /* ksmd scans pages_to_scan pages (taking pages * cost of CPU), then
         * sleeps sleep_millisecs: rate = P / (P*c + S). For a wanted rate
         * with CPU share d = rate*c that gives P = rate * S / (1 - d). */
        duty = MIN(rate * cpu_nsec_per_page / (double) NSEC_PER_SEC, 0.99);
        sleep_ms = (double) min_sleep;
        pages = rate * sleep_ms / 1000.0 / (1.0 - duty);
        if (min_sleep == 0 && duty < 0.99)
                /* no sleep at all: only pages_to_scan = max runs ksmd flat out */
                pages = (double) max_pages;
        if (pages > (double) max_pages)
                pages = (double) max_pages;
        if (pages < (double) min_pages) {
                pages = (double) min_pages;
                sleep_ms = pages * (1.0 - duty) / rate * 1000.0;
                sleep_ms = CLAMP(sleep_ms, (double) min_sleep, (double) max_sleep);
        }
        *ret_pages_to_scan = (uint64_t) llround(pages);
        *ret_sleep_ms = (uint64_t) llround(sleep_ms);
}

static double maintenance_rate(const Model *m, const TuningConfig *cfg, double need, double cpu_nsec) {
        double scan_sec = (double) cfg->maintenance_scan_time_usec / USEC_PER_SEC;
        double min_rate = (double) cfg->min_pages_to_scan * 1000.0 / (double) MAX(cfg->max_sleep_ms, UINT64_C(1));
        /* under pressure, a full scan comes round up to 4x as often */
        double rate = (double) m->rmap_items / scan_sec * (1.0 + 3.0 * need);
        double cap = controller_budget(cfg, need) * NSEC_PER_SEC / cpu_nsec;
        return MAX(MIN(rate, cap), min_rate);
}

static double idle_rate(const TuningConfig *cfg) {
        return (double) cfg->min_pages_to_scan * 1000.0 / (double) MAX(cfg->max_sleep_ms, UINT64_C(1));
}

static void set_mode(Controller *c, const Model *m, TuneMode mode, uint64_t now) {
        if (tune_mode_is_burst(c->mode) && mode == TUNE_MODE_MAINTAIN)
                c->backoff_usec = now;
        c->mode = mode;
        c->mode_since_usec = now;
        c->mode_full_scans = m->full_scans;
        c->throttled = false;
}

/* How long one full scan takes at the maintenance rate: MaintenanceScanTime=,
 * or longer where the budget caps the rate (a host whose memory ksmd cannot
 * scan that often within CpuBudget=). */
static uint64_t maintenance_scan_usec(const Model *m, double m_rate) {
        return m_rate > 0 ? (uint64_t) ((double) m->rmap_items / m_rate * USEC_PER_SEC) : 0;
}

/* "every 2min", or "every 22min (CpuBudget= 10% caps MaintenanceScanTime=2min)". */
static const char *fmt_maintenance(char *buf, size_t n, const Model *m, const TuningConfig *cfg, double m_rate,
                                   double budget) {
        char a[32], b[32];
        uint64_t scan = maintenance_scan_usec(m, m_rate);
        /* the rate's floor (MinPagesToScan/MaxSleepMSec) makes small sets faster: that is no cap */
        if (scan <= cfg->maintenance_scan_time_usec * 21 / 20)
                snprintf(buf, n, "every %s", format_timespan(a, sizeof a, cfg->maintenance_scan_time_usec));
        else
                snprintf(buf, n, "every %s (CpuBudget= %.3g%% caps MaintenanceScanTime=%s)",
                         format_timespan(a, sizeof a, scan), budget * 100.0,
                         format_timespan(b, sizeof b, cfg->maintenance_scan_time_usec));
        return buf;
}

/* ksmd's CPU share while bursting: BurstCpu, halved by each full scan
 * without new sharing in a decay. */
static double burst_duty(const TuningConfig *cfg, TuneMode mode, uint64_t scans_without_gain) {
        double duty = CLAMP(cfg->burst_cpu_percent / 100.0, 0.01, 0.99);
        if (mode == TUNE_MODE_DECAY)
                duty = ldexp(duty, -(int) MIN(scans_without_gain, UINT64_C(30)));
        return duty;
}

/* Burst or decay, from the full scans without new sharing so far. */
static void set_decay_step(Controller *c, const Model *m, const TuningConfig *cfg) {
        TuneMode mode = m->scans_without_gain > 0 ? TUNE_MODE_DECAY : TUNE_MODE_BURST;
        double percent = burst_duty(cfg, mode, m->scans_without_gain) * 100.0;

        if (mode == TUNE_MODE_DECAY || c->mode == TUNE_MODE_DECAY)
                c->reason_pid = 0;
        if (mode == TUNE_MODE_DECAY)
                snprintf(c->reason, sizeof c->reason, "%" PRIu64 " full scan%s without new sharing: %.3g%% of a core",
                         m->scans_without_gain, m->scans_without_gain == 1 ? "" : "s", percent);
        else if (c->mode == TUNE_MODE_DECAY)
                snprintf(c->reason, sizeof c->reason, "the last full scan found new sharing: %.3g%% of a core again",
                         percent);
        c->mode = mode;
}

/* What a burst may borrow beyond BurstAllowance=: the cost of
 * CONTROLLER_BURST_SCANS full scans of the mergeable memory it is for (met
 * and not yet met) at the measured cost per page, less the allowance
 * itself. A merge needs two looks at every page (checksum, then the
 * unstable tree) and a third to settle; S6 (16 GiB in 32 processes) spent
 * 44-47 s of ksmd CPU on it, past the 30 s allowance, and then crawled at
 * the budget: 2.4-3.1 times aggressive's time to 90% of the savings. The
 * debt is repaid at the budget before a later burst runs unthrottled, so
 * the long-run average stays at CpuBudget=. 0 outside bursts and before the
 * cost is measured. */
double controller_burst_borrow_nsec(const Model *m, const TuningConfig *cfg) {
        double cap = (double) cfg->burst_allowance_usec * NSEC_PER_USEC;
        double pages = (double) m->rmap_items + (double) (m->unmet_known ? m->unmet_pages : 0);
        double cost = CONTROLLER_BURST_SCANS * pages * m->cpu_nsec_per_page;
        return m->cpu_nsec_per_page > 0 && cost > cap ? cost - cap : 0;
}

static void account_allowance(Controller *c, const Model *m, const TuningConfig *cfg, double budget) {
        const ModelTick *t = model_tick(m, 0);
        double cap = (double) cfg->burst_allowance_usec * NSEC_PER_USEC;
        bool bursting = tune_mode_is_burst(c->mode);

        if (!t || t->time_usec == c->last_tick_usec)
                return;
        c->last_tick_usec = t->time_usec;
        /* The borrow follows the memory while the burst lasts (more may
         * arrive), and never shrinks within it: a burst is not throttled
         * because merged pages became cheaper to rescan. */
        c->borrow_nsec = bursting ? MAX(c->borrow_nsec, controller_burst_borrow_nsec(m, cfg)) : 0;
        /* A token bucket of ksmd CPU time: filled at the budget, drained by
         * what ksmd really used, so bursts are fast but the long-run
         * average stays at the budget. It may be overdrawn by the borrow
         * (a burst is throttled below -borrow) and by one more allowance. */
        double before = c->allowance_nsec;
        c->allowance_nsec += budget * (double) t->dt_usec * NSEC_PER_USEC - (double) t->ksmd_cpu_nsec;
        /* Below the floor only if it already was (a burst's debt, kept
         * after the burst and repaid), and then no further. */
        c->allowance_nsec = MAX(MIN(c->allowance_nsec, cap), MIN(-cap - c->borrow_nsec, before));
}

/* Mergeable memory ksmd has not met, found in the process table rather
 * than announced by an event (model_note_unmet), not yet taken into
 * account: pages. */
static uint64_t unmet_news(const Controller *c, const Model *m) {
        return m->unmet_new_total - c->seen_unmet;
}

static void because_unmet(Controller *c, ControllerDecisions *d, const Model *m, uint64_t pages) {
        char a[32], b[32];
        because(c, d, 0, "burst", "%s mergeable that ksmd has not met yet (%s in all: anonymous memory of processes "
                "in KSM beyond their rmap items)",
                fmt_pages(a, sizeof a, m, pages), fmt_pages(b, sizeof b, m, m->unmet_pages));
}

/* "; scanning in 400ms unless another process follows" while an arrival's
 * hold runs (the first of a possible stream), "" otherwise. */
static const char *held_text(const Controller *c, uint64_t now, char *buf, size_t n) {
        char t[32];
        if (c->hold_until_usec <= now)
                return "";
        snprintf(buf, n, "; scanning in %s unless another process follows",
                 format_timespan(t, sizeof t, c->hold_until_usec - now));
        return buf;
}

const Exclusion *controller_exclusion(const Controller *c, int pid) {
        for (size_t i = 0; i < c->n_exclusions; i++)
                if (c->exclusions[i].pid == pid)
                        return &c->exclusions[i];
        return NULL;
}

typedef enum YieldLook {
        YIELD_FIRST,            /* no earlier look (within 10 minutes) */
        YIELD_GREW,             /* more than at the earlier look: still merging */
        YIELD_TOO_SOON,         /* no more, but too few full scans since to tell */
        YIELD_STEADY,           /* no more, CONTROLLER_YIELD_FULL_SCANS or more full scans since the look kept */
} YieldLook;

/* Compares contender x's merged pages now (at full_scans) with the earlier
 * look at them. *ret_since: when the look that still counts was taken (the
 * earlier one when too soon, else now). The earlier look is kept until a
 * later one shows growth, which replaces it. A slot older than 10 minutes,
 * or the oldest, is reused. */
static YieldLook contender_yield_look(Controller *c, const ModelContender *x, uint64_t full_scans, uint64_t now,
                                      uint64_t *ret_since) {
        ContenderYield *y = NULL, *spare = NULL;
        for (size_t i = 0; i < CONTROLLER_MAX_YIELDS && !y; i++) {
                ContenderYield *s = &c->yields[i];
                if (s->pid == x->pid && s->start_time_ticks == x->start_time_ticks)
                        y = s;
                else if (!spare || (spare->pid != 0 && (s->pid == 0 || s->usec < spare->usec)))
                        spare = s;      /* a free slot, else the oldest */
        }
        YieldLook look = YIELD_FIRST;
        *ret_since = now;
        /* An entry the daemon saw is a look too: nothing merged, at the
         * full scans of then. A process that entered two full scans ago
         * and merged nothing since is judged on its first window, as its
         * exclusion costs nothing (S2: the contender excluded 1.2 s before
         * the victim appeared, not 1.3 s after, its merge waiting). */
        ContenderYield entry = { .merging_pages = 0, .full_scans = x->entered_full_scans, .usec = now };
        const ContenderYield *was = y && now - y->usec <= 600 * USEC_PER_SEC ? y : x->entered_seen ? &entry : NULL;
        if (was) {
                if (x->merging_pages > was->merging_pages + MAX(was->merging_pages / 100, (int64_t) 64))
                        look = YIELD_GREW;
                else if (full_scans < was->full_scans + CONTROLLER_YIELD_FULL_SCANS) {
                        *ret_since = was->usec;
                        return YIELD_TOO_SOON;
                } else
                        /* steady against the look kept: that one stays,
                         * so a judgement put off (judge_contender) is
                         * made at once when it may be */
                        return YIELD_STEADY;
        }
        if (!y)
                y = spare;
        *y = (ContenderYield) { .pid = x->pid,
                                .start_time_ticks = x->start_time_ticks,
                                .merging_pages = x->merging_pages,
                                .full_scans = full_scans,
                                .usec = now };
        return look;
}

/* An exclusion or a readmission changes what the process has merged: its
 * yield is looked at anew from the next window that shows it. Not from the
 * count at the exclusion either: ksm_merging_pages does not fall when the
 * daemon unmarks the ranges (MADV_UNMERGEABLE breaks the sharing, but the
 * rmap items, which the count follows, go only when ksmd next passes the
 * mm). Seen in Q1: a guest showed the same 10,903 merged pages before its
 * exclusion and after its readmission, and was judged again at once. */
static void contender_yield_forget(Controller *c, int pid, uint64_t start_time_ticks) {
        for (size_t i = 0; i < CONTROLLER_MAX_YIELDS; i++)
                if (c->yields[i].pid == pid && c->yields[i].start_time_ticks == start_time_ticks)
                        c->yields[i] = (ContenderYield) {};
}

/* The follow-up of pid (started at start_time_ticks), NULL when none. */
static FollowedContender *followed_find(Controller *c, int pid, uint64_t start_time_ticks) {
        for (size_t i = 0; i < CONTROLLER_MAX_FOLLOWED; i++)
                if (c->followed[i].pid == pid && c->followed[i].start_time_ticks == start_time_ticks)
                        return &c->followed[i];
        return NULL;
}

/* Follows contender pid until `until` (or leaves, with until 0, an
 * excluded one alone). seen: the window's evidence on it, when it waits
 * for its merged pages to be judged (judge_contenders judges it again
 * between windows); NULL keeps what the slot had. When every slot is taken,
 * the one that ends first makes room. */
static void contender_follow(Controller *c, int pid, uint64_t start_time_ticks, uint64_t until, uint64_t now,
                             const ModelContender *seen) {
        FollowedContender *f = followed_find(c, pid, start_time_ticks);
        if (f && until <= now) {
                *f = (FollowedContender) {};
                return;
        }
        if (f)
                f->until_usec = MAX(f->until_usec, until);
        else if (until > now) {
                f = &c->followed[0];    /* a free or ended slot, else the one that ends first */
                for (size_t i = 1; i < CONTROLLER_MAX_FOLLOWED && f->until_usec > now; i++)
                        if (c->followed[i].until_usec < f->until_usec)
                                f = &c->followed[i];
                *f = (FollowedContender) { .pid = pid, .start_time_ticks = start_time_ticks, .until_usec = until };
        } else
                return;
        if (seen) {
                f->seen = *seen;
                f->seen_usec = now;
                f->pending = true;
        }
}

/* Contender x's latest window put it under the bar: nothing waits to be
 * judged between windows (a follow-up for want of evidence may go on). */
static void contender_unpend(Controller *c, const ModelContender *x) {
        FollowedContender *f = followed_find(c, x->pid, x->start_time_ticks);
        if (f)
                f->pending = false;
}

void controller_note_merging_pages(Controller *c, int pid, uint64_t start_time_ticks, int64_t merging_pages) {
        FollowedContender *f = followed_find(c, pid, start_time_ticks);
        if (f)
                f->seen.merging_pages = merging_pages;
}

uint64_t controller_follow_until(const Controller *c, uint64_t now_usec) {
        uint64_t until = 0;
        for (size_t i = 0; i < CONTROLLER_MAX_FOLLOWED; i++)
                if (c->followed[i].pid != 0 && c->followed[i].until_usec > now_usec)
                        until = MAX(until, c->followed[i].until_usec);
        return until;
}

/* Contender x, shown by a window, as of full_scans: excluded, followed
 * (its merged pages still to be judged, or ksmd's time on it too little to
 * tell its share), or left. */
static int judge_contender(Controller *c, const Model *m, const TuningConfig *cfg, const ModelContender *x,
                           uint64_t full_scans, uint64_t now, Plan *plan, ControllerDecisions *d) {
        int r;

        /* On a trylock kernel ksmd still blocks in the paths the
         * patch left locked (the scan's own mmap_read_lock), and
         * each failed try costs the process's pages a full scan:
         * both count. Where the lookups take VMA locks (seed 001)
         * the kernel protects ksmd from the churn of other VMAs
         * and a failed try is a rare fallback: only the time ksmd
         * still waits (the scan's own lock, which the 6.12 port
         * keeps) counts, so a churner that does not hold ksmd up
         * stays in. */
        /* Blocked: of all ksmd's time, or of its time on this
         * process, whichever is more. A host's guest is a small
         * part of ksmd's scan: one that blocks each visit of ksmd
         * to it by half is a few percent of all ksmd's time among
         * forty, and would never be excluded by that alone (seen
         * in Q1: a QEMU churning its own mm, a fifth of the scan,
         * 24% of ksmd's time on it blocked, 5-13% of its windows; figures
         * from before the tracing's own share came off each wait,
         * contention_window_finish, which was ~20 points of them). */
        bool per_vma = m->fixes.fix[KERNEL_FIX_PER_VMA].state == FIX_YES;
        bool on_visits = x->scan_blocked_fraction > x->ksmd_blocked_fraction;
        double blocked = MAX(x->ksmd_blocked_fraction, x->scan_blocked_fraction);
        double share = m->lock_core == KSM_LOCK_CORE_TRYLOCK && !per_vma
                               ? 1.0 - (1.0 - blocked) * (1.0 - x->trylock_failure_fraction)
                               : blocked;
        char why[112];

        /* Only a process whose memory yields little: excluding a
         * victim that merges (the same-process case) would lose its
         * savings for the sake of its own churn. Unknown yield is not
         * "little". */
        if (x->merging_pages < 0 || (uint64_t) x->merging_pages > cfg->exclude_max_merging_pages)
                return 0;
        /* Already out, or no room to take it out: nothing to
         * look at again. */
        if (controller_exclusion(c, x->pid) || c->n_exclusions >= CONTROLLER_MAX_EXCLUSIONS)
                return 0;
        /* A page merges on its second look at the earliest: until
         * two full scans after a process entered KSM, "0 pages
         * merged" says nothing (seen in S3, the victim churning its
         * own mm: excluded before it merged, never merged). */
        if (x->entered_seen && full_scans < x->entered_full_scans + 2)
                return 0;
        if (share * 100.0 < cfg->exclude_blocked_percent) {
                contender_unpend(c, x);  /* its latest evidence is under the bar */
                /* Below the bar for want of evidence only: what
                 * little of ksmd's time on it was seen is over the
                 * bar, too little to tell. Look again soon, or the
                 * burst may end before a window shows more. Seen in
                 * Q1: the churning guest seen in two windows, 5% and
                 * 0% of them blocked; no window after the burst,
                 * and it was never judged. At most one such
                 * follow-up a minute, whoever asks. */
                if (x->scan_evidence_short && x->scan_blocked_partial * 100.0 >= cfg->exclude_blocked_percent &&
                    (c->short_follow_usec == 0 || now - c->short_follow_usec >= CONTROLLER_SHORT_FOLLOW_GAP_USEC)) {
                        c->short_follow_usec = now;
                        contender_follow(c, x->pid, x->start_time_ticks, now + CONTROLLER_FOLLOW_USEC, now, NULL);
                }
                return 0;
        }
        /* Nor while its merged pages still grow: a guest still
         * booting has few merged yet, and blocks ksmd on a host
         * whose CPUs its vCPUs oversubscribe (a writer preempted
         * holding its lock). Seen in Q1 with the cap at 16,384:
         * the late guest excluded at 8,797 merged pages on its way
         * to 32,000. Judged once they grew by less than 1% (64
         * pages at least) over CONTROLLER_YIELD_FULL_SCANS full
         * scans. Followed meanwhile: from the latest growth, or
         * for CONTROLLER_FOLLOW_USEC from the look it is compared
         * with (no longer: a slow scan's pass may take
         * minutes, and the windows of that time come anyway). */
        uint64_t since;
        YieldLook look = contender_yield_look(c, x, full_scans, now, &since);
        if (look != YIELD_STEADY) {
                contender_follow(c, x->pid, x->start_time_ticks, since + CONTROLLER_FOLLOW_USEC, now, x);
                return 0;
        }
        /* Nor, while a burst lasts, one with merged pages: its exclusion
         * unmerges them (MADV_UNMERGEABLE and PR_SET_MEMORY_MERGE 0 alike)
         * until its readmission, while the ksmd time its lock costs only
         * slows a merge that goes on, and a burst it stalls ends (barren
         * scans back it off). Judged when the burst ends. One with nothing
         * merged costs nothing to exclude: out at once. Seen in Q1
         * (2026-12-04): the churning guest excluded 8.3-8.5 s in, with
         * 7,545 pages merged on its way to 13,900; the guests' savings
         * reached 90% of aggressive's at 29 s, after its readmission,
         * against 13-14 s in runs where it was excluded later or not.
         * Waiting only while the burst's full scans found new sharing was
         * tried first: one barren pass while the late guests still booted
         * (a decay step, the burst resumed at the next) let it out at
         * 9.3 s with 9,260 pages merged, and t90 was 30.2 s. */
        if (x->merging_pages >= (int64_t) MAX(m->min_gain_pages, UINT64_C(1)) && tune_mode_is_burst(c->mode)) {
                contender_follow(c, x->pid, x->start_time_ticks, now + CONTROLLER_FOLLOW_USEC, now, x);
                return 0;
        }
        char blocked_text[64];
        if (on_visits)
                snprintf(blocked_text, sizeof blocked_text, "ksmd blocked %.0f%% of its time on it (%.0f%% of all its time)",
                         x->scan_blocked_fraction * 100.0, x->ksmd_blocked_fraction * 100.0);
        else
                snprintf(blocked_text, sizeof blocked_text, "%.0f%% of ksmd time blocked on %s",
                         x->ksmd_blocked_fraction * 100.0,
                         m->lock_core == KSM_LOCK_CORE_TRYLOCK ? "it" : "its mmap lock");
        if (m->lock_core == KSM_LOCK_CORE_TRYLOCK)
                snprintf(why, sizeof why, "%.0f%% of ksmd's tries of its mmap lock failed, %s",
                         x->trylock_failure_fraction * 100.0, blocked_text);
        else
                snprintf(why, sizeof why, "%s", blocked_text);
        ProcessAction a = {
                .pid = x->pid,
                .start_time_ticks = x->start_time_ticks,
                .action = MERGE_ACTION_DISABLE,
                .method = MERGE_METHOD_ANY,
        };
        snprintf(a.reason, sizeof a.reason, "excluding pid %d (%s): %s, %" PRIi64 " pages merged", x->pid,
                 x->comm, why, x->merging_pages);
        r = plan_add_action(plan, &a);
        if (r < 0)
                return r;
        decide_about(d, "exclude", &a);
        contender_yield_forget(c, x->pid, x->start_time_ticks);
        /* Out now: no more windows for its sake. Seen in Q1: 38
         * windows in the 20 s an excluded guest was out, each
         * tracing its churn's 230,000 write locks a second. */
        contender_follow(c, x->pid, x->start_time_ticks, 0, now, NULL);
        Exclusion *e = &c->exclusions[c->n_exclusions++];
        *e = (Exclusion) {
                .pid = x->pid,
                .start_time_ticks = x->start_time_ticks,
                .since_usec = now,
        };
        strscpy(e->comm, sizeof e->comm, x->comm);
        return 0;
}

static int judge_contenders(Controller *c, const Model *m, const TuningConfig *cfg, uint64_t now, Plan *plan,
                            ControllerDecisions *d) {
        int r;

        /* Readmission first, so a slot frees before new exclusions. */
        for (size_t i = 0; i < c->n_exclusions;) {
                Exclusion *x = &c->exclusions[i];
                char span[32];
                if (!x->due && now - x->since_usec < cfg->readmit_after_usec) {
                        i++;
                        continue;
                }
                ProcessAction a = {
                        .pid = x->pid,
                        .start_time_ticks = x->start_time_ticks,
                        .action = MERGE_ACTION_ENABLE,
                        .method = MERGE_METHOD_ANY,
                };
                snprintf(a.reason, sizeof a.reason, "readmitting pid %d (%s): excluded %s ago", x->pid, x->comm,
                         format_timespan(span, sizeof span, now - x->since_usec));
                r = plan_add_action(plan, &a);
                if (r < 0)
                        return r;
                decide_about(d, "readmit", &a);
                contender_yield_forget(c, x->pid, x->start_time_ticks);
                *x = c->exclusions[--c->n_exclusions];
        }

        /* A new window: the contenders it shows. */
        if (m->window_usec != 0 && m->window_usec != c->last_window_usec) {
                c->last_window_usec = m->window_usec;
                for (size_t i = 0; i < m->n_contenders; i++) {
                        r = judge_contender(c, m, cfg, &m->contenders[i], m->window_full_scans, now, plan, d);
                        if (r < 0)
                                return r;
                }
        }

        /* Between windows, each followed contender that waits for its
         * merged pages to hold still over full scans: judged again on its
         * latest window's evidence, with its merged pages as read since
         * (controller_note_merging_pages) and the full scans so far. A
         * window shows a process only while ksmd is at its pages or looks
         * one up in its mm, and the burst may end first. Seen in Q1: the
         * churning guest last shown growing at 15,004 merged pages, ksmd
         * blocked 72% of its time on it, in the burst's last seconds; the
         * maintenance windows after it showed no contender for 30 s, and
         * it was never judged. */
        for (size_t i = 0; i < CONTROLLER_MAX_FOLLOWED; i++) {
                const FollowedContender *f = &c->followed[i];
                if (f->pid == 0 || !f->pending || f->until_usec <= now || f->seen_usec == now)
                        continue;
                ModelContender x = f->seen;     /* judging may reuse the slot */
                r = judge_contender(c, m, cfg, &x, m->full_scans, now, plan, d);
                if (r < 0)
                        return r;
        }
        return 0;
}

int controller_adopt_exclusion(Controller *c, int pid, uint64_t start_time_ticks, uint64_t since_usec, bool due,
                               const char *comm, uint64_t now_usec) {
        if (controller_exclusion(c, pid))
                return 0;
        if (c->n_exclusions >= CONTROLLER_MAX_EXCLUSIONS)
                return -ENOSPC;
        Exclusion *e = &c->exclusions[c->n_exclusions++];
        *e = (Exclusion) {
                .pid = pid,
                .start_time_ticks = start_time_ticks,
                /* a journal from before a reboot has no meaning here; the
                 * pid's start time already told it apart */
                .since_usec = MIN(since_usec, now_usec),
                .due = due,
        };
        strscpy(e->comm, sizeof e->comm, comm ? comm : "");
        return 1;
}

/* Whether pages_to_scan is ours to set, with the decisions that go with
 * it. */
static bool handle_advisor(Controller *c, const Model *m, const TuningConfig *cfg, KnobPlan *k,
                           ControllerDecisions *d) {
        if (!m->advisor_scan_time) {
                if (c->advisor_switched_off)
                        c->advisor_seen_off = true;
                return !c->advisor_left;
        }
        if (c->advisor_left)
                return false;
        if (cfg->advisor_policy == ADVISOR_POLICY_LEAVE) {
                c->advisor_left = true;
                decide(d, "advisor",
                       "advisor_mode=scan-time: leaving pages_to_scan to the kernel advisor (AdvisorPolicy=leave), "
                       "tuning sleep_millisecs and run only");
                return false;
        }
        if (c->advisor_switched_off && c->advisor_seen_off) {
                /* Someone turned it back on after we turned it off: that is
                 * a person's choice, not a knob to fight over. */
                c->advisor_left = true;
                decide(d, "advisor",
                       "advisor_mode=scan-time was switched on again by someone else: leaving pages_to_scan to "
                       "the advisor from now on");
                return false;
        }
        if (!c->advisor_switched_off)
                decide(d, "advisor",
                       "switching advisor_mode=scan-time off: ksmtuned2 sets pages_to_scan itself "
                       "(AdvisorPolicy=off; the kernel refuses pages_to_scan writes while the advisor runs)");
        c->advisor_switched_off = true;
        knob_plan_set(k, KSM_ADVISOR_MODE, KSM_ADVISOR_NONE);
        return true;
}

int controller_decide(Controller *c, const Model *m, const TuningConfig *cfg, uint64_t now, Plan *plan,
                      ControllerDecisions *d) {
        double need = controller_need(m, cfg);
        double budget = controller_budget(cfg, need);
        double cpu = model_cpu_nsec_per_page(m);
        double rate, m_rate = maintenance_rate(m, cfg, need, cpu);
        uint64_t new_pages = m->new_mergeable_total - c->seen_new_mergeable;
        bool entered = m->entered_count != c->seen_entered;
        char a[32], b[32], e[32], mt[96], held[80];
        TuneMode before = c->mode;
        int r;

        if (c->mode_full_scans == UINT64_MAX)
                c->mode_full_scans = m->full_scans; /* the first model seen: the start of maintenance */

        account_allowance(c, m, cfg, budget);
        c->decided_usec = now;

        /* --- arrivals --- */
        if (entered) {
                unsigned n_new = m->entered_count - c->seen_entered;
                bool stream = n_new >= 2 ||
                              (c->last_enter_usec > 0 && m->entered_usec - c->last_enter_usec < ARRIVAL_GAP_USEC);
                if (!stream) {
                        /* The first of a stream, as far as anyone can
                         * tell: it waits for the next, or for the pause */
                        c->stream_start_usec = m->entered_usec;
                        c->hold_until_usec = m->entered_usec + ARRIVAL_HOLD_USEC;
                        c->stream_announced = false;
                } else if (m->entered_usec - c->stream_start_usec < ARRIVAL_MAX_HOLD_USEC) {
                        if (!c->stream_announced)
                                because(c, d, m->entered_pid, "holding the burst",
                                        "pid %d (%s) entered KSM %s after the one before; "
                                        "scanning once the arrivals pause (at most %s after the first)",
                                        m->entered_pid, m->entered_comm,
                                        format_timespan(a, sizeof a, m->entered_usec - c->last_enter_usec),
                                        format_timespan(b, sizeof b, ARRIVAL_MAX_HOLD_USEC));
                        c->hold_until_usec = MIN(m->entered_usec + ARRIVAL_HOLD_USEC,
                                                 c->stream_start_usec + ARRIVAL_MAX_HOLD_USEC);
                        c->stream_announced = true;
                }
                c->last_enter_usec = m->entered_usec;
        }

        /* --- the mode --- */
        uint64_t unmet = unmet_news(c, m);
        /* Memory met that no event announced is the memory found unmet
         * (model_unmet_floor), met by a maintenance scan before it added
         * up there: the same floor, or it would start the burst the
         * unmet floor held back, only later. */
        uint64_t min_new = model_unmet_floor(m, cfg->burst_min_new_pages);
        if (entered || new_pages >= min_new || unmet > 0) {
                if (tune_mode_is_burst(c->mode))
                        ; /* already bursting: the new memory is being scanned */
                else if (!entered && unmet > 0)
                        because_unmet(c, d, m, unmet);
                else if (entered && new_pages >= min_new)
                        because(c, d, m->entered_pid, "burst", "pid %d (%s) entered KSM, %s newly mergeable%s", m->entered_pid,
                                m->entered_comm, fmt_pages(a, sizeof a, m, new_pages), held_text(c, now, held, sizeof held));
                else if (entered)
                        because(c, d, m->entered_pid, "burst", "pid %d (%s) entered KSM%s", m->entered_pid, m->entered_comm,
                                held_text(c, now, held, sizeof held));
                else
                        because(c, d, 0, "burst", "%s newly mergeable", fmt_pages(a, sizeof a, m, new_pages));
                c->seen_entered = m->entered_count;
                c->seen_new_mergeable = m->new_mergeable_total;
                c->seen_unmet = m->unmet_new_total;
                if (c->mode == TUNE_MODE_DECAY)
                        c->mode = TUNE_MODE_BURST;
                else if (c->mode != TUNE_MODE_BURST)
                        set_mode(c, m, TUNE_MODE_BURST, now);
        } else if ((c->mode == TUNE_MODE_MAINTAIN || c->mode == TUNE_MODE_IDLE) && m->scans_without_gain == 0 &&
                   m->last_gain_usec > c->mode_since_usec &&
                   m->last_scan_gain_pages >= (int64_t) model_gain_floor(m, m->min_gain_pages) &&
                   now - c->backoff_usec >= REBURST_COOLDOWN_USEC) {
                because(c, d, 0, "burst", "a %s scan found %s of new sharing",
                        c->mode == TUNE_MODE_IDLE ? "slow" : "maintenance",
                        fmt_pages(a, sizeof a, m, (uint64_t) m->last_scan_gain_pages));
                set_mode(c, m, TUNE_MODE_BURST, now);
        } else if (tune_mode_is_burst(c->mode)) {
                bool empty = m->rmap_items == 0 && now - c->mode_since_usec >= EMPTY_BURST_USEC;
                /* A settled scan (model.h) ends the burst at once, paying or
                 * not: a confirming pass at burst rate would only find what
                 * changed since, which the maintenance scans find as well.
                 * Measured in S4 (1.5 GiB, 98304 unique pages): each
                 * confirming pass cost ksmd ~0.4 s, a third of all it spent
                 * after the merge. */
                bool settled = m->last_scan_settled && m->settled_usec > c->mode_since_usec &&
                               m->rmap_items > 0;
                if (m->scans_without_gain >= cfg->backoff_full_scans || empty || settled) {
                        if (empty)
                                because(c, d, 0, "backing off", "nothing left to scan");
                        else if (settled && m->scans_without_gain < cfg->backoff_full_scans)
                                because(c, d, 0, "backing off",
                                        "the last full scan left %s volatile and met no new memory "
                                        "(saving %s); maintenance: a full scan of %s %s",
                                        fmt_pages(b, sizeof b, m, m->pages_volatile),
                                        fmt_pages(e, sizeof e, m, m->pages_sharing),
                                        fmt_pages(a, sizeof a, m, m->rmap_items),
                                        fmt_maintenance(mt, sizeof mt, m, cfg, m_rate, budget));
                        else
                                because(c, d, 0, "backing off",
                                        "%" PRIu64 " full scans without new sharing (saving %s); "
                                        "maintenance: a full scan of %s %s",
                                        m->scans_without_gain, fmt_pages(b, sizeof b, m, m->pages_sharing),
                                        fmt_pages(a, sizeof a, m, m->rmap_items),
                                        fmt_maintenance(mt, sizeof mt, m, cfg, m_rate, budget));
                        set_mode(c, m, TUNE_MODE_MAINTAIN, now);
                } else
                        /* Each full scan that finds nothing halves the rate;
                         * one that pays restores it. Neither resets the
                         * burst's start, nor is a decision of its own; the
                         * reason says it. */
                        set_decay_step(c, m, cfg);
        }
        /* A slow scan that found something (over MinGainPages=, under the
         * burst's floor): the host is not idle, back to maintenance. */
        if (c->mode == TUNE_MODE_IDLE && m->scans_without_find == 0 && m->last_gain_usec > c->mode_since_usec) {
                because(c, d, 0, "maintenance", "a slow scan found %s of new sharing and %s of new memory",
                        fmt_pages(a, sizeof a, m, (uint64_t) MAX(m->last_scan_gain_pages, INT64_C(0))),
                        fmt_pages(b, sizeof b, m, (uint64_t) MAX(m->last_scan_rmap_gain, INT64_C(0))));
                set_mode(c, m, TUNE_MODE_MAINTAIN, now);
        }
        /* Idle means ksmd looked and found nothing: IdleAfter= without new
         * sharing and, with memory to look at, two full scans ended since
         * maintenance began (the first may have begun in the burst). A host
         * whose full scan at the budget is longer than IdleAfter= (512 GiB:
         * ~22 min at 10% of a core) would otherwise drop to the idle rate
         * before its first maintenance scan ended, and at 100 pages/s never
         * finish one. */
        if (c->mode == TUNE_MODE_MAINTAIN && cfg->idle_after_usec > 0 &&
            now - MAX(m->last_gain_usec, c->mode_since_usec) >= cfg->idle_after_usec &&
            (m->rmap_items == 0 || m->full_scans - c->mode_full_scans >= 2)) {
                because(c, d, 0, "idle", "no new sharing for %s%s",
                        format_timespan(a, sizeof a, now - MAX(m->last_gain_usec, c->mode_since_usec)),
                        cfg->idle_mode == IDLE_MODE_STOP ? ", stopping ksmd (run=0 keeps merged pages)" : "");
                set_mode(c, m, TUNE_MODE_IDLE, now);
        }

        /* --- the knobs --- */
        uint64_t p, sl;
        bool bursting = tune_mode_is_burst(c->mode);
        if (bursting && c->allowance_nsec <= -c->borrow_nsec && !c->throttled) {
                char borrowed[96] = ",";
                if (c->borrow_nsec > 0)
                        snprintf(borrowed, sizeof borrowed, ", and %s borrowed for %u full scans of the memory:",
                                 format_timespan(b, sizeof b, (uint64_t) (c->borrow_nsec / NSEC_PER_USEC)),
                                 (unsigned) CONTROLLER_BURST_SCANS);
                because(c, d, 0, "burst throttled", "allowance of %s ksmd CPU spent%s holding at %.0f%% of a core",
                        format_timespan(a, sizeof a, cfg->burst_allowance_usec), borrowed, budget * 100.0);
                c->throttled = true;
        } else if (bursting && c->allowance_nsec > -c->borrow_nsec && c->throttled) {
                /* no decision: the knobs follow on their own */
                c->reason_pid = 0;
                snprintf(c->reason, sizeof c->reason, "the allowance refilled to %s: bursting again",
                         format_timespan(a, sizeof a, (uint64_t) (c->allowance_nsec / NSEC_PER_USEC)));
                c->throttled = false;
        }

        bool holding = bursting && now < c->hold_until_usec;
        if (holding) {
                /* arrivals go on: what ksmd would scan now it scans again */
                controller_knobs_for_rate(cfg, m_rate, cpu, &p, &sl);
        } else if (bursting && !c->throttled) {
                /* A burst scans the largest batches the bounds allow and
                 * sets ksmd's CPU share with the sleep alone: a batch costs
                 * P*c, so d = P*c / (P*c + S). With P fixed, noise in the
                 * measured cost moves only a short sleep, not the batch. Each
                 * full scan without new sharing halves the share. */
                double duty = burst_duty(cfg, c->mode, m->scans_without_gain);
                p = MAX(cfg->min_pages_to_scan, cfg->max_pages_to_scan);
                double sleep_ms = (double) p * cpu / 1e6 * (1.0 - duty) / duty;
                sl = (uint64_t) llround(CLAMP(sleep_ms, (double) MIN(cfg->min_sleep_ms, cfg->max_sleep_ms),
                                              (double) MAX(cfg->min_sleep_ms, cfg->max_sleep_ms)));
        } else {
                if (bursting)
                        rate = budget * NSEC_PER_SEC / cpu;
                else if (c->mode == TUNE_MODE_IDLE)
                        rate = idle_rate(cfg);
                else
                        rate = m_rate;
                controller_knobs_for_rate(cfg, MAX(rate, bursting ? m_rate : 0), cpu, &p, &sl);
        }
        rate = (double) p / ((double) p * cpu / NSEC_PER_SEC + (double) sl / 1000.0);

        /* --- hysteresis and rate limits --- */
        bool change = !c->have_knobs || c->mode != before || holding != c->held ||
                      (bursting && m->scans_without_gain != c->knob_step) ||
                      /* throttled or released: the knobs were not set for
                       * this rate. Seen in S6 (16 GiB): released with the
                       * budget's sleep at MinSleepMSec, the burst's equal
                       * sleep counted as "frozen" and ksmd stayed at the
                       * budget for minutes with the allowance refilled. */
                      (bursting && c->throttled != c->knob_throttled);
        if (c->held && !holding && bursting && !c->throttled) {
                c->reason_pid = 0;
                snprintf(c->reason, sizeof c->reason, "%s: scanning at %.3g%% of a core",
                         c->stream_announced ? "the arrivals paused" : "no other process followed",
                         burst_duty(cfg, c->mode, m->scans_without_gain) * 100.0);
        }
        c->held = holding;
        /* Within one step of a burst (same mode, same number of barren
         * scans) the batch is fixed and only the cost estimate moves the
         * sleep: in a burst it may only shorten (the estimate settles down
         * from its 4 us default), in a decay step it stays. Measured in S4:
         * otherwise the sleep wandered 425, 286, 189, 385, 606 ms within one
         * decay step. */
        bool frozen = bursting && !c->throttled && !change && (c->mode == TUNE_MODE_DECAY || sl >= c->sleep_ms);
        if (!change && !frozen && (p != c->pages_to_scan || sl != c->sleep_ms)) {
                double rel = c->rate_pages_per_sec > 0 ? fabs(rate - c->rate_pages_per_sec) / c->rate_pages_per_sec : 1;
                uint64_t min_gap = bursting ? cfg->burst_interval_usec : SLOW_CHANGE_INTERVAL_USEC;
                if (rel > RATE_DEADBAND && (rate > c->rate_pages_per_sec || now - c->last_change_usec >= min_gap))
                        change = true;
        }
        if (change) {
                c->rate_pages_per_sec = rate;
                c->pages_to_scan = p;
                c->sleep_ms = sl;
                c->last_change_usec = now;
                c->have_knobs = true;
                c->knob_step = m->scans_without_gain;
                c->knob_throttled = c->throttled;
        }
        c->run = !(c->mode == TUNE_MODE_IDLE && cfg->idle_mode == IDLE_MODE_STOP);

        /* --- the plan --- */
        bool own_pages = handle_advisor(c, m, cfg, &plan->knobs, d);
        if (own_pages)
                knob_plan_set(&plan->knobs, KSM_PAGES_TO_SCAN, c->pages_to_scan);
        knob_plan_set(&plan->knobs, KSM_SLEEP_MILLISECS, c->sleep_ms);
        knob_plan_set(&plan->knobs, KSM_RUN, c->run ? 1 : 0);

        r = judge_contenders(c, m, cfg, now, plan, d);
        if (r < 0)
                return r;
        return 0;
}

bool controller_quick_windows(const Controller *c, uint64_t now_usec) {
        return tune_mode_is_burst(c->mode) || controller_follow_until(c, now_usec) > now_usec;
}

uint64_t controller_next_interval_usec(const Controller *c, const TuningConfig *cfg, uint64_t default_usec) {
        /* A readmission is due at its time, not up to an Interval= later
         * (seen in Q1/restart: 25.2 s after the exclusion at
         * ReadmitAfter=20s, the ticks 5 s apart in maintenance). */
        for (size_t i = 0; i < c->n_exclusions; i++) {
                uint64_t due = c->exclusions[i].due ? c->decided_usec + 1
                                                    : c->exclusions[i].since_usec + cfg->readmit_after_usec;
                if (due > c->decided_usec)
                        default_usec = MIN(default_usec, due - c->decided_usec + USEC_PER_MSEC);
        }
        if (c->hold_until_usec > c->decided_usec)
                /* right when the hold ends, not up to a burst tick later */
                return MIN(MIN(cfg->burst_interval_usec, default_usec),
                           c->hold_until_usec - c->decided_usec + USEC_PER_MSEC);
        if (controller_quick_windows(c, c->decided_usec))
                return MIN(cfg->burst_interval_usec, default_usec);
        return default_usec;
}
