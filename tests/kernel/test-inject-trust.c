/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the root ptracer refuses so that no user can point it at anything,
 * on real processes of this kernel: a process that exec'd since its
 * verdict, a real setuid binary run by nobody under a policy's comm, a
 * process that made itself non-dumpable, a thread with its own seccomp
 * filter, and a thread waiting in io_uring_enter() with a temporary mask
 * (whose real mask must survive). Only harmless calls are injected and no
 * KSM knob is touched, so it does without the KSM test lock; it kills every
 * process it starts on every exit path itself. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "inject.h"
#include "process-read.h"
#include "procfs.h"
#include "root.h"
#include "syscalls.h"
#include "util.h"
#include "workload.h"

#define NOBODY 65534

static Root *root;
static pid_t children[16];
static size_t n_children;

static void track(pid_t pid) {
        if (n_children < ELEMENTSOF(children))
                children[n_children++] = pid;
}

static void untrack(pid_t pid) {
        for (size_t i = 0; i < n_children; i++)
                if (children[i] == pid) {
                        children[i] = children[--n_children];
                        return;
                }
}

static void kill_children(void) {
        for (size_t i = 0; i < n_children; i++) {
                kill(children[i], SIGKILL);
                waitpid(children[i], NULL, 0);
        }
        n_children = 0;
}

static void on_fatal(int sig) {
        kill_children();
        _exit(128 + sig);
}

static int spawn(Workload *w, const char *const *args) {
        int r = workload_spawn(w, "TRUST_TARGET", args, true);
        if (r >= 0)
                track(w->pid);
        return r;
}

static void stop_child(pid_t pid);

static void stop(Workload *w) {
        untrack(w->pid);
        assert_int_equal(workload_stop(w), 0);
}

static ProcessIdentity identity_of(int pid) {
        int dfd;
        ProcessIdentity id;
        assert_int_equal(root_open_pid_dir(root, pid, &dfd), 0);
        assert_int_equal(process_read_identity(dfd, false, &id), 0);
        close(dfd);
        assert_true(id.valid);
        return id;
}

static ProcStat stat_of(int pid) {
        int dfd;
        ProcStat st;
        assert_int_equal(root_open_pid_dir(root, pid, &dfd), 0);
        assert_int_equal(procfs_read_stat(dfd, &st), 0);
        close(dfd);
        return st;
}

static void assert_untouched(int pid) {
        int dfd;
        ProcStatus ps;
        ProcStat st = stat_of(pid);
        assert_true(st.state != 'T' && st.state != 't' && st.state != 'Z');
        assert_int_equal(root_open_pid_dir(root, pid, &dfd), 0);
        assert_int_equal(procfs_read_status(dfd, &ps), 0);
        close(dfd);
        assert_int_equal(ps.tracer_pid, 0);
}

/* Bounded waits for a condition only the step under test makes true. */
static bool wait_for(bool (*cond)(int pid, const void *arg), int pid, const void *arg) {
        for (int i = 0; i < 5000; i++) {
                if (cond(pid, arg))
                        return true;
                usleep(1000);
        }
        return false;
}

static bool exe_ino_differs(int pid, const void *arg) {
        char path[64];
        struct stat st;
        snprintf(path, sizeof path, "/proc/%d/exe", pid);
        return stat(path, &st) == 0 && (uint64_t) st.st_ino != *(const uint64_t *) arg;
}

static bool comm_is(int pid, const void *arg) {
        return streq(stat_of(pid).comm, arg);
}

/* Exec'd as nobody and then PR_SET_DUMPABLE 0: its files belong to root. */
static bool undumpable_nobody(int pid, const void *arg) {
        char path[64];
        struct stat st;
        snprintf(path, sizeof path, "/proc/%d/status", pid);
        return comm_is(pid, "trust-target") && stat(path, &st) == 0 && st.st_uid == 0 &&
               identity_of(pid).uid[0] == NOBODY;
}

