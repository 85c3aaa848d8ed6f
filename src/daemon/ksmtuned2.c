/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>

#include "conf.h"
#include "fileio.h"
#include "injector.h"
#include "log.h"
#include "manager-bus.h"
#include "manager.h"
#include "policy-load.h"
#include "probe.h"
#include "root.h"
#include "strmap.h"
#include "util.h"

/* Exit statuses, documented in ksmtuned2(8). */
enum {
        EXIT_OK = 0,
        EXIT_FAIL = 1,
        EXIT_USAGE = 2,
        EXIT_CONFIG = 3,        /* --check-config found problems / config unparsable */
        EXIT_NO_KSM = 4,        /* the kernel has no KSM */
};

static const char *arg_config_path = NULL;
static const char *arg_root = NULL;
static bool arg_dry_run = false;
static bool arg_probe = false;
static bool arg_json = false;
static bool arg_check_config = false;
static bool arg_cat_config = false;
static bool arg_bus_introspect = false;
static int arg_log_level = -1;
/* Modes of the same binary that the daemon and systemd start, not users. */
static bool arg_injector = false;
static bool arg_seccomp_reader = false;

static void help(void) {
        printf("%s [OPTIONS...]\n\n"
               "Decides which processes share memory through KSM and tunes ksmd.\n\n"
               "  -h --help             Show this help\n"
               "     --version          Show the version\n"
               "  -c --config=FILE      Read FILE alone, without drop-ins (default %s)\n"
               "     --probe            Print the kernel feature probe and exit\n"
               "     --json             With --probe: print JSON\n"
               "     --check-config     Validate the configuration and exit\n"
               "     --cat-config       Print the configuration files in force, in merge order\n"
               "     --bus-introspect   Print the D-Bus introspection XML of the bus API and exit\n"
               "     --dry-run          Decide, but write nothing\n"
               "     --log-level=LEVEL  Override LogLevel=\n"
               "     --root=DIR         Read proc and sys below DIR (testing)\n",
               program_invocation_short_name, DEFAULT_CONFIG_PATH);
}

/* Returns > 0 to go on, 0 to exit successfully (--help, --version), < 0 on
 * a usage error, which has been reported. */
