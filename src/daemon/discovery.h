/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "classify.h"
#include "conf-parse.h"
#include "decisions.h"
#include "mm-reader.h"
#include "plan.h"
#include "policy.h"
#include "proc-events.h"
#include "process.h"
#include "root.h"
#include "savings.h"

/* Keeps the process model current and classified: proc connector events
 * as they happen (or polling where events never arrive), a full /proc scan
 * at start and a slow resync, ksm_stat read off the loop, and policies.
 * The manager calls it in a few places; everything here runs on the loop
 * except the mm reader's workers. */

typedef enum DiscoveryMode {
        DISCOVERY_EVENTS,       /* proc connector events, verified by the self-test */
        DISCOVERY_POLLING,      /* a full scan every tick */
        _DISCOVERY_MODE_MAX,
} DiscoveryMode;

const char *discovery_mode_to_string(DiscoveryMode m); /* "events", "polling" */

typedef struct DiscoveryOptions {
        uint64_t resync_interval_usec;  /* full scan period with events; 0: default 2 min */
        uint64_t mm_read_deadline_usec; /* per ksm_stat read; 0: default 1 s */
        unsigned mm_read_threads;       /* pool bound; 0: default 4 */
        uint64_t self_test_timeout_usec; /* 0: default 1 s */
        uint64_t action_retry_usec;     /* re-plan an action not carried out after; 0: default 60 s */
        bool force_polling;             /* tests: behave as if events never arrive */
        size_t events_rcvbuf_bytes;     /* tests: a small socket buffer provokes ENOBUFS; 0: 8 MiB */
        DecisionLog *decisions;         /* optional: verdict changes are recorded there */
        /* optional: a ksm_stat read found a process's unmet memory
         * (process_unmet_pages) grown by BurstMinNewPages' default or more;
         * called at most every 250 ms, so the tuner can burst without
         * waiting for the next Interval= tick */
        void (*unmet_grew)(void *userdata);
        void *userdata;
} DiscoveryOptions;

typedef struct DiscoveryStatus {
        DiscoveryMode mode;
        char mode_reason[192];          /* why polling ("no proc event within 1s: PID namespace?") */
        uint64_t processes;
        uint64_t full_scans;
        uint64_t overflow_resyncs;      /* scans forced by ENOBUFS */
        uint64_t last_scan_usec;        /* how long the latest full scan took */
        ProcEventsCounters events;
        MmReaderCounters mm_reads;
        uint64_t slow_processes;        /* pids whose ksm_stat read overran, right now */
        uint64_t verdicts[_VERDICT_ACTION_MAX]; /* processes per verdict, now */
        size_t policies;
} DiscoveryStatus;

typedef struct Discovery Discovery;

int discovery_new(sd_event *e, const Root *root, const DiscoveryOptions *o, Discovery **ret);
Discovery *discovery_free(Discovery *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(Discovery *, discovery_free);

/* The proc connector socket the service manager passed
 * (proc_events_listen_fd()), for discovery_start() to use instead of
 * opening one: taken over (a negative fd: none). */
void discovery_set_events_fd(Discovery *d, int fd);

/* Opens the connector (falling back to polling with a logged reason), runs
 * the self-test, hooks the socket into the loop and scans /proc once.
 * -ENOMEM only: everything else degrades. */
int discovery_start(Discovery *d);

/* (Re)loads the policies from dirs, keeping the last good version of a
 * file that is now broken, and reclassifies every process. Diagnostics go
 * into diag. Returns the number of files (or directories) rejected, those
 * whose previous version stays included, or -ENOMEM. */
int discovery_load_policies(Discovery *d, char *const *dirs, ConfDiag *diag);

/* Mergeable memory ksmd has not met yet, in pages: process_unmet_pages()
 * summed over the processes whose ksm_stat the daemon reads (a policy
 * matched them, or they have merged pages). Costs no read of its own. */
uint64_t discovery_unmet_pages(Discovery *d);
/* The most rmap items (from its last ksm_stat) of one process that went
 * away since the last call, and starts over: ksmd drops them in its next
 * passes, which then show less memory met and less sharing than they found. */
uint64_t discovery_take_departed(Discovery *d);

/* The child of the first fork by process parent that the proc connector
 * reported at a CLOCK_MONOTONIC time within [since_ns, until_ns] and that no
 * earlier call took, or 0 (none yet, or no proc connector). Of the latest
 * DISCOVERY_RECENT_FORKS forks the event loop has read. */
#define DISCOVERY_RECENT_FORKS 1024
int discovery_take_fork(Discovery *d, int parent, uint64_t since_ns, uint64_t until_ns);
/* Whether pid's mm was in KSM as of a ksm_stat read that finished before
 * before_ns (CLOCK_MONOTONIC): merging on, or rmap items. false when not
 * known. */
bool discovery_was_in_ksm(Discovery *d, int pid, uint64_t before_ns);

/* Once per manager tick: polling scan or slow resync, refresh of the
 * processes a policy matched, ksm_stat reads, and the ProcessAction entries
 * for "merge wanted but not on" (and "never, but on") appended to plan. */
int discovery_tick(Discovery *d, Plan *plan);

/* A full /proc scan now (also what start, resync and overflow do). */
int discovery_scan(Discovery *d);

const ProcessTable *discovery_processes(const Discovery *d);
/* The controller excluded (DISABLE) or readmitted (ENABLE) a process: until
 * it readmits one, discovery plans no ENABLE for it, whatever its verdict. */
void discovery_note_exclusion(Discovery *d, const ProcessAction *a);
const PolicySet *discovery_policies(const Discovery *d);
/* Counts, sums and the verdict announcements are kept current as
 * processes change: cheap at any table size, no walk of the table. */
void discovery_get_status(Discovery *d, DiscoveryStatus *ret);
/* Someone other than discovery changed p (the merge actuator's outcome
 * marked it slow): count it anew. */
void discovery_process_changed(Discovery *d, Process *p);
/* savings_by_cgroup() of the table, from the sums kept as processes
 * change: O(cgroups), for the metrics file written every tick. */
int discovery_savings_by_cgroup(const Discovery *d, SavingsTable *ret);
/* Walks the table and checks those counts and sums against it (the state
 * dump does, for the storm test): NULL when they agree, else the first
 * difference, written into buf. */
const char *discovery_verify_index(Discovery *d, char *buf, size_t n);

/* The exec-to-verdict latencies of the latest execs (usec from the kernel's
 * event timestamp to the verdict), oldest first, at most 65536. */
size_t discovery_exec_latencies(const Discovery *d, uint64_t *buf, size_t n);
