/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A process that keeps its own mmap_lock busy, for the contended-process
 * tests and benchmarks.
 *
 *   mmap-contender [--threads N] [--mib M] [--mode churn|mlock]
 *
 * churn: each thread loops mmap(M MiB, MAP_POPULATE) + munmap. This is how
 *        it holds the lock: mmap and munmap take it for writing; MAP_POPULATE
 *        then faults the whole region in under mmap_read_lock (~0.1 s for
 *        512 MiB). While one thread populates, another's mmap or munmap
 *        queues for the write lock, and an rwsem with a writer queued makes
 *        every later reader (ksm_stat's mmap_read_lock_killable(), ksmd)
 *        wait behind it; with 4 threads the chain rarely breaks. Measured on
 *        the 2-core 6.18 test machine, a ksm_stat read of it takes 0.3 s
 *        median, 1.4 s p90, 3.1 s at worst (4 threads x 512 MiB; 2 x 256 MiB
 *        gives 50 ms median).
 * mlock: one M MiB region of small pages (MADV_NOHUGEPAGE), populated once;
 *        each thread loops mlock + munlock over all of it, which walk every
 *        page with the lock held for writing (ksm_stat reads: 10 ms median
 *        with 2 x 256 MiB, 60 ms with 3 x 1 GiB): a milder contender.
 *
 * Prints "ready PID" once running, then works until stdin reaches EOF or
 * SIGTERM arrives. Bounded: it also stops by itself after 10 minutes. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static size_t len;
static char *region;
static int mode_mlock;

static void on_signal(int sig) {
        (void) sig;
        stop = 1;
}

static void *churn(void *arg) {
        (void) arg;
        while (!stop) {
                if (mode_mlock) {
                        if (mlock(region, len) < 0 && errno != EAGAIN && errno != ENOMEM)
                                break;
                        (void) munlock(region, len);
                } else {
                        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                                       -1, 0);
                        if (p == MAP_FAILED)
                                continue;
                        munmap(p, len);
                }
        }
        return NULL;
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "threads", required_argument, NULL, 't' },
                { "mib", required_argument, NULL, 'm' },
                { "mode", required_argument, NULL, 'M' },
                {},
        };
        unsigned threads = 2, mib = 256;
        int c;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0)
                switch (c) {
                case 't':
                        threads = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'm':
                        mib = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'M':
                        if (strcmp(optarg, "mlock") == 0)
                                mode_mlock = 1;
                        else if (strcmp(optarg, "churn") != 0) {
                                fprintf(stderr, "unknown mode %s\n", optarg);
                                return 2;
                        }
                        break;
                default:
                        return 2;
                }
        if (threads < 1 || threads > 64 || mib < 1 || mib > 4096)
                return 2;
        len = (size_t) mib << 20;

        signal(SIGTERM, on_signal);
        signal(SIGINT, on_signal);
        signal(SIGALRM, on_signal);
        alarm(600);

        if (mode_mlock) {
                region = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (region == MAP_FAILED)
                        return 1;
                /* Small pages: the walk per mlock is per 4 KiB page, not per 2 MiB. */
                (void) madvise(region, len, MADV_NOHUGEPAGE);
                memset(region, 1, len);
        }

        pthread_t *t = calloc(threads, sizeof *t);
        if (!t)
                return 1;
        for (unsigned i = 0; i < threads; i++)
                if (pthread_create(&t[i], NULL, churn, NULL) != 0)
                        return 1;
        printf("ready %d\n", (int) getpid());
        fflush(stdout);

        while (!stop) {
                struct pollfd p = { .fd = 0, .events = POLLIN };
                char buf[64];
                if (poll(&p, 1, 200) > 0 && read(0, buf, sizeof buf) <= 0)
                        stop = 1;
        }
        for (unsigned i = 0; i < threads; i++)
                pthread_join(t[i], NULL);
        return 0;
}
