/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The off-loop reader on a fake tree where some processes' ksm_stat is a
 * FIFO without a writer: opening it blocks like a read behind a write-held
 * mmap_lock, forever, until the test lets it go. Those reads must be
 * reported past their deadline and must not hold up anybody else's. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake-tree.h"
#include "mm-reader.h"
#include "root.h"
#include "util.h"


typedef struct Seen {
        int n_ok, n_overran, n_late, n_gone;
        int ok_pid[64];
} Seen;

static void on_result(MmReadResult *r, void *userdata) {
        Seen *s = userdata;
        if (r->error == -ETIME)
                s->n_overran++;
        else if (r->late)
                s->n_late++;
        else if (r->error == -ESRCH)
                s->n_gone++;
        else if (r->error == 0 && s->n_ok < 64)
                s->ok_pid[s->n_ok++] = r->pid;
}

static void add_proc(FakeTree *t, int pid, bool stuck) {
        char rel[64], stat[512];
        snprintf(rel, sizeof rel, "proc/%d/stat", pid);
        snprintf(stat, sizeof stat, "%d (p) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 4242 1 1 1 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
                 pid);
        fake_write(t, rel, stat);
        snprintf(rel, sizeof rel, "proc/%d/ksm_stat", pid);
        if (!stuck) {
                fake_write(t, rel, "ksm_rmap_items 5\nksm_zero_pages 0\nksm_merging_pages 3\nksm_process_profit 100\n"
                                   "ksm_merge_any: no\nksm_mergeable: yes\n");
                return;
        }
        char path[512];
        snprintf(path, sizeof path, "%s/%s", t->path, rel);
        assert_int_equal(mkfifo(path, 0600), 0);
}

static void release(FakeTree *t, int pid) {
        char path[512];
        snprintf(path, sizeof path, "%s/proc/%d/ksm_stat", t->path, pid);
        /* O_RDWR on a FIFO does not block; closing it gives the reader EOF. */
        int fd = open(path, O_RDWR | O_CLOEXEC);
        assert_true(fd >= 0);
        usleep(20 * 1000);
        close(fd);
}

static void test_stuck_reads_do_not_block_others(void **state) {
        FakeTree t;
        _cleanup_(root_freep) Root *root = NULL;
        MmReader *r = NULL;
        Seen seen = {};

        fake_tree_init(&t);
        fake_tree_populate_minimal(&t);
        /* five stuck processes, more than the pool's two workers */
        for (int pid = 100; pid < 105; pid++)
                add_proc(&t, pid, true);
        for (int pid = 200; pid < 211; pid++)
                add_proc(&t, pid, false);
        assert_int_equal(root_open(t.path, &root), 0);
        assert_int_equal(mm_reader_new(root, NULL, 2, 50 * USEC_PER_MSEC, on_result, &seen, &r), 0);

        for (int pid = 100; pid < 105; pid++)
                assert_int_equal(mm_reader_queue(r, MM_READ_KSM_STAT, pid, 4242), 0);
        /* a second read of a stuck pid is refused while the first hangs */
        assert_int_equal(mm_reader_queue(r, MM_READ_KSM_STAT, 100, 4242), -EALREADY);
        assert_true(mm_reader_busy(r, 100));
        /* another kind of read of it is a separate job */
        assert_int_equal(mm_reader_queue(r, MM_READ_CMDLINE, 100, 4242), 0);
        usleep(100 * 1000);
        (void) mm_reader_dispatch(r); /* reports the overruns, starts replacements */
        for (int pid = 200; pid < 210; pid++)
                assert_int_equal(mm_reader_queue(r, MM_READ_KSM_STAT, pid, 4242), 0);
        assert_int_equal(mm_reader_queue(r, MM_READ_KSM_STAT, 209, 4242), -EALREADY);
        /* a reused pid (another start time): the worker's stat check says gone */
        assert_int_equal(mm_reader_queue(r, MM_READ_KSM_STAT, 210, 1), 0);

        uint64_t end = now_usec(CLOCK_MONOTONIC) + 2 * USEC_PER_SEC;
        while ((seen.n_ok < 10 || seen.n_gone < 2 || seen.n_overran < 5) && now_usec(CLOCK_MONOTONIC) < end) {
                usleep(10 * 1000);
                (void) mm_reader_dispatch(r);
        }
        MmReaderCounters c;
        mm_reader_get_counters(r, &c);
        print_message("reads: %d ok, %d overran; %" PRIu64 " workers started, %" PRIu64 " stuck\n", seen.n_ok,
                      seen.n_overran, c.threads, c.stuck_now);
        /* 10 good ksm_stat reads; the stuck pid's cmdline (no such file in
         * the fake tree) and the reused pid come back as gone */
        assert_int_equal(seen.n_ok, 10);
        assert_int_equal(seen.n_gone, 2);
        assert_int_equal(seen.n_overran, 5); /* each reported once */
        assert_true(c.threads <= 2 * MM_READER_MAX_THREADS_FACTOR);
        assert_true(c.threads > 2);

        /* let the kernel-side wait end: late results arrive, flagged */
        for (int pid = 100; pid < 105; pid++)
                release(&t, pid);
        end = now_usec(CLOCK_MONOTONIC) + 2 * USEC_PER_SEC;
        while (seen.n_late < 5 && now_usec(CLOCK_MONOTONIC) < end) {
                usleep(10 * 1000);
                (void) mm_reader_dispatch(r);
        }
        print_message("late: %d\n", seen.n_late);
        assert_int_equal(seen.n_late, 5);
        for (int pid = 100; pid < 105; pid++)
                assert_false(mm_reader_busy(r, pid));
        mm_reader_free(r);
        fake_tree_done(&t);
}

