/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "procfs-parse.h"
#include "root.h"

/* Per-process files that never take the target's mmap_lock: stat, status,
 * cgroup, comm, schedstat, wchan, ksm_merging_pages. Files that do take it
 * (cmdline, maps, smaps*, environ, ksm_stat) must not be read on the event
 * loop: see DESIGN.md §3. Readers take a pid directory fd from
 * root_open_pid_dir(); the parsers they use are in procfs-parse.h. */

/* A whole file of the process (at most max_size bytes), NUL-terminated;
 * -ESRCH when the process is gone. */
int procfs_read_pid_file(int pid_dirfd, const char *name, size_t max_size, char **ret);

int procfs_read_stat(int pid_dirfd, ProcStat *ret);
int procfs_read_status(int pid_dirfd, ProcStatus *ret);
int procfs_read_cgroup(int pid_dirfd, char **ret);
/* ksm_stat takes the mmap_lock (for its ksm_mergeable line): read it off
 * the event loop only. On a kernel that prints no ksm_merge_any and
 * ksm_mergeable (6.12 and older) it reads smaps too and infers both
 * (proc_smaps_read_ksm_flags(), ->flags_inferred); they stay -1 when
 * smaps is not readable to us (no ptrace access). */
int procfs_read_ksm_stat(int pid_dirfd, ProcKsmStat *ret);
/* ksm_merging_pages alone: lock-free, fine on the loop. */
int procfs_read_ksm_merging_pages(int pid_dirfd, uint64_t *ret);
/* cmdline takes the target's mmap_lock (access_remote_vm): off the loop only. */
int procfs_read_cmdline(int pid_dirfd, char **ret);
int procfs_read_schedstat(int pid_dirfd, uint64_t *ret_cpu_ns, uint64_t *ret_wait_ns);
int procfs_read_meminfo(const Root *root, Meminfo *ret);
/* Absent PSI is not an error: ret->present is false. */
int procfs_read_psi_memory(const Root *root, Psi *ret);

/* Calls cb for every numeric entry of <proc>. Stops on a negative return. */
typedef int (*ProcfsPidCallback)(int pid, void *userdata);
int procfs_for_each_pid(const Root *root, ProcfsPidCallback cb, void *userdata);
