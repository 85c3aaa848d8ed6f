/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "procfs-parse.h"
#include "util.h"

static const char *next_field(const char *p) {
        while (*p && !isspace((unsigned char) *p))
                p++;
        while (*p == ' ')
                p++;
        return p;
}

int procfs_parse_stat(const char *text, ProcStat *ret) {
        ProcStat s = {};
        const char *open, *close, *p;
        unsigned long long v[22];
        char state;

        /* comm is bounded by the first '(' and the *last* ')': a process can
         * name itself "a) (b" and the fields after it still parse. */
        open = strchr(text, '(');
        close = strrchr(text, ')');
        if (!open || !close || close < open)
                return -EINVAL;
        if (sscanf(text, "%d", &s.pid) != 1 || s.pid <= 0)
                return -EINVAL;
        size_t len = (size_t) (close - open - 1);
        if (len >= sizeof s.comm)
                len = sizeof s.comm - 1;
        memcpy(s.comm, open + 1, len);
        s.comm[len] = 0;

        p = close + 1;
        while (*p == ' ')
                p++;
        if (!*p)
                return -EINVAL;
        state = *p;
        p = next_field(p);

        /* fields 4..25: ppid pgrp session tty tpgid flags minflt cminflt majflt
         * cmajflt utime stime cutime cstime priority nice num_threads
         * itrealvalue starttime vsize rss rsslim */
        for (size_t i = 0; i < ELEMENTSOF(v); i++) {
                char *end;
                if (!*p)
                        return -EINVAL;
                errno = 0;
                if (*p == '-')
                        v[i] = (unsigned long long) strtoll(p, &end, 10);
                else
                        v[i] = strtoull(p, &end, 10);
                if (end == p || errno == ERANGE || (*end && !isspace((unsigned char) *end)))
                        return -EINVAL;
                p = next_field(end);
        }
        s.state = state;
        s.ppid = (int) v[0];
        s.flags = (unsigned) v[5];
        s.utime_ticks = v[10];
        s.stime_ticks = v[11];
        s.num_threads = (int) v[16];
        s.start_time_ticks = v[18];
        s.vsize_bytes = v[19];
        s.rss_pages = v[20];
        /* fields 26..51, optional: startcode endcode startstack (26-28) and
         * start_data end_data start_brk arg_start arg_end env_start env_end
         * (45-51); the ones between are skipped */
        for (unsigned field = 26, k = 0; field <= 51 && *p; field++) {
                char *end;
                errno = 0;
                unsigned long long x = strtoull(p, &end, 10);
                if (end == p || errno == ERANGE || (*end && !isspace((unsigned char) *end)))
                        break;
                if (field <= 28 || field >= 45)
                        s.mm_layout[k++] = x;
                p = next_field(end);
        }
        *ret = s;
        return 0;
}

