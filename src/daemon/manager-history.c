/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "manager-history.h"
#include "util.h"

static uint64_t counter_delta(uint64_t now, uint64_t before) {
        return now > before ? now - before : 0;
}

void manager_record_history(Manager *m) {
        const Snapshot *s = &m->snapshot, *p = m->have_previous ? &m->previous : NULL;
        const Controller *c = manager_controller(m);
        uint64_t dt = p ? counter_delta(s->time_usec, p->time_usec) : 0;

        HistorySample x = {
                .monotonic_usec = s->time_usec,
                .realtime_usec = now_usec(CLOCK_REALTIME),
                .duration_usec = dt,
                .ticks = 1,
                .phase = c ? c->mode : TUNE_MODE_MAINTAIN,
                .saved_bytes = snapshot_saved_bytes(s, page_size()),
                .general_profit_bytes = ksm_state_has(&s->ksm, KSM_GENERAL_PROFIT) ? ksm_state_general_profit(&s->ksm)
                                                                                 : 0,
                .ksmd_blocked_fraction = ksmd_wait_fraction(&s->ksmd_waits, KSMD_BLOCKED_MMAP_LOCK),
                .pages_to_scan = s->ksm.value[KSM_PAGES_TO_SCAN],
                .sleep_ms = s->ksm.value[KSM_SLEEP_MILLISECS],
                .managed_processes = (uint32_t) manager_managed_processes(m),
        };
        /* From the two snapshots rather than the model, which a paused
         * tick does not update. */
        if (dt > 0) {
                if (s->ksmd_present && p->ksmd_present)
                        x.ksmd_cpu_fraction = (double) counter_delta(s->ksmd.cpu_ns, p->ksmd.cpu_ns) /
                                              ((double) dt * NSEC_PER_USEC);
                x.scan_pages_per_sec = (double) counter_delta(s->ksm.value[KSM_PAGES_SCANNED],
                                                              p->ksm.value[KSM_PAGES_SCANNED]) *
                                       USEC_PER_SEC / (double) dt;
        }
        history_add(&m->history, &x);
}
