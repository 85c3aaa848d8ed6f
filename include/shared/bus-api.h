/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Names of the D-Bus API shared by the daemon (manager-bus.c) and ksmctl,
 * documented in org.ksmtuned2(5). BUS_NAME, BUS_PATH and BUS_INTERFACE come
 * from config.h. */
#define BUS_ERROR_NO_SUCH_PROCESS "org.ksmtuned2.Error.NoSuchProcess"
/* Explain of a process the caller may not see (another user's). */
#define BUS_ERROR_PROCESS_HIDDEN "org.ksmtuned2.Error.ProcessHidden"
#define BUS_ERROR_RELOAD_FAILED "org.ksmtuned2.Error.ReloadFailed"
#define BUS_ERROR_INVALID_MODE "org.ksmtuned2.Error.InvalidMode"
