/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ksm-state.h"
#include "string-table.h"
#include "util.h"

static const char *const ksm_key_table[_KSM_KEY_MAX] = {
        [KSM_PAGES_SHARED] = "pages_shared",
        [KSM_PAGES_SHARING] = "pages_sharing",
        [KSM_PAGES_UNSHARED] = "pages_unshared",
        [KSM_PAGES_VOLATILE] = "pages_volatile",
        [KSM_PAGES_SCANNED] = "pages_scanned",
        [KSM_PAGES_SKIPPED] = "pages_skipped",
        [KSM_FULL_SCANS] = "full_scans",
        [KSM_GENERAL_PROFIT] = "general_profit",
        [KSM_ZERO_PAGES] = "ksm_zero_pages",
        [KSM_STABLE_NODE_CHAINS] = "stable_node_chains",
        [KSM_STABLE_NODE_DUPS] = "stable_node_dups",
        [KSM_RUN] = "run",
        [KSM_PAGES_TO_SCAN] = "pages_to_scan",
        [KSM_SLEEP_MILLISECS] = "sleep_millisecs",
        [KSM_SMART_SCAN] = "smart_scan",
        [KSM_USE_ZERO_PAGES] = "use_zero_pages",
        [KSM_MAX_PAGE_SHARING] = "max_page_sharing",
        [KSM_MERGE_ACROSS_NODES] = "merge_across_nodes",
        [KSM_STABLE_NODE_CHAINS_PRUNE_MILLISECS] = "stable_node_chains_prune_millisecs",
        [KSM_ADVISOR_MODE] = "advisor_mode",
        [KSM_ADVISOR_MAX_CPU] = "advisor_max_cpu",
        [KSM_ADVISOR_MIN_PAGES_TO_SCAN] = "advisor_min_pages_to_scan",
        [KSM_ADVISOR_MAX_PAGES_TO_SCAN] = "advisor_max_pages_to_scan",
        [KSM_ADVISOR_TARGET_SCAN_TIME] = "advisor_target_scan_time",
};

DEFINE_STRING_TABLE_LOOKUP(ksm_key, KsmKey);

bool ksm_key_is_knob(KsmKey k) {
        return k >= _KSM_FIRST_KNOB && k < _KSM_KEY_MAX;
}

static const char *const ksm_advisor_mode_table[_KSM_ADVISOR_MODE_MAX] = {
        [KSM_ADVISOR_NONE] = "none",
        [KSM_ADVISOR_SCAN_TIME] = "scan-time",
};

/* "none" for a value the kernel would not know either: it is what
 * ksm_format_value() writes back, and the kernel accepts it. */
DEFINE_STRING_TABLE_TO_STRING_FALLBACK(ksm_advisor_mode, uint64_t, "none");
DEFINE_STRING_TABLE_FROM_STRING(ksm_advisor_mode, KsmAdvisorMode);

int ksm_parse_value(KsmKey k, const char *text, uint64_t *ret) {
        if (k == KSM_ADVISOR_MODE) {
                /* "[none] scan-time": the bracketed word is the active mode. A
                 * bare word (as the knob journal stores it) names it directly. */
                const char *o = strchr(text, '['), *c = o ? strchr(o, ']') : NULL;
                KsmAdvisorMode mode;
                if (!o)
                        mode = ksm_advisor_mode_from_string(text);
                else {
                        char word[16];
                        size_t len = c ? (size_t) (c - o - 1) : SIZE_MAX;
                        if (len >= sizeof word)
                                return -EINVAL;
                        memcpy(word, o + 1, len);
                        word[len] = 0;
                        mode = ksm_advisor_mode_from_string(word);
                }
                if (mode < 0)
                        return -EINVAL;
                *ret = (uint64_t) mode;
                return 0;
        }
        if (k == KSM_GENERAL_PROFIT) {
                /* general_profit goes negative when rmap_item overhead exceeds savings. */
                int64_t v;
                int r = safe_atoi64(text, &v);
                if (r < 0)
                        return r;
                *ret = (uint64_t) v;
                return 0;
        }
        return safe_atou64(text, ret);
}

int ksm_format_value(KsmKey k, uint64_t value, char *buf, size_t n) {
        int l;
        if (k == KSM_ADVISOR_MODE)
                l = snprintf(buf, n, "%s", ksm_advisor_mode_to_string(value));
        else if (k == KSM_GENERAL_PROFIT)
                l = snprintf(buf, n, "%" PRIi64, (int64_t) value);
        else
                l = snprintf(buf, n, "%" PRIu64, value);
        return l < 0 || (size_t) l >= n ? -ENOBUFS : 0;
}
