/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* Exit statuses of ksmctl, documented in ksmctl(1). */
enum {
        KSMCTL_EXIT_OK = 0,
        KSMCTL_EXIT_FAILURE = 1,
        KSMCTL_EXIT_USAGE = 2,
        KSMCTL_EXIT_NOT_RUNNING = 3,    /* the daemon is not on the bus */
        KSMCTL_EXIT_ACCESS_DENIED = 4,
        KSMCTL_EXIT_NO_SUCH_PROCESS = 5,
};

/* --json=MODE. Off is 0, so "if (o->json)" reads as before. Plain --json
 * is AUTO: indented for a verb that prints one document, one line per
 * document for one that streams them (monitor), as it always was. */
typedef enum KsmctlJson {
        KSMCTL_JSON_OFF = 0,
        KSMCTL_JSON_AUTO,
        KSMCTL_JSON_PRETTY,
        KSMCTL_JSON_SHORT,
} KsmctlJson;

typedef struct KsmctlOptions {
        KsmctlJson json;
        bool cgroups;                   /* list --cgroups */
        bool all;                       /* list --all */
        uint64_t interval_usec;         /* monitor --interval= */
        bool no_pager;
        bool no_legend;                 /* tables without header and footer */
        bool quiet;                     /* read verbs print nothing: the exit status says it */
        const char *host;               /* -H [USER@]HOST: over ssh */
        const char *machine;            /* -M CONTAINER: a local container */
} KsmctlOptions;

static inline bool ksmctl_json_pretty(const KsmctlOptions *o, bool stream) {
        return o->json == KSMCTL_JSON_PRETTY || (o->json == KSMCTL_JSON_AUTO && !stream);
}

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
