/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "classify.h"
#include "opt-out.h"
#include "fake-tree.h"
#include "fileio.h"
#include "policy-load.h"
#include "util.h"

static FakeTree tree;

static int setup(void **state) {
        fake_tree_init(&tree);
        return 0;
}

static int teardown(void **state) {
        fake_tree_done(&tree);
        return 0;
}

static char *path_of(const char *rel) {
        char *p = NULL;
        assert_true(asprintf(&p, "%s/%s", tree.path, rel) > 0);
        return p;
}

static bool diag_has(const ConfDiag *d, const char *needle) {
        for (size_t i = 0; i < d->n; i++)
                if (strstr(d->lines[i], needle))
                        return true;
        return false;
}

static void dump(const ConfDiag *d) {
        for (size_t i = 0; i < d->n; i++)
                print_message("diag: %s\n", d->lines[i]);
}

static void test_parse_good(void **state) {
        _cleanup_free_ char *p = path_of("good/50-vms.policy");
        Policy pol;
        ConfDiag d = {};

        fake_write(&tree, "good/50-vms.policy",
                   "# VMs\n"
                   "\n"
                   "[Match]\n"
                   "Cgroup=machine.slice/machine-qemu*.scope\n"
                   "Comm=qemu-system-* qemu-kvm\n"
                   "Comm=kvm\n"
                   "User=root 107\n"
                   "[Merge]\n"
                   "Mode=always\n"
                   "Method=inject\n"
                   "MinAnonMiB=64\n"
                   "MinAge=30s\n");
        assert_int_equal(policy_load_file(p, &pol, &d), 0);
        dump(&d);
        assert_int_equal(d.n, 0);
        assert_int_equal(pol.line, 3);
        assert_string_equal(pol.name, "50-vms.policy");
        assert_int_equal(strv_length(pol.cgroup.globs), 1);
        assert_int_equal(strv_length(pol.comm.globs), 3); /* repeated key appends */
        assert_string_equal(pol.comm.globs[2], "kvm");
        assert_int_equal(pol.users.n, 2);
        assert_int_equal(pol.users.uids[0], 0);
        assert_int_equal(pol.users.uids[1], 107);
        assert_int_equal(pol.mode, POLICY_MODE_ALWAYS);
        assert_int_equal(pol.method, MERGE_METHOD_INJECT);
        assert_int_equal(pol.min_anon_mib, 64);
        assert_int_equal(pol.min_age_usec, 30 * USEC_PER_SEC);
        assert_false(pol.match_invalid);
        policy_done(&pol);

        /* MinAnonMiB= takes sizes with units too; a bare number stays MiB */
        const struct {
                const char *value;
                uint64_t mib;   /* UINT64_MAX: refused */
                const char *reason;
        } anon[] = {
                { "2G", 2048, NULL },
                { "1G 512M", 1536, NULL },
                { "64", 64, NULL },
                { "1048576", 1 << 20, NULL },
                { "512K", UINT64_MAX, "not a whole number of MiB" },
                { "2T", UINT64_MAX, "out of range 0..1048576 MiB" },
                { "64MiB", UINT64_MAX, "not a size" },
        };
        for (size_t i = 0; i < ELEMENTSOF(anon); i++) {
                char text[128], want[1200];
                snprintf(text, sizeof text, "[Match]\nComm=x\n[Merge]\nMinAnonMiB=%s\n", anon[i].value);
                fake_write(&tree, "good/50-vms.policy", text);
                if (anon[i].mib != UINT64_MAX) {
                        assert_int_equal(policy_load_file(p, &pol, &d), 0);
                        assert_int_equal(d.n, 0);
                        assert_int_equal(pol.min_anon_mib, anon[i].mib);
                        policy_done(&pol);
                } else {
                        /* a refused value rejects the file: no policy with a default instead */
                        assert_int_equal(policy_load_file(p, &pol, &d), -EBADMSG);
                        snprintf(want, sizeof want, "%s:4: MinAnonMiB: %s", p, anon[i].reason);
                        if (!diag_has(&d, want) || !diag_has(&d, "), file rejected"))
                                fail_msg("MinAnonMiB=%s: no \"%s ... file rejected\"", anon[i].value, want);
                }
                conf_diag_free(&d);
        }
}

/* The example of DESIGN.md §5, inline comments and all. */
static void test_parse_design_example(void **state) {
        _cleanup_free_ char *p = path_of("good/50-design.policy");
        Policy pol;
        ConfDiag d = {};

        fake_write(&tree, "good/50-design.policy",
                   "# /etc/ksmtuned2/policy.d/50-vms.policy\n"
                   "[Match]\n"
                   "Cgroup=machine.slice/machine-qemu*.scope\n"
                   "[Merge]\n"
                   "Mode=auto            ; always | auto | never\n"
                   "Method=any           ; any | madvise | inject | none (tuning only)\n"
                   "MinAnonMiB=64\n");
        assert_int_equal(policy_load_file(p, &pol, &d), 0);
        dump(&d);
        assert_int_equal(d.n, 0);
        assert_int_equal(pol.line, 2);
        assert_int_equal(pol.mode, POLICY_MODE_AUTO);
        assert_int_equal(pol.method, MERGE_METHOD_ANY);
        assert_int_equal(pol.min_anon_mib, 64);
        policy_done(&pol);
}

