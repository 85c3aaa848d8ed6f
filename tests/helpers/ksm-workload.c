/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A process with known duplicate content, for kernel tests and benchmarks.
 *
 *   ksm-workload [--unique N] [--copies K] [--private P] [--merge madvise|prctl|none]
 *                [--seed S] [--verify]
 *                [--churn-threads T] [--churn-mib M] [--churn-touch yes|no] [--churn-mark yes|no]
 *                [--churn-mprotect yes|no] [--vmas V]
 *
 * Maps N*K pages: page i of every copy holds the same pattern (seeded by S
 * and i), so a full merge gives ksm_merging_pages == N*K, pages_shared +N and
 * pages_sharing +N*(K-1). --private adds P pages after them whose content
 * is seeded by the pid, so they merge with nothing (a fleet of processes
 * sharing N pages with one seed and each keeping P of its own).
 * Prints "ready PID ADDR" once the memory is filled and marked, then waits
 * until stdin reaches EOF or SIGTERM/SIGINT arrives.
 * With --verify it re-checks every page once a second and exits 3 on the
 * first difference (a merge must never change what a process reads).
 *
 * --churn-threads starts T threads that loop mmap(M MiB) / write one byte
 * / munmap in this same mm (churn.h: the contention ksmd's mmap_read_lock
 * meets). --churn-touch no leaves out the write, --churn-mark yes marks
 * each mapping MADV_MERGEABLE before it.
 * --churn-mprotect yes makes the churn threads change the protection of the
 * mergeable buffer's first page instead (read-only, then read-write again),
 * which splits and merges its VMA: the mmap lock and that VMA's own lock
 * are write-held, so even ksmd's per-VMA lookups (seed 001) of pages in it
 * fall back to the mmap lock, and a trylock there (seed 000) fails.
 * --vmas V adds V one-page mappings that cannot merge into one VMA
 * (alternating protections), none of them eligible for a huge page: what
 * khugepaged walks past under the mmap lock (seed 002), and with the fix
 * drops the lock between batches of while a writer waits.
 * Each iteration's latency goes into a per-thread histogram; the stdin line
 * "reset" clears them and "stats" prints
 *   "stats ops=N elapsed_usec=U p50_usec=X p99_usec=Y max_usec=Z"
 * over the iterations since the last reset. "grow" maps N*K more pages of
 * the same shape (seeded by S + 1000, so they merge among themselves) and
 * marks them as the first ones were, then prints "grown ADDR": memory added
 * to an mm already in KSM, as a guest's hot-plugged RAM is, with no new
 * ksm_enter (the kernel calls it once per mm). "fork" forks a child that
 * exits at once (a fork before an exec), waits for it and prints "forked
 * PID": the kernel puts the child's mm into KSM as it copies the parent's
 * (ksm_fork), a ksm_enter in the parent's name. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "churn.h"

#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE 67
#endif

/* Read by the churn threads too: an atomic, which a handler may store to. */
static atomic_int stop;
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

/* Log-linear latency buckets: exact below 32 ns, then 32 sub-buckets per
 * power of two (3% resolution), 1920 buckets up to 2^64 ns. */
#define HIST_SUB 32
#define HIST_BUCKETS (HIST_SUB + 59 * HIST_SUB)

static unsigned hist_bucket(uint64_t ns) {
        if (ns < HIST_SUB)
                return (unsigned) ns;
        unsigned msb = 63 - (unsigned) __builtin_clzll(ns);
        return HIST_SUB + (msb - 5) * HIST_SUB + (unsigned) ((ns >> (msb - 5)) & (HIST_SUB - 1));
}

static uint64_t hist_bucket_mid_ns(unsigned b) {
        if (b < HIST_SUB)
                return b;
        unsigned msb = (b - HIST_SUB) / HIST_SUB + 5, sub = (b - HIST_SUB) % HIST_SUB;
        uint64_t lo = (uint64_t) (HIST_SUB + sub) << (msb - 5);
        return lo + ((1ULL << (msb - 5)) >> 1);
}

typedef struct Churn {
        pthread_t thread;
        size_t len;
        int touch, mark;
        uint8_t *mprotect_page;         /* --churn-mprotect: this page, not mmap/munmap */
        size_t page_size;
        /* Written by the churn thread, read by main: relaxed atomics, the
         * counts only need to be whole, not ordered. */
        _Atomic uint64_t hist[HIST_BUCKETS];
        _Atomic uint64_t max_ns;
        _Atomic unsigned epoch_seen;
} Churn;

