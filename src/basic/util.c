/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

static const char *skip_trailing_ws(const char *e) {
        while (*e && isspace((unsigned char) *e))
                e++;
        return e;
}

int safe_atou64(const char *s, uint64_t *ret) {
        char *end;
        unsigned long long v;

        if (!s)
                return -EINVAL;
        while (isspace((unsigned char) *s))
                s++;
        if (*s == '-' || *s == '+' || !isdigit((unsigned char) *s))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno > 0)
                return -errno;
        if (*skip_trailing_ws(end) != '\0')
                return -EINVAL;
        *ret = (uint64_t) v;
        return 0;
}

int safe_atoi64(const char *s, int64_t *ret) {
        char *end;
        long long v;

        if (!s)
                return -EINVAL;
        while (isspace((unsigned char) *s))
                s++;
        if (!(isdigit((unsigned char) *s) || ((*s == '-' || *s == '+') && isdigit((unsigned char) s[1]))))
                return -EINVAL;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno > 0)
                return -errno;
        if (*skip_trailing_ws(end) != '\0')
                return -EINVAL;
        *ret = (int64_t) v;
        return 0;
}

int safe_atou(const char *s, unsigned *ret) {
        uint64_t v;
        int r = safe_atou64(s, &v);
        if (r < 0)
                return r;
        if (v > UINT_MAX)
                return -ERANGE;
        *ret = (unsigned) v;
        return 0;
}

int safe_atoi(const char *s, int *ret) {
        int64_t v;
        int r = safe_atoi64(s, &v);
        if (r < 0)
                return r;
        if (v < INT_MIN || v > INT_MAX)
                return -ERANGE;
        *ret = (int) v;
        return 0;
}

int parse_boolean(const char *s) {
        static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" };
        static const char *const no[] = { "0", "no", "n", "false", "f", "off" };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (strcasecmp(s, yes[i]) == 0)
                        return 1;
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (strcasecmp(s, no[i]) == 0)
                        return 0;
        return -EINVAL;
}

/* A decimal number as people write one: digits with at most one point, at
 * least one digit; no sign, no exponent, no hexadecimal (strtod() reads
 * "1e3" and "0x10", which nobody means as a time span or a size). The
 * fraction keeps 18 digits, which is more than any unit here can use. */
static int scan_decimal(const char **p, uint64_t *ret_whole, uint64_t *ret_frac, uint64_t *ret_frac_div) {
        const char *s = *p;
        uint64_t whole = 0, frac = 0, div = 1;
        bool digits = false;

        for (; isdigit((unsigned char) *s); s++) {
                uint64_t d = (uint64_t) (*s - '0');
                if (whole > UINT64_MAX / 10 || whole * 10 > UINT64_MAX - d)
                        return -ERANGE;
                whole = whole * 10 + d;
                digits = true;
        }
        if (*s == '.')
                for (s++; isdigit((unsigned char) *s); s++) {
                        if (div < UINT64_C(1000000000000000000)) {
                                frac = frac * 10 + (uint64_t) (*s - '0');
                                div *= 10;
                        }
                        digits = true;
                }
        if (!digits)
                return -EINVAL;
        *p = s;
        *ret_whole = whole;
        *ret_frac = frac;
        *ret_frac_div = div;
        return 0;
}

typedef struct UnitName {
        const char *name;
        uint64_t factor;
} UnitName;

/* Components "NUMBER[ ]UNIT" with optional whitespace between them, summed
 * ("1h 30min", "2min30s", "1G 512M"), as systemd reads time spans and
 * sizes. A number without a unit takes default_unit, and only alone ("5",
 * not "5 5s": a typo is likelier than a sum). -ERANGE beyond max; *ret
 * is written only on success. */