static void test_parse_bad_keys(void **state) {
        _cleanup_free_ char *p = path_of("bad/10-x.policy");
        Policy pol;
        ConfDiag d = {};

        fake_write(&tree, "bad/10-x.policy",
                   "[Match]\n"
                   "Comm=postgres\n"
                   "[Merge]\n"
                   "Mode=sometimes\n"
                   "Method=telepathy\n"
                   "MinAnonMiB=-5\n"
                   "MinAge=soon\n");
        /* A bad value rejects the file, each named with file and line: a
         * default in its place would turn a mistyped Mode=never into auto. */
        assert_int_equal(policy_load_file(p, &pol, &d), -EBADMSG);
        dump(&d);
        char want[1024];
        snprintf(want, sizeof want, "%s:4: Mode: expected one of: always auto never (\"sometimes\"), file rejected", p);
        assert_true(diag_has(&d, want));
        snprintf(want, sizeof want, "%s:5: Method: expected one of: any madvise process_ksm inject none", p);
        assert_true(diag_has(&d, want));
        snprintf(want, sizeof want, "%s:6: MinAnonMiB:", p);
        assert_true(diag_has(&d, want));
        snprintf(want, sizeof want, "%s:7: MinAge: not a time span", p);
        assert_true(diag_has(&d, want));
        assert_int_equal(d.n, 4);
        conf_diag_free(&d);

        fake_write(&tree, "bad/12-typo.policy", "[Match]\nComm=ssh-agent\n[Merge]\nMode=nevr\n");
        _cleanup_free_ char *p12 = path_of("bad/12-typo.policy");
        assert_int_equal(policy_load_file(p12, &pol, &d), -EBADMSG);
        snprintf(want, sizeof want, "%s:4: Mode: expected one of: always auto never (\"nevr\"), file rejected", p12);
        assert_true(diag_has(&d, want));
        conf_diag_free(&d);

        /* Sections and keys are case-sensitive. What the daemon does not
         * understand must not act: an ignored "comm=" would widen the match,
         * an ignored "[merge]" would make Mode=never the default auto. */
        fake_write(&tree, "bad/15-case.policy",
                   "[Match]\nComm=postgres\ncomm=mysqld\nColour=blue\nMode=never\n[merge]\nMode=never\n[Extra]\nA=b\n");
        _cleanup_free_ char *p15 = path_of("bad/15-case.policy");
        assert_int_equal(policy_load_file(p15, &pol, &d), 0);
        dump(&d);
        const char *const unknown[] = {
                ":3: comm: unknown key in [Match] (did you mean Comm=?), this policy will match nothing",
                ":4: Colour: unknown key in [Match], this policy will match nothing",
                ":5: Mode: unknown key in [Match] (Mode= belongs in [Merge]), this policy will match nothing",
                ":6: unknown section [merge] (did you mean [Merge]?), this policy will match nothing",
                ":8: unknown section [Extra], this policy will match nothing",
        };
        for (size_t i = 0; i < ELEMENTSOF(unknown); i++) {
                snprintf(want, sizeof want, "%s%s", p15, unknown[i]);
                if (!diag_has(&d, want))
                        fail_msg("no diagnostic \"%s\"", want);
        }
        assert_int_equal(d.n, ELEMENTSOF(unknown));
        assert_true(pol.match_invalid);
        Process pg = { .pid = 5, .comm = "postgres", .euid = 0 };
        assert_false(policy_matches(&pol, &pg));
        policy_done(&pol);
        conf_diag_free(&d);

        /* "Key: value", which inih accepts, is refused with the file */
        fake_write(&tree, "bad/16-colon.policy", "[Match]\nComm: postgres\n[Merge]\nMode=never\n");
        _cleanup_free_ char *p16 = path_of("bad/16-colon.policy");
        assert_int_equal(policy_load_file(p16, &pol, &d), -EBADMSG);
        snprintf(want, sizeof want, "%s:2: \"Comm: postgres\": keys take '=', not ':'", p16);
        assert_true(diag_has(&d, want));
        snprintf(want, sizeof want, "%s:2: syntax error, file rejected", p16);
        assert_string_equal(d.lines[d.n - 1], want);
        conf_diag_free(&d);

        /* a bad [Match] value must not widen the match */
        fake_write(&tree, "bad/20-user.policy", "[Match]\nUser=no-such-user-ksmtuned2\n[Merge]\nMode=always\n");
        _cleanup_free_ char *p2 = path_of("bad/20-user.policy");
        assert_int_equal(policy_load_file(p2, &pol, &d), 0);
        assert_true(diag_has(&d, "20-user.policy:2: User: no such user"));
        assert_true(pol.match_invalid);
        Process proc = { .pid = 5, .comm = "x", .euid = 0 };
        assert_false(policy_matches(&pol, &proc));
        policy_done(&pol);
        conf_diag_free(&d);

        /* as root, a file others may write is rejected */
        if (geteuid() == 0) {
                fake_write(&tree, "bad/25-open.policy", "[Match]\nComm=x\n[Merge]\nMode=always\n");
                _cleanup_free_ char *p4 = path_of("bad/25-open.policy");
                assert_int_equal(chmod(p4, 0666), 0);
                assert_int_equal(policy_load_file(p4, &pol, &d), -EPERM);
                assert_true(diag_has(&d, "25-open.policy:0: writable by group or others (mode 0666), rejected"));
                assert_int_equal(chmod(p4, 0644), 0);
                assert_int_equal(chown(p4, 65534, 0), 0);
                assert_int_equal(policy_load_file(p4, &pol, &d), -EPERM);
                assert_true(diag_has(&d, "25-open.policy:0: owned by uid 65534, not root, rejected"));
                conf_diag_free(&d);
        }

        /* a syntax error rejects the whole file */
        fake_write(&tree, "bad/30-broken.policy", "[Match]\nComm=x\n[Merge\nMode=always\n");
        _cleanup_free_ char *p3 = path_of("bad/30-broken.policy");
        assert_int_equal(policy_load_file(p3, &pol, &d), -EBADMSG);
        char want3[1024];
        snprintf(want3, sizeof want3, "%s:3: syntax error, file rejected", p3);
        assert_true(diag_has(&d, want3));
        conf_diag_free(&d);
}

