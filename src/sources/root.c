/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"
#include "root.h"
#include "string-table.h"
#include "util.h"

static const char *const cgroup_layout_table[] = {
        [CGROUP_LAYOUT_NONE] = "none",
        [CGROUP_LAYOUT_UNIFIED] = "unified",
        [CGROUP_LAYOUT_HYBRID] = "hybrid",
        [CGROUP_LAYOUT_OTHER] = "other",
};

/* --probe prints it and the bus exports it: never NULL. */
DEFINE_STRING_TABLE_TO_STRING_FALLBACK(cgroup_layout, CgroupLayout, "none");

Root *root_free(Root *r) {
        if (!r)
                return NULL;
        safe_close(r->proc_fd);
        safe_close(r->sys_fd);
        safe_close(r->ksm_fd);
        safe_close(r->cgroup2_fd);
        safe_close(r->tracefs_fd);
        free(r->prefix);
        free(r->proc_path);
        free(r->sys_path);
        free(r->cgroup2_path);
        free(r->tracefs_path);
        free(r);
        return NULL;
}

static char *prefixed(const char *prefix, const char *path) {
        char *p;
        if (asprintf(&p, "%s%s", prefix, path) < 0)
                return NULL;
        return p;
}

static int open_dir(const char *path) {
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? negative_errno() : fd;
}

/* Decodes the octal escapes (\040 for space) that the kernel uses in mounts. */
static void unescape_mount_path(char *s) {
        char *w = s;
        for (char *p = s; *p; p++) {
                if (p[0] == '\\' && p[1] >= '0' && p[1] <= '7' && p[2] >= '0' && p[2] <= '7' &&
                    p[3] >= '0' && p[3] <= '7') {
                        *w++ = (char) ((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
                        p += 3;
                } else
                        *w++ = *p;
        }
        *w = 0;
}

/* Finds the mount point of the first mount of the given fs type in the mount
 * table at <proc>/self/mounts. Returns 1 and the point, 0 when none. */
static int find_mount(const Root *r, const char *fstype, char **ret) {
        _cleanup_free_ char *buf = NULL;
        int rr;

        rr = read_full_file_at(r->proc_fd, "self/mounts", 4 * 1024 * 1024, &buf, NULL);
        if (rr < 0)
                return rr;

        for (char *line = buf, *next; line && *line; line = next) {
                char src[256], point[4096], type[64];

                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                if (sscanf(line, "%255s %4095s %63s", src, point, type) != 3)
                        continue;
                if (strcmp(type, fstype) != 0)
                        continue;
                unescape_mount_path(point);
                *ret = strdup(point);
                return *ret ? 1 : -ENOMEM;
        }
        return 0;
}

static int locate_cgroup2(Root *r) {
        _cleanup_free_ char *point = NULL;
        int k = find_mount(r, "cgroup2", &point);
        if (k < 0)
                return k;
        if (k == 0) {
                r->cgroup_layout = CGROUP_LAYOUT_NONE;
                return 0;
        }
        if (strcmp(point, "/sys/fs/cgroup") == 0)
                r->cgroup_layout = CGROUP_LAYOUT_UNIFIED;
        else if (strcmp(point, "/sys/fs/cgroup/unified") == 0)
                r->cgroup_layout = CGROUP_LAYOUT_HYBRID;
        else
                r->cgroup_layout = CGROUP_LAYOUT_OTHER;
        r->cgroup2_path = prefixed(r->prefix, point);
        if (!r->cgroup2_path)
                return -ENOMEM;
        int fd = open_dir(r->cgroup2_path);
        if (fd < 0) {
                r->cgroup_layout = CGROUP_LAYOUT_NONE;
                r->cgroup2_path = (free(r->cgroup2_path), NULL);
                return 0;
        }
        r->cgroup2_fd = fd;
        return 0;
}

int root_refresh_tracefs(Root *r) {
        _cleanup_free_ char *point = NULL;
        int k;

        r->tracefs_fd = safe_close(r->tracefs_fd);
        r->tracefs_path = (free(r->tracefs_path), NULL);

        k = find_mount(r, "tracefs", &point);
        if (k < 0)
                return k;
        if (k > 0)
                r->tracefs_path = prefixed(r->prefix, point);
        else {
                /* No tracefs mount; debugfs may still expose it (older setups). */
                _cleanup_free_ char *dbg = NULL;
                if (find_mount(r, "debugfs", &dbg) > 0) {
                        char *p = NULL;
                        if (asprintf(&p, "%s%s/tracing", r->prefix, dbg) < 0)
                                return -ENOMEM;
                        r->tracefs_path = p;
                }
        }
        if (!r->tracefs_path)
                return 0;
        int fd = open_dir(r->tracefs_path);
        if (fd < 0 || faccessat(fd, "events", F_OK, 0) < 0) {
                safe_close(fd);
                r->tracefs_path = (free(r->tracefs_path), NULL);
                return 0;
        }
        r->tracefs_fd = fd;
        return 0;
}

int root_open(const char *prefix, Root **ret) {
        _cleanup_(root_freep) Root *r = NULL;
        int fd, k;

        r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;
        r->proc_fd = r->sys_fd = r->ksm_fd = r->cgroup2_fd = r->tracefs_fd = -EBADF;

        if (!prefix || strcmp(prefix, "/") == 0)
                prefix = "";
        r->prefix = strdup(prefix);
        r->proc_path = prefixed(prefix, "/proc");
        r->sys_path = prefixed(prefix, "/sys");
        if (!r->prefix || !r->proc_path || !r->sys_path)
                return -ENOMEM;

        fd = open_dir(r->proc_path);
        if (fd < 0)
                return fd;
        r->proc_fd = fd;
        fd = open_dir(r->sys_path);
        if (fd < 0)
                return fd;
        r->sys_fd = fd;

        fd = openat(r->sys_fd, "kernel/mm/ksm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        r->ksm_fd = fd < 0 ? -EBADF : fd;

        k = locate_cgroup2(r);
        if (k < 0)
                return k;
        k = root_refresh_tracefs(r);
        if (k < 0)
                return k;

        *ret = TAKE_PTR(r);
        return 0;
}

int root_open_pid_dir(const Root *r, int pid, int *ret_fd) {
        char name[32];
        int fd;

        if (pid <= 0)
                return -EINVAL;
        snprintf(name, sizeof name, "%d", pid);
        fd = openat(r->proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : negative_errno();
        *ret_fd = fd;
        return 0;
}

char *root_path(const Root *r, const char *base, const char *rel) {
        char *p;
        if (asprintf(&p, "%s/%s", base ? base : r->prefix, rel) < 0)
                return NULL;
        return p;
}
