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
 * measurement again (after a baseline of the machine's own delays).
 *
 * A second thread sleeps 1 ms at a time beside it and logs when it woke.
 * The injector seizes one thread (the main one: the leader is the thread
 * it picks when it is not in a blocking call): what stalls the whole
 * machine (a busy or preempted VM) stalls both, what holds the main
 * thread does not stall the other. So each overrun of the main thread is
 * also reported less the longest gap between the other thread's wake-ups
 * within it: "own_hold_us N" is the longest hold that only the main
 * thread saw. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
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

/* The control thread's wake-ups: a ring of 8192 (8 s at 1 kHz) written by
 * it alone, read by the main thread. */
#define RING 8192
static _Atomic uint64_t ring[RING];
static _Atomic uint64_t ring_n;

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

static void *control_main(void *arg) {
        (void) arg;
        for (;;) {
                struct timespec ms = { 0, 1000000 };
                nanosleep(&ms, NULL);
                uint64_t n = atomic_load(&ring_n);
                atomic_store(&ring[n % RING], now_usec());
                atomic_store(&ring_n, n + 1);
        }
        return NULL;
}

/* The longest time within [a, b] that the control thread did not wake;
 * b - a when the ring no longer reaches back to a (nothing is then put
 * down to the machine). */
static uint64_t control_gap(uint64_t a, uint64_t b) {
        uint64_t n = atomic_load(&ring_n), prev = 0, gap = 0;
        uint64_t first = n > RING - 16 ? n - (RING - 16) : 0;
        if (n == 0 || atomic_load(&ring[first % RING]) > a)
                return 0;
        for (uint64_t i = first; i < n; i++) {
                uint64_t t = atomic_load(&ring[i % RING]);
                if (t < a) {
                        prev = t;
                        continue;
                }
                uint64_t from = prev > a ? prev : a, to = t < b ? t : b;
                if (to > from && to - from > gap)
                        gap = to - from;
                prev = t;
                if (t >= b)
                        break;
        }
        if (prev < b && b - (prev > a ? prev : a) > gap)
                gap = b - (prev > a ? prev : a);
        return gap;
}

static void report(const char *path, uint64_t max_hold, uint64_t own_hold, uint64_t iterations) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "we");
        if (!f)
                return;
        fprintf(f, "max_hold_us %" PRIu64 " own_hold_us %" PRIu64 " iterations %" PRIu64 "\n", max_hold, own_hold,
                iterations);
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
        /* Signals go to the main thread only. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_t control;
        if (pthread_create(&control, NULL, control_main, NULL) != 0) {
                fprintf(stderr, "pthread_create failed\n");
                return 1;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        printf("ready\n");
        fflush(stdout);

        uint64_t max_hold = 0, own_hold = 0, iterations = 0, last_report = now_usec();
        while (!stop) {
                struct timespec ms = { 0, 1000000 };
                uint64_t t0 = now_usec();
                nanosleep(&ms, NULL);
                uint64_t t = now_usec() - t0;
                if (reset) {
                        reset = 0;
                        max_hold = own_hold = 0;
                        report(argv[3], max_hold, own_hold, iterations);
                        continue;
                }
                if (t > 1000 && t - 1000 > max_hold)
                        max_hold = t - 1000;
                if (t > 2000) {
                        /* the control thread's own sleeps overrun by
                         * ~0.1 ms: a gap up to 1 ms is a normal one */
                        uint64_t gap = control_gap(t0, t0 + t), stalled = gap > 1000 ? gap - 1000 : 0;
                        uint64_t own = t - 1000 > stalled ? t - 1000 - stalled : 0;
                        if (own > own_hold)
                                own_hold = own;
                }
                iterations++;
                if (t0 - last_report >= 100000) {
                        report(argv[3], max_hold, own_hold, iterations);
                        last_report = t0;
                }
        }
        report(argv[3], max_hold, own_hold, iterations);
        return 0;
}
