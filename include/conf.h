/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "conf-parse.h"

/* [Tuning]: the controller (controller.h); see ksmtuned2.conf(5). */
typedef enum IdleMode {
        IDLE_MODE_SLOW,                 /* keep ksmd at its slowest rate */
        IDLE_MODE_STOP,                 /* run=0: merged pages stay merged, nothing is scanned */
        _IDLE_MODE_MAX,
} IdleMode;

typedef enum AdvisorPolicy {
        ADVISOR_POLICY_OFF,             /* switch advisor_mode=scan-time off and tune pages_to_scan */
        ADVISOR_POLICY_LEAVE,           /* leave pages_to_scan to the advisor; tune the rest */
        _ADVISOR_POLICY_MAX,
} AdvisorPolicy;

extern const char *const idle_mode_names[];
extern const char *const advisor_policy_names[];

typedef struct TuningConfig {
        double cpu_budget_percent;              /* CpuBudget= */
        double cpu_budget_pressure_percent;     /* CpuBudgetUnderPressure= */
        double burst_cpu_percent;               /* BurstCpu= */
        uint64_t burst_allowance_usec;          /* BurstAllowance= (ksmd CPU time) */
        uint64_t min_pages_to_scan;             /* MinPagesToScan= */
        uint64_t max_pages_to_scan;             /* MaxPagesToScan= */
        uint64_t min_sleep_ms;                  /* MinSleepMSec= */
        uint64_t max_sleep_ms;                  /* MaxSleepMSec= */
        uint64_t burst_interval_usec;           /* BurstInterval= */
        uint64_t backoff_full_scans;            /* BackoffFullScans= */
        uint64_t min_gain_pages;                /* MinGainPages= */
        uint64_t burst_min_new_pages;           /* BurstMinNewPages= */
        uint64_t maintenance_scan_time_usec;    /* MaintenanceScanTime= */
        uint64_t idle_after_usec;               /* IdleAfter= */
        int idle_mode;                          /* IdleMode= (IdleMode) */
        double mem_plentiful_percent;           /* MemAvailablePlentiful= */
        double mem_tight_percent;               /* MemAvailableTight= */
        double psi_high_percent;                /* PressureHigh= */
        int advisor_policy;                     /* AdvisorPolicy= (AdvisorPolicy) */
        bool tracepoints;                       /* Tracepoints= */
        bool mount_tracefs;                     /* MountTracefs= */
        uint64_t contention_interval_usec;      /* ContentionInterval= */
        uint64_t contention_window_usec;        /* ContentionWindow= */
        double contention_min_blocked_percent;  /* ContentionMinBlocked= */
        double exclude_blocked_percent;         /* ExcludeBlocked= */
        uint64_t exclude_max_merging_pages;     /* ExcludeMaxMergingPages= */
        uint64_t readmit_after_usec;            /* ReadmitAfter= */
} TuningConfig;

#define TUNING_CONFIG_DEFAULTS                                          \
        ((TuningConfig) {                                               \
                .cpu_budget_percent = 10,                               \
                .cpu_budget_pressure_percent = 50,                      \
                .burst_cpu_percent = 95,                                \
                .burst_allowance_usec = 30 * USEC_PER_SEC,              \
                .min_pages_to_scan = 100,                               \
                .max_pages_to_scan = 100000,                            \
                .min_sleep_ms = 10,                                     \
                .max_sleep_ms = 1000,                                   \
                .burst_interval_usec = 250 * USEC_PER_MSEC,             \
                .backoff_full_scans = 2,                                \
                .min_gain_pages = 64,                                   \
                .burst_min_new_pages = 1024,                            \
                .maintenance_scan_time_usec = 120 * USEC_PER_SEC,       \
                .idle_after_usec = 600 * USEC_PER_SEC,                  \
                .idle_mode = IDLE_MODE_SLOW,                            \
                .mem_plentiful_percent = 50,                            \
                .mem_tight_percent = 10,                                \
                .psi_high_percent = 10,                                 \
                .advisor_policy = ADVISOR_POLICY_OFF,                   \
                .tracepoints = true,                                    \
                .mount_tracefs = true,                                  \
                .contention_interval_usec = 30 * USEC_PER_SEC,          \
                .contention_window_usec = 200 * USEC_PER_MSEC,          \
                .contention_min_blocked_percent = 5,                    \
                .exclude_blocked_percent = 20,                          \
                .exclude_max_merging_pages = 256,                       \
                .readmit_after_usec = 600 * USEC_PER_SEC,               \
        })

/* ksmtuned2.conf: every key is documented in ksmtuned2.conf(5) and appears,
 * commented out at its default, in conf/ksmtuned2.conf. */
typedef struct Config {
        /* [Daemon] */
        uint64_t interval_usec;         /* Interval= */
        int log_level;                  /* LogLevel= */
        char **policy_dirs;             /* PolicyDirectories= */
        char *runtime_dir;              /* RuntimeDirectory= */
        bool restore_knobs;             /* RestoreKnobsOnExit= */
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

extern const ConfItem config_table[];
extern const size_t config_table_size;
