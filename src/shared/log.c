/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-journal.h>

#include "log.h"
#include "string-table.h"

static int log_max_level = LOG_INFO;
static LogTarget log_target = LOG_TARGET_AUTO;

static const char *const log_level_table[] = {
        [LOG_EMERG] = "emerg", [LOG_ALERT] = "alert", [LOG_CRIT] = "crit",
        [LOG_ERR] = "err", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
        [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};
/* Accepted as well, never printed: the spellings other tools take. */
static const char *const log_level_alias_table[] = {
        [LOG_ERR] = "error", [LOG_WARNING] = "warn",
};

void log_set_max_level(int level) {
        log_max_level = CLAMP(level, LOG_EMERG, LOG_DEBUG);
}

int log_get_max_level(void) {
        return log_max_level;
}

void log_set_target(LogTarget target) {
        log_target = target;
}

int log_level_from_string(const char *s) {
        ssize_t l = string_table_from_string(log_level_table, ELEMENTSOF(log_level_table), s);
        if (l < 0)
                l = string_table_from_string(log_level_alias_table, ELEMENTSOF(log_level_alias_table), s);
        return (int) l;
}

DEFINE_STRING_TABLE_TO_STRING(log_level, int);

static bool journal_wanted(void) {
        if (log_target == LOG_TARGET_JOURNAL)
                return true;
        if (log_target == LOG_TARGET_STDERR)
                return false;
        /* systemd connects stderr to the journal and says so in $JOURNAL_STREAM. */
        return getenv("JOURNAL_STREAM") != NULL;
}

int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *fmt, ...) {
        int saved_errno = errno;
        if (error < 0)
                error = -error;

        if (level <= log_max_level) {
                char buf[2048];
                va_list ap;

                va_start(ap, fmt);
                errno = error; /* for %m */
                vsnprintf(buf, sizeof buf, fmt, ap);
                va_end(ap);

                if (journal_wanted()) {
                        char cf[256], cl[32];
                        snprintf(cf, sizeof cf, "CODE_FILE=%s", file);
                        snprintf(cl, sizeof cl, "CODE_LINE=%d", line);
                        if (error > 0)
                                sd_journal_send("MESSAGE=%s", buf, "PRIORITY=%d", level,
                                                "ERRNO=%d", error, cf, cl, "CODE_FUNC=%s", func,
                                                "SYSLOG_IDENTIFIER=%s", program_invocation_short_name,
                                                NULL);
                        else
                                sd_journal_send("MESSAGE=%s", buf, "PRIORITY=%d", level, cf, cl,
                                                "CODE_FUNC=%s", func,
                                                "SYSLOG_IDENTIFIER=%s", program_invocation_short_name,
                                                NULL);
                } else {
                        fprintf(stderr, "%s: %s\n", program_invocation_short_name, buf);
                }
        }

        errno = saved_errno;
        return error > 0 ? -error : -EIO;
}
