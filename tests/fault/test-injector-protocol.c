/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The injector (injector.h) spoken to directly, as a compromised daemon
 * could: `ksmtuned2 --injector` on a socketpair, its workers' capabilities
 * and filters, garbage and short datagrams, pid 1, the daemon and the
 * supervisor themselves, fds that are not pidfds, a pidfd of another pid, a
 * start time that does not match; then real injections into children of
 * ours, one of them behind a seccomp filter that kills on prctl (refused,
 * alive) and one behind a filter that allows it (done, the filter having
 * been read by the seccomp reader). No KSM knob is touched, but the test
 * takes the KSM test lock all the same: its children really become
 * mergeable, and a kernel test or benchmark running ksmd beside it would
 * count their pages in its figures. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <seccomp.h>

#include "injector-msg.h"
#include "injector.h"
#include "ksm-guard.h"
#include "procfs.h"
#include "syscalls.h"
#include "util.h"

static int sup_fd = -1, sup_pid, inject_fd = -1, inject_pid, read_fd = -1, read_pid;
static uint64_t seq;

static int request(int fd, InjectorRequest *req, int pass_fd, InjectorReply *rep, int *ret_fd) {
        req->seq = ++seq;
        if (!req->magic)
                req->magic = INJECTOR_MAGIC;
        int r = injector_send(fd, req, sizeof *req, pass_fd);
        if (r < 0)
                return r;
        if (injector_wait_readable(fd, now_usec(CLOCK_MONOTONIC) + 20 * USEC_PER_SEC) <= 0)
                return -ETIMEDOUT;
        int got = -1;
        r = injector_recv(fd, rep, sizeof *rep, &got);
        if (ret_fd)
                *ret_fd = got;
        else if (got >= 0)
                close(got);
        return r;
}

static int spawn(InjectorRole role, int *ret_pid) {
        InjectorRequest req = { .op = INJECTOR_OP_SPAWN, .arg = role };
        InjectorReply rep;
        int fd = -1;
        assert_int_equal(request(sup_fd, &req, -1, &rep, &fd), sizeof rep);
        assert_int_equal(rep.error, 0);
        assert_true(fd >= 0);
        *ret_pid = rep.pid;
        return fd;
}

