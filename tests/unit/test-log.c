/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The journal fields of a structured log entry, as the journal gets them;
 * standard error gets the message alone; and every MESSAGE_ID of
 * log-messages.h is a distinct 128-bit id that ksmtuned2(8) lists. */
#include <ctype.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fileio.h"
#include "log-messages.h"
#include "log.h"
#include "util.h"

static void test_fields_all(void **state) {
        char f[LOG_FIELDS_MAX][LOG_FIELD_SIZE];
        const LogFields all = {
                .message_id = KSMTUNED2_MESSAGE_PROCESS_EXCLUDED,
                .pid = 812,
                .unit = "machine-qemu\\x2d3\\x2dweb01.scope",
                .vm = "web01",
                .decision = "exclude",
                .action = "exclude",
                .method = "inject",
                .outcome = "done",
                .verdict = "merge",
                .policy = "50-vms.policy:3",
                .knob = "pages_to_scan",
                .value = "100",
        };
        static const char *const want[] = {
                "MESSAGE_ID=" KSMTUNED2_MESSAGE_PROCESS_EXCLUDED,
                "KSMTUNED2_PID=812",
                "OBJECT_PID=812",
                "KSMTUNED2_UNIT=machine-qemu\\x2d3\\x2dweb01.scope",
                "KSMTUNED2_VM=web01",
                "KSMTUNED2_DECISION=exclude",
                "KSMTUNED2_ACTION=exclude",
                "KSMTUNED2_METHOD=inject",
                "KSMTUNED2_OUTCOME=done",
                "KSMTUNED2_VERDICT=merge",
                "KSMTUNED2_POLICY=50-vms.policy:3",
                "KSMTUNED2_KNOB=pages_to_scan",
                "KSMTUNED2_VALUE=100",
        };

        assert_int_equal(log_fields_format(&all, f), ELEMENTSOF(want));
        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                assert_string_equal(f[i], want[i]);
}

static void test_fields_some(void **state) {
        char f[LOG_FIELDS_MAX][LOG_FIELD_SIZE], long_vm[1000];

        /* nothing set, nothing sent; pid 0 is no process */
        assert_int_equal(log_fields_format(&(LogFields) {}, f), 0);
        assert_int_equal(log_fields_format(&(LogFields) { .pid = 0, .action = "readmit" }, f), 1);
        assert_string_equal(f[0], "KSMTUNED2_ACTION=readmit");

        /* a value is kept as it is, a newline too; a long one is cut */
        memset(long_vm, 'v', sizeof long_vm - 1);
        long_vm[sizeof long_vm - 1] = 0;
        assert_int_equal(log_fields_format(&(LogFields) { .vm = "two\nlines", .unit = "a=b.service" }, f), 2);
        assert_string_equal(f[0], "KSMTUNED2_UNIT=a=b.service");
        assert_string_equal(f[1], "KSMTUNED2_VM=two\nlines");
        assert_int_equal(log_fields_format(&(LogFields) { .vm = long_vm }, f), 1);
        assert_int_equal(strlen(f[0]), LOG_FIELD_SIZE - 1);
        assert_true(startswith(f[0], "KSMTUNED2_VM=vvv"));
}

/* On standard error the fields are dropped: the line is the message. */
static void test_stderr_drops_fields(void **state) {
        char path[] = "/tmp/test-log.XXXXXX", out[256] = "";
        int fd = mkstemp(path), saved = dup(STDERR_FILENO);

        assert_true(fd >= 0 && saved >= 0);
        log_set_target(LOG_TARGET_STDERR);
        fflush(stderr);
        assert_true(dup2(fd, STDERR_FILENO) >= 0);
        errno = EBADF;
        int r = log_struct_errno(LOG_NOTICE, -EPERM,
                                 LOG_FIELDS(.message_id = KSMTUNED2_MESSAGE_PROCESS_NOT_CHANGED, .pid = 812,
                                            .action = "enable", .outcome = "failed"),
                                 "pid %d: %m", 812);
        /* below the level: not printed, the same return */
        int q = log_struct_errno(LOG_DEBUG, EPERM, LOG_FIELDS(.action = "enable"), "not shown");
        fflush(stderr);
        assert_true(dup2(saved, STDERR_FILENO) >= 0);
        close(saved);
        assert_int_equal(r, -EPERM);
        assert_int_equal(q, -EPERM);
        assert_int_equal(errno, EBADF);

        ssize_t n = pread(fd, out, sizeof out - 1, 0);
        close(fd);
        unlink(path);
        assert_true(n > 0);
        out[n] = 0;
        char want[128];
        snprintf(want, sizeof want, "%s: pid 812: %s\n", program_invocation_short_name, strerror(EPERM));
        assert_string_equal(out, want);
}

static bool is_id128(const char *s) {
        for (size_t i = 0; i < 32; i++)
                if (!isxdigit((unsigned char) s[i]) || isupper((unsigned char) s[i]))
                        return false;
        return s[32] == '"';
}

static void test_message_ids(void **state) {
        _cleanup_free_ char *header = NULL, *page = NULL;
        const char *src = getenv("SOURCE_ROOT");
        char path[1024], seen[32][33];
        size_t n = 0;

        assert_non_null(src);
        snprintf(path, sizeof path, "%s/include/shared/log-messages.h", src);
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 1 << 20, &header, NULL), 0);
        snprintf(path, sizeof path, "%s/man/ksmtuned2.8", src);
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 1 << 20, &page, NULL), 0);

        for (const char *l = header; (l = strstr(l, "\n#define KSMTUNED2_MESSAGE_")); l++) {
                const char *q = strchr(l + 1, '"');
                assert_non_null(q);
                if (!is_id128(q + 1))
                        fail_msg("not a 128-bit id in lower-case hex: %.60s", l + 1);
                assert_true(n < ELEMENTSOF(seen));
                snprintf(seen[n], sizeof seen[n], "%.32s", q + 1);
                for (size_t i = 0; i < n; i++)
                        if (streq(seen[i], seen[n]))
                                fail_msg("%s is used twice", seen[n]);
                if (!strstr(page, seen[n]))
                        fail_msg("ksmtuned2(8) does not list MESSAGE_ID=%s", seen[n]);
                n++;
        }
        assert_true(n >= 10);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fields_all),
                cmocka_unit_test(test_fields_some),
                cmocka_unit_test(test_stderr_drops_fields),
                cmocka_unit_test(test_message_ids),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
