/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "conf.h"
#include "log.h"
#include "util.h"

static const ConfRange interval_range = { 100 * USEC_PER_MSEC, 3600 * USEC_PER_SEC };
static const ConfRange sample_range = { 1 * USEC_PER_MSEC, 10 * USEC_PER_SEC };
static const ConfRange max_page_sharing_range = { 2, 1U << 20 };
static const ConfUnit prune_unit = { .unit = USEC_PER_MSEC, .name = "ms", .range = { 0, UINT32_MAX }, .optional = true };

#define ITEM(sec, key, parser, field, data) { sec, key, parser, offsetof(Config, field), data }

static const char *const idle_mode_table[_IDLE_MODE_MAX] = {
        [IDLE_MODE_SLOW] = "slow",
        [IDLE_MODE_STOP] = "stop",
};
static const char *const advisor_policy_table[_ADVISOR_POLICY_MAX] = {
        [ADVISOR_POLICY_OFF] = "off",
        [ADVISOR_POLICY_LEAVE] = "leave",
};

static const ConfRange percent_range = { 0, 100 };
static const ConfRange pages_range = { 1, UINT32_MAX };
static const ConfUnit sleep_unit = { .unit = USEC_PER_MSEC, .name = "ms", .range = { 0, 60 * 1000 } };
static const ConfRange scans_range = { 1, 1000 };
static const ConfRange count_range = { 0, UINT32_MAX };
static const ConfRange burst_interval_range = { 50 * USEC_PER_MSEC, 60 * USEC_PER_SEC };
static const ConfRange long_span_range = { USEC_PER_SEC, UINT64_C(7) * 24 * 3600 * USEC_PER_SEC };
static const ConfRange any_span_range = { 0, UINT64_C(7) * 24 * 3600 * USEC_PER_SEC };
static const ConfRange window_range = { 10 * USEC_PER_MSEC, 5 * USEC_PER_SEC };

const ConfItem config_table[] = {
        ITEM("Daemon", "Interval", conf_parse_timespan, interval_usec, &interval_range),
        ITEM("Daemon", "LogLevel", conf_parse_log_level, log_level, NULL),
        ITEM("Daemon", "PolicyDirectories", conf_parse_strv, policy_dirs, NULL),
        ITEM("Daemon", "RuntimeDirectory", conf_parse_string, runtime_dir, NULL),
        ITEM("Daemon", "RestoreKnobsOnExit", conf_parse_bool, restore_knobs, NULL),
        ITEM("Daemon", "UnmergeOnExit", conf_parse_bool, unmerge_on_exit, NULL),
        ITEM("Daemon", "InjectIntoSeccomp", conf_parse_bool, inject_seccomp, NULL),
        ITEM("Daemon", "DryRun", conf_parse_bool, dry_run, NULL),
        ITEM("Daemon", "Sandbox", conf_parse_bool, sandbox, NULL),
        ITEM("Ksm", "SmartScan", conf_parse_bool_opt, smart_scan, NULL),
        ITEM("Ksm", "UseZeroPages", conf_parse_bool_opt, use_zero_pages, NULL),
        ITEM("Ksm", "MaxPageSharing", conf_parse_i64_opt, max_page_sharing, &max_page_sharing_range),
        ITEM("Ksm", "MergeAcrossNodes", conf_parse_bool_opt, merge_across_nodes, NULL),
        ITEM("Ksm", "StableNodeChainsPruneMSec", conf_parse_time_in_unit, stable_node_chains_prune_ms, &prune_unit),
        ITEM("Sampler", "KsmdSampleInterval", conf_parse_timespan, ksmd_sample_interval_usec, &sample_range),
        ITEM("Tuning", "CpuBudget", conf_parse_percent, tuning.cpu_budget_percent, &percent_range),
        ITEM("Tuning", "CpuBudgetUnderPressure", conf_parse_percent, tuning.cpu_budget_pressure_percent, &percent_range),
        ITEM("Tuning", "BurstCpu", conf_parse_percent, tuning.burst_cpu_percent, &percent_range),
        ITEM("Tuning", "BurstAllowance", conf_parse_timespan, tuning.burst_allowance_usec, &any_span_range),
        ITEM("Tuning", "MinPagesToScan", conf_parse_u64, tuning.min_pages_to_scan, &pages_range),
        ITEM("Tuning", "MaxPagesToScan", conf_parse_u64, tuning.max_pages_to_scan, &pages_range),
        ITEM("Tuning", "MinSleepMSec", conf_parse_time_in_unit, tuning.min_sleep_ms, &sleep_unit),
        ITEM("Tuning", "MaxSleepMSec", conf_parse_time_in_unit, tuning.max_sleep_ms, &sleep_unit),
        ITEM("Tuning", "BurstInterval", conf_parse_timespan, tuning.burst_interval_usec, &burst_interval_range),
        ITEM("Tuning", "BackoffFullScans", conf_parse_u64, tuning.backoff_full_scans, &scans_range),
        ITEM("Tuning", "MinGainPages", conf_parse_u64, tuning.min_gain_pages, &pages_range),
        ITEM("Tuning", "BurstMinNewPages", conf_parse_u64, tuning.burst_min_new_pages, &pages_range),
        ITEM("Tuning", "MaintenanceScanTime", conf_parse_timespan, tuning.maintenance_scan_time_usec, &long_span_range),
        ITEM("Tuning", "IdleAfter", conf_parse_timespan, tuning.idle_after_usec, &any_span_range),
        ITEM("Tuning", "IdleMode", conf_parse_enum, tuning.idle_mode, CONF_ENUM(idle_mode_table)),
        ITEM("Tuning", "MemAvailablePlentiful", conf_parse_percent, tuning.mem_plentiful_percent, &percent_range),
        ITEM("Tuning", "MemAvailableTight", conf_parse_percent, tuning.mem_tight_percent, &percent_range),
        ITEM("Tuning", "PressureHigh", conf_parse_percent, tuning.psi_high_percent, &percent_range),
        ITEM("Tuning", "AdvisorPolicy", conf_parse_enum, tuning.advisor_policy, CONF_ENUM(advisor_policy_table)),
        ITEM("Tuning", "Tracepoints", conf_parse_bool, tuning.tracepoints, NULL),
        ITEM("Tuning", "MountTracefs", conf_parse_bool, tuning.mount_tracefs, NULL),
        ITEM("Tuning", "ContentionInterval", conf_parse_timespan, tuning.contention_interval_usec, &long_span_range),
        ITEM("Tuning", "ContentionWindow", conf_parse_timespan, tuning.contention_window_usec, &window_range),
        ITEM("Tuning", "ContentionMinBlocked", conf_parse_percent, tuning.contention_min_blocked_percent, &percent_range),
        ITEM("Tuning", "ExcludeBlocked", conf_parse_percent, tuning.exclude_blocked_percent, &percent_range),
        ITEM("Tuning", "ExcludeMaxMergingPages", conf_parse_u64, tuning.exclude_max_merging_pages, &count_range),
        ITEM("Tuning", "ReadmitAfter", conf_parse_timespan, tuning.readmit_after_usec, &long_span_range),
        ITEM("Metrics", "TextfilePath", conf_parse_string, metrics_textfile, NULL),
};
const size_t config_table_size = ELEMENTSOF(config_table);

