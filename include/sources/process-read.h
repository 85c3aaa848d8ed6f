/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

#include "process.h"
#include "root.h"

/* Filling a Process (process.h) from /proc: only files that never take the
 * target's mmap_lock. */

/* Reads the lock-free facts of pid into p (which keeps its KSM and verdict
 * fields when it already describes the same incarnation of that pid).
 * -ESRCH when the process is gone (a zombie counts as gone: it is reaped
 * without any event), -ENOMEM. */
int process_read_facts(const Root *root, int pid, Process *p);
/* The same, and with PROCESS_READ_KEEP_EXE the exe of the same incarnation
 * is kept rather than read again (through the injector, once the daemon has
 * dropped its capabilities): for a resync while proc events flow and none
 * were lost, when an exec cannot have gone unseen. */
#define PROCESS_READ_KEEP_EXE 1u
int process_read_facts_flags(const Root *root, int pid, Process *p, unsigned flags);

/* The identity of the process behind pid_dirfd as it is now (process.h),
 * with its privilege facts (dumpable, AT_SECURE) when privilege is set, for
 * the check at action time. -ESRCH when gone, -ENOMEM. */
int process_read_identity(int pid_dirfd, bool privilege, ProcessIdentity *ret);

/* The little a contention window cannot tell about the process behind an
 * mm: its stat (start time against pid reuse, comm) and ksm_merging_pages
 * (lock-free, unlike ksm_stat; UINT64_MAX when unreadable). -ESRCH. */
int process_read_brief(const Root *root, int pid, ProcStat *ret_stat, uint64_t *ret_merging_pages);

/* The process a trace event's task belongs to, read from /proc/TID/status.
 * A trace prints the tgid it saved for that pid number, and saves it only
 * at the task's next context switch after an event: until then, and once
 * pid numbers have wrapped, it is a former task's (seen in CI: a ksm_enter
 * of pid 3788 printed as tgid 3785, an awk that had exited). So the trace's
 * tgid is a hint, never an identity. -ESRCH when the task is gone;
 * -ESTALE when started_by_usec (CLOCK_BOOTTIME; UINT64_MAX: any) is given
 * and the task started after it: the event's task exited and its number
 * was reused, so the number names another task now. */
int process_read_task_tgid(const Root *root, int tid, uint64_t started_by_usec, int *ret_tgid);
