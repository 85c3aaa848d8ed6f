/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decisions.h"
#include "model.h"
#include "plan.h"
#include "tuning-config.h"

/* The controller: model + [Tuning] -> plan (knobs, per-process actions),
 * every decision with its reason. Pure: no I/O, no clock; its state lives
 * in Controller between ticks.
 *
 *   hold      processes entering KSM one after another (less than
 *             ARRIVAL_GAP apart): the burst waits for them to pause
 *             (ARRIVAL_HOLD without one, also after a single one), for at
 *             most ARRIVAL_MAX_HOLD from the first, since every pass over
 *             memory that is still arriving is done again once it is in;
 *   burst     new mergeable memory (an mm entered KSM, ksmd's rmap items
 *             grew, or the process table holds anonymous memory of
 *             processes in KSM that ksmd has not met: found at start, after
 *             a restart or a pause, or added to an mm already in KSM) or a
 *             maintenance scan that found new sharing, each at least
 *             model_gain_floor(): scan at BurstCpu of a core, from a CPU
 *             allowance (BurstAllowance) refilled at the CPU budget;
 *   decay     each full scan that does not pay (new sharing under
 *             model_gain_floor(), no memory met: model.h) halves the burst
 *             rate; one that pays restores it; after BackoffFullScans in a
 *             row the burst ends ("backing off") and the controller goes to
 *   maintain  one full scan per MaintenanceScanTime (shorter under memory
 *             pressure), never above the CPU budget;
 *   idle      IdleAfter without a scan that found over MinGainPages, and
 *             two full scans ended in maintenance: the slowest rate, or
 *             run=0 (IdleMode=stop), which keeps merged pages merged; a
 *             slow scan that finds some goes back to maintenance.
 *
 * Rate limits: a rate is turned into pages_to_scan/sleep_millisecs from the
 * measured ksmd CPU per page; the knobs change only when the rate moves by
 * more than a quarter, rises at once but falls at most every BurstInterval
 * (decay) or every 30 s otherwise, and a burst that scanning itself
 * triggers waits a cooldown after the last back-off. */

typedef enum TuneMode {
        TUNE_MODE_MAINTAIN,
        TUNE_MODE_BURST,
        TUNE_MODE_DECAY,
        TUNE_MODE_IDLE,
        _TUNE_MODE_MAX,
} TuneMode;

const char *tune_mode_to_string(TuneMode m);

/* A burst or its decay: the phases that spend the burst allowance. */
static inline bool tune_mode_is_burst(TuneMode m) {
        return m == TUNE_MODE_BURST || m == TUNE_MODE_DECAY;
}

#define CONTROLLER_MAX_DECISIONS 8
#define CONTROLLER_MAX_EXCLUSIONS 32

typedef struct ControllerDecision {
        char kind[32];                  /* tuning, advisor, exclude, readmit */
        int pid;                        /* the process excluded, readmitted or that entered KSM; 0 for none */
        char text[DECISION_TEXT_MAX];
} ControllerDecision;

typedef struct ControllerDecisions {
        ControllerDecision d[CONTROLLER_MAX_DECISIONS];
        size_t n;
} ControllerDecisions;

typedef struct Exclusion {
        int pid;
        uint64_t start_time_ticks;
        uint64_t since_usec;
        bool due;                       /* readmitted at the next tick, whatever since_usec says */
        char comm[TASK_COMM_SIZE];
} Exclusion;

/* A contender's merged pages when a window last showed it: one whose
 * merged pages still grow is still merging, not one that merges little. */
typedef struct ContenderYield {
        int pid;                        /* 0 a free slot */
        uint64_t start_time_ticks;
        int64_t merging_pages;
        uint64_t full_scans;            /* ksmd's full scans as of that window */
        uint64_t usec;
} ContenderYield;

#define CONTROLLER_MAX_YIELDS 32

/* Two looks at a contender's merged pages tell "no longer grows" only with
 * a full scan of ksmd between them: the count moves only while ksmd is at
 * the mm. Seen in Q1 (2026-12-04): two windows 0.5 s apart in one pass
 * both showed a booting guest at 5,857 merged pages, and it was excluded
 * there, on its way to 14,600; its 57 MiB were out until its readmission
 * 20 s later, and the guests' savings reached 90% of aggressive's only
 * then (30 s against 13 s). Two full scans were tried the same evening:
 * S2's contender, met by a burst that ended one pass after its first
 * window, then waited for a maintenance pass (2 min) and was excluded only
 * in the victim's burst, which it slowed past its bound (1.39-1.45 s
 * against 1.30-1.38 s; 0.15 s when excluded before). */
#define CONTROLLER_YIELD_FULL_SCANS 1

/* A contender followed (controller_follow_until()): until when, for its
 * own sake. An exclusion ends its follow-up: there is nothing left to judge. */
typedef struct FollowedContender {
        int pid;                        /* 0 a free slot */
        uint64_t start_time_ticks;
        uint64_t until_usec;
        /* over the bar, its merged pages still to be judged: its latest
         * window's evidence (merging_pages as read since, through
         * controller_note_merging_pages()), judged again at each tick */
        bool pending;
        ModelContender seen;
        uint64_t seen_usec;
} FollowedContender;

#define CONTROLLER_MAX_FOLLOWED 8

