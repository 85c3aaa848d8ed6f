/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>

#include "log.h"
#include "snapshot.h"
#include "util.h"

int snapshot_collect(const Root *root, int ksmd_pid, KsmdSampler *sampler, Snapshot *ret) {
        Snapshot s = { .time_usec = now_usec(CLOCK_MONOTONIC) };
        int r;

        r = ksm_sysfs_read(root, &s.ksm);
        if (r == -ENOMEM)
                return r;
        s.ksm_present = r >= 0;

        r = procfs_read_meminfo(root, &s.mem);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                log_debug_errno(r, "Cannot read %s/meminfo: %m", root->proc_path);

        r = procfs_read_psi_memory(root, &s.psi);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                log_debug_errno(r, "Cannot read %s/pressure/memory: %m", root->proc_path);

        if (ksmd_pid > 0) {
                r = ksmd_read_sample(root, ksmd_pid, &s.ksmd);
                if (r == -ENOMEM)
                        return r;
                s.ksmd_present = r >= 0;
        }
        ksmd_sampler_take(sampler, &s.ksmd_waits);

        *ret = s;
        return 0;
}

uint64_t snapshot_saved_bytes(const Snapshot *s, uint64_t page_size) {
        if (!ksm_state_has(&s->ksm, KSM_PAGES_SHARING))
                return 0;
        return s->ksm.value[KSM_PAGES_SHARING] * page_size;
}

double snapshot_ksmd_cpu_fraction(const Snapshot *previous, const Snapshot *current) {
        if (!previous->ksmd_present || !current->ksmd_present || current->time_usec <= previous->time_usec ||
            current->ksmd.cpu_ns < previous->ksmd.cpu_ns)
                return 0.0;
        return (double) (current->ksmd.cpu_ns - previous->ksmd.cpu_ns) /
               ((double) (current->time_usec - previous->time_usec) * (double) NSEC_PER_USEC);
}