static bool in_syscall(int pid, const void *arg) {
        char path[64], buf[64] = "";
        snprintf(path, sizeof path, "/proc/%d/syscall", pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return false;
        bool ok = fgets(buf, sizeof buf, f) && atol(buf) == *(const long *) arg;
        fclose(f);
        return ok;
}

static int inject_getppid(int pid, const InjectOptions *o, InjectStats *s) {
        int pidfd = sys_pidfd_open(pid, 0);
        assert_true(pidfd >= 0);
        InjectSyscall call = { .nr = SYS_getppid };
        int r = inject_syscalls(root, pidfd, pid, &call, 1, o, s);
        close(pidfd);
        fprintf(stderr, "pid %d: inject -> %s (%s), tid %d\n", pid, r < 0 ? strerrorname_np(-r) : "ok", s->reason, s->tid);
        return r;
}

static void read_line(int fd, char *buf, size_t n) {
        size_t got = 0;
        buf[0] = 0;
        while (got < n - 1) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                assert_true(poll(&p, 1, 5000) > 0);
                char c;
                assert_int_equal(read(fd, &c, 1), 1);
                if (c == '\n')
                        break;
                buf[got++] = c;
                buf[got] = 0;
        }
}

/* An exec changes neither pid nor start time: what the policy matched is
 * checked again once the thread is stopped. */
static void test_exec_since_verdict(void **state) {
        const char *to_sleep[] = { "--exec", "/bin/sleep", "1000", NULL };
        const char *self = getenv("TRUST_TARGET");
        const char *to_self[] = { "--exec", self, "--serve", NULL };
        InjectStats s;
        Workload w;
        char line[128];

        /* another executable */
        assert_int_equal(spawn(&w, to_sleep), 0);
        ProcessIdentity then = identity_of(w.pid);
        assert_int_equal(workload_command(&w, "exec", line, sizeof line, 5000), 0);
        assert_string_equal(line, "exec");
        assert_true(wait_for(exe_ino_differs, w.pid, &then.exe_ino));
        InjectOptions o = { .expect = then };
        assert_int_equal(inject_getppid(w.pid, &o, &s), -ESTALE);
        assert_non_null(strstr(s.reason, "is not what its policy matched: another executable"));
        assert_untouched(w.pid);
        stop_child(w.pid); /* sleep does not exit at EOF */
        close(w.stdin_fd);
        close(w.stdout_fd);

        /* the same executable again, same credentials: a new mm */
        assert_int_equal(spawn(&w, to_self), 0);
        then = identity_of(w.pid);
        assert_int_equal(workload_command(&w, "exec", line, sizeof line, 5000), 0);
        read_line(w.stdout_fd, line, sizeof line); /* the new image's "ready" */
        assert_non_null(strstr(line, "ready"));
        ProcessIdentity now = identity_of(w.pid);
        assert_int_equal(now.exe_ino, then.exe_ino);
        o.expect = then;
        assert_int_equal(inject_getppid(w.pid, &o, &s), -ESTALE);
        assert_non_null(strstr(s.reason, "an exec since"));
        assert_untouched(w.pid);
        /* and what it is now passes */
        o.expect = now;
        assert_int_equal(inject_getppid(w.pid, &o, &s), 0);
        assert_int_equal(workload_command(&w, "ping", line, sizeof line, 5000), 0);
        assert_string_equal(line, "pong");
        stop(&w);
}

/* Runs path as nobody (argv0 its name), its stdin a pipe that stays open
 * (the helpers exit at EOF) until stop_child(). */
static int nobody_stdin = -1;

static pid_t spawn_as_nobody(const char *path, const char *argv0, const char *arg) {
        int in[2];
        assert_int_equal(pipe2(in, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR);
                dup2(in[0], STDIN_FILENO);
                dup2(null, STDOUT_FILENO);
                if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
                        _exit(126);
                execl(path, argv0, arg, (char *) NULL);
                _exit(127);
        }
        track(pid);
        close(in[0]);
        nobody_stdin = in[1];
        return pid;
}

static void stop_child(pid_t pid) {
        if (nobody_stdin >= 0)
                nobody_stdin = (close(nobody_stdin), -1);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        untrack(pid);
}

