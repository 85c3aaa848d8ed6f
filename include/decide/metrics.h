/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "controller.h"
#include "savings.h"
#include "snapshot.h"

/* The metrics file for fleets: Prometheus text exposition format (0.0.4),
 * what node_exporter's textfile collector reads, with per-cgroup / per-VM /
 * per-unit savings as labels. Pure: the caller gathers the figures. */
typedef struct MetricsInput {
        const Snapshot *snapshot;
        uint64_t page_size;
        const char *version;
        const char *kernel_release;
        const char *mode;               /* auto, tune-only, observe */
        bool paused;
        bool dry_run;
        double ksmd_cpu_ratio;          /* latest tick, of one CPU */
        const Controller *controller;   /* NULL: no tuning stage */
        uint64_t managed_processes;
        uint64_t decisions_total;
        uint64_t ticks;
        uint64_t now_realtime_usec;
        const SavingsTable *cgroups;    /* NULL: no process model */
} MetricsInput;

/* The whole file as one string. Label values are escaped as the format
 * wants (\\, \", \n) and bytes that are not UTF-8 become U+FFFD, so hostile
 * cgroup names cannot break a scrape. -ENOMEM. */
int metrics_format(const MetricsInput *in, char **ret);

/* Label value escaping, exposed for tests. */
char *metrics_escape_label(const char *s);
