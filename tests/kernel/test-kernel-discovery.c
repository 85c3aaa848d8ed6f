/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Process discovery and classification against this machine's real kernel:
 * proc connector events, a real child cgroup under the v2 mount, a storm of
 * short-lived processes, and a process whose mmap_lock is kept busy. None of
 * it touches a KSM knob, so it does not take the KSM test lock; it removes
 * every process and cgroup it creates, on failure and on signals too. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "discovery.h"
#include "log.h"
#include "root.h"
#include "util.h"

static Root *root;
static sd_event *event;
static char cgroup_dir[4096];   /* our test cgroup, absolute */
static char cgroup_name[128];   /* relative to the v2 root */
static char policy_dir[] = "/tmp/ksmtuned2-discovery.XXXXXX";
static pid_t children[64];
static int children_stdin[64]; /* our end of each child's stdin */
static size_t n_children;

static void track(pid_t pid, int fd) {
        if (n_children < ELEMENTSOF(children)) {
                children_stdin[n_children] = fd;
                children[n_children++] = pid;
        }
}

static void untrack(pid_t pid) {
        for (size_t i = 0; i < n_children; i++)
                if (children[i] == pid) {
                        children_stdin[i] = children_stdin[n_children - 1];
                        children[i] = children[--n_children];
                        return;
                }
}

static void reap(pid_t pid) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        for (size_t i = 0; i < n_children; i++)
                if (children[i] == pid) {
                        close(children_stdin[i]);
                        children_stdin[i] = children_stdin[n_children - 1];
                        children[i] = children[--n_children];
                        break;
                }
}

static pid_t main_pid;

static void cleanup(void) {
        if (getpid() != main_pid)
                return; /* a forked child that went through exit() */
        for (size_t i = 0; i < n_children; i++) {
                kill(children[i], SIGKILL);
                waitpid(children[i], NULL, 0);
                if (children_stdin[i] >= 0)
                        close(children_stdin[i]);
        }
        n_children = 0;
        if (cgroup_dir[0] && rmdir(cgroup_dir) >= 0)
                cgroup_dir[0] = 0;
        if (policy_dir[0] == '/' && !strstr(policy_dir, "XXXXXX")) {
                char p[512];
                const char *files[] = { "50-test.policy", "40-contender.policy" };
                for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                        snprintf(p, sizeof p, "%s/%s", policy_dir, files[i]);
                        (void) unlink(p);
                }
                (void) rmdir(policy_dir);
        }
}

static void on_fatal(int sig) {
        cleanup();
        signal(sig, SIG_DFL);
        raise(sig);
}

/* Forks a child that joins our cgroup, waits for a byte on a pipe and then
 * execs argv with that pipe as its stdin (EOF when the test reaps it).
 * Returns the pid; write a byte to *ret_go_fd to let it exec. */
static pid_t spawn_in_cgroup(char *const argv[], int *ret_go_fd) {
        int go[2];
        assert_int_equal(pipe2(go, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                char procs[4200], c;
                snprintf(procs, sizeof procs, "%s/cgroup.procs", cgroup_dir);
                int fd = open(procs, O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, "0", 1) != 1)
                        _exit(120);
                close(fd);
                if (read(go[0], &c, 1) != 1)
                        _exit(121);
                int devnull = open("/dev/null", O_RDWR);
                dup2(go[0], 0);
                dup2(devnull, 1);
                execv(argv[0], argv);
                _exit(127);
        }
        close(go[0]);
        track(pid, go[1]);
        *ret_go_fd = go[1];
        return pid;
}

static void run_loop_for(uint64_t usec) {
        uint64_t end = now_usec(CLOCK_MONOTONIC) + usec;
        for (uint64_t now; (now = now_usec(CLOCK_MONOTONIC)) < end;)
                assert_true(sd_event_run(event, end - now) >= 0);
}

/* Runs the loop until pred holds, at most timeout_usec; returns elapsed usec or 0. */
static uint64_t run_loop_until(bool (*pred)(Discovery *d, void *u), Discovery *d, void *u, uint64_t timeout_usec) {
        uint64_t start = now_usec(CLOCK_MONOTONIC), end = start + timeout_usec;
        for (uint64_t now; (now = now_usec(CLOCK_MONOTONIC)) < end;) {
                if (pred(d, u))
                        return MAX(now - start, (uint64_t) 1);
                assert_true(sd_event_run(event, MIN(end - now, 20 * USEC_PER_MSEC)) >= 0);
        }
        return pred(d, u) ? timeout_usec : 0;
}

