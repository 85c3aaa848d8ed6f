/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "manager.h"

/* The fleet's view of the daemon: once per tick, the Prometheus textfile of
 * [Metrics] TextfilePath=, if set, replaced atomically (metrics.h formats
 * it). A path that cannot be written is logged once per distinct error
 * (Manager.metrics_error) and tuning goes on. */
void manager_write_metrics(Manager *m);
