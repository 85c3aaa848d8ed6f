/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* KSM is global to the machine. Every kernel test and benchmark takes this
 * guard first: it serialises them with an flock (KSMTUNED2_TEST_LOCK, default
 * /run/ksmtuned2-ksm-tests.lock), saves every knob, and restores them at exit,
 * on SIGINT/SIGTERM/SIGALRM/SIGABRT/SIGSEGV too, and when meson's timeout
 * kills the test with SIGTERM. It also kills the test's registered children
 * on those paths, so no test process outlives the test.
 *
 * ksm_guard_acquire() exits 77 (skip) when not root or KSM is absent. */
void ksm_guard_acquire(void);
void ksm_guard_restore(void);          /* idempotent; also called at exit */
void ksm_guard_track_child(pid_t pid); /* killed and reaped at restore */
void ksm_guard_untrack_child(pid_t pid);

/* Sets a knob, failing the test (abort) on error. */
void ksm_guard_set(const char *knob, const char *value);
uint64_t ksm_read_counter(const char *name);
/* ksm_merging_pages of pid, or UINT64_MAX when gone. */
uint64_t ksm_process_merging_pages(pid_t pid);
/* Waits until pid's ksm_merging_pages >= want; returns elapsed usec, or 0 on timeout. */
uint64_t ksm_wait_merging(pid_t pid, uint64_t want, uint64_t timeout_usec);
