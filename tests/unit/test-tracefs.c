/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "model.h"
#include "contention.h"
#include "util.h"

static int parse(const char *line, TraceEvent *e) {
        return tracefs_parse_line(line, strlen(line), e);
}

/* Lines recorded on this project's 6.18 machine, with options/record-tgid. */
static void test_recorded_lines(void **state) {
        TraceEvent e;

        assert_int_equal(parse("    ksm-workload-19856   (  19853) [000] .....  1146.520942: mmap_lock_acquire_returned: "
                               "mm=00000000906725b4 memcg_id=3665 write=true success=true\n", &e), 0);
        assert_int_equal(e.type, TRACE_EVENT_ACQUIRE_RETURNED);
        assert_string_equal(e.comm, "ksm-workload");
        assert_int_equal(e.pid, 19856);
        assert_int_equal(e.tgid, 19853);
        assert_int_equal(e.cpu, 0);
        assert_int_equal(e.time_nsec, UINT64_C(1146520942000));
        assert_int_equal(e.mm, UINT64_C(0x906725b4));
        assert_int_equal(e.memcg_id, 3665);
        assert_true(e.write);
        assert_true(e.success);

        assert_int_equal(parse("    ksm-workload-12914   (  12914) [001] .....  2356.233624: ksm_enter: mm 00000000ffd4ac11",
                               &e), 0);
        assert_int_equal(e.type, TRACE_EVENT_KSM_ENTER);
        assert_int_equal(e.pid, 12914);
        assert_int_equal(e.mm, UINT64_C(0xffd4ac11));

        /* recorded on 6.18 */
        assert_int_equal(parse("            ksmd-37      (     37) [001] ..... 11715.244097: ksm_stop_scan: seq 119002 "
                               "rmap size 512", &e), 0);
        assert_int_equal(e.type, TRACE_EVENT_KSM_STOP_SCAN);
        assert_int_equal(e.pid, 37);
        assert_int_equal(e.seq, 119002);
        assert_int_equal(e.rmap_entries, 512);
        assert_int_equal(parse("  ksmd-37 [001] ..... 1.2: ksm_stop_scan: seq 1 rmap size", &e), -EINVAL);
        assert_int_equal(parse("  ksmd-37 [001] ..... 1.2: ksm_stop_scan: seq x rmap size 5", &e), -EINVAL);
        assert_int_equal(parse("  ksmd-37 [001] ..... 1.2: ksm_stop_scan: seq 1 rmap size 5 junk", &e), -EINVAL);
        /* the daemon's seed-001 kprobe (tracefs.h): who hit it is all
         * that counts; other kprobes and other names are not ours */
        assert_int_equal(parse("            ksmd-37      (     37) [000] d..1. 412.930119: ksmtuned2_vma_lock0: "
                               "(lock_vma_under_rcu+0x0/0x170)", &e), 0);
        assert_int_equal(e.type, TRACE_EVENT_VMA_LOCK);
        assert_int_equal(e.pid, 37);
        assert_int_equal(parse("  ksmd-37 [000] ..... 1.2: ksmtuned2_vma_lock2: (lock_next_vma+0x4/0x90)", &e), 0);
        assert_int_equal(e.type, TRACE_EVENT_VMA_LOCK);
        assert_int_equal(parse("  ksmd-37 [000] ..... 1.2: ksmtuned2_vma_lock0: garbage", &e), -EINVAL);
        assert_int_equal(parse("  ksmd-37 [000] ..... 1.2: ksmtuned2_vma_lockX: (f+0x0/0x1)", &e), -ENOMSG);
        assert_int_equal(parse("  ksmd-37 [000] ..... 1.2: ksmtuned2_vma_lock10: (f+0x0/0x1)", &e), -ENOMSG);
        assert_int_equal(parse("  ksmd-37 [000] ..... 1.2: myprobe: (lock_vma_under_rcu+0x0/0x170)", &e), -ENOMSG);
        /* ksm_start_scan is not used */
        assert_int_equal(parse("  ksmd-37 [000] ..... 1.1: ksm_start_scan: seq 119002 rmap size 0", &e), -ENOMSG);

        assert_int_equal(parse("    ksm-workload-9813    (   9813) [001] .....  2353.242440: mmap_lock_start_locking: "
                               "mm=000000005610e1ae memcg_id=1 write=false", &e), 0);
        assert_int_equal(e.type, TRACE_EVENT_START_LOCKING);
        assert_false(e.write);
        assert_int_equal(e.memcg_id, 1);

        /* without the tgid column, a kernel thread, a trylock failure */
        assert_int_equal(parse("            ksmd-39      [001] d..1.   88.000001: mmap_lock_acquire_returned: "
                               "mm=ffff888100a3c000 memcg_id=0 write=false success=false", &e), 0);
        assert_string_equal(e.comm, "ksmd");
        assert_int_equal(e.pid, 39);
        assert_int_equal(e.tgid, -1);
        assert_false(e.success);

        assert_int_equal(parse("    ksm-workload-1 (-------) [001] ..... 1.5: mmap_lock_released: mm=1 memcg_id=2 write=true",
                               &e), 0);
        assert_int_equal(e.tgid, -1);
        assert_int_equal(e.time_nsec, UINT64_C(1500000000));

        /* kernels before 6.14 printed the memcg path, which may hold spaces */
        assert_int_equal(parse("   qemu-kvm-812   [000] ..... 10.000000: mmap_lock_released: mm=00000000abcdef01 "
                               "memcg_path=\"/machine.slice/a b\" write=true", &e), 0);
        assert_int_equal(e.type, TRACE_EVENT_RELEASED);
        assert_int_equal(e.memcg_id, 0);

        assert_int_equal(parse("CPU:1 [LOST 4711 EVENTS]", &e), 0);
        assert_int_equal(e.type, TRACE_EVENT_LOST);
        assert_int_equal(e.lost, 4711);
}

