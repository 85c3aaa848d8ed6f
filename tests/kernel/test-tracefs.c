/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The private tracefs instance on the real kernel: ksm_enter of our own
 * madvise wakes the pipe, a window sees our own mmap write locks with the
 * right tgid, and the instance is gone after tracer_free(). Where the kernel
 * has kprobe events (the vmkernel guests; not the test machine's 6.18), the
 * seed-001 probes: a stale one of a dead daemon is removed, a window with
 * them armed and filtered to our own pid counts our page faults' VMA read
 * locks, and tracer_free() removes ours. Touches no KSM
 * knob (ksm_enter fires on MADV_MERGEABLE whatever run is), so it does not
 * take the KSM lock. */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "fileio.h"
#include "log.h"
#include "root.h"
#include "syscalls.h"
#include "tracefs.h"
#include "util.h"

typedef struct Seen {
        int child;
        unsigned ksm_enter_child;
        ContentionWindow w;
        bool collect;
} Seen;

/* cmocka's skip() leaves by longjmp: the _cleanup_ of the test's Root
 * would not run, and the sanitizer build reports it as a leak */
#define skip_freeing(root)                      \
        do {                                    \
                (root) = root_free(root);       \
                skip();                         \
        } while (0)

static void on_event(const TraceEvent *e, void *userdata) {
        Seen *s = userdata;
        if (e->type == TRACE_EVENT_KSM_ENTER && (e->tgid == s->child || e->pid == s->child))
                s->ksm_enter_child++;
        if (s->collect)
                contention_window_add(&s->w, e);
}

static int madvise_new_mm(void) {
        /* ksm_enter fires once per mm: do it in a child, which has a new one */
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                void *p = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                _exit(p == MAP_FAILED || madvise(p, 1 << 16, MADV_MERGEABLE) < 0 ? 1 : 0);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        return pid;
}

static bool wait_readable(int fd, int timeout_ms) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

static void test_instance(void **state) {
        _cleanup_(root_freep) Root *root = NULL;
        Tracer *t = NULL;
        bool mounted = false;
        Seen seen = {};
        int r;

        if (geteuid() != 0)
                skip_freeing(root);
        assert_int_equal(root_open(NULL, &root), 0);
        r = tracer_open(root, true, &t, &mounted);
        if (r == -ENOENT || r == -EOPNOTSUPP || r == -EPERM)
                skip_freeing(root);
        if (r < 0)
                fail_msg("tracer_open: %s", strerror(-r));
        char name[64];
        strscpy(name, sizeof name, tracer_name(t));
        assert_true(faccessat(root->tracefs_fd, name, F_OK, 0) >= 0);

        /* a new mm entering KSM wakes the pipe */
        (void) tracer_read(t, 1 << 20, on_event, &seen);
        seen.child = madvise_new_mm();
        assert_true(wait_readable(tracer_fd(t), 2000));
        assert_true(tracer_read(t, 1 << 20, on_event, &seen) > 0);
        assert_int_equal(seen.ksm_enter_child, 1);

        if (tracer_has_mmap_lock_events(t)) {
                /* A window sees our own mmap write locks. It traces every
                 * task's write locks, so on a busy machine the ring may
                 * fill before it is read: then the window says so
                 * (lost_events, which the daemon acts on) and another one
                 * is tried; one that lost nothing must have all of ours. */
                bool found = false;
                uint64_t lost = 0;
                for (int attempt = 0; attempt < 5 && !found; attempt++) {
                        contention_window_init(&seen.w, 1);
                        seen.collect = true;
                        assert_int_equal(tracer_window_start(t, 1, -1, false), 0);
                        for (int i = 0; i < 100; i++) {
                                void *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                                               0);
                                assert_true(p != MAP_FAILED);
                                munmap(p, 1 << 20);
                        }
                        assert_int_equal(tracer_window_stop(t), 0);
                        assert_true(tracer_read_window(t, 8 << 20, on_event, &seen) > 0);
                        seen.collect = false;
                        for (size_t i = 0; i < seen.w.n_holders; i++)
                                if (seen.w.holders[i].tgid == getpid() && seen.w.holders[i].write_locks >= 100) {
                                        found = true;
                                        assert_true(seen.w.holders[i].write_hold_nsec > 0);
                                }
                        if (!found && seen.w.lost_events == 0)
                                fail_msg("a window that lost no events did not see our 100 write locks "
                                         "(%" PRIu64 " events, %zu holders, %" PRIu64 " holders dropped)",
                                         seen.w.events, seen.w.n_holders, seen.w.dropped_holders);
                        lost += seen.w.lost_events;
                }
                if (!found)
                        fail_msg("5 windows in a row lost events (%" PRIu64 " in all): the machine is too busy", lost);

                /* Between windows the events are off (every mmap lock
                 * call on the host would pay for them): our write locks
                 * now are in no window. */
                char enable[160];
                _cleanup_free_ char *v = NULL;
                snprintf(enable, sizeof enable, "%s-locks/events/mmap_lock/mmap_lock_released/enable", name);
                assert_int_equal(read_one_line_at(root->tracefs_fd, enable, &v), 0);
                assert_string_equal(v, "0");
                for (int i = 0; i < 100; i++) {
                        void *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                        assert_true(p != MAP_FAILED);
                        munmap(p, 1 << 20);
                }
                contention_window_init(&seen.w, 1);
                seen.collect = true;
                unsigned switches0, switches;
                (void) tracer_switch_nsec(t, &switches0);
                assert_int_equal(tracer_window_start(t, 1, -1, false), 0);
                /* in a window they are on */
                free(v);
                v = NULL;
                assert_int_equal(read_one_line_at(root->tracefs_fd, enable, &v), 0);
                assert_string_equal(v, "1");
                assert_int_equal(tracer_window_stop(t), 0);
                (void) tracer_read_window(t, 8 << 20, on_event, &seen);
                seen.collect = false;
                for (size_t i = 0; i < seen.w.n_holders; i++)
                        if (seen.w.holders[i].tgid == getpid())
                                assert_true(seen.w.holders[i].write_locks <= 1);
                /* and off again, each way one switch timed */
                free(v);
                v = NULL;
                assert_int_equal(read_one_line_at(root->tracefs_fd, enable, &v), 0);
                assert_string_equal(v, "0");
                (void) tracer_switch_nsec(t, &switches);
                assert_int_equal(switches, switches0 + 2);
                /* no trigger of ours anywhere in the windows' instance */
                free(v);
                v = NULL;
                snprintf(enable, sizeof enable, "%s-locks/events/oom/mark_victim/trigger", name);
                if (read_one_line_at(root->tracefs_fd, enable, &v) >= 0)
                        assert_null(strstr(v, "disable_event"));

                /* after a window, the pipe still wakes for ksm_enter */
                seen.child = madvise_new_mm();
                seen.ksm_enter_child = 0;
                assert_true(wait_readable(tracer_fd(t), 2000));
                assert_true(tracer_read(t, 1 << 20, on_event, &seen) > 0);
                assert_int_equal(seen.ksm_enter_child, 1);
        }

        char locks[80];
        snprintf(locks, sizeof locks, "%s-locks", name);
        assert_true(!tracer_has_mmap_lock_events(t) || faccessat(root->tracefs_fd, locks, F_OK, 0) >= 0);
        t = tracer_free(t);
        assert_true(faccessat(root->tracefs_fd, name, F_OK, 0) < 0);
        assert_true(faccessat(root->tracefs_fd, locks, F_OK, 0) < 0);
}

