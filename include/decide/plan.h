/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ksm-state.h"
#include "merge-method.h"
#include "process.h"

/* What the pure stages decided for this tick; the actuators carry it out. */
typedef struct KnobPlan {
        uint64_t value[_KSM_KEY_MAX];
        uint64_t set_mask;              /* bit per knob the plan wants set */
} KnobPlan;

static inline void knob_plan_set(KnobPlan *p, KsmKey k, uint64_t v) {
        p->value[k] = v;
        p->set_mask |= UINT64_C(1) << k;
}

static inline bool knob_plan_has(const KnobPlan *p, KsmKey k) {
        return p->set_mask & (UINT64_C(1) << k);
}

/* A change of one process's merging that classification and the controller
 * want, and the merge actuators carry out through a pidfd. start_time_ticks
 * (from /proc/<pid>/stat) guards against pid reuse between plan and act. */
typedef enum MergeAction {
        MERGE_ACTION_ENABLE,
        MERGE_ACTION_DISABLE,
        _MERGE_ACTION_MAX,
} MergeAction;

/* "enable", "disable": in outcome texts, metrics labels and journal fields. */
const char *merge_action_to_string(MergeAction a);

typedef struct ProcessAction {
        int pid;
        uint64_t start_time_ticks;
        MergeAction action;
        MergeMethod method;
        char reason[192];
        ProcessIdentity identity;       /* what its policy matched (process.h); .valid false: not known */
        bool inject_privileged;         /* its policy's InjectPrivileged=yes */
} ProcessAction;

typedef struct Plan {
        KnobPlan knobs;
        ProcessAction *actions;
        size_t n_actions;
        size_t n_actions_allocated;
} Plan;

/* Appends an action (copies it); -ENOMEM. */
int plan_add_action(Plan *p, const ProcessAction *a);
void plan_done(Plan *p);