static void test_set_masked_ordered(void **state) {
        PolicySet s = {};
        ConfDiag d = {};
        _cleanup_free_ char *etc = path_of("set/etc"), *run = path_of("set/run"), *lib = path_of("set/lib");
        char *dirs[] = { etc, run, lib, NULL };

        fake_write(&tree, "set/lib/50-vms.policy", "[Match]\nComm=qemu\n[Merge]\nMode=auto\n");
        fake_write(&tree, "set/lib/10-secrets.policy", "[Match]\nComm=ssh-agent\n[Merge]\nMode=never\n");
        fake_write(&tree, "set/lib/60-gone.policy", "[Match]\nComm=gone\n");
        fake_write(&tree, "set/lib/README", "not a policy");
        fake_write(&tree, "set/run/50-vms.policy", "[Match]\nComm=qemu\n[Merge]\nMode=never\n");
        fake_write(&tree, "set/etc/60-gone.policy", ""); /* empty: masks only */
        fake_write(&tree, "set/etc/05-first.policy", "[Match]\nComm=first\n");
        char dn[1024];
        snprintf(dn, sizeof dn, "%s/set/run/70-devnull.policy", tree.path);
        fake_write(&tree, "set/lib/70-devnull.policy", "[Match]\n");
        assert_int_equal(symlink("/dev/null", dn), 0);

        assert_int_equal(policy_set_load(dirs, NULL, &s, &d), 0);
        dump(&d);
        assert_int_equal(d.n, 0);
        assert_int_equal(s.n, 3);
        assert_string_equal(s.policies[0].name, "05-first.policy");
        assert_string_equal(s.policies[1].name, "10-secrets.policy");
        assert_string_equal(s.policies[2].name, "50-vms.policy");
        /* /run masks /usr/lib */
        char want[1024];
        snprintf(want, sizeof want, "%s/50-vms.policy", run);
        assert_string_equal(s.policies[2].path, want);
        assert_int_equal(s.policies[2].mode, POLICY_MODE_NEVER);
        /* 50-vms and 60-gone and 70-devnull in lib hidden, 60-gone and 70-devnull masking only */
        assert_int_equal(s.n_masked, 5);

        /* reload with a broken file keeps its last good version */
        fake_write(&tree, "set/run/50-vms.policy", "[Match\nComm=qemu\n");
        PolicySet s2 = {};
        assert_int_equal(policy_set_load(dirs, &s, &s2, &d), 0);
        dump(&d);
        assert_true(diag_has(&d, "syntax error, file rejected"));
        assert_true(diag_has(&d, "keeping the previous version"));
        assert_int_equal(s2.n, 3);
        assert_int_equal(s2.policies[2].mode, POLICY_MODE_NEVER);
        assert_int_equal(s2.n_rejected, 0);
        conf_diag_free(&d);

        assert_int_equal(s2.n_kept, 1);
        conf_diag_free(&d);

        /* without a previous set, the file it overrode stands in */
        PolicySet s3 = {};
        assert_int_equal(policy_set_load(dirs, NULL, &s3, &d), 0);
        assert_int_equal(s3.n, 3);
        assert_int_equal(s3.n_rejected, 1);
        snprintf(want, sizeof want, "%s/50-vms.policy", lib);
        assert_string_equal(s3.policies[2].path, want);
        assert_int_equal(s3.policies[2].mode, POLICY_MODE_AUTO);
        conf_diag_free(&d);

        /* missing directories are fine; a file where a directory should be is not */
        char *none[] = { "/nonexistent/ksmtuned2", "/dev/null", NULL };
        PolicySet s4 = {};
        assert_int_equal(policy_set_load(none, NULL, &s4, &d), 0);
        assert_int_equal(s4.n, 0);
        assert_int_equal(d.n, 1);
        assert_true(diag_has(&d, "/dev/null:0: cannot open directory: Not a directory"));
        conf_diag_free(&d);

        policy_set_done(&s);
        policy_set_done(&s2);
        policy_set_done(&s3);
        policy_set_done(&s4);
}

/* Who may write a policy is checked before anything in it counts, masking
 * included, and without blocking: a masking file that is not root's, a
 * FIFO, a symlink to /dev/null made by a user, and a directory (or one
 * above it) others may write, are each refused with file and reason, and
 * the policy they would mask stays in force. As root only: that is when
 * the daemon checks. */