static void write_policy(const char *name, const char *text) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", policy_dir, name);
        FILE *f = fopen(p, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static Discovery *new_discovery(const DiscoveryOptions *o) {
        Discovery *d = NULL;
        ConfDiag diag = {};
        char *dirs[] = { policy_dir, NULL };
        assert_int_equal(discovery_new(event, root, o, &d), 0);
        assert_int_equal(discovery_load_policies(d, dirs, &diag), 0);
        for (size_t i = 0; i < diag.n; i++)
                print_message("policy: %s\n", diag.lines[i]);
        assert_int_equal(diag.n, 0);
        conf_diag_free(&diag);
        assert_int_equal(discovery_start(d), 0);
        return d;
}

typedef struct Want {
        pid_t pid;
        const char *comm;
} Want;

static bool has_verdict(Discovery *d, void *u) {
        const Want *w = u;
        Process *p = process_table_get(discovery_processes(d), w->pid);
        return p && p->have_verdict && streq(p->comm, w->comm);
}

static bool is_gone(Discovery *d, void *u) {
        return !process_table_get(discovery_processes(d), *(pid_t *) u);
}

/* The counts and sums discovery keeps as processes change agree with a
 * walk of its table, after whatever the test did. */
static void assert_index_ok(Discovery *d) {
        char why[256];
        const char *wrong = discovery_verify_index(d, why, sizeof why);
        if (wrong)
                fail_msg("discovery's incremental counts: %s", wrong);
}

static void test_exec_in_cgroup_then_exit(void **state) {
        char policy[512];
        snprintf(policy, sizeof policy, "[Match]\nCgroup=%s\nComm=sleep\n[Merge]\nMode=always\nMethod=inject\n",
                 cgroup_name);
        write_policy("50-test.policy", policy);
        Discovery *d = new_discovery(NULL);
        DiscoveryStatus st;
        discovery_get_status(d, &st);
        print_message("discovery mode: %s (%s), %" PRIu64 " processes in the initial scan\n",
                      discovery_mode_to_string(st.mode), st.mode_reason, st.processes);
        /* This machine has the connector and we are root in the init namespaces. */
        assert_int_equal(st.mode, DISCOVERY_EVENTS);
        assert_int_equal(st.full_scans, 1);

        int go;
        pid_t pid = spawn_in_cgroup((char *[]) { "/bin/sleep", "30", NULL }, &go);
        /* Until it execs it is a fork of this test, in our cgroup. */
        Want before = { pid, "test-kernel-dis" };
        assert_true(run_loop_until(has_verdict, d, &before, 2 * USEC_PER_SEC) > 0);
        Process *p = process_table_get(discovery_processes(d), pid);
        assert_int_equal(p->verdict.action, VERDICT_LEAVE_ALONE);

        uint64_t lat[8];
        size_t n0 = discovery_exec_latencies(d, lat, ELEMENTSOF(lat));
        assert_int_equal(write(go, "x", 1), 1);
        Want after = { pid, "sleep" };
        uint64_t t = run_loop_until(has_verdict, d, &after, 2 * USEC_PER_SEC);
        assert_true(t > 0);
        p = process_table_get(discovery_processes(d), pid);
        assert_string_equal(p->cgroup, cgroup_name);
        assert_string_equal(p->exe, "/usr/bin/sleep");
        assert_int_equal(p->verdict.action, VERDICT_MERGE);
        assert_true(p->verdict.always);
        assert_int_equal(p->verdict.method, MERGE_METHOD_INJECT);
        assert_non_null(strstr(p->verdict.policy_file, "50-test.policy"));
        assert_int_equal(p->verdict.policy_line, 1);
        /* from the exec event, not from a scan */
        discovery_get_status(d, &st);
        assert_int_equal(st.full_scans, 1);
        assert_true(discovery_exec_latencies(d, lat, ELEMENTSOF(lat)) > n0 || n0 == ELEMENTSOF(lat));
        print_message("exec to verdict: %" PRIu64 " us (event timestamp to verdict); test saw it after %" PRIu64 " us\n",
                      lat[MIN(n0, ELEMENTSOF(lat) - 1)], t);

        /* The plan asks for merging: the process is not merging yet. */
        Plan plan = {};
        assert_int_equal(discovery_tick(d, &plan), 0);
        run_loop_for(300 * USEC_PER_MSEC); /* ksm_stat comes back from the reader */
        plan_done(&plan);
        assert_int_equal(discovery_tick(d, &plan), 0);
        p = process_table_get(discovery_processes(d), pid);
        assert_true(p->ksm_stat_valid);
        assert_int_equal(process_merging_enabled(p), 0);
        bool found = false;
        for (size_t i = 0; i < plan.n_actions; i++)
                if (plan.actions[i].pid == pid) {
                        found = true;
                        assert_int_equal(plan.actions[i].action, MERGE_ACTION_ENABLE);
                        assert_int_equal(plan.actions[i].method, MERGE_METHOD_INJECT);
                        assert_int_equal(plan.actions[i].start_time_ticks, p->start_time_ticks);
                        assert_non_null(strstr(plan.actions[i].reason, "50-test.policy:1: Mode=always"));
                }
        assert_true(found);
        plan_done(&plan);
        /* not asked again right away */
        assert_int_equal(discovery_tick(d, &plan), 0);
        for (size_t i = 0; i < plan.n_actions; i++)
                assert_int_not_equal(plan.actions[i].pid, pid);
        plan_done(&plan);

        /* An exiting process leaves the model from its exit event. */
        kill(pid, SIGTERM);
        assert_true(run_loop_until(is_gone, d, &pid, 2 * USEC_PER_SEC) > 0);
        reap(pid);
        discovery_get_status(d, &st);
        assert_int_equal(st.full_scans, 1);
        assert_index_ok(d);
        discovery_free(d);
}

static bool cmdline_classified(Discovery *d, void *u) {
        Process *p = process_table_get(discovery_processes(d), *(pid_t *) u);
        return p && p->cmdline_read && p->have_verdict && p->verdict.action != VERDICT_WAIT;
}

/* Cmdline= waits for the off-loop read of /proc/PID/cmdline, then decides. */
static void test_cmdline_match(void **state) {
        char policy[512];
        snprintf(policy, sizeof policy, "[Match]\nCgroup=%s\nCmdline=/bin/sleep 3?\n[Merge]\nMode=always\n",
                 cgroup_name);
        write_policy("50-test.policy", policy);
        Discovery *d = new_discovery(NULL);
        int go;
        pid_t yes = spawn_in_cgroup((char *[]) { "/bin/sleep", "33", NULL }, &go);
        assert_int_equal(write(go, "x", 1), 1);
        pid_t no = spawn_in_cgroup((char *[]) { "/bin/sleep", "44", NULL }, &go);
        assert_int_equal(write(go, "x", 1), 1);
        assert_true(run_loop_until(cmdline_classified, d, &yes, 2 * USEC_PER_SEC) > 0);
        assert_true(run_loop_until(cmdline_classified, d, &no, 2 * USEC_PER_SEC) > 0);
        Process *p = process_table_get(discovery_processes(d), yes);
        assert_string_equal(p->cmdline, "/bin/sleep 33");
        assert_int_equal(p->verdict.action, VERDICT_MERGE);
        p = process_table_get(discovery_processes(d), no);
        assert_string_equal(p->cmdline, "/bin/sleep 44");
        assert_int_equal(p->verdict.action, VERDICT_LEAVE_ALONE);
        reap(yes);
        reap(no);
        assert_index_ok(d);
        discovery_free(d);
}

typedef struct Storm {
        pid_t *pids;
        size_t n;
} Storm;

static bool storm_clean(Discovery *d, void *u) {
        const Storm *s = u;
        for (size_t i = 0; i < s->n; i++)
                if (process_table_get(discovery_processes(d), s->pids[i]))
                        return false;
        return true;
}

static void test_storm_leaves_no_stale_entries(void **state) {
        Discovery *d = new_discovery(NULL);
        enum { N = 2000 };
        Storm s = { .pids = calloc(N, sizeof(pid_t)) };
        assert_non_null(s.pids);

        /* Children that exec /bin/true and exit, 50 at a time, while the
         * loop runs in between: events interleave with the work. */
        for (size_t i = 0; i < N; i += 50) {
                for (size_t k = i; k < i + 50; k++) {
                        pid_t pid = fork();
                        assert_true(pid >= 0);
                        if (pid == 0) {
                                execl("/bin/true", "true", NULL);
                                _exit(127);
                        }
                        s.pids[s.n++] = pid;
                }
                for (size_t k = i; k < i + 50; k++)
                        waitpid(s.pids[k], NULL, 0);
                assert_true(sd_event_run(event, 0) >= 0);
        }
        assert_true(run_loop_until(storm_clean, d, &s, 3 * USEC_PER_SEC) > 0);

        /* Nothing in the model that /proc does not have either. A process
         * of someone else that exited during this walk is fine once its
         * exit event has been read, so look again after a short run. */
        Process *p;
        pid_t gone[256];
        size_t n_gone = 0, stale = 0;
        PROCESS_TABLE_FOREACH(p, discovery_processes(d), i) {
                char path[64];
                snprintf(path, sizeof path, "/proc/%d/stat", p->pid);
                if (access(path, F_OK) < 0 && n_gone < ELEMENTSOF(gone))
                        gone[n_gone++] = p->pid;
        }
        run_loop_for(100 * USEC_PER_MSEC);
        for (size_t i = 0; i < n_gone; i++)
                if ((p = process_table_get(discovery_processes(d), gone[i]))) {
                        print_message("stale: pid %d (%s) ppid %d, facts %" PRIu64 " ms ago, discovered %" PRIu64
                                      " ms ago\n",
                                      (int) gone[i], p->comm, p->ppid,
                                      (now_usec(CLOCK_MONOTONIC) - p->facts_usec) / USEC_PER_MSEC,
                                      (now_usec(CLOCK_MONOTONIC) - p->discovered_usec) / USEC_PER_MSEC);
                        stale++;
                }
        DiscoveryStatus st;
        discovery_get_status(d, &st);
        print_message("storm: %d processes, %" PRIu64 " events in %" PRIu64 " datagrams, %" PRIu64
                      " overflows, %" PRIu64 " full scans, %" PRIu64 " in the model after\n",
                      N, st.events.events, st.events.datagrams, st.events.overflows, st.full_scans, st.processes);
        assert_int_equal(stale, 0);
        assert_true(st.events.events >= 3 * (uint64_t) N || st.events.overflows > 0);
        free(s.pids);
        assert_index_ok(d);
        discovery_free(d);
}

/* Events lost to a full socket buffer (ENOBUFS) are noticed and answered
 * with a rescan, after which the model again matches /proc. */
static void test_overflow_resyncs(void **state) {
        /* 4 KiB (the kernel doubles it, to 8 KiB) holds a handful of events. */
        DiscoveryOptions o = { .events_rcvbuf_bytes = 4096 };
        Discovery *d = new_discovery(&o);
        enum { N = 300 };
        Storm s = { .pids = calloc(N, sizeof(pid_t)) };
        assert_non_null(s.pids);

        /* Not running the loop meanwhile: the socket must overflow. */
        for (size_t i = 0; i < N; i++) {
                pid_t pid = fork();
                assert_true(pid >= 0);
                if (pid == 0)
                        _exit(0);
                s.pids[s.n++] = pid;
                waitpid(pid, NULL, 0);
        }
        /* A process that lives on, forked while events are being lost. */
        int go;
        pid_t survivor = spawn_in_cgroup((char *[]) { "/bin/sleep", "30", NULL }, &go);
        assert_int_equal(write(go, "x", 1), 1);
        usleep(100 * 1000);
        for (size_t i = 0; i < N; i++) {
                pid_t pid = fork();
                if (pid == 0)
                        _exit(0);
                waitpid(pid, NULL, 0);
        }
        run_loop_for(300 * USEC_PER_MSEC);

        DiscoveryStatus st;
        discovery_get_status(d, &st);
        print_message("overflow: %" PRIu64 " ENOBUFS, %" PRIu64 " events read, %" PRIu64 " rescans for it, %" PRIu64
                      " full scans\n",
                      st.events.overflows, st.events.events, st.overflow_resyncs, st.full_scans);
        assert_true(st.events.overflows >= 1);
        assert_true(st.overflow_resyncs >= 1);
        assert_true(st.full_scans >= 2);
        assert_true(storm_clean(d, &s));
        Want w = { survivor, "sleep" };
        assert_true(has_verdict(d, &w));
        reap(survivor);
        free(s.pids);
        assert_index_ok(d);
        discovery_free(d);
}

/* The periodic resync runs in slices on the loop and sweeps what is gone
 * without an exit event (here: an entry for a pid that cannot exist). */
static void test_sliced_resync_sweeps(void **state) {
        DiscoveryOptions o = { .resync_interval_usec = 100 * USEC_PER_MSEC };
        Discovery *d = new_discovery(&o);
        Process *fake;
        /* above any pid_max the kernel allows (2^22) */
        const int ghost = (1 << 22) + 7;
        assert_int_equal(process_table_ensure((ProcessTable *) discovery_processes(d), ghost, &fake, NULL), 0);
        strscpy(fake->comm, sizeof fake->comm, "ghost");
        DiscoveryStatus st;
        discovery_get_status(d, &st);
        uint64_t scans = st.full_scans, n = st.processes;
        usleep(150 * 1000);
        assert_int_equal(discovery_tick(d, NULL), 0);
        /* the tick only started it: the slices run from the loop */
        assert_non_null(process_table_get(discovery_processes(d), ghost));
        run_loop_for(300 * USEC_PER_MSEC);
        discovery_get_status(d, &st);
        print_message("sliced resync: %" PRIu64 " processes, took %" PRIu64 " us\n", n, st.last_scan_usec);
        assert_int_equal(st.full_scans, scans + 1);
        assert_null(process_table_get(discovery_processes(d), ghost));
        assert_index_ok(d);
        discovery_free(d);
}

static void *linger(void *arg) {
        usleep(700 * 1000);
        _exit(0); /* not exit(): the test's atexit handlers are not this process's */
}

/* Zombies never enter the model (their reaping sends no event), and a
 * process whose main thread exited first leaves it with its last thread. */
static void test_zombies_leave_no_entries(void **state) {
        pid_t zombie = fork();
        assert_true(zombie >= 0);
        if (zombie == 0)
                _exit(0);
        track(zombie, -1);
        usleep(100 * 1000); /* exited, not reaped */

        pid_t leader = fork();
        assert_true(leader >= 0);
        if (leader == 0) {
                pthread_t t;
                if (pthread_create(&t, NULL, linger, NULL) != 0)
                        _exit(1);
                pthread_exit(NULL);
        }
        track(leader, -1);
        usleep(100 * 1000); /* main thread gone, the other lingers */

        DiscoveryOptions o = { .resync_interval_usec = 50 * USEC_PER_MSEC };
        Discovery *d = new_discovery(&o);
        assert_null(process_table_get(discovery_processes(d), zombie));
        Process *p = process_table_get(discovery_processes(d), leader);
        assert_non_null(p);
        assert_true(p->zombie_leader);
        reap(zombie);

        /* the lingering thread exits: only its (tid != pid) exit event says so */
        assert_true(run_loop_until(is_gone, d, &leader, 2 * USEC_PER_SEC) > 0);
        int status;
        assert_int_equal(waitpid(leader, &status, 0), leader);
        untrack(leader);
        assert_index_ok(d);
        discovery_free(d);
}

/* Polling (the fallback): each tick starts a sliced scan; new processes
 * appear and gone ones leave without any event. */
static void test_polling_fallback(void **state) {
        char policy[512];
        snprintf(policy, sizeof policy, "[Match]\nCgroup=%s\n[Merge]\nMode=always\n", cgroup_name);
        write_policy("50-test.policy", policy);
        DiscoveryOptions o = { .force_polling = true };
        Discovery *d = new_discovery(&o);
        DiscoveryStatus st;
        discovery_get_status(d, &st);
        assert_int_equal(st.mode, DISCOVERY_POLLING);
        assert_string_equal(st.mode_reason, "polling requested");

        int go;
        pid_t pid = spawn_in_cgroup((char *[]) { "/bin/sleep", "30", NULL }, &go);
        assert_int_equal(write(go, "x", 1), 1);
        usleep(100 * 1000);
        run_loop_for(100 * USEC_PER_MSEC);
        assert_null(process_table_get(discovery_processes(d), pid)); /* no events: not seen yet */
        assert_int_equal(discovery_tick(d, NULL), 0);
        Want w = { pid, "sleep" };
        assert_true(run_loop_until(has_verdict, d, &w, 2 * USEC_PER_SEC) > 0);
        assert_int_equal(process_table_get(discovery_processes(d), pid)->verdict.action, VERDICT_MERGE);

        reap(pid);
        assert_int_equal(discovery_tick(d, NULL), 0);
        assert_true(run_loop_until(is_gone, d, &pid, 2 * USEC_PER_SEC) > 0);
        assert_index_ok(d);
        discovery_free(d);
}

/* In a PID namespace the kernel accepts the connector's LISTEN and then
 * sends nothing: the self-test notices, and discovery polls /proc instead,
 * saying why. */
static void test_pid_namespace_falls_back_to_polling(void **state) {
        pid_t outer = fork();
        assert_true(outer >= 0);
        if (outer == 0) {
                if (unshare(CLONE_NEWPID) < 0)
                        _exit(77);
                pid_t inner = fork();
                if (inner < 0)
                        _exit(10);
                if (inner == 0) {
                        /* pid 1 of the new namespace, still reading the host's /proc */
                        sd_event *e = NULL;
                        Discovery *d = NULL;
                        DiscoveryOptions o = { .self_test_timeout_usec = 300 * USEC_PER_MSEC };
                        DiscoveryStatus st;
                        if (sd_event_new(&e) < 0 || discovery_new(e, root, &o, &d) < 0 || discovery_start(d) < 0)
                                _exit(11);
                        discovery_get_status(d, &st);
                        fprintf(stderr, "in a PID namespace: mode %s: %s; %" PRIu64 " processes\n",
                                discovery_mode_to_string(st.mode), st.mode_reason, st.processes);
                        if (st.mode != DISCOVERY_POLLING)
                                _exit(12);
                        if (!strstr(st.mode_reason, "no proc event for a test child"))
                                _exit(13);
                        if (st.processes < 10)
                                _exit(14);
                        _exit(0);
                }
                int status;
                if (waitpid(inner, &status, 0) < 0)
                        _exit(15);
                _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 16);
        }
        track(outer, -1);
        int status;
        assert_int_equal(waitpid(outer, &status, 0), outer);
        untrack(outer);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77)
                skip();
        assert_int_equal(WEXITSTATUS(status), 0);
}