static _Atomic unsigned churn_epoch;

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static void *churn_thread(void *arg) {
        Churn *c = arg;
        while (!stop) {
                unsigned e = atomic_load_explicit(&churn_epoch, memory_order_acquire);
                if (e != atomic_load_explicit(&c->epoch_seen, memory_order_relaxed)) {
                        for (unsigned b = 0; b < HIST_BUCKETS; b++)
                                atomic_store_explicit(&c->hist[b], 0, memory_order_relaxed);
                        atomic_store_explicit(&c->max_ns, 0, memory_order_relaxed);
                        atomic_store_explicit(&c->epoch_seen, e, memory_order_release);
                }
                uint64_t t0 = now_ns();
                if (c->mprotect_page) {
                        (void) mprotect(c->mprotect_page, c->page_size, PROT_READ);
                        (void) mprotect(c->mprotect_page, c->page_size, PROT_READ | PROT_WRITE);
                } else if (!churn_once(c->len, c->mark, c->touch))
                        continue;
                uint64_t d = now_ns() - t0;
                atomic_fetch_add_explicit(&c->hist[hist_bucket(d)], 1, memory_order_relaxed);
                if (d > atomic_load_explicit(&c->max_ns, memory_order_relaxed))
                        atomic_store_explicit(&c->max_ns, d, memory_order_relaxed);
        }
        return NULL;
}

static void churn_reset(Churn *churn, unsigned n, uint64_t *ret_start_ns) {
        unsigned e = atomic_fetch_add_explicit(&churn_epoch, 1, memory_order_acq_rel) + 1;
        /* Wait until every thread has cleared its histogram, so "stats"
         * never mixes iterations from before the reset. A thread blocked
         * in mmap for long delays this, which is what we measure anyway. */
        for (unsigned i = 0; i < n; i++)
                while (atomic_load_explicit(&churn[i].epoch_seen, memory_order_acquire) != e && !stop)
                        usleep(100);
        *ret_start_ns = now_ns();
}

static void churn_print_stats(Churn *churn, unsigned n, uint64_t start_ns) {
        static uint64_t total[HIST_BUCKETS];
        uint64_t ops = 0, max_ns = 0;

        memset(total, 0, sizeof total);
        for (unsigned i = 0; i < n; i++) {
                for (unsigned b = 0; b < HIST_BUCKETS; b++) {
                        uint64_t k = atomic_load_explicit(&churn[i].hist[b], memory_order_relaxed);
                        total[b] += k;
                        ops += k;
                }
                uint64_t m = atomic_load_explicit(&churn[i].max_ns, memory_order_relaxed);
                if (m > max_ns)
                        max_ns = m;
        }
        uint64_t p50 = 0, p99 = 0, seen = 0;
        for (unsigned b = 0; b < HIST_BUCKETS && ops > 0; b++) {
                seen += total[b];
                if (p50 == 0 && seen * 100 >= ops * 50)
                        p50 = hist_bucket_mid_ns(b);
                if (seen * 100 >= ops * 99) {
                        p99 = hist_bucket_mid_ns(b);
                        break;
                }
        }
        printf("stats ops=%llu elapsed_usec=%llu p50_usec=%.1f p99_usec=%.1f max_usec=%.1f\n",
               (unsigned long long) ops, (unsigned long long) ((now_ns() - start_ns) / 1000), p50 / 1000.0,
               p99 / 1000.0, max_ns / 1000.0);
        fflush(stdout);
}

static void fork_child(void) {
        pid_t c = fork();
        if (c == 0)
                _exit(0);
        if (c < 0) {
                fprintf(stderr, "ksm-workload: fork: %s\n", strerror(errno));
                return;
        }
        (void) waitpid(c, NULL, 0);
        printf("forked %d\n", (int) c);
        fflush(stdout);
}

