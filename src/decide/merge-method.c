/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "merge-method.h"
#include "string-table.h"

const char *const merge_method_table[_MERGE_METHOD_MAX] = {
        [MERGE_METHOD_ANY] = "any",
        [MERGE_METHOD_MADVISE] = "madvise",
        [MERGE_METHOD_PROCESS_KSM] = "process_ksm",
        [MERGE_METHOD_INJECT] = "inject",
        [MERGE_METHOD_NONE] = "none",
};

DEFINE_STRING_TABLE_LOOKUP(merge_method, MergeMethod);
