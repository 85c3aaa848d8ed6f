/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

#include "conf-parse.h"
#include "log.h"
#include "util.h"

void conf_diag_free(ConfDiag *d) {
        for (size_t i = 0; i < d->n; i++)
                free(d->lines[i]);
        free(d->lines);
        *d = (ConfDiag) {};
}

void conf_diag_add(ConfDiag *d, const char *file, unsigned line, const char *key, const char *fmt, ...) {
        char reason[512], *s = NULL;
        va_list ap;

        if (!d)
                return;
        va_start(ap, fmt);
        vsnprintf(reason, sizeof reason, fmt, ap);
        va_end(ap);
        if (key)
                (void) asprintf(&s, "%s:%u: %s: %s", file, line, key, reason);
        else
                (void) asprintf(&s, "%s:%u: %s", file, line, reason);
        if (!s)
                return;
        char **nl = realloc(d->lines, sizeof(char *) * (d->n + 1));
        if (!nl) {
                free(s);
                return;
        }
        d->lines = nl;
        d->lines[d->n++] = s;
}

void conf_diag_print(const ConfDiag *d, FILE *f) {
        for (size_t i = 0; i < d->n; i++)
                fprintf(f, "%s\n", d->lines[i]);
}

void conf_diag_log(const ConfDiag *d) {
        for (size_t i = 0; i < d->n; i++)
                log_warning("%s", d->lines[i]);
}

int conf_bad_value(const ConfContext *c, const char *value, const char *reason) {
        conf_diag_add(c->diag, c->file, c->line, c->key, "%s (\"%s\"), ignoring", reason,
                      CESCAPE(value, CESCAPE_ASCII));
        return -EINVAL;
}

int conf_parse_bool(const ConfContext *c, const char *value, void *dst, const void *data) {
        int b = parse_boolean(value);
        if (b < 0)
                return conf_bad_value(c, value, "not a boolean (yes/no)");
        *(bool *) dst = b;
        return 0;
}

int conf_parse_tristate(const ConfContext *c, const char *value, void *dst, const void *data) {
        int b = parse_boolean(value);
        if (b < 0)
                return conf_bad_value(c, value, "not a boolean (yes/no)");
        *(int *) dst = b;
        return 0;
}

static int check_range(const ConfContext *c, const char *value, uint64_t v, const ConfRange *range) {
        if (range && (v < range->min || v > range->max)) {
                char reason[128];
                snprintf(reason, sizeof reason, "out of range %llu..%llu", (unsigned long long) range->min,
                         (unsigned long long) range->max);
                return conf_bad_value(c, value, reason);
        }
        return 0;
}

int conf_parse_u64(const ConfContext *c, const char *value, void *dst, const void *data) {
        uint64_t v;
        int r = safe_atou64(value, &v);
        if (r == -ERANGE)
                return conf_bad_value(c, value, "number too large");
        if (r < 0)
                return conf_bad_value(c, value, "not a non-negative integer");
        r = check_range(c, value, v, data);
        if (r < 0)
                return r;
        *(uint64_t *) dst = v;
        return 0;
}

int conf_parse_i64_opt(const ConfContext *c, const char *value, void *dst, const void *data) {
        uint64_t v;
        if (isempty(value)) {
                *(int64_t *) dst = -1;
                return 0;
        }
        int r = safe_atou64(value, &v);
        if (r == -ERANGE || v > INT64_MAX)
                return conf_bad_value(c, value, "number too large");
        if (r < 0)
                return conf_bad_value(c, value, "not a non-negative integer");
        r = check_range(c, value, v, data);
        if (r < 0)
                return r;
        *(int64_t *) dst = (int64_t) v;
        return 0;
}

int conf_parse_bool_opt(const ConfContext *c, const char *value, void *dst, const void *data) {
        if (isempty(value)) {
                *(int64_t *) dst = -1;
                return 0;
        }
        int b = parse_boolean(value);
        if (b < 0)
                return conf_bad_value(c, value, "not a boolean (yes/no), nor empty");
        *(int64_t *) dst = b;
        return 0;
}

int conf_parse_double(const ConfContext *c, const char *value, void *dst, const void *data) {
        const ConfRange *range = data;
        char *end;
        double v;

        errno = 0;
        v = strtod(value, &end);
        if (errno > 0 || end == value || *end || !isfinite(v))
                return conf_bad_value(c, value, "not a number");
        if (range && (v < (double) range->min || v > (double) range->max)) {
                char reason[128];
                snprintf(reason, sizeof reason, "out of range %llu..%llu", (unsigned long long) range->min,
                         (unsigned long long) range->max);
                return conf_bad_value(c, value, reason);
        }
        *(double *) dst = v;
        return 0;
}

int conf_parse_timespan(const ConfContext *c, const char *value, void *dst, const void *data) {
        const ConfRange *range = data;
        uint64_t v;
        if (parse_timespan_usec(value, &v) < 0)
                return conf_bad_value(c, value, "not a time span (e.g. 5s, 250ms, 2min)");
        if (range && (v < range->min || v > range->max)) {
                char a[32], b[32], reason[128];
                snprintf(reason, sizeof reason, "out of range %s..%s", format_timespan(a, sizeof a, range->min),
                         format_timespan(b, sizeof b, range->max));
                return conf_bad_value(c, value, reason);
        }
        *(uint64_t *) dst = v;
        return 0;
}