static void test_trust(void **state) {
        if (geteuid() != 0)
                skip();
        _cleanup_free_ char *etc = path_of("trust/etc"), *lib = path_of("trust/lib");
        char *dirs[] = { etc, lib, NULL };
        PolicySet s = {};
        ConfDiag d = {};
        char want[1200];

        fake_write(&tree, "trust/lib/10-secrets.policy", "[Match]\nComm=ssh-agent\n[Merge]\nMode=never\n");
        fake_write(&tree, "trust/lib/20-db.policy", "[Match]\nComm=postgres\n[Merge]\nMode=never\n");
        fake_write(&tree, "trust/lib/30-x.policy", "[Match]\nComm=x\n[Merge]\nMode=never\n");
        fake_write(&tree, "trust/lib/40-y.policy", "[Match]\nComm=y\n[Merge]\nMode=never\n");
        /* An empty file of a user's masks nothing. */
        fake_write(&tree, "trust/etc/10-secrets.policy", "");
        _cleanup_free_ char *mask = path_of("trust/etc/10-secrets.policy");
        assert_int_equal(chown(mask, 65534, 65534), 0);
        /* An empty file others may write masks nothing either. */
        fake_write(&tree, "trust/etc/20-db.policy", "");
        _cleanup_free_ char *open_mask = path_of("trust/etc/20-db.policy");
        assert_int_equal(chmod(open_mask, 0666), 0);
        /* A FIFO is refused at once, not opened for reading (which waits for a writer). */
        _cleanup_free_ char *fifo = path_of("trust/etc/30-x.policy");
        assert_int_equal(mkfifo(fifo, 0644), 0);
        /* A user's symlink to /dev/null masks nothing. */
        _cleanup_free_ char *link = path_of("trust/etc/40-y.policy");
        assert_int_equal(symlink("/dev/null", link), 0);
        assert_int_equal(lchown(link, 65534, 65534), 0);

        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(policy_set_load(dirs, NULL, &s, &d), 0);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 < USEC_PER_SEC);
        dump(&d);
        snprintf(want, sizeof want, "%s:0: owned by uid 65534, not root, rejected", mask);
        assert_true(diag_has(&d, want));
        snprintf(want, sizeof want, "%s:0: writable by group or others (mode 0666), rejected", open_mask);
        assert_true(diag_has(&d, want));
        snprintf(want, sizeof want, "%s:0: not a regular file, rejected", fifo);
        assert_true(diag_has(&d, want));
        snprintf(want, sizeof want, "%s:0: a symlink owned by uid 65534, not root, rejected", link);
        assert_true(diag_has(&d, want));
        /* The masking files were refused: each file they would have masked
         * stands in, the secrets policy first. */
        assert_int_equal(s.n_rejected, 4);
        assert_int_equal(s.n, 4);
        snprintf(want, sizeof want, "%s/10-secrets.policy", lib);
        assert_string_equal(s.policies[0].path, want);
        assert_int_equal(s.policies[0].mode, POLICY_MODE_NEVER);
        snprintf(want, sizeof want, "%s:0: %s/10-secrets.policy is in force in its place", mask, lib);
        assert_true(diag_has(&d, want));
        assert_non_null(s.rejected_reason);
        assert_non_null(strstr(s.rejected_reason, "10-secrets.policy:0: owned by uid 65534"));
        policy_set_done(&s);
        conf_diag_free(&d);

        /* A directory others may write: its files neither count nor mask. */
        fake_write(&tree, "trust/open/10-secrets.policy", "");
        _cleanup_free_ char *open_dir = path_of("trust/open");
        assert_int_equal(chmod(open_dir, 01777), 0); /* sticky does not help the directory itself */
        char *dirs2[] = { open_dir, lib, NULL };
        assert_int_equal(policy_set_load(dirs2, NULL, &s, &d), 0);
        dump(&d);
        snprintf(want, sizeof want, "%s:0: directory writable by group or others (mode 1777), its files are ignored",
                 open_dir);
        assert_true(diag_has(&d, want));
        assert_int_equal(s.n, 4);
        assert_string_equal(s.policies[0].name, "10-secrets.policy");
        assert_int_equal(s.n_rejected, 1);
        policy_set_done(&s);
        conf_diag_free(&d);

        /* ... nor one whose parent a user owns (they could rename it away). */
        fake_write(&tree, "trust/user/policy.d/10-secrets.policy", "");
        _cleanup_free_ char *user = path_of("trust/user"), *user_dir = path_of("trust/user/policy.d");
        assert_int_equal(chown(user, 65534, 65534), 0);
        char *dirs3[] = { user_dir, lib, NULL };
        assert_int_equal(policy_set_load(dirs3, NULL, &s, &d), 0);
        dump(&d);
        snprintf(want, sizeof want, "%s:0: %s above it is owned by uid 65534, not root, its files are ignored",
                 user_dir, user);
        assert_true(diag_has(&d, want));
        assert_int_equal(s.n, 4);
        policy_set_done(&s);
        conf_diag_free(&d);

        /* ... nor one reached through a root's symlink into a user's directory. */
        fake_write(&tree, "trust/user/real.d/10-secrets.policy", "");
        _cleanup_free_ char *link_dir = path_of("trust/link.d"), *real = path_of("trust/user/real.d");
        assert_int_equal(symlink(real, link_dir), 0);
        char *dirs4[] = { link_dir, lib, NULL };
        assert_int_equal(policy_set_load(dirs4, NULL, &s, &d), 0);
        dump(&d);
        snprintf(want, sizeof want, "%s:0: %s above it is owned by uid 65534, not root, its files are ignored",
                 link_dir, user);
        assert_true(diag_has(&d, want));
        assert_int_equal(s.n, 4);
        policy_set_done(&s);
        conf_diag_free(&d);
}

static void test_glob(void **state) {
        const char *vm = "machine.slice/machine-qemu\\x2d3\\x2dweb01.scope/libvirt/emulator";
        assert_true(policy_cgroup_glob_match("machine.slice/machine-qemu*.scope", vm));
        assert_true(policy_cgroup_glob_match("/machine.slice/machine-qemu*.scope", vm));
        assert_true(policy_cgroup_glob_match("machine.slice", vm));
        assert_true(policy_cgroup_glob_match("machine.slice/*/libvirt/emulator", vm));
        assert_false(policy_cgroup_glob_match("machine.slice/machine-lxc*.scope", vm));
        assert_false(policy_cgroup_glob_match("machine.sl", vm));          /* whole components only */
        assert_false(policy_cgroup_glob_match("*/emulator", vm));          /* '*' does not cross '/' */
        assert_true(policy_cgroup_glob_match("system.slice/*.service", "system.slice/a b.service"));
        assert_true(policy_cgroup_glob_match("*", "anything/below"));
        assert_false(policy_cgroup_glob_match("system.slice", ""));
}

