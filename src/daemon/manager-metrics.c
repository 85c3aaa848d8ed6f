/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "fileio.h"
#include "log.h"
#include "manager-metrics.h"
#include "metrics.h"
#include "savings.h"
#include "util.h"

void manager_write_metrics(Manager *m) {
        _cleanup_(savings_table_done) SavingsTable cgroups = {};
        _cleanup_free_ char *text = NULL;
        const char *path = m->config.metrics_textfile;
        const ProcessTable *t = manager_processes(m);
        int r;

        if (isempty(path))
                return;
        if (t && savings_by_cgroup(t, &cgroups) < 0)
                return (void) log_oom();
        MetricsInput in = {
                .snapshot = &m->snapshot,
                .page_size = page_size(),
                .version = PACKAGE_VERSION,
                .kernel_release = m->probe.kernel_release,
                .mode = manager_mode_to_string(m->mode),
                .paused = m->paused,
                .dry_run = manager_dry_run(m),
                .ksmd_cpu_ratio = manager_ksmd_cpu_fraction(m),
                .controller = manager_controller(m),
                .managed_processes = manager_managed_processes(m),
                .decisions_total = m->decisions.total,
                .ticks = m->tick_count,
                .now_realtime_usec = now_usec(CLOCK_REALTIME),
                .cgroups = t ? &cgroups : NULL,
        };
        r = metrics_format(&in, &text);
        if (r < 0)
                return (void) log_oom();
        r = write_file_atomic(path, text, strlen(text), 0644);
        if (r < 0 && r != m->metrics_error)
                log_warning_errno(r, "Cannot write the metrics file %s, going on without it: %m", path);
        else if (r >= 0 && m->metrics_error != 0)
                log_info("Writing the metrics file %s again.", path);
        m->metrics_error = r < 0 ? r : 0;
}