/* A real setuid-root binary that nobody runs under the name a policy's
 * Comm= wants (a symlink "java"): uid nobody, euid root. */
static void test_setuid_refused(void **state) {
        char dir[] = "/var/tmp/ksmtuned2-trust.XXXXXX", bin[128], link[128], cmd[512];
        InjectStats s;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(chmod(dir, 0755), 0);
        snprintf(bin, sizeof bin, "%s/sleep-suid", dir);
        snprintf(link, sizeof link, "%s/java", dir);
        snprintf(cmd, sizeof cmd, "cp /bin/sleep %s && chown 0:0 %s && chmod 4755 %s", bin, bin, bin);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(symlink(bin, link), 0);

        pid_t pid = spawn_as_nobody(link, "java", "1000");
        /* Asleep: the exec is complete (comm changes before the new mm's
         * layout is final: an identity read then would not match later). */
        const long nanosleep_nr = SYS_clock_nanosleep;
        assert_true(wait_for(in_syscall, pid, &nanosleep_nr));
        assert_true(comm_is(pid, "java"));
        ProcessIdentity id = identity_of(pid);
        assert_int_equal(id.uid[0], NOBODY);
        assert_int_equal(id.uid[1], 0);

        InjectOptions o = { .expect = id };
        assert_int_equal(inject_getppid(pid, &o, &s), -EPERM);
        assert_non_null(strstr(s.reason, "is setuid or setgid (uid 65534 0 0 0 gid 65534 65534 65534 65534); "
                                         "InjectPrivileged=no"));
        assert_untouched(pid);
        /* A policy that says so explicitly may. */
        o.allow_privileged = true;
        assert_int_equal(inject_getppid(pid, &o, &s), 0);
        assert_untouched(pid);

        stop_child(pid);
        unlink(link);
        unlink(bin);
        rmdir(dir);
}

/* Not dumpable by its own choice (PR_SET_DUMPABLE 0), as nobody. */
static void test_undumpable_refused(void **state) {
        InjectStats s;
        pid_t pid = spawn_as_nobody(getenv("TRUST_TARGET"), "trust-target", "--undumpable");
        assert_true(wait_for(undumpable_nobody, pid, NULL));
        InjectOptions o = { .expect = identity_of(pid) };
        assert_int_equal(inject_getppid(pid, &o, &s), -EPERM);
        assert_non_null(strstr(s.reason, "is not dumpable; InjectPrivileged=no"));
        assert_untouched(pid);
        stop_child(pid);
}

/* The main thread waits in ppoll() (temporary mask: skipped), the other
 * thread installed its own filter without TSYNC: its filter, not the
 * leader's status, decides. */
static void test_thread_seccomp(void **state) {
        const char *args[] = { "--thread-seccomp", NULL };
        const long ppoll_nr = SYS_ppoll;
        Workload w;
        InjectStats s;

        assert_int_equal(spawn(&w, args), 0);
        assert_true(wait_for(in_syscall, w.pid, &ppoll_nr));
        int pidfd = sys_pidfd_open(w.pid, 0);
        InjectSyscall call = { .nr = SYS_prctl, .args = { PR_SET_MEMORY_MERGE, 1 } };
        int r = inject_syscalls(root, pidfd, w.pid, &call, 1, NULL, &s);
        close(pidfd);
        fprintf(stderr, "pid %d: inject -> %d ret %ld (%s), tid %d\n", w.pid, r, call.ret, s.reason, s.tid);
        assert_int_equal(r, -EACCES);
        assert_int_not_equal(s.tid, w.pid);
        assert_non_null(strstr(s.reason, "its seccomp filter would fail syscall 157"));
        assert_untouched(w.pid);
        stop(&w);
}

static bool io_uring_usable(void) {
        char buf[16] = "";
        FILE *f = fopen("/proc/sys/kernel/io_uring_disabled", "re");
        if (f) {
                if (fgets(buf, sizeof buf, f) && atoi(buf) != 0) {
                        fclose(f);
                        return false;
                }
                fclose(f);
        }
        uint8_t params[120] = {};
        int fd = (int) syscall(SYS_io_uring_setup, 1, params);
        if (fd < 0)
                return false;
        close(fd);
        return true;
}

