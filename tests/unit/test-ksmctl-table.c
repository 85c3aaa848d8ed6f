/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tables of ksmctl list: widths, alignment, cutting the widest column
 * to the terminal's width, with names a terminal shows wider than their
 * bytes (UTF-8) and narrower (combining marks). */
#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ksmctl-table.h"
#include "util.h"

static bool utf8_locale(void) {
        return setlocale(LC_CTYPE, "C.UTF-8") || setlocale(LC_CTYPE, "C.utf8") || setlocale(LC_CTYPE, "en_US.UTF-8");
}

static void test_text_width(void **state) {
        assert_true(setlocale(LC_CTYPE, "C"));
        assert_int_equal(text_width(""), 0);
        assert_int_equal(text_width(NULL), 0);
        assert_int_equal(text_width("abc"), 3);
        /* Not UTF-8 as a locale: one column a character all the same. */
        assert_int_equal(text_width("\xc3\xa9t\xc3\xa9"), 3);
        assert_int_equal(text_width("\xff"), 1);
        assert_string_equal(text_ellipsis(), "...");
        if (!utf8_locale())
                skip();
        assert_string_equal(text_ellipsis(), "…");
        assert_int_equal(text_width("\xc3\xa9t\xc3\xa9"), 3);
        assert_int_equal(text_width("日本"), 4);
        assert_int_equal(text_width("e\xcc\x81"), 1); /* e + combining acute */
        assert_int_equal(text_width("a\xffz"), 3);
}

static void test_text_ellipsize(void **state) {
        static const struct {
                const char *s;
                size_t width;
                const char *ascii, *utf8;
        } cases[] = {
                { "abcdef", 6, "abcdef", "abcdef" },
                { "abcdef", 9, "abcdef", "abcdef" },
                { "abcdef", 5, "ab...", "abcd…" },
                { "abcdef", 3, "...", "ab…" },
                { "abcdef", 2, "..", "a…" },
                { "abcdef", 0, "", "" },
                { "", 0, "", "" },
        };
        for (int pass = 0; pass < 2; pass++) {
                if (pass == 0)
                        assert_true(setlocale(LC_CTYPE, "C"));
                else if (!utf8_locale())
                        skip();
                for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                        char *e = text_ellipsize(cases[i].s, cases[i].width);
                        assert_non_null(e);
                        assert_string_equal(e, pass == 0 ? cases[i].ascii : cases[i].utf8);
                        free(e);
                }
        }
        /* A wide character is never split: the cut may leave a column free. */
        char *e = text_ellipsize("日本語", 4);
        assert_string_equal(e, "日…");
        free(e);
}

static const TableColumn columns[] = {
        { "PID", false, 0 },
        { "SIZE", true, 0 },
        { "WHERE", false, 0 },
        { "POLICY", false, 0 },
};

static void fill(Table *t) {
        static const char *const cells[] = { "1", "4.0 KiB", "/system.slice/a-very-long-unit-name.service", "/etc/p.policy:1" };
        table_init(t, columns, ELEMENTSOF(columns));
        for (size_t i = 0; i < ELEMENTSOF(cells); i++)
                assert_int_equal(table_add(t, cells[i]), 0);
        assert_int_equal(table_add_row(t, "222", "1023.9 MiB", "vm:日本", "", NULL), 0);
        assert_int_equal(table_rows(t), 2);
}

static char *print(const Table *t, size_t width, bool header) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        assert_non_null(f);
        table_print(t, f, width, header);
        assert_int_equal(fclose(f), 0);
        return buf;
}

static void test_table_print(void **state) {
        Table t;
        char *out;

        if (!utf8_locale())
                skip();
        fill(&t);
        /* No limit: every cell whole; numbers on the right; no blank at a line's end. */
        out = print(&t, 0, true);
        assert_string_equal(out,
                            "PID       SIZE WHERE                                       POLICY\n"
                            "1      4.0 KiB /system.slice/a-very-long-unit-name.service /etc/p.policy:1\n"
                            "222 1023.9 MiB vm:日本\n");
        free(out);
        /* 60 columns: WHERE, the widest, is cut by as much as the line is too long. */
        out = print(&t, 60, true);
        assert_string_equal(out,
                            "PID       SIZE WHERE                         POLICY\n"
                            "1      4.0 KiB /system.slice/a-very-long-un… /etc/p.policy:1\n"
                            "222 1023.9 MiB vm:日本\n");
        for (char *l = out; *l; l = strchr(l, '\n') + 1) {
                char line[256];
                snprintf(line, sizeof line, "%.*s", (int) (strchr(l, '\n') - l), l);
                assert_true(text_width(line) <= 60);
        }
        free(out);
        /* Narrower still: WHERE stops at its header, then POLICY is cut. */
        out = print(&t, 30, true);
        assert_string_equal(out,
                            "PID       SIZE WHERE POLICY\n"
                            "1      4.0 KiB /sys… /etc/p.p…\n"
                            "222 1023.9 MiB vm:…\n");
        free(out);
        /* --no-legend: no header, and its width no longer counts. */
        out = print(&t, 0, false);
        assert_string_equal(out,
                            "1      4.0 KiB /system.slice/a-very-long-unit-name.service /etc/p.policy:1\n"
                            "222 1023.9 MiB vm:日本\n");
        free(out);
        /* Narrower than the headers: nothing more to cut, lines run over. */
        out = print(&t, 10, true);
        assert_non_null(strstr(out, "PID SIZE WHERE POLICY\n1   4.0… /sys… /etc/…\n"));
        free(out);
        table_done(&t);
        table_done(&t); /* done twice is harmless */
}

static void test_table_min_width(void **state) {
        static const TableColumn c[] = { { "ON", false, 3 }, { "N", true, 6 } };
        Table t;
        char *out;

        table_init(&t, c, ELEMENTSOF(c));
        assert_int_equal(table_add(&t, "no"), 0);
        assert_int_equal(table_add(&t, "5"), 0);
        assert_int_equal(table_add_row(&t, "yes", "12345", NULL), 0);
        out = print(&t, 0, true);
        assert_string_equal(out, "ON       N\nno       5\nyes  12345\n");
        free(out);
        /* Too narrow: the blanks of min_width go first, the widest first;
         * no cell is cut while blanks are left. */
        out = print(&t, 9, true);
        assert_string_equal(out, "ON      N\nno      5\nyes 12345\n");
        free(out);
        if (utf8_locale()) {
                out = print(&t, 8, true);
                assert_string_equal(out, "ON     N\nno     5\nyes 123…\n");
                free(out);
        }
        table_done(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_text_width),
                cmocka_unit_test(test_text_ellipsize),
                cmocka_unit_test(test_table_print),
                cmocka_unit_test(test_table_min_width),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
