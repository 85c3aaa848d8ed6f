/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses of ksmctl, documented in ksmctl(1). */
enum {
        KSMCTL_EXIT_OK = 0,
        KSMCTL_EXIT_FAILURE = 1,
        KSMCTL_EXIT_USAGE = 2,
        KSMCTL_EXIT_NOT_RUNNING = 3,    /* the daemon is not on the bus */
        KSMCTL_EXIT_ACCESS_DENIED = 4,
        KSMCTL_EXIT_NO_SUCH_PROCESS = 5,
};

typedef struct KsmctlOptions {
        bool json;
        bool cgroups;                   /* list --cgroups */
        bool all;                       /* list --all */
        uint64_t interval_usec;         /* monitor --interval= */
} KsmctlOptions;

/* A verb gets argv starting at its own name; max_args -1 means unbounded.
 * Options after the verb's name (status --json, list --cgroups) are parsed
 * only for verbs that set options; the others (exec -- CMD ...) get their
 * arguments untouched. */
typedef struct KsmctlVerb {
        const char *name;
        int min_args, max_args;
        int (*run)(int argc, char **argv, const KsmctlOptions *o);
        bool options;
} KsmctlVerb;

/* ksmctl exec [--] CMD [ARGS...] (ksmctl-exec.c): returns only on failure,
 * with 2 (usage), 1, or 127/126 when CMD is not found or not executable. */
int verb_exec(int argc, char **argv, const KsmctlOptions *o);

/* ksmctl-views.c: the controller's line of status and top, "Controller:
 * burst, allowance 12.3s left: 1.2 GiB newly mergeable"; nothing from a
 * daemon that does not report its phase. */
void print_controller(FILE *f, const char *phase, int64_t allowance_usec, const char *reason);
