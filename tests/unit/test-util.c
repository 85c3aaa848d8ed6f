/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "util.h"

/* The parsers read configuration and kernel files: every refusal must leave
 * the output alone, so each case starts from a sentinel. */
#define SENTINEL 0x5a5a5a5a

/* One table for both 64-bit parsers: the same input side by side shows
 * where they differ (signs) and where they must agree (whitespace, junk). */
static void test_safe_ato64(void **state) {
        const struct {
                const char *s;
                int r_u;        /* safe_atou64() */
                uint64_t u;
                int r_i;        /* safe_atoi64() */
                int64_t i;
        } cases[] = {
                { "0", 0, 0, 0, 0 },
                { "007", 0, 7, 0, 7 },
                /* kernel files end in a newline, and inih hands over values as written */
                { " \t12\n", 0, 12, 0, 12 },
                { "18446744073709551615", 0, UINT64_MAX, -ERANGE, 0 },
                { "18446744073709551616", -ERANGE, 0, -ERANGE, 0 },
                { "99999999999999999999999", -ERANGE, 0, -ERANGE, 0 },
                { "9223372036854775807", 0, INT64_MAX, 0, INT64_MAX },
                { "9223372036854775808", 0, UINT64_C(9223372036854775808), -ERANGE, 0 },
                { "-9223372036854775808", -EINVAL, 0, 0, INT64_MIN },
                { "-9223372036854775809", -EINVAL, 0, -ERANGE, 0 },
                /* strtoull() would wrap "-1" to UINT64_MAX */
                { "-1", -EINVAL, 0, 0, -1 },
                { " -5 ", -EINVAL, 0, 0, -5 },
                { "-0", -EINVAL, 0, 0, 0 },
                { "+5", -EINVAL, 0, 0, 5 },
                { "", -EINVAL, 0, -EINVAL, 0 },
                { " ", -EINVAL, 0, -EINVAL, 0 },
                { "-", -EINVAL, 0, -EINVAL, 0 },
                { "+", -EINVAL, 0, -EINVAL, 0 },
                { "--5", -EINVAL, 0, -EINVAL, 0 },
                { "+-5", -EINVAL, 0, -EINVAL, 0 },
                { "- 5", -EINVAL, 0, -EINVAL, 0 },
                { "5-", -EINVAL, 0, -EINVAL, 0 },
                { "0x10", -EINVAL, 0, -EINVAL, 0 },
                { "1e3", -EINVAL, 0, -EINVAL, 0 },
                { "1.5", -EINVAL, 0, -EINVAL, 0 },
                { "1 2", -EINVAL, 0, -EINVAL, 0 },
                { "12abc", -EINVAL, 0, -EINVAL, 0 },
                { "abc", -EINVAL, 0, -EINVAL, 0 },
        };

        for (size_t k = 0; k < ELEMENTSOF(cases); k++) {
                uint64_t u = SENTINEL;
                int64_t i = SENTINEL;
                int r;

                r = safe_atou64(cases[k].s, &u);
                if (r != cases[k].r_u || u != (r == 0 ? cases[k].u : SENTINEL))
                        fail_msg("safe_atou64(\"%s\"): %d, %" PRIu64, cases[k].s, r, u);
                r = safe_atoi64(cases[k].s, &i);
                if (r != cases[k].r_i || i != (r == 0 ? cases[k].i : SENTINEL))
                        fail_msg("safe_atoi64(\"%s\"): %d, %" PRIi64, cases[k].s, r, i);
        }

        uint64_t u;
        int64_t i;
        assert_int_equal(safe_atou64(NULL, &u), -EINVAL);
        assert_int_equal(safe_atoi64(NULL, &i), -EINVAL);
}

