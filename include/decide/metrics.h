/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller.h"
#include "kernel-fixes.h"
#include "ksmd-state.h"
#include "savings.h"
#include "snapshot.h"

/* The metrics file for fleets: Prometheus text exposition format (0.0.4),
 * what node_exporter's textfile collector reads, with savings per VM and
 * per unit as labels. Pure: the caller gathers the figures. Every series is
 * listed in ksmtuned2.metrics(7). */

/* At most this many VMs and this many units get a series of their own,
 * the largest; the rest are summed under the label METRICS_OTHER_LABEL, so
 * that a host with thousands of transient units cannot flood Prometheus. */
#define METRICS_MAX_GROUP_SERIES 100
/* Label values no VM or unit can have: systemd's unit names and machined's
 * machine names have no parentheses. */
#define METRICS_OTHER_LABEL "(other)"
#define METRICS_NO_UNIT_LABEL "(none)"

/* How often the daemon's process actions ended so, since it started. */
typedef struct MetricsActionCount {
        const char *action;             /* enable, disable */
        const char *method;             /* the mechanism tried last; none when none was */
        const char *outcome;            /* done, already, dry-run, refused, ... */
        uint64_t count;
} MetricsActionCount;

typedef struct MetricsInput {
        const Snapshot *snapshot;
        uint64_t page_size;
        const char *version;
        const char *kernel_release;
        const char *const *modes;       /* every mode's name, for the state set */
        size_t n_modes;
        size_t mode;                    /* the one in force, an index into modes */
        bool paused;
        bool dry_run;
        double ksmd_cpu_ratio;          /* latest tick, of one CPU */
        double ksmd_cpu_budget_ratio;   /* the tuner's long-run budget now, of one CPU */
        const Controller *controller;   /* NULL: no tuning stage */
        const KernelFixes *fixes;       /* NULL: none known */
        const SmartScanWorkaround *smart_scan; /* NULL: no tuning stage */
        /* Counters since the daemon started: Prometheus takes rates of them
         * over any scrape interval, where the per-tick ratios alias. */
        KsmdWaitCounts ksmd_samples;    /* ksmd's sampled states */
        const MetricsActionCount *actions;
        size_t n_actions;
        uint64_t managed_processes;
        uint64_t decisions_total;
        uint64_t ticks;
        uint64_t now_realtime_usec;
        const SavingsTable *cgroups;    /* NULL: no process model */
        size_t max_group_series;        /* METRICS_MAX_GROUP_SERIES; smaller in tests */
} MetricsInput;

/* The whole file as one string. Label values are escaped as the format
 * wants (\\, \", \n) and bytes that are not UTF-8 become U+FFFD, so hostile
 * VM and unit names cannot break a scrape. -ENOMEM. */
int metrics_format(const MetricsInput *in, char **ret);

/* Label value escaping, exposed for tests. */
char *metrics_escape_label(const char *s);
