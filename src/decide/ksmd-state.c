/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "ksmd-state.h"
#include "string-table.h"
#include "util.h"

static const char *const ksmd_wait_table[_KSMD_WAIT_MAX] = {
        [KSMD_RUNNING] = "running",
        [KSMD_SLEEPING] = "sleeping",
        [KSMD_BLOCKED_MMAP_LOCK] = "blocked-mmap-lock",
        [KSMD_BLOCKED_OTHER] = "blocked-other",
        [KSMD_OTHER] = "other",
};

DEFINE_STRING_TABLE_TO_STRING(ksmd_wait, KsmdWait);

KsmdWait ksmd_classify_wait(char state, const char *wchan) {
        static const char *const rwsem_wchans[] = {
                "ksm_scan_thread", "rwsem_down_read_slowpath", "down_read",
                "down_read_killable", "mmap_read_lock", "rwsem_down_write_slowpath",
        };
        switch (state) {
        case 'R':
                return KSMD_RUNNING;
        case 'S':
        case 'I':
                return KSMD_SLEEPING;
        case 'D':
                for (size_t i = 0; i < ELEMENTSOF(rwsem_wchans); i++)
                        if (wchan && strcmp(wchan, rwsem_wchans[i]) == 0)
                                return KSMD_BLOCKED_MMAP_LOCK;
                return KSMD_BLOCKED_OTHER;
        default:
                return KSMD_OTHER;
        }
}
