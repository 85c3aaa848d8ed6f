/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/* One iteration of the address-space churn that ksmd's mmap_read_lock
 * meets (the shape of the mailing-list microbenchmark, ../shared/seeds/):
 * mmap LEN bytes, optionally mark them MADV_MERGEABLE (as QEMU marks every
 * memory backend it adds), write one byte, munmap. The mmap, the madvise
 * and the munmap each take the mmap_lock for writing. The one touched page
 * makes munmap zap a page table and free a page, as an allocator that uses
 * its memory does; an untouched mapping would only measure VMA bookkeeping.
 * Shared by ksm-workload's churn threads and the ksmt2-churn.so preload. */
#include <stdbool.h>
#include <stddef.h>
#include <sys/mman.h>

static inline bool churn_once(size_t len, bool mark, bool touch) {
        char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return false;
        if (mark)
                (void) madvise(p, len, MADV_MERGEABLE);
        if (touch)
                *(volatile char *) p = 1;
        (void) munmap(p, len);
        return true;
}
