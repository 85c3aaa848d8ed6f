/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every counter and knob of /sys/kernel/mm/ksm this code knows. A file the
 * running kernel lacks is "not supported" (its bit in present_mask is clear),
 * never an error. */
typedef enum KsmKey {
        /* counters (read-only) */
        KSM_PAGES_SHARED,
        KSM_PAGES_SHARING,
        KSM_PAGES_UNSHARED,
        KSM_PAGES_VOLATILE,
        KSM_PAGES_SCANNED,
        KSM_PAGES_SKIPPED,
        KSM_FULL_SCANS,
        KSM_GENERAL_PROFIT,     /* signed in the kernel; stored as int64 bits */
        KSM_ZERO_PAGES,
        KSM_STABLE_NODE_CHAINS,
        KSM_STABLE_NODE_DUPS,
        /* knobs (writable) */
        KSM_RUN,
        KSM_PAGES_TO_SCAN,
        KSM_SLEEP_MILLISECS,
        KSM_SMART_SCAN,
        KSM_USE_ZERO_PAGES,
        KSM_MAX_PAGE_SHARING,
        KSM_MERGE_ACROSS_NODES,
        KSM_STABLE_NODE_CHAINS_PRUNE_MILLISECS,
        KSM_ADVISOR_MODE,       /* KsmAdvisorMode */
        KSM_ADVISOR_MAX_CPU,
        KSM_ADVISOR_MIN_PAGES_TO_SCAN,
        KSM_ADVISOR_MAX_PAGES_TO_SCAN,
        KSM_ADVISOR_TARGET_SCAN_TIME,
        _KSM_KEY_MAX,
        _KSM_KEY_INVALID = -EINVAL,
} KsmKey;

#define _KSM_FIRST_KNOB KSM_RUN

typedef enum KsmAdvisorMode {
        KSM_ADVISOR_NONE = 0,
        KSM_ADVISOR_SCAN_TIME = 1,
        _KSM_ADVISOR_MODE_MAX,
        _KSM_ADVISOR_MODE_INVALID = -EINVAL,
} KsmAdvisorMode;

typedef struct KsmState {
        uint64_t value[_KSM_KEY_MAX];
        uint64_t present_mask;  /* bit per KsmKey */
} KsmState;

const char *ksm_key_to_string(KsmKey k);   /* sysfs file name */
KsmKey ksm_key_from_string(const char *s);
bool ksm_key_is_knob(KsmKey k);
static inline bool ksm_state_has(const KsmState *s, KsmKey k) {
        return s->present_mask & (UINT64_C(1) << k);
}
static inline int64_t ksm_state_general_profit(const KsmState *s) {
        return (int64_t) s->value[KSM_GENERAL_PROFIT];
}

/* Parsers for sysfs contents, exposed for tests. */
int ksm_parse_value(KsmKey k, const char *text, uint64_t *ret);
const char *ksm_advisor_mode_to_string(uint64_t mode); /* "none" for an unknown value */
KsmAdvisorMode ksm_advisor_mode_from_string(const char *s); /* the bare word: "none", "scan-time" */

/* Formats a knob value as the kernel spells it (advisor_mode as a word). */
int ksm_format_value(KsmKey k, uint64_t value, char *buf, size_t n);
