/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Many sleeping processes in many real cgroups, for the cost benchmarks.
 *
 *   cgroup-fleet --processes N --cgroups M --dir DIR
 *
 * Creates DIR/fleet-0 .. DIR/fleet-(M-1) (DIR: a cgroup v2 directory the
 * caller made) and forks N children, child i moving itself into
 * fleet-(i % M) and sleeping in pause() as "fleet-child". Children are
 * forked from this small process and never exec, so they share its pages:
 * the kernel's per-task cost is what they take (~50 KiB each). Prints
 * "ready N M" once every child is in its cgroup, then waits until stdin
 * reaches EOF or SIGTERM arrives (bounded: 30 minutes); then it kills the
 * children (SIGKILL, and PR_SET_PDEATHSIG if it is killed itself), reaps
 * them and removes the cgroups. Exits 1 on a failure it caused. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
        (void) sig;
        stop = 1;
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "processes", required_argument, NULL, 'p' },
                { "cgroups", required_argument, NULL, 'c' },
                { "dir", required_argument, NULL, 'd' },
                {},
        };
        unsigned long n = 10000, m = 1000;
        const char *dir = NULL;
        int c, rc = 0;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0)
                switch (c) {
                case 'p': n = strtoul(optarg, NULL, 10); break;
                case 'c': m = strtoul(optarg, NULL, 10); break;
                case 'd': dir = optarg; break;
                default: return 2;
                }
        if (!dir || n == 0 || m == 0)
                return 2;
        setvbuf(stdout, NULL, _IOLBF, 0);
        signal(SIGTERM, on_signal);
        signal(SIGINT, on_signal);
        pid_t *kids = calloc(n, sizeof *kids);
        int ready[2];
        if (!kids || pipe(ready) < 0)
                return 1;

        unsigned long made = 0, forked = 0;
        for (; made < m; made++) {
                char path[4096];
                snprintf(path, sizeof path, "%s/fleet-%lu", dir, made);
                if (mkdir(path, 0755) < 0) {
                        perror(path);
                        rc = 1;
                        goto out;
                }
        }
        for (; forked < n && !stop; forked++) {
                pid_t pid = fork();
                if (pid < 0) {
                        perror("fork");
                        rc = 1;
                        goto out;
                }
                if (pid == 0) {
                        char path[4200];
                        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                        (void) prctl(PR_SET_NAME, "fleet-child");
                        snprintf(path, sizeof path, "%s/fleet-%lu/cgroup.procs", dir, forked % m);
                        int fd = open(path, O_WRONLY | O_CLOEXEC);
                        int ok = fd >= 0 && write(fd, "0", 1) == 1;
                        (void) !write(ready[1], ok ? "+" : "-", 1);
                        close(ready[1]);
                        close(ready[0]);
                        for (;;)
                                pause();
                }
                kids[forked] = pid;
        }
        close(ready[1]);
        ready[1] = -1;
        for (unsigned long got = 0; got < forked && !stop;) {
                char buf[256];
                ssize_t k = read(ready[0], buf, sizeof buf);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                for (ssize_t i = 0; i < k; i++)
                        if (buf[i] != '+') {
                                fprintf(stderr, "cgroup-fleet: a child could not join its cgroup\n");
                                rc = 1;
                                goto out;
                        }
                got += (unsigned long) k;
        }
        printf("ready %lu %lu\n", forked, m);
        for (int waited = 0; !stop && waited < 30 * 60 * 10; waited++) {
                struct pollfd p = { STDIN_FILENO, POLLIN, 0 };
                char b[64];
                if (poll(&p, 1, 100) > 0 && read(STDIN_FILENO, b, sizeof b) <= 0)
                        break;
        }
out:
        for (unsigned long i = 0; i < forked; i++)
                (void) kill(kids[i], SIGKILL);
        for (unsigned long i = 0; i < forked; i++)
                (void) waitpid(kids[i], NULL, 0);
        for (unsigned long i = 0; i < made; i++) {
                char path[4096];
                snprintf(path, sizeof path, "%s/fleet-%lu", dir, i);
                /* a cgroup empties shortly after its last process is reaped */
                for (int k = 0; k < 200 && rmdir(path) < 0 && errno == EBUSY; k++)
                        usleep(1000);
        }
        free(kids);
        return rc;
}
