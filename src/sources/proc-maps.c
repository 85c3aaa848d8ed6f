/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc-maps.h"
#include "procfs.h"
#include "util.h"

/* maps of a large QEMU or JVM can hold tens of thousands of lines. */
#define PROC_MAPS_MAX (64 * 1024 * 1024)

void map_list_done(MapList *l) {
        free(l->ranges);
        *l = (MapList) {};
}

int map_list_copy(const MapList *src, MapList *ret) {
        MapList l = {};
        if (src->n > 0) {
                l.ranges = malloc(src->n * sizeof *l.ranges);
                if (!l.ranges)
                        return -ENOMEM;
                memcpy(l.ranges, src->ranges, src->n * sizeof *l.ranges);
                l.n = src->n;
        }
        *ret = l;
        return 0;
}

static int map_list_push(MapList *l, const MapRange *r, size_t *alloc) {
        if (greedy_realloc((void **) &l->ranges, alloc, l->n + 1, sizeof *l->ranges, 64) < 0)
                return -ENOMEM;
        l->ranges[l->n++] = *r;
        return 0;
}

static int parse_line(const char *line, MapRange *ret) {
        MapRange m = {};
        unsigned long long start, end, off, inode;
        char perms[5], dev[32];
        int pos = 0;

        if (sscanf(line, "%llx-%llx %4s %llx %31s %llu%n", &start, &end, perms, &off, dev, &inode, &pos) != 6 ||
            end <= start || strlen(perms) != 4)
                return -EINVAL;
        m.start = start;
        m.end = end;
        m.read = perms[0] == 'r';
        m.write = perms[1] == 'w';
        m.exec = perms[2] == 'x';
        m.private_ = perms[3] == 'p';

        const char *path = line + pos;
        while (*path == ' ' || *path == '\t')
                path++;
        /* Pseudo-paths in brackets: [heap], [stack] and named anonymous
         * memory ([anon:NAME], PR_SET_VMA_ANON_NAME) are anonymous; the
         * rest ([vdso], [vvar], [vsyscall], [uprobes]) are not advisable. */
        if (*path == 0)
                m.kind = inode == 0 ? MAP_KIND_ANON : MAP_KIND_FILE;
        else if (*path == '[') {
                if (streq(path, "[heap]") || startswith(path, "[stack") || startswith(path, "[anon:"))
                        m.kind = MAP_KIND_ANON;
                else
                        m.kind = MAP_KIND_SPECIAL;
                m.vdso = streq(path, "[vdso]");
        } else
                m.kind = inode == 0 && startswith(path, "[anon_shmem:") ? MAP_KIND_ANON : MAP_KIND_FILE;
        strscpy(m.path, sizeof m.path, path);
        *ret = m;
        return 0;
}

int proc_maps_parse(const char *text, MapList *ret) {
        MapList l = {};
        size_t alloc = 0;
        _cleanup_free_ char *copy = strdup(text);

        if (!copy)
                return -ENOMEM;
        for (char *line = copy, *next; line && *line; line = next) {
                MapRange m;
                int r;

                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                if (!*line)
                        continue;
                r = parse_line(line, &m);
                if (r >= 0)
                        r = map_list_push(&l, &m, &alloc);
                if (r < 0) {
                        map_list_done(&l);
                        return r;
                }
        }
        *ret = l;
        return 0;
}

int proc_maps_read(int pid_dirfd, MapList *ret) {
        _cleanup_free_ char *buf = NULL;
        int r = procfs_read_pid_file(pid_dirfd, "maps", PROC_MAPS_MAX, &buf);
        if (r < 0)
                return r;
        return proc_maps_parse(buf, ret);
}

/* Every mapping of smaps text, with .mergeable from its VmFlags, not
 * coalesced. */
static int smaps_parse(const char *text, MapList *ret) {
        MapList l = {};
        size_t alloc = 0;
        bool have = false;
        MapRange cur = {};
        _cleanup_free_ char *copy = strdup(text);

        if (!copy)
                return -ENOMEM;
        for (char *line = copy, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                if (!*line)
                        continue;
                MapRange m;
                /* A mapping's header is a maps line; its fields follow as
                 * "Key: value" lines, VmFlags last. */
                if (parse_line(line, &m) >= 0) {
                        cur = m;
                        have = true;
                        continue;
                }
                if (!startswith(line, "VmFlags:"))
                        continue;
                if (!have) {
                        map_list_done(&l);
                        return -EINVAL;
                }
                have = false;
                cur.mergeable = false;
                for (const char *f = line + strlen("VmFlags:"); *f;) {
                        while (*f == ' ')
                                f++;
                        if (f[0] == 'm' && f[1] == 'g' && (f[2] == ' ' || f[2] == 0))
                                cur.mergeable = true;
                        while (*f && *f != ' ')
                                f++;
                }
                if (map_list_push(&l, &cur, &alloc) < 0) {
                        map_list_done(&l);
                        return -ENOMEM;
                }
        }
        *ret = l;
        return 0;
}