static void test_hostile_comms(void **state) {
        TraceEvent e;

        /* comm with dashes, spaces, brackets and digits */
        assert_int_equal(parse("  a-b [1] c-42-7    (    7) [003] ..... 5.000001: mmap_lock_released: mm=10 memcg_id=3 write=true",
                               &e), 0);
        assert_string_equal(e.comm, "a-b [1] c-42");
        assert_int_equal(e.pid, 7);
        assert_int_equal(e.tgid, 7);
        assert_int_equal(e.cpu, 3);

        assert_int_equal(parse("           <...>-812     (  810) [001] ..... 7.25: ksm_enter: mm 0000000000000001", &e), 0);
        assert_string_equal(e.comm, "<...>");
        assert_int_equal(e.tgid, 810);
        assert_int_equal(e.time_nsec, UINT64_C(7250000000));

        /* a comm that looks like the rest of a line: the real CPU column is later */
        assert_int_equal(parse("  x [002] y-5 [001] ..... 1.000001: mmap_lock_released: mm=1 memcg_id=1 write=true", &e), 0);
        assert_int_equal(e.pid, 5);
        assert_int_equal(e.cpu, 1);
}

static void test_rejects(void **state) {
        static const char *const bad[] = {
                "",
                "garbage",
                "  ksmd-39 [001] ..... 88.000001: mmap_lock_acquire_returned: mm=zz memcg_id=0 write=false success=false",
                "  ksmd-39 [001] ..... 88.000001: mmap_lock_acquire_returned: mm=1 memcg_id=0 write=maybe success=false",
                "  ksmd-39 [001] ..... 88.000001: mmap_lock_acquire_returned: mm=1 memcg_id=0 write=false",
                "  ksmd-39 [001] ..... 88.000001: mmap_lock_released: memcg_id=0 write=false",
                "  ksmd-39 [001] ..... 88: mmap_lock_released: mm=1 write=false",
                "  ksmd- [001] ..... 88.1: mmap_lock_released: mm=1 write=false",
                "  ksmd-99999999999 [001] ..... 88.1: mmap_lock_released: mm=1 write=false",
                "  ksmd-3 (abc) [001] ..... 88.1: mmap_lock_released: mm=1 write=false",
                "  ksmd-3 [001] ..... 88.1: ksm_enter: mm",
                "  ksmd-3 [001] ..... 88.1: ksm_enter: mm 1 trailing",
                "  ksmd-3 [001] ..... 99999999999999999999.1: ksm_enter: mm 1",
                "  ksmd-3 [001] ..... 88.1: mmap_lock_released: mm=1 memcg_path=\"unterminated write=true",
                "CPU:x [LOST 1 EVENTS]",
                "CPU:1 [LOST many EVENTS]",
        };
        TraceEvent e;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                int r = parse(bad[i], &e);
                if (r != -EINVAL && r != -ENOMSG)
                        fail_msg("accepted: %s", bad[i]);
        }
        assert_int_equal(parse("# tracer: nop", &e), -ENOMSG);
        assert_int_equal(parse("#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION", &e), -ENOMSG);
        assert_int_equal(parse("   bash-1 [000] ..... 1.000001: sched_switch: prev_comm=bash", &e), -ENOMSG);

        /* embedded NUL, over-long line, NULL */
        assert_int_equal(tracefs_parse_line("  a-1 [000] ..... 1.1: ksm_enter: mm 1\0x", 40, &e), -EINVAL);
        char big[2000];
        memset(big, 'a', sizeof big);
        assert_int_equal(tracefs_parse_line(big, sizeof big, &e), -EINVAL);
        assert_int_equal(tracefs_parse_line(NULL, 0, &e), -EINVAL);
        /* not NUL-terminated at len */
        const char *l = "  a-1 [000] ..... 1.1: ksm_enter: mm 1ffff";
        assert_int_equal(tracefs_parse_line(l, strlen(l) - 4, &e), 0);
        assert_int_equal(e.mm, 1);
}

