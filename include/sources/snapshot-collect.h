/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "ksmd.h"
#include "root.h"
#include "snapshot.h"

/* Fills every source. A source that fails is logged at debug level and
 * marked absent, except -ENOMEM which is returned. */
int snapshot_collect(const Root *root, int ksmd_pid, KsmdSampler *sampler, Snapshot *ret);
