/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "root.h"

/* Per-process files that never take the target's mmap_lock: stat, status,
 * cgroup, comm, schedstat, wchan, ksm_merging_pages. Files that do take it
 * (cmdline, maps, smaps*, environ, ksm_stat) must not be read on the event
 * loop: see DESIGN.md §3. Parsers take text so they run on hostile input in
 * tests; readers take a pid directory fd from root_open_pid_dir(). */

#define PF_KTHREAD_FLAG 0x00200000U
#define PF_EXITING_FLAG 0x00000004U /* in do_exit(): its mm may already be gone */

/* A whole file of the process (at most max_size bytes), NUL-terminated;
 * -ESRCH when the process is gone. */
int procfs_read_pid_file(int pid_dirfd, const char *name, size_t max_size, char **ret);

typedef struct ProcStat {
        int pid;
        char comm[64];          /* as in stat: may hold spaces, ')' and '(' */
        char state;
        int ppid;
        unsigned flags;
        uint64_t utime_ticks;
        uint64_t stime_ticks;
        int num_threads;
        uint64_t start_time_ticks;
        uint64_t vsize_bytes;
        uint64_t rss_pages;
} ProcStat;

int procfs_parse_stat(const char *text, ProcStat *ret);
int procfs_read_stat(int pid_dirfd, ProcStat *ret);
static inline bool proc_stat_is_kthread(const ProcStat *s) {
        return s->flags & PF_KTHREAD_FLAG;
}

typedef struct ProcStatus {
        char name[64];
        int tgid;
        int ppid;
        int tracer_pid;
        uid_t uid_real, uid_effective;
        gid_t gid_real, gid_effective;
        unsigned threads;
        int seccomp;            /* 0 none, 1 strict, 2 filter, -1 unknown */
        uint64_t vm_rss_kib;
        uint64_t rss_anon_kib;
        uint64_t rss_file_kib;
        uint64_t rss_shmem_kib;
        uint64_t vm_swap_kib;
        bool has_mm;            /* kernel threads have no Vm* lines */
        int nspid_depth;        /* number of NSpid entries, 0 when absent */
        bool shadow_stack;      /* x86_Thread_features: shstk (user shadow stack on) */
} ProcStatus;

int procfs_parse_status(const char *text, ProcStatus *ret);
int procfs_read_status(int pid_dirfd, ProcStatus *ret);

/* The kernel's d_path() appends " (deleted)" to an unlinked file or a
 * removed cgroup (exe links, cgroup lines): cuts it off path in place. */
void procfs_strip_deleted(char *path);

/* The cgroup v2 path ("0::/a/b") from /proc/<pid>/cgroup, without the
 * leading '/': "" for the root cgroup. -ENODATA when there is no v2 line. */
int procfs_parse_cgroup(const char *text, char **ret);
int procfs_read_cgroup(int pid_dirfd, char **ret);

typedef struct ProcKsmStat {
        uint64_t rmap_items;
        uint64_t zero_pages;
        uint64_t merging_pages;
        int64_t process_profit;
        int merge_any;          /* 1, 0, or -1 when the line is absent */
        int mergeable;          /* 1, 0, or -1 when the line is absent */
} ProcKsmStat;

/* ksm_stat takes the mmap_lock (for its ksm_mergeable line): read it off
 * the event loop only. */
int procfs_parse_ksm_stat(const char *text, ProcKsmStat *ret);
int procfs_read_ksm_stat(int pid_dirfd, ProcKsmStat *ret);
/* ksm_merging_pages alone: lock-free, fine on the loop. */
int procfs_read_ksm_merging_pages(int pid_dirfd, uint64_t *ret);

/* The command line, arguments joined by single spaces (NULs and control
 * characters become spaces), at most PROCFS_CMDLINE_MAX bytes of it. "" for
 * a process without one (zombie, kernel thread). cmdline takes the target's
 * mmap_lock (access_remote_vm): read it off the event loop only. */
#define PROCFS_CMDLINE_MAX 4096
int procfs_parse_cmdline(const char *buf, size_t len, char **ret);
int procfs_read_cmdline(int pid_dirfd, char **ret);

/* CPU time in ns from schedstat (exact, unlike stat's clock ticks). */
int procfs_parse_schedstat(const char *text, uint64_t *ret_cpu_ns, uint64_t *ret_wait_ns);
int procfs_read_schedstat(int pid_dirfd, uint64_t *ret_cpu_ns, uint64_t *ret_wait_ns);

typedef struct Meminfo {
        uint64_t mem_total_kib;
        uint64_t mem_free_kib;
        uint64_t mem_available_kib;
        uint64_t anon_pages_kib;
        uint64_t swap_total_kib;
        uint64_t swap_free_kib;
        bool has_mem_available;
} Meminfo;

int procfs_parse_meminfo(const char *text, Meminfo *ret);
int procfs_read_meminfo(const Root *root, Meminfo *ret);

typedef struct PsiLine {
        double avg10, avg60, avg300;
        uint64_t total_usec;
} PsiLine;

typedef struct Psi {
        bool present;
        PsiLine some, full;
} Psi;

int procfs_parse_psi(const char *text, Psi *ret);
/* Absent PSI is not an error: ret->present is false. */
int procfs_read_psi_memory(const Root *root, Psi *ret);

/* Calls cb for every numeric entry of <proc>. Stops on a negative return. */
typedef int (*ProcfsPidCallback)(int pid, void *userdata);
int procfs_for_each_pid(const Root *root, ProcfsPidCallback cb, void *userdata);