int conf_parse_string(const ConfContext *c, const char *value, void *dst, const void *data) {
        char *s = strdup(value);
        if (!s)
                return -ENOMEM;
        free(*(char **) dst);
        *(char **) dst = s;
        return 0;
}

int conf_parse_strv(const ConfContext *c, const char *value, void *dst, const void *data) {
        char **l;
        int r = strv_split_whitespace(value, &l);
        if (r < 0)
                return r;
        strv_free(*(char ***) dst);
        *(char ***) dst = l;
        return 0;
}

int conf_parse_log_level(const ConfContext *c, const char *value, void *dst, const void *data) {
        int l = log_level_from_string(value);
        if (l < 0)
                return conf_bad_value(c, value, "not a log level (err, warning, notice, info, debug)");
        *(int *) dst = l;
        return 0;
}

int conf_parse_enum(const ConfContext *c, const char *value, void *dst, const void *data) {
        const ConfEnum *e = data;
        char reason[256] = "expected one of:";
        /* strcasecmp, not string_table_from_string(): sections and keys of
         * these files match in any case (handler() below), and so have enum
         * values; a policy saying "Mode=Never" must keep meaning never. */
        for (size_t i = 0; i < e->n; i++)
                if (e->table[i] && strcasecmp(e->table[i], value) == 0) {
                        *(int *) dst = (int) i;
                        return 0;
                }
        for (size_t i = 0; i < e->n; i++) {
                if (!e->table[i])
                        continue;
                strncat(reason, " ", sizeof reason - strlen(reason) - 1);
                strncat(reason, e->table[i], sizeof reason - strlen(reason) - 1);
        }
        return conf_bad_value(c, value, reason);
}

typedef struct ParseState {
        FILE *f;
        const char *file;
        unsigned line;
        const ConfItem *table;
        size_t n_table;
        void *base;
        const ConfParseOptions *opts;
        ConfDiag *diag;
        int error;
        unsigned section_line;          /* line of the latest [Section] header */
        char last_section[128];
        void *section_base;
        bool section_known;
} ParseState;

/* inih's reader callback: counting lines here is how diagnostics get line
 * numbers without depending on inih being built with INI_HANDLER_LINENO. */
static char *reader(char *str, int num, void *stream) {
        ParseState *s = stream;
        char *r = fgets(str, num, s->f);
        if (r) {
                size_t l = strlen(r);
                if ((l > 0 && r[l - 1] == '\n') || feof(s->f))
                        s->line++;
                const char *p = r + strspn(r, " \t");
                if (*p == '[')
                        s->section_line = s->line;
                /* A line longer than inih's buffer arrives in pieces; the
                 * remainder is parsed as garbage and fails the file, which is
                 * the right outcome for such a line. */
        }
        return r;
}

static bool section_in_table(const ParseState *s, const char *section) {
        for (size_t i = 0; i < s->n_table; i++)
                if (strcasecmp(s->table[i].section, section) == 0)
                        return true;
        return false;
}

static int handler(void *user, const char *section, const char *name, const char *value) {
        ParseState *s = user;
        ConfContext c = { .file = s->file, .line = s->line, .section = section, .key = name, .diag = s->diag };

        if (s->error)
                return 1;

        if (strcmp(section, s->last_section) != 0 || !name) {
                strscpy(s->last_section, sizeof s->last_section, section);
                s->section_known = section_in_table(s, section);
                if (!s->section_known && *section)
                        conf_diag_add(s->diag, s->file, s->section_line, NULL, "unknown section [%s], ignoring",
                                      section);
                s->section_base = s->opts && s->opts->section_base
                                          ? s->opts->section_base(s->opts->userdata, section, s->section_line)
                                          : s->base;
        }
        if (!name) /* section header only (INI_CALL_HANDLER_ON_NEW_SECTION) */
                return 1;
        if (!*section) {
                conf_diag_add(s->diag, s->file, s->line, name, "key outside of any section, ignoring");
                return 1;
        }
        if (!s->section_known)
                return 1;

        for (size_t i = 0; i < s->n_table; i++) {
                const ConfItem *it = &s->table[i];
                if (strcasecmp(it->section, section) != 0 || strcasecmp(it->key, name) != 0)
                        continue;
                if (!s->section_base)
                        return 1;
                int r = it->parse(&c, value, (char *) s->section_base + it->offset, it->data);
                if (r == -ENOMEM)
                        s->error = r;
                return 1; /* bad values were reported and skipped */
        }
        conf_diag_add(s->diag, s->file, s->line, name, "unknown key in [%s], ignoring", section);
        return 1;
}

int conf_parse_file(FILE *f, const char *file, const ConfItem *table, size_t n_table, void *base,
                    const ConfParseOptions *opts, ConfDiag *diag) {
        ParseState s = {
                .f = f, .file = file, .table = table, .n_table = n_table, .base = base,
                .opts = opts, .diag = diag, .last_section = "\x01",
        };
        /* Debian's inih takes its options at run time. Continuation lines
         * would break our line numbers and surprise admins; long lines (glob
         * lists, directory lists) need more than the default 200 bytes. */
        ini_allow_multiline = false;
        ini_use_stack = false;
        ini_max_line = 4096;
        int r = ini_parse_stream(reader, &s, handler, &s);
        if (s.error)
                return s.error;
        if (r > 0) {
                conf_diag_add(diag, file, (unsigned) r, NULL, "syntax error, file rejected");
                return -EBADMSG;
        }
        if (r == -2)
                return -ENOMEM;
        if (r < 0)
                return -EIO;
        return 0;
}