static TraceEvent ev(TraceEventType type, int pid, int tgid, uint64_t mm, uint64_t t_usec, bool write, bool success) {
        return (TraceEvent) { .type = type, .pid = pid, .tgid = tgid, .mm = mm, .time_nsec = t_usec * 1000,
                              .write = write, .success = success, .memcg_id = 9, .comm = "churn" };
}

static void add_ns(ContentionWindow *w, TraceEventType type, int pid, uint64_t mm, uint64_t t_nsec, bool write) {
        TraceEvent e = ev(type, pid, pid, mm, 0, write, true);
        e.time_nsec = t_nsec;
        contention_window_add(w, &e);
}

/* The tracing's own share of ksmd's waits (contention_window_finish).
 * The trace has microseconds: an uncontended wait of ~260 ns reads 0 or
 * 1 us, about one in four 1 us. */
static uint64_t add_lock_calls(ContentionWindow *w, int ksmd, uint64_t mm, int n, uint64_t t) {
        for (int i = 0; i < n; i++, t += 2000) {
                add_ns(w, TRACE_EVENT_START_LOCKING, ksmd, mm, t, false);
                add_ns(w, TRACE_EVENT_ACQUIRE_RETURNED, ksmd, mm, t + (i % 4 == 0 ? 1000 : 0), false);
                add_ns(w, TRACE_EVENT_RELEASED, ksmd, mm, t + 1000, false);
        }
        return t;
}

