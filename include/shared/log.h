/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <syslog.h>

#include "macro.h"

/* Where log lines go: the journal when stderr is connected to it (systemd
 * sets $JOURNAL_STREAM), stderr otherwise. */
typedef enum LogTarget {
        LOG_TARGET_AUTO,
        LOG_TARGET_STDERR,
        LOG_TARGET_JOURNAL,
} LogTarget;

void log_set_max_level(int level);
int log_get_max_level(void);
void log_set_target(LogTarget target);
int log_level_from_string(const char *s);
const char *log_level_to_string(int level);

/* Logs and returns -abs(error) so callers can `return log_error_errno(r, ...)`.
 * `%m` in the format prints strerror(error). */
int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *fmt, ...) _printf_(6, 7);

#define log_full_errno(level, error, ...) \
        log_internal((level), (error), __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_full(level, ...) log_full_errno((level), 0, __VA_ARGS__)

#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, (e), __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_INFO, (e), __VA_ARGS__)
#define log_notice_errno(e, ...) log_full_errno(LOG_NOTICE, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, (e), __VA_ARGS__)

#define log_oom() log_error_errno(-ENOMEM, "Out of memory.")

/* What an entry is about, as journal fields beside MESSAGE=, so that
 * `journalctl KSMTUNED2_ACTION=exclude` finds the exclusions (ksmtuned2(8),
 * JOURNAL FIELDS). NULL and 0 members are left out; on standard error only
 * the message is printed. */
typedef struct LogFields {
        const char *message_id;         /* MESSAGE_ID=, one of log-messages.h */
        int pid;                        /* KSMTUNED2_PID=, and OBJECT_PID= for journald's OBJECT_* fields */
        const char *unit;               /* KSMTUNED2_UNIT= */
        const char *vm;                 /* KSMTUNED2_VM= */
        const char *decision;           /* KSMTUNED2_DECISION=: the decision log's kind */
        const char *action;             /* KSMTUNED2_ACTION=: enable, disable, exclude, readmit, set */
        const char *method;             /* KSMTUNED2_METHOD= */
        const char *outcome;            /* KSMTUNED2_OUTCOME= */
        const char *verdict;            /* KSMTUNED2_VERDICT= */
        const char *policy;             /* KSMTUNED2_POLICY=: file:line */
        const char *knob;               /* KSMTUNED2_KNOB= */
        const char *value;              /* KSMTUNED2_VALUE= */
} LogFields;

#define LOG_FIELDS_MAX 13
#define LOG_FIELD_SIZE 320

/* The fields of f as "NAME=value" into ret, in the order above, each cut
 * at LOG_FIELD_SIZE - 1 bytes; returns how many. Values are kept as they
 * are, newlines included (the journal's native protocol carries them). */
size_t log_fields_format(const LogFields *f, char ret[LOG_FIELDS_MAX][LOG_FIELD_SIZE]);

/* log_internal() with fields. */
int log_struct_internal(int level, int error, const char *file, int line, const char *func, const LogFields *fields,
                        const char *fmt, ...) _printf_(7, 8);

/* log_struct(LOG_INFO, LOG_FIELDS(.message_id = ..., .pid = pid), "format", ...) */
#define LOG_FIELDS(...) (&(const LogFields) { __VA_ARGS__ })
#define log_struct_errno(level, error, fields, ...) \
        log_struct_internal((level), (error), __FILE__, __LINE__, __func__, (fields), __VA_ARGS__)
#define log_struct(level, fields, ...) log_struct_errno((level), 0, (fields), __VA_ARGS__)