typedef struct Contended {
        pid_t contender;
        pid_t *victims;
        size_t n_victims;
} Contended;

static bool contender_slow(Discovery *d, void *u) {
        const Contended *c = u;
        Process *p = process_table_get(discovery_processes(d), c->contender);
        return p && p->slow;
}

static bool victims_read(Discovery *d, void *u) {
        const Contended *c = u;
        for (size_t i = 0; i < c->n_victims; i++) {
                Process *p = process_table_get(discovery_processes(d), c->victims[i]);
                if (!p || !p->ksm_stat_valid)
                        return false;
        }
        return true;
}

static void test_contended_process_does_not_stall_others(void **state) {
        const char *dir = getenv("KSM_WORKLOAD_DIR");
        char helper[512];
        assert_non_null(dir);
        snprintf(helper, sizeof helper, "%s/mmap-contender", dir);

        char policy[512];
        snprintf(policy, sizeof policy, "[Match]\nCgroup=%s\n[Merge]\nMode=auto\n", cgroup_name);
        write_policy("50-test.policy", policy);
        /* The deadline is short here so the test is quick; the daemon's is 1 s. */
        DiscoveryOptions o = { .mm_read_deadline_usec = 50 * USEC_PER_MSEC, .mm_read_threads = 4 };
        Discovery *d = new_discovery(&o);

        /* Four threads looping mmap(512 MiB, MAP_POPULATE) + munmap: on this
         * 2-core 6.18 machine a ksm_stat read of it takes 0.3 s median and
         * up to 3 s, queued behind the writers (measured by hand with the
         * same helper). */
        int go;
        Contended c = {};
        c.contender = spawn_in_cgroup((char *[]) { helper, "--threads", "4", "--mib", "512", "--mode", "churn", NULL },
                                      &go);
        assert_int_equal(write(go, "x", 1), 1);
        pid_t victims[8];
        for (size_t i = 0; i < ELEMENTSOF(victims); i++) {
                victims[i] = spawn_in_cgroup((char *[]) { "/bin/sleep", "60", NULL }, &go);
                assert_int_equal(write(go, "x", 1), 1);
        }
        c.victims = victims;
        c.n_victims = ELEMENTSOF(victims);
        run_loop_for(500 * USEC_PER_MSEC); /* exec events in, contender's threads running */

        /* Every tick queues ksm_stat for all of them. The contender's read
         * overruns and marks it slow; the others come back regardless. */
        uint64_t t_slow = 0, t_victims = 0;
        for (int tick = 0; tick < 10 && !(t_slow && t_victims); tick++) {
                assert_int_equal(discovery_tick(d, NULL), 0);
                uint64_t t0 = now_usec(CLOCK_MONOTONIC);
                if (!t_victims && run_loop_until(victims_read, d, &c, 1 * USEC_PER_SEC))
                        t_victims = now_usec(CLOCK_MONOTONIC) - t0;
                if (!t_slow && run_loop_until(contender_slow, d, &c, 1 * USEC_PER_SEC))
                        t_slow = now_usec(CLOCK_MONOTONIC) - t0;
        }
        DiscoveryStatus st;
        discovery_get_status(d, &st);
        print_message("contended: contender marked slow after %" PRIu64 " ms, %zu victims read in %" PRIu64
                      " ms; reads: %" PRIu64 " queued, %" PRIu64 " done, %" PRIu64 " overran, %" PRIu64
                      " workers started\n",
                      t_slow / USEC_PER_MSEC, c.n_victims, t_victims / USEC_PER_MSEC, st.mm_reads.queued,
                      st.mm_reads.completed, st.mm_reads.overran, st.mm_reads.threads);
        assert_true(t_slow > 0);
        assert_true(t_victims > 0);
        assert_true(st.slow_processes >= 1);

        /* While its read is stuck, a new exec is still classified at once
         * (facts come from lock-free files on the loop). */
        pid_t late = spawn_in_cgroup((char *[]) { "/bin/sleep", "61", NULL }, &go);
        assert_int_equal(write(go, "x", 1), 1);
        Want w = { late, "sleep" };
        uint64_t t = run_loop_until(has_verdict, d, &w, 2 * USEC_PER_SEC);
        print_message("contended: a new exec classified after %" PRIu64 " ms\n", t / USEC_PER_MSEC);
        assert_true(t > 0);
        Process *p = process_table_get(discovery_processes(d), late);
        assert_int_equal(p->verdict.action, VERDICT_MERGE);
        /* and the contender itself was classified too, without ksm_stat */
        p = process_table_get(discovery_processes(d), c.contender);
        assert_non_null(p);
        assert_int_equal(p->verdict.action, VERDICT_MERGE);

        reap(c.contender);
        for (size_t i = 0; i < ELEMENTSOF(victims); i++)
                reap(victims[i]);
        reap(late);
        assert_index_ok(d);
        discovery_free(d);
}