static void test_window_tracing_floor(void **state) {
        ContentionWindow w;
        const int ksmd = 39;
        uint64_t t = 1000000;

        /* 400 lock calls of mm 0xB, which nobody writes to: 250 ns each.
         * Mm 0xA: 100 such calls, and one real wait of 300 us behind its
         * writer 812. */
        contention_window_init(&w, ksmd);
        t = add_lock_calls(&w, ksmd, 0xB, 400, t);
        t = add_lock_calls(&w, ksmd, 0xA, 100, t);
        add_ns(&w, TRACE_EVENT_ACQUIRE_RETURNED, 812, 0xA, t, true);
        add_ns(&w, TRACE_EVENT_START_LOCKING, ksmd, 0xA, t + 100000, false);
        add_ns(&w, TRACE_EVENT_RELEASED, 812, 0xA, t + 400000, true);
        add_ns(&w, TRACE_EVENT_ACQUIRE_RETURNED, ksmd, 0xA, t + 400000, false);
        assert_int_equal(w.n_holders, 2);
        const LockHolder *b = &w.holders[0], *a = &w.holders[1];
        assert_int_equal(a->mm, 0xA);
        assert_int_equal(b->ksmd_wait_nsec, 100 * 1000);
        assert_int_equal(a->ksmd_wait_nsec, 25 * 1000 + 300000);
        assert_int_equal(a->ksmd_timed_waits, 101);
        assert_int_equal(a->ksmd_waits, 1);

        contention_window_finish(&w, 0);
        assert_true(w.ksmd_wait_floor_measured);
        assert_int_equal(w.ksmd_wait_floor_nsec, 250);
        assert_int_equal(b->ksmd_wait_nsec, 0);
        assert_int_equal(a->ksmd_wait_nsec, 25 * 1000 + 300000 - 101 * 250);
        assert_int_equal(w.ksmd_wait_nsec, 25 * 1000 + 300000 - 101 * 250);
        /* once only */
        contention_window_finish(&w, 0);
        assert_int_equal(w.ksmd_wait_nsec, 25 * 1000 + 300000 - 101 * 250);

        /* Too few calls on mms without a writer (ksmd at the contender's
         * only): the last measured floor, and never below zero. */
        contention_window_init(&w, ksmd);
        add_ns(&w, TRACE_EVENT_ACQUIRE_RETURNED, 812, 0xA, t, true);
        t = add_lock_calls(&w, ksmd, 0xA, 100, t);
        t = add_lock_calls(&w, ksmd, 0xB, 10, t);
        contention_window_finish(&w, 300);
        assert_false(w.ksmd_wait_floor_measured);
        assert_int_equal(w.ksmd_wait_floor_nsec, 300);
        assert_int_equal(w.holders[0].ksmd_wait_nsec, 0);
        assert_int_equal(w.ksmd_wait_nsec, 0);

        /* A writer that asked for the lock and had not got it when the
         * window ended makes the mm no measure either; so does
         * khugepaged's write hold. */
        contention_window_init(&w, ksmd);
        contention_window_set_khugepaged(&w, 77);
        t = add_lock_calls(&w, ksmd, 0xC, 400, t);
        add_ns(&w, TRACE_EVENT_START_LOCKING, 813, 0xC, t, true);
        t = add_lock_calls(&w, ksmd, 0xD, 400, t);
        add_ns(&w, TRACE_EVENT_ACQUIRE_RETURNED, 77, 0xD, t, true);
        add_ns(&w, TRACE_EVENT_RELEASED, 77, 0xD, t + 1000, true);
        contention_window_finish(&w, 0);
        assert_false(w.ksmd_wait_floor_measured);
        assert_int_equal(w.ksmd_wait_floor_nsec, 0);

        /* Never more than CONTENTION_WAIT_FLOOR_MAX_NSEC: a machine this
         * slow at tracing says nothing of what is contention. */
        contention_window_init(&w, ksmd);
        for (int i = 0; i < 300; i++, t += 20000) {
                add_ns(&w, TRACE_EVENT_START_LOCKING, ksmd, 0xE, t, false);
                add_ns(&w, TRACE_EVENT_ACQUIRE_RETURNED, ksmd, 0xE, t + 9000, false);
        }
        contention_window_finish(&w, 0);
        assert_int_equal(w.ksmd_wait_floor_nsec, CONTENTION_WAIT_FLOOR_MAX_NSEC);
        assert_int_equal(w.ksmd_wait_nsec, 300 * (9000 - CONTENTION_WAIT_FLOOR_MAX_NSEC));

        /* A long wait on an mm with no writer event is a hold that spanned
         * the window: not the tracing's, and not in its measure. */
        contention_window_init(&w, ksmd);
        t = add_lock_calls(&w, ksmd, 0xF, 400, t);
        add_ns(&w, TRACE_EVENT_START_LOCKING, ksmd, 0xF, t, false);
        add_ns(&w, TRACE_EVENT_ACQUIRE_RETURNED, ksmd, 0xF, t + 50000000, false);
        contention_window_finish(&w, 0);
        assert_true(w.ksmd_wait_floor_measured);
        assert_int_equal(w.ksmd_wait_floor_nsec, 250);
        assert_int_equal(w.holders[0].ksmd_wait_nsec, 100 * 1000 + 50000000 - 401 * 250);

        /* nothing timed: nothing to take off */
        contention_window_init(&w, ksmd);
        contention_window_finish(&w, 0);
        assert_int_equal(w.ksmd_wait_floor_nsec, 0);
        assert_int_equal(w.ksmd_wait_nsec, 0);
}

