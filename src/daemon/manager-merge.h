/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "manager.h"
#include "plan.h"

/* The manager's side of the merge actuator (merge.h), kept out of
 * manager.c: a worker thread carries out the plan's ProcessAction entries
 * off the loop; each outcome goes back into the process model
 * (Process.merge_outcome, for status and the bus) and, when something
 * changed or was refused, into the decision log. */

/* Starts the worker; after the probe (it forks), before the sandbox. */
int manager_merge_start(Manager *m);
/* The controller's exclusions outlive the daemon: they are written to
 * RuntimeDirectory=/exclusions ("PID START_TIME_TICKS SINCE_USEC", since on
 * CLOCK_MONOTONIC) whenever they change, and an instance started after
 * one that was killed or stopped keeps those whose process still runs
 * (discovery does not switch it back on) and readmits each when
 * ReadmitAfter= from its exclusion is over, with what the process had
 * (the merge worker's restore book, RuntimeDirectory=/restore-ranges).
 * Adopt once at start, after discovery's first scan and the tuner; sync
 * after each tick's actions are submitted. */
void manager_exclusions_adopt(Manager *m);
void manager_exclusions_sync(Manager *m);
/* Takes finished outcomes into the model. Once per tick, before submitting. */
void manager_merge_collect(Manager *m);
/* Hands the actions of both plans (discovery's, the controller's) to the
 * worker, dry-run and mode honoured; they queue behind a running batch.
 * Only processes whose policy lets the daemon change them are acted on,
 * with no more than the policy's Method= allows (manager_merge_select). */
void manager_merge_submit(Manager *m, const Plan *a, const Plan *b);

/* Whether the daemon may carry out a on the process table t (NULL: none
 * known): its pid must be the same incarnation (start time), classified, and
 * its policy must let the daemon change it; a controller action must also
 * respect Mode=always (no exclusion) and Mode=never or "not yet" (no
 * readmission). When allowed, Method=any is narrowed to the policy's
 * Method=. A refusal is logged (notice for the controller, which logged its
 * decision already). */
bool manager_merge_policy_allows(const ProcessTable *t, ProcessAction *a, bool from_controller);
/* The actions of discovery's plan, then the controller's, that
 * manager_merge_policy_allows() lets through, appended to ret (narrowed).
 * -ENOMEM. */
int manager_merge_select(const ProcessTable *t, const Plan *discovery, const Plan *controller, Plan *ret);
/* At stop: lets the worker finish, takes its outcomes like a tick would,
 * with UnmergeOnExit=yes disables what this daemon enabled (and nothing
 * else), then stops the worker. */
void manager_merge_stop(Manager *m);
