/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The sandbox on the real kernel, each case in a child process of its own
 * (a filter and dropped capabilities cannot be undone): capabilities of
 * every thread are the kept set, refused system calls fail with EPERM and
 * are named on stderr, allowed ones (threads, files, AF_UNIX) still work,
 * and the fatal mode of the test suites ends the process with status 159. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <dirent.h>

#include "fileio.h"
#include "log.h"
#include "sandbox.h"
#include "util.h"

/* Runs fn in a child whose stderr goes to *ret_err; returns its wait status. */
static int run_child(int (*fn)(void), char **ret_err) {
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                dup2(p[1], STDERR_FILENO);
                _exit(fn());
        }
        close(p[1]);
        char *buf = calloc(1, 65536);
        size_t n = 0;
        ssize_t k;
        while ((k = read(p[0], buf + n, 65535 - n)) > 0)
                n += (size_t) k;
        close(p[0]);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        *ret_err = buf;
        return status;
}

static void *idle_thread(void *arg) {
        for (;;)
                pause();
        return NULL;
}

static uint64_t status_field(const char *path, const char *field) {
        _cleanup_free_ char *text = NULL;
        if (read_full_file_at(AT_FDCWD, path, 1 << 16, &text, NULL) < 0)
                return UINT64_MAX;
        const char *p = strstr(text, field);
        return p ? strtoull(p + strlen(field), NULL, 16) : UINT64_MAX;
}

#define KEEP ((UINT64_C(1) << CAP_SYS_PTRACE) | (UINT64_C(1) << CAP_DAC_READ_SEARCH))

/* Exit codes of the children say which check failed. */
static int child_caps(void) {
        pthread_t t;
        if (pthread_create(&t, NULL, idle_thread, NULL) != 0)
                return 10;
        uint64_t had = status_field("/proc/self/status", "CapPrm:\t");
        if (sandbox_drop_capabilities(KEEP) < 0)
                return 11;
        /* Every thread, the one started before too. */
        char path[128];
        pid_t tids[2] = {};
        int n = 0;
        DIR *d = opendir("/proc/self/task");
        if (!d)
                return 12;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.' && n < 2)
                        tids[n++] = atoi(de->d_name);
        closedir(d);
        if (n != 2)
                return 13;
        uint64_t want = had & KEEP;
        for (int i = 0; i < 2; i++) {
                snprintf(path, sizeof path, "/proc/self/task/%d/status", tids[i]);
                if (status_field(path, "CapEff:\t") != want || status_field(path, "CapPrm:\t") != want ||
                    status_field(path, "CapInh:\t") != 0 || status_field(path, "CapAmb:\t") != 0)
                        return 20 + i;
                if (had & (UINT64_C(1) << CAP_SETPCAP) && status_field(path, "CapBnd:\t") != want)
                        return 22 + i;
                if (status_field(path, "NoNewPrivs:\t") != 1)
                        return 24 + i;
        }
        return 0;
}

static void test_capabilities(void **state) {
        _cleanup_free_ char *err = NULL;
        int status = run_child(child_caps, &err);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("capability child failed: status %#x, stderr: %s", status, err);
}

static int child_filter(void) {
        if (sandbox_load_seccomp(NULL, false) < 0)
                return 10;
        /* Refused: returns EPERM. */
        if (syscall(SYS_acct, NULL) != -1 || errno != EPERM)
                return 11;
        if (socket(AF_INET, SOCK_STREAM, 0) >= 0 || errno != EPERM)
                return 12;
        /* fork() is clone() without CLONE_THREAD. */
        if (fork() >= 0 || errno != EPERM)
                return 13;
        /* Never signal another process, only probe it. */
        if (kill(getppid(), SIGCONT) != -1 || errno != EPERM)
                return 14;
        if (kill(getppid(), 0) != 0)
                return 15;
        void *wx = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (wx != MAP_FAILED || errno != EPERM)
                return 16;
        /* Allowed: threads, files, AF_UNIX and AF_NETLINK sockets, plain memory. */
        pthread_t t;
        if (pthread_create(&t, NULL, idle_thread, NULL) != 0)
                return 20;
        _cleanup_free_ char *text = NULL;
        if (read_full_file_at(AT_FDCWD, "/proc/self/status", 1 << 16, &text, NULL) < 0)
                return 21;
        if (!strstr(text, "Seccomp:\t2"))
                return 22;
        int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                return 23;
        close(s);
        s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                return 24;
        close(s);
        void *rw = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (rw == MAP_FAILED)
                return 25;
        return 0;
}