static char *status_field(int pid, const char *field) {
        char path[64], line[256];
        static char value[256];
        snprintf(path, sizeof path, "/proc/%d/status", pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return NULL;
        value[0] = 0;
        while (fgets(line, sizeof line, f))
                if (strncmp(line, field, strlen(field)) == 0 && line[strlen(field)] == ':') {
                        snprintf(value, sizeof value, "%s", strstrip(line + strlen(field) + 1));
                        break;
                }
        fclose(f);
        return value;
}

static uint64_t start_time(int pid) {
        char path[32];
        snprintf(path, sizeof path, "/proc/%d", pid);
        int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ProcStat st;
        assert_true(dfd >= 0);
        assert_int_equal(procfs_read_stat(dfd, &st), 0);
        close(dfd);
        return st.start_time_ticks;
}

/* The configuration the injector reads InjectIntoSeccomp= from (--config),
 * in a directory of root's alone, rewritten by the tests. */
static char conf_dir[] = "/tmp/ksmtuned2-injector-conf.XXXXXX";
static char conf_path[sizeof conf_dir + 32];

static void write_conf(const char *text, mode_t mode) {
        FILE *f = fopen(conf_path, "we");
        assert_non_null(f);
        assert_true(fputs(text, f) >= 0);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(chmod(conf_path, mode), 0);
}

static int setup(void **state) {
        int sp[2];
        const char *exe = getenv("KSMTUNED2");
        if (geteuid() != 0 || !exe || !mkdtemp(conf_dir))
                return -1;
        snprintf(conf_path, sizeof conf_path, "%s/ksmtuned2.conf", conf_dir);
        write_conf("[Daemon]\nInjectIntoSeccomp=no\n", 0644);
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
        sup_pid = fork();
        if (sup_pid == 0) {
                char arg[sizeof conf_path + 16];
                snprintf(arg, sizeof arg, "--config=%s", conf_path);
                dup2(sp[1], 3);
                execl(exe, "ksmtuned2", "--injector", arg, NULL);
                _exit(127);
        }
        close(sp[1]);
        sup_fd = sp[0];
        inject_fd = spawn(INJECTOR_ROLE_INJECT, &inject_pid);
        read_fd = spawn(INJECTOR_ROLE_READ, &read_pid);
        return 0;
}

static int teardown(void **state) {
        close(inject_fd);
        close(read_fd);
        close(sup_fd);
        /* EOF ends them all; reap the supervisor, bounded. */
        for (int i = 0; i < 200 && waitpid(sup_pid, NULL, WNOHANG) == 0; i++)
                usleep(10000);
        unlink(conf_path);
        rmdir(conf_dir);
        return 0;
}

/* Each worker holds exactly its capabilities, a filter and no_new_privs. */
static void expect_refused(int fd, InjectorRequest *req, int pass_fd, int error, const char *reason_part);

static void test_worker_privileges(void **state) {
        /* A worker drops its privileges before it reads its first request:
         * once it answered one, they are gone. */
        InjectorRequest ping = { .op = 99 };
        expect_refused(inject_fd, &ping, -1, EOPNOTSUPP, "not served");
        expect_refused(read_fd, &ping, -1, EOPNOTSUPP, "not served");
        assert_string_equal(status_field(inject_pid, "CapEff"), "0000000000080004"); /* SYS_PTRACE, DAC_READ_SEARCH */
        assert_string_equal(status_field(inject_pid, "CapPrm"), "0000000000080004");
        assert_string_equal(status_field(inject_pid, "CapBnd"), "0000000000080004");
        assert_string_equal(status_field(inject_pid, "Seccomp"), "2");
        assert_string_equal(status_field(inject_pid, "NoNewPrivs"), "1");
        assert_string_equal(status_field(read_pid, "CapEff"), "0000000000080000"); /* SYS_PTRACE */
        assert_string_equal(status_field(read_pid, "Seccomp"), "2");
        /* The supervisor keeps what its workers and readers need, no more. */
        assert_string_equal(status_field(sup_pid, "CapPrm"), "0000000000280104"); /* + SYS_ADMIN, SETPCAP */
}

static void expect_refused(int fd, InjectorRequest *req, int pass_fd, int error, const char *reason_part) {
        InjectorReply rep;
        assert_int_equal(request(fd, req, pass_fd, &rep, NULL), sizeof rep);
        if (rep.error != error || !strstr(rep.reason, reason_part))
                fail_msg("wanted %s \"%s\", got %s \"%s\"", strerrorname_np(error), reason_part,
                         strerrorname_np(rep.error) ?: "0", rep.reason);
        assert_int_equal(rep.seq, req->seq);
}

static void test_garbage(void **state) {
        InjectorReply rep;
        /* Short, long and foreign datagrams: refused, and the worker lives on. */
        assert_true(send(inject_fd, "abc", 3, 0) == 3);
        assert_true(injector_wait_readable(inject_fd, now_usec(CLOCK_MONOTONIC) + 5 * USEC_PER_SEC) > 0);
        int fd;
        assert_int_equal(injector_recv(inject_fd, &rep, sizeof rep, &fd), sizeof rep);
        assert_int_equal(rep.error, EBADMSG);
        char big[sizeof(InjectorRequest) + 64] = {};
        assert_true(send(inject_fd, big, sizeof big, 0) == (ssize_t) sizeof big);
        assert_true(injector_wait_readable(inject_fd, now_usec(CLOCK_MONOTONIC) + 5 * USEC_PER_SEC) > 0);
        assert_int_equal(injector_recv(inject_fd, &rep, sizeof rep, &fd), sizeof rep);
        assert_int_equal(rep.error, EBADMSG);

        InjectorRequest bad_magic = { .magic = 0x12345678, .op = INJECTOR_OP_INJECT, .pid = getpid() };
        expect_refused(inject_fd, &bad_magic, -1, EBADMSG, "malformed");
        InjectorRequest bad_op = { .op = 99, .pid = getpid() };
        expect_refused(inject_fd, &bad_op, -1, EOPNOTSUPP, "not served");
        /* A read worker does not inject, an inject worker does not read. */
        InjectorRequest inj = { .op = INJECTOR_OP_INJECT, .pid = getpid() };
        expect_refused(read_fd, &inj, -1, EOPNOTSUPP, "not served");
        InjectorRequest rd = { .op = INJECTOR_OP_READ_EXE, .pid = getpid() };
        expect_refused(inject_fd, &rd, -1, EOPNOTSUPP, "not served");
        InjectorRequest role = { .op = INJECTOR_OP_SPAWN, .arg = 7 };
        expect_refused(sup_fd, &role, -1, EINVAL, "no such role");
        InjectorRequest kill_other = { .op = INJECTOR_OP_KILL, .pid = getpid() };
        expect_refused(sup_fd, &kill_other, -1, ESRCH, "not a worker");
        InjectorRequest sup_inject = { .op = INJECTOR_OP_INJECT, .pid = 1 };
        expect_refused(sup_fd, &sup_inject, -1, EOPNOTSUPP, "not served");
        assert_int_equal(kill(inject_pid, 0), 0);
}

static void test_forbidden_targets(void **state) {
        int p1 = sys_pidfd_open(1, 0);
        assert_true(p1 >= 0);
        InjectorRequest req = { .op = INJECTOR_OP_INJECT, .pid = 1, .arg = MERGE_ACTION_ENABLE,
                                .start_time_ticks = start_time(1) };
        expect_refused(inject_fd, &req, p1, EPERM, "pid 1 (init) is never touched");
        close(p1);

        /* The daemon (here: the test, the supervisor's parent), the
         * supervisor and the worker itself. */
        int targets[] = { getpid(), sup_pid, inject_pid };
        const char *why[] = { "ksmtuned2 itself", "supervisor", "own process" };
        for (size_t i = 0; i < 3; i++) {
                int pfd = sys_pidfd_open(targets[i], 0);
                req.pid = targets[i];
                req.start_time_ticks = start_time(targets[i]);
                expect_refused(inject_fd, &req, pfd, EPERM, why[i]);
                close(pfd);
        }
        assert_int_equal(kill(inject_pid, 0), 0);
}

/* The children die with the test (PR_SET_PDEATHSIG): a failed assertion
 * skips a test's own kill, and a leaked child would keep the KSM test lock
 * (its inherited fd) and meson's output pipe. */
static pid_t sleeper(void) {
        pid_t p = fork();
        if (p == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                for (;;)
                        pause();
        }
        return p;
}

static void test_not_a_pidfd(void **state) {
        pid_t a = sleeper(), b = sleeper();
        InjectorRequest req = { .op = INJECTOR_OP_INJECT, .pid = a, .arg = MERGE_ACTION_ENABLE,
                                .start_time_ticks = start_time(a) };
        expect_refused(inject_fd, &req, -1, EBADF, "no pidfd");
        int pipefd[2];
        assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
        expect_refused(inject_fd, &req, pipefd[0], EBADF, "not a pidfd");
        int pb = sys_pidfd_open(b, 0);
        expect_refused(inject_fd, &req, pb, EINVAL, "the pidfd names pid");
        int pa = sys_pidfd_open(a, 0);
        req.start_time_ticks += 1;
        expect_refused(inject_fd, &req, pa, ESRCH, "reused");
        req.start_time_ticks = 0;
        expect_refused(inject_fd, &req, pa, EINVAL, "no start time");
        req.start_time_ticks = start_time(a);
        req.arg = 42;
        expect_refused(inject_fd, &req, pa, EINVAL, "no such action");
        close(pipefd[0]);
        close(pipefd[1]);
        close(pa);
        close(pb);
        /* Nothing was done to either. */
        assert_string_equal(status_field(a, "TracerPid"), "0");
        kill(a, SIGKILL);
        kill(b, SIGKILL);
        waitpid(a, NULL, 0);
        waitpid(b, NULL, 0);
}

static bool merge_any(pid_t pid) {
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/ksm_stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
        if (fd >= 0)
                close(fd);
        if (n <= 0)
                return false;
        buf[n] = 0;
        return strstr(buf, "ksm_merge_any: yes") != NULL;
}

/* A child behind a filter: kill_prctl makes prctl() kill the process,
 * otherwise the filter only refuses reboot(). */
static pid_t filtered(bool kill_prctl) {
        int ready[2];
        assert_int_equal(pipe(ready), 0);
        pid_t p = fork();
        if (p == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL); /* before the filter that may kill prctl() */
                scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
                if (kill_prctl)
                        seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(prctl), 0);
                seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(reboot), 0);
                if (seccomp_load(ctx) < 0)
                        _exit(3);
                (void) !write(ready[1], "x", 1);
                for (;;)
                        pause();
        }
        char c;
        assert_int_equal(read(ready[0], &c, 1), 1);
        close(ready[0]);
        close(ready[1]);
        return p;
}