static bool kprobe_listed(int tracefs_fd, const char *group) {
        char buf[16384];
        int fd = openat(tracefs_fd, "kprobe_events", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        assert_true(n >= 0);
        buf[n] = 0;
        return strstr(buf, group) != NULL;
}

static bool kallsyms_has(const char *sym) {
        char line[512];
        bool found = false;
        FILE *f = fopen("/proc/kallsyms", "re");
        if (!f)
                return false;
        while (!found && fgets(line, sizeof line, f)) {
                char *name = strrchr(line, ' ');
                found = name && strncmp(name + 1, sym, strlen(sym)) == 0 && name[1 + strlen(sym)] == '\n';
        }
        fclose(f);
        return found;
}

/* A daemon that was SIGKILLed while another held the plain names leaves
 * "ksmtuned2-PID" and "ksmtuned2-PID-locks" behind: the next start removes
 * both, and leaves a live daemon's alone. */
static void test_stale_instances(void **state) {
        _cleanup_(root_freep) Root *root = NULL;
        Tracer *t = NULL;
        char dead_main[64], dead_locks[80], live[64];
        int r;

        if (geteuid() != 0)
                skip_freeing(root);
        assert_int_equal(root_open(NULL, &root), 0);
        if (root->tracefs_fd < 0)
                skip_freeing(root);
        pid_t dead = fork();
        assert_true(dead >= 0);
        if (dead == 0)
                _exit(0);
        assert_int_equal(waitpid(dead, NULL, 0), dead);
        snprintf(dead_main, sizeof dead_main, "instances/ksmtuned2-%d", (int) dead);
        snprintf(dead_locks, sizeof dead_locks, "%s-locks", dead_main);
        snprintf(live, sizeof live, "instances/ksmtuned2-%d-locks", (int) getppid());
        if (mkdirat(root->tracefs_fd, dead_main, 0700) < 0)
                skip_freeing(root);         /* no instances here */
        assert_int_equal(mkdirat(root->tracefs_fd, dead_locks, 0700), 0);
        /* a daemon of before commit 9fde544 killed in a window: its events
         * held soft by their triggers, one soft-enabled; the instance must
         * go all the same, and with it the registration every mmap lock
         * call on the host pays for */
        char trig[128], en[160];
        snprintf(trig, sizeof trig, "%s/events/oom/mark_victim/trigger", dead_locks);
        snprintf(en, sizeof en, "%s/events/mmap_lock/mmap_lock_released/enable", dead_locks);
        bool soft = write_string_at(root->tracefs_fd, trig, "disable_event:mmap_lock:mmap_lock_released") >= 0 &&
                    write_string_at(root->tracefs_fd, en, "1") >= 0;
        if (!soft)
                print_message("# no soft-mode trigger here: the stale windows' instance holds none\n");
        assert_int_equal(mkdirat(root->tracefs_fd, live, 0700), 0);
        r = tracer_open(root, true, &t, NULL);
        bool live_kept = faccessat(root->tracefs_fd, live, F_OK, 0) >= 0;
        (void) unlinkat(root->tracefs_fd, live, AT_REMOVEDIR);
        if (r == -ENOENT || r == -EOPNOTSUPP || r == -EPERM) {
                (void) unlinkat(root->tracefs_fd, dead_main, AT_REMOVEDIR);
                (void) unlinkat(root->tracefs_fd, dead_locks, AT_REMOVEDIR);
                skip_freeing(root);
        }
        assert_int_equal(r, 0);
        assert_true(faccessat(root->tracefs_fd, dead_main, F_OK, 0) < 0);
        assert_true(faccessat(root->tracefs_fd, dead_locks, F_OK, 0) < 0);
        assert_true(live_kept);
        t = tracer_free(t);
}

static void test_vma_probe(void **state) {
        _cleanup_(root_freep) Root *root = NULL;
        Tracer *t = NULL;
        Seen seen = {};
        char stale[64], ours[64], cmd[128];
        int r;

        if (geteuid() != 0)
                skip_freeing(root);
        assert_int_equal(root_open(NULL, &root), 0);
        r = tracer_open(root, true, &t, NULL);
        if (r == -ENOENT || r == -EOPNOTSUPP || r == -EPERM)
                skip_freeing(root);
        assert_int_equal(r, 0);
        if (faccessat(root->tracefs_fd, "kprobe_events", F_OK, 0) < 0 || !tracer_has_mmap_lock_events(t)) {
                tracer_free(t);
                skip_freeing(root);         /* no kprobe events here (CONFIG_KPROBE_EVENTS=n) */
        }
        t = tracer_free(t);

        /* a probe left by a daemon that was SIGKILLed: its pid is gone */
        pid_t dead = fork();
        assert_true(dead >= 0);
        if (dead == 0)
                _exit(0);
        assert_int_equal(waitpid(dead, NULL, 0), dead);
        snprintf(stale, sizeof stale, "ksmtuned2_%d/", (int) dead);
        snprintf(cmd, sizeof cmd, "p:%s" TRACE_VMA_PROBE_EVENT "0 lock_vma_under_rcu", stale);
        bool planted = kallsyms_has("lock_vma_under_rcu") &&
                       append_string_at(root->tracefs_fd, "kprobe_events", cmd) >= 0;

        assert_int_equal(tracer_open(root, true, &t, NULL), 0);
        if (planted)
                assert_false(kprobe_listed(root->tracefs_fd, stale));
        if (!kallsyms_has("lock_vma_under_rcu")) {
                /* no per-VMA locks on this kernel: nothing to probe */
                t = tracer_free(t);
                skip_freeing(root);
        }
        assert_true(tracer_has_vma_probe(t));
        char syms[96];
        assert_true(tracer_vma_probe_symbols(t, syms, sizeof syms) >= 1);
        assert_non_null(strstr(syms, "lock_vma_under_rcu"));
        snprintf(ours, sizeof ours, "ksmtuned2_%d/", (int) getpid());
        assert_true(kprobe_listed(root->tracefs_fd, ours));

        /* our own page faults, as "ksmd": each takes the VMA's read lock */
        contention_window_init(&seen.w, (int) getpid());
        seen.collect = true;
        assert_int_equal(tracer_window_start(t, (int) getpid(), -1, true), 0);
        assert_true(tracer_window_vma_probe_armed(t));
        contention_window_set_vma_probe(&seen.w, tracer_window_vma_probe_armed(t));
        size_t len = 4 << 20;
        char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        assert_true(p != MAP_FAILED);
        for (size_t off = 0; off < len; off += 4096)
                p[off] = 1;
        munmap(p, len);
        assert_int_equal(tracer_window_stop(t), 0);
        assert_true(tracer_read_window(t, 8 << 20, on_event, &seen) > 0);
        assert_true(seen.w.vma_probe);
        if (seen.w.ksmd_vma_locks == 0 && seen.w.lost_events == 0)
                fail_msg("1024 page faults, no VMA read lock seen by the kprobe on %s", syms);

        /* a window without them leaves them unarmed */
        assert_int_equal(tracer_window_start(t, (int) getpid(), -1, false), 0);
        assert_false(tracer_window_vma_probe_armed(t));
        assert_int_equal(tracer_window_stop(t), 0);

        t = tracer_free(t);
        assert_false(kprobe_listed(root->tracefs_fd, ours));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_instance),
                cmocka_unit_test(test_stale_instances),
                cmocka_unit_test(test_vma_probe),
        };
        log_set_max_level(LOG_DEBUG);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
