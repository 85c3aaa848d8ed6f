/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "kernel-fixes.h"
#include "root.h"

/* What this kernel offers, found once at start. */
typedef struct Probe {
        char kernel_release[128];
        bool ksm;                               /* <sys>/kernel/mm/ksm exists */
        bool ksm_writable;                      /* and its run knob is writable */
        bool ksmd_thread;
        int ksmd_pid;
        bool process_madvise_remote_mergeable;  /* remote MADV_MERGEABLE allowed */
        int process_madvise_errno;              /* what the remote try returned */
        bool prctl_memory_merge;                /* PR_{GET,SET}_MEMORY_MERGE */
        bool process_ksm_syscall;               /* out-of-tree process_ksm_* */
        long process_ksm_enable_nr, process_ksm_disable_nr, process_ksm_status_nr;
        bool advisor;
        bool smart_scan;
        bool ksm_zero_pages;
        bool general_profit;
        bool tracefs;
        bool mmap_lock_tracepoints;
        bool ksm_tracepoints;
        bool proc_connector;                    /* socket bound; events still to be verified */
        int proc_connector_errno;
        bool taskstats;
        bool psi_memory;
        bool pidfd;
        int ptrace_scope;                       /* yama, -1 when absent */
        CgroupLayout cgroup_layout;
        char cgroup2_path[4096];
        char tracefs_path[4096];
        int khugepaged_pid;                     /* -1 when there is none */
        UnmergeProbe unmerge;                   /* the timed break_ksm probe (seed 003) */
} Probe;

/* Runs every check. Needs no privileges to run; without them some features
 * read as absent (and the errno says why where there is one). The remote
 * madvise check forks a short-lived child of our own, so call this before
 * any thread is started. */
int probe_run(const Root *root, Probe *ret);

void probe_print(const Probe *p, FILE *f);
void probe_print_json(const Probe *p, FILE *f);
/* The i-th boolean feature (as probe_print names it): 0, or -ENOENT past the
 * last one. For the bus and ksmctl, which list them by name. */
int probe_feature(const Probe *p, unsigned i, const char **ret_name, bool *ret_present);
/* What the probe alone says about the seed fixes (kernel-fixes.h): the
 * unmerge probe's answer for 003, unknown for the others until the daemon
 * watches ksmd. */
void probe_kernel_fixes(const Probe *p, KernelFixes *ret);
void kernel_fixes_print(const KernelFixes *k, FILE *f);

/* One line for the journal at start-up. */
char *probe_summary(const Probe *p);
