/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "root.h"

/* ksmd, the kernel thread that scans and merges. */

/* Finds ksmd among kernel threads (PF_KTHREAD, comm "ksmd"). -ESRCH when
 * there is none (KSM not built in, or a fake tree without it). */
int ksmd_find(const Root *root, int *ret_pid);

/* What ksmd is doing at one instant. */
typedef enum KsmdWait {
        KSMD_RUNNING,           /* R */
        KSMD_SLEEPING,          /* S: its sleep_millisecs pause, or waiting for work */
        KSMD_BLOCKED_MMAP_LOCK, /* D on an rwsem: an mm's mmap_lock */
        KSMD_BLOCKED_OTHER,     /* D elsewhere (lru_add_drain_all: __flush_work) */
        KSMD_OTHER,
        _KSMD_WAIT_MAX,
} KsmdWait;

const char *ksmd_wait_to_string(KsmdWait w);

/* Classifies a (state, wchan) pair. On 6.18 ksmd waiting for an mm's mmap
 * lock is in D with wchan "ksm_scan_thread": the rwsem wait is inlined into
 * the scan loop (stack rwsem_down_read_slowpath <- down_read <-
 * ksm_scan_thread). Kernels that do not inline it show the rwsem function
 * itself. Its periodic lru_add_drain_all shows "__flush_work". */
KsmdWait ksmd_classify_wait(char state, const char *wchan);

typedef struct KsmdSample {
        char state;
        char wchan[64];
        uint64_t cpu_ns;        /* cumulative, from schedstat */
} KsmdSample;

int ksmd_read_sample(const Root *root, int pid, KsmdSample *ret);

/* Counts of sampled states over a period. */
typedef struct KsmdWaitCounts {
        uint64_t samples;
        uint64_t by_wait[_KSMD_WAIT_MAX];
} KsmdWaitCounts;

static inline double ksmd_wait_fraction(const KsmdWaitCounts *c, KsmdWait w) {
        return c->samples ? (double) c->by_wait[w] / (double) c->samples : 0.0;
}

/* A background thread that samples ksmd's state/wchan at a fixed rate, with
 * its /proc files kept open so one sample is two preads. The event loop
 * takes the counts accumulated since its last call once per tick. The
 * sampler idles (no wakeups) while paused, e.g. while run=0. */
typedef struct KsmdSampler KsmdSampler;

int ksmd_sampler_start(const Root *root, int ksmd_pid, uint64_t interval_usec, KsmdSampler **ret);
void ksmd_sampler_set_paused(KsmdSampler *s, bool paused);
/* Takes effect from the next sample on. */
void ksmd_sampler_set_interval(KsmdSampler *s, uint64_t interval_usec);
void ksmd_sampler_take(KsmdSampler *s, KsmdWaitCounts *ret);
KsmdSampler *ksmd_sampler_stop(KsmdSampler *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(KsmdSampler *, ksmd_sampler_stop);
