/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <inttypes.h>
#include <string.h>

#include "discovery.h"
#include "fileio.h"
#include "log-messages.h"
#include "log.h"
#include "manager-merge.h"
#include "merge.h"
#include "tuner.h"
#include "util.h"

static MergeContext merge_context(const Manager *m) {
        return (MergeContext) {
                .root = m->root,
                .probe = &m->probe,
                .dry_run = manager_dry_run(m),
                .inject_seccomp = m->config.inject_seccomp,
                .injector = m->injector,
        };
}

static char *runtime_file(const Manager *m, const char *name) {
        char *p = NULL;
        if (asprintf(&p, "%s/%s", m->config.runtime_dir, name) < 0)
                return NULL;
        return p;
}

int manager_merge_start(Manager *m) {
        MergeContext c = merge_context(m);
        _cleanup_free_ char *book = runtime_file(m, "restore-ranges"), *ledger = runtime_file(m, "enabled");
        if (!book || !ledger)
                return log_oom();
        c.restore_path = book;
        c.ledger_path = ledger;
        int r = merge_worker_start(&c, &m->merge);
        if (r < 0)
                return log_error_errno(r, "Failed to start the merge actuator: %m");
        return 0;
}

/* --- the exclusion journal --- */

/* start_time_ticks 0: any process under pid. */
static ssize_t journal_find(const Manager *m, int pid, uint64_t start_time_ticks) {
        for (size_t i = 0; i < m->n_journal; i++)
                if (m->journal[i].x.pid == pid &&
                    (start_time_ticks == 0 || m->journal[i].x.start_time_ticks == start_time_ticks))
                        return (ssize_t) i;
        return -1;
}

static void journal_remove_at(Manager *m, size_t i) {
        memmove(&m->journal[i], &m->journal[i + 1], (m->n_journal - i - 1) * sizeof *m->journal);
        m->n_journal--;
        m->journal_dirty = true;
}

static void journal_remove(Manager *m, int pid, uint64_t start_time_ticks) {
        ssize_t i = journal_find(m, pid, start_time_ticks);
        if (i >= 0)
                journal_remove_at(m, (size_t) i);
}

static void journal_add(Manager *m, const Exclusion *e) {
        ssize_t i = journal_find(m, e->pid, 0);
        if (i >= 0)
                journal_remove_at(m, (size_t) i);
        if (m->n_journal >= MANAGER_JOURNAL_MAX) {
                /* kept in the order they came: the first is the oldest */
                log_warning("Exclusion journal full (%d): forgetting pid %d's, the oldest.", MANAGER_JOURNAL_MAX,
                            m->journal[0].x.pid);
                journal_remove_at(m, 0);
        }
        m->journal[m->n_journal++] = (ManagerJournalEntry) { .x = *e };
        m->journal[m->n_journal - 1].x.due = false;
        m->journal_dirty = true;
}

static void journal_write(Manager *m) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        if (!m->journal_dirty || !m->journal_path)
                return;
        FILE *f = open_memstream(&text, &size);
        if (!f) {
                log_oom();
                return;
        }
        for (size_t i = 0; i < m->n_journal; i++)
                fprintf(f, "%d %" PRIu64 " %" PRIu64 "\n", m->journal[i].x.pid, m->journal[i].x.start_time_ticks,
                        m->journal[i].x.since_usec);
        if (fclose(f) != 0) {
                log_oom();
                return;
        }
        /* Tried again at every tick while it fails (a full /run). */
        if (write_state_file_logged(m->journal_path, text, "the exclusions, for an instance started after this one",
                                    &m->journal_write_error) >= 0)
                m->journal_dirty = false;
}

/* Discovery owns the process's merge state again: its policy decides. */
static void discovery_owns_again(Manager *m, int pid, uint64_t start_time_ticks) {
        ProcessAction a = { .pid = pid, .start_time_ticks = start_time_ticks, .action = MERGE_ACTION_ENABLE };
        if (m->discovery)
                discovery_note_exclusion(m->discovery, &a);
}