static PolicySet make_set(void) {
        PolicySet s = {};
        ConfDiag d = {};
        _cleanup_free_ char *dir = path_of("cls");
        char *dirs[] = { dir, NULL };
        fake_write(&tree, "cls/10-secrets.policy", "[Match]\nComm=ssh-agent gpg-agent postgres\n[Merge]\nMode=never\n");
        fake_write(&tree, "cls/50-vms.policy",
                   "[Match]\nCgroup=machine.slice/machine-qemu*.scope\n[Merge]\nMode=auto\nMinAnonMiB=64\n");
        fake_write(&tree, "cls/60-java.policy",
                   "[Match]\nExe=*/bin/java\nUser=1000\n[Merge]\nMode=always\nMethod=inject\nMinAge=30s\n");
        fake_write(&tree, "cls/70-tune.policy", "[Match]\nVM=test-*\nUnit=*.service\n[Merge]\nMethod=none\n");
        assert_int_equal(policy_set_load(dirs, NULL, &s, &d), 0);
        assert_int_equal(d.n, 0);
        assert_int_equal(s.n, 4);
        return s;
}

static void test_classify(void **state) {
        PolicySet s = make_set();
        ClassifyContext ctx = { .now_boottime_usec = 1000 * USEC_PER_SEC, .self_pid = 99 };
        Verdict v;

        Process vm = { .pid = 10, .comm = "qemu-system-x86", .exe = "/usr/bin/qemu-system-x86_64",
                       .cgroup = "machine.slice/machine-qemu\\x2d3\\x2dweb01.scope/libvirt/emulator",
                       .rss_anon_kib = 12 * 1024, .cmdline_read = true /* no opt-out in it */ };
        classify_process(&s, &ctx, &vm, &v);
        assert_int_equal(v.action, VERDICT_WAIT);
        assert_string_equal(v.reason, "anon RSS 12 MiB < MinAnonMiB=64");
        assert_non_null(strstr(v.policy_file, "50-vms.policy"));
        assert_int_equal(v.policy_line, 1);
        vm.rss_anon_kib = 2048 * 1024;
        classify_process(&s, &ctx, &vm, &v);
        assert_int_equal(v.action, VERDICT_MERGE);
        assert_int_equal(v.method, MERGE_METHOD_ANY);
        assert_false(v.always);
        assert_string_equal(v.reason, "Mode=auto, anon RSS 2048 MiB >= MinAnonMiB=64");
        assert_ptr_equal(classify_find_policy(&s, &v), &s.policies[1]);

        /* first match wins: a postgres inside a VM's scope is never merged */
        Process pg = vm;
        strscpy(pg.comm, sizeof pg.comm, "postgres");
        classify_process(&s, &ctx, &pg, &v);
        assert_int_equal(v.action, VERDICT_DONT_MERGE);
        assert_non_null(strstr(v.policy_file, "10-secrets.policy"));

        Process java = { .pid = 11, .comm = "java", .exe = "/opt/jdk/bin/java", .euid = 1000, .cgroup = "",
                         .start_time_usec = 990 * USEC_PER_SEC };
        classify_process(&s, &ctx, &java, &v);
        assert_int_equal(v.action, VERDICT_WAIT);
        assert_string_equal(v.reason, "age 10s < MinAge=30s");
        java.start_time_usec = 100 * USEC_PER_SEC;
        classify_process(&s, &ctx, &java, &v);
        assert_int_equal(v.action, VERDICT_MERGE);
        assert_true(v.always);
        assert_int_equal(v.method, MERGE_METHOD_INJECT);
        java.euid = 1001; /* another user: no match */
        classify_process(&s, &ctx, &java, &v);
        assert_int_equal(v.action, VERDICT_LEAVE_ALONE);
        assert_string_equal(v.reason, "no policy matches");
        assert_string_equal(v.policy_file, "");

        /* missing facts never match a key that needs them */
        Process bare = { .pid = 12, .comm = "x" };
        classify_process(&s, &ctx, &bare, &v);
        assert_int_equal(v.action, VERDICT_LEAVE_ALONE);

        Process t = { .pid = 13, .comm = "svc", .vm_name = "test-7", .unit = "machine-x.service",
                       .cgroup = "system.slice/machine-x.service" };
        classify_process(&s, &ctx, &t, &v);
        assert_int_equal(v.action, VERDICT_MERGE);
        assert_int_equal(v.method, MERGE_METHOD_NONE);
        assert_non_null(strstr(v.reason, "Method=none"));

        /* Cmdline= waits for the off-loop read, and nothing later decides meanwhile */
        PolicySet c = {};
        ConfDiag d = {};
        _cleanup_free_ char *dir = path_of("cmd");
        char *dirs[] = { dir, NULL };
        fake_write(&tree, "cmd/10-app.policy",
                   "[Match]\nComm=java\nCmdline=* -jar */app.jar *\nCmdline=*-jar app.jar*\n[Merge]\nMode=always\n");
        fake_write(&tree, "cmd/20-java.policy", "[Match]\nComm=java\n[Merge]\nMode=never\n");
        assert_int_equal(policy_set_load(dirs, NULL, &c, &d), 0);
        assert_int_equal(d.n, 0);
        assert_int_equal(strv_length(c.policies[0].cmdline.globs), 2); /* spaces stay inside one glob */
        Process j = { .pid = 14, .comm = "java", .cgroup = "" };
        classify_process(&c, &ctx, &j, &v);
        assert_int_equal(v.action, VERDICT_WAIT);
        assert_true(v.needs_cmdline);
        assert_string_equal(v.reason, "waiting for the command line (Cmdline=)");
        j.cmdline_read = true;
        j.cmdline = "/usr/bin/java -Xmx1g -jar /srv/app.jar --port 80";
        classify_process(&c, &ctx, &j, &v);
        assert_int_equal(v.action, VERDICT_MERGE);
        assert_false(v.needs_cmdline);
        j.cmdline = "/usr/bin/java -jar other.jar";
        classify_process(&c, &ctx, &j, &v);
        assert_int_equal(v.action, VERDICT_DONT_MERGE);
        j.cmdline = NULL; /* unreadable: no match, no waiting */
        classify_process(&c, &ctx, &j, &v);
        assert_int_equal(v.action, VERDICT_DONT_MERGE);
        /* a process another key excludes never waits */
        Process other = { .pid = 15, .comm = "python3", .cgroup = "" };
        classify_process(&c, &ctx, &other, &v);
        assert_int_equal(v.action, VERDICT_LEAVE_ALONE);
        policy_set_done(&c);

        /* Unit= names the system manager's units; a user's manager or a
         * delegated subtree only where a glob with a '/' names the place */
        PolicySet u = {};
        _cleanup_free_ char *udir = path_of("unit");
        char *udirs[] = { udir, NULL };
        fake_write(&tree, "unit/10-app.policy",
                   "[Match]\nUnit=user.slice/user-*.slice/user@*.service/app.slice/app-firefox-*.scope\n"
                   "[Merge]\nMode=never\n");
        fake_write(&tree, "unit/20-worker.policy", "[Match]\nUnit=app-worker@*.service\n[Merge]\nMode=auto\n");
        fake_write(&tree, "unit/30-users.policy", "[Match]\nUnit=user.slice/*/user@*.service\n[Merge]\nMode=auto\n");
        fake_write(&tree, "unit/40-sys.policy", "[Match]\nUnit=system.slice\n[Merge]\nMode=always\n");
        assert_int_equal(policy_set_load(udirs, NULL, &u, &d), 0);
        assert_int_equal(d.n, 0);
        Process ff = { .pid = 16, .comm = "firefox",
                       .cgroup = "user.slice/user-1000.slice/user@1000.service/app.slice/app-firefox-1234.scope" };
        classify_process(&u, &ctx, &ff, &v);
        assert_int_equal(v.action, VERDICT_DONT_MERGE);
        assert_non_null(strstr(v.policy_file, "10-app.policy"));
        strscpy(ff.comm, sizeof ff.comm, "vim");
        ff.cgroup = "user.slice/user-1000.slice/user@1000.service/app.slice/vim.scope";
        classify_process(&u, &ctx, &ff, &v);
        assert_int_equal(v.action, VERDICT_MERGE);
        assert_non_null(strstr(v.policy_file, "30-users.policy"));
        ff.cgroup = "system.slice/app-worker@7.service";
        classify_process(&u, &ctx, &ff, &v);
        assert_non_null(strstr(v.policy_file, "20-worker.policy"));
        ff.cgroup = "system.slice/workers.slice/app-worker@7.service/sub";
        classify_process(&u, &ctx, &ff, &v);
        assert_non_null(strstr(v.policy_file, "20-worker.policy"));
        ff.cgroup = "system.slice/cron.service";
        classify_process(&u, &ctx, &ff, &v);
        assert_true(v.always);
        ff.cgroup = "system.slicer/x.service";
        classify_process(&u, &ctx, &ff, &v);
        assert_int_equal(v.action, VERDICT_LEAVE_ALONE);
        /* hostile: names the owner of the cgroup chose */
        static const char *const hostile[] = {
                "user.slice/user-1000.slice/user@1000.service/app.slice/app-worker@x.service",
                "user.slice/user-1000.slice/app-worker@x.service",
                "user.slice/system.slice/app-worker@x.service",
                "app-worker@x.service",
                "system.slice/docker.service/app-worker@x.service",      /* Delegate=yes subtree */
                "system.slice/user@1000.service/app-worker@x.service",
                "machine.slice/machine-qemu\\x2d1\\x2dweb.scope/app-worker@x.service",
                "init.scope/app-worker@x.service",
                "system.slice//app-worker@x.service",
        };
        for (size_t i = 0; i < ELEMENTSOF(hostile); i++) {
                ff.cgroup = (char *) hostile[i];
                classify_process(&u, &ctx, &ff, &v);
                if (v.policy_file[0] && strstr(v.policy_file, "20-worker.policy"))
                        fail_msg("Unit=app-worker@*.service matched %s", hostile[i]);
        }
        policy_set_done(&u);

        /* VM= only believes machine.slice (cgroupfs decodes nothing else,
         * test-cgroupfs); PID 1 is never touched, whatever matches it */
        Process init = { .pid = 1, .comm = "postgres", .cgroup = "init.scope" };
        classify_process(&s, &ctx, &init, &v);
        assert_int_equal(v.action, VERDICT_LEAVE_ALONE);
        assert_string_equal(v.reason, "PID 1: never touched");
        assert_string_equal(v.policy_file, "");

        Process k = { .pid = 2, .comm = "postgres", .kthread = true };
        classify_process(&s, &ctx, &k, &v);
        assert_int_equal(v.action, VERDICT_LEAVE_ALONE);
        assert_string_equal(v.reason, "kernel thread");
        Process self = { .pid = 99, .comm = "postgres" };
        classify_process(&s, &ctx, &self, &v);
        assert_int_equal(v.action, VERDICT_LEAVE_ALONE);
        classify_process(NULL, NULL, &vm, &v);
        assert_int_equal(v.action, VERDICT_LEAVE_ALONE);

        policy_set_done(&s);
}

