/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A process with known duplicate content, for kernel tests and benchmarks.
 *
 *   ksm-workload [--unique N] [--copies K] [--merge madvise|prctl|none]
 *                [--seed S] [--verify]
 *
 * Maps N*K pages: page i of every copy holds the same pattern (seeded by S
 * and i), so a full merge gives ksm_merging_pages == N*K, pages_shared +N and
 * pages_sharing +N*(K-1). Prints "ready PID ADDR" once the memory is filled
 * and marked, then waits until stdin reaches EOF or SIGTERM/SIGINT arrives.
 * With --verify it re-checks every page once a second and exits 3 on the
 * first difference (a merge must never change what a process reads). */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE 67
#endif

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
        (void) sig;
        stop = 1;
}

static uint64_t mix(uint64_t x) {
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdULL;
        x ^= x >> 33;
        x *= 0xc4ceb9fe1a85ec53ULL;
        x ^= x >> 33;
        return x;
}

static void fill_page(uint64_t *p, size_t words, uint64_t seed, uint64_t i) {
        uint64_t v = mix(seed * 0x9e3779b97f4a7c15ULL + i + 1);
        for (size_t w = 0; w < words; w++)
                p[w] = v + w;
}

static int check_page(const uint64_t *p, size_t words, uint64_t seed, uint64_t i) {
        uint64_t v = mix(seed * 0x9e3779b97f4a7c15ULL + i + 1);
        for (size_t w = 0; w < words; w++)
                if (p[w] != v + w)
                        return -1;
        return 0;
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "unique", required_argument, NULL, 'u' }, { "copies", required_argument, NULL, 'k' },
                { "merge", required_argument, NULL, 'm' },  { "seed", required_argument, NULL, 's' },
                { "verify", no_argument, NULL, 'v' },       {},
        };
        unsigned long unique = 2048, copies = 4, seed = 1;
        const char *merge = "madvise";
        int verify = 0, c;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0)
                switch (c) {
                case 'u': unique = strtoul(optarg, NULL, 10); break;
                case 'k': copies = strtoul(optarg, NULL, 10); break;
                case 'm': merge = optarg; break;
                case 's': seed = strtoul(optarg, NULL, 10); break;
                case 'v': verify = 1; break;
                default: return 2;
                }
        if (unique == 0 || copies == 0)
                return 2;

        signal(SIGTERM, on_signal);
        signal(SIGINT, on_signal);

        size_t page = (size_t) sysconf(_SC_PAGESIZE), words = page / sizeof(uint64_t);
        size_t len = unique * copies * page;

        if (strcmp(merge, "prctl") == 0 && prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0) < 0) {
                perror("prctl(PR_SET_MEMORY_MERGE)");
                return 1;
        }
        uint8_t *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        for (size_t k = 0; k < copies; k++)
                for (size_t i = 0; i < unique; i++)
                        fill_page((uint64_t *) (mem + (k * unique + i) * page), words, seed, i);
        if (strcmp(merge, "madvise") == 0 && madvise(mem, len, MADV_MERGEABLE) < 0) {
                perror("madvise(MADV_MERGEABLE)");
                return 1;
        }
        printf("ready %d %p\n", (int) getpid(), (void *) mem);
        fflush(stdout);

        while (!stop) {
                struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
                int k = poll(&p, 1, 1000);
                if (k > 0) {
                        char buf[256];
                        ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
                        if (n <= 0)
                                break;
                }
                if (k < 0 && errno != EINTR)
                        break;
                if (verify)
                        for (size_t j = 0; j < copies * unique; j++)
                                if (check_page((uint64_t *) (mem + j * page), words, seed, j % unique) < 0) {
                                        fprintf(stderr, "ksm-workload: page %zu changed\n", j);
                                        return 3;
                                }
        }
        return 0;
}