/* Into the controller (and discovery's excluded flag): at start, and for
 * an exclusion the controller dropped while nothing was carried out (its
 * readmission decided in Mode=observe or under DryRun=). true when the
 * controller keeps it. */
static bool journal_adopt(Manager *m, const Exclusion *e, const Process *p, uint64_t now, const char *origin) {
        /* A policy that says Mode=always now (edited meanwhile) allows no
         * exclusion: due at once. */
        bool always = p->have_verdict && p->verdict.always;
        int r = tuner_adopt_exclusion(m->tuner, e->pid, e->start_time_ticks, e->since_usec, always, p->comm, now);
        if (r == -ENOSPC) {
                log_warning("pid %d (%s): %d exclusions kept already, no room for the one %s: it is left to its "
                            "policy.", e->pid, CESCAPE(p->comm, CESCAPE_ASCII), CONTROLLER_MAX_EXCLUSIONS, origin);
                journal_remove(m, e->pid, e->start_time_ticks);
                discovery_owns_again(m, e->pid, e->start_time_ticks);
                return false;
        }
        if (r <= 0)
                return r == 0;
        ProcessAction a = { .pid = e->pid, .start_time_ticks = e->start_time_ticks, .action = MERGE_ACTION_DISABLE };
        discovery_note_exclusion(m->discovery, &a);
        char ago[32], left[32];
        uint64_t age = now - MIN(e->since_usec, now), after = m->config.tuning.readmit_after_usec;
        if (always)
                log_notice("pid %d (%s) is out of KSM by the exclusion %s; its policy says Mode=always now: "
                           "readmitted now.", e->pid, CESCAPE(p->comm, CESCAPE_ASCII), origin);
        else
                log_notice("Keeping the exclusion of pid %d (%s) %s %s ago; readmitted %s%s.", e->pid,
                           CESCAPE(p->comm, CESCAPE_ASCII), origin, format_timespan(ago, sizeof ago, age),
                           age >= after ? "now" : "in ", age >= after ? "" : format_timespan(left, sizeof left, after - age));
        if (always || age >= after)
                manager_request_tick(m);
        return true;
}

static int adopt_line(char *line, const char **why, void *userdata) {
        Manager *m = userdata;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        int pid = 0, used = 0;
        unsigned long long start = 0, since = 0;

        *why = "not \"PID START_TIME_TICKS SINCE_USEC\"";
        if (sscanf(line, "%d %llu %llu%n", &pid, &start, &since, &used) != 3 || line[used] != 0 || pid <= 0)
                return -EINVAL;
        const Process *p = m->discovery ? process_table_get(discovery_processes(m->discovery), pid) : NULL;
        if (!p || p->start_time_ticks != start) {
                log_debug("%s: pid %d is gone (or another process now), nothing to keep.", m->journal_path, pid);
                return 1;
        }
        Exclusion e = { .pid = pid, .start_time_ticks = start, .since_usec = MIN((uint64_t) since, now) };
        strscpy(e.comm, sizeof e.comm, p->comm);
        journal_add(m, &e);
        (void) journal_adopt(m, &e, p, now, "an earlier instance made");
        return 1;
}

void manager_exclusions_adopt(Manager *m) {
        _cleanup_free_ char *text = NULL;
        int r;

        m->journal_path = runtime_file(m, "exclusions");
        if (!m->journal_path) {
                log_oom();
                return;
        }
        r = read_full_file_at(AT_FDCWD, m->journal_path, 64 * 1024, &text, NULL);
        if (r == -ENOENT)
                return;
        if (r < 0) {
                log_warning_errno(r, "Cannot read %s, ignoring the exclusions an earlier instance made: %m",
                                  m->journal_path);
                return;
        }
        /* written again at the first sync: what is kept, no more */
        m->journal_dirty = true;
        if (state_file_parse_lines(text, m->journal_path, adopt_line, m) < 0)
                log_oom();
}