static int parse_with_units(const char *s, const UnitName *units, size_t n_units, uint64_t default_unit,
                            uint64_t max, uint64_t *ret) {
        uint64_t total = 0;
        bool first = true;

        if (!s)
                return -EINVAL;
        s = skip_trailing_ws(s);
        if (!*s)
                return -EINVAL;
        while (*s) {
                uint64_t whole, frac, div, factor = 0;
                int r = scan_decimal(&s, &whole, &frac, &div);
                if (r < 0)
                        return r;
                s = skip_trailing_ws(s);
                size_t n = strcspn(s, " \t\n\r.0123456789");
                if (n == 0) {
                        if (!first || *s)
                                return -EINVAL;
                        factor = default_unit;
                } else
                        for (size_t i = 0; i < n_units && factor == 0; i++)
                                if (strlen(units[i].name) == n && strncmp(s, units[i].name, n) == 0)
                                        factor = units[i].factor;
                if (factor == 0)
                        return -EINVAL;
                s = skip_trailing_ws(s + n);
                first = false;

                if (whole > max / factor)
                        return -ERANGE;
                uint64_t v = whole * factor;
                /* Below one factor (2^60 at most): llround() cannot overflow. */
                uint64_t part = (uint64_t) llround((double) frac / (double) div * (double) factor);
                if (part > max - v)
                        return -ERANGE;
                v += part;
                if (v > max - total)
                        return -ERANGE;
                total += v;
        }
        *ret = total;
        return 0;
}

/* systemd.time(7): months are 30.44 days, years 365.25. */
#define USEC_PER_MINUTE (60 * USEC_PER_SEC)
#define USEC_PER_HOUR (60 * USEC_PER_MINUTE)
#define USEC_PER_DAY (24 * USEC_PER_HOUR)

int parse_time_usec(const char *s, uint64_t default_unit_usec, uint64_t *ret) {
        static const UnitName units[] = {
                { "us", 1 }, { "usec", 1 }, { "\xc2\xb5s", 1 }, { "\xce\xbcs", 1 },
                { "ms", USEC_PER_MSEC }, { "msec", USEC_PER_MSEC },
                { "s", USEC_PER_SEC }, { "sec", USEC_PER_SEC }, { "second", USEC_PER_SEC }, { "seconds", USEC_PER_SEC },
                { "m", USEC_PER_MINUTE }, { "min", USEC_PER_MINUTE }, { "minute", USEC_PER_MINUTE },
                { "minutes", USEC_PER_MINUTE },
                { "h", USEC_PER_HOUR }, { "hr", USEC_PER_HOUR }, { "hour", USEC_PER_HOUR }, { "hours", USEC_PER_HOUR },
                { "d", USEC_PER_DAY }, { "day", USEC_PER_DAY }, { "days", USEC_PER_DAY },
                { "w", 7 * USEC_PER_DAY }, { "week", 7 * USEC_PER_DAY }, { "weeks", 7 * USEC_PER_DAY },
                { "M", 2629800 * USEC_PER_SEC }, { "month", 2629800 * USEC_PER_SEC },
                { "months", 2629800 * USEC_PER_SEC },
                { "y", 31557600 * USEC_PER_SEC }, { "year", 31557600 * USEC_PER_SEC },
                { "years", 31557600 * USEC_PER_SEC },
        };
        /* INT64_MAX: callers add time spans to monotonic timestamps and
         * compare them as signed as often as not. */
        return parse_with_units(s, units, ELEMENTSOF(units), default_unit_usec, INT64_MAX, ret);
}

int parse_timespan_usec(const char *s, uint64_t *ret) {
        return parse_time_usec(s, USEC_PER_SEC, ret);
}

int parse_size(const char *s, uint64_t default_unit, uint64_t *ret) {
        /* systemd's parse_size() with base 1024: one letter, no "KiB". */
        static const UnitName units[] = {
                { "B", 1 },
                { "K", UINT64_C(1) << 10 },
                { "M", UINT64_C(1) << 20 },
                { "G", UINT64_C(1) << 30 },
                { "T", UINT64_C(1) << 40 },
                { "P", UINT64_C(1) << 50 },
                { "E", UINT64_C(1) << 60 },
        };
        return parse_with_units(s, units, ELEMENTSOF(units), default_unit, UINT64_MAX, ret);
}

