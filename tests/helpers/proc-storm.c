/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Births and deaths at a fixed rate, for the storm tests.
 *
 *   proc-storm --rate N --seconds S [--cgroup DIR] [--max-live M] [--prctl-merge]
 *
 * Forks N children a second for S seconds. Child i, by i % 4: exits at
 * once; execs /bin/true; lives 5-50 ms; starts a thread and then execs
 * itself (an exec that must kill a sibling thread first) to live 10 ms.
 * With --cgroup, every other child moves into a cgroup of its own under DIR
 * (created just before, removed once the child is reaped), so cgroups are
 * born and die at N/2 a second too. With --prctl-merge every child first
 * calls prctl(PR_SET_MEMORY_MERGE, 1), as any user's fork loop may: each
 * one is a ksm:ksm_enter event; and none execs (an exec would drop the flag
 * and only add the cost of classifying a new image, which the storm suite
 * measures): half exit at once, half live 5-50 ms. Prints a summary line on exit; exits 1
 * on a failure it caused (fork, mkdir), never leaves a child or cgroup. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE 67
#endif

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
        (void) sig;
        stop = 1;
}

static uint64_t mono_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static void *thread_main(void *arg) {
        (void) arg;
        pause();
        return NULL;
}

typedef struct Child {
        pid_t pid;
        int cgroup;     /* index of its cgroup, -1 none */
} Child;

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "rate", required_argument, NULL, 'r' },     { "seconds", required_argument, NULL, 's' },
                { "cgroup", required_argument, NULL, 'c' },   { "max-live", required_argument, NULL, 'm' },
                { "child-exec", no_argument, NULL, 'x' },     { "prctl-merge", no_argument, NULL, 'p' },
                {},
        };
        unsigned long rate = 500, max_live = 256;
        double seconds = 10;
        const char *cgdir = NULL;
        int c, prctl_merge = 0;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0)
                switch (c) {
                case 'r': rate = strtoul(optarg, NULL, 10); break;
                case 's': seconds = strtod(optarg, NULL); break;
                case 'c': cgdir = optarg; break;
                case 'm': max_live = strtoul(optarg, NULL, 10); break;
                case 'p': prctl_merge = 1; break;
                case 'x': {
                        /* the re-executed child: live 10 ms */
                        struct timespec ts = { 0, 10 * 1000 * 1000 };
                        nanosleep(&ts, NULL);
                        return 0;
                }
                default: return 2;
                }
        if (rate == 0 || max_live == 0)
                return 2;

        signal(SIGTERM, on_signal);
        signal(SIGINT, on_signal);

        Child *live = calloc(max_live, sizeof *live);
        if (!live)
                return 1;
        size_t n_live = 0;
        uint64_t forked = 0, execs = 0, threaded = 0, cgroups = 0, failed = 0, merge_failed = 0;
        uint64_t start = mono_usec(), period = 1000000 / rate, end = start + (uint64_t) (seconds * 1e6);
        int rc = 0;

        for (uint64_t next = start; !stop;) {
                uint64_t now = mono_usec();
                /* reap */
                for (size_t i = 0; i < n_live;) {
                        int st;
                        pid_t p = waitpid(live[i].pid, &st, WNOHANG);
                        if (p == 0) {
                                i++;
                                continue;
                        }
                        merge_failed += p > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 3;
                        if (live[i].cgroup >= 0) {
                                char path[4096];
                                snprintf(path, sizeof path, "%s/storm-%d", cgdir, live[i].cgroup);
                                /* the cgroup empties shortly after the reap */
                                for (int k = 0; k < 100 && rmdir(path) < 0 && errno == EBUSY; k++)
                                        usleep(1000);
                        }
                        live[i] = live[--n_live];
                }
                if (now >= end)
                        break;
                if (now < next || n_live >= max_live) {
                        usleep(n_live >= max_live ? 500 : (useconds_t) MIN(next - now, 1000));
                        continue;
                }
                next += period;

                unsigned kind = (unsigned) (forked % 4);
                if (prctl_merge)
                        kind &= 2;      /* 0 or 2: no exec */
                int cg = -1;
                char cgpath[4096];
                if (cgdir && forked % 2 == 0) {
                        cg = (int) forked;
                        snprintf(cgpath, sizeof cgpath, "%s/storm-%d", cgdir, cg);
                        if (mkdir(cgpath, 0755) < 0) {
                                perror(cgpath);
                                rc = 1;
                                break;
                        }
                        cgroups++;
                }
                pid_t pid = fork();
                if (pid < 0) {
                        failed++;
                        if (cg >= 0)
                                (void) rmdir(cgpath);
                        continue;
                }
                if (pid == 0) {
                        if (cg >= 0) {
                                char procs[4200];
                                snprintf(procs, sizeof procs, "%s/cgroup.procs", cgpath);
                                int fd = open(procs, O_WRONLY | O_CLOEXEC);
                                if (fd < 0 || write(fd, "0", 1) != 1)
                                        _exit(1);
                                close(fd);
                        }
                        if (prctl_merge && prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0) < 0)
                                _exit(3);
                        switch (kind) {
                        case 0:
                                _exit(0);
                        case 1:
                                execl("/bin/true", "true", (char *) NULL);
                                _exit(127);
                        case 2: {
                                struct timespec ts = { 0, (long) (5 + getpid() % 46) * 1000 * 1000 };
                                nanosleep(&ts, NULL);
                                _exit(0);
                        }
                        default: {
                                pthread_t t;
                                if (pthread_create(&t, NULL, thread_main, NULL) != 0)
                                        _exit(1);
                                execl("/proc/self/exe", "proc-storm", "--child-exec", (char *) NULL);
                                _exit(127);
                        }
                        }
                }
                forked++;
                execs += kind == 1 || kind == 3;
                threaded += kind == 3;
                live[n_live++] = (Child) { pid, cg };
        }
        /* drain */
        while (n_live > 0) {
                int st;
                pid_t p = waitpid(-1, &st, 0);
                if (p < 0)
                        break;
                merge_failed += WIFEXITED(st) && WEXITSTATUS(st) == 3;
                for (size_t i = 0; i < n_live; i++)
                        if (live[i].pid == p) {
                                if (live[i].cgroup >= 0) {
                                        char path[4096];
                                        snprintf(path, sizeof path, "%s/storm-%d", cgdir, live[i].cgroup);
                                        for (int k = 0; k < 100 && rmdir(path) < 0 && errno == EBUSY; k++)
                                                usleep(1000);
                                }
                                live[i] = live[--n_live];
                                break;
                        }
        }
        double took = (double) (mono_usec() - start) / 1e6;
        printf("storm: %llu processes (%llu exec, %llu threaded exec), %llu cgroups, %llu fork failures in %.1f s (%.0f/s)\n",
               (unsigned long long) forked, (unsigned long long) execs, (unsigned long long) threaded,
               (unsigned long long) cgroups, (unsigned long long) failed, took, (double) forked / took);
        if (merge_failed > 0) {
                fprintf(stderr, "storm: prctl(PR_SET_MEMORY_MERGE) failed in %llu children\n",
                        (unsigned long long) merge_failed);
                rc = 1;
        }
        free(live);
        return rc;
}