static void test_filter(void **state) {
        _cleanup_free_ char *err = NULL;
        int status = run_child(child_filter, &err);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("filter child failed: status %#x, stderr: %s", status, err);
        /* Each refusal is one line naming the call. */
        assert_non_null(strstr(err, "seccomp: refused system call acct ("));
        assert_non_null(strstr(err, "), returning EPERM"));
        assert_non_null(strstr(err, "refused system call clone ("));
        assert_non_null(strstr(err, "refused system call kill ("));
        assert_non_null(strstr(err, "refused system call mmap ("));
        /* socket(AF_INET) too, but nothing that was allowed */
        assert_non_null(strstr(err, "refused system call socket ("));
        assert_null(strstr(err, "refused system call openat"));
        assert_null(strstr(err, "refused system call clone3")); /* ENOSYS, silently: glibc falls back */
}

static int child_fatal(void) {
        if (sandbox_load_seccomp(NULL, true) < 0)
                return 10;
        (void) syscall(SYS_acct, NULL);
        return 11; /* not reached */
}

static void test_fatal(void **state) {
        _cleanup_free_ char *err = NULL;
        int status = run_child(child_fatal, &err);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 128 + SIGSYS);
        assert_non_null(strstr(err, "refused system call acct ("));
        assert_non_null(strstr(err, "exiting (KSMTUNED2_SECCOMP_FATAL=1)"));
}

static void test_keep_mask(void **state) {
        /* With the injector process (ptrace false) the daemon keeps no
         * CAP_SYS_PTRACE. */
        const uint64_t observe = UINT64_C(1) << CAP_DAC_READ_SEARCH;
        SandboxNeeds n = {};
        assert_int_equal(sandbox_keep_mask(&n), observe);
        /* Remote madvise and process_ksm check ptrace read access first. */
        n = (SandboxNeeds) { .remote_madvise = true };
        assert_int_equal(sandbox_keep_mask(&n),
                         observe | (UINT64_C(1) << CAP_SYS_NICE) | (UINT64_C(1) << CAP_SYS_PTRACE));
        n = (SandboxNeeds) { .taskstats = true };
        assert_int_equal(sandbox_keep_mask(&n), observe | (UINT64_C(1) << CAP_NET_ADMIN));
        n = (SandboxNeeds) { .ptrace = true };
        assert_int_equal(sandbox_keep_mask(&n), KEEP);

        Probe p = { .prctl_memory_merge = true };
        sandbox_needs_from_probe(&p, &n);
        assert_int_equal(sandbox_keep_mask(&n), KEEP); /* injection in-process: CAP_SYS_PTRACE only */
        assert_false(n.remote_madvise);
        assert_int_equal(n.process_ksm_nrs[0], -1);
        p = (Probe) { .process_madvise_remote_mergeable = true };
        sandbox_needs_from_probe(&p, &n);
        assert_true(n.remote_madvise);
        p = (Probe) { .process_ksm_syscall = true, .process_ksm_enable_nr = 470, .process_ksm_disable_nr = 471,
                      .process_ksm_status_nr = 472 };
        sandbox_needs_from_probe(&p, &n);
        assert_true(n.remote_madvise);
        assert_int_equal(n.process_ksm_nrs[0], 470);
        assert_int_equal(n.process_ksm_nrs[2], 472);
}

/* A system call number the kernel does not have (like an out-of-tree
 * process_ksm_enable here) is refused unless needs names it. */
static int child_extra_nr(void) {
        const long nr = 998; /* unassigned: ENOSYS when it passes the filter */
        SandboxNeeds n = { .process_ksm_nrs = { nr, -1, -1 } };
        if (sandbox_load_seccomp(&n, false) < 0)
                return 10;
        if (syscall(nr, 0, 0) != -1 || errno != ENOSYS)
                return 11;
        if (syscall(nr + 1, 0, 0) != -1 || errno != EPERM)
                return 12;
        return 0;
}

static void test_extra_nr(void **state) {
        _cleanup_free_ char *err = NULL;
        int status = run_child(child_extra_nr, &err);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                fail_msg("extra-nr child failed: status %#x, stderr: %s", status, err);
        assert_non_null(strstr(err, "refused system call ? (999)"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_keep_mask),
                cmocka_unit_test(test_capabilities),
                cmocka_unit_test(test_filter),
                cmocka_unit_test(test_fatal),
                cmocka_unit_test(test_extra_nr),
        };
        log_set_max_level(LOG_ERR);
        if (sandbox_running_on_valgrind()) {
                fprintf(stderr, "SKIP: seccomp cannot be tested under valgrind\n");
                return 77;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