/* An outcome changes the journal: a DISABLE carried out for an exclusion
 * the controller keeps enters it, an ENABLE carried out (the readmission,
 * or discovery's after a policy change) or a process gone leaves it. The
 * ledger's unmerge at a stop (UnmergeOnExit=) is no exclusion. */
static void journal_note_outcome(Manager *m, const MergeOutcome *o) {
        const Controller *c = m->tuner ? tuner_controller(m->tuner) : NULL;
        if (o->kind == MERGE_OUTCOME_GONE ||
            (o->action == MERGE_ACTION_ENABLE && (o->kind == MERGE_OUTCOME_DONE || o->kind == MERGE_OUTCOME_ALREADY))) {
                journal_remove(m, o->pid, o->start_time_ticks);
                return;
        }
        /* A switch-on not carried out (failed, refused by the actuator)
         * stays with discovery, which tries again on its own back-off; the
         * entry stays for the stop and a next instance. */
        if (o->action == MERGE_ACTION_ENABLE)
                return;
        if (o->kind != MERGE_OUTCOME_DONE && o->kind != MERGE_OUTCOME_ALREADY)
                return;
        if (streq(o->reason, MERGE_REASON_UNMERGE_ON_EXIT))
                return;
        const Exclusion *x = c ? controller_exclusion(c, o->pid) : NULL;
        if (x && x->start_time_ticks == o->start_time_ticks)
                journal_add(m, x);
}

void manager_exclusions_sync(Manager *m) {
        const Controller *c = m->tuner ? tuner_controller(m->tuner) : NULL;
        const ProcessTable *t = manager_processes(m);
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        bool acting = c && manager_may_act_on_processes(m) && !manager_dry_run(m);
        for (size_t i = 0; i < m->n_journal;) {
                const Exclusion *e = &m->journal[i].x;
                const Process *p = t ? process_table_get(t, e->pid) : NULL;
                if (!p || p->start_time_ticks != e->start_time_ticks) {
                        /* gone without an action that would say so */
                        journal_remove_at(m, i);
                        continue;
                }
                /* Acting again after observing: what the controller
                 * readmitted meanwhile on paper is still out. */
                if (acting && !controller_exclusion(c, e->pid) && !m->journal[i].handed) {
                        Exclusion copy = *e;
                        if (!journal_adopt(m, &copy, p, now, "made before observing"))
                                continue; /* left the journal */
                }
                i++;
        }
        journal_write(m);
}

/* The MESSAGE_ID of an outcome that is news: a change, or a change that was
 * not made. NULL for already, dry-run, skipped and gone. */
static const char *outcome_message_id(const MergeOutcome *o) {
        switch (o->kind) {
        case MERGE_OUTCOME_DONE:
                return o->action == MERGE_ACTION_ENABLE ? KSMTUNED2_MESSAGE_PROCESS_ENABLED
                                                        : KSMTUNED2_MESSAGE_PROCESS_DISABLED;
        case MERGE_OUTCOME_REFUSED:
        case MERGE_OUTCOME_FAILED:
        case MERGE_OUTCOME_UNSUPPORTED:
                return KSMTUNED2_MESSAGE_PROCESS_NOT_CHANGED;
        default:
                return NULL;
        }
}

