/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "controller.h"
#include "fileio.h"
#include "log.h"
#include "manager-metrics.h"
#include "metrics.h"
#include "savings.h"
#include "util.h"

#define N_ACTION_COUNTS (_MERGE_ACTION_MAX * _MERGE_METHOD_MAX * _MERGE_OUTCOME_KIND_MAX)

/* The budget controller_decide() held ksmd to this tick: CpuBudget= to
 * CpuBudgetUnderPressure= by memory need. */
static double ksmd_cpu_budget(const Manager *m) {
        const TuningConfig *cfg = &m->config.tuning;
        double need = m->tuner ? controller_need(tuner_model(m->tuner), cfg) : 0.0;
        return controller_budget(cfg, need);
}

/* The (action, method, outcome) triples that happened, in a fixed order. A
 * triple appears with its first action and stays. */
static size_t action_counts(const Manager *m, MetricsActionCount ret[static N_ACTION_COUNTS]) {
        size_t n = 0;
        for (MergeAction a = 0; a < _MERGE_ACTION_MAX; a++)
                for (MergeMethod u = 0; u < _MERGE_METHOD_MAX; u++)
                        for (MergeOutcomeKind k = 0; k < _MERGE_OUTCOME_KIND_MAX; k++)
                                if (m->actions[a][u][k] > 0)
                                        ret[n++] = (MetricsActionCount) {
                                                .action = merge_action_to_string(a),
                                                .method = merge_method_to_string(u),
                                                .outcome = merge_outcome_kind_to_string(k),
                                                .count = m->actions[a][u][k],
                                        };
        return n;
}

void manager_write_metrics(Manager *m) {
        _cleanup_(savings_table_done) SavingsTable cgroups = {};
        _cleanup_free_ char *text = NULL;
        const char *path = m->config.metrics_textfile;
        const ProcessTable *t = manager_processes(m);
        const char *modes[_MANAGER_MODE_MAX];
        MetricsActionCount actions[N_ACTION_COUNTS];
        KernelFixes fixes_buf;
        int r;

        if (isempty(path))
                return;
        /* Kept current by discovery: no walk of the table per tick. */
        if (t && discovery_savings_by_cgroup(m->discovery, &cgroups) < 0)
                return (void) log_oom();
        for (ManagerMode i = 0; i < _MANAGER_MODE_MAX; i++)
                modes[i] = manager_mode_to_string(i);
        MetricsInput in = {
                .snapshot = &m->snapshot,
                .page_size = page_size(),
                .version = PACKAGE_VERSION,
                .kernel_release = m->probe.kernel_release,
                .modes = modes,
                .n_modes = _MANAGER_MODE_MAX,
                .mode = m->mode,
                .paused = m->paused,
                .dry_run = manager_dry_run(m),
                .ksmd_cpu_ratio = manager_ksmd_cpu_fraction(m),
                .controller = manager_controller(m),
                .fixes = manager_kernel_fixes(m, &fixes_buf),
                .smart_scan = tuner_smart_scan_workaround(m->tuner),
                .ksmd_cpu_budget_ratio = ksmd_cpu_budget(m),
                .ksmd_samples = m->ksmd_samples,
                .actions = actions,
                .n_actions = action_counts(m, actions),
                .managed_processes = manager_managed_processes(m),
                .decisions_total = m->decisions.total,
                .ticks = m->tick_count,
                .now_realtime_usec = now_usec(CLOCK_REALTIME),
                .cgroups = t ? &cgroups : NULL,
                .max_group_series = METRICS_MAX_GROUP_SERIES,
        };
        r = metrics_format(&in, &text);
        if (r < 0)
                return (void) log_oom();
        /* Its per-VM and per-unit series attribute merged pages to other
         * users' processes (an oracle for KSM's side channel): root's, and
         * the group's of its directory when that is setgid, so a textfile
         * collector reads it by group (ksmtuned2.metrics(7)). */
        r = write_file_replace(path, text, strlen(text), 0640);
        if (r < 0 && r != m->metrics_error)
                log_warning_errno(r, "Cannot write the metrics file %s, going on without it: %m", path);
        else if (r >= 0 && m->metrics_error != 0)
                log_info("Writing the metrics file %s again.", path);
        m->metrics_error = r < 0 ? r : 0;
}
