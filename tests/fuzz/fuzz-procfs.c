/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The /proc parsers, one target per file format: FUZZ_PROCFS names which
 * (stat, status, cgroup, ksm_stat, meminfo, psi, schedstat). Each checks the
 * ret_* contract (untouched on failure) and what a success promises. */
#include <errno.h>

#include "fuzz.h"
#include "procfs.h"

#define POISON 0xa5

#define EXPECT_UNTOUCHED_ON_FAILURE(r, obj) \
        do {                                \
                if ((r) < 0)                \
                        FUZZ_CHECK(fuzz_untouched(&(obj), sizeof(obj), POISON)); \
        } while (0)

_unused_ static void fuzz_stat(const char *text) {
        ProcStat s;
        memset(&s, POISON, sizeof s);
        int r = procfs_parse_stat(text, &s);
        FUZZ_CHECK(r == 0 || r == -EINVAL);
        EXPECT_UNTOUCHED_ON_FAILURE(r, s);
        if (r == 0) {
                FUZZ_CHECK(s.pid > 0);
                FUZZ_CHECK(strnlen(s.comm, sizeof s.comm) < sizeof s.comm);
        }
}

_unused_ static void fuzz_status(const char *text) {
        ProcStatus s;
        memset(&s, POISON, sizeof s);
        int r = procfs_parse_status(text, &s);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        EXPECT_UNTOUCHED_ON_FAILURE(r, s);
        if (r == 0)
                FUZZ_CHECK(strnlen(s.name, sizeof s.name) < sizeof s.name);
}

_unused_ static void fuzz_cgroup(const char *text) {
        char *const poison = (char *) (uintptr_t) 0x5a5a5a5a;
        char *path = poison;
        int r = procfs_parse_cgroup(text, &path);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENODATA || r == -ENOMEM);
        if (r < 0) {
                FUZZ_CHECK(path == poison);
                return;
        }
        /* One line of the file, never more. */
        FUZZ_CHECK(!strchr(path, '\n'));
        free(path);
}

_unused_ static void fuzz_ksm_stat(const char *text) {
        ProcKsmStat s;
        memset(&s, POISON, sizeof s);
        int r = procfs_parse_ksm_stat(text, &s);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        EXPECT_UNTOUCHED_ON_FAILURE(r, s);
        if (r == 0) {
                FUZZ_CHECK(s.merge_any >= -1 && s.merge_any <= 1);
                FUZZ_CHECK(s.mergeable >= -1 && s.mergeable <= 1);
                /* Signed kernel counters are clamped, never wrapped. */
                FUZZ_CHECK(s.zero_pages <= INT64_MAX && s.merging_pages <= INT64_MAX);
        }
}

_unused_ static void fuzz_meminfo(const char *text) {
        Meminfo m;
        memset(&m, POISON, sizeof m);
        int r = procfs_parse_meminfo(text, &m);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        EXPECT_UNTOUCHED_ON_FAILURE(r, m);
        if (r == 0) {
                FUZZ_CHECK(m.mem_total_kib > 0);
                if (!m.has_mem_available)
                        FUZZ_CHECK(m.mem_available_kib == m.mem_free_kib);
        }
}

_unused_ static void fuzz_psi(const char *text) {
        Psi p;
        memset(&p, POISON, sizeof p);
        int r = procfs_parse_psi(text, &p);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
        EXPECT_UNTOUCHED_ON_FAILURE(r, p);
        if (r == 0) {
                FUZZ_CHECK(p.present);
                /* NaN compares false: it must have been refused. */
                FUZZ_CHECK(p.some.avg10 >= 0 && p.some.avg10 <= 100);
                FUZZ_CHECK(p.some.avg60 >= 0 && p.some.avg60 <= 100);
                FUZZ_CHECK(p.some.avg300 >= 0 && p.some.avg300 <= 100);
        }
}

_unused_ static void fuzz_schedstat(const char *text) {
        uint64_t cpu = 7, wait = 9;
        int r = procfs_parse_schedstat(text, &cpu, &wait);
        FUZZ_CHECK(r == 0 || r == -EINVAL);
        if (r < 0)
                FUZZ_CHECK(cpu == 7 && wait == 9);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = fuzz_text(data, size);
        FUZZ_PROCFS(text);
        free(text);
        return 0;
}