static void note_outcome(Manager *m, const MergeOutcome *o) {
        const ProcessTable *t = manager_processes(m);
        Process *p = t ? process_table_get(t, o->pid) : NULL;

        if (p && p->start_time_ticks != o->start_time_ticks)
                p = NULL; /* another process under the same pid: not its comm, unit or VM */
        m->actions[o->action][o->used][o->kind]++;
        journal_note_outcome(m, o);
        if (o->kind == MERGE_OUTCOME_DONE)
                m->slowest_done_usec = MAX(m->slowest_done_usec, o->duration_usec);
        if (p) {
                strscpy(p->merge_outcome, sizeof p->merge_outcome, o->text);
                p->merge_outcome_kind = (int) o->kind;
                p->merge_outcome_usec = o->time_usec;
                /* It did not stop (uninterruptible sleep) or its call did
                 * not return: discovery's retry back-off (action_retry_usec,
                 * 60 s) counts from this outcome, not from the planning, which
                 * may be long before when the queue was held. */
                if (o->error == ETIMEDOUT)
                        p->action_planned_usec = o->time_usec;
                /* Its mmap_lock is busy: discovery neither reads nor plans
                 * it again until the slow back-off has passed. */
                if (o->slow) {
                        p->slow = true;
                        p->slow_since_usec = o->time_usec;
                        discovery_process_changed(m->discovery, p);
                }
        }
        /* Changes and refusals are decisions worth showing; "already" and
         * dry-run lines are not news. */
        const char *comm = p ? p->comm : "?";
        const char *id = outcome_message_id(o);
        LogFields fields = {
                .message_id = id,
                .pid = o->pid,
                .unit = p ? p->unit : NULL,
                .vm = p ? p->vm_name : NULL,
                .decision = id ? "merge" : NULL,
                .action = merge_action_to_string(o->action),
                .method = merge_method_to_string(o->used),
                .outcome = merge_outcome_kind_to_string(o->kind),
        };
        if (id) {
                /* Without p, whose the pid is now is not known: root's to see. */
                DecisionSubject who = p ? DECISION_SUBJECT_PROCESS(p) : (DecisionSubject) { .pid = o->pid };
                const Decision *d = decision_log_add_about(&m->decisions, who, "merge", "pid %d (%s): %s (%s)",
                                                           o->pid, comm, o->text, o->reason);
                log_struct_errno(o->kind == MERGE_OUTCOME_DONE ? LOG_INFO : LOG_NOTICE, o->error, &fields, "%s",
                                 d->text);
        } else
                log_struct_errno(o->kind == MERGE_OUTCOME_DRY_RUN ? LOG_INFO : LOG_DEBUG, o->error, &fields,
                                 "pid %d (%s): %s (%s)", o->pid, comm, o->text, o->reason);
}

/* Outcomes go into the processes they name and the decision log. */
static void take_outcomes(Manager *m, MergeReport *r) {
        for (size_t i = 0; i < r->n; i++)
                note_outcome(m, &r->outcomes[i]);
        merge_report_done(r);
}

void manager_merge_collect(Manager *m) {
        MergeReport r = {};
        if (!m->merge)
                return;
        if (merge_worker_take(m->merge, &r) < 0)
                log_oom();
        take_outcomes(m, &r);
}

/* The controller's exclusions and readmissions name a process and
 * Method=any; what may be done to a process is its policy's to say
 * (verdict_refuses_controller), and a policy's Method= narrows "any".
 * Discovery's own actions follow the verdict already. */
bool manager_merge_policy_allows(const ProcessTable *t, ProcessAction *a, bool from_controller) {
        Process *p = t ? process_table_get(t, a->pid) : NULL;
        const char *why;

        if (!p || p->start_time_ticks != a->start_time_ticks || !p->have_verdict)
                why = "not classified";
        else if (from_controller)
                why = verdict_refuses_controller(&p->verdict, a->action == MERGE_ACTION_ENABLE);
        else
                why = verdict_refuses_change(&p->verdict);
        if (why) {
                /* the controller logged its decision: say that it was not
                 * carried out, and why */
                log_struct(from_controller ? LOG_NOTICE : LOG_DEBUG,
                           LOG_FIELDS(.pid = a->pid, .action = merge_action_to_string(a->action)),
                           "pid %d: %s; not done: %s.", a->pid, a->reason, why);
                return false;
        }
        if (a->method == MERGE_METHOD_ANY)
                a->method = p->verdict.method;
        /* What the policy matched, for the actuator to check again once it
         * holds the process (merge.h) */
        a->identity = p->identity;
        a->inject_privileged = p->verdict.inject_privileged;
        return true;
}

