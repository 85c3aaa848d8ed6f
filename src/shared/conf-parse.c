/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

#include "conf-parse.h"
#include "fileio.h"
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

static int path_name_cmp(const void *a, const void *b) {
        const char *x = *(char *const *) a, *y = *(char *const *) b;
        return strcmp(strrchr(x, '/') + 1, strrchr(y, '/') + 1);
}

static bool name_taken(char *const *paths, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (streq(strrchr(paths[i], '/') + 1, name))
                        return true;
        return false;
}

bool conf_trust_checks(void) {
        return geteuid() == 0;
}

/* Why st, an entry root relies on, is not root's alone; NULL when it is.
 * above: st is a directory above the one read, which may be sticky and
 * world-writable. */
static const char *untrusted_reason(const struct stat *st, bool above, char *buf, size_t n) {
        if (st->st_uid != 0)
                snprintf(buf, n, "owned by uid %u, not root", (unsigned) st->st_uid);
        else if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(above && S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX)))
                snprintf(buf, n, "writable by group or others (mode %04o)", (unsigned) (st->st_mode & 07777));
        else
                return NULL;
        return buf;
}

/* dir and every directory above it, as written (the directories that hold
 * each symlink on the way) and as resolved (where they lead). */
static int check_path_trusted(const char *dir, const char *shown, ConfDiag *diag) {
        char buf[PATH_MAX], why[96];
        size_t len = strlen(dir);

        if (len == 0 || len >= sizeof buf)
                return -ENAMETOOLONG;
        memcpy(buf, dir, len + 1);
        while (len > 1 && buf[len - 1] == '/')
                buf[--len] = 0;
        for (bool first = true;; first = false) {
                struct stat st;
                if (stat(buf, &st) < 0) {
                        int r = negative_errno();
                        if (r != -ENOENT || !first)
                                conf_diag_add(diag, shown, 0, NULL, "cannot check %s: %s", buf, strerror(-r));
                        return r;
                }
                if (first && !S_ISDIR(st.st_mode)) {
                        conf_diag_add(diag, shown, 0, NULL, "cannot open directory: %s", strerror(ENOTDIR));
                        return -ENOTDIR;
                }
                const char *reason = untrusted_reason(&st, !first, why, sizeof why);
                if (reason) {
                        if (first)
                                conf_diag_add(diag, shown, 0, NULL, "directory %s, its files are ignored", reason);
                        else
                                conf_diag_add(diag, shown, 0, NULL, "%s above it is %s, its files are ignored", buf,
                                              reason);
                        return -EPERM;
                }
                if (streq(buf, "/"))
                        return 0;
                char *slash = strrchr(buf, '/');
                if (!slash) /* relative: its first component was the last */
                        return 0;
                if (slash == buf)
                        slash[1] = 0; /* "/x": "/" is next */
                else
                        *slash = 0;
        }
}

int conf_dir_check_trusted(const char *dir, ConfDiag *diag) {
        _cleanup_free_ char *real = NULL;
        int r;

        r = check_path_trusted(dir, dir, diag);
        if (r < 0)
                return r;
        real = realpath(dir, NULL);
        if (!real) {
                r = negative_errno();
                conf_diag_add(diag, dir, 0, NULL, "cannot resolve: %s", strerror(-r));
                return r;
        }
        return streq(real, dir) ? 0 : check_path_trusted(real, dir, diag);
}

int conf_file_open(const char *path, bool trust, FILE **ret_f, ConfDiag *diag) {
        _cleanup_close_ int fd = -EBADF;
        struct stat lst, st;
        char why[96];
        int r;

        /* Looked at before it is opened: opening a FIFO waits for a writer,
         * opening a device may do anything. */
        if (lstat(path, &lst) < 0 || stat(path, &st) < 0) {
                r = negative_errno();
                if (r != -ENOENT)
                        conf_diag_add(diag, path, 0, NULL, "cannot be read (%s), rejected", strerror(-r));
                return r;
        }
        /* A symlink's own owner: whoever made it chose what it masks. */
        if (trust && S_ISLNK(lst.st_mode) && lst.st_uid != 0) {
                conf_diag_add(diag, path, 0, NULL, "a symlink owned by uid %u, not root, rejected",
                              (unsigned) lst.st_uid);
                return -EPERM;
        }
        if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3))
                return CONF_FILE_MASKS; /* /dev/null (world-writable, and writes go nowhere) */
        if (!S_ISREG(st.st_mode)) {
                conf_diag_add(diag, path, 0, NULL, "not a regular file, rejected");
                return -EBADMSG;
        }
        /* Who may write it is checked before its content counts, emptiness
         * (a mask) included. */
        const char *reason = trust ? untrusted_reason(&st, false, why, sizeof why) : NULL;
        if (reason) {
                conf_diag_add(diag, path, 0, NULL, "%s, rejected (only root may write it)", reason);
                return -EPERM;
        }
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                r = negative_errno();
                conf_diag_add(diag, path, 0, NULL, "cannot be read (%s), rejected", strerror(-r));
                return r;
        }
        /* The same file as looked at: not swapped for a FIFO meanwhile. */
        struct stat fst;
        if (fstat(fd, &fst) < 0)
                return negative_errno();
        if (fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
                conf_diag_add(diag, path, 0, NULL, "replaced while being read, rejected");
                return -EBUSY;
        }
        if (stat_is_null_or_empty(&fst))
                return CONF_FILE_MASKS;
        FILE *f = fdopen(fd, "re");
        if (!f)
                return -ENOMEM;
        TAKE_FD(fd);
        *ret_f = f;
        return 0;
}

