/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The private tracefs instance on the real kernel: ksm_enter of our own
 * madvise wakes the pipe, a window sees our own mmap write locks with the
 * right tgid, and the instance is gone after tracer_free(). Touches no KSM
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
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

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
                skip();
        assert_int_equal(root_open(NULL, &root), 0);
        r = tracer_open(root, true, &t, &mounted);
        if (r == -ENOENT || r == -EOPNOTSUPP || r == -EPERM)
                skip();
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
                        assert_int_equal(tracer_window_start(t, 1, -1), 0);
                        for (int i = 0; i < 100; i++) {
                                void *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                                               0);
                                assert_true(p != MAP_FAILED);
                                munmap(p, 1 << 20);
                        }
                        assert_int_equal(tracer_window_stop(t), 0);
                        assert_true(tracer_read(t, 8 << 20, on_event, &seen) > 0);
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

                /* after a window, the pipe still wakes for ksm_enter */
                seen.child = madvise_new_mm();
                seen.ksm_enter_child = 0;
                assert_true(wait_readable(tracer_fd(t), 2000));
                assert_true(tracer_read(t, 1 << 20, on_event, &seen) > 0);
                assert_int_equal(seen.ksm_enter_child, 1);
        }

        t = tracer_free(t);
        assert_true(faccessat(root->tracefs_fd, name, F_OK, 0) < 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_instance),
        };
        log_set_max_level(LOG_DEBUG);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
