/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The history's bounds and decimation, on small rings: the newest ticks
 * stay as they were, older ones become one average per minute (weighted by
 * each tick's length), the oldest minutes go, and nothing grows. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "history.h"
#include "util.h"

#define SEC USEC_PER_SEC
#define MINUTE HISTORY_MINUTE_USEC
/* CLOCK_REALTIME of the monotonic instant 0 in these tests */
#define BOOT_REALTIME (1700000000 * SEC)

static HistorySample tick_at(uint64_t t, uint64_t duration, TuneMode phase, uint64_t saved, double cpu) {
        return (HistorySample) {
                .monotonic_usec = t,
                .realtime_usec = BOOT_REALTIME + t,
                .duration_usec = duration,
                .ticks = 1,
                .phase = phase,
                .saved_bytes = saved,
                .general_profit_bytes = -(int64_t) saved / 2,
                .ksmd_cpu_fraction = cpu,
                .ksmd_blocked_fraction = cpu / 10,
                .scan_pages_per_sec = cpu * 1e5,
                .pages_to_scan = 100 + t / SEC,
                .sleep_ms = 20,
                .managed_processes = (uint32_t) (t / SEC),
        };
}

static void assert_same(const HistorySample *a, const HistorySample *b) {
        assert_int_equal(a->monotonic_usec, b->monotonic_usec);
        assert_int_equal(a->realtime_usec, b->realtime_usec);
        assert_int_equal(a->duration_usec, b->duration_usec);
        assert_int_equal(a->ticks, b->ticks);
        assert_int_equal(a->phase, b->phase);
        assert_int_equal(a->saved_bytes, b->saved_bytes);
        assert_int_equal(a->general_profit_bytes, b->general_profit_bytes);
        assert_float_equal(a->ksmd_cpu_fraction, b->ksmd_cpu_fraction, 0);
        assert_float_equal(a->ksmd_blocked_fraction, b->ksmd_blocked_fraction, 0);
        assert_float_equal(a->scan_pages_per_sec, b->scan_pages_per_sec, 0);
        assert_int_equal(a->pages_to_scan, b->pages_to_scan);
        assert_int_equal(a->sleep_ms, b->sleep_ms);
        assert_int_equal(a->managed_processes, b->managed_processes);
}

static HistorySample get(const History *h, size_t i) {
        HistorySample s;
        assert_int_equal(history_get(h, i, &s), 0);
        return s;
}

static void test_full_resolution(void **state) {
        History h;

        assert_int_equal(history_init(&h, 0, 3), -EINVAL);
        assert_int_equal(history_init(&h, 4, 3), 0);
        assert_int_equal(history_size(&h), 0);
        HistorySample none;
        assert_int_equal(history_get(&h, 0, &none), -ENOENT);

        for (int i = 0; i < 4; i++) {
                HistorySample s = tick_at(10 * MINUTE + (uint64_t) i * SEC, SEC, TUNE_MODE_BURST,
                                          1000 * (uint64_t) i, 0.5);
                history_add(&h, &s);
        }
        /* no tick has left full resolution yet: each as it was, oldest first */
        assert_int_equal(history_size(&h), 4);
        for (size_t i = 0; i < 4; i++) {
                HistorySample want = tick_at(10 * MINUTE + i * SEC, SEC, TUNE_MODE_BURST, 1000 * i, 0.5);
                HistorySample got = get(&h, i);
                assert_same(&got, &want);
        }
        assert_int_equal(history_get(&h, 4, &none), -ENOENT);
        history_done(&h);
}

/* Ticks of different lengths in one minute: the average is by time, the
 * phase the one most of the minute was spent in, the knobs the newest. */
static void test_minute_average(void **state) {
        History h;
        const struct {
                uint64_t t, duration;
                TuneMode phase;
                uint64_t saved;
                double cpu;
        } ticks[] = {
                /* minute 10: 10 s of maintain at 0% CPU, 4 x 0.25 s of burst at 80% (1 s) */
                { 10 * MINUTE + 10 * SEC, 10 * SEC, TUNE_MODE_MAINTAIN, 1000, 0.0 },
                { 10 * MINUTE + 10 * SEC + 250000, 250000, TUNE_MODE_BURST, 2000, 0.8 },
                { 10 * MINUTE + 10 * SEC + 500000, 250000, TUNE_MODE_BURST, 3000, 0.8 },
                { 10 * MINUTE + 10 * SEC + 750000, 250000, TUNE_MODE_BURST, 4000, 0.8 },
                { 10 * MINUTE + 11 * SEC, 250000, TUNE_MODE_BURST, 5000, 0.8 },
                /* minute 11 */
                { 11 * MINUTE + 1 * SEC, 50 * SEC, TUNE_MODE_DECAY, 9000, 0.1 },
        };
        assert_int_equal(history_init(&h, 1, 3), 0);
        for (size_t i = 0; i < ELEMENTSOF(ticks); i++) {
                HistorySample s = tick_at(ticks[i].t, ticks[i].duration, ticks[i].phase, ticks[i].saved, ticks[i].cpu);
                history_add(&h, &s);
        }
        /* the newest tick in full, minute 10 averaged (and closed by the
         * first tick of minute 11 leaving full resolution: none yet) */
        assert_int_equal(history_size(&h), 2);
        HistorySample m = get(&h, 0);
        assert_int_equal(m.ticks, 5);
        assert_int_equal(m.duration_usec, 11 * SEC);
        assert_int_equal(m.monotonic_usec, 10 * MINUTE + 11 * SEC);
        assert_int_equal(m.realtime_usec, BOOT_REALTIME + 10 * MINUTE + 11 * SEC);
        assert_int_equal(m.phase, TUNE_MODE_MAINTAIN);
        /* (1000 * 10 + (2000 + 3000 + 4000 + 5000) * 0.25) / 11 */
        assert_int_equal(m.saved_bytes, 1227);
        assert_int_equal(m.general_profit_bytes, -614);
        assert_float_equal(m.ksmd_cpu_fraction, 0.8 / 11, 1e-9);
        assert_float_equal(m.ksmd_blocked_fraction, 0.08 / 11, 1e-9);
        assert_float_equal(m.scan_pages_per_sec, 0.8e5 / 11, 1e-6);
        assert_int_equal(m.pages_to_scan, 100 + (10 * MINUTE + 11 * SEC) / SEC);
        assert_int_equal(m.managed_processes, (10 * MINUTE + 11 * SEC) / SEC);
        assert_int_equal(get(&h, 1).monotonic_usec, 11 * MINUTE + 1 * SEC);
        assert_int_equal(get(&h, 1).ticks, 1);

        /* the next tick pushes minute 11's first one out: minute 10 is
         * closed into the minutes, minute 11 is averaged from then on */
        HistorySample s = tick_at(11 * MINUTE + 30 * SEC, 29 * SEC, TUNE_MODE_DECAY, 9000, 0.1);
        history_add(&h, &s);
        assert_int_equal(history_size(&h), 3);
        assert_int_equal(get(&h, 0).ticks, 5);
        assert_int_equal(get(&h, 0).saved_bytes, 1227);
        assert_int_equal(get(&h, 1).ticks, 1);
        assert_int_equal(get(&h, 1).phase, TUNE_MODE_DECAY);
        assert_int_equal(get(&h, 1).duration_usec, 50 * SEC);
        assert_int_equal(get(&h, 2).monotonic_usec, 11 * MINUTE + 30 * SEC);
        history_done(&h);
}

/* A day of ticks every 5 s into rings of 12 ticks and 5 minutes: the size
 * never goes past 12 + 1 + 5, the entries stay in order, and what is kept
 * is the newest: the last 12 ticks in full, the 6 minutes before them
 * averaged, each over all of its ticks. */
static void test_bounds(void **state) {
        History h;
        uint64_t t = 0;

        assert_int_equal(history_init(&h, 12, 5), 0);
        for (int i = 0; i < 24 * 60 * 12; i++) {
                t += 5 * SEC;
                HistorySample s = tick_at(t, 5 * SEC, i % 2 ? TUNE_MODE_IDLE : TUNE_MODE_MAINTAIN, (uint64_t) i, 0.01);
                history_add(&h, &s);
                assert_true(history_size(&h) <= 12 + 1 + 5);
        }
        assert_int_equal(history_size(&h), 12 + 1 + 5);
        assert_int_equal(h.ticks.n, 12);
        assert_int_equal(h.minutes.n, 5);

        uint64_t before = 0;
        for (size_t i = 0; i < history_size(&h); i++) {
                HistorySample s = get(&h, i);
                assert_true(s.monotonic_usec > before);
                before = s.monotonic_usec;
                if (i >= 6) {
                        assert_int_equal(s.ticks, 1);
                        continue;
                }
                /* each kept minute is a whole one, the one being averaged
                 * has what left full resolution so far */
                if (i < 5) {
                        assert_int_equal(s.ticks, 12);
                        /* 6 ticks idle, 6 maintain: a tie goes to the newest tick's */
                        assert_int_equal(s.phase, TUNE_MODE_MAINTAIN);
                }
                assert_int_equal(s.duration_usec, s.ticks * 5 * SEC);
                assert_int_equal(s.monotonic_usec % MINUTE, (s.ticks - 1) * 5 * SEC);
        }
        /* the newest tick is the last one added */
        assert_int_equal(get(&h, history_size(&h) - 1).monotonic_usec, t);
        assert_int_equal(get(&h, history_size(&h) - 1).saved_bytes, 24 * 60 * 12 - 1);
        /* the ticks in full are the 12 newest; the minute being averaged is
         * the one just before them; the five before it are kept */
        assert_int_equal(get(&h, 6).monotonic_usec, t - 11 * 5 * SEC);
        assert_int_equal(get(&h, 0).monotonic_usec / MINUTE, get(&h, 5).monotonic_usec / MINUTE - 5);
        history_done(&h);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_full_resolution),
                cmocka_unit_test(test_minute_average),
                cmocka_unit_test(test_bounds),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
