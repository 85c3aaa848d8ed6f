/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "ksm-state.h"
#include "ksmd-state.h"
#include "procfs-parse.h"

/* One reading of the world per tick. The sources fill it
 * (snapshot-collect.h); the pure stages (src/decide) read it and do no I/O. */
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

/* Bytes saved by KSM, estimated from pages_sharing (what `ksmctl status`
 * calls "saved"); general_profit subtracts rmap_item overhead. */
uint64_t snapshot_saved_bytes(const Snapshot *s, uint64_t page_size);