static void grow(unsigned long unique, unsigned long copies, unsigned long seed, const char *merge, size_t page) {
        size_t len = unique * copies * page, words = page / sizeof(uint64_t);
        uint8_t *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
                perror("mmap");
                printf("grown failed\n");
                fflush(stdout);
                return;
        }
        for (size_t k = 0; k < copies; k++)
                for (size_t i = 0; i < unique; i++)
                        fill_page((uint64_t *) (mem + (k * unique + i) * page), words, seed, i);
        if (strcmp(merge, "madvise") == 0 && madvise(mem, len, MADV_MERGEABLE) < 0)
                perror("madvise(MADV_MERGEABLE)");
        printf("grown %p\n", (void *) mem);
        fflush(stdout);
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "unique", required_argument, NULL, 'u' }, { "copies", required_argument, NULL, 'k' },
                { "merge", required_argument, NULL, 'm' },  { "seed", required_argument, NULL, 's' },
                { "verify", no_argument, NULL, 'v' },       { "private", required_argument, NULL, 'p' },
                { "churn-threads", required_argument, NULL, 't' },
                { "churn-mib", required_argument, NULL, 'M' },
                { "churn-touch", required_argument, NULL, 'T' },
                { "churn-mark", required_argument, NULL, 'G' },
                { "churn-mprotect", required_argument, NULL, 'P' },
                { "vmas", required_argument, NULL, 'V' },
                {},
        };
        unsigned long unique = 2048, copies = 4, seed = 1, private_pages = 0;
        unsigned long churn_threads = 0, churn_mib = 256, vmas = 0;
        const char *merge = "madvise";
        int verify = 0, churn_touch = 1, churn_mark = 0, churn_mprotect = 0, c;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0)
                switch (c) {
                case 'u': unique = strtoul(optarg, NULL, 10); break;
                case 'k': copies = strtoul(optarg, NULL, 10); break;
                case 'm': merge = optarg; break;
                case 's': seed = strtoul(optarg, NULL, 10); break;
                case 'v': verify = 1; break;
                case 'p': private_pages = strtoul(optarg, NULL, 10); break;
                case 't': churn_threads = strtoul(optarg, NULL, 10); break;
                case 'M': churn_mib = strtoul(optarg, NULL, 10); break;
                case 'T': churn_touch = strcmp(optarg, "no") != 0; break;
                case 'G': churn_mark = strcmp(optarg, "no") != 0; break;
                case 'P': churn_mprotect = strcmp(optarg, "no") != 0; break;
                case 'V': vmas = strtoul(optarg, NULL, 10); break;
                default: return 2;
                }
        if (unique == 0 || copies == 0 || churn_threads > 64 || churn_mib == 0 || vmas > 1000000)
                return 2;

        signal(SIGTERM, on_signal);
        signal(SIGINT, on_signal);

        size_t page = (size_t) sysconf(_SC_PAGESIZE), words = page / sizeof(uint64_t);
        size_t shared_pages = unique * copies, len = (shared_pages + private_pages) * page;
        /* Private pages: a seed no other process has (pid-derived, and far
         * from the small seeds the benchmarks pass with --seed). */
        uint64_t private_seed = 0x5eed0000ULL + (uint64_t) getpid();

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
        for (size_t j = 0; j < private_pages; j++)
                fill_page((uint64_t *) (mem + (shared_pages + j) * page), words, private_seed, j);
        if (strcmp(merge, "madvise") == 0 && madvise(mem, len, MADV_MERGEABLE) < 0) {
                perror("madvise(MADV_MERGEABLE)");
                return 1;
        }

        if (vmas > 0) {
                uint8_t *v = mmap(NULL, 2 * vmas * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (v == MAP_FAILED) {
                        perror("mmap (--vmas)");
                        return 1;
                }
                for (size_t i = 0; i < 2 * vmas; i += 2)
                        if (mprotect(v + i * page, page, PROT_READ) < 0) {
                                perror("mprotect (--vmas)");
                                return 1;
                        }
        }

        Churn *churn = NULL;
        if (churn_threads > 0) {
                churn = calloc(churn_threads, sizeof *churn);
                if (!churn) {
                        perror("calloc");
                        return 1;
                }
                for (unsigned long i = 0; i < churn_threads; i++) {
                        churn[i].len = churn_mib << 20;
                        churn[i].touch = churn_touch;
                        churn[i].mark = churn_mark;
                        churn[i].mprotect_page = churn_mprotect ? mem : NULL;
                        churn[i].page_size = page;
                        int e = pthread_create(&churn[i].thread, NULL, churn_thread, &churn[i]);
                        if (e != 0) {
                                errno = e;
                                perror("pthread_create");
                                return 1;
                        }
                }
        }
        uint64_t stats_start_ns = now_ns();

        printf("ready %d %p\n", (int) getpid(), (void *) mem);
        fflush(stdout);

        char cmd[256];
        size_t cmd_len = 0;
        int ret = 0;
        while (!stop) {
                struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
                int k = poll(&p, 1, 1000);
                if (k > 0) {
                        ssize_t n = read(STDIN_FILENO, cmd + cmd_len, sizeof cmd - 1 - cmd_len);
                        if (n <= 0)
                                break;
                        cmd_len += (size_t) n;
                        cmd[cmd_len] = 0;
                        char *nl;
                        while ((nl = strchr(cmd, '\n'))) {
                                *nl = 0;
                                if (strcmp(cmd, "reset") == 0)
                                        churn_reset(churn, (unsigned) churn_threads, &stats_start_ns);
                                else if (strcmp(cmd, "stats") == 0)
                                        churn_print_stats(churn, (unsigned) churn_threads, stats_start_ns);
                                else if (strcmp(cmd, "grow") == 0)
                                        grow(unique, copies, seed + 1000, merge, page);
                                else if (strcmp(cmd, "fork") == 0)
                                        fork_child();
                                cmd_len -= (size_t) (nl + 1 - cmd);
                                memmove(cmd, nl + 1, cmd_len + 1);
                        }
                        if (cmd_len == sizeof cmd - 1)
                                cmd_len = 0; /* an overlong line: drop it */
                }
                if (k < 0 && errno != EINTR)
                        break;
                if (verify)
                        for (size_t j = 0; j < copies * unique; j++)
                                if (check_page((uint64_t *) (mem + j * page), words, seed, j % unique) < 0) {
                                        fprintf(stderr, "ksm-workload: page %zu changed\n", j);
                                        ret = 3;
                                        stop = 1;
                                        break;
                                }
        }
        stop = 1;
        for (unsigned long i = 0; i < churn_threads; i++)
                pthread_join(churn[i].thread, NULL);
        free(churn);
        return ret;
}