static void inject_flags(pid_t p, MergeAction a, uint32_t flags, InjectorReply *rep) {
        int pfd = sys_pidfd_open(p, 0);
        InjectorRequest req = { .op = INJECTOR_OP_INJECT, .pid = p, .arg = a, .start_time_ticks = start_time(p),
                                .merge_any = merge_any(p), .flags = flags };
        assert_int_equal(request(inject_fd, &req, pfd, rep, NULL), sizeof *rep);
        close(pfd);
}

static void inject(pid_t p, MergeAction a, InjectorReply *rep) {
        inject_flags(p, a, 0, rep);
}

static void test_inject(void **state) {
        InjectorReply rep;
        pid_t p = sleeper();
        inject(p, MERGE_ACTION_ENABLE, &rep);
        if (rep.error)
                fail_msg("enable: %s (%s)", strerrorname_np(rep.error), rep.reason);
        assert_true(merge_any(p));
        inject(p, MERGE_ACTION_DISABLE, &rep);
        assert_int_equal(rep.error, 0);
        assert_false(merge_any(p));
        assert_string_equal(status_field(p, "TracerPid"), "0");
        kill(p, SIGKILL);
        waitpid(p, NULL, 0);
}

static void test_seccomp(void **state) {
        InjectorReply rep;
        pid_t deny = filtered(true), allow = filtered(false);
        assert_string_equal(status_field(deny, "Seccomp"), "2");

        inject(deny, MERGE_ACTION_ENABLE, &rep);
        if (rep.error != EACCES || !strstr(rep.reason, "seccomp filter would kill the process on syscall 157"))
                fail_msg("filter that kills prctl: %s (%s)", strerrorname_np(rep.error) ?: "0", rep.reason);
        assert_false(merge_any(deny));
        /* Alive, not stopped, not traced. */
        int status;
        assert_int_equal(waitpid(deny, &status, WNOHANG), 0);
        assert_string_equal(status_field(deny, "TracerPid"), "0");
        /* Back asleep in pause(): just after the detach it may still be
         * running on its way there (seen as R once in CI), so wait, 5 s at most. */
        for (int i = 0; i < 500 && status_field(deny, "State")[0] != 'S'; i++)
                usleep(10000);
        assert_true(status_field(deny, "State")[0] == 'S');

        inject(allow, MERGE_ACTION_ENABLE, &rep);
        if (rep.error)
                fail_msg("filter that allows prctl: %s (%s)", strerrorname_np(rep.error), rep.reason);
        assert_true(merge_any(allow));
        assert_int_equal(waitpid(allow, &status, WNOHANG), 0);

        kill(deny, SIGKILL);
        kill(allow, SIGKILL);
        waitpid(deny, NULL, 0);
        waitpid(allow, NULL, 0);
}