static void test_window_pairing(void **state) {
        ContentionWindow w;
        const int ksmd = 39;
        TraceEvent e;

        contention_window_init(&w, ksmd);
        /* a writer (thread 813 of process 812) holds mm 0xA for 300 us ... */
        e = ev(TRACE_EVENT_ACQUIRE_RETURNED, 813, 812, 0xA, 1000, true, true);
        contention_window_add(&w, &e);
        /* ... while ksmd waits 250 us for it */
        e = ev(TRACE_EVENT_START_LOCKING, ksmd, ksmd, 0xA, 1050, false, true);
        contention_window_add(&w, &e);
        e = ev(TRACE_EVENT_RELEASED, 813, 812, 0xA, 1300, true, true);
        contention_window_add(&w, &e);
        e = ev(TRACE_EVENT_ACQUIRE_RETURNED, ksmd, ksmd, 0xA, 1300, false, true);
        contention_window_add(&w, &e);
        /* an uncontended ksmd lock of another mm: no wait to speak of */
        e = ev(TRACE_EVENT_START_LOCKING, ksmd, ksmd, 0xB, 2000, false, true);
        contention_window_add(&w, &e);
        e = ev(TRACE_EVENT_ACQUIRE_RETURNED, ksmd, ksmd, 0xB, 2001, false, true);
        contention_window_add(&w, &e);
        /* a release without acquire (window began mid-hold) names its
         * writer, but ksmd never waited for it */
        e = ev(TRACE_EVENT_RELEASED, 900, 900, 0xC, 2100, true, true);
        contention_window_add(&w, &e);
        /* read locks of others do not count */
        e = ev(TRACE_EVENT_ACQUIRE_RETURNED, 901, 901, 0xC, 2200, false, true);
        contention_window_add(&w, &e);
        TraceEvent lost = { .type = TRACE_EVENT_LOST, .lost = 3 };
        contention_window_add(&w, &lost);

        assert_int_equal(w.events, 8);
        assert_int_equal(w.lost_events, 3);
        assert_int_equal(w.ksmd_start_locking, 2);
        assert_int_equal(w.ksmd_acquired, 2);
        assert_int_equal(w.ksmd_wait_nsec, 251000);
        assert_int_equal(contention_window_span_nsec(&w), 1200000);
        assert_int_equal(contention_window_ksmd_span_nsec(&w), 951000);

        /* The ring lost events (it keeps the newest): ksmd's waits are a
         * share of the span its own surviving events cover, not of the
         * 100 ms the window was open. */
        Model m;
        model_init(&m, 4096, 64);
        model_add_window(&m, &w, 5000000, 100000, 0);
        assert_true(m.window_ksmd_blocked_fraction > 0.26 && m.window_ksmd_blocked_fraction < 0.27);
        assert_int_equal(m.n_contenders, 1);
        assert_int_equal(m.contenders[0].pid, 812);
        /* without loss, the window's wall time */
        w.lost_events = 0;
        model_add_window(&m, &w, 5000000, 100000, 0);
        assert_true(m.window_ksmd_blocked_fraction > 0.0025 && m.window_ksmd_blocked_fraction < 0.0026);
        w.lost_events = 3;

        const LockHolder *h = contention_window_worst(&w);
        assert_non_null(h);
        assert_int_equal(h->mm, 0xA);
        assert_int_equal(h->tgid, 812);
        assert_int_equal(h->memcg_id, 9);
        assert_string_equal(h->comm, "churn");
        assert_int_equal(h->write_locks, 1);
        assert_int_equal(h->write_hold_nsec, 300000);
        assert_int_equal(h->ksmd_waits, 1);
        assert_int_equal(h->ksmd_wait_nsec, 250000);
        assert_int_equal(w.n_pending, 0);

        /* the writer tasks, to confirm the process by: the first one
         * (whose trace tgid is the hint) first, each once, at most
         * LOCK_HOLDER_MAX_TIDS, the latest new ones kept (a pool's threads
         * come and go); a later writer's own tgid column does not change
         * the hint */
        assert_int_equal(h->n_tids, 1);
        assert_int_equal(h->tids[0], 813);
        assert_int_equal(h->tid_nsec[0], 1000 * 1000);  /* its first write lock, for the reuse check */
        for (int tid = 814; tid < 814 + LOCK_HOLDER_MAX_TIDS + 2; tid++) {
                e = ev(TRACE_EVENT_ACQUIRE_RETURNED, tid, 700, 0xA, 2500, true, true);
                contention_window_add(&w, &e);
                e = ev(TRACE_EVENT_RELEASED, tid, 700, 0xA, 2501, true, true);
                contention_window_add(&w, &e);
                e = ev(TRACE_EVENT_ACQUIRE_RETURNED, 813, 812, 0xA, 2502, true, true);
                contention_window_add(&w, &e);
                e = ev(TRACE_EVENT_RELEASED, 813, 812, 0xA, 2503, true, true);
                contention_window_add(&w, &e);
        }
        assert_int_equal(h->n_tids, LOCK_HOLDER_MAX_TIDS);
        assert_int_equal(h->tids[0], 813);
        assert_int_equal(h->tid_nsec[0], 1000 * 1000);
        for (unsigned i = 1; i < LOCK_HOLDER_MAX_TIDS; i++) {
                /* 814..819 came in that order: the last three stay */
                assert_int_equal(h->tids[i], 814 + LOCK_HOLDER_MAX_TIDS + 2 - LOCK_HOLDER_MAX_TIDS + (int) i);
                assert_int_equal(h->tid_nsec[i], 2500 * 1000);
        }
        assert_int_equal(h->tgid, 812);

        /* a trylock-patched ksmd: success=false without start_locking */
        e = ev(TRACE_EVENT_ACQUIRE_RETURNED, ksmd, ksmd, 0xA, 3000, false, false);
        contention_window_add(&w, &e);
        assert_int_equal(w.ksmd_trylock_failures, 1);
        assert_int_equal(h->ksmd_trylock_failures, 1);
        assert_int_equal(w.ksmd_wait_nsec, 251000);
}

