/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Targets for the injector's trust checks (tests/kernel/test-inject-trust.c).
 *
 *   trust-target --serve
 *   trust-target --exec PROGRAM [ARG...]
 *   trust-target --undumpable
 *   trust-target --thread-seccomp
 *   trust-target --io-uring
 *   trust-target --sibling-exec
 *   trust-target --sibling-exec-other
 *   trust-target --keep-saved-root UID GID
 *
 * Each prints "ready PID 0x1" and answers lines on stdin until EOF:
 * "ping" -> "pong"; "report" -> a mode's figures. --exec answers "exec"
 * with "exec" and then execv()s PROGRAM (the exec since a verdict).
 * --undumpable calls PR_SET_DUMPABLE 0 first. --thread-seccomp parks the
 * main thread in ppoll() with a temporary mask (so the injector takes
 * another thread) and serves stdin from a thread that installed, for
 * itself only (no TSYNC), a filter failing prctl(PR_SET_MEMORY_MERGE) with
 * EPERM. --io-uring parks the main thread in io_uring_enter() with a
 * temporary mask that lets SIGUSR1 in (IORING_ENTER_EXT_ARG, 100 ms
 * timeouts, in a loop) while its own mask blocks SIGUSR1, as pselect()
 * users do, and after every return checks that its mask is its own again
 * and that no SIGUSR1 that arrived during the wait is still pending (it
 * must have been handled on the way out): "report" -> "report bad=N
 * iters=N mask=HEX late=N handled=N" (mask: the last wrong one, or the
 * right one).
 * --sibling-exec parks the main thread in pause() (the thread the injector
 * takes) and serves stdin from a second thread, whose "exec" execv()s
 * this program again with --serve: an exec by a sibling of the injected
 * thread, which takes over the main thread's pid. --sibling-exec-other
 * parks the main thread in ppoll() with a temporary mask (not taken), a
 * second thread in pause() (taken) and serves from a third. Both run
 * without address-space randomisation (re-exec'd with ADDR_NO_RANDOMIZE,
 * which the new image inherits), so the new image's stack covers the
 * addresses the old main thread's stack had: a write meant for the old
 * image would land in the new one's memory, where the test can see it.
 * --keep-saved-root, started as root, drops to UID and GID as a daemon
 * that keeps a way back does (setresuid(UID, UID, 0): root stays its saved
 * uid) and makes itself dumpable again (the uid change cleared it): its
 * real and effective uid are UID's, but the kernel shows its ksm_stat to
 * root only (tests/bus/test-bus-visibility.sh). */

#include <errno.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE 67
#endif
#define IORING_ENTER_GETEVENTS_ (1U << 0)
#define IORING_ENTER_EXT_ARG_ (1U << 3)

struct getevents_arg {
        uint64_t sigmask;
        uint32_t sigmask_sz;
        uint32_t pad;
        uint64_t ts;
};

static volatile unsigned long io_bad, io_iters, io_mask, io_late, io_handled;

static void on_usr1(int sig) {
        io_handled++;
}

static void serve(const char *mode, char **exec_argv) {
        char line[256];
        while (fgets(line, sizeof line, stdin)) {
                if (strncmp(line, "ping", 4) == 0)
                        printf("pong\n");
                else if (strncmp(line, "report", 6) == 0)
                        printf("report bad=%lu iters=%lu mask=%lx late=%lu handled=%lu\n", io_bad, io_iters, io_mask,
                               io_late, io_handled);
                else if (strncmp(line, "exec", 4) == 0 && exec_argv) {
                        printf("exec\n");
                        fflush(stdout);
                        execv(exec_argv[0], exec_argv);
                        printf("exec failed: %s\n", strerror(errno));
                } else
                        printf("unknown %s", line);
                fflush(stdout);
        }
        (void) mode;
        exit(0);
}

static void *serve_thread(void *arg) {
        serve(arg, NULL);
        return NULL;
}

static void *exec_serve_thread(void *arg) {
        static char *const again[] = { "/proc/self/exe", "--serve", NULL };
        serve(arg, (char **) again);
        return NULL;
}

static void *pause_thread(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

/* No ASLR for this image and the next one: the main thread's stack sits
 * where the new image's will. */
static void without_aslr(char **argv) {
        int cur = personality(0xffffffff);
        if (cur < 0 || (cur & ADDR_NO_RANDOMIZE))
                return;
        if (personality((unsigned long) cur | ADDR_NO_RANDOMIZE) < 0)
                return;
        execv("/proc/self/exe", argv);
        perror("execv");
        exit(1);
}

static void *seccomp_thread(void *arg) {
        struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prctl, 0, 3),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_MEMORY_MERGE, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = sizeof f / sizeof f[0], .filter = f };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
            syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
                perror("seccomp");
                exit(1);
        }
        int *ready = arg;
        (void) !write(ready[1], "x", 1);
        serve("thread-seccomp", NULL);
        return NULL;
}

