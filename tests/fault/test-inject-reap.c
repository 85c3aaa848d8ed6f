/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A target that dies under the injector, but whose death the kernel does
 * not report yet, does not hold the injecting thread: the thread-group
 * leader is seized and stopped, then the whole process is SIGKILLed while
 * one of its threads is stuck, unkillable, in a FUSE read that the server
 * (tests/helpers/mmap-lock-hog) never answers. The leader's exit is not
 * reported until that thread is gone (delay_group_leader()), so the
 * injector's next ptrace request says ESRCH and the exit is not there to
 * collect. Before the fix reap_exited() polled for it for 2 s, holding
 * every action queued behind; now inject_syscalls() returns at once and
 * inject_poll_abandoned() collects the leader once the read is let go (the
 * hog then reaps its target: nobody is left a zombie of ours).
 * No KSM knob is touched (the injected call never runs), so no lock. */
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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "inject.h"
#include "root.h"
#include "syscalls.h"
#include "util.h"

static Root *root;

static void kill_at_stop(InjectPhase phase, void *userdata) {
        if (phase == INJECT_PHASE_STOPPED)
                assert_int_equal(kill(*(pid_t *) userdata, SIGKILL), 0);
}

static void test_reap_does_not_wait(void **state) {
        const char *hog = getenv("KSM_MMAP_LOCK_HOG");
        int in[2], out[2];
        char line[64] = "";

        if (!hog || access("/dev/fuse", R_OK | W_OK) < 0 || !inject_supported()) {
                print_message("SKIP: needs KSM_MMAP_LOCK_HOG, /dev/fuse and x86-64\n");
                skip();
        }
        assert_int_equal(pipe2(in, O_CLOEXEC), 0);
        assert_int_equal(pipe2(out, O_CLOEXEC), 0);
        pid_t hog_pid = fork();
        assert_true(hog_pid >= 0);
        if (hog_pid == 0) {
                dup2(in[0], 0);
                dup2(out[1], 1);
                (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
                execl(hog, hog, (char *) NULL);
                _exit(126);
        }
        close(in[0]);
        close(out[1]);
        FILE *f = fdopen(out[0], "r");
        assert_non_null(f);
        assert_non_null(fgets(line, sizeof line, f));
        pid_t target = 0;
        assert_int_equal(sscanf(line, "target %d", &target), 1);

        int pidfd = sys_pidfd_open(target, 0);
        assert_true(pidfd >= 0);
        InjectSyscall call = { .nr = SYS_prctl, .args = { PR_SET_MEMORY_MERGE, 1 } };
        InjectOptions o = { .phase_hook = kill_at_stop, .userdata = &target };
        InjectStats s = {};
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        int r = inject_syscalls(root, pidfd, target, &call, 1, &o, &s);
        uint64_t took = now_usec(CLOCK_MONOTONIC) - t0;
        print_message("inject_syscalls into a target killed at the stop: %s after %" PRIu64 " ms (tid %d)\n",
                      strerrorname_np(-r) ?: "0", took / USEC_PER_MSEC, s.tid);
        assert_int_equal(r, -ESRCH);
        assert_int_equal(s.tid, target);
        /* 2 s before the fix */
        assert_true(took < 300 * USEC_PER_MSEC);
        /* Not collected yet: its stuck thread lives on. */
        assert_int_equal(inject_poll_abandoned(), 1);

        /* Let the read go: the hog aborts its connection and kills and reaps
         * the target; the leader's exit comes to us first (its tracer). */
        close(in[1]);
        size_t left = 1;
        for (int i = 0; i < 1000 && left > 0; i++) {
                left = inject_poll_abandoned();
                if (left > 0)
                        usleep(5000);
        }
        assert_int_equal(left, 0);
        int st;
        assert_int_equal(waitpid(hog_pid, &st, 0), hog_pid);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        assert_int_equal(kill(target, 0), -1);
        assert_int_equal(errno, ESRCH);
        fclose(f);
        close(pidfd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reap_does_not_wait),
        };
        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: needs root (ptrace, FUSE mount)\n");
                return 77;
        }
        if (root_open(NULL, &root) < 0)
                return 1;
        return cmocka_run_group_tests(tests, NULL, NULL);
}
