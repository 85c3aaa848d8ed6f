/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Targets that exit, exec, or run threads out from under the injector: 400
 * children, each doing one thing after a random 0-3 ms while the merge
 * actuator injects prctl(PR_SET_MEMORY_MERGE) into it after a random 0-3 ms
 * of its own, so the race lands in every step of the injection (seize,
 * interrupt, frame, syscall, restore, detach). Whatever the outcome (done,
 * gone, refused), every child must finish on its own with status 0: none
 * killed, none left stopped, none whose memory or registers changed (mode
 * 2 checks a pattern and a register-held sum across the race). No KSM knob
 * is touched (a mm marked mergeable while run=0 merges nothing), so no lock. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "merge.h"
#include "probe.h"
#include "procfs.h"
#include "root.h"
#include "util.h"

#define N_CHILDREN 400

static void sleep_us(unsigned us) {
        struct timespec ts = { 0, (long) us * 1000 };
        nanosleep(&ts, NULL);
}

static void *idle_thread(void *arg) {
        (void) arg;
        for (;;)
                pause();
        return NULL;
}

/* Mode 2: memory and a running sum that live across the race. */
static int compute_and_check(unsigned us) {
        enum { WORDS = 16384 };
        static uint64_t buf[WORDS];
        uint64_t want = 0, got = 0, end = now_usec(CLOCK_MONOTONIC) + us;
        for (size_t i = 0; i < WORDS; i++)
                buf[i] = i * 0x9e3779b97f4a7c15ULL;
        do {
                got = 0, want = 0;
                for (size_t i = 0; i < WORDS; i++) {
                        got += buf[i] ^ i;
                        want += (i * 0x9e3779b97f4a7c15ULL) ^ i;
                }
        } while (now_usec(CLOCK_MONOTONIC) < end);
        for (size_t i = 0; i < WORDS; i++)
                if (buf[i] != i * 0x9e3779b97f4a7c15ULL)
                        return 3;
        return got == want ? 0 : 4;
}

static int child_main(unsigned mode, unsigned us, const char *self) {
        switch (mode) {
        case 0: /* exits during the injection */
                sleep_us(us);
                return 0;
        case 1: /* execs during it: the new image lives 2 ms */
                sleep_us(us);
                execl(self, self, "--child", "9", "2000", (char *) NULL);
                return 127;
        case 2:
                return compute_and_check(us);
        case 3: { /* a second thread; exit_group from the main one */
                pthread_t t;
                if (pthread_create(&t, NULL, idle_thread, NULL) != 0)
                        return 5;
                sleep_us(us);
                return 0;
        }
        default: /* 9: after exec */
                sleep_us(us);
                return 0;
        }
}

static Root *root;
static Probe probe;
static const char *self_path;

static void test_race(void **state) {
        unsigned kinds[_MERGE_OUTCOME_KIND_MAX] = {}, by_mode_done[4] = {};
        MergeContext c = { .root = root, .probe = &probe };
        unsigned seed = (unsigned) now_usec(CLOCK_MONOTONIC);

        if (!probe.prctl_memory_merge) {
                print_message("SKIP: no PR_SET_MEMORY_MERGE\n");
                skip();
        }
        fprintf(stderr, "seed %u\n", seed);
        srand(seed);
        for (int i = 0; i < N_CHILDREN; i++) {
                unsigned mode = (unsigned) i % 4, child_us = (unsigned) rand() % 3000,
                         inject_us = (unsigned) rand() % 3000;
                pid_t pid = fork();
                assert_true(pid >= 0);
                if (pid == 0) {
                        char us[16];
                        snprintf(us, sizeof us, "%u", child_us);
                        /* through exec, so the child is a plain process (no
                         * cmocka state) and mode 1 can exec again */
                        execl(self_path, self_path, "--child", mode == 0 ? "0" : mode == 1 ? "1" : mode == 2 ? "2" : "3",
                              us, (char *) NULL);
                        _exit(126);
                }
                sleep_us(inject_us);

                ProcessAction a = { .pid = pid, .action = MERGE_ACTION_ENABLE, .method = MERGE_METHOD_INJECT };
                int dfd;
                ProcStat st;
                if (root_open_pid_dir(root, pid, &dfd) >= 0) {
                        if (procfs_read_stat(dfd, &st) >= 0)
                                a.start_time_ticks = st.start_time_ticks;
                        close(dfd);
                }
                MergeOutcome o;
                assert_int_equal(merge_apply_one(&c, &a, &o), 0);
                assert_true((unsigned) o.kind < _MERGE_OUTCOME_KIND_MAX);
                kinds[o.kind]++;
                if (o.kind == MERGE_OUTCOME_FAILED || o.kind == MERGE_OUTCOME_REFUSED)
                        fprintf(stderr, "mode %u: %s: %s\n", mode, merge_outcome_kind_to_string(o.kind), o.text);
                if (o.kind == MERGE_OUTCOME_DONE)
                        by_mode_done[mode]++;

                /* It must finish by itself: give it 5 s, then look why not. */
                int status = 0;
                pid_t w = 0;
                for (int k = 0; k < 500 && (w = waitpid(pid, &status, WNOHANG)) == 0; k++)
                        sleep_us(10000);
                if (w == 0) {
                        char buf[512] = "";
                        if (root_open_pid_dir(root, pid, &dfd) >= 0) {
                                if (procfs_read_stat(dfd, &st) >= 0)
                                        snprintf(buf, sizeof buf, "state %c", st.state);
                                close(dfd);
                        }
                        kill(pid, SIGKILL);
                        waitpid(pid, NULL, 0);
                        fail_msg("child %d (mode %u, %u us / inject at %u us) did not finish: %s; outcome %s: %s",
                                 pid, mode, child_us, inject_us, buf, merge_outcome_kind_to_string(o.kind), o.text);
                }
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                        fail_msg("child %d (mode %u) ended with %s %d after outcome %s: %s", pid, mode,
                                 WIFEXITED(status) ? "status" : "signal",
                                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                                 merge_outcome_kind_to_string(o.kind), o.text);
        }
        printf("inject race: %d children (exit, exec, compute+verify, threaded) all finished with 0;", N_CHILDREN);
        for (int k = 0; k < _MERGE_OUTCOME_KIND_MAX; k++)
                if (kinds[k])
                        printf(" %s %u", merge_outcome_kind_to_string((MergeOutcomeKind) k), kinds[k]);
        printf("; done by mode: exit %u, exec %u, compute %u, threaded %u\n", by_mode_done[0], by_mode_done[1],
               by_mode_done[2], by_mode_done[3]);
}

int main(int argc, char **argv) {
        if (argc == 4 && streq(argv[1], "--child"))
                return child_main((unsigned) atoi(argv[2]), (unsigned) atoi(argv[3]), argv[0]);
        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: needs root (ptrace of our own children needs no more, but the probe does)\n");
                return 77;
        }
        self_path = "/proc/self/exe";
        static char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n > 0) {
                exe[n] = 0;
                self_path = exe;
        }
        if (root_open(NULL, &root) < 0 || probe_run(root, &probe) < 0) {
                fprintf(stderr, "cannot open the system's proc and sys or probe it\n");
                return 1;
        }
        const struct CMUnitTest tests[] = { cmocka_unit_test(test_race) };
        int r = cmocka_run_group_tests(tests, NULL, NULL);
        root_free(root);
        return r;
}
