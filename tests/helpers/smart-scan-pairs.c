/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Seed 004's reproducer: pairs of identical pages made mergeable at
 * different times. Smart scan counts each page's skips from when it
 * became mergeable, so two old pages may never be looked at in one scan
 * again and stay unmerged (317/420 pairs merged in the thread).
 *
 *   smart-scan-pairs REPS WAIT_MAX AFTER_SCANS
 *
 * For each wait 0..WAIT_MAX (in full scans) REPS pairs: the first page of
 * every pair is made MADV_MERGEABLE at once, the second WAIT full scans
 * later. AFTER_SCANS full scans after the last, prints "result merged X/Y";
 * then "scans S merged X/Y" whenever it changes, until stdin closes. Every
 * pair has contents of its own (salted), so pairs only merge within. */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static uint64_t read_u64(const char *path) {
        FILE *f = fopen(path, "re");
        uint64_t v = 0;
        if (!f)
                return 0;
        if (fscanf(f, "%" SCNu64, &v) != 1)
                v = 0;
        fclose(f);
        return v;
}

static uint64_t full_scans(void) {
        return read_u64("/sys/kernel/mm/ksm/full_scans");
}

static uint64_t merged_pairs(void) {
        return read_u64("/proc/self/ksm_merging_pages") / 2;
}

/* Returns 1 when stdin closed meanwhile. */
static int wait_scans(uint64_t target) {
        while (full_scans() < target) {
                struct pollfd p = { .fd = 0, .events = POLLIN };
                if (poll(&p, 1, 5) > 0) {
                        char c;
                        if (read(0, &c, 1) <= 0)
                                return 1;
                }
        }
        return 0;
}

int main(int argc, char **argv) {
        if (argc != 4) {
                fprintf(stderr, "usage: %s REPS WAIT_MAX AFTER_SCANS\n", argv[0]);
                return 2;
        }
        unsigned reps = (unsigned) atoi(argv[1]), wait_max = (unsigned) atoi(argv[2]);
        uint64_t after = strtoull(argv[3], NULL, 0);
        unsigned n = reps * (wait_max + 1);
        long ps = sysconf(_SC_PAGESIZE);
        char *a = mmap(NULL, (size_t) ps * 2 * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (a == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t salt = (uint64_t) ts.tv_nsec * 2654435761u ^ (uint64_t) getpid() << 32;
        for (unsigned i = 0; i < n; i++)
                for (unsigned half = 0; half < 2; half++) {
                        uint64_t *p = (uint64_t *) (a + (size_t) ps * (2 * i + half));
                        for (size_t j = 0; j < (size_t) ps / 8; j++)
                                p[j] = salt + i * 0x9e3779b97f4a7c15ull + j;
                }
        for (unsigned i = 0; i < n; i++)
                if (madvise(a + (size_t) ps * 2 * i, (size_t) ps, MADV_MERGEABLE) < 0) {
                        perror("madvise");
                        return 1;
                }
        uint64_t start = full_scans();
        printf("pairs %u start %" PRIu64 "\n", n, start);
        fflush(stdout);
        for (unsigned w = 0; w <= wait_max; w++) {
                if (wait_scans(start + w))
                        return 0;
                for (unsigned r = 0; r < reps; r++) {
                        unsigned i = w * reps + r;
                        if (madvise(a + (size_t) ps * (2 * i + 1), (size_t) ps, MADV_MERGEABLE) < 0) {
                                perror("madvise");
                                return 1;
                        }
                }
        }
        if (wait_scans(start + wait_max + after))
                return 0;
        printf("result merged %" PRIu64 "/%u after %" PRIu64 " full scans\n", merged_pairs(), n, full_scans() - start);
        fflush(stdout);
        uint64_t last = UINT64_MAX;
        for (;;) {
                uint64_t m = merged_pairs();
                if (m != last) {
                        printf("scans %" PRIu64 " merged %" PRIu64 "/%u\n", full_scans() - start, m, n);
                        fflush(stdout);
                        last = m;
                }
                struct pollfd p = { .fd = 0, .events = POLLIN };
                if (poll(&p, 1, 200) > 0) {
                        char c;
                        if (read(0, &c, 1) <= 0)
                                return 0;
                }
        }
}
