/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>

#include "log.h"
#include "ksm-sysfs.h"
#include "procfs.h"
#include "snapshot-collect.h"
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
