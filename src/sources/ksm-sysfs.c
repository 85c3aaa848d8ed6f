/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fileio.h"
#include "ksm-sysfs.h"
#include "log.h"
#include "util.h"

int ksm_sysfs_read_one(const Root *root, KsmKey k, uint64_t *ret) {
        _cleanup_free_ char *line = NULL;
        int r;

        if (root->ksm_fd < 0)
                return -ENODEV;
        r = read_one_line_at(root->ksm_fd, ksm_key_to_string(k), &line);
        if (r < 0)
                return r == -ENOENT ? -EOPNOTSUPP : r;
        return ksm_parse_value(k, line, ret);
}

int ksm_sysfs_read(const Root *root, KsmState *ret) {
        KsmState s = {};

        if (root->ksm_fd < 0)
                return -ENODEV;

        for (int k = 0; k < _KSM_KEY_MAX; k++) {
                uint64_t v;
                int r = ksm_sysfs_read_one(root, (KsmKey) k, &v);
                if (r == -EOPNOTSUPP)
                        continue;
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        log_debug_errno(r, "Cannot read KSM file %s, treating as absent: %m",
                                        ksm_key_to_string(k));
                        continue;
                }
                s.value[k] = v;
                s.present_mask |= UINT64_C(1) << k;
        }
        *ret = s;
        return 0;
}

int ksm_sysfs_write(const Root *root, KsmKey k, uint64_t value) {
        char buf[32];
        int r;

        if (!ksm_key_is_knob(k))
                return -EROFS;
        if (root->ksm_fd < 0)
                return -ENODEV;
        r = ksm_format_value(k, value, buf, sizeof buf);
        if (r < 0)
                return r;
        r = write_string_at(root->ksm_fd, ksm_key_to_string(k), buf);
        return r == -ENOENT ? -EOPNOTSUPP : r;
}