int conf_files_collect(const char *const *dirs, const char *suffix, char ***ret_paths, size_t *ret_shadowed,
                       ConfDiag *diag) {
        _cleanup_strv_free_ char **paths = NULL;
        size_t n = 0, shadowed = 0;
        int error = 0;

        for (const char *const *d = dirs; d && *d; d++) {
                if (conf_trust_checks()) {
                        int r = conf_dir_check_trusted(*d, diag);
                        if (r == -ENOENT)
                                continue;
                        if (r < 0) {
                                if (error == 0)
                                        error = r;
                                continue;
                        }
                }
                DIR *dir = opendir(*d);
                if (!dir) {
                        /* A missing directory is normal; an unreadable one is not. */
                        if (errno != ENOENT) {
                                if (error == 0)
                                        error = negative_errno();
                                conf_diag_add(diag, *d, 0, NULL, "cannot open directory: %s", strerror(errno));
                        }
                        continue;
                }
                for (struct dirent *de; (de = readdir(dir));) {
                        if (de->d_name[0] == '.' || !endswith(de->d_name, suffix))
                                continue;
                        if (name_taken(paths, n, de->d_name)) {
                                shadowed++;
                                continue;
                        }
                        char *path = NULL;
                        if (asprintf(&path, "%s/%s", *d, de->d_name) < 0 || strv_push(&paths, path) < 0) {
                                closedir(dir);
                                return -ENOMEM;
                        }
                        n++;
                }
                closedir(dir);
        }
        if (!paths) {
                paths = calloc(1, sizeof(char *));
                if (!paths)
                        return -ENOMEM;
        }
        qsort(paths, n, sizeof *paths, path_name_cmp);
        *ret_paths = TAKE_PTR(paths);
        if (ret_shadowed)
                *ret_shadowed = shadowed;
        return error;
}

