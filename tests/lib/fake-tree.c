/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake-tree.h"

static void die(const char *what, const char *path) {
        fprintf(stderr, "fake-tree: %s %s: %s\n", what, path, strerror(errno));
        abort();
}

void fake_tree_init(FakeTree *t) {
        const char *tmp = getenv("TMPDIR");
        snprintf(t->path, sizeof t->path, "%s/ksmtuned2-fake.XXXXXX", tmp ? tmp : "/tmp");
        if (!mkdtemp(t->path))
                die("mkdtemp", t->path);
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st, (void) flag, (void) ftw;
        return remove(p);
}

void fake_tree_done(FakeTree *t) {
        if (t->path[0])
                (void) nftw(t->path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
        t->path[0] = 0;
}

static void mkdir_p(const char *path) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", path);
        for (char *p = buf + 1; *p; p++)
                if (*p == '/') {
                        *p = 0;
                        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                                die("mkdir", buf);
                        *p = '/';
                }
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                die("mkdir", buf);
}

void fake_mkdir(FakeTree *t, const char *rel) {
        char full[1024];
        snprintf(full, sizeof full, "%s/%s", t->path, rel);
        mkdir_p(full);
}

void fake_write_bytes(FakeTree *t, const char *rel, const char *content, unsigned long len) {
        char full[1024], dir[1024];
        snprintf(full, sizeof full, "%s/%s", t->path, rel);
        snprintf(dir, sizeof dir, "%s", full);
        char *slash = strrchr(dir, '/');
        if (slash) {
                *slash = 0;
                mkdir_p(dir);
        }
        int fd = open(full, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                die("open", full);
        if (len && write(fd, content, len) != (ssize_t) len)
                die("write", full);
        close(fd);
}

void fake_write(FakeTree *t, const char *rel, const char *content) {
        fake_write_bytes(t, rel, content, strlen(content));
}

void fake_remove(FakeTree *t, const char *rel) {
        char full[1024];
        snprintf(full, sizeof full, "%s/%s", t->path, rel);
        (void) nftw(full, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

void fake_tree_populate_minimal(FakeTree *t) {
        static const char *const knobs[][2] = {
                { "run", "0" }, { "pages_to_scan", "100" }, { "sleep_millisecs", "20" },
                { "pages_shared", "0" }, { "pages_sharing", "0" }, { "pages_unshared", "0" },
                { "pages_volatile", "0" }, { "full_scans", "0" }, { "general_profit", "0" },
                { "advisor_mode", "[none] scan-time" }, { "smart_scan", "1" }, { "use_zero_pages", "0" },
                { "max_page_sharing", "256" }, { "merge_across_nodes", "1" },
        };
        char rel[256];

        fake_write(t, "proc/self/mounts",
                   "proc /proc proc rw 0 0\n"
                   "sysfs /sys sysfs rw 0 0\n"
                   "tmpfs /sys/fs/cgroup tmpfs rw 0 0\n"
                   "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n");
        fake_write(t, "proc/meminfo", "MemTotal:       24000000 kB\nMemFree:        20000000 kB\n"
                                      "MemAvailable:   22000000 kB\nAnonPages:        100000 kB\n");
        fake_mkdir(t, "sys/fs/cgroup/unified");
        for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
                snprintf(rel, sizeof rel, "sys/kernel/mm/ksm/%s", knobs[i][0]);
                fake_write(t, rel, knobs[i][1]);
                fake_write(t, rel, knobs[i][1]);
        }
}

void fake_write_stat(FakeTree *t, int pid, const char *comm, char state, unsigned flags, int threads,
                     unsigned long long start_ticks) {
        char rel[64], buf[1024];
        snprintf(rel, sizeof rel, "proc/%d/stat", pid);
        snprintf(buf, sizeof buf,
                 "%d (%s) %c 1 42 42 0 -1 %u 100 0 0 0 12 34 0 0 20 0 %d 0 %llu 1048576 256 18446744073709551615 "
                 "1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
                 pid, comm, state, flags, threads, start_ticks);
        fake_write(t, rel, buf);
}
