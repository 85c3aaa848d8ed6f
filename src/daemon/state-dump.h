/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

/* SIGUSR1 makes the daemon write <RuntimeDirectory>/state.json: its process
 * model (pid, start time and verdict of every process it knows), the discovery
 * counters and the loop's timing. For the storm and fault tests (does the
 * model match /proc after 30 000 processes came and went?) and for an
 * administrator chasing such a mismatch; the bus is the interface for
 * everything else. Replaced atomically; "seq" counts dumps. */

typedef struct LoopStats {
        uint64_t ticks;
        uint64_t last_tick_usec;        /* how long manager_tick() took */
        uint64_t max_tick_usec;
        uint64_t total_tick_usec;
        uint64_t total_tick_cpu_usec;   /* the loop thread's CPU time in manager_tick() */
        uint64_t dumps;
} LoopStats;

static inline void loop_stats_record_tick(LoopStats *s, uint64_t duration_usec, uint64_t cpu_usec) {
        s->ticks++;
        s->total_tick_cpu_usec += cpu_usec;
        s->last_tick_usec = duration_usec;
        s->total_tick_usec += duration_usec;
        if (duration_usec > s->max_tick_usec)
                s->max_tick_usec = duration_usec;
}

struct Manager;
/* Writes the dump to path. -errno. */
int state_dump_write(struct Manager *m, const char *path);