static void test_safe_atou_atoi(void **state) {
        unsigned u = SENTINEL;
        int i = SENTINEL;

        assert_int_equal(safe_atou("4294967295", &u), 0);
        assert_int_equal(u, UINT_MAX);
        u = SENTINEL;
        assert_int_equal(safe_atou("4294967296", &u), -ERANGE);
        assert_int_equal(u, SENTINEL);
        assert_int_equal(safe_atou("18446744073709551616", &u), -ERANGE);
        assert_int_equal(safe_atou("-1", &u), -EINVAL);
        assert_int_equal(safe_atou("", &u), -EINVAL);
        assert_int_equal(u, SENTINEL);

        assert_int_equal(safe_atoi("2147483647", &i), 0);
        assert_int_equal(i, INT_MAX);
        assert_int_equal(safe_atoi("-2147483648", &i), 0);
        assert_int_equal(i, INT_MIN);
        i = SENTINEL;
        assert_int_equal(safe_atoi("2147483648", &i), -ERANGE);
        assert_int_equal(safe_atoi("-2147483649", &i), -ERANGE);
        assert_int_equal(safe_atoi("9223372036854775808", &i), -ERANGE);
        assert_int_equal(safe_atoi("1 1", &i), -EINVAL);
        assert_int_equal(safe_atoi(" ", &i), -EINVAL);
        assert_int_equal(i, SENTINEL);
}

static void test_parse_boolean(void **state) {
        const char *yes[] = { "1", "yes", "y", "true", "t", "on", "YES", "True", "oN" };
        const char *no[] = { "0", "no", "n", "false", "f", "off", "NO", "False", "OFF" };
        const char *neither[] = { "", " ", "2", "-1", "yess", "ye", "of", "enable",
                                  " yes", "yes ", "1 ", "00" };

        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (parse_boolean(yes[i]) != 1)
                        fail_msg("parse_boolean(\"%s\") is not 1", yes[i]);
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (parse_boolean(no[i]) != 0)
                        fail_msg("parse_boolean(\"%s\") is not 0", no[i]);
        for (size_t i = 0; i < ELEMENTSOF(neither); i++)
                if (parse_boolean(neither[i]) != -EINVAL)
                        fail_msg("parse_boolean(\"%s\") is not -EINVAL", neither[i]);
        assert_int_equal(parse_boolean(NULL), -EINVAL);
}

/* parse_time_usec() and parse_size() share a signature and a grammar. */
typedef struct UnitCase {
        const char *s;
        uint64_t default_unit;
        int r;
        uint64_t value;         /* when r == 0 */
} UnitCase;

static void check_unit_parser(const char *name, int (*parse)(const char *s, uint64_t unit, uint64_t *ret),
                              const UnitCase *cases, size_t n_cases) {
        for (size_t i = 0; i < n_cases; i++) {
                uint64_t v = SENTINEL;
                int r = parse(cases[i].s, cases[i].default_unit, &v);
                if (r != cases[i].r)
                        fail_msg("%s(\"%s\") returned %d, not %d", name, cases[i].s, r, cases[i].r);
                if (r == 0 && v != cases[i].value)
                        fail_msg("%s(\"%s\") gave %" PRIu64 ", not %" PRIu64, name, cases[i].s, v, cases[i].value);
                if (r < 0 && v != SENTINEL)
                        fail_msg("%s(\"%s\") wrote %" PRIu64 " on failure", name, cases[i].s, v);
        }
        uint64_t v = SENTINEL;
        assert_int_equal(parse(NULL, 1, &v), -EINVAL);
        assert_int_equal(v, SENTINEL);
}

#define S USEC_PER_SEC
#define MS USEC_PER_MSEC