static void window_add_lines(ContentionWindow *w, const char *const *lines, size_t n) {
        for (size_t i = 0; i < n; i++) {
                TraceEvent e;
                if (parse(lines[i], &e) < 0)
                        fail_msg("cannot parse: %s", lines[i]);
                contention_window_add(w, &e);
        }
}

/* The holder ksmd waited for longest, which the model must also make its
 * one contender. */
static const LockHolder *window_worst_contender(const ContentionWindow *w, int pid) {
        Model m;
        model_init(&m, 4096, 64);
        model_add_window(&m, w, 5000000, 1000, 0);
        assert_int_equal(m.n_contenders, 1);
        assert_int_equal(m.contenders[0].pid, pid);

        const LockHolder *h = contention_window_worst(w);
        assert_non_null(h);
        assert_int_equal(h->tgid, pid);
        return h;
}

/* Issue 14, Q1: QEMU's main thread write-locked the guest's mm before the
 * window opened (object-add over QMP); the window sees only its release, and
 * then ksmd's wait for the mm ending. */
static void test_window_release_without_acquire(void **state) {
        static const char *const lines[] = {
                "  qemu-system-x86-815   (    810) [000] .....   100.000050: mmap_lock_acquire_returned: "
                "mm=00000000000000aa memcg_id=5 write=false success=true",
                "            ksmd-39      (     39) [001] .....   100.000100: mmap_lock_start_locking: "
                "mm=00000000000000aa memcg_id=5 write=false",
                "  qemu-system-x86-810   (    810) [000] .....   100.000400: mmap_lock_released: "
                "mm=00000000000000aa memcg_id=5 write=true",
                "            ksmd-39      (     39) [001] .....   100.000410: mmap_lock_acquire_returned: "
                "mm=00000000000000aa memcg_id=5 write=false success=true",
        };
        ContentionWindow w;

        contention_window_init(&w, 39);
        window_add_lines(&w, lines, ELEMENTSOF(lines));
        const LockHolder *h = window_worst_contender(&w, 810);
        assert_string_equal(h->comm, "qemu-system-x86");
        assert_int_equal(h->memcg_id, 5);
        assert_int_equal(h->ksmd_waits, 1);
        assert_int_equal(h->ksmd_wait_nsec, 310000);
        assert_int_equal(h->write_locks, 0);
        /* nothing lost: the hold began before the window's first event */
        assert_int_equal(h->write_hold_nsec, 350000);
        assert_int_equal(w.n_pending, 0);
}