/* An exclusion by Exe= holds a process whose executable is unknown (the
 * injector that reads it is gone, a zombie leader): it waits instead of
 * falling through to a broader policy that would merge it. */
static void test_classify_exe_unknown(void **state) {
        PolicySet s = {};
        ConfDiag d = {};
        ClassifyContext ctx = { .now_boottime_usec = 1000 * USEC_PER_SEC, .self_pid = 99 };
        _cleanup_free_ char *dir = path_of("exe");
        char *dirs[] = { dir, NULL };
        Verdict v;

        fake_write(&tree, "exe/10-vault.policy", "[Match]\nExe=/usr/bin/vault\n[Merge]\nMode=never\n");
        fake_write(&tree, "exe/20-agent.policy",
                   "[Match]\nExe=/usr/bin/agent\nUser=1000\n[Merge]\nMethod=none\n");
        fake_write(&tree, "exe/30-guests.policy", "[Match]\nExe=/usr/bin/qemu-*\n[Merge]\nMode=always\n");
        fake_write(&tree, "exe/90-all.policy", "[Match]\nCgroup=*\n[Merge]\nMode=always\nMethod=inject\n");
        assert_int_equal(policy_set_load(dirs, NULL, &s, &d), 0);
        assert_int_equal(d.n, 0);
        assert_int_equal(s.n, 4);

        Process p = { .pid = 20, .comm = "vault", .cgroup = "system.slice/vault.service", .cmdline_read = true };
        assert_int_equal(policy_matches(&s.policies[0], &p), -ENOENT);
        classify_process(&s, &ctx, &p, &v);
        assert_int_equal(v.action, VERDICT_WAIT);
        assert_int_equal(v.method, MERGE_METHOD_NONE);
        assert_non_null(verdict_refuses_change(&v)); /* the controller may not touch it either */
        assert_non_null(strstr(v.policy_file, "10-vault.policy"));
        assert_string_equal(v.reason, "executable unknown (unreadable); this policy's Exe= may match, and it says "
                                      "Mode=never: waiting");
        /* known again: the exclusion decides, or the broad policy */
        p.exe = "/usr/bin/vault";
        classify_process(&s, &ctx, &p, &v);
        assert_int_equal(v.action, VERDICT_DONT_MERGE);
        p.exe = "/usr/bin/python3";
        classify_process(&s, &ctx, &p, &v);
        assert_int_equal(v.action, VERDICT_MERGE);
        assert_non_null(strstr(v.policy_file, "90-all.policy"));

        /* Method=none excludes as well, but only where its other keys hold */
        p.exe = NULL;
        s.policies[0].match_invalid = true; /* out of the way */
        p.euid = 1000;
        classify_process(&s, &ctx, &p, &v);
        assert_int_equal(v.action, VERDICT_WAIT);
        assert_non_null(strstr(v.policy_file, "20-agent.policy"));
        assert_non_null(strstr(v.reason, "Method=none"));
        /* an including Exe= policy is simply no match: the next one decides */
        p.euid = 1001;
        assert_int_equal(policy_matches(&s.policies[2], &p), 0);
        classify_process(&s, &ctx, &p, &v);
        assert_int_equal(v.action, VERDICT_MERGE);
        assert_non_null(strstr(v.policy_file, "90-all.policy"));
        policy_set_done(&s);
}