static void test_parse_time(void **state) {
        static const UnitCase cases[] = {
                { "0", S, 0, 0 },
                { "5", S, 0, 5 * S }, /* a bare number is in the default unit */
                { "5", MS, 0, 5 * MS },
                { "1.5", S, 0, 1500 * MS },
                { "1.5", MS, 0, 1500 },
                { ".5s", S, 0, 500 * MS },
                { "5.s", S, 0, 5 * S },
                { "5s", MS, 0, 5 * S }, /* a unit beats the default */
                { "5sec", S, 0, 5 * S },
                { "5second", S, 0, 5 * S },
                { "5seconds", S, 0, 5 * S },
                { "250ms", S, 0, 250 * MS },
                { "250msec", S, 0, 250 * MS },
                { "7us", S, 0, 7 },
                { "7usec", S, 0, 7 },
                { "7\xc2\xb5s", S, 0, 7 },     /* MICRO SIGN */
                { "7\xce\xbcs", S, 0, 7 },     /* GREEK SMALL LETTER MU */
                { "2m", S, 0, 120 * S },
                { "2min", S, 0, 120 * S },
                { "2minute", S, 0, 120 * S },
                { "5minutes", S, 0, 300 * S },
                { "1h", S, 0, 3600 * S },
                { "1hr", S, 0, 3600 * S },
                { "1hour", S, 0, 3600 * S },
                { "2hours", S, 0, 7200 * S },
                { "1.5h", S, 0, 5400 * S },
                { "1d", S, 0, 86400 * S },
                { "2days", S, 0, 2 * 86400 * S },
                { "1w", S, 0, 7 * 86400 * S },
                { "1M", S, 0, 2629800 * S }, /* systemd's month: 30.44 days */
                { "1y", S, 0, 31557600 * S },
                /* components, with or without spaces between them, add up */
                { "1h 30s", S, 0, 3630 * S },
                { "1h30s", S, 0, 3630 * S },
                { "2min 30s", MS, 0, 150 * S },
                { "1min 1min", S, 0, 120 * S },
                { "1 h 2 min 3 s 4 ms", S, 0, 3723 * S + 4 * MS },
                { "20 ms", S, 0, 20 * MS },
                { "  3s \n", S, 0, 3 * S },
                { "1.0000006s", S, 0, 1000001 }, /* rounded, not cut */
                { "0.4us", S, 0, 0 },
                { "0.000000000000000000001s", S, 0, 0 }, /* digits past 18 are dropped */
                /* the largest value below 2^63 */
                { "9223372036854775807us", S, 0, UINT64_C(9223372036854775807) },
                { "9223372036854775806us 1us", S, 0, UINT64_C(9223372036854775807) },

                { "", S, -EINVAL, 0 },
                { "   ", S, -EINVAL, 0 },
                { "s", S, -EINVAL, 0 },
                { ".", S, -EINVAL, 0 },
                { "-1s", S, -EINVAL, 0 },
                { "+1s", S, -EINVAL, 0 },
                { "1parsec", S, -EINVAL, 0 },
                { "1S", S, -EINVAL, 0 },     /* units are case-sensitive: M is a month, m a minute */
                { "1MIN", S, -EINVAL, 0 },
                { "1 s s", S, -EINVAL, 0 },
                { "5 5s", S, -EINVAL, 0 },   /* a bare number only alone */
                { "1s5", S, -EINVAL, 0 },
                { "1s 5", S, -EINVAL, 0 },
                { "1.5.5s", S, -EINVAL, 0 },
                { "1s,2s", S, -EINVAL, 0 },
                { "inf", S, -EINVAL, 0 },
                { "infinity", S, -EINVAL, 0 },
                { "nan", S, -EINVAL, 0 },
                /* strtod() reads hexadecimal floats and exponents: not a time span anyone writes */
                { "0x10", S, -EINVAL, 0 },
                { "0X1p3s", S, -EINVAL, 0 },
                { "1e3s", S, -EINVAL, 0 },
                { "1e400s", S, -EINVAL, 0 },
                /* 2^63 us and more do not fit the int64_t the callers compare with */
                { "9223372036854775808us", S, -ERANGE, 0 },
                { "9223372036854775807us 1us", S, -ERANGE, 0 },
                { "18446744073709551615us", S, -ERANGE, 0 },
                { "99999999999999999999us", S, -ERANGE, 0 },
                { "3000000000h", S, -ERANGE, 0 },
                { "300000y", S, -ERANGE, 0 },
        };
        check_unit_parser("parse_time_usec", parse_time_usec, cases, ELEMENTSOF(cases));

        /* parse_timespan_usec() is the same with seconds for a bare number */
        uint64_t v = SENTINEL;
        assert_int_equal(parse_timespan_usec("1.5", &v), 0);
        assert_int_equal(v, 1500 * MS);
        assert_int_equal(parse_timespan_usec("2min 30s", &v), 0);
        assert_int_equal(v, 150 * S);
        assert_int_equal(parse_timespan_usec("1S", &v), -EINVAL);
        assert_int_equal(v, 150 * S);
}

#undef S
#undef MS