static void io_report(Workload *w, unsigned long *bad, unsigned long *iters, unsigned long *mask,
                      unsigned long *late, unsigned long *handled) {
        char line[128];
        assert_int_equal(workload_command(w, "report", line, sizeof line, 5000), 0);
        assert_int_equal(sscanf(line, "report bad=%lu iters=%lu mask=%lx late=%lu handled=%lu", bad, iters, mask, late,
                                handled), 5);
}

static unsigned n_stopped;

/* A SIGUSR1 for the waiting thread while it is held stopped: the signal
 * its temporary mask was there to let in. */
static void signal_the_waiter(InjectPhase p, void *userdata) {
        int pid = *(const int *) userdata;
        if (p == INJECT_PHASE_STOPPED && n_stopped++ == 0)
                (void) syscall(SYS_tgkill, pid, pid, SIGUSR1);
}

/* io_uring_enter(..., IORING_ENTER_EXT_ARG, {sigmask}) waits with a
 * temporary mask like pselect and puts the thread's own back on the way
 * out, after the signal that ended the wait was handled. PTRACE_GETSIGMASK
 * shows the thread's own mask there (the kernel's saved_sigmask), but
 * PTRACE_SETSIGMASK drops the note to restore it: a signal that came
 * during the wait then stays pending under the thread's own mask instead
 * of being handled. After the injections the thread must have handled
 * it and have exactly its own mask. */
static void test_io_uring_mask(void **state) {
        const char *args[] = { "--io-uring", NULL };
        const long nr = SYS_io_uring_enter;
        unsigned long bad, iters, iters0, mask, late, handled;
        Workload w;
        InjectStats s;

        if (!io_uring_usable()) {
                fprintf(stderr, "SKIP: io_uring disabled or unavailable\n");
                skip();
        }
        assert_int_equal(spawn(&w, args), 0);
        assert_true(wait_for(in_syscall, w.pid, &nr));
        io_report(&w, &bad, &iters0, &mask, &late, &handled);
        assert_int_equal(handled, 0);
        n_stopped = 0;
        InjectOptions o = { .phase_hook = signal_the_waiter, .userdata = &w.pid };
        assert_int_equal(inject_getppid(w.pid, &o, &s), 0);
        assert_int_not_equal(s.tid, w.pid);
        for (int k = 0; k < 5; k++) {
                assert_int_equal(inject_getppid(w.pid, NULL, &s), 0);
                assert_int_not_equal(s.tid, w.pid);
        }
        /* Three more returns from io_uring_enter (100 ms timeouts) after the
         * injections: each checks the mask and what is pending. */
        do {
                usleep(50000);
                io_report(&w, &bad, &iters, &mask, &late, &handled);
        } while (iters < iters0 + 3);
        fprintf(stderr, "io_uring thread: %lu returns, %lu with a wrong mask (%lx), %lu with SIGUSR1 still pending, "
                        "%lu handled\n", iters, bad, mask, late, handled);
        assert_int_equal(bad, 0);
        assert_int_equal(late, 0);
        assert_int_equal(handled, 1);
        assert_int_equal(mask, 1UL << (SIGUSR1 - 1));
        assert_untouched(w.pid);
        stop(&w);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_exec_since_verdict),
                cmocka_unit_test(test_setuid_refused),
                cmocka_unit_test(test_undumpable_refused),
                cmocka_unit_test(test_thread_seccomp),
                cmocka_unit_test(test_io_uring_mask),
        };
        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: needs root\n");
                return 77;
        }
        atexit(kill_children);
        signal(SIGTERM, on_fatal);
        signal(SIGINT, on_fatal);
        signal(SIGALRM, on_fatal);
        if (!inject_supported()) {
                fprintf(stderr, "SKIP: injection needs x86-64\n");
                return 77;
        }
        if (root_open(NULL, &root) < 0)
                return 1;
        int r = cmocka_run_group_tests(tests, NULL, NULL);
        kill_children();
        root_free(root);
        return r;
}
