/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>
#include <strings.h>

#include "merge-method.h"

const char *const merge_method_names[] = {
        [MERGE_METHOD_ANY] = "any",
        [MERGE_METHOD_MADVISE] = "madvise",
        [MERGE_METHOD_PROCESS_KSM] = "process_ksm",
        [MERGE_METHOD_INJECT] = "inject",
        [MERGE_METHOD_NONE] = "none",
        [_MERGE_METHOD_MAX] = NULL,
};

const char *merge_method_to_string(MergeMethod m) {
        if (m < 0 || m >= _MERGE_METHOD_MAX)
                return NULL;
        return merge_method_names[m];
}

MergeMethod merge_method_from_string(const char *s) {
        for (int i = 0; i < _MERGE_METHOD_MAX; i++)
                if (strcasecmp(merge_method_names[i], s) == 0)
                        return (MergeMethod) i;
        return _MERGE_METHOD_INVALID;
}
