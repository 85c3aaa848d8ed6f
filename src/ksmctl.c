/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ksmctl: the command-line client of ksmtuned2. Each verb is a function in
 * the table below; verbs that talk to the daemon do so over the system bus. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ksmctl.h"
#include "log.h"
#include "util.h"

static void help(void) {
        printf("%s [OPTIONS...] COMMAND ...\n\n"
               "Query and control ksmtuned2.\n\n"
               "Commands:\n"
               "  help                 Show this help\n"
               "\nOptions:\n"
               "  -h --help            Show this help\n"
               "     --version         Show the version\n"
               "     --json            JSON output for read commands\n",
               program_invocation_short_name);
}

static int verb_help(int argc, char **argv, const KsmctlOptions *o) {
        help();
        return KSMCTL_EXIT_OK;
}

static const KsmctlVerb verbs[] = {
        { "help", 0, 0, verb_help },
};

int main(int argc, char *argv[]) {
        enum { ARG_VERSION = 0x100, ARG_JSON };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "json", no_argument, NULL, ARG_JSON },
                {},
        };
        KsmctlOptions o = {};
        int c;

        log_set_target(LOG_TARGET_STDERR);
        /* "+" stops at the first non-option, so "exec -- CMD ARGS" keeps its own arguments. */
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return KSMCTL_EXIT_OK;
                case ARG_VERSION:
                        printf("ksmctl %s\n", PACKAGE_VERSION);
                        return KSMCTL_EXIT_OK;
                case ARG_JSON:
                        o.json = true;
                        break;
                default:
                        return KSMCTL_EXIT_USAGE;
                }
        if (optind >= argc) {
                help();
                return KSMCTL_EXIT_USAGE;
        }
        const char *name = argv[optind];
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++) {
                const KsmctlVerb *v = &verbs[i];
                int n = argc - optind - 1;
                if (!streq(v->name, name))
                        continue;
                if (n < v->min_args || (v->max_args >= 0 && n > v->max_args)) {
                        log_error("Wrong number of arguments for \"%s\"; see --help.", name);
                        return KSMCTL_EXIT_USAGE;
                }
                return v->run(argc - optind, argv + optind, &o);
        }
        log_error("Unknown command \"%s\"; see --help.", name);
        return KSMCTL_EXIT_USAGE;
}
