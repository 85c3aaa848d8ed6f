/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>

#include "plan.h"

void knob_plan_from_config(const Config *c, KnobPlan *ret) {
        KnobPlan p = {};
        const struct {
                KsmKey key;
                int64_t value;
        } fixed[] = {
                { KSM_SMART_SCAN, c->smart_scan },
                { KSM_USE_ZERO_PAGES, c->use_zero_pages },
                { KSM_MAX_PAGE_SHARING, c->max_page_sharing },
                { KSM_MERGE_ACROSS_NODES, c->merge_across_nodes },
                { KSM_STABLE_NODE_CHAINS_PRUNE_MILLISECS, c->stable_node_chains_prune_ms },
        };
        for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
                if (fixed[i].value >= 0)
                        knob_plan_set(&p, fixed[i].key, (uint64_t) fixed[i].value);
        *ret = p;
}

int plan_add_action(Plan *p, const ProcessAction *a) {
        ProcessAction *n = realloc(p->actions, sizeof *n * (p->n_actions + 1));
        if (!n)
                return -ENOMEM;
        p->actions = n;
        p->actions[p->n_actions++] = *a;
        return 0;
}

void plan_done(Plan *p) {
        free(p->actions);
        *p = (Plan) {};
}
