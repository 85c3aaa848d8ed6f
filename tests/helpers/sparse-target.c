/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A process with a huge sparse mergeable mapping, as a JVM's reserved heap
 * or a guest's MAP_NORESERVE RAM looks to KSM (seed 003), that measures
 * from its own side how long its thread is ever held:
 *
 *   sparse-target GIB PAGES OUTFILE [madvise]
 *
 * maps GIB GiB MAP_NORESERVE, touches PAGES pages spread over it, makes it
 * mergeable (PR_SET_MEMORY_MERGE, or MADV_MERGEABLE over the mapping with
 * "madvise"), prints "ready" and then sleeps 1 ms at a time: the longest
 * time one 1 ms sleep took beyond 1 ms is how long something (a ptrace stop,
 * an injected call) held it. OUTFILE gets "max_hold_us N iterations M"
 * every 100 ms and at SIGTERM, when it exits 0; SIGUSR1 starts the
 * measurement again (after a baseline of the machine's own delays). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE 67
#endif

static volatile sig_atomic_t stop, reset;

static void on_usr1(int sig) {
        (void) sig;
        reset = 1;
}

static void on_term(int sig) {
        (void) sig;
        stop = 1;
}

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static void report(const char *path, uint64_t max_hold, uint64_t iterations) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "we");
        if (!f)
                return;
        fprintf(f, "max_hold_us %" PRIu64 " iterations %" PRIu64 "\n", max_hold, iterations);
        fclose(f);
        rename(tmp, path);
}

int main(int argc, char **argv) {
        if (argc < 4) {
                fprintf(stderr, "usage: %s GIB PAGES OUTFILE [madvise]\n", argv[0]);
                return 2;
        }
        uint64_t size = strtoull(argv[1], NULL, 0) << 30, pages = strtoull(argv[2], NULL, 0);
        bool use_madvise = argc > 4 && strcmp(argv[4], "madvise") == 0;
        char *a = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (a == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        /* pairs of identical pages, so that some really merge */
        for (uint64_t i = 0; i < pages; i++)
                memset(a + (size / pages) * i, (int) (i / 2 + 1), 4096);
        if (use_madvise ? madvise(a, size, MADV_MERGEABLE) : prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0)) {
                perror(use_madvise ? "madvise" : "prctl");
                return 1;
        }
        signal(SIGTERM, on_term);
        signal(SIGUSR1, on_usr1);
        printf("ready\n");
        fflush(stdout);

        uint64_t max_hold = 0, iterations = 0, last_report = now_usec();
        while (!stop) {
                struct timespec ms = { 0, 1000000 };
                uint64_t t0 = now_usec();
                nanosleep(&ms, NULL);
                uint64_t t = now_usec() - t0;
                if (reset) {
                        reset = 0;
                        max_hold = 0;
                        report(argv[3], max_hold, iterations);
                        continue;
                }
                if (t > 1000 && t - 1000 > max_hold)
                        max_hold = t - 1000;
                iterations++;
                if (t0 - last_report >= 100000) {
                        report(argv[3], max_hold, iterations);
                        last_report = t0;
                }
        }
        report(argv[3], max_hold, iterations);
        return 0;
}
