/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Starts tests/helpers/ksm-workload ($KSM_WORKLOAD) with the given extra
 * arguments (NULL-terminated), waits for its "ready" line and registers it
 * with the KSM guard so it is killed on every exit path. */
typedef struct Workload {
        pid_t pid;
        int stdin_fd;           /* closing it makes the workload exit */
        int stdout_fd;          /* its stdout after "ready" with keep_stdout, else -1 */
        uintptr_t addr;
} Workload;

int workload_start(Workload *w, const char *const *args);
/* The same for any helper that prints "ready PID ADDR" (bin: a path, or the
 * name of an environment variable holding one); keep_stdout keeps its stdout
 * open for workload_command(). */
int workload_spawn(Workload *w, const char *bin, const char *const *args, bool keep_stdout);
/* Writes line (with a newline) to its stdin and reads one line of reply
 * into buf (without the newline), waiting up to timeout_ms. */
int workload_command(Workload *w, const char *line, char *buf, size_t n, int timeout_ms);
/* Asks it to exit (EOF on stdin), waits up to 5 s, then SIGKILL. Returns its
 * exit status (or 128+signal). */
int workload_stop(Workload *w);
