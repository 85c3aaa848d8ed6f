/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* How wide output may be: $COLUMNS when set, else the terminal's width
 * when stdout is one; 0 (no limit) when it is not. Read at the first call
 * and kept, since a pager takes stdout over. */
size_t terminal_columns(void);

/* Sends the rest of stdout (and stderr, when that is the terminal too)
 * through a pager, as systemctl does: $KSMCTL_PAGER, else $SYSTEMD_PAGER,
 * else $PAGER, else "less -FRSXMK" (then more); an empty value or "cat"
 * means none. Nothing happens when stdout is no terminal or enabled is
 * false (--no-pager). 0, or -errno when no pager could be started (output
 * then goes on unpaged). */
int pager_open(bool enabled);
/* Flushes, gives the pager end of file and waits for it to quit. */
void pager_close(void);
