/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "macro.h"

/* Table-driven parsing of INI files (daemon config and policies) on top of
 * inih, with systemd's rules: sections and keys case-sensitive, '=' only.
 * Every problem becomes a diagnostic "file:line: key: reason"; an unknown
 * key or bad value is skipped, a syntax error (a line inih would read
 * differently from systemd, or cut) rejects the file. */

typedef struct ConfDiag {
        char **lines;           /* "file:line: key: reason" */
        size_t n;
} ConfDiag;

void conf_diag_free(ConfDiag *d);
void conf_diag_add(ConfDiag *d, const char *file, unsigned line, const char *key, const char *fmt, ...)
        _printf_(5, 6);
void conf_diag_print(const ConfDiag *d, FILE *f);
/* Logs every diagnostic at warning level. */
void conf_diag_log(const ConfDiag *d);

typedef struct ConfContext {
        const char *file;
        unsigned line;
        const char *section;
        const char *key;
        ConfDiag *diag;
        bool reject;            /* a bad value rejects the file (ConfParseOptions.reject_bad_values) */
} ConfContext;

/* A parser stores into (char *)base + offset; returns 0, or -errno after
 * having added a diagnostic through conf_bad_value() ("..., ignoring", or
 * "..., file rejected" where bad values reject the file). */
typedef int (*ConfParser)(const ConfContext *c, const char *value, void *dst, const void *data);

typedef struct ConfItem {
        const char *section;
        const char *key;
        ConfParser parse;
        size_t offset;
        const void *data;       /* parser-specific: bounds, enum names */
} ConfItem;

typedef struct ConfRange {
        uint64_t min, max;
} ConfRange;

/* The files named *suffix in dirs, in the order of their names (strcmp),
 * a name in an earlier directory shadowing the same name in later ones, as
 * systemd orders drop-ins; *ret_shadowed (may be NULL) counts those.
 * Always sets *ret_paths unless -ENOMEM. A missing directory is fine; for
 * one that cannot be read (a file in its place included), or, under
 * conf_trust_checks(), one that root is not alone in being able to change
 * (conf_dir_check_trusted(): -EPERM), returns -errno after a diagnostic,
 * having collected the others anyway: an untrusted directory's files
 * neither count nor mask. */
int conf_files_collect(const char *const *dirs, const char *suffix, char ***ret_paths, size_t *ret_shadowed,
                       ConfDiag *diag);

/* Configuration and policy files decide what a root daemon does to other
 * users' processes (ptrace injection included), so when the daemon runs as
 * root (conf_trust_checks()) it reads only what root alone could have
 * written, as sshd's StrictModes: the file owned by root and writable by
 * no one else, its directory and every one above it likewise (above it, a
 * sticky directory such as /tmp may be world-writable: others cannot
 * rename root's entries there). The checks come before anything in the
 * file counts, masking included, and never block: a FIFO or a device is
 * refused, not opened for reading. */
bool conf_trust_checks(void);
/* Whether root alone may change what dir holds (see above): 0, -ENOENT
 * when it does not exist (no diagnostic), else -EPERM or -errno after a
 * diagnostic "dir:0: reason". */
int conf_dir_check_trusted(const char *dir, ConfDiag *diag);
/* Opens path: 0 and *ret_f for a file in force; CONF_FILE_MASKS (no file)
 * for an empty file or a symlink to /dev/null; -ENOENT when absent (no
 * diagnostic); else after a diagnostic "path:0: reason, rejected": -EPERM
 * when trust is set and root is not alone in being able to write it,
 * -EBADMSG when it is not a regular file (a FIFO, a directory, a device),
 * -errno when it cannot be read. The directory is not checked here:
 * conf_files_collect() does, or the caller. */
#define CONF_FILE_MASKS 1
int conf_file_open(const char *path, bool trust, FILE **ret_f, ConfDiag *diag);

int conf_bad_value(const ConfContext *c, const char *value, const char *reason);

