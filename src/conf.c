/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "conf.h"
#include "log.h"
#include "util.h"

static const ConfRange interval_range = { 100 * USEC_PER_MSEC, 3600 * USEC_PER_SEC };
static const ConfRange sample_range = { 1 * USEC_PER_MSEC, 10 * USEC_PER_SEC };
static const ConfRange max_page_sharing_range = { 2, 1U << 20 };
static const ConfRange prune_range = { 0, UINT32_MAX };

#define ITEM(sec, key, parser, field, data) { sec, key, parser, offsetof(Config, field), data }

const ConfItem config_table[] = {
        ITEM("Daemon", "Interval", conf_parse_timespan, interval_usec, &interval_range),
        ITEM("Daemon", "LogLevel", conf_parse_log_level, log_level, NULL),
        ITEM("Daemon", "PolicyDirectories", conf_parse_strv, policy_dirs, NULL),
        ITEM("Daemon", "RuntimeDirectory", conf_parse_string, runtime_dir, NULL),
        ITEM("Daemon", "RestoreKnobsOnExit", conf_parse_bool, restore_knobs, NULL),
        ITEM("Daemon", "UnmergeOnExit", conf_parse_bool, unmerge_on_exit, NULL),
        ITEM("Daemon", "DryRun", conf_parse_bool, dry_run, NULL),
        ITEM("Daemon", "Sandbox", conf_parse_bool, sandbox, NULL),
        ITEM("Ksm", "SmartScan", conf_parse_bool_opt, smart_scan, NULL),
        ITEM("Ksm", "UseZeroPages", conf_parse_bool_opt, use_zero_pages, NULL),
        ITEM("Ksm", "MaxPageSharing", conf_parse_i64_opt, max_page_sharing, &max_page_sharing_range),
        ITEM("Ksm", "MergeAcrossNodes", conf_parse_bool_opt, merge_across_nodes, NULL),
        ITEM("Ksm", "StableNodeChainsPruneMSec", conf_parse_i64_opt, stable_node_chains_prune_ms, &prune_range),
        ITEM("Sampler", "KsmdSampleInterval", conf_parse_timespan, ksmd_sample_interval_usec, &sample_range),
};
const size_t config_table_size = ELEMENTSOF(config_table);

void config_init_defaults(Config *c) {
        *c = (Config) {
                .interval_usec = 5 * USEC_PER_SEC,
                .log_level = LOG_INFO,
                .restore_knobs = true,
                .unmerge_on_exit = false,
                .dry_run = false,
                .sandbox = true,
                .smart_scan = -1,
                .use_zero_pages = -1,
                .max_page_sharing = -1,
                .merge_across_nodes = -1,
                .stable_node_chains_prune_ms = -1,
                .ksmd_sample_interval_usec = 20 * USEC_PER_MSEC,
        };
        (void) strv_split_whitespace(DEFAULT_POLICY_DIRS, &c->policy_dirs);
        c->runtime_dir = strdup("/run/ksmtuned2");
}

void config_done(Config *c) {
        strv_free(c->policy_dirs);
        free(c->runtime_dir);
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
