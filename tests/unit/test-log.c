/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The journal fields of a structured log entry, as the journal gets them;
 * standard error gets the message alone. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "log.h"
#include "util.h"

static void test_fields_all(void **state) {
        char f[LOG_FIELDS_MAX][LOG_FIELD_SIZE];
        const LogFields all = {
                .message_id = "758e04b8c3ce49ab8dee28513ebcb33b",
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
                "MESSAGE_ID=758e04b8c3ce49ab8dee28513ebcb33b",
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
                                 LOG_FIELDS(.message_id = "609d246e889e4e79b1295dc37a5af02c", .pid = 812,
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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fields_all),
                cmocka_unit_test(test_fields_some),
                cmocka_unit_test(test_stderr_drops_fields),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