/* A daemon asking for InjectIntoSeccomp=yes (INJECTOR_FLAG_ALLOW_SECCOMP)
 * gets it only when the root-owned configuration says so too: with no
 * there, or a file others may write, the filters still decide (the target
 * whose filter kills on prctl would otherwise die of the injection). */
static void test_seccomp_flag_needs_config(void **state) {
        InjectorReply rep;
        int status;
        pid_t deny = filtered(true), allow = filtered(false);

        const struct {
                const char *text;
                mode_t mode;
        } refusing[] = {
                { "[Daemon]\nInjectIntoSeccomp=no\n", 0644 },
                { "[Daemon]\nInjectIntoSeccomp=yes\n", 0666 }, /* not root's alone: not read at all */
        };
        for (size_t i = 0; i < ELEMENTSOF(refusing); i++) {
                write_conf(refusing[i].text, refusing[i].mode);
                inject_flags(deny, MERGE_ACTION_ENABLE, INJECTOR_FLAG_ALLOW_SECCOMP, &rep);
                fprintf(stderr, "InjectIntoSeccomp asked, configuration %d (mode %o): %s (%s)\n", (int) i,
                        (unsigned) refusing[i].mode, strerrorname_np(rep.error) ?: "0", rep.reason);
                if (rep.error != EACCES || !strstr(rep.reason, "seccomp filter would kill the process on syscall 157"))
                        fail_msg("InjectIntoSeccomp=yes asked against the configuration: %s (%s)",
                                 strerrorname_np(rep.error) ?: "0", rep.reason);
                assert_int_equal(waitpid(deny, &status, WNOHANG), 0);
                assert_false(merge_any(deny));
                assert_string_equal(status_field(deny, "TracerPid"), "0");
        }

        /* Both say yes: injected without running the filters. */
        write_conf("[Daemon]\nInjectIntoSeccomp=yes\n", 0644);
        inject_flags(allow, MERGE_ACTION_ENABLE, INJECTOR_FLAG_ALLOW_SECCOMP, &rep);
        if (rep.error)
                fail_msg("InjectIntoSeccomp=yes on both sides: %s (%s)", strerrorname_np(rep.error), rep.reason);
        assert_true(merge_any(allow));
        assert_int_equal(waitpid(allow, &status, WNOHANG), 0);
        write_conf("[Daemon]\nInjectIntoSeccomp=no\n", 0644);

        kill(deny, SIGKILL);
        kill(allow, SIGKILL);
        waitpid(deny, NULL, 0);
        waitpid(allow, NULL, 0);
}