static void test_parse_size(void **state) {
        static const uint64_t K = 1024, M = 1024 * 1024;
        const UnitCase cases[] = {
                { "0", 1, 0, 0 },
                { "512", 1, 0, 512 },
                { "64", M, 0, 64 * M }, /* MinAnonMiB=64 */
                { "64M", M, 0, 64 * M },
                { "64M", 1, 0, 64 * M },
                { "1K", 1, 0, K },
                { "1.5K", 1, 0, 1536 },
                { "2G", 1, 0, 2048 * M },
                { "1T", 1, 0, UINT64_C(1) << 40 },
                { "1P", 1, 0, UINT64_C(1) << 50 },
                { "1E", 1, 0, UINT64_C(1) << 60 },
                { "15E", 1, 0, UINT64_C(15) << 60 },
                { "100B", M, 0, 100 },
                { "1G 512M", 1, 0, 1536 * M },
                { "1G512M", 1, 0, 1536 * M },
                { " 4 K ", 1, 0, 4 * K },
                { "0.5B", 1, 0, 1 }, /* rounded */
                { "18446744073709551615", 1, 0, UINT64_MAX },

                { "", 1, -EINVAL, 0 },
                { "M", 1, -EINVAL, 0 },
                { "-1M", 1, -EINVAL, 0 },
                { "1k", 1, -EINVAL, 0 },     /* systemd's letters, upper case only */
                { "1KB", 1, -EINVAL, 0 },
                { "1MiB", 1, -EINVAL, 0 },
                { "1m", 1, -EINVAL, 0 },
                { "1Z", 1, -EINVAL, 0 },
                { "1 2M", 1, -EINVAL, 0 },
                { "1e3", 1, -EINVAL, 0 },
                { "0x10", 1, -EINVAL, 0 },
                { "16E", 1, -ERANGE, 0 },
                { "18446744073709551616", 1, -ERANGE, 0 },
                { "18446744073709551615B 1B", 1, -ERANGE, 0 },
                { "17592186044416", M, -ERANGE, 0 }, /* 2^44 MiB is 2^64 bytes */
        };
        check_unit_parser("parse_size", parse_size, cases, ELEMENTSOF(cases));
}

static void test_parse_percent(void **state) {
        static const struct {
                const char *s;
                double value;
        } good[] = {
                { "10", 10 }, { "10%", 10 }, { "2.5%", 2.5 }, { "0", 0 }, { ".5%", 0.5 }, { " 100% ", 100 }, { "250", 250 },
        };
        static const char *const bad[] = { "", "%", "-1%", "10%%", "10 %x", "1e2%", "ten", "10‰", "nan" };
        double v;

        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                v = -1;
                if (parse_percent(good[i].s, &v) != 0 || v != good[i].value)
                        fail_msg("parse_percent(\"%s\") gave %g, not %g", good[i].s, v, good[i].value);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                v = -1;
                if (parse_percent(bad[i], &v) != -EINVAL || v != -1)
                        fail_msg("parse_percent(\"%s\") is not -EINVAL, or wrote %g", bad[i], v);
        }
        assert_int_equal(parse_percent(NULL, &v), -EINVAL);
}

typedef struct FormatCase {
        uint64_t value;
        const char *text;
} FormatCase;

/* format_timespan() and format_bytes() share a signature. */
static void check_format(const char *name, const char *(*format)(char *buf, size_t n, uint64_t value),
                         const FormatCase *cases, size_t n_cases) {
        char buf[32];

        for (size_t i = 0; i < n_cases; i++) {
                const char *s = format(buf, sizeof buf, cases[i].value);
                assert_ptr_equal(s, buf);
                if (!streq(s, cases[i].text))
                        fail_msg("%s(%" PRIu64 ") is \"%s\", not \"%s\"", name, cases[i].value, s,
                                 cases[i].text);
        }
}

