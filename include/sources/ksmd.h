/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "ksmd-state.h"
#include "root.h"

/* ksmd, the kernel thread that scans and merges. */

/* Finds ksmd among kernel threads (PF_KTHREAD, comm "ksmd"). -ESRCH when
 * there is none (KSM not built in, or a fake tree without it). */
int ksmd_find(const Root *root, int *ret_pid);
/* The kernel thread named comm (the first found). -ESRCH when none. */
int kthread_find(const Root *root, const char *comm, int *ret_pid);

int ksmd_read_sample(const Root *root, int pid, KsmdSample *ret);
/* ksmd's CPU time so far (schedstat), in ns: what ksmd_read_sample() reads
 * too, without the stat and wchan. */
int ksmd_read_cpu_nsec(const Root *root, int pid, uint64_t *ret);

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
