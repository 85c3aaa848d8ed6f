/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the root ptracer refuses so that no user can point it at anything,
 * on real processes of this kernel: a process that exec'd since its
 * verdict, a real setuid binary run by nobody under a policy's comm, a
 * process that made itself non-dumpable, a thread with its own seccomp
 * filter, and a thread waiting in io_uring_enter() with a temporary mask
 * (whose real mask must survive). Only harmless calls are injected and no
 * KSM knob is touched, so it does without the KSM test lock; it kills every
 * process it starts on every exit path itself. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
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
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "inject.h"
#include "merge.h"
#include "probe.h"
#include "process-read.h"
#include "procfs.h"
#include "root.h"
#include "syscalls.h"
#include "util.h"
#include "workload.h"

#define NOBODY 65534

static Root *root;
static Probe probe;
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

/* One line (without its newline) within timeout_ms; false on a timeout or EOF. */
static bool read_line_within(int fd, char *buf, size_t n, int timeout_ms) {
        uint64_t until = now_usec(CLOCK_MONOTONIC) + (uint64_t) timeout_ms * USEC_PER_MSEC;
        size_t got = 0;
        buf[0] = 0;
        while (got < n - 1) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                struct pollfd p = { .fd = fd, .events = POLLIN };
                char c;
                if (now >= until || poll(&p, 1, (int) ((until - now) / USEC_PER_MSEC) + 1) <= 0 || read(fd, &c, 1) != 1)
                        return false;
                if (c == '\n')
                        return true;
                buf[got++] = c;
                buf[got] = 0;
        }
        return true;
}

static void read_line(int fd, char *buf, size_t n) {
        assert_true(read_line_within(fd, buf, n, 5000));
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

        /* Nor does another method switch merging on for it (before any
         * method is tried: on a kernel without process_ksm or remote
         * MADV_MERGEABLE too), unless the policy says InjectPrivileged=yes. */
        MergeContext c = { .root = root, .probe = &probe };
        for (MergeMethod m = MERGE_METHOD_ANY; m <= MERGE_METHOD_INJECT; m++) {
                ProcessAction a = { .pid = pid, .start_time_ticks = stat_of(pid).start_time_ticks,
                                    .action = MERGE_ACTION_ENABLE, .method = m };
                MergeOutcome out;
                assert_int_equal(merge_apply_one(&c, &a, &out), 0);
                fprintf(stderr, "pid %d enable/%s -> %s: %s\n", pid, merge_method_to_string(m),
                        merge_outcome_kind_to_string(out.kind), out.text);
                assert_int_equal(out.kind, MERGE_OUTCOME_REFUSED);
                assert_int_equal(out.error, EPERM);
                assert_non_null(strstr(out.text, "is setuid or setgid"));
                assert_non_null(strstr(out.text, "InjectPrivileged=no"));
                /* Allowed: as far as a dry run goes (nothing merged: no KSM lock here). */
                a.inject_privileged = true;
                c.dry_run = true;
                assert_int_equal(merge_apply_one(&c, &a, &out), 0);
                c.dry_run = false;
                assert_true(out.kind == MERGE_OUTCOME_DRY_RUN || out.kind == MERGE_OUTCOME_UNSUPPORTED);
        }
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

/* A sibling thread execs between the injector's last check and its first
 * write (INJECT_PHASE_CHECKED, the phase hook: a function pointer of the
 * in-process API, which nothing in the shipped daemon or injector sets).
 * What the kernel does then is in inject.c, above write_target(). The
 * injection must fail with a clear error and write nothing: not into the
 * new image, which runs under the very pid the injector writes by when the
 * injected thread was the leader (its stack is where the old one's was:
 * trust-target runs both without ASLR); and it must not hold up the exec,
 * which, when the injected thread was another one, waits until its tracer
 * reaps it. The injection runs in a child process, as in the daemon, where
 * the injector is not the target's parent. */
typedef struct ExecRace {
        bool fired, leader_case;
        int r, tid, tracee;
        char reason[128], why[192];   /* why: what went wrong in the hook, if anything */
        uint64_t rsp;                 /* the tracee's stack pointer at the stop */
        uint64_t stack_lo, stack_hi;  /* the new image's [stack] */
        size_t changed;               /* bytes of it that changed across the write attempt */
        int tracer_after;             /* TracerPid of pid once the sibling exec'd */
        int peek_errno;               /* PTRACE_PEEKDATA on the tracee's tid then */
        char state_after;             /* the tracee's state then */
} ExecRace;

static Workload *race_target;
static ExecRace race;
static uint8_t *race_before;

static int status_field(int pid, const char *task, const char *key) {
        char path[96], line[256];
        int v = -1;
        snprintf(path, sizeof path, "/proc/%d/%s/status", pid, task);
        FILE *f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof line, f))
                if (startswith(line, key))
                        v = atoi(line + strlen(key));
        fclose(f);
        return v;
}

