/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Widths of text on a terminal, and the tables ksmctl prints with them. No
 * bus and no terminal here: the caller says how wide the output may be. */
#include <assert.h>
#include <errno.h>
#include <langinfo.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <wchar.h>

#include "ksmctl-table.h"
#include "util.h"

/* Columns of the character at s; *ret_len its bytes. Strings from the bus
 * are valid UTF-8 (D-Bus refuses others) with control characters already
 * escaped, so 1 is right for anything the locale cannot tell. */
static size_t char_width(const char *s, size_t *ret_len) {
        size_t k = utf8_sequence_length(s);
        mbstate_t state = {};
        wchar_t wc;
        int w;

        *ret_len = k ?: 1;
        if (k <= 1 || mbrtowc(&wc, s, k, &state) != k)
                return 1;
        w = wcwidth(wc);
        return w < 0 ? 1 : (size_t) w;
}

size_t text_width(const char *s) {
        size_t width = 0, k;
        for (s = strempty(s); *s; s += k)
                width += char_width(s, &k);
        return width;
}

const char *text_ellipsis(void) {
        const char *codeset = nl_langinfo(CODESET);
        return codeset && (strcasecmp(codeset, "UTF-8") == 0 || strcasecmp(codeset, "utf8") == 0) ? "…" : "...";
}

/* The bytes of s, whole characters, that fit in width columns; their
 * columns in *ret_width. */
static size_t fit_bytes(const char *s, size_t width, size_t *ret_width) {
        size_t used = 0, n = 0, k;
        while (s[n]) {
                size_t w = char_width(s + n, &k);
                if (used + w > width)
                        break;
                used += w;
                n += k;
        }
        *ret_width = used;
        return n;
}

/* How s shows in width columns: its first *ret_keep bytes, then (where it
 * was cut) the first *ret_tail bytes of the ellipsis. Returns the columns
 * that takes, which may be less than width when a wide character did not fit. */
static size_t cut_plan(const char *s, size_t width, size_t *ret_keep, size_t *ret_tail) {
        const char *e = text_ellipsis();
        size_t ew = text_width(e), kept, tail_width;

        s = strempty(s);
        if (text_width(s) <= width) {
                *ret_keep = strlen(s);
                *ret_tail = 0;
                return text_width(s);
        }
        if (width < ew) {
                *ret_keep = 0;
                *ret_tail = fit_bytes(e, width, &tail_width);
                return tail_width;
        }
        *ret_keep = fit_bytes(s, width - ew, &kept);
        *ret_tail = strlen(e);
        return kept + ew;
}

char *text_ellipsize(const char *s, size_t width) {
        size_t keep, tail;
        char *out;

        (void) cut_plan(s, width, &keep, &tail);
        out = malloc(keep + tail + 1);
        if (!out)
                return NULL;
        memcpy(out, strempty(s), keep);
        memcpy(out + keep, text_ellipsis(), tail);
        out[keep + tail] = 0;
        return out;
}

void table_init(Table *t, const TableColumn *columns, size_t n_columns) {
        assert(n_columns > 0 && n_columns <= TABLE_COLUMNS_MAX);
        *t = (Table) { .columns = columns, .n_columns = n_columns };
}

void table_done(Table *t) {
        for (size_t i = 0; i < t->n_cells; i++)
                free(t->cells[i]);
        free(t->cells);
        *t = (Table) {};
}

int table_add(Table *t, const char *text) {
        char *copy = strdup(strempty(text));
        if (!copy || greedy_realloc((void **) &t->cells, &t->n_alloc, t->n_cells + 1, sizeof *t->cells, 64) < 0) {
                free(copy);
                return -ENOMEM;
        }
        t->cells[t->n_cells++] = copy;
        return 0;
}

int table_add_row(Table *t, ...) {
        size_t n = 0;
        va_list ap;
        int r = 0;

        va_start(ap, t);
        for (const char *cell; r >= 0 && (cell = va_arg(ap, const char *)); n++)
                r = table_add(t, cell);
        va_end(ap);
        assert(r < 0 || n == t->n_columns);
        return r;
}

size_t table_rows(const Table *t) {
        return t->n_cells / t->n_columns;
}

/* Blanks are held back until something follows them: no line ends in one. */
static void print_row(FILE *f, const Table *t, const char *const *cells, const size_t *width) {
        size_t pending = 0;

        for (size_t i = 0; i < t->n_columns; i++) {
                size_t keep, tail, shown = cut_plan(cells[i], width[i], &keep, &tail);

                if (t->columns[i].right)
                        pending += width[i] - shown;
                if (keep + tail > 0) {
                        fprintf(f, "%*s", (int) pending, "");
                        pending = 0;
                        fwrite(cells[i], 1, keep, f);
                        fwrite(text_ellipsis(), 1, tail, f);
                }
                if (!t->columns[i].right)
                        pending += width[i] - shown;
                pending++;
        }
        fputc('\n', f);
}

/* Narrows the widest column that is wider than its floor, then the next,
 * until the line fits in max_width (0: no limit) or nothing is left to take. */
static void shrink(size_t *width, const size_t *floor, size_t n, size_t *total, size_t max_width) {
        while (max_width > 0 && *total > max_width) {
                size_t widest = SIZE_MAX, d;
                for (size_t i = 0; i < n; i++)
                        if (width[i] > floor[i] && (widest == SIZE_MAX || width[i] > width[widest]))
                                widest = i;
                if (widest == SIZE_MAX)
                        return; /* narrower than the headers: lines run over */
                d = MIN(*total - max_width, width[widest] - floor[widest]);
                width[widest] -= d;
                *total -= d;
        }
}

void table_print(const Table *t, FILE *f, size_t max_width, bool header) {
        size_t width[TABLE_COLUMNS_MAX], content[TABLE_COLUMNS_MAX], floor[TABLE_COLUMNS_MAX], total = t->n_columns - 1;
        const char *headers[TABLE_COLUMNS_MAX];
        size_t rows = table_rows(t), ew = text_width(text_ellipsis());

        for (size_t i = 0; i < t->n_columns; i++) {
                size_t hw = header ? text_width(t->columns[i].header) : 0;
                headers[i] = t->columns[i].header;
                content[i] = hw;
                for (size_t r = 0; r < rows; r++)
                        content[i] = MAX(content[i], text_width(t->cells[r * t->n_columns + i]));
                width[i] = MAX(t->columns[i].min_width, content[i]);
                /* A column cut to fewer than one character and the ellipsis says nothing. */
                floor[i] = MIN(content[i], MAX(hw, ew + 1));
                total += width[i];
        }
        /* First the blanks that min_width added, then the text itself. */
        shrink(width, content, t->n_columns, &total, max_width);
        shrink(width, floor, t->n_columns, &total, max_width);

        if (header)
                print_row(f, t, headers, width);
        for (size_t r = 0; r < rows; r++)
                print_row(f, t, (const char *const *) t->cells + r * t->n_columns, width);
}