int manager_merge_select(const ProcessTable *t, const Plan *discovery, const Plan *controller, Plan *ret) {
        size_t n = discovery->n_actions + controller->n_actions;

        for (size_t i = 0; i < n; i++) {
                bool from_controller = i >= discovery->n_actions;
                ProcessAction x = from_controller ? controller->actions[i - discovery->n_actions]
                                                  : discovery->actions[i];
                if (!manager_merge_policy_allows(t, &x, from_controller))
                        continue;
                if (plan_add_action(ret, &x) < 0)
                        return -ENOMEM;
        }
        return 0;
}

void manager_merge_submit(Manager *m, const Plan *a, const Plan *b) {
        _cleanup_(plan_done) Plan all = {};
        size_t n = a->n_actions + b->n_actions;
        int r;

        if (!m->merge || n == 0)
                return;
        if (!manager_may_act_on_processes(m)) {
                log_debug("Mode %s%s: %zu process action(s) not carried out.", manager_mode_to_string(m->mode),
                          m->paused ? " (paused)" : "", n);
                return;
        }
        if (manager_merge_select(manager_processes(m), a, b, &all) < 0) {
                log_oom();
                return;
        }
        /* A switch-on handed to the actuator, the controller's or
         * discovery's (after a policy change): the journal keeps the
         * exclusion until its outcome says the process is on (a stop that
         * drops it readmits it itself). */
        for (size_t k = 0; !manager_dry_run(m) && k < all.n_actions; k++) {
                ssize_t i = all.actions[k].action == MERGE_ACTION_ENABLE
                                    ? journal_find(m, all.actions[k].pid, all.actions[k].start_time_ticks)
                                    : -1;
                if (i >= 0)
                        m->journal[i].handed = true;
        }
        /* The controller owns an excluded process's merge state until it
         * readmits it: tell discovery, whose plan_process() would switch
         * merging back on at its next tick. A readmission decided while
         * acting gives the process back to discovery whether it is carried
         * out or refused by the policy (Mode=never now, not yet, not
         * classified), and discovery switches it on by its policy, with what
         * the restore book says it had; refused, it leaves the journal. */
        for (size_t i = 0; i < b->n_actions; i++) {
                const ProcessAction *x = &b->actions[i];
                bool selected = false;
                for (size_t k = 0; k < all.n_actions && !selected; k++)
                        selected = all.actions[k].pid == x->pid && all.actions[k].action == x->action;
                if (selected && m->discovery)
                        discovery_note_exclusion(m->discovery, x);
                if (selected || x->action != MERGE_ACTION_ENABLE || manager_dry_run(m))
                        continue;
                discovery_owns_again(m, x->pid, x->start_time_ticks);
                ssize_t k = journal_find(m, x->pid, x->start_time_ticks);
                if (k >= 0 && !m->journal[k].handed)
                        journal_remove_at(m, (size_t) k);
        }
        merge_worker_set_options(m->merge, manager_dry_run(m), m->config.inject_seccomp);
        r = merge_worker_submit(m->merge, all.actions, all.n_actions);
        n = all.n_actions;
        if (r == -EBUSY)
                log_warning("Merge actuator has 4096 actions queued; %zu more dropped (discovery plans its own again).",
                            n);
        else if (r < 0)
                log_oom();
}

/* The whole stop of the actuator, UnmergeOnExit= included: whatever the
 * worker is waiting for (a target in uninterruptible sleep, a long injected
 * call), the daemon exits within about this; on a machine where actions
 * were seen to take longer (an emulated guest: an injection there takes
 * 1-2 s of the 2 s, and UnmergeOnExit=yes gave up on it), 4 times the
 * slowest action done so far, up to MERGE_STOP_MAX_USEC (well inside
 * systemd's default TimeoutStopSec=90s). */
