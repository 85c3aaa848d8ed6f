/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "conf.h"
#include "fileio.h"
#include "log.h"
#include "string-table.h"
#include "util.h"

static const ConfRange interval_range = { 100 * USEC_PER_MSEC, 3600 * USEC_PER_SEC };
static const ConfRange sample_range = { 1 * USEC_PER_MSEC, 10 * USEC_PER_SEC };
static const ConfRange max_page_sharing_range = { 2, 1U << 20 };
static const ConfUnit prune_unit = {
        .unit = USEC_PER_MSEC, .name = "ms", .range = { 0, UINT32_MAX }, .optional = true,
};

#define ITEM(sec, key, parser, field, data) { sec, key, parser, offsetof(Config, field), data }

static const char *const manager_mode_table[_MANAGER_MODE_MAX] = {
        [MANAGER_MODE_AUTO] = "auto",
        [MANAGER_MODE_TUNE_ONLY] = "tune-only",
        [MANAGER_MODE_OBSERVE] = "observe",
};

DEFINE_STRING_TABLE_LOOKUP(manager_mode, ManagerMode);

static const char *const idle_mode_table[_IDLE_MODE_MAX] = {
        [IDLE_MODE_SLOW] = "slow",
        [IDLE_MODE_STOP] = "stop",
};
static const char *const advisor_policy_table[_ADVISOR_POLICY_MAX] = {
        [ADVISOR_POLICY_OFF] = "off",
        [ADVISOR_POLICY_LEAVE] = "leave",
};