/* The full ring dropped the writer's acquire (it keeps the newest events)
 * and kept its release; the tgid was not recorded for it. */
static void test_window_release_after_lost_events(void **state) {
        static const char *const lines[] = {
                "            ksmd-39      (     39) [001] .....   200.000000: mmap_lock_start_locking: "
                "mm=00000000000000cc memcg_id=7 write=false",
                "            ksmd-39      (     39) [001] .....   200.000001: mmap_lock_acquire_returned: "
                "mm=00000000000000cc memcg_id=7 write=false success=true",
                "            ksmd-39      (     39) [001] .....   200.000100: mmap_lock_start_locking: "
                "mm=00000000000000bb memcg_id=5 write=false",
                "CPU:0 [LOST 1843 EVENTS]",
                "  qemu-system-x86-812   (-------) [000] .....   200.000600: mmap_lock_released: "
                "mm=00000000000000bb memcg_id=5 write=true",
                "            ksmd-39      (     39) [001] .....   200.000640: mmap_lock_acquire_returned: "
                "mm=00000000000000bb memcg_id=5 write=false success=true",
        };
        ContentionWindow w;

        contention_window_init(&w, 39);
        window_add_lines(&w, lines, ELEMENTSOF(lines));
        assert_int_equal(w.lost_events, 1843);
        const LockHolder *h = window_worst_contender(&w, 812);
        assert_int_equal(h->mm, 0xbb);
        assert_int_equal(h->ksmd_wait_nsec, 540000);
        /* the acquire may have been anywhere: counted from ksmd's wait */
        assert_int_equal(h->write_hold_nsec, 500000);
}

/* ksmd, a reader, queued behind a writer that waited for a reader of the
 * process's own: the writer's acquire falls in the window and names it. */
static void test_window_queued_writer(void **state) {
        static const char *const lines[] = {
                "  qemu-system-x86-814   (    810) [000] .....   300.000000: mmap_lock_acquire_returned: "
                "mm=00000000000000dd memcg_id=5 write=false success=true",
                "  qemu-system-x86-810   (    810) [001] .....   300.000100: mmap_lock_start_locking: "
                "mm=00000000000000dd memcg_id=5 write=true",
                "            ksmd-39      (     39) [000] .....   300.000200: mmap_lock_start_locking: "
                "mm=00000000000000dd memcg_id=5 write=false",
                "  qemu-system-x86-814   (    810) [001] .....   300.000300: mmap_lock_released: "
                "mm=00000000000000dd memcg_id=5 write=false",
                "  qemu-system-x86-810   (    810) [001] .....   300.000310: mmap_lock_acquire_returned: "
                "mm=00000000000000dd memcg_id=5 write=true success=true",
                "  qemu-system-x86-810   (    810) [001] .....   300.000500: mmap_lock_released: "
                "mm=00000000000000dd memcg_id=5 write=true",
                "            ksmd-39      (     39) [000] .....   300.000510: mmap_lock_acquire_returned: "
                "mm=00000000000000dd memcg_id=5 write=false success=true",
        };
        ContentionWindow w;

        contention_window_init(&w, 39);
        window_add_lines(&w, lines, ELEMENTSOF(lines));
        const LockHolder *h = window_worst_contender(&w, 810);
        assert_int_equal(h->ksmd_wait_nsec, 310000);
        assert_int_equal(h->write_locks, 1);
        assert_int_equal(h->write_hold_nsec, 190000);
        assert_int_equal(w.n_pending, 0);
}

