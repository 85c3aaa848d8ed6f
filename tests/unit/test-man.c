/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ksmtuned2.conf(5) documents every key of the configuration table, in the
 * section of the page that belongs to the key's section. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "conf.h"
#include "fileio.h"
#include "log.h"
#include "util.h"

static void test_conf_page_has_every_key(void **state) {
        const char *src = getenv("SOURCE_ROOT");
        _cleanup_free_ char *text = NULL;
        char path[1024];

        assert_non_null(src);
        snprintf(path, sizeof path, "%s/man/ksmtuned2.conf.5", src);
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 1 << 20, &text, NULL), 0);

        for (size_t i = 0; i < config_table_size; i++) {
                const ConfItem *it = &config_table[i];
                char heading[128], want_bi[128], want_b[128];
                const char *sec, *next, *hit;

                /* The page has one ".SH "[Section] SECTION"" per section. */
                snprintf(heading, sizeof heading, "\n.SH \"[%s] SECTION\"\n", it->section);
                sec = strstr(text, heading);
                if (!sec)
                        fail_msg("%s lacks the heading for [%s]", path, it->section);
                next = strstr(sec + 1, "\n.SH ");
                /* Documented as a tagged paragraph: ".TP\n.BI Key= type" (or .B Key=). */
                snprintf(want_bi, sizeof want_bi, "\n.TP\n.BI %s= ", it->key);
                snprintf(want_b, sizeof want_b, "\n.TP\n.B %s=\n", it->key);
                hit = strstr(sec, want_bi);
                if (!hit || (next && hit > next))
                        hit = strstr(sec, want_b);
                if (!hit || (next && hit > next))
                        fail_msg("%s does not document %s= in its [%s] section", path, it->key, it->section);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_conf_page_has_every_key),
        };
        log_set_max_level(LOG_ERR);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