static const char *const foreign_knob_writes_table[_FOREIGN_KNOB_WRITES_MAX] = {
        [FOREIGN_KNOB_WRITES_LEAVE] = "leave",
        [FOREIGN_KNOB_WRITES_OVERRIDE] = "override",
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
        ITEM("Daemon", "ForeignKnobWrites", conf_parse_enum, foreign_knob_writes, CONF_ENUM(foreign_knob_writes_table)),
        ITEM("Daemon", "UnmergeOnExit", conf_parse_bool, unmerge_on_exit, NULL),
        ITEM("Daemon", "InjectIntoSeccomp", conf_parse_bool, inject_seccomp, NULL),
        ITEM("Daemon", "DryRun", conf_parse_bool, dry_run, NULL),
        ITEM("Daemon", "Sandbox", conf_parse_bool, sandbox, NULL),
        ITEM("Daemon", "Mode", conf_parse_enum, mode, CONF_ENUM(manager_mode_table)),
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
                .mode = MANAGER_MODE_AUTO,
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

#define CONF_DIRS(sub) { SYSCONFDIR "/ksmtuned2/" sub, "/run/ksmtuned2/" sub, PKGLIBDIR "/" sub, NULL }

const ConfigSearch config_search_default = {
        .main_paths = (const char *const[]) CONF_DIRS("ksmtuned2.conf"),
        .dropin_dirs = (const char *const[]) CONF_DIRS("ksmtuned2.conf.d"),
};

enum { FILE_ABSENT, FILE_MASKS, FILE_IN_FORCE };

/* Opens path as conf_file_open() does, under the same trust as policies:
 * the configuration names the policy directories and switches the sandbox
 * and injection into seccomp'd processes, so as root only a file root
 * alone may write counts, in a directory root alone may change (a drop-in
 * directory is checked by conf_files_collect()). */
static int config_file_open(const char *path, bool check_dir, FILE **ret_f, ConfDiag *diag) {
        if (check_dir && conf_trust_checks()) {
                _cleanup_free_ char *dir = strdup(path);
                if (!dir)
                        return -ENOMEM;
                char *slash = strrchr(dir, '/');
                if (slash) {
                        slash[slash == dir] = 0; /* "/k.conf": "/" */
                        int r = conf_dir_check_trusted(dir, diag);
                        if (r < 0)
                                return r;
                }
        }
        return conf_file_open(path, conf_trust_checks(), ret_f, diag);
}

/* What path is: FILE_IN_FORCE, FILE_ABSENT, or FILE_MASKS when empty or
 * /dev/null; -errno after a diagnostic when it cannot be looked at or is
 * not to be trusted. */
static int file_state(const char *path, bool required, bool check_dir, ConfDiag *diag) {
        _cleanup_fclose_ FILE *f = NULL;
        int r = config_file_open(path, check_dir, &f, diag);

        if (r == -ENOENT && !required)
                return FILE_ABSENT;
        if (r == -ENOENT)
                conf_diag_add(diag, path, 0, NULL, "cannot be read: %s", strerror(-r));
        if (r < 0)
                return r;
        return r == CONF_FILE_MASKS ? FILE_MASKS : FILE_IN_FORCE;
}

static int push_copy(char ***l, const char *s) {
        char *c = strdup(s);
        return c ? strv_push(l, c) : -ENOMEM;
}

int config_files_search(const ConfigSearch *search, char ***ret_files, ConfDiag *diag) {
        _cleanup_strv_free_ char **files = calloc(1, sizeof(char *)), **dropins = NULL;
        int r;

        if (!files)
                return -ENOMEM;
        for (const char *const *p = search->main_paths; p && *p; p++) {
                r = file_state(*p, search->main_required, /* check_dir= */ true, diag);
                if (r < 0)
                        return r;
                if (r == FILE_IN_FORCE && push_copy(&files, *p) < 0)
                        return -ENOMEM;
                if (r != FILE_ABSENT) /* the first that exists is the main file, even when it masks */
                        break;
        }
        if (search->dropin_dirs) {
                r = conf_files_collect(search->dropin_dirs, ".conf", &dropins, NULL, diag);
                if (r < 0)
                        return r;
                for (char **d = dropins; *d; d++) {
                        r = file_state(*d, /* required= */ false, /* check_dir= */ false, diag);
                        if (r < 0)
                                return r;
                        if (r == FILE_IN_FORCE && push_copy(&files, *d) < 0)
                                return -ENOMEM;
                }
        }
        *ret_files = TAKE_PTR(files);
        return 0;
}

int config_files_find(const char *path, char ***ret_files, ConfDiag *diag) {
        if (!path)
                return config_files_search(&config_search_default, ret_files, diag);
        const ConfigSearch one = { .main_paths = (const char *const[]) { path, NULL }, .main_required = true };
        return config_files_search(&one, ret_files, diag);
}

int config_load_files(Config *c, char *const *files, ConfDiag *diag) {
        int error = 0, r;

        config_done(c);
        config_init_defaults(c);
        if (!c->policy_dirs || !c->runtime_dir)
                return -ENOMEM;
        /* NULL until a file assigns the list: then it starts empty. */
        c->policy_dirs = strv_free(c->policy_dirs);

        for (char *const *p = files; p && *p; p++) {
                _cleanup_fclose_ FILE *f = NULL;
                /* Checked again as it is read: it may have changed since it was found. */
                r = config_file_open(*p, /* check_dir= */ false, &f, diag);
                if (r == -ENOENT)
                        conf_diag_add(diag, *p, 0, NULL, "cannot be read: %s", strerror(-r));
                if (r == 0)
                        r = conf_parse_file(f, *p, config_table, config_table_size, c, NULL, diag);
                else if (r == CONF_FILE_MASKS)
                        r = 0; /* emptied since it was found */
                if (r == -ENOMEM) {
                        error = r;
                        break;
                }
                if (r < 0 && error == 0)
                        error = r;
        }
        if (!c->policy_dirs && error == 0)
                error = strv_split_whitespace(DEFAULT_POLICY_DIRS, &c->policy_dirs);
        if (error < 0) {
                config_done(c);
                config_init_defaults(c);
        }
        return error;
}

int config_load(Config *c, const char *path, char ***ret_files, ConfDiag *diag) {
        _cleanup_strv_free_ char **files = NULL;
        int r;

        r = config_files_find(path, &files, diag);
        if (r < 0) {
                config_done(c);
                config_init_defaults(c);
                return r;
        }
        r = config_load_files(c, files, diag);
        if (r < 0)
                return r;
        if (ret_files)
                *ret_files = TAKE_PTR(files);
        return 0;
}

int config_load_logged(Config *c, const char *path, char ***ret_files, FILE *diag_stream) {
        _cleanup_(conf_diag_free) ConfDiag diag = {};
        int r;

        r = config_load(c, path, ret_files, &diag);
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