static int filter_runs(const MapList *l, bool (*keep)(const MapRange *), MapList *ret);

static bool is_mergeable(const MapRange *m) {
        return m->mergeable;
}

int proc_smaps_parse_mergeable(const char *text, MapList *ret) {
        _cleanup_(map_list_done) MapList all = {};
        int r = smaps_parse(text, &all);
        if (r < 0)
                return r;
        return filter_runs(&all, is_mergeable, ret);
}

int proc_smaps_read_mergeable(int pid_dirfd, MapList *ret) {
        _cleanup_free_ char *buf = NULL;
        int r = procfs_read_pid_file(pid_dirfd, "smaps", PROC_MAPS_MAX, &buf);
        if (r < 0)
                return r;
        return proc_smaps_parse_mergeable(buf, ret);
}

/* Whether [start, end) lies wholly inside the sorted, disjoint runs. */
static bool covered_by(const MapList *runs, uint64_t start, uint64_t end) {
        for (size_t i = 0; i < runs->n && start < end; i++) {
                const MapRange *r = &runs->ranges[i];
                if (r->end <= start)
                        continue;
                if (r->start > start)
                        return false;
                start = r->end;
        }
        return start >= end;
}

void map_list_ksm_flags(const MapList *mergeable, const MapList *anon_private, int *ret_merge_any,
                        int *ret_mergeable) {
        bool outside = false;
        for (size_t i = 0; i < mergeable->n && !outside; i++)
                outside = !covered_by(anon_private, mergeable->ranges[i].start, mergeable->ranges[i].end);
        *ret_mergeable = mergeable->n > 0;
        *ret_merge_any = outside;
}

int proc_smaps_parse_ksm_flags(const char *text, int *ret_merge_any, int *ret_mergeable) {
        _cleanup_(map_list_done) MapList all = {}, mergeable = {}, anon = {};
        int r = smaps_parse(text, &all);
        if (r >= 0)
                r = filter_runs(&all, is_mergeable, &mergeable);
        if (r >= 0)
                r = map_list_anon_private(&all, &anon);
        if (r < 0)
                return r;
        map_list_ksm_flags(&mergeable, &anon, ret_merge_any, ret_mergeable);
        return 0;
}

int proc_smaps_read_ksm_flags(int pid_dirfd, int *ret_merge_any, int *ret_mergeable) {
        _cleanup_free_ char *buf = NULL;
        int r = procfs_read_pid_file(pid_dirfd, "smaps", PROC_MAPS_MAX, &buf);
        if (r < 0)
                return r;
        return proc_smaps_parse_ksm_flags(buf, ret_merge_any, ret_mergeable);
}

static int filter_runs(const MapList *l, bool (*keep)(const MapRange *), MapList *ret) {
        MapList out = {};
        size_t alloc = 0;

        for (size_t i = 0; i < l->n; i++) {
                const MapRange *m = &l->ranges[i];
                if (!keep(m))
                        continue;
                if (out.n > 0 && out.ranges[out.n - 1].end == m->start) {
                        out.ranges[out.n - 1].end = m->end;
                        continue;
                }
                MapRange c = *m;
                if (map_list_push(&out, &c, &alloc) < 0) {
                        map_list_done(&out);
                        return -ENOMEM;
                }
        }
        *ret = out;
        return 0;
}

static bool is_anon_private(const MapRange *m) {
        return m->kind == MAP_KIND_ANON && m->private_;
}

static bool is_advisable(const MapRange *m) {
        return m->kind != MAP_KIND_SPECIAL;
}

int map_list_anon_private(const MapList *l, MapList *ret) {
        return filter_runs(l, is_anon_private, ret);
}

int map_list_advisable_runs(const MapList *l, MapList *ret) {
        return filter_runs(l, is_advisable, ret);
}