static int setup(void **state) {
        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: needs root (proc connector, cgroups)\n");
                exit(77);
        }
        assert_int_equal(root_open(NULL, &root), 0);
        if (!root->cgroup2_path) {
                fprintf(stderr, "SKIP: no cgroup2 mount\n");
                exit(77);
        }
        main_pid = getpid();
        umask(022); /* policy files others may write are rejected */
        atexit(cleanup);
        int sigs[] = { SIGINT, SIGTERM, SIGALRM, SIGABRT, SIGSEGV, SIGBUS, SIGHUP };
        for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
                signal(sigs[i], on_fatal);
        snprintf(cgroup_name, sizeof cgroup_name, "ksmtuned2-test-%d", (int) getpid());
        snprintf(cgroup_dir, sizeof cgroup_dir, "%s/%s", root->cgroup2_path, cgroup_name);
        if (mkdir(cgroup_dir, 0755) < 0) {
                fprintf(stderr, "SKIP: cannot create %s: %m\n", cgroup_dir);
                cgroup_dir[0] = 0;
                exit(77);
        }
        assert_non_null(mkdtemp(policy_dir));
        assert_true(sd_event_new(&event) >= 0);
        log_set_max_level(LOG_NOTICE);
        return 0;
}

static int teardown(void **state) {
        cleanup();
        sd_event_unref(event);
        root_free(root);
        return 0;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_exec_in_cgroup_then_exit),
                cmocka_unit_test(test_cmdline_match),
                cmocka_unit_test(test_storm_leaves_no_stale_entries),
                cmocka_unit_test(test_overflow_resyncs),
                cmocka_unit_test(test_sliced_resync_sweeps),
                cmocka_unit_test(test_polling_fallback),
                cmocka_unit_test(test_zombies_leave_no_entries),
                cmocka_unit_test(test_pid_namespace_falls_back_to_polling),
                cmocka_unit_test(test_contended_process_does_not_stall_others),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
