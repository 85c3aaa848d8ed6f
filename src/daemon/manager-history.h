/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "manager.h"

/* The operators' view over time: once per tick, what the tick saw and did
 * goes into Manager.history (history.h), which the bus's History() serves.
 * Paused ticks count too: measuring goes on. */
void manager_record_history(Manager *m);
