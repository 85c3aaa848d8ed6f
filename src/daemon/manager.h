/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "conf.h"
#include "decisions.h"
#include "discovery.h"
#include "history.h"
#include "knobs.h"
#include "ksmd.h"
#include "merge.h"
#include "plan.h"
#include "probe.h"
#include "root.h"
#include "snapshot-collect.h"
#include "state-dump.h"
#include "tuner.h"

/* Exclusions journaled at most: the controller's, and those it forgot
 * while observing or paused (readmissions decided, not carried out). */
#define MANAGER_JOURNAL_MAX (2 * CONTROLLER_MAX_EXCLUSIONS)

typedef struct ManagerJournalEntry {
        Exclusion x;
        bool handed;                    /* its readmission is with the actuator: no adopting it again */
} ManagerJournalEntry;

typedef struct ManagerBus ManagerBus;

/* The manager owns every stage (DESIGN.md §3) and is the only module that
 * sees them all: sources -> snapshot -> model -> classify/controller -> plan
 * -> actuators -> report. Everything else reads from it. */
typedef struct Manager {
        sd_event *event;
        sd_event_source *tick_source;
        sd_event_source *watchdog_source;

        char *config_path;              /* --config FILE, else the main file's place in /etc */
        bool config_explicit;           /* --config FILE: that file alone, no drop-ins */
        char **config_files;            /* in force, in merge order; none: built-in defaults */
        Config config;
        bool dry_run_forced;            /* --dry-run overrides DryRun= */

        Root *root;
        Probe probe;
        KnobJournal knobs;
        KsmdSampler *ksmd_sampler;
        Tuner *tuner;                   /* model + controller + tracefs: the tuning stage */
        uint64_t next_tick_usec;        /* interval the tuner asked for */
        int ksmd_pid;

        Snapshot snapshot;              /* latest */
        Snapshot previous;              /* the one before, for rates */
        bool have_previous;
        uint64_t tick_count;
        uint64_t watchdog_usec;
        bool ready_sent;
        int last_knob_error[_KSM_KEY_MAX]; /* to log a refused write once, not every tick */
        int metrics_error;              /* the metrics file's last write, to log a failure once */
        uint64_t dry_run_said[_KSM_KEY_MAX]; /* "would set" value logged per knob, to say it once */
        uint64_t dry_run_said_mask;
        DecisionLog decisions;          /* last decisions with reasons, for status and the bus */
        History history;                /* every tick's figures, bounded (manager-history.c) */
        /* Since start, for the metrics file's counters (manager-metrics.c). */
        KsmdWaitCounts ksmd_samples;
        uint64_t actions[_MERGE_ACTION_MAX][_MERGE_METHOD_MAX][_MERGE_OUTCOME_KIND_MAX]; /* by method used */
        uint64_t slowest_done_usec;     /* the longest action carried out so far: sizes the stop budget */

        /* Set by manager_set_paused()/manager_set_mode() (the bus's Pause,
         * Resume, SetMode), applied from the next tick.
         * Paused: hands off — no knob write, no process action, knobs stay
         * where they are (an administrator can set them by hand meanwhile);
         * measuring and reporting go on. */
        ManagerMode mode;
        bool paused;
        ManagerBus *bus;                /* NULL until manager_startup() connects it */
        Discovery *discovery;           /* processes, policies, verdicts; NULL before startup */
        LoopStats loop;                 /* tick timing, for the SIGUSR1 state dump */
        MergeWorker *merge;             /* the merge actuator's thread (manager-merge.c) */
        /* The controller's exclusions that were carried out and not handed
         * back yet: RuntimeDirectory=/exclusions (manager-merge.c). */
        ManagerJournalEntry journal[MANAGER_JOURNAL_MAX];
        size_t n_journal;
        bool journal_dirty;
        int journal_write_error;        /* the last failed write's, said once; 0 since one succeeded */
        char *journal_path;             /* resolved at start: a reload's RuntimeDirectory= does not move it */
        struct InjectorClient *injector; /* the ptrace-holding process (injector.h); NULL: none */
} Manager;

