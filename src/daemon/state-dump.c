/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "json.h"
#include "manager.h"
#include "state-dump.h"
#include "util.h"

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static void write_exec_latencies(JsonWriter *w, const Discovery *d) {
        enum { N = 65536 };
        _cleanup_free_ uint64_t *lat = malloc(N * sizeof *lat);
        size_t n = lat ? discovery_exec_latencies(d, lat, N) : 0;

        json_key(w, "exec_latency_usec");
        json_begin_object(w);
        json_kv_u64(w, "n", n);
        if (n > 0) {
                qsort(lat, n, sizeof *lat, cmp_u64);
                json_kv_u64(w, "p50", lat[n / 2]);
                json_kv_u64(w, "p99", lat[MIN(n - 1, n * 99 / 100)]);
                json_kv_u64(w, "max", lat[n - 1]);
        }
        json_end_object(w);
}

static void write_discovery(JsonWriter *w, Discovery *d) {
        DiscoveryStatus s;
        const Process *p;

        discovery_get_status(d, &s);
        json_key(w, "discovery");
        json_begin_object(w);
        json_kv_string(w, "mode", discovery_mode_to_string(s.mode));
        json_kv_string(w, "mode_reason", s.mode_reason);
        json_kv_u64(w, "processes", s.processes);
        json_kv_u64(w, "full_scans", s.full_scans);
        json_kv_u64(w, "overflow_resyncs", s.overflow_resyncs);
        json_kv_u64(w, "last_scan_usec", s.last_scan_usec);
        json_kv_u64(w, "events", s.events.events);
        json_kv_u64(w, "datagrams", s.events.datagrams);
        json_kv_u64(w, "overflows", s.events.overflows);
        json_kv_u64(w, "malformed", s.events.malformed);
        json_kv_u64(w, "events_cpu_usec", s.events.cpu_usec);
        json_kv_u64(w, "event_drains", s.events.drains);
        json_kv_u64(w, "event_drains_deferred", s.events.deferred_drains);
        json_kv_u64(w, "slow_processes", s.slow_processes);
        json_kv_u64(w, "policies", s.policies);
        /* The counts and sums kept as processes change, checked against a
         * walk of the table: a difference is a bug, which the storm test
         * looks for. */
        char why[256];
        const char *wrong = discovery_verify_index(d, why, sizeof why);
        json_kv_u64(w, "index_errors", wrong ? 1 : 0);
        json_kv_string(w, "index_error", wrong ?: "");
        json_end_object(w);

        write_exec_latencies(w, d);

        /* One string per process, "pid start_time_ticks verdict", so a shell
         * test can compare it with /proc without a JSON parser. */
        json_key(w, "processes");
        json_begin_array(w);
        PROCESS_TABLE_FOREACH(p, discovery_processes(d), i) {
                char line[96];
                snprintf(line, sizeof line, "%d %" PRIu64 " %s", p->pid, p->start_time_ticks,
                         p->have_verdict ? verdict_action_to_string(p->verdict.action) : "none");
                json_string(w, line);
        }
        json_end_array(w);
}

int state_dump_write(Manager *m, const char *path) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        JsonWriter w;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return -ENOMEM;
        m->loop.dumps++;
        json_init(&w, f, true);
        json_begin_object(&w);
        json_kv_u64(&w, "seq", m->loop.dumps);
        json_kv_i64(&w, "pid", getpid());
        json_kv_u64(&w, "monotonic_usec", now_usec(CLOCK_MONOTONIC));
        json_key(&w, "loop");
        json_begin_object(&w);
        json_kv_u64(&w, "ticks", m->loop.ticks);
        json_kv_u64(&w, "last_tick_usec", m->loop.last_tick_usec);
        json_kv_u64(&w, "max_tick_usec", m->loop.max_tick_usec);
        json_kv_u64(&w, "mean_tick_usec", m->loop.ticks ? m->loop.total_tick_usec / m->loop.ticks : 0);
        /* CPU, not wall time: what the benchmarks of the daemon's own cost
         * compare, apart from what other users' forks cost it in events */
        json_kv_u64(&w, "total_tick_cpu_usec", m->loop.total_tick_cpu_usec);
        json_end_object(&w);
        if (m->discovery)
                write_discovery(&w, m->discovery);
        json_end_object(&w);
        fputc('\n', f);
        if (fclose(f) != 0)
                return -ENOMEM;
        /* Every process's pid and verdict, hidden processes too: root's alone. */
        return write_file_atomic(path, buf, size, 0600);
}