/* mm_reader_read(), the merge actuator's way in: a stuck read costs the
 * caller one deadline, then -ETIME; the next pid's read is served at once
 * by a replacement worker; a later read of the stuck pid fails at once
 * (-EALREADY) rather than wait again; maps come back parsed. */
static void test_read_with_deadline(void **state) {
        FakeTree t;
        _cleanup_(root_freep) Root *root = NULL;
        MmReader *r = NULL;
        MmReadResult res;

        fake_tree_init(&t);
        fake_tree_populate_minimal(&t);
        add_proc(&t, 100, true);
        add_proc(&t, 200, false);
        fake_write(&t, "proc/200/maps", "7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \n");
        assert_int_equal(root_open(t.path, &root), 0);
        /* 500 ms: with 100 ms, under ASan beside a TCG guest, the
         * replacement worker took 96 ms to serve the next read and the one
         * after it was never started within the deadline (-EAGAIN). */
        assert_int_equal(mm_reader_new(root, NULL, 1, 500 * USEC_PER_MSEC, NULL, NULL, &r), 0);

        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(mm_reader_read(r, MM_READ_KSM_STAT, 100, 4242, &res), 0);
        uint64_t stuck = now_usec(CLOCK_MONOTONIC) - t0;
        assert_int_equal(res.error, -ETIME);
        assert_true(stuck >= 500 * USEC_PER_MSEC && stuck < 3000 * USEC_PER_MSEC);

        t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(mm_reader_read(r, MM_READ_KSM_STAT, 200, 4242, &res), 0);
        uint64_t next = now_usec(CLOCK_MONOTONIC) - t0;
        print_message("stuck read given up after %" PRIu64 " ms, the next one served in %" PRIu64 " ms\n",
                      stuck / USEC_PER_MSEC, next / USEC_PER_MSEC);
        assert_int_equal(res.error, 0);
        assert_int_equal(res.ksm_stat.merging_pages, 3);
        assert_true(next < 500 * USEC_PER_MSEC);

        assert_int_equal(mm_reader_read(r, MM_READ_MAPS, 200, 4242, &res), 0);
        assert_int_equal(res.error, 0);
        assert_int_equal(res.maps.n, 1);
        mm_read_result_done(&res);

        t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(mm_reader_read(r, MM_READ_KSM_STAT, 100, 4242, &res), -EALREADY);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 < 50 * USEC_PER_MSEC);
        assert_int_equal(mm_reader_read(r, MM_READ_KSM_STAT, 200, 1, &res), 0);
        assert_int_equal(res.error, -ESRCH);

        /* Stuck on as many pids as the pool may have workers (1 x 4): a read
         * of anyone else never starts, which is -EAGAIN, not -ETIME (that pid
         * is not the slow one). */
        for (int pid = 101; pid < 101 + MM_READER_MAX_THREADS_FACTOR - 1; pid++) {
                add_proc(&t, pid, true);
                assert_int_equal(mm_reader_read(r, MM_READ_KSM_STAT, pid, 4242, &res), 0);
                assert_int_equal(res.error, -ETIME);
        }
        assert_int_equal(mm_reader_read(r, MM_READ_KSM_STAT, 200, 4242, &res), 0);
        assert_int_equal(res.error, -EAGAIN);
        for (int pid = 101; pid < 101 + MM_READER_MAX_THREADS_FACTOR - 1; pid++)
                release(&t, pid);

        /* released: its late result is dropped, and it can be read again */
        release(&t, 100);
        uint64_t end = now_usec(CLOCK_MONOTONIC) + 2 * USEC_PER_SEC;
        int k;
        while ((k = mm_reader_read(r, MM_READ_KSM_STAT, 100, 4242, &res)) == -EALREADY &&
               now_usec(CLOCK_MONOTONIC) < end)
                usleep(10 * 1000);
        assert_int_equal(k, 0);
        mm_reader_free(r);
        fake_tree_done(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stuck_reads_do_not_block_others),
                cmocka_unit_test(test_read_with_deadline),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