typedef struct Controller {
        TuneMode mode;
        uint64_t mode_since_usec;
        uint64_t mode_full_scans;       /* full_scans when the mode began (UINT64_MAX before the first model) */
        double rate_pages_per_sec;      /* what the knobs aim at */
        bool have_knobs;
        uint64_t knob_step;             /* scans_without_gain when the knobs were last set */
        bool knob_throttled;            /* throttled when the knobs were last set */
        uint64_t pages_to_scan, sleep_ms;
        bool run;
        uint64_t last_change_usec;
        uint64_t backoff_usec;          /* last end of a burst */
        bool throttled;                 /* burst allowance spent */

        double allowance_nsec;          /* ksmd CPU left for bursts; negative: overdrawn */
        double borrow_nsec;             /* what this burst may overdraw it by (controller_burst_borrow_nsec) */
        /* Why ksmd runs at the rate it does, in words: the why of the latest
         * tuning decision ("1.2 GiB newly mergeable"), or of a step within a
         * burst that is no decision of its own (decay, a refilled allowance). */
        char reason[DECISION_TEXT_MAX];
        int reason_pid;                 /* the process reason names, 0 when none */
        uint64_t last_tick_usec;        /* model tick already accounted */

        unsigned seen_entered;          /* ksm_enter events taken into account */
        uint64_t seen_new_mergeable;    /* model->new_mergeable_total taken into account */
        uint64_t seen_unmet;            /* model->unmet_new_total taken into account */
        uint64_t last_window_usec;      /* trace window already judged */

        bool advisor_switched_off;      /* we wrote advisor_mode=none */
        bool advisor_seen_off;          /* and saw it take effect */
        bool advisor_left;              /* pages_to_scan belongs to the advisor */

        /* arrivals: processes entering KSM one after another */
        uint64_t last_enter_usec;       /* the latest ksm_enter taken into account */
        uint64_t stream_start_usec;     /* first ksm_enter of the current stream of them */
        uint64_t hold_until_usec;       /* bursting waits until then for the stream to pause */
        bool stream_announced;          /* "holding the burst" said for this stream */
        bool held;                      /* the knobs are the held ones */
        uint64_t decided_usec;          /* the latest decision */

        Exclusion exclusions[CONTROLLER_MAX_EXCLUSIONS];
        size_t n_exclusions;
        ContenderYield yields[CONTROLLER_MAX_YIELDS];
        /* A contender met every condition but a second look at its merged
         * pages, or every one but its blocked share while too little of
         * ksmd's time on it was seen to tell that share: ticks and windows
         * at the burst's pace until then (a window catches ksmd at one
         * process's pages only while the scan is there), judged on the
         * windows that show it again, each until its own end. */
        FollowedContender followed[CONTROLLER_MAX_FOLLOWED];
        /* when a follow-up last began for want of evidence alone: at most
         * one per CONTROLLER_SHORT_FOLLOW_GAP_USEC, so a process that keeps
         * ksmd's visits to it too short to judge (a few pages, a tight
         * mmap loop) cannot keep the windows armed for good */
        uint64_t short_follow_usec;
} Controller;

/* How long a contender seen once is looked for again. */
#define CONTROLLER_FOLLOW_USEC (30 * USEC_PER_SEC)
#define CONTROLLER_SHORT_FOLLOW_GAP_USEC (2 * CONTROLLER_FOLLOW_USEC)

/* A followed contender's ksm_merging_pages as read now, -1 when it is gone
 * (pid reused: start_time_ticks differs), for the judgement between
 * windows of one that waits for them to hold still. */
void controller_note_merging_pages(Controller *c, int pid, uint64_t start_time_ticks, int64_t merging_pages);

/* The latest end of the follow-ups that still run at now, 0 if none. */
uint64_t controller_follow_until(const Controller *c, uint64_t now_usec);

/* Whether windows and ticks go at the burst's pace at now: bursting, or
 * following a contender seen once. */
bool controller_quick_windows(const Controller *c, uint64_t now_usec);

void controller_init(Controller *c, const TuningConfig *cfg, uint64_t now_usec);

/* Memory need 0..1 from MemAvailable/MemTotal and PSI memory some avg10. */
double controller_need(const Model *m, const TuningConfig *cfg);

/* Full scans of its memory that a burst may spend ksmd CPU on beyond
 * BurstAllowance=, borrowed against the budget. */
#define CONTROLLER_BURST_SCANS 3
double controller_burst_borrow_nsec(const Model *m, const TuningConfig *cfg);
/* The long-run ksmd CPU budget, fraction of one core, for this need. */
double controller_budget(const TuningConfig *cfg, double need);

/* Turns a scan rate into knobs within the configured bounds. */
void controller_knobs_for_rate(const TuningConfig *cfg, double rate_pages_per_sec, double cpu_nsec_per_page,
                               uint64_t *ret_pages_to_scan, uint64_t *ret_sleep_ms);

/* One decision step. Knobs go into plan->knobs, process actions are
 * appended to plan, reasons into d. -ENOMEM. */
int controller_decide(Controller *c, const Model *m, const TuningConfig *cfg, uint64_t now_usec, Plan *plan,
                      ControllerDecisions *d);

/* When the next tick is due: BurstInterval while bursting or decaying,
 * default_usec otherwise. */
uint64_t controller_next_interval_usec(const Controller *c, const TuningConfig *cfg, uint64_t default_usec);

/* The exclusion of pid the controller keeps, NULL when none. */
const Exclusion *controller_exclusion(const Controller *c, int pid);

/* An exclusion an earlier instance made (the exclusion journal): kept as
 * if made here at since_usec (CLOCK_MONOTONIC, clamped to now_usec), and
 * readmitted when ReadmitAfter= from then is over, or at the next tick
 * with due (its policy allows no exclusion now). 1 adopted, 0 known
 * already, -ENOSPC when CONTROLLER_MAX_EXCLUSIONS are out already. */
int controller_adopt_exclusion(Controller *c, int pid, uint64_t start_time_ticks, uint64_t since_usec, bool due,
                               const char *comm, uint64_t now_usec);

