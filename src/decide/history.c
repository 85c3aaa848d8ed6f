/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "history.h"
#include "util.h"

static int ring_init(HistoryRing *r, size_t max) {
        *r = (HistoryRing) { .max = max };
        if (max == 0)
                return 0;
        r->items = calloc(max, sizeof *r->items);
        return r->items ? 0 : -ENOMEM;
}

static const HistorySample *ring_get(const HistoryRing *r, size_t i) {
        return &r->items[(r->head + i) % r->max];
}

/* Appends s; returns whether that pushed the oldest out, into *ret_old. */
static bool ring_push(HistoryRing *r, const HistorySample *s, HistorySample *ret_old) {
        if (r->max == 0)
                return false;
        if (r->n < r->max) {
                r->items[r->n++] = *s;
                return false;
        }
        if (ret_old)
                *ret_old = r->items[r->head];
        r->items[r->head] = *s;
        r->head = (r->head + 1) % r->max;
        return true;
}

int history_init(History *h, size_t max_ticks, size_t max_minutes) {
        int r;

        *h = (History) {};
        if (max_ticks == 0)
                return -EINVAL;
        r = ring_init(&h->ticks, max_ticks);
        if (r >= 0)
                r = ring_init(&h->minutes, max_minutes);
        if (r < 0)
                history_done(h);
        return r;
}

void history_done(History *h) {
        free(h->ticks.items);
        free(h->minutes.items);
        *h = (History) {};
}

static void minute_add(HistoryMinute *p, const HistorySample *s) {
        /* A tick of no length (the first) still counts, for next to nothing. */
        double w = (double) MAX(s->duration_usec, UINT64_C(1));

        if (p->ticks == 0)
                *p = (HistoryMinute) { .minute = s->monotonic_usec / HISTORY_MINUTE_USEC };
        p->newest = *s;
        p->ticks += s->ticks;
        p->duration_usec += s->duration_usec;
        p->weight_usec += w;
        p->saved += (double) s->saved_bytes * w;
        p->profit += (double) s->general_profit_bytes * w;
        p->cpu += s->ksmd_cpu_fraction * w;
        p->blocked += s->ksmd_blocked_fraction * w;
        p->scan += s->scan_pages_per_sec * w;
        if ((unsigned) s->phase < _TUNE_MODE_MAX)
                p->phase_usec[s->phase] += w;
}

static void minute_average(const HistoryMinute *p, HistorySample *ret) {
        HistorySample s = p->newest; /* times, knobs and processes as of its end */
        double w = p->weight_usec;

        s.duration_usec = p->duration_usec;
        s.ticks = p->ticks;
        s.saved_bytes = (uint64_t) llround(p->saved / w);
        s.general_profit_bytes = (int64_t) llround(p->profit / w);
        s.ksmd_cpu_fraction = p->cpu / w;
        s.ksmd_blocked_fraction = p->blocked / w;
        s.scan_pages_per_sec = p->scan / w;
        for (TuneMode m = 0; m < _TUNE_MODE_MAX; m++)
                if (p->phase_usec[m] > p->phase_usec[s.phase])
                        s.phase = m;
        *ret = s;
}

void history_add(History *h, const HistorySample *s) {
        HistorySample old, avg;

        if (!ring_push(&h->ticks, s, &old))
                return;
        if (h->pending.ticks > 0 && h->pending.minute != old.monotonic_usec / HISTORY_MINUTE_USEC) {
                minute_average(&h->pending, &avg);
                (void) ring_push(&h->minutes, &avg, NULL);
                h->pending.ticks = 0;
        }
        minute_add(&h->pending, &old);
}

size_t history_size(const History *h) {
        return h->minutes.n + (h->pending.ticks > 0) + h->ticks.n;
}

int history_get(const History *h, size_t i, HistorySample *ret) {
        if (i < h->minutes.n) {
                *ret = *ring_get(&h->minutes, i);
                return 0;
        }
        i -= h->minutes.n;
        if (h->pending.ticks > 0) {
                if (i == 0) {
                        minute_average(&h->pending, ret);
                        return 0;
                }
                i--;
        }
        if (i >= h->ticks.n)
                return -ENOENT;
        *ret = *ring_get(&h->ticks, i);
        return 0;
}