static void park_in_ppoll(void) {
        sigset_t tmp;
        sigemptyset(&tmp);
        sigaddset(&tmp, SIGUSR1);
        for (;;)
                (void) ppoll(NULL, 0, NULL, &tmp);
}

static void io_uring_loop(const sigset_t *own) {
        struct {
                uint32_t sq_entries, cq_entries, flags, sq_thread_cpu, sq_thread_idle, features, wq_fd, resv[3];
                uint8_t offsets[80];
        } params = {};
        int fd = (int) syscall(SYS_io_uring_setup, 4, &params);
        if (fd < 0) {
                printf("io_uring_setup: %s\n", strerror(errno));
                fflush(stdout);
                exit(77);
        }
        /* A temporary mask that differs from its own: SIGUSR2 instead of SIGUSR1. */
        uint64_t tmp = UINT64_C(1) << (SIGUSR2 - 1);
        struct timespec ts = { 0, 100 * 1000 * 1000 };
        for (;;) {
                struct getevents_arg a = {
                        .sigmask = (uint64_t) (uintptr_t) &tmp,
                        .sigmask_sz = 8,
                        .ts = (uint64_t) (uintptr_t) &ts,
                };
                (void) syscall(SYS_io_uring_enter, fd, 0, 1, IORING_ENTER_GETEVENTS_ | IORING_ENTER_EXT_ARG_, &a,
                               sizeof a);
                sigset_t cur, pending;
                pthread_sigmask(SIG_SETMASK, NULL, &cur);
                if (sigpending(&pending) == 0 && sigismember(&pending, SIGUSR1))
                        io_late++;
                bool same = true;
                for (int s = 1; s < 64; s++)
                        same &= sigismember(&cur, s) == sigismember(own, s);
                unsigned long m = 0;
                for (int s = 1; s < 64; s++)
                        if (sigismember(&cur, s))
                                m |= 1UL << (s - 1);
                if (!same) {
                        io_bad++;
                        io_mask = m;
                } else if (!io_bad)
                        io_mask = m;
                io_iters++;
        }
}

int main(int argc, char **argv) {
        const char *mode = argc > 1 ? argv[1] : "--serve";
        pthread_t t;

        setvbuf(stdout, NULL, _IOLBF, 0);
        bool sibling_exec = strcmp(mode, "--sibling-exec") == 0, other = strcmp(mode, "--sibling-exec-other") == 0;
        if (sibling_exec || other)
                without_aslr(argv);
        if (strcmp(mode, "--undumpable") == 0 && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return 1;
        if (strcmp(mode, "--keep-saved-root") == 0) {
                uid_t u = argc > 3 ? (uid_t) strtoul(argv[2], NULL, 10) : 0;
                gid_t g = argc > 3 ? (gid_t) strtoul(argv[3], NULL, 10) : 0;
                if (u == 0 || setgroups(0, NULL) < 0 || setresgid(g, g, g) < 0 || setresuid(u, u, 0) < 0 ||
                    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0) {
                        perror("--keep-saved-root");
                        return 1;
                }
        }
        printf("ready %d 0x1\n", getpid());
        fflush(stdout);

        if (strcmp(mode, "--exec") == 0 && argc > 2)
                serve(mode, argv + 2);
        if (strcmp(mode, "--thread-seccomp") == 0) {
                int ready[2];
                char ch;
                if (pipe(ready) < 0 || pthread_create(&t, NULL, seccomp_thread, ready) != 0 ||
                    read(ready[0], &ch, 1) != 1)
                        return 1;
                park_in_ppoll();
        }
        if (strcmp(mode, "--io-uring") == 0) {
                sigset_t own;
                struct sigaction sa = { .sa_handler = on_usr1 };
                sigaction(SIGUSR1, &sa, NULL);
                sigemptyset(&own);
                sigaddset(&own, SIGUSR1);
                pthread_sigmask(SIG_SETMASK, &own, NULL);
                if (pthread_create(&t, NULL, serve_thread, (void *) mode) != 0)
                        return 1;
                io_uring_loop(&own);
        }
        if (sibling_exec || other) {
                /* Threads in this order: the injector reads task/ in tid
                 * order and takes the first it may. */
                if (other && pthread_create(&t, NULL, pause_thread, NULL) != 0)
                        return 1;
                if (pthread_create(&t, NULL, exec_serve_thread, (void *) mode) != 0)
                        return 1;
                if (other)
                        park_in_ppoll();
                for (;;)
                        pause();
        }
        serve(mode, NULL);
        return 0;
}