static void test_shipped_policies(void **state) {
        const char *src = getenv("SOURCE_ROOT");
        char dir[1024];
        PolicySet s = {};
        ConfDiag d = {};
        assert_non_null(src);
        snprintf(dir, sizeof dir, "%s/conf/policy.d", src);
        char *dirs[] = { dir, NULL };
        assert_int_equal(policy_set_load(dirs, NULL, &s, &d), 0);
        dump(&d);
        assert_int_equal(d.n, 0);
        assert_true(s.n >= 2);

        ClassifyContext ctx = { .now_boottime_usec = 1000 * USEC_PER_SEC };
        Verdict v;
        Process agent = { .pid = 10, .comm = "ssh-agent", .exe = "/usr/bin/ssh-agent",
                          .cgroup = "user.slice/user-1000.slice/session-1.scope", .rss_anon_kib = 1 << 20 };
        classify_process(&s, &ctx, &agent, &v);
        assert_int_equal(v.action, VERDICT_DONT_MERGE);
        /* by name alone (no Exe= of it was ever needed) and renamed (by exe alone):
         * one [Match] holding both keys would need both to hold */
        Process db = { .pid = 13, .comm = "redis-server", .exe = "/opt/redis/redis-7.2",
                       .cgroup = "machine.slice/machine-qemu\\x2d2\\x2ddb.scope/libvirt/emulator",
                       .rss_anon_kib = 1 << 22, .cmdline_read = true };
        classify_process(&s, &ctx, &db, &v);
        assert_int_equal(v.action, VERDICT_DONT_MERGE);
        assert_non_null(strstr(v.policy_file, "10-secrets.policy"));
        Process renamed = { .pid = 14, .comm = "agent", .exe = "/usr/bin/ssh-agent",
                            .cgroup = "machine.slice/machine-qemu\\x2d3\\x2dvm.scope/libvirt/emulator",
                            .rss_anon_kib = 1 << 22, .cmdline_read = true };
        classify_process(&s, &ctx, &renamed, &v);
        assert_int_equal(v.action, VERDICT_DONT_MERGE);
        assert_non_null(strstr(v.policy_file, "10-secrets-exe.policy"));
        Process vm = { .pid = 11, .comm = "qemu-system-x86", .exe = "/usr/bin/qemu-system-x86_64",
                       .cgroup = "machine.slice/machine-qemu\\x2d1\\x2dvm.scope/libvirt/emulator",
                       .rss_anon_kib = 1 << 22 };
        /* A guest may have opted out: the verdict waits for its command line. */
        classify_process(&s, &ctx, &vm, &v);
        assert_int_equal(v.action, VERDICT_WAIT);
        assert_true(v.needs_cmdline);
        vm.cmdline_read = true;
        vm.cmdline = (char *) "/usr/bin/qemu-system-x86_64 -name guest=web -machine pc-q35-8.2,usb=off,dump-guest-core=off "
                              "-m 4096";
        classify_process(&s, &ctx, &vm, &v);
        assert_int_equal(v.action, VERDICT_MERGE);
        /* libvirt's <nosharepages/>: the shipped policy keeps the guest's choice. */
        vm.cmdline = (char *) "/usr/bin/qemu-system-x86_64 -name guest=db -machine "
                              "pc-q35-8.2,usb=off,mem-merge=off,dump-guest-core=off -m 4096";
        classify_process(&s, &ctx, &vm, &v);
        assert_int_equal(v.action, VERDICT_LEAVE_ALONE);
        assert_true(v.opted_out);
        assert_non_null(strstr(v.reason, "mem-merge=off"));
        vm.cmdline = NULL;
        Process other = { .pid = 12, .comm = "bash", .exe = "/usr/bin/bash", .cgroup = "user.slice" };
        classify_process(&s, &ctx, &other, &v);
        assert_int_equal(v.action, VERDICT_LEAVE_ALONE);
        policy_set_done(&s);
}

