/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "snapshot.h"

uint64_t snapshot_saved_bytes(const Snapshot *s, uint64_t page_size) {
        if (!ksm_state_has(&s->ksm, KSM_PAGES_SHARING))
                return 0;
        return s->ksm.value[KSM_PAGES_SHARING] * page_size;
}
