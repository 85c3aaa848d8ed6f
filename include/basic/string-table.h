/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>

#include "macro.h"

/* The names of an enum's values live in one table,
 *
 *         static const char *const NAME_table[_NAME_MAX] = { [VALUE] = "name", ... };
 *
 * indexed by value (a value without a name is a NULL hole), and the lookups
 * both ways are generated from it. One rule for every table: a name matches
 * exactly, case included, as the kernel's and systemd's own names do. A
 * caller that must accept another spelling says so where it parses (config
 * values: conf_parse_enum()). */

/* The name of value i, NULL when i is out of range or has none. */
static inline const char *string_table_to_string(const char *const *table, size_t n, ssize_t i) {
        return i >= 0 && (size_t) i < n ? table[i] : NULL;
}

/* The value named s, -EINVAL when s is NULL or no entry has that name. */
static inline ssize_t string_table_from_string(const char *const *table, size_t n, const char *s) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (table[i] && streq(table[i], s))
                        return (ssize_t) i;
        return -EINVAL;
}

/* const char *NAME_to_string(type): fallback for a value without a name,
 * for the callers that print it as it is. */
#define DEFINE_STRING_TABLE_TO_STRING_FALLBACK(name, type, fallback)                                  \
        const char *name##_to_string(type i) {                                                       \
                const char *_s = string_table_to_string(name##_table, ELEMENTSOF(name##_table),      \
                                                        (ssize_t) i);                                \
                return _s ? _s : (fallback);                                                         \
        }
#define DEFINE_STRING_TABLE_TO_STRING(name, type) DEFINE_STRING_TABLE_TO_STRING_FALLBACK(name, type, NULL)

/* type NAME_from_string(const char *): type needs an _INVALID = -EINVAL
 * member (or is int), which an unknown name returns: without one, -EINVAL
 * would become a large unsigned value that "< 0" never sees. */
#define DEFINE_STRING_TABLE_FROM_STRING(name, type)                                                   \
        type name##_from_string(const char *s) {                                                     \
                return (type) string_table_from_string(name##_table, ELEMENTSOF(name##_table), s);   \
        }

#define DEFINE_STRING_TABLE_LOOKUP(name, type)                                                        \
        DEFINE_STRING_TABLE_TO_STRING(name, type)                                                    \
        DEFINE_STRING_TABLE_FROM_STRING(name, type)