static int parse_argv(int argc, char *argv[]) {
        enum { ARG_VERSION = 0x100, ARG_PROBE, ARG_JSON, ARG_CHECK, ARG_CAT, ARG_DRY_RUN, ARG_LOG_LEVEL, ARG_ROOT,
               ARG_BUS_INTROSPECT, ARG_INJECTOR, ARG_SECCOMP_READER };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "config", required_argument, NULL, 'c' },
                { "probe", no_argument, NULL, ARG_PROBE },
                { "json", no_argument, NULL, ARG_JSON },
                { "check-config", no_argument, NULL, ARG_CHECK },
                { "cat-config", no_argument, NULL, ARG_CAT },
                { "bus-introspect", no_argument, NULL, ARG_BUS_INTROSPECT },
                { "dry-run", no_argument, NULL, ARG_DRY_RUN },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                { "root", required_argument, NULL, ARG_ROOT },
                { "injector", no_argument, NULL, ARG_INJECTOR },
                { "seccomp-reader", no_argument, NULL, ARG_SECCOMP_READER },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "hc:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("ksmtuned2 %s\n", PACKAGE_VERSION);
                        return 0;
                case 'c':
                        arg_config_path = optarg;
                        break;
                case ARG_PROBE:
                        arg_probe = true;
                        break;
                case ARG_JSON:
                        arg_json = true;
                        break;
                case ARG_CHECK:
                        arg_check_config = true;
                        break;
                case ARG_CAT:
                        arg_cat_config = true;
                        break;
                case ARG_BUS_INTROSPECT:
                        arg_bus_introspect = true;
                        break;
                case ARG_DRY_RUN:
                        arg_dry_run = true;
                        break;
                case ARG_LOG_LEVEL:
                        arg_log_level = log_level_from_string(optarg);
                        if (arg_log_level < 0) {
                                log_error("Unknown log level \"%s\".", optarg);
                                return -EINVAL;
                        }
                        break;
                case ARG_ROOT:
                        arg_root = optarg;
                        break;
                case ARG_INJECTOR:
                        arg_injector = true;
                        break;
                case ARG_SECCOMP_READER:
                        arg_seccomp_reader = true;
                        break;
                default: /* getopt_long() has said what is wrong */
                        return -EINVAL;
                }
        if (optind < argc) {
                log_error("Unexpected argument \"%s\"; see --help.", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

/* Each of the modes below returns the exit status of ksmtuned2. */

static int run_bus_introspect(void) {
        int r = manager_bus_introspect(stdout);
        if (r < 0) {
                log_error_errno(r, "Cannot generate the introspection data: %m");
                return EXIT_FAIL;
        }
        return EXIT_OK;
}

static int run_probe(void) {
        _cleanup_(root_freep) Root *root = NULL;
        Probe p;
        int r;

        r = root_open(arg_root, &root);
        if (r < 0) {
                log_error_errno(r, "Failed to open proc and sys: %m");
                return EXIT_FAIL;
        }
        r = probe_run(root, &p);
        if (r < 0) {
                log_error_errno(r, "Probe failed: %m");
                return EXIT_FAIL;
        }
        if (arg_json)
                probe_print_json(&p, stdout);
        else
                probe_print(&p, stdout);
        return EXIT_OK;
}

/* Every problem is printed; the verdict covers every file of the
 * configuration and the policies of the directories it names, so all are
 * checked even when one is bad. */
static int run_check_config(void) {
        _cleanup_(config_done) Config cfg = {};
        _cleanup_(conf_diag_free) ConfDiag diag = {};
        _cleanup_(policy_set_done) PolicySet policies = {};
        _cleanup_strv_free_ char **files = NULL;
        int r;

        r = config_load_logged(&cfg, arg_config_path, &files, stderr);
        if (r < 0 && r != -EBADMSG)
                log_error_errno(r, "Cannot read the configuration: %m");
        bool bad = r != 0;
        if (!bad && strv_length(files) == 0)
                printf("%s: OK (%s: built-in defaults)\n", arg_config_path ?: DEFAULT_CONFIG_PATH,
                       arg_config_path ? "empty" : "absent");
        for (char **f = files; !bad && *f; f++)
                printf("%s: OK\n", *f);

        r = policy_set_load(cfg.policy_dirs, NULL, &policies, &diag);
        conf_diag_print(&diag, stderr);
        if (r < 0) {
                log_error_errno(r, "Cannot load policies: %m");
                bad = true;
        } else {
                if (diag.n > 0 || policies.n_rejected > 0)
                        bad = true;
                else
                        printf("policies: OK, %zu in use (%zu masked)\n", policies.n, policies.n_masked);
        }
        return bad ? EXIT_CONFIG : EXIT_OK;
}

/* As systemd-analyze cat-config: each file in force, in the order it is
 * merged, after a "# PATH" line; a blank line between files. */
static int run_cat_config(void) {
        _cleanup_(conf_diag_free) ConfDiag diag = {};
        _cleanup_strv_free_ char **files = NULL;
        int r;

        r = config_files_find(arg_config_path, &files, &diag);
        conf_diag_print(&diag, stderr);
        if (r < 0) {
                log_error_errno(r, "Cannot find the configuration: %m");
                return EXIT_CONFIG;
        }
        if (strv_length(files) == 0)
                log_info("No configuration file: the built-in defaults apply.");
        for (char **f = files; *f; f++) {
                _cleanup_free_ char *text = NULL;
                size_t size = 0;

                r = read_full_file_at(AT_FDCWD, *f, 4 << 20, &text, &size);
                if (r < 0) {
                        log_error_errno(r, "Cannot read %s: %m", *f);
                        return EXIT_CONFIG;
                }
                printf("%s# %s\n", f == files ? "" : "\n", *f);
                fwrite(text, 1, size, stdout);
                if (size > 0 && text[size - 1] != '\n')
                        putchar('\n');
        }
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAIL;
}

static int run_daemon(void) {
        const ManagerOptions mo = {
                .config_path = arg_config_path,
                .root_prefix = arg_root,
                .dry_run = arg_dry_run,
        };
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        r = manager_new(&mo, &m);
        if (r == -EBADMSG)
                return EXIT_CONFIG;
        if (r < 0)
                return EXIT_FAIL;
        /* manager_new() applied LogLevel=; the command line overrides it. */
        if (arg_log_level >= 0)
                log_set_max_level(arg_log_level);
        r = manager_startup(m);
        if (r == -ENODEV)
                return EXIT_NO_KSM;
        if (r < 0)
                return EXIT_FAIL;
        r = manager_run(m);
        return r < 0 ? EXIT_FAIL : EXIT_OK;
}

/* The injector's own reading of InjectIntoSeccomp= (injector.h): the
 * configuration the daemon was started with (--config, else the default
 * files and drop-ins), with the same loader and owner/mode checks. What is
 * wrong with it goes to the log; a configuration that cannot be trusted or
 * read says no. */
static int injector_read_inject_into_seccomp(void) {
        _cleanup_(config_done) Config cfg = {};
        int r = config_load_logged(&cfg, arg_config_path, NULL, /* diag_stream= */ NULL);
        if (r < 0)
                return r;
        return cfg.inject_seccomp;
}

static int run(int argc, char *argv[]) {
        int r;

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_OK;
        if (arg_log_level >= 0)
                log_set_max_level(arg_log_level);

        /* The injector's supervisor, on fd 3 (injector.h); the seccomp reader
         * on the socket systemd accepted (ksmtuned2-seccomp-reader@.service). */
        if (arg_injector)
                return injector_main(3, arg_root, injector_read_inject_into_seccomp);
        if (arg_seccomp_reader)
                return seccomp_reader_main(STDIN_FILENO);
        if (arg_bus_introspect)
                return run_bus_introspect();
        if (arg_probe)
                return run_probe();
        if (arg_check_config)
                return run_check_config();
        if (arg_cat_config)
                return run_cat_config();
        return run_daemon();
}

int main(int argc, char *argv[]) {
        uint8_t seed[16];
        /* Before the sandbox: grouping by names users choose (cgroup paths)
         * hashes with a key nobody else knows. Without entropy yet the
         * fixed key stays (hashing still works, just not keyed). */
        if (getrandom(seed, sizeof seed, GRND_NONBLOCK) == (ssize_t) sizeof seed)
                strmap_set_seed(seed);
        return run(argc, argv);
}
