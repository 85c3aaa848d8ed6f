/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <systemd/sd-bus.h>

#include "json.h"

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
        uint64_t interval_usec;         /* monitor, top --interval= */
        unsigned iterations;            /* top -n/--iterations=, 0: until Ctrl-C */
        uint64_t since_usec;            /* history --since=, 0: all it keeps */
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

/* ksmctl.c, for the verbs of the other files. The daemon over the bus:
 * bus_open() fills error when there is no bus; bus_call() never starts the
 * daemon through bus activation; exit_for_error() says what went wrong and
 * returns the exit status for it. properties_parse() hands each property
 * of a GetAll reply to read_one, which must read or skip its variant. */
int bus_open(const KsmctlOptions *o, sd_bus **ret, sd_bus_error *error);
int exit_for_no_bus(const KsmctlOptions *o, int r, const sd_bus_error *error);
int bus_call(sd_bus *bus, const char *interface, const char *member, sd_bus_error *error,
             sd_bus_message **ret_reply, const char *types, ...);
int exit_for_error(const sd_bus_error *e, int r, const char *what);
int properties_parse(sd_bus_message *reply, int (*read_one)(sd_bus_message *m, const char *name, void *userdata),
                     void *userdata);
const char *format_realtime(char *buf, size_t n, uint64_t usec);
const char *format_signed_bytes(char *buf, size_t n, int64_t v);

/* ksmctl-views.c: ksmctl top (-n, --interval, --json) and ksmctl history
 * (--since, --json). */
int verb_top(int argc, char **argv, const KsmctlOptions *o);
int verb_history(int argc, char **argv, const KsmctlOptions *o);

/* ksmctl-views.c: the controller's line of status and top, "Controller:
 * burst, allowance 12.3s left: 1.2 GiB newly mergeable"; nothing from a
 * daemon that does not report its phase. */
void print_controller(FILE *f, const char *phase, int64_t allowance_usec, const char *reason);
/* ... and its "controller" object of --json: phase, burst_allowance_usec, reason. */
void json_controller(JsonWriter *w, const char *phase, int64_t allowance_usec, const char *reason);