int parse_percent(const char *s, double *ret) {
        uint64_t whole, frac, div;

        if (!s)
                return -EINVAL;
        s = skip_trailing_ws(s);
        int r = scan_decimal(&s, &whole, &frac, &div);
        if (r < 0)
                return r;
        if (*s == '%')
                s++;
        if (*skip_trailing_ws(s))
                return -EINVAL;
        *ret = (double) whole + (double) frac / (double) div;
        return 0;
}

const char *format_timespan(char *buf, size_t n, uint64_t usec) {
        /* %.3g switches to exponent form ("1e+03") from 999.5 up: such
         * values take the next unit, or whole seconds. */
        if (usec >= 60 * USEC_PER_SEC && usec % (60 * USEC_PER_SEC) == 0)
                snprintf(buf, n, "%" PRIu64 "min", usec / (60 * USEC_PER_SEC));
        else if (usec >= 999500 * USEC_PER_MSEC)
                snprintf(buf, n, "%.0fs", (double) usec / USEC_PER_SEC);
        else if (usec >= 999500)
                snprintf(buf, n, "%.3gs", (double) usec / USEC_PER_SEC);
        else if (usec >= USEC_PER_MSEC)
                snprintf(buf, n, "%.3gms", (double) usec / USEC_PER_MSEC);
        else
                snprintf(buf, n, "%" PRIu64 "us", usec);
        return buf;
}