int conf_bad_value(const ConfContext *c, const char *value, const char *reason) {
        conf_diag_add(c->diag, c->file, c->line, c->key, "%s (\"%s\"), %s", reason, CESCAPE(value, CESCAPE_ASCII),
                      c->reject ? "file rejected" : "ignoring");
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

/* unit: what the range is in, for the message ("0..60000 ms"); NULL for a count. */
static int check_range(const ConfContext *c, const char *value, uint64_t v, const ConfRange *range, const char *unit) {
        if (range && (v < range->min || v > range->max)) {
                char reason[128];
                snprintf(reason, sizeof reason, "out of range %llu..%llu%s%s", (unsigned long long) range->min,
                         (unsigned long long) range->max, unit ? " " : "", strempty(unit));
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
        r = check_range(c, value, v, data, NULL);
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
        r = check_range(c, value, v, data, NULL);
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

int conf_parse_percent(const ConfContext *c, const char *value, void *dst, const void *data) {
        const ConfRange *range = data;
        double v;

        if (parse_percent(value, &v) < 0 || !isfinite(v))
                return conf_bad_value(c, value, "not a percentage (e.g. 10 or 2.5%)");
        if (range && (v < (double) range->min || v > (double) range->max)) {
                char reason[128];
                snprintf(reason, sizeof reason, "out of range %llu..%llu%%", (unsigned long long) range->min,
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

/* Keys named after their unit: the parser of the value's kind, with the
 * key's unit for a bare number, then converted to that unit. */
static int parse_in_unit(const ConfContext *c, const char *value, void *dst, const ConfUnit *u, bool time) {
        uint64_t v;
        int r;

        if (u->optional && isempty(value)) {
                *(int64_t *) dst = -1;
                return 0;
        }
        r = time ? parse_time_usec(value, u->unit, &v) : parse_size(value, u->unit, &v);
        if (r == -ERANGE)
                return conf_bad_value(c, value, "too large");
        if (r < 0)
                return conf_bad_value(c, value, time ? "not a time span (e.g. 250, 250ms, 2s, 1min 30s)"
                                                     : "not a size (e.g. 64, 64M, 2G)");
        if (v % u->unit != 0) {
                char reason[64];
                snprintf(reason, sizeof reason, "not a whole number of %s", u->name);
                return conf_bad_value(c, value, reason);
        }
        v /= u->unit;
        r = check_range(c, value, v, &u->range, u->name);
        if (r < 0)
                return r;
        if (u->optional)
                *(int64_t *) dst = (int64_t) v; /* ranges of optional keys end below INT64_MAX */
        else
                *(uint64_t *) dst = v;
        return 0;
}

int conf_parse_time_in_unit(const ConfContext *c, const char *value, void *dst, const void *data) {
        return parse_in_unit(c, value, dst, data, /* time= */ true);
}

int conf_parse_size_in_unit(const ConfContext *c, const char *value, void *dst, const void *data) {
        return parse_in_unit(c, value, dst, data, /* time= */ false);
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
        char ***l = dst, **add;
        /* strv_split_whitespace() of "" is an empty list: what an empty
         * assignment leaves, as in systemd. */
        int r = strv_split_whitespace(value, &add);
        if (r < 0)
                return r;
        if (isempty(value) || !*l) {
                strv_free(*l);
                *l = add;
                return 0;
        }
        return strv_push_all(l, add);
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
        /* strcasecmp, not string_table_from_string(): names are
         * case-sensitive (handler() below), but values, like booleans,
         * always matched in any case; a policy saying "Mode=Never" must
         * keep meaning never. */
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

/* What this parser relies on of inih is upstream's documented API (ini.h
 * of github.com/benhoyt/inih), nothing a distribution added:
 *   int ini_parse_stream(ini_reader reader, void *stream, ini_handler handler, void *user);
 * calls reader(str, num, stream), which behaves like fgets(str, num, stream),
 * once per line, with num the size of inih's line buffer (INI_MAX_LINE when
 * the library was built, 200 by default; a build with INI_ALLOW_REALLOC calls
 * it again for the rest of a line that filled the buffer); and
 * handler(user, section, name, value) for each "name=value" or "name: value"
 * (names and values stripped of surrounding whitespace, a ';' after
 * whitespace starting an inline comment), returning nonzero to go on. It
 * returns 0, the number of the first line with a syntax error, -1 when the
 * stream cannot be opened or -2 when memory runs out. How a line is read
 * also depends on options fixed when the library was built: with
 * INI_ALLOW_MULTILINE (the default) a line that starts with whitespace
 * continues the previous value; with INI_ALLOW_NO_VALUE a line without a
 * separator calls the handler with value NULL; with
 * INI_CALL_HANDLER_ON_NEW_SECTION a header calls it with name NULL.
 *
 * Which of these the system's libinih has is unknown here, so reader()
 * hands inih only lines that mean the same under all of them: leading
 * whitespace removed (no continuation lines, which would also break our
 * line numbers), and in place of a line that would be read differently (a
 * "Key: value", a line without '=', a line longer than the buffer, which
 * inih would parse in pieces) a comment, after a diagnostic that marks the
 * file rejected. */
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
        unsigned bad_line;              /* first line reader() refused, 0 when none */
        unsigned bad_value_line;        /* first line with a value refused, under reject_bad_values */
        unsigned section_line;          /* line of the latest [Section] header */
        char last_section[128];
        void *section_base;
        bool section_known;
} ParseState;

static void note_bad_line(ParseState *s) {
        if (s->bad_line == 0)
                s->bad_line = s->line;
}

/* Whether inih must not see line (leading whitespace already removed);
 * says why when so. */
static bool line_refused(ParseState *s, const char *line, int num, bool too_long, bool nul) {
        char quoted[80]; /* enough to recognise the line by */
        size_t k = strcspn(line, "=:");

        cescape_buf(quoted, sizeof quoted, line, CESCAPE_ASCII);
        if (*line == ';' || *line == '#') /* however long: what it lost was comment too */
                return false;
        if (too_long)
                conf_diag_add(s->diag, s->file, s->line, NULL,
                              "line longer than %d bytes (inih's line buffer); split the value over several "
                              "assignments where the key allows", num - 2);
        else if (nul)
                conf_diag_add(s->diag, s->file, s->line, NULL, "\"%s\": a NUL byte in the line", quoted);
        else if (!*line || *line == '[' || line[k] == '=')
                return false;
        else if (line[k] == ':')
                conf_diag_add(s->diag, s->file, s->line, NULL, "\"%s\": keys take '=', not ':'", quoted);
        else
                conf_diag_add(s->diag, s->file, s->line, NULL,
                              "\"%s\": neither a [Section], a Key=value nor a comment", quoted);
        note_bad_line(s);
        return true;
}

static char *reader(char *str, int num, void *stream) {
        ParseState *s = stream;
        size_t n = 0;
        bool too_long = false, nul = false;
        int ch;

        /* Room for the newline and the terminator: a line that fills inih's
         * buffer without its newline is one a realloc build would go on
         * reading into, and a fixed-buffer build would cut. */
        if (num < 3)
                return NULL;
        while ((ch = getc(s->f)) != EOF && ch != '\n') {
                if (ch == 0)
                        nul = true;
                else if (n + 2 < (size_t) num)
                        str[n++] = (char) ch;
                else
                        too_long = true;
        }
        if (ch == EOF && n == 0 && !too_long && !nul)
                return NULL;
        str[n] = 0;
        s->line++;

        char *p = str;
        if (s->line == 1 && startswith(p, "\xef\xbb\xbf")) /* a UTF-8 byte order mark */
                p += 3;
        p += strspn(p, " \t\r\f\v");
        memmove(str, p, strlen(p) + 1);

        if (line_refused(s, str, num, too_long, nul))
                strcpy(str, ";"); /* a comment, so inih goes on to the next line */
        else if (*str == '[')
                s->section_line = s->line;
        strcat(str, "\n");
        return str;
}

/* Edits (insert, delete, replace a character) from a to b, ignoring case,
 * up to 3: a typo worth suggesting a name for is one or two away. */
static unsigned edit_distance(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b);
        unsigned row[64];

        if (la >= ELEMENTSOF(row) || lb >= ELEMENTSOF(row))
                return 3;
        for (size_t j = 0; j <= lb; j++)
                row[j] = (unsigned) j;
        for (size_t i = 1; i <= la; i++) {
                unsigned diag = row[0];
                row[0] = (unsigned) i;
                for (size_t j = 1; j <= lb; j++) {
                        unsigned up = row[j];
                        unsigned cost = tolower((unsigned char) a[i - 1]) != tolower((unsigned char) b[j - 1]);
                        row[j] = MIN(MIN(row[j] + 1, row[j - 1] + 1), diag + cost);
                        diag = up;
                }
        }
        return MIN(row[lb], 3u);
}

/* The name the administrator most likely meant: a section of the table
 * (section NULL) or a key of section, the same in another case before one
 * or two edits away. NULL when none is that close. */
static const char *suggest_name(const ParseState *s, const char *section, const char *name) {
        const char *best = NULL;
        unsigned best_d = 3;

        for (size_t i = 0; i < s->n_table; i++) {
                const ConfItem *it = &s->table[i];
                const char *cand = section ? (streq(it->section, section) ? it->key : NULL) : it->section;
                if (!cand)
                        continue;
                unsigned d = strcasecmp(cand, name) == 0 ? 0 : edit_distance(cand, name);
                if (d < best_d) {
                        best = cand;
                        best_d = d;
                }
        }
        return best;
}

static bool section_in_table(const ParseState *s, const char *section) {
        for (size_t i = 0; i < s->n_table; i++)
                if (streq(s->table[i].section, section))
                        return true;
        return false;
}

/* What an unknown section or key means for the file: "ignoring", unless
 * the caller says otherwise (a policy then matches nothing). */
static const char *unknown_consequence(const ParseState *s, const char *section, const char *key) {
        const char *c = s->opts && s->opts->unknown ? s->opts->unknown(s->opts->userdata, section, key) : NULL;
        return c ?: "ignoring";
}

static void unknown_key(const ParseState *s, const char *section, const char *name) {
        const char *consequence = unknown_consequence(s, section, name);
        const char *hint = suggest_name(s, section, name);
        if (hint) {
                conf_diag_add(s->diag, s->file, s->line, name, "unknown key in [%s] (did you mean %s=?), %s",
                              section, hint, consequence);
                return;
        }
        for (size_t i = 0; i < s->n_table; i++)
                if (streq(s->table[i].key, name)) {
                        conf_diag_add(s->diag, s->file, s->line, name, "unknown key in [%s] (%s= belongs in [%s]), %s",
                                      section, name, s->table[i].section, consequence);
                        return;
                }
        conf_diag_add(s->diag, s->file, s->line, name, "unknown key in [%s], %s", section, consequence);
}

static void unknown_section(const ParseState *s, const char *section) {
        const char *consequence = unknown_consequence(s, section, NULL);
        const char *hint = suggest_name(s, NULL, section);
        if (hint)
                conf_diag_add(s->diag, s->file, s->section_line, NULL,
                              "unknown section [%s] (did you mean [%s]?), %s", section, hint, consequence);
        else
                conf_diag_add(s->diag, s->file, s->section_line, NULL, "unknown section [%s], %s", section,
                              consequence);
}

/* Sections and keys match exactly, as in systemd's unit files: "[daemon]"
 * or "interval=" is a typo to report, not a spelling to accept. */
static int handler(void *user, const char *section, const char *name, const char *value) {
        ParseState *s = user;
        ConfContext c = { .file = s->file, .line = s->line, .section = section, .key = name, .diag = s->diag,
                          .reject = s->opts && s->opts->reject_bad_values };

        if (s->error)
                return 1;

        if (strcmp(section, s->last_section) != 0 || !name) {
                strscpy(s->last_section, sizeof s->last_section, section);
                s->section_known = section_in_table(s, section);
                if (!s->section_known && *section)
                        unknown_section(s, section);
                s->section_base = s->opts && s->opts->section_base
                                          ? s->opts->section_base(s->opts->userdata, section, s->section_line)
                                          : s->base;
        }
        if (!name) /* section header only (INI_CALL_HANDLER_ON_NEW_SECTION) */
                return 1;
        if (!value) { /* INI_ALLOW_NO_VALUE: "Key ; comment=x" has no '=' before its comment */
                conf_diag_add(s->diag, s->file, s->line, name, "no '=' before the comment");
                note_bad_line(s);
                return 1;
        }
        if (!*section) {
                conf_diag_add(s->diag, s->file, s->line, name, "key outside of any section, ignoring");
                return 1;
        }
        if (!s->section_known)
                return 1;

        for (size_t i = 0; i < s->n_table; i++) {
                const ConfItem *it = &s->table[i];
                if (!streq(it->section, section) || !streq(it->key, name))
                        continue;
                if (!s->section_base)
                        return 1;
                int r = it->parse(&c, value, (char *) s->section_base + it->offset, it->data);
                if (r == -ENOMEM)
                        s->error = r;
                else if (r < 0 && c.reject && s->bad_value_line == 0)
                        s->bad_value_line = s->line;
                return 1; /* bad values were reported and skipped (or reject the file, said so) */
        }
        unknown_key(s, section, name);
        return 1;
}

int conf_parse_file(FILE *f, const char *file, const ConfItem *table, size_t n_table, void *base,
                    const ConfParseOptions *opts, ConfDiag *diag) {
        ParseState s = {
                .f = f, .file = file, .table = table, .n_table = n_table, .base = base,
                .opts = opts, .diag = diag, .last_section = "\x01",
        };
#if HAVE_INI_RUNTIME_OPTIONS
        /* Debian's inih takes some build options at run time: long lines
         * (glob lists, directory lists) get a 4096-byte buffer there
         * instead of 200. A heap buffer is ini_initial_alloc bytes, and
         * grows towards ini_max_line only with ini_allow_realloc: setting
         * ini_max_line alone left it at 200. reader() needs none of the
         * other options. */
        ini_use_stack = false;
        ini_initial_alloc = 4096;
        ini_max_line = 4096;
#endif
        int r = ini_parse_stream(reader, &s, handler, &s);
        if (s.error)
                return s.error;
        if (r == -2)
                return -ENOMEM;
        if (r < 0)
                return -EIO;
        if (r > 0 || s.bad_line > 0) {
                unsigned first = r > 0 && (s.bad_line == 0 || (unsigned) r < s.bad_line) ? (unsigned) r : s.bad_line;
                conf_diag_add(diag, file, first, NULL, "syntax error, file rejected");
                return -EBADMSG;
        }
        if (s.bad_value_line > 0) /* each said "file rejected" */
                return -EBADMSG;
        if (ferror(f))
                return -EIO;
        return 0;
}
