/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ksmtuned2.conf(5) and ksmtuned2.policy(5) document every key of the
 * configuration and policy tables, in the section of the page that belongs
 * to the key's section, and the shipped conf/ksmtuned2.conf and
 * conf/template.policy show every key, commented out, in its section: a key
 * added to a table and forgotten in either fails here. */
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
#include "policy-load.h"
#include "util.h"

static char *read_source(const char *rel) {
        const char *src = getenv("SOURCE_ROOT");
        char *text = NULL;
        char path[1024];

        assert_non_null(src);
        snprintf(path, sizeof path, "%s/%s", src, rel);
        if (read_full_file_at(AT_FDCWD, path, 1 << 20, &text, NULL) < 0)
                fail_msg("cannot read %s", path);
        return text;
}

static void check_page(const char *rel, const ConfItem *table, size_t n) {
        _cleanup_free_ char *text = read_source(rel);

        for (size_t i = 0; i < n; i++) {
                const ConfItem *it = &table[i];
                char heading[128], want_bi[128], want_b[128];
                const char *sec, *next, *hit;

                /* The page has one ".SH "[Section] SECTION"" per section. */
                snprintf(heading, sizeof heading, "\n.SH \"[%s] SECTION\"\n", it->section);
                sec = strstr(text, heading);
                if (!sec)
                        fail_msg("%s lacks the heading for [%s]", rel, it->section);
                next = strstr(sec + 1, "\n.SH ");
                /* Documented as a tagged paragraph: ".TP\n.BI Key= type" (or .B Key=). */
                snprintf(want_bi, sizeof want_bi, "\n.TP\n.BI %s= ", it->key);
                snprintf(want_b, sizeof want_b, "\n.TP\n.B %s=\n", it->key);
                hit = strstr(sec, want_bi);
                if (!hit || (next && hit > next))
                        hit = strstr(sec, want_b);
                if (!hit || (next && hit > next))
                        fail_msg("%s does not document %s= in its [%s] section", rel, it->key, it->section);
        }
}

/* The shipped example files: "[Section]" lines, each key as "#Key=..." at
 * the start of a line between its section's heading and the next one. */
static void check_example(const char *rel, const ConfItem *table, size_t n) {
        _cleanup_free_ char *text = read_source(rel);

        for (size_t i = 0; i < n; i++) {
                const ConfItem *it = &table[i];
                char heading[128], want[128];
                const char *sec, *next, *hit;

                snprintf(heading, sizeof heading, "\n[%s]\n", it->section);
                sec = strstr(text, heading);
                if (!sec)
                        fail_msg("%s lacks the section [%s]", rel, it->section);
                next = strstr(sec + 1, "\n[");
                snprintf(want, sizeof want, "\n#%s=", it->key);
                hit = strstr(sec, want);
                if (!hit || (next && hit > next))
                        fail_msg("%s does not show #%s= in its [%s] section", rel, it->key, it->section);
        }
}

static void test_conf_page_has_every_key(void **state) {
        check_page("man/ksmtuned2.conf.5", config_table, config_table_size);
}

static void test_policy_page_has_every_key(void **state) {
        check_page("man/ksmtuned2.policy.5", policy_table, policy_table_size);
}

static void test_conf_example_has_every_key(void **state) {
        check_example("conf/ksmtuned2.conf", config_table, config_table_size);
}

static void test_policy_template_has_every_key(void **state) {
        check_example("conf/template.policy", policy_table, policy_table_size);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_conf_page_has_every_key),
                cmocka_unit_test(test_policy_page_has_every_key),
                cmocka_unit_test(test_conf_example_has_every_key),
                cmocka_unit_test(test_policy_template_has_every_key),
        };
        log_set_max_level(LOG_ERR);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