static void test_format_timespan(void **state) {
        static const FormatCase cases[] = {
                { 0, "0us" },
                { 999, "999us" },
                { 1000, "1ms" },
                { 1500, "1.5ms" },
                { 20 * USEC_PER_MSEC, "20ms" },
                { 999 * USEC_PER_MSEC, "999ms" },
                { 999499, "999ms" },
                /* %.3g would write these two as "1e+03ms" and "1e+03s" */
                { 999999, "1s" },
                { 999999 * USEC_PER_MSEC, "1000s" },
                { USEC_PER_SEC, "1s" },
                { 1500 * USEC_PER_MSEC, "1.5s" },
                { 1234567, "1.23s" },
                { 59 * USEC_PER_SEC, "59s" },
                { 60 * USEC_PER_SEC, "1min" },
                { 61 * USEC_PER_SEC, "61s" },
                { 90 * USEC_PER_SEC, "90s" },
                { 3601 * USEC_PER_SEC, "3601s" },
                { 3600 * USEC_PER_SEC, "60min" },
                { UINT64_C(7) * 24 * 3600 * USEC_PER_SEC, "10080min" },
                { UINT64_MAX, "18446744073710s" },
        };
        char buf[32];

        check_format("format_timespan", format_timespan, cases, ELEMENTSOF(cases));

        /* What it writes reads back (to the three digits it keeps). */
        for (uint64_t usec = 1; usec < UINT64_C(100000) * USEC_PER_SEC; usec = usec * 3 + 7) {
                uint64_t back;
                format_timespan(buf, sizeof buf, usec);
                if (parse_timespan_usec(buf, &back) < 0)
                        fail_msg("\"%s\" (from %" PRIu64 ") does not parse", buf, usec);
                if ((double) back < (double) usec * 0.99 || (double) back > (double) usec * 1.01)
                        fail_msg("\"%s\" reads back as %" PRIu64 ", not about %" PRIu64, buf, back, usec);
        }

        /* A short buffer truncates, terminated. */
        char small[4];
        assert_string_equal(format_timespan(small, sizeof small, 1500), "1.5");
}

static void test_format_bytes(void **state) {
        static const FormatCase cases[] = {
                { 0, "0 B" },
                { 1, "1 B" },
                { 1023, "1023 B" },
                { 1024, "1.0 KiB" },
                { 1536, "1.5 KiB" },
                { 1024 * 1024 - 52, "1023.9 KiB" },
                /* rounds to 1024.0 KiB: that is 1.0 MiB */
                { 1024 * 1024 - 51, "1.0 MiB" },
                { 1024 * 1024 - 1, "1.0 MiB" },
                { 3 * 1024 * 1024, "3.0 MiB" },
                { UINT64_C(5) << 30, "5.0 GiB" },
                { UINT64_C(1) << 40, "1.0 TiB" },
                { UINT64_C(1) << 50, "1.0 PiB" },
                /* PiB is the largest unit */
                { UINT64_C(1) << 60, "1024.0 PiB" },
                { UINT64_MAX, "16384.0 PiB" },
        };

        check_format("format_bytes", format_bytes, cases, ELEMENTSOF(cases));
}

static void test_strv_split_whitespace(void **state) {
        _cleanup_strv_free_ char **l = NULL;

        assert_int_equal(strv_split_whitespace(" a\tbb \n ccc\r\n", &l), 0);
        assert_int_equal(strv_length(l), 3);
        assert_string_equal(l[0], "a");
        assert_string_equal(l[1], "bb");
        assert_string_equal(l[2], "ccc");
        assert_null(l[3]);
        l = strv_free(l);

        /* Nothing to split is an empty list, not NULL: callers iterate it. */
        const char *empty[] = { "", "  \t\n", NULL };
        for (size_t i = 0; i < ELEMENTSOF(empty); i++) {
                assert_int_equal(strv_split_whitespace(empty[i], &l), 0);
                assert_non_null(l);
                assert_null(l[0]);
                assert_int_equal(strv_length(l), 0);
                l = strv_free(l);
        }

        assert_int_equal(strv_split_whitespace("one", &l), 0);
        assert_int_equal(strv_length(l), 1);
        assert_string_equal(l[0], "one");
        assert_true(strv_contains(l, "one"));
        assert_false(strv_contains(l, "on"));
        assert_int_equal(strv_length(NULL), 0);
        assert_false(strv_contains(NULL, "one"));
}

static void test_strv_join(void **state) {
        char *abc[] = { "a", "bc", "", "d", NULL }, *one[] = { "x", NULL }, *none[] = { NULL };
        _cleanup_free_ char *j1 = strv_join(abc, ", "), *j2 = strv_join(one, ", "), *j3 = strv_join(none, ", "),
                            *j4 = strv_join(NULL, "-"), *j5 = strv_join(abc, "");

        assert_string_equal(j1, "a, bc, , d");
        assert_string_equal(j2, "x");
        assert_string_equal(j3, "");
        assert_string_equal(j4, "");
        assert_string_equal(j5, "abcd");
}

