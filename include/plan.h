/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

#include "conf.h"
#include "ksm-sysfs.h"

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

/* The fixed [Ksm] settings of the configuration, as a plan. */
void knob_plan_from_config(const Config *c, KnobPlan *ret);
