/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What the per-process and global files of /proc say, and the parsers that
 * read it from text, so they run on hostile input in tests and link into the
 * pure stages. The readers are in procfs.h. */

#define PF_KTHREAD_FLAG 0x00200000U
#define PF_EXITING_FLAG 0x00000004U /* in do_exit(): its mm may already be gone */

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
        /* Where its mm put code, stack, arguments and environment (fields
         * 26-28 and 45-51; 0 when absent, 1 when not permitted): new at every
         * exec, and randomized by ASLR, so evidence of one (process.h). */
        uint64_t mm_layout[10];
} ProcStat;

int procfs_parse_stat(const char *text, ProcStat *ret);
static inline bool proc_stat_is_kthread(const ProcStat *s) {
        return s->flags & PF_KTHREAD_FLAG;
}

typedef struct ProcStatus {
        char name[64];
        int tgid;
        int ppid;
        int tracer_pid;
        uid_t uid_real, uid_effective, uid_saved, uid_fs;
        gid_t gid_real, gid_effective, gid_saved, gid_fs;
        uint64_t cap_permitted; /* CapPrm */
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

/* The kernel's d_path() appends " (deleted)" to an unlinked file or a
 * removed cgroup (exe links, cgroup lines): cuts it off path in place. */
void procfs_strip_deleted(char *path);

/* The cgroup v2 path ("0::/a/b") from /proc/<pid>/cgroup, without the
 * leading '/': "" for the root cgroup. -ENODATA when there is no v2 line. */
int procfs_parse_cgroup(const char *text, char **ret);

typedef struct ProcKsmStat {
        uint64_t rmap_items;
        uint64_t zero_pages;
        uint64_t merging_pages;
        int64_t process_profit;
        int merge_any;          /* 1, 0, or -1 when the line is absent */
        int mergeable;          /* 1, 0, or -1 when the line is absent */
        /* The kernel has no such lines (6.12 and older) and the reader
         * inferred both from smaps (procfs_read_ksm_stat(),
         * map_list_ksm_flags()); still -1 when smaps was not readable. */
        bool flags_inferred;
} ProcKsmStat;

int procfs_parse_ksm_stat(const char *text, ProcKsmStat *ret);

/* The command line, arguments joined by single spaces (NULs and control
 * characters become spaces), at most PROCFS_CMDLINE_MAX bytes of it. "" for
 * a process without one (zombie, kernel thread). */
#define PROCFS_CMDLINE_MAX 4096
int procfs_parse_cmdline(const char *buf, size_t len, char **ret);

/* CPU time in ns from schedstat (exact, unlike stat's clock ticks). */
int procfs_parse_schedstat(const char *text, uint64_t *ret_cpu_ns, uint64_t *ret_wait_ns);

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

typedef struct PsiLine {
        double avg10, avg60, avg300;
        uint64_t total_usec;
} PsiLine;

typedef struct Psi {
        bool present;
        PsiLine some, full;
} Psi;

int procfs_parse_psi(const char *text, Psi *ret);