/* ksmd's time at each mm's pages: from its acquisition to its next lock
 * call, a blocking one's start or a trylock's return; a gap over 1 ms is a
 * sleep between batches; a failed try holds nothing. */
static void test_window_ksmd_work(void **state) {
        ContentionWindow w;
        const int ksmd = 39;
        static const struct {
                TraceEventType type;
                uint64_t mm, usec;
                bool success;
        } seq[] = {
                { TRACE_EVENT_START_LOCKING, 0xA, 0, true },
                { TRACE_EVENT_ACQUIRE_RETURNED, 0xA, 0, true },
                { TRACE_EVENT_START_LOCKING, 0xB, 10, true },     /* 10 us at A */
                { TRACE_EVENT_ACQUIRE_RETURNED, 0xB, 11, true },
                { TRACE_EVENT_START_LOCKING, 0xA, 2011, true },   /* 2 ms later: a sleep, not B's */
                { TRACE_EVENT_ACQUIRE_RETURNED, 0xA, 2061, true },/* waited 50 us for A */
                { TRACE_EVENT_ACQUIRE_RETURNED, 0xB, 2070, true },/* a trylock: 9 us at A */
                { TRACE_EVENT_ACQUIRE_RETURNED, 0xA, 2075, false },/* a failed try: 5 us at B */
                { TRACE_EVENT_START_LOCKING, 0xB, 2080, true },   /* it held nothing */
        };

        contention_window_init(&w, ksmd);
        for (size_t i = 0; i < ELEMENTSOF(seq); i++) {
                TraceEvent e = ev(seq[i].type, ksmd, ksmd, seq[i].mm, seq[i].usec, false, seq[i].success);
                contention_window_add(&w, &e);
        }
        assert_int_equal(w.n_holders, 2);
        const LockHolder *a = w.holders[0].mm == 0xA ? &w.holders[0] : &w.holders[1];
        const LockHolder *b = a == &w.holders[0] ? &w.holders[1] : &w.holders[0];
        assert_int_equal(a->ksmd_work_nsec, 19000);
        assert_int_equal(b->ksmd_work_nsec, 5000);
        assert_int_equal(a->ksmd_wait_nsec, 50000);
        assert_int_equal(a->ksmd_waits, 1);
        assert_int_equal(b->ksmd_trylock_failures, 0);
        assert_int_equal(a->ksmd_trylock_failures, 1);
}

static void test_window_bounds(void **state) {
        ContentionWindow w;
        contention_window_init(&w, 1);
        for (int i = 0; i < 2 * CONTENTION_MAX_HOLDERS; i++) {
                TraceEvent e = ev(TRACE_EVENT_ACQUIRE_RETURNED, 100 + i, 100 + i, 0x1000 + (uint64_t) i, 10, true, true);
                contention_window_add(&w, &e);
        }
        assert_int_equal(w.n_holders, CONTENTION_MAX_HOLDERS);
        assert_int_equal(w.dropped_holders, CONTENTION_MAX_HOLDERS);
        assert_true(w.n_pending <= CONTENTION_MAX_PENDING);
        assert_null(contention_window_worst(&w));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_recorded_lines),
                cmocka_unit_test(test_hostile_comms),
                cmocka_unit_test(test_rejects),
                cmocka_unit_test(test_window_pairing),
                cmocka_unit_test(test_window_tracing_floor),
                cmocka_unit_test(test_window_release_without_acquire),
                cmocka_unit_test(test_window_release_after_lost_events),
                cmocka_unit_test(test_window_queued_writer),
                cmocka_unit_test(test_window_ksmd_work),
                cmocka_unit_test(test_window_bounds),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