#define MERGE_STOP_USEC (2 * USEC_PER_SEC)
#define MERGE_STOP_MAX_USEC (20 * USEC_PER_SEC)

static uint64_t merge_stop_budget_usec(const Manager *m) {
        return CLAMP(4 * m->slowest_done_usec, MERGE_STOP_USEC, MERGE_STOP_MAX_USEC);
}

/* At a clean stop the exclusions carried out end: each process gets back
 * what it had (as at its readmission), since no instance may come to
 * readmit it, and the knobs go back to what they were as well. A
 * restarted daemon meets the contender afresh. Only when the daemon acts
 * on processes (Mode=auto, not paused, no dry run): else what is out stays
 * in the journal, for an instance that does. What was not given back (the
 * deadline, a refusal) stays there too. */
static void plan_readmissions(Manager *m, uint64_t now, Plan *ret) {
        for (size_t i = 0; i < m->n_journal; i++) {
                const Exclusion *x = &m->journal[i].x;
                char span[32];
                ProcessAction a = {
                        .pid = x->pid,
                        .start_time_ticks = x->start_time_ticks,
                        .action = MERGE_ACTION_ENABLE,
                        .method = MERGE_METHOD_ANY,
                };
                snprintf(a.reason, sizeof a.reason, "readmitting pid %d (%s) as the daemon stops: excluded %s ago",
                         x->pid, x->comm, format_timespan(span, sizeof span, now - MIN(x->since_usec, now)));
                if (!manager_merge_policy_allows(manager_processes(m), &a, true))
                        continue;
                log_struct(LOG_INFO, LOG_FIELDS(.pid = a.pid, .action = "readmit"), "%s.", a.reason);
                if (plan_add_action(ret, &a) < 0)
                        log_oom();
        }
}

void manager_merge_stop(Manager *m) {
        _cleanup_(plan_done) Plan readmit = {};
        MergeReport r = {};

        if (!m->merge)
                return;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        uint64_t budget = merge_stop_budget_usec(m);
        uint64_t deadline = now + budget;
        bool dry = manager_dry_run(m);
        /* What the worker did since the last tick is news like any other
         * outcome, also when the stop comes before that tick: an exclusion
         * carried out since enters the journal before the readmissions are
         * planned from it. */
        (void) merge_worker_take(m->merge, &r);
        take_outcomes(m, &r);
        if (manager_may_act_on_processes(m) && !dry)
                plan_readmissions(m, now, &readmit);
        bool unmerge = m->config.unmerge_on_exit && !dry;
        if (unmerge || readmit.n_actions > 0) {
                if (unmerge)
                        log_info("UnmergeOnExit=yes: disabling merging for the processes this daemon enabled.");
                merge_worker_set_options(m->merge, dry, m->config.inject_seccomp);
                /* the running action gives up by the deadline */
                int k = merge_worker_finish(m->merge, readmit.actions, readmit.n_actions, unmerge, deadline, &r);
                if (k == -ETIMEDOUT)
                        log_warning("%s not finished within %" PRIu64 " ms; some processes may still %s.",
                                    unmerge ? "UnmergeOnExit=yes:" : "Readmissions at exit:", budget / USEC_PER_MSEC,
                                    unmerge ? "merge" : "be excluded");
                else if (k < 0)
                        log_oom();
                take_outcomes(m, &r);
        }
        if (m->n_journal > 0)
                log_notice("%zu excluded process(es) left out of KSM as the daemon stops%s: an instance started later "
                           "readmits them when ReadmitAfter= is over.", m->n_journal,
                           readmit.n_actions > 0 ? " (not given back in time, or refused)" : "");
        journal_write(m);
        m->merge = merge_worker_stop_until(m->merge, deadline);
}