/* The thread this process traces in pid, or -1. */
static int traced_thread(int pid) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/task", pid);
        DIR *d = opendir(path);
        int found = -1;
        if (!d)
                return -1;
        for (struct dirent *de; (de = readdir(d));) {
                char task[64];
                int tid;
                if (safe_atoi(de->d_name, &tid) < 0)
                        continue;
                snprintf(task, sizeof task, "task/%d", tid);
                if (status_field(pid, task, "TracerPid:") == getpid())
                        found = tid;
        }
        closedir(d);
        return found;
}

static char task_state(int pid, int tid) {
        char path[96], buf[512];
        snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, tid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        ssize_t k = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (k <= 0)
                return 0;
        buf[k] = 0;
        const char *e = strrchr(buf, ')');
        return e && e[1] == ' ' ? e[2] : 0;
}

/* The new image's [stack], read through a mem opened now. */
static uint8_t *read_stack(int pid, uint64_t *lo, uint64_t *hi) {
        char path[64], line[512];
        snprintf(path, sizeof path, "/proc/%d/maps", pid);
        FILE *f = fopen(path, "re");
        *lo = *hi = 0;
        if (!f)
                return NULL;
        while (fgets(line, sizeof line, f))
                if (strstr(line, "[stack]"))
                        (void) !sscanf(line, "%" SCNx64 "-%" SCNx64, lo, hi);
        fclose(f);
        if (*hi <= *lo)
                return NULL;
        snprintf(path, sizeof path, "/proc/%d/mem", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        uint8_t *buf = malloc(*hi - *lo);
        if (fd < 0 || !buf || pread(fd, buf, *hi - *lo, (off_t) *lo) != (ssize_t) (*hi - *lo)) {
                free(buf);
                buf = NULL;
        }
        if (fd >= 0)
                close(fd);
        return buf;
}

static bool wait_until(bool (*cond)(void), int timeout_ms) {
        for (int i = 0; i < timeout_ms; i++) {
                if (cond())
                        return true;
                usleep(1000);
        }
        return false;
}

static bool tracee_is_zombie(void) {
        return task_state(race_target->pid, race.tracee) == 'Z';
}

static bool new_image_in_read(void) {
        const long nr = SYS_read;
        return in_syscall(race_target->pid, &nr);
}

static void exec_sibling_at_checked(InjectPhase p, void *userdata) {
        Workload *w = race_target;
        char line[128];
        struct user_regs_struct regs;

        if (p != INJECT_PHASE_CHECKED || race.fired)
                return;
        race.fired = true;
        race.tracee = traced_thread(w->pid);
        race.leader_case = race.tracee == w->pid;
        if (ptrace(PTRACE_GETREGS, race.tracee, NULL, &regs) == 0)
                race.rsp = regs.rsp;
        if (workload_command(w, "exec", line, sizeof line, 30000) < 0 || !streq(line, "exec")) {
                snprintf(race.why, sizeof race.why, "no \"exec\" from the serving thread: \"%s\"", line);
                return;
        }
        if (race.leader_case) {
                /* The exec completes without us: the new image says so. */
                if (!read_line_within(w->stdout_fd, line, sizeof line, 30000) || !startswith(line, "ready")) {
                        snprintf(race.why, sizeof race.why, "the new image did not start: \"%s\"", line);
                        return;
                }
                if (!wait_until(new_image_in_read, 30000)) {
                        snprintf(race.why, sizeof race.why, "the new image does not wait on stdin");
                        return;
                }
                race_before = read_stack(w->pid, &race.stack_lo, &race.stack_hi);
                if (!race_before)
                        snprintf(race.why, sizeof race.why, "the new image's [stack] cannot be read: %m");
        } else if (!wait_until(tracee_is_zombie, 30000))
                /* The exec waits for us to reap our tracee: it cannot be ready yet. */
                snprintf(race.why, sizeof race.why, "tracee %d did not die in the exec", race.tracee);
        race.tracer_after = status_field(w->pid, ".", "TracerPid:");
        race.state_after = task_state(w->pid, race.tracee);
        errno = 0;
        if (ptrace(PTRACE_PEEKDATA, race.tracee, (void *) (uintptr_t) race.rsp, NULL) == -1)
                race.peek_errno = errno;
}

static void inject_across_exec(Workload *w, ExecRace *ret) {
        int res[2];
        assert_int_equal(pipe2(res, O_CLOEXEC), 0);
        pid_t inj = fork();
        assert_true(inj >= 0);
        if (inj == 0) {
                InjectStats s;
                race_target = w;
                race = (ExecRace) {};
                InjectOptions o = { .phase_hook = exec_sibling_at_checked };
                int pidfd = sys_pidfd_open(w->pid, 0);
                InjectSyscall call = { .nr = SYS_getppid };
                race.r = inject_syscalls(root, pidfd, w->pid, &call, 1, &o, &s);
                race.tid = s.tid;
                strscpy(race.reason, sizeof race.reason, s.reason);
                if (race_before) {
                        uint64_t lo, hi;
                        _cleanup_free_ uint8_t *after = read_stack(w->pid, &lo, &hi);
                        if (!after || lo != race.stack_lo || hi != race.stack_hi)
                                snprintf(race.why, sizeof race.why, "the new image's [stack] moved or is unreadable");
                        else
                                for (size_t i = 0; i < hi - lo; i++)
                                        race.changed += race_before[i] != after[i];
                }
                (void) !write(res[1], &race, sizeof race);
                _exit(0);
        }
        track(inj);
        close(res[1]);
        struct pollfd p = { .fd = res[0], .events = POLLIN };
        assert_true(poll(&p, 1, 120000) > 0);
        assert_int_equal(read(res[0], ret, sizeof *ret), (ssize_t) sizeof *ret);
        close(res[0]);
        assert_int_equal(waitpid(inj, NULL, 0), inj);
        untrack(inj);
        fprintf(stderr, "pid %d: tracee %d (%s), sibling exec'd at \"checked\": inject -> %s (%s); then "
                        "TracerPid %d, tracee state %c, PEEKDATA %s; new [stack] %#" PRIx64 "-%#" PRIx64
                        " (old rsp %#" PRIx64 "), %zu bytes changed%s%s\n",
                w->pid, ret->tracee, ret->leader_case ? "the leader" : "not the leader",
                ret->r < 0 ? strerrorname_np(-ret->r) : "ok", ret->reason, ret->tracer_after,
                ret->state_after ?: '-', ret->peek_errno ? strerrorname_np(ret->peek_errno) : "ok", ret->stack_lo,
                ret->stack_hi, ret->rsp, ret->changed, ret->why[0] ? "; " : "", ret->why);
        assert_true(ret->fired);
        assert_string_equal(ret->why, "");
        assert_int_equal(ret->r, -ESRCH);
        assert_non_null(strstr(ret->reason, "is no tracee of ours any more (an exec in pid"));
        assert_non_null(strstr(ret->reason, "nothing written"));
        assert_int_equal(ret->peek_errno, ESRCH);
}

/* The injected thread is the leader, its sibling execs: the new image takes
 * over the leader's pid, the number the writes go by. */
static void test_sibling_exec(void **state) {
        const char *args[] = { "--sibling-exec", NULL };
        const long pause_nr = SYS_pause;
        ExecRace x;
        Workload w;
        char line[128];

        assert_int_equal(spawn(&w, args), 0);
        assert_true(wait_for(in_syscall, w.pid, &pause_nr));
        ProcessIdentity then = identity_of(w.pid);
        inject_across_exec(&w, &x);
        assert_true(x.leader_case);
        assert_int_equal(x.tid, w.pid);
        /* The kernel's part: the pid is the exec'ing thread's now, untraced. */
        assert_int_equal(x.tracer_after, 0);
        /* The old thread's stack pointer is inside the new image's stack: a
         * write by pid number would have landed there. */
        assert_true(x.rsp > x.stack_lo && x.rsp < x.stack_hi);
        assert_int_equal(x.changed, 0);
        /* The new image is intact, untraced, and what it is: a new mm. */
        assert_int_equal(workload_command(&w, "ping", line, sizeof line, 30000), 0);
        assert_string_equal(line, "pong");
        assert_untouched(w.pid);
        char why[96];
        ProcessIdentity now = identity_of(w.pid);
        assert_non_null(process_identity_changed(&then, &now, why, sizeof why));
        stop(&w);
}

/* The injected thread is another one: it stays a zombie of ours, and the
 * exec finishes only once the injector has reaped it. */
static void test_sibling_exec_other(void **state) {
        const char *args[] = { "--sibling-exec-other", NULL };
        const long ppoll_nr = SYS_ppoll;
        ExecRace x;
        Workload w;
        char line[128];

        assert_int_equal(spawn(&w, args), 0);
        assert_true(wait_for(in_syscall, w.pid, &ppoll_nr));
        inject_across_exec(&w, &x);
        assert_false(x.leader_case);
        assert_int_equal(x.tid, x.tracee);
        assert_int_equal(x.state_after, 'Z');
        /* Reaped by the injector: the exec went on, the new image runs. */
        assert_true(read_line_within(w.stdout_fd, line, sizeof line, 30000));
        assert_non_null(strstr(line, "ready"));
        assert_int_equal(workload_command(&w, "ping", line, sizeof line, 30000), 0);
        assert_string_equal(line, "pong");
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
                cmocka_unit_test(test_sibling_exec),
                cmocka_unit_test(test_sibling_exec_other),
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
        if (root_open(NULL, &root) < 0 || probe_run(root, &probe) < 0)
                return 1;
        int r = cmocka_run_group_tests(tests, NULL, NULL);
        kill_children();
        root_free(root);
        return r;
}
