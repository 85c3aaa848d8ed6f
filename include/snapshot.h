/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "ksm-sysfs.h"
#include "ksmd.h"
#include "procfs.h"
#include "root.h"

/* One reading of the world per tick. Sources fill it; nothing downstream of
 * it does I/O. */
typedef struct Snapshot {
        uint64_t time_usec;             /* CLOCK_MONOTONIC */
        bool ksm_present;
        KsmState ksm;
        Meminfo mem;
        Psi psi;
        bool ksmd_present;
        KsmdSample ksmd;
        KsmdWaitCounts ksmd_waits;      /* since the previous snapshot */
} Snapshot;

/* Fills every source. A source that fails is logged at debug level and
 * marked absent, except -ENOMEM which is returned. */
int snapshot_collect(const Root *root, int ksmd_pid, KsmdSampler *sampler, Snapshot *ret);

/* Bytes saved by KSM, estimated from pages_sharing (what `ksmctl status`
 * calls "saved"); general_profit subtracts rmap_item overhead. */
uint64_t snapshot_saved_bytes(const Snapshot *s, uint64_t page_size);
