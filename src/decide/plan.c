/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>

#include "plan.h"
#include "string-table.h"
#include "util.h"

static const char *const merge_action_table[_MERGE_ACTION_MAX] = {
        [MERGE_ACTION_ENABLE] = "enable",
        [MERGE_ACTION_DISABLE] = "disable",
};

DEFINE_STRING_TABLE_TO_STRING(merge_action, MergeAction);

int plan_add_action(Plan *p, const ProcessAction *a) {
        if (greedy_realloc((void **) &p->actions, &p->n_actions_allocated, p->n_actions + 1, sizeof *a, 8) < 0)
                return -ENOMEM;
        p->actions[p->n_actions++] = *a;
        return 0;
}

void plan_done(Plan *p) {
        free(p->actions);
        *p = (Plan) {};
}
