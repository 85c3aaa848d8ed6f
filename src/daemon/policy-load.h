/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "conf-parse.h"
#include "policy.h"

/* Reading policy files (policy.h says what they hold). */

/* Parses one file. -EBADMSG when the file is rejected (syntax, a bad value,
 * not a regular file), -EPERM when running as root and the file is not
 * root's alone to write (conf_file_open()), -ENOENT when it is gone,
 * -errno on I/O; diagnostics go into diag. A policy that parsed has every
 * unknown key reported, and then matches nothing. Returns 1 when the file
 * masks only (empty, or a symlink to /dev/null), which counts only once
 * its owner and mode passed. */
int policy_load_file(const char *path, Policy *ret, ConfDiag *diag);

/* Loads every *.policy file in dirs. A rejected file keeps its policy from
 * previous (the last good set) when previous had the same path, with a
 * diagnostic saying so (n_kept); otherwise it is left out (n_rejected).
 * Missing directories are fine; an untrusted or unreadable one counts as
 * rejected, its files left out. rejected_reason is the first rejection's
 * first diagnostic. -ENOMEM only. */
int policy_set_load(char *const *dirs, const PolicySet *previous, PolicySet *ret, ConfDiag *diag);

/* Every key, for the documentation test. */
extern const ConfItem policy_table[];
extern const size_t policy_table_size;