/* Built-in parsers. */
int conf_parse_bool(const ConfContext *c, const char *value, void *dst, const void *data);      /* bool */
int conf_parse_tristate(const ConfContext *c, const char *value, void *dst, const void *data);  /* int: -1 unset */
int conf_parse_u64(const ConfContext *c, const char *value, void *dst, const void *data);       /* uint64_t, data: ConfRange* */
int conf_parse_i64_opt(const ConfContext *c, const char *value, void *dst, const void *data);   /* int64_t, -1 = unset; data: ConfRange* */
int conf_parse_bool_opt(const ConfContext *c, const char *value, void *dst, const void *data);   /* int64_t: -1 unset, 0, 1 */
int conf_parse_percent(const ConfContext *c, const char *value, void *dst, const void *data);   /* double: "10", "10%", "2.5%"; data: ConfRange* */
int conf_parse_timespan(const ConfContext *c, const char *value, void *dst, const void *data);  /* uint64_t usec, data: ConfRange* in usec */
/* data of the parsers of keys named after their unit (MinSleepMSec=,
 * MinAnonMiB=): a bare number is in that unit, as it always was; a value
 * with a unit of its own ("1s", "2G") is converted to it, and must come to
 * a whole number of it. */
typedef struct ConfUnit {
        uint64_t unit;          /* usec (time) or bytes (size) in one unit of the key */
        const char *name;       /* "ms", "MiB": for messages */
        ConfRange range;        /* in the key's unit */
        bool optional;          /* empty means unset: dst is int64_t, -1; else uint64_t */
} ConfUnit;
int conf_parse_time_in_unit(const ConfContext *c, const char *value, void *dst, const void *data); /* data: ConfUnit* */
int conf_parse_size_in_unit(const ConfContext *c, const char *value, void *dst, const void *data); /* data: ConfUnit* */
int conf_parse_string(const ConfContext *c, const char *value, void *dst, const void *data);    /* char* */
int conf_parse_strv(const ConfContext *c, const char *value, void *dst, const void *data);      /* char**, space separated; appends, empty resets */
int conf_parse_log_level(const ConfContext *c, const char *value, void *dst, const void *data); /* int */
/* data: CONF_ENUM(table) of a string table (string-table.h); stores the
 * index of the name as int. Unlike the tables' own lookups, the value
 * matches in any case ("Mode=Never"), as config values always have. */
typedef struct ConfEnum {
        const char *const *table;
        size_t n;
} ConfEnum;
#define CONF_ENUM(t) (&(const ConfEnum) { (t), ELEMENTSOF(t) })
int conf_parse_enum(const ConfContext *c, const char *value, void *dst, const void *data);

/* Called for a section header the table does not know about at all: by
 * default that is a diagnostic; a caller may accept it (e.g. repeated
 * sections). */
typedef struct ConfParseOptions {
        /* Called before each key; may redirect the base pointer, e.g. to the
         * current element of a list of sections. */
        void *(*section_base)(void *userdata, const char *section, unsigned line);
        /* Called for a section (key NULL) or a key the table does not have;
         * returns what that means, for the diagnostic ("this policy matches
         * nothing"), or NULL for the default, "ignoring". */
        const char *(*unknown)(void *userdata, const char *section, const char *key);
        void *userdata;
        /* A value a parser refuses rejects the whole file (-EBADMSG), instead
         * of leaving the default in place: for policies, where the default
         * of a mistyped Mode=nevr would be auto. */
        bool reject_bad_values;
} ConfParseOptions;

/* Parses f (named file for diagnostics) into base by table. Returns 0 when
 * the file could be parsed (diagnostics may still have been added), -EBADMSG
 * with a diagnostic when the syntax is broken at some line (or, with
 * reject_bad_values, a value is bad), -errno on I/O. */
int conf_parse_file(FILE *f, const char *file, const ConfItem *table, size_t n_table, void *base,
                    const ConfParseOptions *opts, ConfDiag *diag);
