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
/* Takes finished outcomes into the model. Once per tick, before submitting. */
void manager_merge_collect(Manager *m);
/* Hands the actions of both plans (discovery's, the controller's) to the
 * worker, dry-run and mode honoured; they queue behind a running batch.
 * Only processes whose policy lets the daemon change them are acted on,
 * with no more than the policy's Method= allows. */
void manager_merge_submit(Manager *m, const Plan *a, const Plan *b);
/* At stop: with UnmergeOnExit=yes, disables what this daemon enabled (and
 * nothing else), then stops the worker. */
void manager_merge_stop(Manager *m);
