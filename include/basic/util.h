/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "macro.h"

/* Strict number parsing: the whole string (modulo leading and trailing whitespace) must be
 * a number in range, otherwise -EINVAL or -ERANGE. */
int safe_atou64(const char *s, uint64_t *ret);
int safe_atoi64(const char *s, int64_t *ret);
int safe_atou(const char *s, unsigned *ret);
int safe_atoi(const char *s, int *ret);
int parse_boolean(const char *s); /* 1, 0 or -EINVAL */
/* Time spans as systemd.time(7) has them: "5s", "250ms", "1.5h", "2min 30s",
 * "1h30min"; units us (usec, µs), ms (msec), s (sec, second, seconds), m
 * (min, minute, minutes), h (hr, hour, hours), d (day, days), w (week,
 * weeks), M (month, months: 30.44 days), y (year, years: 365.25 days),
 * case-sensitive. A bare number, alone, is in default_unit_usec. -EINVAL
 * for anything else, -ERANGE from 2^63 us up. */
int parse_time_usec(const char *s, uint64_t default_unit_usec, uint64_t *ret);
/* parse_time_usec() where a bare number is seconds. */
int parse_timespan_usec(const char *s, uint64_t *ret);
/* Sizes as systemd reads them, base 1024: "64M", "1.5G", "1G 512M"; units
 * B K M G T P E. A bare number, alone, is in default_unit bytes; fractions
 * of a byte are rounded. -ERANGE beyond UINT64_MAX. */
int parse_size(const char *s, uint64_t default_unit, uint64_t *ret);
/* "10", "10%", "2.5%": a decimal number with an optional percent sign. Not
 * range-checked. */
int parse_percent(const char *s, double *ret);
const char *format_timespan(char *buf, size_t n, uint64_t usec);
const char *format_bytes(char *buf, size_t n, uint64_t bytes);

/* Makes room for need elements of size bytes in the array *p, which has
 * room for *n_alloc: doubles it (from min_alloc) when full. -ENOMEM on
 * failure or when the size would overflow; *p stays as it was then. */
int greedy_realloc(void **p, size_t *n_alloc, size_t need, size_t size, size_t min_alloc);

/* NULL-terminated string vectors. */
char **strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)
size_t strv_length(char *const *l);
int strv_split_whitespace(const char *s, char ***ret);
int strv_push(char ***l, char *value); /* takes value, frees it on failure */
/* Appends the strings of add and frees its array; takes add, frees all of it on failure. */
int strv_push_all(char ***l, char **add);
bool strv_contains(char *const *l, const char *s);
/* The strings of l with sep between them ("" for none); NULL on ENOMEM. */
char *strv_join(char *const *l, const char *sep);

char *strstrip(char *s);
bool startswith(const char *s, const char *prefix);
/* Where suffix starts in s, NULL when s does not end with it. */
char *endswith(const char *s, const char *suffix);
/* Copies src into a fixed buffer, always terminating. */
void strscpy(char *dst, size_t n, const char *src);

uint64_t now_usec(clockid_t clock);
/* The page size, PAGE_SIZE_DEFAULT should sysconf fail. */
uint64_t page_size(void);

/* Length of the valid UTF-8 sequence at s (1-4), 0 when s does not start one
 * (overlong forms and surrogates included). */
size_t utf8_sequence_length(const char *s);
/* Whether all of s is valid UTF-8 (D-Bus refuses strings that are not). */
bool utf8_is_valid(const char *s);
/* A copy of s with every byte that is not part of valid UTF-8 replaced by
 * U+FFFD; NULL on ENOMEM. */
char *utf8_make_valid(const char *s);

/* Which bytes of an untrusted string (a process's comm, a path, a bus
 * argument) cescape_buf() writes as \xNN. */
typedef enum CEscapeMode {
        /* Control characters only, for a terminal: UTF-8 names read as they
         * are, and so do systemd's own escapes in unit names
         * ("machine-qemu\x2d3.scope"). */
        CESCAPE_CONTROL,
        /* Every byte that is not printable ASCII, and the backslash, for logs
         * and diagnostics: plain ASCII that reads back unambiguously. */
        CESCAPE_ASCII,
} CEscapeMode;

/* Writes the escaped copy of s (NULL reads as "") into buf, of size bytes,
 * and returns buf. A copy that does not fit is cut at a whole character or
 * escape and ends in "...". */
const char *cescape_buf(char *buf, size_t size, const char *s, CEscapeMode mode);
/* Room for a copy of n bytes escaped in full: each may become \xNN. */
#define CESCAPE_SIZE(n) ((n) * 4 + 1)
/* The size for a string of no known bound: any printable path (PATH_MAX)
 * fits; only a long name made mostly of control characters is cut. */
#define CESCAPE_BUF_SIZE 4096
/* A copy for the statement at hand, in a buffer that lives until the end of
 * the enclosing block, so several can go into one printf. */
#define CESCAPE(s, mode) cescape_buf((char[CESCAPE_BUF_SIZE]) {}, CESCAPE_BUF_SIZE, (s), (mode))
