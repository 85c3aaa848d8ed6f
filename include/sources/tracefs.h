/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "contention.h"
#include "macro.h"
#include "root.h"

/* The mmap_lock and ksm tracepoints, read through a private tracefs instance
 * (<tracefs>/instances/ksmtuned2: never the global buffer, which belongs to
 * the administrator). Two uses:
 *
 *  - ksm:ksm_enter is enabled for the daemon's whole life: it fires once when
 *    an mm first becomes mergeable (MADV_MERGEABLE or PR_SET_MEMORY_MERGE),
 *    in the context of the task that asked, so the daemon learns of new
 *    mergeable memory at once instead of waiting for ksmd to meet it.
 *  - ksm:ksm_stop_scan too: ksmd ends its batch at the end of a full scan
 *    and sleeps, so a decision taken right then (a burst that is over) is in
 *    place before ksmd starts the next scan.
 *  - mmap_lock:* live in a second instance (the main one's name with
 *    "-locks"), filtered to ksmd's own lock calls and to write locks of
 *    everyone else: that says which mm (and which process and memory
 *    cgroup) keeps ksmd waiting, and which locking core the kernel has.
 *    They are enabled ("armed", which patches kernel text and costs ms)
 *    for a burst or a single quiet window, and record only during short
 *    sampled windows (that instance's tracing_on, which costs nothing). */

typedef struct Tracer Tracer;

/* kprobe events on the functions that take a VMA's read lock by address
 * (seed 001), filtered to ksmd: tracefs.c lists them; their events are
 * named TRACE_VMA_PROBE_EVENT "N" (contention.h). */
#define TRACER_MAX_VMA_PROBES 3

/* Creates (or replaces a stale) private instance below root's tracefs
 * and enables ksm_enter there. When tracefs is not mounted and mount_ok,
 * mounts it at <sys>/kernel/tracing first (only on the real root) and sets
 * *ret_mounted. -ENOENT: no tracefs, -EOPNOTSUPP: no usable events. */
int tracer_open(Root *root, bool mount_ok, Tracer **ret, bool *ret_mounted);
/* Disables every event and removes the instance. */
Tracer *tracer_free(Tracer *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Tracer *, tracer_free);

/* "instances/ksmtuned2", or "instances/ksmtuned2-PID" when another daemon
 * holds the first. */
const char *tracer_name(const Tracer *t);
/* The instance's trace_pipe, non-blocking: poll it for EPOLLIN. */
int tracer_fd(const Tracer *t);
bool tracer_has_mmap_lock_events(const Tracer *t);

/* Reads what is buffered in the main instance (ksm events), at most
 * budget_bytes, never blocking; calls cb for every line that parses.
 * Returns bytes read, -errno. tracer_read_window() reads the windows'
 * instance likewise: what the last window recorded. */
typedef void (*TracerEventCallback)(const TraceEvent *e, void *userdata);
int tracer_read(Tracer *t, size_t budget_bytes, TracerEventCallback cb, void *userdata);
int tracer_read_window(Tracer *t, size_t budget_bytes, TracerEventCallback cb, void *userdata);

/* A window: switches the mmap_lock events on, recording off, then starts
 * recording: ksmd's and khugepaged's own lock calls (khugepaged_pid <= 0:
 * unknown), and write locks of every other task. Between windows the
 * events are off: every mmap lock call on the host passes through them
 * while they are on. stop ends the window and switches them off;
 * tracer_read_window() then reads it. */
int tracer_window_start(Tracer *t, int ksmd_pid, int khugepaged_pid, bool vma_probe);
int tracer_window_stop(Tracer *t);
bool tracer_window_active(const Tracer *t);
/* Time spent switching the window events on and off, and how many
 * switches (each way one). */
uint64_t tracer_switch_nsec(const Tracer *t, unsigned *ret_switches);

/* The seed-001 probes: whether any could be placed (kprobe events and one
 * of the functions exist), their functions as "a, b" (returns how many),
 * and whether the window just started (or last stopped) had them armed:
 * tracer_window_start(..., vma_probe = true) arms them, filtered to ksmd. */
bool tracer_has_vma_probe(const Tracer *t);
size_t tracer_vma_probe_symbols(const Tracer *t, char *buf, size_t n);
bool tracer_window_vma_probe_armed(const Tracer *t);