static int parse_kib(const char *v, uint64_t *ret) {
        uint64_t n;
        char *end;
        while (*v == ' ' || *v == '\t')
                v++;
        if (!isdigit((unsigned char) *v))
                return -EINVAL;
        errno = 0;
        n = strtoull(v, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        while (*end == ' ')
                end++;
        if (*end && strncmp(end, "kB", 2) != 0)
                return -EINVAL;
        *ret = n;
        return 0;
}

int procfs_parse_status(const char *text, ProcStatus *ret) {
        ProcStatus s = { .seccomp = -1 };
        bool have_tgid = false;
        _cleanup_free_ char *copy = strdup(text);

        if (!copy)
                return -ENOMEM;
        for (char *line = copy, *next; line && *line; line = next) {
                char *val;
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                val = strchr(line, ':');
                if (!val)
                        continue;
                *val++ = 0;
                while (*val == ' ' || *val == '\t')
                        val++;

                if (streq(line, "Name"))
                        /* Name is escaped by the kernel (\n as "\n"), so one line. */
                        strscpy(s.name, sizeof s.name, val);
                else if (streq(line, "Tgid"))
                        have_tgid = sscanf(val, "%d", &s.tgid) == 1;
                else if (streq(line, "PPid"))
                        (void) sscanf(val, "%d", &s.ppid);
                else if (streq(line, "TracerPid"))
                        (void) sscanf(val, "%d", &s.tracer_pid);
                else if (streq(line, "Uid"))
                        (void) sscanf(val, "%u %u %u %u", &s.uid_real, &s.uid_effective, &s.uid_saved, &s.uid_fs);
                else if (streq(line, "Gid"))
                        (void) sscanf(val, "%u %u %u %u", &s.gid_real, &s.gid_effective, &s.gid_saved, &s.gid_fs);
                else if (streq(line, "CapPrm"))
                        (void) sscanf(val, "%" SCNx64, &s.cap_permitted);
                else if (streq(line, "Threads"))
                        (void) sscanf(val, "%u", &s.threads);
                else if (streq(line, "Seccomp"))
                        (void) sscanf(val, "%d", &s.seccomp);
                else if (streq(line, "NSpid")) {
                        int n = 0;
                        for (char *t = strtok(val, " \t"); t; t = strtok(NULL, " \t"))
                                n++;
                        s.nspid_depth = n;
                } else if (streq(line, "x86_Thread_features"))
                        s.shadow_stack = strstr(val, "shstk") != NULL;
                else if (streq(line, "VmRSS")) {
                        if (parse_kib(val, &s.vm_rss_kib) < 0)
                                return -EINVAL;
                        s.has_mm = true;
                } else if (streq(line, "RssAnon")) {
                        if (parse_kib(val, &s.rss_anon_kib) < 0)
                                return -EINVAL;
                } else if (streq(line, "RssFile")) {
                        if (parse_kib(val, &s.rss_file_kib) < 0)
                                return -EINVAL;
                } else if (streq(line, "RssShmem")) {
                        if (parse_kib(val, &s.rss_shmem_kib) < 0)
                                return -EINVAL;
                } else if (streq(line, "VmSwap")) {
                        if (parse_kib(val, &s.vm_swap_kib) < 0)
                                return -EINVAL;
                }
        }
        if (!have_tgid)
                return -EINVAL;
        *ret = s;
        return 0;
}

void procfs_strip_deleted(char *path) {
        char *e = endswith(path, " (deleted)");
        if (e)
                *e = 0;
}

int procfs_parse_cgroup(const char *text, char **ret) {
        for (const char *line = text; line && *line;) {
                const char *eol = strchr(line, '\n');
                size_t len = eol ? (size_t) (eol - line) : strlen(line);

                if (len >= 3 && strncmp(line, "0::", 3) == 0) {
                        const char *p = line + 3;
                        size_t plen = len - 3;
                        if (plen == 0 || *p != '/')
                                return -EINVAL;
                        p++, plen--;
                        /* A process in a cgroup deleted under it reads "... (deleted)". */
                        char *path = strndup(p, plen);
                        if (!path)
                                return -ENOMEM;
                        *ret = path;
                        return 0;
                }
                line = eol ? eol + 1 : NULL;
        }
        return -ENODATA;
}

int procfs_parse_ksm_stat(const char *text, ProcKsmStat *ret) {
        ProcKsmStat s = { .merge_any = -1, .mergeable = -1 };
        unsigned seen = 0;
        _cleanup_free_ char *copy = strdup(text);

        if (!copy)
                return -ENOMEM;
        for (char *line = copy, *next; line && *line; line = next) {
                char key[64], val[64];
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                if (sscanf(line, "%63[^: ]%*[: ]%63s", key, val) != 2)
                        continue;
                if (streq(key, "ksm_merge_any") || streq(key, "ksm_mergeable")) {
                        int b = streq(val, "yes") ? 1 : streq(val, "no") ? 0 : -1;
                        if (b < 0)
                                return -EINVAL;
                        if (streq(key, "ksm_merge_any"))
                                s.merge_any = b;
                        else
                                s.mergeable = b;
                        continue;
                }
                if (streq(key, "ksm_process_profit")) {
                        if (safe_atoi64(val, &s.process_profit) < 0)
                                return -EINVAL;
                        seen |= 8;
                        continue;
                }
                uint64_t *dst = streq(key, "ksm_rmap_items")      ? &s.rmap_items
                                : streq(key, "ksm_zero_pages")    ? &s.zero_pages
                                : streq(key, "ksm_merging_pages") ? &s.merging_pages
                                                                  : NULL;
                if (!dst)
                        continue; /* a newer kernel's extra line */
                int64_t v;
                /* ksm_zero_pages is a signed counter in the kernel. */
                if (safe_atoi64(val, &v) < 0)
                        return -EINVAL;
                *dst = v < 0 ? 0 : (uint64_t) v;
                seen |= dst == &s.rmap_items ? 1 : dst == &s.merging_pages ? 2 : 4;
        }
        if (!(seen & 2))
                return -EINVAL;
        *ret = s;
        return 0;
}

int procfs_parse_cmdline(const char *buf, size_t len, char **ret) {
        char *s = malloc(len + 1), *w = s;
        if (!s)
                return -ENOMEM;
        bool space = true; /* no leading space */
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char) buf[i];
                if (c == 0 || c < 0x20 || c == 0x7f) {
                        if (!space)
                                *w++ = ' ';
                        space = true;
                        continue;
                }
                *w++ = (char) c;
                space = false;
        }
        while (w > s && w[-1] == ' ')
                w--;
        *w = 0;
        *ret = s;
        return 0;
}

