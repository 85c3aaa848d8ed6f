/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Counts of sampled states over a period. */
typedef struct KsmdWaitCounts {
        uint64_t samples;
        uint64_t by_wait[_KSMD_WAIT_MAX];
} KsmdWaitCounts;

static inline void ksmd_wait_counts_add(KsmdWaitCounts *sum, const KsmdWaitCounts *c) {
        sum->samples += c->samples;
        for (size_t w = 0; w < _KSMD_WAIT_MAX; w++)
                sum->by_wait[w] += c->by_wait[w];
}

static inline double ksmd_wait_fraction(const KsmdWaitCounts *c, KsmdWait w) {
        return c->samples ? (double) c->by_wait[w] / (double) c->samples : 0.0;
}
