/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "controller.h"

/* What the daemon did over time, for `ksmctl history` and the bus's
 * History(): the figures of every tick, in memory that does not grow. The
 * newest max_ticks ticks are kept as they were; a tick that leaves them is
 * averaged with the other ticks of its minute (of CLOCK_MONOTONIC, so a
 * clock step cannot merge or split minutes), and the newest max_minutes
 * such averages are kept. With HISTORY_TICKS and HISTORY_MINUTES: the last
 * hour in full at the default Interval=5s (less while bursting, at a tick
 * every 250 ms), 24 hours in all, in under 250 KiB. Pure: the caller passes
 * the times in. */
#define HISTORY_TICKS 720
#define HISTORY_MINUTES 1440
#define HISTORY_MINUTE_USEC (60 * USEC_PER_SEC)

typedef struct HistorySample {
        uint64_t monotonic_usec;        /* the end of the time it covers: its (newest) tick */
        uint64_t realtime_usec;         /* the same moment, CLOCK_REALTIME, for people */
        uint64_t duration_usec;         /* the tick's length; of a minute, the sum of its ticks' */
        uint32_t ticks;                 /* 1; of a minute, how many ticks it averages */
        TuneMode phase;                 /* of a minute, the one it spent the most time in (a tie: the newest) */
        uint64_t saved_bytes;
        int64_t general_profit_bytes;
        double ksmd_cpu_fraction;       /* of one CPU */
        double ksmd_blocked_fraction;   /* of ksmd's state samples, blocked on an mmap_lock */
        double scan_pages_per_sec;      /* pages ksmd scanned a second */
        uint64_t pages_to_scan, sleep_ms; /* the knobs at the (newest) tick */
        uint32_t managed_processes;     /* at the (newest) tick */
} HistorySample;

typedef struct HistoryRing {
        HistorySample *items;
        size_t max, n;
        size_t head;                    /* the oldest, once n == max */
} HistoryRing;

/* The minute being averaged from the ticks that left full resolution:
 * sums weighted by each tick's duration, so a 250 ms burst tick counts for
 * a twentieth of a 5 s one. */
typedef struct HistoryMinute {
        uint64_t minute;                /* monotonic_usec / HISTORY_MINUTE_USEC */
        HistorySample newest;
        uint32_t ticks;                 /* 0: no minute is being averaged */
        uint64_t duration_usec;
        double weight_usec, saved, profit, cpu, blocked, scan;
        double phase_usec[_TUNE_MODE_MAX];
} HistoryMinute;

typedef struct History {
        HistoryRing ticks;              /* full resolution, the newest */
        HistoryMinute pending;          /* older than every tick, newer than every minute */
        HistoryRing minutes;            /* the averages, oldest first */
} History;

/* Allocates both rings up front, so that adding never fails: -ENOMEM, or
 * -EINVAL when max_ticks is 0. */
int history_init(History *h, size_t max_ticks, size_t max_minutes);
void history_done(History *h);

void history_add(History *h, const HistorySample *s);
/* Entries held: minutes, the minute being averaged, ticks. */
size_t history_size(const History *h);
/* i = 0 is the oldest; -ENOENT past the end. */
int history_get(const History *h, size_t i, HistorySample *ret);
