/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* How cgroup v2 is mounted on this host. */
typedef enum CgroupLayout {
        CGROUP_LAYOUT_NONE,     /* no cgroup2 mount found */
        CGROUP_LAYOUT_UNIFIED,  /* cgroup2 at <cgroup root> (pure v2) */
        CGROUP_LAYOUT_HYBRID,   /* v1 controllers, v2 at .../unified */
        CGROUP_LAYOUT_OTHER,    /* cgroup2 mounted somewhere else */
} CgroupLayout;

const char *cgroup_layout_to_string(CgroupLayout l);

/* Every location the daemon reads from the kernel, opened once. All readers
 * take a Root, so each of them can run on a fake tree in a test directory:
 * no other file names /proc or /sys. */
typedef struct Root {
        char *prefix;           /* "" for the real system, else a directory */
        char *proc_path;
        char *sys_path;
        char *cgroup2_path;     /* NULL when there is no cgroup2 mount */
        char *tracefs_path;     /* NULL when tracefs is not mounted */
        CgroupLayout cgroup_layout;

        int proc_fd;
        int sys_fd;
        int ksm_fd;             /* <sys>/kernel/mm/ksm, -EBADF when KSM is absent */
        int cgroup2_fd;         /* -EBADF when absent */
        int tracefs_fd;         /* -EBADF when absent */

        /* Files the kernel shows only to a reader with CAP_SYS_PTRACE (the
         * exe link, wchan), once this process has given that up: answered
         * by the injector's read worker (injector.h), which checks the
         * start time (0: unchecked). Returns the length read or -errno.
         * NULL: read directly. */
        int (*ptrace_read)(void *userdata, int pid, uint64_t start_time_ticks, const char *name, char *buf,
                           size_t size);
        void *ptrace_read_userdata;
} Root;

/* prefix NULL or "" or "/" opens the real system. Fails only when proc or sys
 * cannot be opened; missing KSM, cgroup2 or tracefs are recorded as absent. */
int root_open(const char *prefix, Root **ret);
Root *root_free(Root *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(Root *, root_free);

/* Opens <proc>/<pid> as a directory fd, so every file of one process is read
 * from the same incarnation of that pid. -ENOENT/-ESRCH when it is gone. */
int root_open_pid_dir(const Root *r, int pid, int *ret_fd);

/* Re-reads the mount table to locate tracefs (e.g. after mounting it). */
int root_refresh_tracefs(Root *r);

/* Full path of a location inside the tree, for messages and for APIs that
 * need a path rather than a dirfd. */
char *root_path(const Root *r, const char *base, const char *rel);
