/* SPDX-License-Identifier: GPL-2.0-or-later */
/* How fast this process can take its mmap lock for writing: loops
 * mmap(4 KiB) + one write fault + munmap for the given seconds and prints
 * the loops per second. Each loop takes the mmap lock for writing twice,
 * which is what the contention windows' filter lets through for every task
 * on the host (tests/bench/bench-trace-cost.sh).
 *
 *   mmap-rate [SECONDS]      (default 2, at most 60) */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
        double seconds = argc > 1 ? atof(argv[1]) : 2.0, t0 = now(), t;
        long n = 0;

        if (!(seconds > 0 && seconds <= 60)) {
                fprintf(stderr, "mmap-rate: SECONDS must be in (0, 60]\n");
                return 2;
        }
        do {
                for (int i = 0; i < 1000; i++) {
                        char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                        if (p == MAP_FAILED) {
                                perror("mmap-rate: mmap");
                                return 1;
                        }
                        p[0] = 1;
                        munmap(p, 4096);
                        n++;
                }
                t = now();
        } while (t - t0 < seconds);
        printf("%.0f\n", (double) n / (t - t0));
        return 0;
}
