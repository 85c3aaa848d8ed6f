/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "conf-parse.h"
#include "plan.h"
#include "tuning-config.h"

/* ksmtuned2.conf: every key is documented in ksmtuned2.conf(5) and appears,
 * commented out at its default, in conf/ksmtuned2.conf. */
/* [Daemon] ForeignKnobWrites=: a knob someone else wrote while the daemon
 * runs is theirs (leave) or the daemon's to write back (override). */
typedef enum ForeignKnobWrites {
        FOREIGN_KNOB_WRITES_LEAVE,
        FOREIGN_KNOB_WRITES_OVERRIDE,
        _FOREIGN_KNOB_WRITES_MAX,
} ForeignKnobWrites;

typedef struct Config {
        /* [Daemon] */
        uint64_t interval_usec;         /* Interval= */
        int log_level;                  /* LogLevel= */
        char **policy_dirs;             /* PolicyDirectories= */
        char *runtime_dir;              /* RuntimeDirectory= */
        bool restore_knobs;             /* RestoreKnobsOnExit= */
        int foreign_knob_writes;        /* ForeignKnobWrites= (ForeignKnobWrites) */
        bool unmerge_on_exit;           /* UnmergeOnExit= */
        bool inject_seccomp;            /* InjectIntoSeccomp= */
        bool dry_run;                   /* DryRun= */
        bool sandbox;                   /* Sandbox=: drop capabilities, seccomp filter (start only) */

        /* [Ksm]: fixed values applied at start; -1 leaves the kernel's value */
        int64_t smart_scan;             /* SmartScan= */
        int64_t use_zero_pages;         /* UseZeroPages= */
        int64_t max_page_sharing;       /* MaxPageSharing= */
        int64_t merge_across_nodes;     /* MergeAcrossNodes= */
        int64_t stable_node_chains_prune_ms; /* StableNodeChainsPruneMSec= */

        /* [Sampler] */
        uint64_t ksmd_sample_interval_usec; /* KsmdSampleInterval= */

        TuningConfig tuning;            /* [Tuning] */

        /* [Metrics] */
        char *metrics_textfile;         /* TextfilePath=: NULL or "" writes none */
} Config;

void config_init_defaults(Config *c);
void config_done(Config *c);

/* Loads path into c (which is first reset to defaults). A missing file is
 * not an error when missing_ok: the defaults stand (return 0, *ret_found
 * false). Diagnostics for bad keys go into diag; a syntax error returns
 * -EBADMSG and leaves c at defaults. */
int config_load(Config *c, const char *path, bool missing_ok, bool *ret_found, ConfDiag *diag);
/* config_load() that reports its diagnostics itself: printed to diag_stream
 * (they are what --check-config outputs), or logged as warnings when that is
 * NULL. Returns config_load()'s error, else the number of diagnostics; what
 * an error means (refuse to start, keep the running configuration) is the
 * caller's to decide and say. */
int config_load_logged(Config *c, const char *path, bool missing_ok, bool *ret_found, FILE *diag_stream);

/* The fixed [Ksm] settings of the configuration, as a plan. */
void knob_plan_from_config(const Config *c, KnobPlan *ret);

extern const ConfItem config_table[];
extern const size_t config_table_size;