void config_init_defaults(Config *c) {
        *c = (Config) {
                .interval_usec = 5 * USEC_PER_SEC,
                .log_level = LOG_INFO,
                .restore_knobs = true,
                .unmerge_on_exit = false,
                .inject_seccomp = false,
                .dry_run = false,
                .sandbox = true,
                .smart_scan = -1,
                .use_zero_pages = -1,
                .max_page_sharing = -1,
                .merge_across_nodes = -1,
                .stable_node_chains_prune_ms = -1,
                .ksmd_sample_interval_usec = 20 * USEC_PER_MSEC,
                .tuning = TUNING_CONFIG_DEFAULTS,
        };
        (void) strv_split_whitespace(DEFAULT_POLICY_DIRS, &c->policy_dirs);
        c->runtime_dir = strdup("/run/ksmtuned2");
}

void config_done(Config *c) {
        strv_free(c->policy_dirs);
        free(c->runtime_dir);
        free(c->metrics_textfile);
        *c = (Config) {};
}

int config_load(Config *c, const char *path, bool missing_ok, bool *ret_found, ConfDiag *diag) {
        _cleanup_fclose_ FILE *f = NULL;
        int r;

        config_done(c);
        config_init_defaults(c);
        if (!c->policy_dirs || !c->runtime_dir)
                return -ENOMEM;

        f = fopen(path, "re");
        if (!f) {
                r = negative_errno();
                if (r == -ENOENT && missing_ok) {
                        if (ret_found)
                                *ret_found = false;
                        return 0;
                }
                return r;
        }
        r = conf_parse_file(f, path, config_table, config_table_size, c, NULL, diag);
        if (r < 0) {
                config_done(c);
                config_init_defaults(c);
                return r;
        }
        if (ret_found)
                *ret_found = true;
        return 0;
}

int config_load_logged(Config *c, const char *path, bool missing_ok, bool *ret_found, FILE *diag_stream) {
        _cleanup_(conf_diag_free) ConfDiag diag = {};
        int r;

        r = config_load(c, path, missing_ok, ret_found, &diag);
        if (diag_stream)
                conf_diag_print(&diag, diag_stream);
        else
                conf_diag_log(&diag);
        return r < 0 ? r : (int) MIN(diag.n, (size_t) INT_MAX);
}

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