static void test_opt_out_find(void **state) {
        char buf[160];
        static const struct {
                const char *cmdline;
                bool out;
        } cases[] = {
                { "qemu-system-x86_64 -machine mem-merge=off", true },
                { "qemu-system-x86_64 -M pc,mem-merge=no -m 1G", true },
                { "qemu-system-x86_64 --machine q35,mem-merge=false", true },
                { "qemu-system-x86_64 -machine=pc,mem-merge=off", true },
                { "qemu-system-x86_64 -machine pc,mem-merge=on", false },
                { "qemu-system-x86_64 -machine pc", false },
                /* the later -machine wins, as in QEMU */
                { "qemu-system-x86_64 -machine mem-merge=off -machine mem-merge=on", false },
                { "qemu-system-x86_64 -machine mem-merge=on -machine mem-merge=off", true },
                /* not an option: in a name, an escaped comma, another option's value */
                { "qemu-system-x86_64 -name mem-merge=off -machine pc", false },
                { "qemu-system-x86_64 -machine pc,x=a,,mem-merge=off", false },
                { "qemu-system-x86_64 -machine pc,mem-merge=offf", false },
                { "qemu-system-x86_64 -machine", false },
                { "", false },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                buf[0] = 0;
                if (opt_out_find(cases[i].cmdline, buf, sizeof buf) != cases[i].out)
                        fail_msg("opt_out_find(\"%s\") != %d", cases[i].cmdline, cases[i].out);
                if (cases[i].out)
                        assert_non_null(strstr(buf, "mem-merge="));
        }
        assert_false(opt_out_find(NULL, buf, sizeof buf));

        Process q = { .comm = "qemu-system-x86", .exe = (char *) "/usr/bin/qemu-system-x86_64" };
        assert_true(opt_out_applies(&q));
        Process k = { .comm = "kvm" };
        assert_true(opt_out_applies(&k));
        Process j = { .comm = "java", .exe = (char *) "/usr/bin/java" };
        assert_false(opt_out_applies(&j));
}

/* Only an administrator's explicit OverrideOptOut=yes switches merging on
 * for a guest that opted out; a tuning-only policy never waits for it. */
static void test_override_opt_out(void **state) {
        _cleanup_free_ char *dir = path_of("override");
        fake_write(&tree, "override/10-mine.policy",
                   "[Match]\nComm=qemu-system-*\n[Merge]\nMode=auto\nMethod=inject\nOverrideOptOut=yes\n");
        fake_write(&tree, "override/20-tune.policy", "[Match]\nComm=kvm\n[Merge]\nMethod=none\n");
        char *dirs[] = { dir, NULL };
        PolicySet s = {};
        ConfDiag d = {};
        assert_int_equal(policy_set_load(dirs, NULL, &s, &d), 0);
        dump(&d);
        assert_int_equal(d.n, 0);
        assert_true(s.policies[0].override_opt_out);
        assert_false(s.policies[1].override_opt_out);

        ClassifyContext ctx = { .now_boottime_usec = 1000 * USEC_PER_SEC };
        Verdict v;
        Process vm = { .pid = 11, .comm = "qemu-system-x86", .rss_anon_kib = 1 << 20, .cmdline_read = true,
                       .cmdline = (char *) "qemu-system-x86_64 -machine mem-merge=off" };
        classify_process(&s, &ctx, &vm, &v);
        assert_int_equal(v.action, VERDICT_MERGE);
        assert_false(v.opted_out);
        Process kvm = { .pid = 12, .comm = "kvm", .rss_anon_kib = 1 << 20 };
        classify_process(&s, &ctx, &kvm, &v);
        assert_int_equal(v.action, VERDICT_MERGE);
        assert_false(v.needs_cmdline);
        policy_set_done(&s);
}

/* ksmtuned2.policy(5) documents every key of the table in its section. */
static void test_man_page_has_every_key(void **state) {
        const char *src = getenv("SOURCE_ROOT");
        _cleanup_free_ char *text = NULL;
        char path[1024];

        assert_non_null(src);
        snprintf(path, sizeof path, "%s/man/ksmtuned2.policy.5", src);
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 1 << 20, &text, NULL), 0);
        for (size_t i = 0; i < policy_table_size; i++) {
                const ConfItem *it = &policy_table[i];
                char heading[128], want[128];
                snprintf(heading, sizeof heading, "\n.SH \"[%s] SECTION\"\n", it->section);
                const char *sec = strstr(text, heading);
                if (!sec)
                        fail_msg("%s lacks the heading for [%s]", path, it->section);
                const char *next = strstr(sec + 1, "\n.SH ");
                snprintf(want, sizeof want, "\n.TP\n.BI %s= ", it->key);
                const char *hit = strstr(sec, want);
                if (!hit || (next && hit > next))
                        fail_msg("%s does not document %s= in its [%s] section", path, it->key, it->section);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_good),
                cmocka_unit_test(test_parse_design_example),
                cmocka_unit_test(test_parse_bad_keys),
                cmocka_unit_test(test_set_masked_ordered),
                cmocka_unit_test(test_trust),
                cmocka_unit_test(test_glob),
                cmocka_unit_test(test_classify),
                cmocka_unit_test(test_classify_exe_unknown),
                cmocka_unit_test(test_shipped_policies),
                cmocka_unit_test(test_opt_out_find),
                cmocka_unit_test(test_override_opt_out),
                cmocka_unit_test(test_man_page_has_every_key),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
