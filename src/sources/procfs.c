/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "proc-maps.h"
#include "procfs.h"
#include "util.h"

#define PROC_SMALL_FILE_MAX (256 * 1024)

/* A file of a process that exits while we read it vanishes (ENOENT) or
 * answers ESRCH; both mean "gone". */
int procfs_read_pid_file(int pid_dirfd, const char *name, size_t max_size, char **ret) {
        int r = read_full_file_at(pid_dirfd, name, max_size, ret, NULL);
        if (r == -ENOENT)
                return -ESRCH;
        return r;
}

static int read_pid_file(int pid_dirfd, const char *name, char **ret) {
        return procfs_read_pid_file(pid_dirfd, name, PROC_SMALL_FILE_MAX, ret);
}

int procfs_read_stat(int pid_dirfd, ProcStat *ret) {
        _cleanup_free_ char *buf = NULL;
        int r = read_pid_file(pid_dirfd, "stat", &buf);
        if (r < 0)
                return r;
        return procfs_parse_stat(buf, ret);
}

int procfs_read_status(int pid_dirfd, ProcStatus *ret) {
        _cleanup_free_ char *buf = NULL;
        int r = read_pid_file(pid_dirfd, "status", &buf);
        if (r < 0)
                return r;
        return procfs_parse_status(buf, ret);
}

int procfs_read_cgroup(int pid_dirfd, char **ret) {
        _cleanup_free_ char *buf = NULL;
        int r = read_pid_file(pid_dirfd, "cgroup", &buf);
        if (r < 0)
                return r;
        return procfs_parse_cgroup(buf, ret);
}

int procfs_read_ksm_stat(int pid_dirfd, ProcKsmStat *ret) {
        _cleanup_free_ char *buf = NULL;
        ProcKsmStat s;
        int r = read_pid_file(pid_dirfd, "ksm_stat", &buf);
        if (r < 0)
                return r;
        r = procfs_parse_ksm_stat(buf, &s);
        if (r < 0)
                return r;
        if (s.merge_any < 0 && s.mergeable < 0) {
                /* A kernel without the ksm_merge_any/ksm_mergeable lines
                 * (6.12 and older): from the VM_MERGEABLE marks instead.
                 * smaps checks ptrace access (ksm_stat does not): a
                 * reader without it leaves both unknown, and one that can
                 * ask the injector completes them (merge.c). */
                int any, mg;
                r = proc_smaps_read_ksm_flags(pid_dirfd, &any, &mg);
                if (r == -ESRCH || r == -ENOMEM)
                        return r;
                if (r >= 0) {
                        s.merge_any = any;
                        s.mergeable = mg;
                        s.flags_inferred = true;
                }
        }
        *ret = s;
        return 0;
}

int procfs_read_ksm_merging_pages(int pid_dirfd, uint64_t *ret) {
        int r = read_u64_at(pid_dirfd, "ksm_merging_pages", ret);
        return r == -ENOENT ? -ESRCH : r;
}

int procfs_read_cmdline(int pid_dirfd, char **ret) {
        char buf[PROCFS_CMDLINE_MAX];
        size_t n = 0;
        int fd = openat(pid_dirfd, "cmdline", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : negative_errno();
        while (n < sizeof buf) {
                ssize_t k = read(fd, buf + n, sizeof buf - n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        int r = errno == ENOENT ? -ESRCH : negative_errno();
                        safe_close(fd);
                        return r;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        safe_close(fd);
        return procfs_parse_cmdline(buf, n, ret);
}

int procfs_read_schedstat(int pid_dirfd, uint64_t *ret_cpu_ns, uint64_t *ret_wait_ns) {
        _cleanup_free_ char *buf = NULL;
        int r = read_pid_file(pid_dirfd, "schedstat", &buf);
        if (r < 0)
                return r;
        return procfs_parse_schedstat(buf, ret_cpu_ns, ret_wait_ns);
}

int procfs_read_meminfo(const Root *root, Meminfo *ret) {
        _cleanup_free_ char *buf = NULL;
        int r = read_full_file_at(root->proc_fd, "meminfo", PROC_SMALL_FILE_MAX, &buf, NULL);
        if (r < 0)
                return r;
        return procfs_parse_meminfo(buf, ret);
}

int procfs_read_psi_memory(const Root *root, Psi *ret) {
        _cleanup_free_ char *buf = NULL;
        int r = read_full_file_at(root->proc_fd, "pressure/memory", PROC_SMALL_FILE_MAX, &buf, NULL);
        /* Absent (no CONFIG_PSI) or disabled (psi=0 makes reads fail with EOPNOTSUPP). */
        if (r == -ENOENT || r == -EOPNOTSUPP) {
                *ret = (Psi) {};
                return 0;
        }
        if (r < 0)
                return r;
        return procfs_parse_psi(buf, ret);
}

int procfs_for_each_pid(const Root *root, ProcfsPidCallback cb, void *userdata) {
        int fd = openat(root->proc_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return negative_errno();
        }
        int r = 0;
        for (struct dirent *de; (de = readdir(d));) {
                int pid;
                if (!isdigit((unsigned char) de->d_name[0]))
                        continue;
                if (safe_atoi(de->d_name, &pid) < 0 || pid <= 0)
                        continue;
                r = cb(pid, userdata);
                if (r < 0)
                        break;
        }
        closedir(d);
        return r < 0 ? r : 0;
}