static void test_read(void **state) {
        InjectorRequest req = { .op = INJECTOR_OP_READ_EXE, .pid = getpid(), .start_time_ticks = start_time(getpid()) };
        InjectorReply rep;
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        assert_true(n > 0);
        self[n] = 0;
        assert_int_equal(request(read_fd, &req, -1, &rep, NULL), sizeof rep);
        assert_int_equal(rep.error, 0);
        assert_string_equal(rep.data, self);
        req.start_time_ticks += 1;
        assert_int_equal(request(read_fd, &req, -1, &rep, NULL), sizeof rep);
        assert_int_equal(rep.error, ESRCH);
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

/* Figures, not assertions: what a round trip through a worker costs. */
static void test_figures(void **state) {
        enum { N_READ = 500, N_INJECT = 100 };
        static uint64_t t[N_READ];
        InjectorRequest req = { .op = INJECTOR_OP_READ_EXE, .pid = getpid(), .start_time_ticks = start_time(getpid()) };
        InjectorReply rep;
        for (size_t i = 0; i < N_READ; i++) {
                uint64_t t0 = now_usec(CLOCK_MONOTONIC);
                assert_int_equal(request(read_fd, &req, -1, &rep, NULL), sizeof rep);
                t[i] = now_usec(CLOCK_MONOTONIC) - t0;
        }
        qsort(t, N_READ, sizeof *t, cmp_u64);
        printf("read exe through the read worker: median %" PRIu64 " us, p99 %" PRIu64 " us\n", t[N_READ / 2],
               t[N_READ * 99 / 100]);
        pid_t p = sleeper();
        static uint64_t w[N_INJECT], total[N_INJECT];
        for (size_t i = 0; i < N_INJECT; i++) {
                uint64_t t0 = now_usec(CLOCK_MONOTONIC);
                inject(p, i % 2 ? MERGE_ACTION_DISABLE : MERGE_ACTION_ENABLE, &rep);
                w[i] = now_usec(CLOCK_MONOTONIC) - t0;
                total[i] = rep.total_usec;
                assert_int_equal(rep.error, 0);
        }
        qsort(w, N_INJECT, sizeof *w, cmp_u64);
        qsort(total, N_INJECT, sizeof *total, cmp_u64);
        printf("injection through the inject worker: round trip median %" PRIu64 " us (p99 %" PRIu64
               " us), of which inject_syscalls() median %" PRIu64 " us\n",
               w[N_INJECT / 2], w[N_INJECT * 99 / 100], total[N_INJECT / 2]);
        /* A filtered target: the seccomp reader is forked and stops each thread. */
        pid_t f = filtered(false);
        for (size_t i = 0; i < 20; i++) {
                uint64_t t0 = now_usec(CLOCK_MONOTONIC);
                inject(f, i % 2 ? MERGE_ACTION_DISABLE : MERGE_ACTION_ENABLE, &rep);
                w[i] = now_usec(CLOCK_MONOTONIC) - t0;
                assert_int_equal(rep.error, 0);
        }
        qsort(w, 20, sizeof *w, cmp_u64);
        printf("injection into a filtered target (filter read by a seccomp reader): median %" PRIu64 " us\n", w[10]);
        kill(p, SIGKILL);
        kill(f, SIGKILL);
        waitpid(p, NULL, 0);
        waitpid(f, NULL, 0);
}

/* Killing a worker: the supervisor notices, a new one serves. */
static void test_kill_worker(void **state) {
        InjectorRequest req = { .op = INJECTOR_OP_KILL, .pid = inject_pid };
        InjectorReply rep;
        assert_int_equal(request(sup_fd, &req, -1, &rep, NULL), sizeof rep);
        assert_int_equal(rep.error, 0);
        assert_true(injector_wait_readable(inject_fd, now_usec(CLOCK_MONOTONIC) + 5 * USEC_PER_SEC) > 0);
        int fd;
        assert_int_equal(injector_recv(inject_fd, &rep, sizeof rep, &fd), 0); /* EOF */
        close(inject_fd);
        inject_fd = spawn(INJECTOR_ROLE_INJECT, &inject_pid);
        test_inject(state);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_worker_privileges),
                cmocka_unit_test(test_garbage),
                cmocka_unit_test(test_forbidden_targets),
                cmocka_unit_test(test_not_a_pidfd),
                cmocka_unit_test(test_inject),
                cmocka_unit_test(test_seccomp),
                cmocka_unit_test(test_seccomp_flag_needs_config),
                cmocka_unit_test(test_read),
                cmocka_unit_test(test_figures),
                cmocka_unit_test(test_kill_worker),
        };
        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: needs root\n");
                return 77;
        }
        ksm_guard_acquire();
        return cmocka_run_group_tests(tests, setup, teardown);
}
