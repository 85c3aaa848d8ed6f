/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "conf-parse.h"
#include "policy.h"

/* Reading policy files (policy.h says what they hold). */

/* Parses one file. -EBADMSG when the file is rejected (syntax), -EPERM when
 * running as root and the file is not root's alone to write, -errno on
 * I/O; diagnostics go into diag. A policy that parsed has every bad key
 * reported and skipped. Returns 1 when the file masks only (empty). */
int policy_load_file(const char *path, Policy *ret, ConfDiag *diag);

/* Loads every *.policy file in dirs. A rejected file keeps its policy from
 * previous (the last good set) when previous had the same path, with a
 * diagnostic saying so; otherwise it is left out. Missing directories are
 * fine. -ENOMEM only. */
int policy_set_load(char *const *dirs, const PolicySet *previous, PolicySet *ret, ConfDiag *diag);

/* Every key, for the documentation test. */
extern const ConfItem policy_table[];
extern const size_t policy_table_size;
