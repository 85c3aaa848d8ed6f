/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

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
