/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

/* Without it sd_journal_sendv() is a macro that appends its own CODE_FILE=,
 * CODE_LINE= and CODE_FUNC= (log.c, log_dispatch) after the caller's: every
 * entry had two of each. */
#define SD_JOURNAL_SUPPRESS_LOCATION
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

size_t log_fields_format(const LogFields *f, char ret[LOG_FIELDS_MAX][LOG_FIELD_SIZE]) {
        const struct {
                const char *name, *value;
        } strings[] = {
                { "KSMTUNED2_UNIT", f->unit },
                { "KSMTUNED2_VM", f->vm },
                { "KSMTUNED2_DECISION", f->decision },
                { "KSMTUNED2_ACTION", f->action },
                { "KSMTUNED2_METHOD", f->method },
                { "KSMTUNED2_OUTCOME", f->outcome },
                { "KSMTUNED2_VERDICT", f->verdict },
                { "KSMTUNED2_POLICY", f->policy },
                { "KSMTUNED2_KNOB", f->knob },
                { "KSMTUNED2_VALUE", f->value },
        };
        size_t n = 0;

        _Static_assert(ELEMENTSOF(strings) + 3 <= LOG_FIELDS_MAX, "LOG_FIELDS_MAX too small");
        if (f->message_id)
                snprintf(ret[n++], LOG_FIELD_SIZE, "MESSAGE_ID=%s", f->message_id);
        if (f->pid > 0) {
                snprintf(ret[n++], LOG_FIELD_SIZE, "KSMTUNED2_PID=%d", f->pid);
                /* journald adds OBJECT_COMM=, OBJECT_SYSTEMD_UNIT=, ... of
                 * the process for a sender running as root. */
                snprintf(ret[n++], LOG_FIELD_SIZE, "OBJECT_PID=%d", f->pid);
        }
        for (size_t i = 0; i < ELEMENTSOF(strings); i++)
                if (strings[i].value)
                        snprintf(ret[n++], LOG_FIELD_SIZE, "%s=%s", strings[i].name, strings[i].value);
        return n;
}

_printf_(7, 0) static void log_dispatch(int level, int error, const char *file, int line, const char *func,
                                        const LogFields *fields, const char *fmt, va_list ap) {
        /* "MESSAGE=" and the message, for the journal as it is */
        char buf[2048] = "MESSAGE=";
        const size_t prefix = strlen("MESSAGE=");

        errno = error; /* for %m */
        vsnprintf(buf + prefix, sizeof buf - prefix, fmt, ap);
        if (!journal_wanted()) {
                fprintf(stderr, "%s: %s\n", program_invocation_short_name, buf + prefix);
                return;
        }

        char priority[32], errno_field[32], code_file[256], code_line[32], code_func[256], ident[256];
        char extra[LOG_FIELDS_MAX][LOG_FIELD_SIZE];
        struct iovec iov[7 + LOG_FIELDS_MAX];
        size_t n = 0;

        snprintf(priority, sizeof priority, "PRIORITY=%d", level);
        snprintf(errno_field, sizeof errno_field, "ERRNO=%d", error);
        snprintf(code_file, sizeof code_file, "CODE_FILE=%s", file);
        snprintf(code_line, sizeof code_line, "CODE_LINE=%d", line);
        snprintf(code_func, sizeof code_func, "CODE_FUNC=%s", func);
        snprintf(ident, sizeof ident, "SYSLOG_IDENTIFIER=%s", program_invocation_short_name);
        const char *base[] = { buf, priority, error > 0 ? errno_field : NULL, code_file, code_line, code_func, ident };
        for (size_t i = 0; i < ELEMENTSOF(base); i++)
                if (base[i])
                        iov[n++] = (struct iovec) { .iov_base = (char *) base[i], .iov_len = strlen(base[i]) };
        size_t k = fields ? log_fields_format(fields, extra) : 0;
        for (size_t i = 0; i < k; i++)
                iov[n++] = (struct iovec) { .iov_base = extra[i], .iov_len = strlen(extra[i]) };
        (void) sd_journal_sendv(iov, (int) n);
}

_printf_(7, 0) static int log_internalv(int level, int error, const char *file, int line, const char *func,
                                        const LogFields *fields, const char *fmt, va_list ap) {
        int saved_errno = errno;

        if (error < 0)
                error = -error;
        if (level <= log_max_level)
                log_dispatch(level, error, file, line, func, fields, fmt, ap);
        errno = saved_errno;
        return error > 0 ? -error : -EIO;
}

int log_internal(int level, int error, const char *file, int line, const char *func, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = log_internalv(level, error, file, line, func, NULL, fmt, ap);
        va_end(ap);
        return r;
}

int log_struct_internal(int level, int error, const char *file, int line, const char *func, const LogFields *fields,
                        const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = log_internalv(level, error, file, line, func, fields, fmt, ap);
        va_end(ap);
        return r;
}
