/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdio.h>

#include "manager.h"

/* The administrator's view of the daemon: its side of the system-bus API
 * (org.ksmtuned2(5)): object BUS_PATH,
 * interface BUS_INTERFACE, name BUS_NAME. The bus only reads the manager;
 * Pause/Resume/SetMode/Reload call its verbs (manager.h), which the next
 * tick obeys.
 *
 * A system bus that is not there (not started yet, restarted, or absent as on
 * a bare VM) is not an error: the daemon goes on tuning, says so once, and
 * retries with backoff until it connects; a lost connection is retried the
 * same way. $DBUS_SYSTEM_BUS_ADDRESS is honoured (tests use a private bus). */
int manager_bus_new(Manager *m, ManagerBus **ret);
ManagerBus *manager_bus_free(ManagerBus *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(ManagerBus *, manager_bus_free);

/* Once per tick: PropertiesChanged for every property whose value moved
 * since the last emission (one signal carrying all of them). */
void manager_bus_emit_changes(Manager *m);

/* Whether the name is currently owned by us, for tests and status. */
bool manager_bus_connected(const Manager *m);

/* Writes the introspection XML of BUS_PATH as sd-bus generates it from the
 * vtable, without any bus: a private peer-to-peer connection over a
 * socketpair asks our own object. */
int manager_bus_introspect(FILE *f);
