/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ksmtuned2-generator: the directory of [Metrics] TextfilePath= made
 * writable for ksmtuned2.service, whose ProtectSystem=strict leaves only
 * the paths of its ReadWritePaths= writable. systemd runs it at boot and at
 * every daemon-reload with its output directories as arguments
 * (systemd.generator(7)); it writes NORMAL-DIR/ksmtuned2.service.d/
 * 50-textfile-path.conf, which the administrator's drop-ins in /etc
 * override.
 *
 * It runs before journald, beside the other generators, and the boot waits
 * for it: it reads one file with the daemon's own parser (conf.c), talks to
 * no process, and whatever it cannot use (no configuration, a syntax error,
 * no TextfilePath=, a path it refuses) leaves no drop-in and exit status 0:
 * the daemon reports its configuration's problems when it starts. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "fileio.h"
#include "log.h"
#include "util.h"

#define DROPIN_DIR "ksmtuned2.service.d"
#define DROPIN_FILE "50-textfile-path.conf"

/* The unit file parser unquotes, unescapes and expands specifiers in
 * ReadWritePaths=: a path goes in as it is only without quotes, spaces,
 * backslashes and '%'. Anything else is refused, not escaped. */
static bool unit_path_char_ok(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               strchr("/._-+,:@=~", c);
}

/* NULL where ReadWritePaths= may name the directory of path, else why not.
 * Absolute and normalised (systemd refuses "." and ".." there), and at
 * least two levels below /, so that a slip in the configuration never
 * opens /, /etc or /usr to the daemon. */
static const char *textfile_path_refusal(const char *path) {
        unsigned components = 0;

        if (path[0] != '/')
                return "is not an absolute path";
        for (const char *p = path; *p; p++)
                if (!unit_path_char_ok(*p))
                        return "has a character a unit file would read differently (a space, quote, backslash, '%' or non-ASCII)";
        for (const char *p = path + 1;; p++) {
                size_t l = strcspn(p, "/");
                if (l == 0 || (l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
                        return "is not a normalised path (\"//\", \".\", \"..\" or a trailing \"/\")";
                components++;
                p += l;
                if (!*p)
                        break;
        }
        if (components < 3)
                return "is in / or in a directory directly below it";
        return NULL;
}

/* At boot nothing reads the generator's stderr (systemd.generator(7): log
 * to /dev/kmsg, which journald reads once it runs). Non-blocking: in a
 * container /dev/kmsg may be missing, or a FIFO no one reads yet. */
static void stderr_to_kmsg(void) {
        int fd = open("/dev/kmsg", O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return;
        if (fd != STDERR_FILENO) {
                (void) dup2(fd, STDERR_FILENO);
                (void) close(fd);
        }
}

int main(int argc, char *argv[]) {
        _cleanup_(config_done) Config c = {};
        _cleanup_(conf_diag_free) ConfDiag diag = {};
        _cleanup_free_ char *dir = NULL, *dropin_dir = NULL, *dropin = NULL, *text = NULL;
        _cleanup_strv_free_ char **files = NULL;
        const char *config_path, *refusal;
        int r;

        log_set_target(LOG_TARGET_STDERR);
        /* The service manager sets $SYSTEMD_SCOPE; a person debugging this
         * (or a test) reads stderr. */
        if (getenv("SYSTEMD_SCOPE"))
                stderr_to_kmsg();
        if (argc != 2 && argc != 4) {
                log_error("Expects one or three output directories (systemd.generator(7)), got %d.", argc - 1);
                return EXIT_FAILURE;
        }

        /* The files the daemon reads (main file and drop-ins, as
         * config_search_default finds them); tests point it at a single
         * configuration file of their own. */
        const char *override = getenv("KSMTUNED2_GENERATOR_CONFIG");
        r = config_load(&c, override, &files, &diag);
        if (r < 0) {
                log_debug_errno(r, "Cannot use %s, writing nothing: %m", override ?: "the configuration");
                return EXIT_SUCCESS;
        }
        if (isempty(c.metrics_textfile) || strv_length(files) == 0)
                return EXIT_SUCCESS;
        /* SourcePath= takes one file: the first in force, the main file
         * when there is one. */
        config_path = files[0];
        refusal = textfile_path_refusal(c.metrics_textfile);
        if (refusal) {
                log_warning("%s: [Metrics] TextfilePath=%s %s: not making its directory writable for "
                            "ksmtuned2.service; a drop-in with ReadWritePaths= can, see ksmtuned2(8).",
                            config_path, CESCAPE(c.metrics_textfile, CESCAPE_ASCII), refusal);
                return EXIT_SUCCESS;
        }

        dir = strndup(c.metrics_textfile, strrchr(c.metrics_textfile, '/') - c.metrics_textfile);
        if (!dir || asprintf(&dropin_dir, "%s/" DROPIN_DIR, argv[1]) < 0 ||
            asprintf(&dropin, "%s/" DROPIN_FILE, dropin_dir) < 0 ||
            asprintf(&text,
                     "# Written by %s from [Metrics] TextfilePath= in %s.\n"
                     "[Unit]\n"
                     "SourcePath=%s\n"
                     "\n"
                     "[Service]\n"
                     "ReadWritePaths=-%s\n",
                     program_invocation_short_name, config_path, config_path, dir) < 0) {
                log_oom();
                return EXIT_FAILURE;
        }
        if (mkdir(dropin_dir, 0755) < 0 && errno != EEXIST) {
                log_error_errno(negative_errno(), "Cannot create %s: %m", dropin_dir);
                return EXIT_FAILURE;
        }
        r = write_file_atomic(dropin, text, strlen(text), 0644);
        if (r < 0) {
                log_error_errno(r, "Cannot write %s: %m", dropin);
                return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}