const char *format_bytes(char *buf, size_t n, uint64_t bytes) {
        static const char *const suffix[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
        double v = (double) bytes;
        size_t i = 0;

        /* From 1023.95 up, %.1f would print "1024.0" of the smaller unit. */
        while (v >= 1023.95 && i < ELEMENTSOF(suffix) - 1) {
                v /= 1024.0;
                i++;
        }
        if (i == 0)
                snprintf(buf, n, "%" PRIu64 " B", bytes);
        else
                snprintf(buf, n, "%.1f %s", v, suffix[i]);
        return buf;
}

int greedy_realloc(void **p, size_t *n_alloc, size_t need, size_t size, size_t min_alloc) {
        if (need <= *n_alloc)
                return 0;
        size_t n = MAX(MAX(*n_alloc, min_alloc), (size_t) 1);
        while (n < need) {
                if (n > SIZE_MAX / 2)
                        return -ENOMEM;
                n *= 2;
        }
        if (n > SIZE_MAX / size)
                return -ENOMEM;
        void *q = realloc(*p, n * size);
        if (!q)
                return -ENOMEM;
        *p = q;
        *n_alloc = n;
        return 0;
}

char **strv_free(char **l) {
        if (l)
                for (char **p = l; *p; p++)
                        free(*p);
        free(l);
        return NULL;
}

size_t strv_length(char *const *l) {
        size_t n = 0;
        if (l)
                while (l[n])
                        n++;
        return n;
}

int strv_push(char ***l, char *value) {
        size_t n = strv_length(*l);
        char **nl = realloc(*l, sizeof(char *) * (n + 2));
        if (!nl) {
                free(value);
                return -ENOMEM;
        }
        nl[n] = value;
        nl[n + 1] = NULL;
        *l = nl;
        return 0;
}

int strv_push_all(char ***l, char **add) {
        size_t n = strv_length(*l), m = strv_length(add);
        if (m == 0) {
                free(add);
                return 0;
        }
        char **nl = realloc(*l, sizeof(char *) * (n + m + 1));
        if (!nl) {
                strv_free(add);
                return -ENOMEM;
        }
        memcpy(nl + n, add, sizeof(char *) * m);
        nl[n + m] = NULL;
        free(add);
        *l = nl;
        return 0;
}

int strv_split_whitespace(const char *s, char ***ret) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        while (s && *s) {
                size_t skip = strspn(s, " \t\n\r"), len;
                s += skip;
                len = strcspn(s, " \t\n\r");
                if (len == 0)
                        break;
                char *w = strndup(s, len);
                if (!w || strv_push(&l, w) < 0)
                        return -ENOMEM;
                s += len;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

char *strv_join(char *const *l, const char *sep) {
        size_t n = 1, k = strlen(sep);
        for (char *const *p = l; p && *p; p++)
                n += strlen(*p) + k;
        char *s = malloc(n), *o = s;
        if (!s)
                return NULL;
        for (char *const *p = l; p && *p; p++) {
                if (p != l)
                        o = stpcpy(o, sep);
                o = stpcpy(o, *p);
        }
        *o = 0;
        return s;
}

bool strv_contains(char *const *l, const char *s) {
        if (l)
                for (char *const *p = l; *p; p++)
                        if (strcmp(*p, s) == 0)
                                return true;
        return false;
}

char *strstrip(char *s) {
        char *e;
        while (isspace((unsigned char) *s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                *--e = 0;
        return s;
}

bool startswith(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

char *endswith(const char *s, const char *suffix) {
        size_t l = strlen(s), n = strlen(suffix);
        return l >= n && streq(s + l - n, suffix) ? (char *) s + l - n : NULL;
}

void strscpy(char *dst, size_t n, const char *src) {
        if (n == 0)
                return;
        size_t l = strnlen(src, n - 1);
        memcpy(dst, src, l);
        dst[l] = 0;
}

uint64_t now_usec(clockid_t clock) {
        struct timespec ts;
        (void) clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

uint64_t page_size(void) {
        long p = sysconf(_SC_PAGESIZE);
        return p > 0 ? (uint64_t) p : PAGE_SIZE_DEFAULT;
}

const char *cescape_buf(char *buf, size_t size, const char *s, CEscapeMode mode) {
        static const char hex[] = "0123456789abcdef";
        size_t o = 0, cut = 0; /* cut: the latest end of a character that leaves room for "..." */

        if (size == 0)
                return "";
        for (s = strempty(s); *s; s++) {
                unsigned char c = (unsigned char) *s;
                bool esc = c < 0x20 || c == 0x7f || (mode == CESCAPE_ASCII && (c >= 0x80 || c == '\\'));

                if (o + (esc ? 4 : 1) >= size) {
                        o = cut;
                        for (size_t i = 0; i < 3 && o + 1 < size; i++)
                                buf[o++] = '.';
                        break;
                }
                if (esc) {
                        buf[o++] = '\\';
                        buf[o++] = 'x';
                        buf[o++] = hex[c >> 4];
                        buf[o++] = hex[c & 0xf];
                } else
                        buf[o++] = (char) c;
                if (o + 3 < size)
                        cut = o;
        }
        buf[o] = 0;
        return buf;
}

size_t utf8_sequence_length(const char *str) {
        const unsigned char *s = (const unsigned char *) str;
        if (s[0] < 0x80)
                return 1;
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                return (s[1] & 0xc0) == 0x80 ? 2 : 0;
        if (s[0] >= 0xe0 && s[0] <= 0xef) {
                if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
                        return 0;
                if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))
                        return 0;
                return 3;
        }
        if (s[0] >= 0xf0 && s[0] <= 0xf4) {
                if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
                        return 0;
                if ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
                        return 0;
                return 4;
        }
        return 0;
}

bool utf8_is_valid(const char *s) {
        for (size_t k; *s; s += k)
                if ((k = utf8_sequence_length(s)) == 0)
                        return false;
        return true;
}

char *utf8_make_valid(const char *s) {
        /* Worst case: every byte becomes U+FFFD (3 bytes). */
        char *out = malloc(strlen(s) * 3 + 1), *o = out;
        if (!out)
                return NULL;
        while (*s) {
                size_t k = utf8_sequence_length(s);
                if (k == 0) {
                        memcpy(o, "\xef\xbf\xbd", 3);
                        o += 3;
                        s++;
                } else {
                        memcpy(o, s, k);
                        o += k;
                        s += k;
                }
        }
        *o = 0;
        return out;
}
