/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ksm-state.h"
#include "util.h"

static const char *const ksm_key_names[_KSM_KEY_MAX] = {
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

const char *ksm_key_to_string(KsmKey k) {
        if (k < 0 || k >= _KSM_KEY_MAX)
                return NULL;
        return ksm_key_names[k];
}

KsmKey ksm_key_from_string(const char *s) {
        for (int k = 0; k < _KSM_KEY_MAX; k++)
                if (strcmp(ksm_key_names[k], s) == 0)
                        return (KsmKey) k;
        return _KSM_KEY_INVALID;
}

bool ksm_key_is_knob(KsmKey k) {
        return k >= _KSM_FIRST_KNOB && k < _KSM_KEY_MAX;
}

const char *ksm_advisor_mode_to_string(uint64_t mode) {
        return mode == KSM_ADVISOR_SCAN_TIME ? "scan-time" : "none";
}

int ksm_parse_value(KsmKey k, const char *text, uint64_t *ret) {
        if (k == KSM_ADVISOR_MODE) {
                /* "[none] scan-time": the bracketed word is the active mode. A
                 * bare word (as the knob journal stores it) names it directly. */
                const char *o = strchr(text, '['), *c = o ? strchr(o, ']') : NULL;
                if (!o && !c) {
                        if (streq(text, "none"))
                                *ret = KSM_ADVISOR_NONE;
                        else if (streq(text, "scan-time"))
                                *ret = KSM_ADVISOR_SCAN_TIME;
                        else
                                return -EINVAL;
                        return 0;
                }
                if (!o || !c)
                        return -EINVAL;
                size_t len = (size_t) (c - o - 1);
                if (len == 4 && strncmp(o + 1, "none", 4) == 0)
                        *ret = KSM_ADVISOR_NONE;
                else if (len == 9 && strncmp(o + 1, "scan-time", 9) == 0)
                        *ret = KSM_ADVISOR_SCAN_TIME;
                else
                        return -EINVAL;
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