static void test_startswith_endswith(void **state) {
        assert_true(startswith("ksmtuned2", "ksm"));
        assert_true(startswith("ksm", "ksm"));
        assert_true(startswith("ksm", ""));
        assert_true(startswith("", ""));
        assert_false(startswith("ks", "ksm"));
        assert_false(startswith("", "k"));
        assert_false(startswith("Ksm", "ksm"));

        const char *name = "web.policy";
        assert_ptr_equal(endswith(name, ".policy"), name + 3);
        assert_ptr_equal(endswith(name, name), name);
        assert_ptr_equal(endswith(name, ""), name + strlen(name));
        assert_null(endswith(name, "x.web.policy"));
        assert_null(endswith(name, ".polic"));
        assert_null(endswith("", "y"));
        const char *empty = "";
        assert_ptr_equal(endswith(empty, ""), empty);
        assert_string_equal(endswith("a.policy.policy", ".policy"), ".policy");
}

static void test_strscpy(void **state) {
        char buf[8];

        strscpy(buf, sizeof buf, "abc");
        assert_string_equal(buf, "abc");
        strscpy(buf, sizeof buf, "1234567");
        assert_string_equal(buf, "1234567");
        /* one too long: cut to n - 1 and terminated */
        strscpy(buf, sizeof buf, "12345678");
        assert_string_equal(buf, "1234567");
        strscpy(buf, sizeof buf, "a much longer string than the buffer");
        assert_string_equal(buf, "a much ");
        strscpy(buf, 1, "abc");
        assert_string_equal(buf, "");
        strscpy(buf, sizeof buf, "");
        assert_string_equal(buf, "");

        /* n == 0 writes nothing at all */
        memset(buf, 'x', sizeof buf);
        strscpy(buf, 0, "abc");
        for (size_t i = 0; i < sizeof buf; i++)
                assert_int_equal(buf[i], 'x');
        /* and no byte beyond n */
        strscpy(buf, 3, "abcdef");
        assert_string_equal(buf, "ab");
        assert_int_equal(buf[3], 'x');
}

static void test_greedy_realloc(void **state) {
        _cleanup_free_ int *a = NULL;
        size_t n_alloc = 0;

        /* from min_alloc, doubling, and never less than asked for */
        assert_int_equal(greedy_realloc((void **) &a, &n_alloc, 5, sizeof *a, 3), 0);
        assert_int_equal(n_alloc, 6);
        for (int k = 0; k < 6; k++)
                a[k] = k;
        assert_int_equal(greedy_realloc((void **) &a, &n_alloc, 6, sizeof *a, 3), 0);
        assert_int_equal(n_alloc, 6);
        assert_int_equal(greedy_realloc((void **) &a, &n_alloc, 100, sizeof *a, 3), 0);
        assert_int_equal(n_alloc, 192);
        for (int k = 0; k < 6; k++)
                assert_int_equal(a[k], k);
        /* nothing needed: nothing changes */
        assert_int_equal(greedy_realloc((void **) &a, &n_alloc, 0, sizeof *a, 3), 0);
        assert_int_equal(n_alloc, 192);

        /* Sizes that overflow size_t are refused before realloc() sees a
         * wrapped, small count; the array stays as it was. */
        int *before = a;
        const struct {
                size_t need, size;
        } huge[] = {
                { SIZE_MAX, 1 },
                { SIZE_MAX / 2 + 2, 2 },
                { SIZE_MAX / sizeof(int) + 1, sizeof(int) },
                { (SIZE_MAX >> 4) + 1, 16 },
                { 193, SIZE_MAX / 16 },
        };
        for (size_t i = 0; i < ELEMENTSOF(huge); i++) {
                if (greedy_realloc((void **) &a, &n_alloc, huge[i].need, huge[i].size, 4) != -ENOMEM)
                        fail_msg("greedy_realloc(need=%zu, size=%zu) was not refused", huge[i].need,
                                 huge[i].size);
                assert_ptr_equal(a, before);
                assert_int_equal(n_alloc, 192);
        }
        assert_int_equal(a[5], 5);

        /* min_alloc 0 still makes room */
        _cleanup_free_ char *c = NULL;
        size_t n_c = 0;
        assert_int_equal(greedy_realloc((void **) &c, &n_c, 1, 1, 0), 0);
        assert_true(n_c >= 1);
        c[0] = 'x';
}

