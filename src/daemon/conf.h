/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "conf-parse.h"
#include "plan.h"
#include "tuning-config.h"

/* What the daemon may change: Mode= sets it at start and on every reload;
 * an administrator changes it over the bus (SetMode) until the next reload
 * or restart. Every stage that writes to the kernel or to a process asks
 * manager_may_tune() / manager_may_act_on_processes() first. */
typedef enum ManagerMode {
        MANAGER_MODE_AUTO,      /* tune ksmd and switch merging per policy */
        MANAGER_MODE_TUNE_ONLY, /* tune ksmd; leave every process's merging as it is */
        MANAGER_MODE_OBSERVE,   /* decide and report only: a dry run at runtime */
        _MANAGER_MODE_MAX,
        _MANAGER_MODE_INVALID = -22,
} ManagerMode;

const char *manager_mode_to_string(ManagerMode m);
ManagerMode manager_mode_from_string(const char *s);

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
        int mode;                       /* ManagerMode, Mode= */

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

/* Where the configuration comes from (ksmtuned2.conf(5), FILES): the first
 * of main_paths that exists, then the *.conf files of dropin_dirs in the
 * order of their names across the directories, a name in an earlier
 * directory masking the same name in later ones, as systemd merges its own
 * files. An empty file or a symlink to /dev/null masks without adding
 * anything (the main file too: /etc's masks the vendor file). */
typedef struct ConfigSearch {
        const char *const *main_paths;  /* NULL-terminated */
        const char *const *dropin_dirs; /* NULL-terminated, or NULL for none */
        bool main_required;             /* --config FILE: a missing main file is an error */
} ConfigSearch;

/* /etc/ksmtuned2/ksmtuned2.conf, else /run/..., else the vendor file
 * /usr/lib/ksmtuned2/ksmtuned2.conf; ksmtuned2.conf.d/ in the same three
 * (the build's sysconfdir and prefix). */
extern const ConfigSearch config_search_default;

/* The files in force, in merge order, into *ret_files (empty when there are
 * none: the built-in defaults). -ENOENT for a required main file that is
 * missing, -errno for one that cannot be looked at or a drop-in directory
 * that cannot be read, each after a diagnostic naming it. */
int config_files_search(const ConfigSearch *search, char ***ret_files, ConfDiag *diag);
/* config_files_search() of --config FILE (path: FILE alone, no drop-ins),
 * or of config_search_default (path NULL). */
int config_files_find(const char *path, char ***ret_files, ConfDiag *diag);
/* Resets c to defaults and reads files into it, in order: a later
 * assignment overrides an earlier one; a list (PolicyDirectories=) is
 * appended to, an empty assignment empties it, and it keeps its default
 * when no file assigns it. Every file is read, so that every problem is
 * reported; then -EBADMSG when one could not be parsed, -errno when one
 * could not be read, and c is back at the defaults. */
int config_load_files(Config *c, char *const *files, ConfDiag *diag);
/* config_files_find() and config_load_files(); *ret_files (may be NULL)
 * gets the files read. */
int config_load(Config *c, const char *path, char ***ret_files, ConfDiag *diag);
/* config_load() that reports its diagnostics itself: printed to diag_stream
 * (they are what --check-config outputs), or logged as warnings when that is
 * NULL. Returns config_load()'s error, else the number of diagnostics; what
 * an error means (refuse to start, keep the running configuration) is the
 * caller's to decide and say. */
int config_load_logged(Config *c, const char *path, char ***ret_files, FILE *diag_stream);

/* The fixed [Ksm] settings of the configuration, as a plan. */
void knob_plan_from_config(const Config *c, KnobPlan *ret);

extern const ConfItem config_table[];
extern const size_t config_table_size;
