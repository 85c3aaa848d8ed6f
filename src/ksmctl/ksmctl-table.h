/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Display columns of a UTF-8 string: wcwidth() of each character where the
 * locale knows it, else 1; a byte that starts no valid sequence is 1. */
size_t text_width(const char *s);

/* "…" in a UTF-8 locale, else "...". */
const char *text_ellipsis(void);

/* A copy of s cut to at most width display columns, ending in the ellipsis
 * where something was cut; NULL on ENOMEM. */
char *text_ellipsize(const char *s, size_t width);

/* The tables of ksmctl list and its kin, as systemctl prints them: columns
 * as wide as their widest cell, one space apart, no trailing blanks; when
 * they do not fit the width given, the widest column is cut (its cells end
 * in an ellipsis), then the next widest. Headers are never cut. */
#define TABLE_COLUMNS_MAX 16

typedef struct TableColumn {
        const char *header;
        bool right;             /* numbers: aligned on the right */
        size_t min_width;       /* kept however short the cells are */
} TableColumn;

typedef struct Table {
        const TableColumn *columns;
        size_t n_columns;
        char **cells;           /* row after row */
        size_t n_cells, n_alloc;
} Table;

void table_init(Table *t, const TableColumn *columns, size_t n_columns);
void table_done(Table *t);
/* Appends a copy of the next cell (NULL reads as ""), filling rows in order. -ENOMEM. */
int table_add(Table *t, const char *text);
/* A whole row: one string a column, then NULL. -ENOMEM. */
int table_add_row(Table *t, ...) __attribute__((sentinel));
size_t table_rows(const Table *t);
/* width 0: no limit (not a terminal). header false: --no-legend. */
void table_print(const Table *t, FILE *f, size_t width, bool header);