static void test_utf8(void **state) {
        const struct {
                const char *s;
                size_t len; /* of the first sequence */
        } seq[] = {
                { "a", 1 },
                { "\x7f", 1 },
                { "\xc2\x80", 2 },             /* U+0080, the first 2-byte */
                { "\xdf\xbf", 2 },             /* U+07FF */
                { "\xe0\xa0\x80", 3 },         /* U+0800, the first 3-byte */
                { "\xed\x9f\xbf", 3 },         /* U+D7FF, just below the surrogates */
                { "\xee\x80\x80", 3 },         /* U+E000, just above them */
                { "\xef\xbf\xbd", 3 },         /* U+FFFD */
                { "\xf0\x90\x80\x80", 4 },     /* U+10000 */
                { "\xf4\x8f\xbf\xbf", 4 },     /* U+10FFFF, the last code point */
                { "\x80", 0 },                 /* a continuation byte alone */
                { "\xbf", 0 },
                { "\xc0\x80", 0 },             /* overlong NUL */
                { "\xc1\xbf", 0 },             /* overlong U+007F */
                { "\xe0\x9f\xbf", 0 },         /* overlong U+07FF */
                { "\xed\xa0\x80", 0 },         /* U+D800, a surrogate */
                { "\xed\xbf\xbf", 0 },         /* U+DFFF */
                { "\xf0\x8f\xbf\xbf", 0 },     /* overlong U+FFFF */
                { "\xf4\x90\x80\x80", 0 },     /* U+110000, beyond Unicode */
                { "\xf5\x80\x80\x80", 0 },
                { "\xff", 0 },
                { "\xc3", 0 },                 /* cut short by the terminator */
                { "\xe2\x82", 0 },
                { "\xf0\x9f\x98", 0 },
                { "\xc3(", 0 },                /* a lead byte before an ASCII byte */
                { "\xe2(\xa1", 0 },
        };
        for (size_t i = 0; i < ELEMENTSOF(seq); i++)
                if (utf8_sequence_length(seq[i].s) != seq[i].len)
                        fail_msg("utf8_sequence_length() of case %zu is %zu, not %zu", i,
                                 utf8_sequence_length(seq[i].s), seq[i].len);

        assert_true(utf8_is_valid(""));
        assert_true(utf8_is_valid("plain ascii"));
        assert_true(utf8_is_valid("m\xc3\xa9moire \xe2\x82\xac \xf0\x9f\x98\x80"));
        assert_false(utf8_is_valid("m\xc3moire"));
        assert_false(utf8_is_valid("ok\xff"));
        assert_false(utf8_is_valid("\xed\xa0\x80"));
        assert_false(utf8_is_valid("tail \xe2\x82"));

        _cleanup_free_ char *a = utf8_make_valid("a\xffz\xc3\xa9\xc3");
        assert_string_equal(a, "a\xef\xbf\xbdz\xc3\xa9\xef\xbf\xbd");
        assert_true(utf8_is_valid(a));
        _cleanup_free_ char *b = utf8_make_valid("");
        assert_string_equal(b, "");
        /* each byte of a bad sequence is replaced on its own */
        _cleanup_free_ char *c = utf8_make_valid("\xed\xa0\x80");
        assert_string_equal(c, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_safe_ato64),
                cmocka_unit_test(test_safe_atou_atoi),
                cmocka_unit_test(test_parse_boolean),
                cmocka_unit_test(test_parse_time),
                cmocka_unit_test(test_parse_size),
                cmocka_unit_test(test_parse_percent),
                cmocka_unit_test(test_format_timespan),
                cmocka_unit_test(test_format_bytes),
                cmocka_unit_test(test_strv_split_whitespace),
                cmocka_unit_test(test_strv_join),
                cmocka_unit_test(test_startswith_endswith),
                cmocka_unit_test(test_strscpy),
                cmocka_unit_test(test_greedy_realloc),
                cmocka_unit_test(test_utf8),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
