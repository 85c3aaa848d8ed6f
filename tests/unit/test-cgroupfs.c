/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "cgroupfs.h"
#include "util.h"

static void check_path(const char *text, const char *want) {
        char *p = NULL;
        assert_int_equal(cgroup_parse_proc_path(text, &p), 0);
        assert_string_equal(p, want);
        free(p);
}

static void test_proc_path(void **state) {
        char *p = NULL;
        /* unified */
        check_path("0::/system.slice/nginx.service\n", "system.slice/nginx.service");
        check_path("0::/\n", "");
        /* hybrid: v1 controllers beside the v2 line */
        check_path("12:cpuset:/\n11:memory:/system.slice/a.service\n1:name=systemd:/system.slice/a.service\n"
                   "0::/system.slice/a.service\n",
                   "system.slice/a.service");
        /* legacy: 0:: says root, name=systemd knows better */
        check_path("3:memory:/x\n1:name=systemd:/user.slice/user-0.slice/session-2.scope\n0::/\n",
                   "user.slice/user-0.slice/session-2.scope");
        /* a removed cgroup */
        check_path("0::/test.slice/gone (deleted)\n", "test.slice/gone");
        /* hostile: spaces, colons and brackets in names */
        check_path("0::/a b/c:d/[e]\n", "a b/c:d/[e]");
        assert_int_equal(cgroup_parse_proc_path("", &p), -ENODATA);
        assert_int_equal(cgroup_parse_proc_path("5:memory:/x\n", &p), -ENODATA);
        assert_int_equal(cgroup_parse_proc_path("0::relative\n", &p), -EINVAL);
}

static void check_unescape(const char *in, const char *want) {
        char *p = NULL;
        assert_int_equal(cgroup_unescape(in, &p), 0);
        assert_string_equal(p, want);
        free(p);
}

static void test_unescape(void **state) {
        check_unescape("machine-qemu\\x2d3\\x2dweb01.scope", "machine-qemu-3-web01.scope");
        check_unescape("a\\x20b\\x5c\\x5", "a b\\\\x5"); /* truncated escape kept */
        check_unescape("\\x00\\xzz\\x4A", "\\x00\\xzzJ"); /* NUL and bad hex kept as written */
        check_unescape("", "");
        check_unescape("\\", "\\");
}

static void check_unit(const char *path, const char *want) {
        char *u = (char *) 1;
        assert_int_equal(cgroup_path_get_unit(path, &u), 0);
        if (want)
                assert_string_equal(u, want);
        else
                assert_null(u);
        free(u);
}

static void test_unit(void **state) {
        check_unit("system.slice/nginx.service", "nginx.service");
        check_unit("system.slice/postgresql@15-main.service/x", "postgresql@15-main.service");
        check_unit("user.slice/user-1000.slice/user@1000.service/app.slice/foo.scope", "user@1000.service");
        check_unit("machine.slice/machine-qemu\\x2d3\\x2dweb01.scope/libvirt/vcpu0", "machine-qemu\\x2d3\\x2dweb01.scope");
        check_unit("machine.slice", NULL);
        check_unit("", NULL);
        check_unit("docker/0123abcd", NULL);
        check_unit(".service", NULL); /* a bare suffix is no unit name */
}

static void check_machine(const char *path, const char *want) {
        char *m = (char *) 1;
        assert_int_equal(cgroup_path_get_machine(path, &m), 0);
        if (want)
                assert_string_equal(m, want);
        else
                assert_null(m);
        free(m);
}

static void test_machine(void **state) {
        check_machine("machine.slice/machine-qemu\\x2d3\\x2dweb01.scope", "web01");
        check_machine("machine.slice/machine-qemu\\x2d3\\x2dweb01.scope/libvirt/emulator", "web01");
        check_machine("machine.slice/machine-qemu\\x2d12\\x2dmy\\x2dvm\\x2d2.scope/libvirt/vcpu1", "my-vm-2");
        check_machine("machine.slice/machine-qemu\\x2dold.scope", "old");         /* libvirt < 1.3 */
        check_machine("machine.slice/machine-qemu\\x2d42.scope", "42");           /* a VM named 42 */
        check_machine("machine.slice/machine-lxc\\x2d812\\x2dct1.scope", "ct1");
        check_machine("machine.slice/machine-debian12.scope/payload", "debian12"); /* systemd-nspawn */
        check_machine("machine/qemu-3-web01.libvirt-qemu/emulator", "web01");    /* libvirt without systemd */
        check_machine("system.slice/libvirtd.service", NULL);
        check_machine("machine.slice", NULL);
        check_machine("machine-.scope", NULL);
        check_machine("", NULL);
        /* found by fuzz-cgroup: an escaped '/' or control character does
         * not make a machine name */
        check_machine("machine.slice/machine-qemu\\x2d3\\x2da\\x2fb.scope", NULL);
        check_machine("machine.slice/machine-evil\\x0a.scope", NULL);
        check_machine("machine.slice/machine-a\\x2fb.scope/machine-ok.scope", NULL);
        check_machine("machine.slice/machine\\x2dprod.slice/machine-qemu\\x2d1\\x2dweb.scope/libvirt/emulator",
                      "web");                                                  /* a libvirt <partition> */
        check_machine("machine/prod.partition/qemu-3-web01.libvirt-qemu/emulator", "web01");
}

/* Where the system manager did not choose the name, it names no VM of the
 * host's: a user's own scope, a delegated subtree, a scope not under
 * machine.slice. */
static void test_machine_hostile(void **state) {
        check_machine("user.slice/user-1000.slice/user@1000.service/app.slice/machine-qemu\\x2d1\\x2dweb.scope", NULL);
        check_machine("user.slice/user-1000.slice/machine-qemu\\x2d1\\x2dweb.scope", NULL);
        check_machine("user.slice/machine.slice/machine-qemu\\x2d1\\x2dweb.scope", NULL);
        check_machine("machine-qemu\\x2d1\\x2dweb.scope", NULL);
        check_machine("system.slice/machine-qemu\\x2d1\\x2dweb.scope", NULL);
        check_machine("system.slice/docker.service/machine.slice/machine-qemu\\x2d1\\x2dweb.scope", NULL);
        /* below the VM's own scope: its payload's business */
        check_machine("machine.slice/machine-debian12.scope/payload/machine-qemu\\x2d1\\x2dweb.scope", "debian12");
        check_machine("machine.slice/a.service/machine-qemu\\x2d1\\x2dweb.scope", NULL);
        check_machine("user.slice/machine/qemu-3-web01.libvirt-qemu", NULL);
        check_machine("machine/x/qemu-3-web01.libvirt-qemu", NULL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_proc_path),
                cmocka_unit_test(test_unescape),
                cmocka_unit_test(test_unit),
                cmocka_unit_test(test_machine),
                cmocka_unit_test(test_machine_hostile),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
