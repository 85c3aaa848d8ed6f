/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ksmt2-churn.so: LD_PRELOAD it into an unmodified program (Q1's contended
 * QEMU guest) to give that program's own mm a thread that churns its
 * address space, for a bounded time:
 *
 *   KSMT2_CHURN_SECS=S   churn for S seconds from the program's start (unset:
 *                        the module does nothing)
 *   KSMT2_CHURN_MIB=M    size of each mapping (default 256)
 *   KSMT2_CHURN_THREADS=T  threads that churn (default 1, at most 16)
 *
 * Each iteration is churn.h's: mmap, write one byte, munmap, the mmap_lock
 * taken for writing twice. Why a preload and not the host's own management
 * of QEMU: traced on 6.18, nothing QMP offers makes QEMU hold its mmap_lock
 * for long. object-add/object-del of a memory backend (~390 pairs/s) writes
 * only VMA changes, and an idle or booting TCG guest faults its RAM in under
 * per-VMA locks: ksmd never waited measurably on such a guest, so nothing
 * showed whether the daemon excludes a guest that does hold it up, and
 * gives it back exactly its QEMU-marked ranges. This is that guest.
 *
 * The module unsets its variables and LD_PRELOAD in the constructor, so
 * the program's children (helpers QEMU spawns) do not churn too. Its thread
 * blocks every signal, so no process-directed signal meant for the program
 * lands on it, and when done each writes one line to stderr:
 *   "ksmt2-churn: N iterations in S.SSS s"
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "churn.h"

static double churn_secs;
static size_t churn_len;

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void *churn_main(void *arg) {
        (void) arg;
        double t0 = now_s(), t;
        uint64_t n = 0;
        while ((t = now_s()) - t0 < churn_secs)
                if (churn_once(churn_len, false, true))
                        n++;
        fprintf(stderr, "ksmt2-churn: %llu iterations in %.3f s\n", (unsigned long long) n, t - t0);
        return NULL;
}

__attribute__((constructor)) static void churn_start(void) {
        const char *secs = getenv("KSMT2_CHURN_SECS"), *mib = getenv("KSMT2_CHURN_MIB"),
                   *threads = getenv("KSMT2_CHURN_THREADS");
        char *end;

        if (!secs)
                return;
        churn_secs = strtod(secs, &end);
        if (*end || !(churn_secs > 0 && churn_secs <= 86400)) {
                fprintf(stderr, "ksmt2-churn: KSMT2_CHURN_SECS=%s: not a number of seconds in (0, 86400]\n", secs);
                return;
        }
        unsigned long m = mib ? strtoul(mib, &end, 10) : 256;
        if ((mib && *end) || m == 0 || m > 65536) {
                fprintf(stderr, "ksmt2-churn: KSMT2_CHURN_MIB=%s: not a size in MiB in [1, 65536]\n", mib);
                return;
        }
        unsigned long n = threads ? strtoul(threads, &end, 10) : 1;
        if ((threads && *end) || n == 0 || n > 16) {
                fprintf(stderr, "ksmt2-churn: KSMT2_CHURN_THREADS=%s: not a thread count in [1, 16]\n", threads);
                return;
        }
        churn_len = (size_t) m << 20;
        unsetenv("KSMT2_CHURN_SECS");
        unsetenv("KSMT2_CHURN_MIB");
        unsetenv("KSMT2_CHURN_THREADS");
        unsetenv("LD_PRELOAD");

        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_t th;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        for (unsigned long i = 0; i < n; i++) {
                int r = pthread_create(&th, &attr, churn_main, NULL);
                if (r != 0) {
                        fprintf(stderr, "ksmt2-churn: cannot start churn thread %lu (error %d)\n", i, r);
                        break;
                }
        }
        pthread_attr_destroy(&attr);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
}
