/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/* Starts tests/helpers/ksm-workload ($KSM_WORKLOAD) with the given extra
 * arguments (NULL-terminated), waits for its "ready" line and registers it
 * with the KSM guard so it is killed on every exit path. */
typedef struct Workload {
        pid_t pid;
        int stdin_fd;           /* closing it makes the workload exit */
        uintptr_t addr;
} Workload;

int workload_start(Workload *w, const char *const *args);
/* Asks it to exit (EOF on stdin), waits up to 5 s, then SIGKILL. Returns its
 * exit status (or 128+signal). */
int workload_stop(Workload *w);
