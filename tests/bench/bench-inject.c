/* SPDX-License-Identifier: GPL-2.0-or-later */
/* How much an injected PR_SET_MEMORY_MERGE costs, against its peers
 * measured in the same run:
 *   - the same prctl made by a process itself (what ksmctl exec and
 *     MemoryKSM= cost: the floor),
 *   - a bare ptrace stop: PTRACE_SEIZE + PTRACE_INTERRUPT + PTRACE_DETACH
 *     with nothing done (the least any ptrace method can hold a thread),
 *   - the full merge actuator path (pidfd, start time, ksm_stat before and
 *     after, gadget scan, injection).
 * Target: tests/helpers/inject-target (threads, blocking syscalls, self
 * checks); it must report no error at the end. Takes the KSM lock: the
 * target's merge flag changes what ksmd would scan. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inject.h"
#include "ksm-guard.h"
#include "merge.h"
#include "probe.h"
#include "procfs.h"
#include "root.h"
#include "syscalls.h"
#include "util.h"
#include "workload.h"

#define N 1000

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

typedef struct Stat {
        uint64_t median, p99, max;
} Stat;

static Stat stat_of(uint64_t *v, size_t n) {
        qsort(v, n, sizeof *v, cmp_u64);
        return (Stat) { v[n / 2], v[n * 99 / 100], v[n - 1] };
}

static uint64_t ns_now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

int main(void) {
        static uint64_t self_ns[N], bare_us[N], inj_us[N], pause_us[N], act_us[N];
        const char *args[] = { NULL };
        Root *root = NULL;
        Probe probe;
        Workload w;

        ksm_guard_acquire();
        if (!inject_supported()) {
                fprintf(stderr, "SKIP: injection needs x86-64\n");
                return 77;
        }
        if (root_open(NULL, &root) < 0 || probe_run(root, &probe) < 0)
                return 1;
        if (workload_spawn(&w, "KSM_INJECT_TARGET", args, true) < 0) {
                fprintf(stderr, "cannot start the target ($KSM_INJECT_TARGET)\n");
                return 1;
        }

        /* Peer 1: the process does it itself. */
        for (int i = 0; i < N; i++) {
                uint64_t t = ns_now();
                (void) prctl(PR_SET_MEMORY_MERGE, i & 1 ? 0 : 1, 0, 0, 0);
                self_ns[i] = ns_now() - t;
        }
        (void) prctl(PR_SET_MEMORY_MERGE, 0, 0, 0, 0);

        /* Peer 2: a bare ptrace stop of the target's main thread. */
        for (int i = 0; i < N; i++) {
                int st;
                uint64_t t = now_usec(CLOCK_MONOTONIC);
                if (ptrace(PTRACE_SEIZE, w.pid, NULL, NULL) < 0 || ptrace(PTRACE_INTERRUPT, w.pid, NULL, NULL) < 0 ||
                    waitpid(w.pid, &st, __WALL) != w.pid || ptrace(PTRACE_DETACH, w.pid, NULL, NULL) < 0) {
                        fprintf(stderr, "bare ptrace stop failed: %m\n");
                        return 1;
                }
                bare_us[i] = now_usec(CLOCK_MONOTONIC) - t;
        }

        /* inject_syscalls() alone, then the whole actuator. */
        int pidfd = sys_pidfd_open(w.pid, 0);
        for (int i = 0; i < N; i++) {
                InjectSyscall call = { .nr = SYS_prctl, .args = { PR_SET_MEMORY_MERGE, (uint64_t) !(i & 1) } };
                InjectStats s;
                int r = inject_syscalls(root, pidfd, w.pid, &call, 1, NULL, &s);
                if (r < 0 || call.ret != 0) {
                        fprintf(stderr, "injection %d failed: %d/%ld %s\n", i, r, call.ret, s.reason);
                        return 1;
                }
                inj_us[i] = s.total_usec;
                pause_us[i] = s.pause_usec;
        }
        close(pidfd);
        MergeContext c = { .root = root, .probe = &probe };
        int dfd;
        ProcStat st;
        if (root_open_pid_dir(root, w.pid, &dfd) < 0 || procfs_read_stat(dfd, &st) < 0)
                return 1;
        close(dfd);
        for (int i = 0; i < N; i++) {
                ProcessAction a = { .pid = w.pid, .start_time_ticks = st.start_time_ticks,
                                    .action = i & 1 ? MERGE_ACTION_DISABLE : MERGE_ACTION_ENABLE,
                                    .method = MERGE_METHOD_INJECT };
                MergeOutcome o;
                if (merge_apply_one(&c, &a, &o) < 0 || o.kind != MERGE_OUTCOME_DONE) {
                        fprintf(stderr, "action %d: %s\n", i, o.text);
                        return 1;
                }
                act_us[i] = o.duration_usec;
        }

        char line[256];
        unsigned long errors = 1;
        if (workload_command(&w, "report", line, sizeof line, 5000) == 0)
                (void) sscanf(line, "report errors=%lu", &errors);
        int rc = workload_stop(&w);

        Stat self = stat_of(self_ns, N), bare = stat_of(bare_us, N), inj = stat_of(inj_us, N),
             pause = stat_of(pause_us, N), act = stat_of(act_us, N);
        printf("PR_SET_MEMORY_MERGE toggles, n=%d each, on %s:\n", N, probe.kernel_release);
        printf("  %-34s median %7.1f us  p99 %7.1f us\n", "in-process prctl (ksmctl exec):", self.median / 1e3,
               self.p99 / 1e3);
        printf("  %-34s median %7" PRIu64 " us  p99 %7" PRIu64 " us  max %" PRIu64 " us\n", "bare ptrace stop:",
               bare.median, bare.p99, bare.max);
        printf("  %-34s median %7" PRIu64 " us  p99 %7" PRIu64 " us  max %" PRIu64 " us\n", "target paused by inject:",
               pause.median, pause.p99, pause.max);
        printf("  %-34s median %7" PRIu64 " us  p99 %7" PRIu64 " us\n", "inject_syscalls() in all:", inj.median,
               inj.p99);
        printf("  %-34s median %7" PRIu64 " us  p99 %7" PRIu64 " us\n", "merge actuator action in all:", act.median,
               act.p99);
        printf("  pause / bare stop: %.1fx; actuator / in-process prctl: %.0fx\n",
               bare.median ? (double) pause.median / (double) bare.median : 0.0,
               self.median ? (double) act.median * 1e3 / (double) self.median : 0.0);
        printf("  target self-checks: %lu errors, exit %d\n", errors, rc);
        root_free(root);
        ksm_guard_restore();
        if (errors || rc) {
                printf("FAIL: the target noticed\n");
                return 1;
        }
        printf("PASS\n");
        return 0;
}
