/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "ksm-state.h"
#include "root.h"

/* Reads every file present. -ENODEV when KSM itself is absent. A single file
 * that fails to parse is logged at debug level and treated as absent. */
int ksm_sysfs_read(const Root *root, KsmState *ret);
int ksm_sysfs_read_one(const Root *root, KsmKey k, uint64_t *ret);

/* Writes one knob and returns the kernel's verdict as -errno (EINVAL for
 * pages_to_scan while the advisor runs, EBUSY for merge_across_nodes with
 * shared pages, EPERM/EACCES/EROFS when not allowed, -EOPNOTSUPP when the
 * file does not exist on this kernel). */
int ksm_sysfs_write(const Root *root, KsmKey k, uint64_t value);