typedef struct ManagerOptions {
        const char *config_path;
        const char *root_prefix;        /* NULL: the real system */
        bool dry_run;
} ManagerOptions;

int manager_new(const ManagerOptions *o, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Probes the kernel, prepares the runtime directory, sets up the stages
 * (manager_start_stages), starts the merge actuator, installs signal
 * handlers and timers, connects the bus and applies the sandbox. */
int manager_startup(Manager *m);
/* The part of manager_startup() a tick needs: probe, knob journal, ksmd
 * sampler, discovery with the policies, tuner. Nothing that reaches past
 * the root: no merge actuator (it acts on pids of the real system, whatever
 * the root), signals, timers, bus, watchdog or sandbox. Tests drive
 * manager_tick() on a fake tree after it. -ENODEV without KSM. */
int manager_start_stages(Manager *m);
/* Runs the loop until SIGTERM/SIGINT; restores knobs on the way out. */
int manager_run(Manager *m);
/* Re-reads the configuration and the policies; keeps the old configuration
 * when the new one is broken (-EBADMSG, or -errno), and a rejected policy
 * file's last good version: then returns 1, the rest being in force, and
 * manager_policy_rejected() says why. */
int manager_reload(Manager *m);
/* The first diagnostic of the first policy file (or directory) the last
 * load rejected, "file:line: reason"; NULL when none was. */
const char *manager_policy_rejected(const Manager *m);
/* One pass of the data flow; exposed so tests can drive it (after
 * manager_start_stages(), test-manager.c). */
int manager_tick(Manager *m);
/* Puts changed knobs back unless RestoreKnobsOnExit=no. */
int manager_restore(Manager *m);

/* What an administrator may change (over the bus: Pause, Resume, SetMode).
 * Each verb records the request in the decision log with origin ("over the
 * bus by uid 0") and logs it; the change is obeyed from the next tick, which
 * Resume and SetMode bring forward to now. Pausing does not: a paused tick
 * changes nothing. Return 1 when something changed, 0 when it already was
 * so (nothing is recorded then); manager_set_mode() -EINVAL for a mode out
 * of range. */
int manager_set_paused(Manager *m, bool paused, const char *origin);
int manager_set_mode(Manager *m, ManagerMode mode, const char *origin);
/* Records a request that has a verb of its own elsewhere (manager_reload)
 * the same way: "what (requested origin)". */
void manager_note_request(Manager *m, const char *origin, const char *what);
/* Ticks now rather than at the next interval; before manager_startup()
 * there is no timer and nothing to bring forward. */
void manager_request_tick(Manager *m);

/* Readers the facets (bus, metrics file) share. The processes discovery
 * knows, NULL before startup. */
const ProcessTable *manager_processes(const Manager *m);
/* Processes a policy took a position on (merge, wait, don't merge). */
uint64_t manager_managed_processes(const Manager *m);
/* The model's figure (schedstat delta over the latest tick), one for the
 * bus and the metrics. */
double manager_ksmd_cpu_fraction(const Manager *m);
/* The tuning stage's controller (phase, allowance, reason); NULL before
 * startup. */
const Controller *manager_controller(const Manager *m);
/* Which seed fixes the kernel carries, as the daemon knows it now: the
 * tuner's live view, or the start-up probe's (buf) without a tuner. */
const KernelFixes *manager_kernel_fixes(const Manager *m, KernelFixes *buf);

/* Writes are logged as "would set" instead of done: --dry-run, DryRun=, or
 * mode observe. */
static inline bool manager_dry_run(const Manager *m) {
        return m->dry_run_forced || m->config.dry_run || m->mode == MANAGER_MODE_OBSERVE;
}
/* Whether this tick may plan knob changes at all (paused: no). */
static inline bool manager_may_tune(const Manager *m) {
        return !m->paused;
}
/* Whether this tick may switch any process's merging on or off. */
static inline bool manager_may_act_on_processes(const Manager *m) {
        return !m->paused && m->mode == MANAGER_MODE_AUTO;
}