int procfs_parse_schedstat(const char *text, uint64_t *ret_cpu_ns, uint64_t *ret_wait_ns) {
        unsigned long long cpu, wait;
        if (sscanf(text, "%llu %llu", &cpu, &wait) != 2)
                return -EINVAL;
        if (ret_cpu_ns)
                *ret_cpu_ns = cpu;
        if (ret_wait_ns)
                *ret_wait_ns = wait;
        return 0;
}

int procfs_parse_meminfo(const char *text, Meminfo *ret) {
        Meminfo m = {};
        bool total = false;
        _cleanup_free_ char *copy = strdup(text);

        if (!copy)
                return -ENOMEM;
        for (char *line = copy, *next; line && *line; line = next) {
                char *val;
                uint64_t *dst = NULL;
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                val = strchr(line, ':');
                if (!val)
                        continue;
                *val++ = 0;
                if (streq(line, "MemTotal"))
                        dst = &m.mem_total_kib, total = true;
                else if (streq(line, "MemFree"))
                        dst = &m.mem_free_kib;
                else if (streq(line, "MemAvailable"))
                        dst = &m.mem_available_kib, m.has_mem_available = true;
                else if (streq(line, "AnonPages"))
                        dst = &m.anon_pages_kib;
                else if (streq(line, "SwapTotal"))
                        dst = &m.swap_total_kib;
                else if (streq(line, "SwapFree"))
                        dst = &m.swap_free_kib;
                if (dst && parse_kib(val, dst) < 0)
                        return -EINVAL;
        }
        if (!total || m.mem_total_kib == 0)
                return -EINVAL;
        if (!m.has_mem_available)
                m.mem_available_kib = m.mem_free_kib;
        *ret = m;
        return 0;
}

static int parse_psi_line(const char *line, PsiLine *ret) {
        PsiLine l;
        unsigned long long total;
        if (sscanf(line, "avg10=%lf avg60=%lf avg300=%lf total=%llu", &l.avg10, &l.avg60, &l.avg300,
                   &total) != 4)
                return -EINVAL;
        if (l.avg10 < 0 || l.avg60 < 0 || l.avg300 < 0 || l.avg10 > 100 || l.avg60 > 100 ||
            l.avg300 > 100)
                return -ERANGE;
        l.total_usec = total;
        *ret = l;
        return 0;
}

int procfs_parse_psi(const char *text, Psi *ret) {
        Psi p = {};
        bool some = false;
        for (const char *line = text; line && *line;) {
                const char *eol = strchr(line, '\n');
                int r = 0;
                if (startswith(line, "some "))
                        r = parse_psi_line(line + 5, &p.some), some = r >= 0;
                else if (startswith(line, "full "))
                        r = parse_psi_line(line + 5, &p.full);
                if (r < 0)
                        return r;
                line = eol ? eol + 1 : NULL;
        }
        if (!some)
                return -EINVAL;
        p.present = true;
        *ret = p;
        return 0;
}
