/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf.h"
#include "fake-tree.h"
#include "fileio.h"
#include "json.h"
#include "log.h"
#include "util.h"

/* One tree for every load_text(), removed by the group's teardown: a
 * function-local static was never removed and left a directory in /tmp per
 * run of this suite. */
static FakeTree text_tree;

static int load_text(const char *text, Config *c, ConfDiag *d, char *path, size_t n) {
        if (!text_tree.path[0])
                fake_tree_init(&text_tree);
        fake_write(&text_tree, "k.conf", text);
        snprintf(path, n, "%s/k.conf", text_tree.path);
        return config_load(c, path, NULL, d);
}

static int remove_text_tree(void **state) {
        (void) state;
        fake_tree_done(&text_tree);
        return 0;
}

static void test_defaults_and_shipped(void **state) {
        Config c = {};
        ConfDiag d = {};
        char path[1024];
        const char *src = getenv("SOURCE_ROOT");

        config_init_defaults(&c);
        assert_int_equal(c.interval_usec, 5 * USEC_PER_SEC);
        assert_true(c.restore_knobs);
        assert_false(c.unmerge_on_exit);
        assert_int_equal(c.use_zero_pages, -1);
        assert_int_equal(c.mode, MANAGER_MODE_AUTO);
        assert_int_equal(strv_length(c.policy_dirs), 3);

        /* the shipped file has every key commented out: loading it yields the defaults */
        assert_non_null(src);
        snprintf(path, sizeof path, "%s/conf/ksmtuned2.conf", src);
        assert_int_equal(config_load(&c, path, NULL, &d), 0);
        assert_int_equal(d.n, 0);
        assert_int_equal(c.interval_usec, 5 * USEC_PER_SEC);

        /* and every key of the table appears in it, commented out */
        char *text = NULL;
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 1 << 20, &text, NULL), 0);
        for (size_t i = 0; i < config_table_size; i++) {
                char want[128];
                snprintf(want, sizeof want, "\n#%s=", config_table[i].key);
                if (!strstr(text, want))
                        fail_msg("conf/ksmtuned2.conf lacks %s", want + 1);
        }
        free(text);
        config_done(&c);
}

static void test_good_values(void **state) {
        Config c = {};
        ConfDiag d = {};
        char path[1024];
        assert_int_equal(load_text("[Daemon]\nInterval=250ms\nLogLevel=debug\nPolicyDirectories=/a  /b\n"
                                   "RestoreKnobsOnExit=no\nMode=tune-only\n; comment\n# comment\n[Ksm]\nUseZeroPages=yes\n"
                                   "MaxPageSharing=512\nSmartScan=\n[Sampler]\nKsmdSampleInterval=5ms\n"
                                   /* enum values match in any case (conf_parse_enum()) */
                                   "[Tuning]\nIdleMode=Stop\nAdvisorPolicy=LEAVE\n",
                                   &c, &d, path, sizeof path),
                         0);
        assert_int_equal(d.n, 0);
        assert_int_equal(c.interval_usec, 250 * USEC_PER_MSEC);
        assert_int_equal(c.log_level, LOG_DEBUG);
        assert_int_equal(strv_length(c.policy_dirs), 2);
        assert_string_equal(c.policy_dirs[1], "/b");
        assert_false(c.restore_knobs);
        assert_int_equal(c.mode, MANAGER_MODE_TUNE_ONLY);
        assert_int_equal(c.use_zero_pages, 1);
        assert_int_equal(c.max_page_sharing, 512);
        assert_int_equal(c.smart_scan, -1);
        assert_int_equal(c.ksmd_sample_interval_usec, 5000);
        assert_int_equal(c.tuning.idle_mode, IDLE_MODE_STOP);
        assert_int_equal(c.tuning.advisor_policy, ADVISOR_POLICY_LEAVE);
        config_done(&c);
}

static void test_bad_values(void **state) {
        Config c = {};
        ConfDiag d = {};
        char path[1024], want[1200];
        assert_int_equal(load_text("[Daemon]\nInterval=fast\nInterval=1us\nNoSuchKey=1\nRestoreKnobsOnExit=maybe\n"
                                   "[Ksm]\nMaxPageSharing=1\nUseZeroPages=2\n[Weird]\nx=y\n",
                                   &c, &d, path, sizeof path),
                         0);
        assert_int_equal(d.n, 7);
        snprintf(want, sizeof want, "%s:2: Interval: not a time span", path);
        assert_true(strncmp(d.lines[0], want, strlen(want)) == 0);
        snprintf(want, sizeof want, "%s:3: Interval: out of range", path);
        assert_true(strncmp(d.lines[1], want, strlen(want)) == 0);
        snprintf(want, sizeof want, "%s:4: NoSuchKey: unknown key in [Daemon]", path);
        assert_true(strncmp(d.lines[2], want, strlen(want)) == 0);
        snprintf(want, sizeof want, "%s:9: unknown section [Weird]", path);
        assert_true(strncmp(d.lines[6], want, strlen(want)) == 0);
        /* bad keys are ignored: defaults stand */
        assert_int_equal(c.interval_usec, 5 * USEC_PER_SEC);
        assert_true(c.restore_knobs);
        assert_int_equal(c.max_page_sharing, -1);
        conf_diag_free(&d);
        config_done(&c);
}

static void test_syntax_error(void **state) {
        Config c = {};
        ConfDiag d = {};
        char path[1024];
        assert_int_equal(load_text("[Daemon]\nInterval=1s\nthis line has no equals sign\n", &c, &d, path, sizeof path),
                         -EBADMSG);
        assert_true(d.n >= 1);
        assert_non_null(strstr(d.lines[d.n - 1], ":3: syntax error"));
        /* a rejected file leaves the defaults, not half of it */
        assert_int_equal(c.interval_usec, 5 * USEC_PER_SEC);
        conf_diag_free(&d);
        /* --config FILE must exist */
        assert_int_equal(config_load(&c, "/nonexistent/k.conf", NULL, &d), -ENOENT);
        assert_int_equal(d.n, 1);
        assert_string_equal(d.lines[0], "/nonexistent/k.conf:0: cannot be read: No such file or directory");
        conf_diag_free(&d);
        config_done(&c);
}

static bool diag_is(const ConfDiag *d, size_t i, const char *path, const char *rest) {
        char want[1200];
        snprintf(want, sizeof want, "%s%s", path, rest);
        if (i < d->n && streq(d->lines[i], want))
                return true;
        for (size_t k = 0; k < d->n; k++)
                fprintf(stderr, "  diag %zu: %s\n", k, d->lines[k]);
        fail_msg("diagnostic %zu is not \"%s\"", i, want);
        return false;
}

/* Sections and keys as the man page has them, '=' only: what inih would
 * also accept is reported, with what was probably meant. */
static void test_names_and_separators(void **state) {
        Config c = {};
        ConfDiag d = {};
        char path[1024];

        assert_int_equal(load_text("[daemon]\nInterval=1s\n[Daemon]\ninterval=2s\nIntervall=3s\nCpuBudget=5\n"
                                   "[Tuning]\nIdleMode=Stop\n",
                                   &c, &d, path, sizeof path),
                         0);
        assert_int_equal(d.n, 4);
        diag_is(&d, 0, path, ":1: unknown section [daemon] (did you mean [Daemon]?), ignoring");
        diag_is(&d, 1, path, ":4: interval: unknown key in [Daemon] (did you mean Interval=?), ignoring");
        diag_is(&d, 2, path, ":5: Intervall: unknown key in [Daemon] (did you mean Interval=?), ignoring");
        diag_is(&d, 3, path, ":6: CpuBudget: unknown key in [Daemon] (CpuBudget= belongs in [Tuning]), ignoring");
        assert_int_equal(c.interval_usec, 5 * USEC_PER_SEC);
        /* enum values, unlike names, match in any case */
        assert_int_equal(c.tuning.idle_mode, IDLE_MODE_STOP);
        conf_diag_free(&d);

        /* indentation is allowed, and is not inih's continuation line */
        assert_int_equal(load_text("\xef\xbb\xbf[Daemon]\n  Interval=2s\n\tLogLevel=debug\n", &c, &d, path, sizeof path), 0);
        assert_int_equal(d.n, 0);
        assert_int_equal(c.interval_usec, 2 * USEC_PER_SEC);
        assert_int_equal(c.log_level, LOG_DEBUG);
        assert_int_equal(load_text("[Daemon]\nPolicyDirectories=/a\n  /b\nInterval: 2s\nLogLevel=debug\n", &c, &d,
                                   path, sizeof path),
                         -EBADMSG);
        assert_int_equal(d.n, 3);
        diag_is(&d, 0, path, ":3: \"/b\": neither a [Section], a Key=value nor a comment");
        diag_is(&d, 1, path, ":4: \"Interval: 2s\": keys take '=', not ':'");
        diag_is(&d, 2, path, ":3: syntax error, file rejected");
        assert_int_equal(c.log_level, LOG_INFO);
        conf_diag_free(&d);
        config_done(&c); /* a rejected file leaves the (allocated) defaults */
}

static FakeTree dropin_tree;

static char *tree_path(const char *rel) {
        char *p = NULL;
        assert_true(asprintf(&p, "%s/%s", dropin_tree.path, rel) > 0);
        return p;
}

/* The files of a search below dropin_tree, joined by " " with the tree's
 * prefix cut, for comparing with what a test expects. */
static char *files_of(const ConfigSearch *search, ConfDiag *d, int *ret_r) {
        _cleanup_strv_free_ char **files = NULL;
        *ret_r = config_files_search(search, &files, d);
        if (*ret_r < 0)
                return NULL;
        for (char **f = files; *f; f++)
                memmove(*f, *f + strlen(dropin_tree.path) + 1, strlen(*f + strlen(dropin_tree.path) + 1) + 1);
        return strv_join(files, " ");
}

/* Drop-ins merged as systemd merges its own: the main file (etc before run
 * before the vendor's lib), then *.conf across the three directories by
 * name, an earlier directory masking a name in later ones. */
static void test_dropins(void **state) {
        _cleanup_free_ char *etc = NULL, *run = NULL, *lib = NULL, *etc_d = NULL, *run_d = NULL, *lib_d = NULL;
        Config c = {};
        ConfDiag d = {};
        int r;

        fake_tree_init(&dropin_tree);
        etc = tree_path("etc/k.conf");
        run = tree_path("run/k.conf");
        lib = tree_path("lib/k.conf");
        etc_d = tree_path("etc/k.conf.d");
        run_d = tree_path("run/k.conf.d");
        lib_d = tree_path("lib/k.conf.d");
        const ConfigSearch search = {
                .main_paths = (const char *const[]) { etc, run, lib, NULL },
                .dropin_dirs = (const char *const[]) { etc_d, run_d, lib_d, NULL },
        };

        /* nothing at all: no file, the defaults */
        _cleanup_free_ char *none = files_of(&search, &d, &r);
        assert_int_equal(r, 0);
        assert_string_equal(none, "");

        fake_write(&dropin_tree, "lib/k.conf", "[Daemon]\nInterval=2s\nDryRun=yes\n");
        fake_write(&dropin_tree, "lib/k.conf.d/50-a.conf", "[Daemon]\nLogLevel=debug\n");
        fake_write(&dropin_tree, "etc/k.conf.d/50-a.conf", "[Daemon]\nLogLevel=notice\n");
        fake_write(&dropin_tree, "run/k.conf.d/10-b.conf", "[Daemon]\nInterval=3s\nPolicyDirectories=/x\n");
        fake_write(&dropin_tree, "lib/k.conf.d/90-c.conf", "[Daemon]\nPolicyDirectories=/y\n");
        fake_write(&dropin_tree, "lib/k.conf.d/95-null.conf", "[Daemon]\nInterval=9s\n");
        fake_write(&dropin_tree, "lib/k.conf.d/96-empty.conf", "[Daemon]\nInterval=9s\n");
        fake_write(&dropin_tree, "run/k.conf.d/96-empty.conf", "");
        fake_write(&dropin_tree, "lib/k.conf.d/README", "[Daemon]\nInterval=9s\n");
        fake_write(&dropin_tree, "lib/k.conf.d/.hidden.conf", "[Daemon]\nInterval=9s\n");
        _cleanup_free_ char *null_link = tree_path("etc/k.conf.d/95-null.conf");
        assert_int_equal(symlink("/dev/null", null_link), 0);

        _cleanup_free_ char *vendor = files_of(&search, &d, &r);
        assert_int_equal(r, 0);
        assert_string_equal(vendor, "lib/k.conf run/k.conf.d/10-b.conf etc/k.conf.d/50-a.conf lib/k.conf.d/90-c.conf");
        _cleanup_strv_free_ char **files = NULL;
        assert_int_equal(config_files_search(&search, &files, &d), 0);
        assert_int_equal(config_load_files(&c, files, &d), 0);
        assert_int_equal(d.n, 0);
        assert_int_equal(c.interval_usec, 3 * USEC_PER_SEC); /* later overrides earlier */
        assert_int_equal(c.log_level, LOG_NOTICE);
        assert_true(c.dry_run);
        /* a list is appended to across files */
        assert_int_equal(strv_length(c.policy_dirs), 2);
        assert_string_equal(c.policy_dirs[0], "/x");
        assert_string_equal(c.policy_dirs[1], "/y");

        /* an empty assignment empties it */
        fake_write(&dropin_tree, "etc/k.conf.d/99-reset.conf", "[Daemon]\nPolicyDirectories=\nPolicyDirectories=/z\n");
        files = strv_free(files);
        assert_int_equal(config_files_search(&search, &files, &d), 0);
        assert_int_equal(config_load_files(&c, files, &d), 0);
        assert_int_equal(strv_length(c.policy_dirs), 1);
        assert_string_equal(c.policy_dirs[0], "/z");
        fake_remove(&dropin_tree, "etc/k.conf.d/99-reset.conf");

        /* /etc's main file replaces the vendor's; an empty one masks it */
        fake_write(&dropin_tree, "etc/k.conf", "[Daemon]\nInterval=4s\n");
        _cleanup_free_ char *admin = files_of(&search, &d, &r);
        assert_string_equal(admin, "etc/k.conf run/k.conf.d/10-b.conf etc/k.conf.d/50-a.conf lib/k.conf.d/90-c.conf");
        fake_write(&dropin_tree, "etc/k.conf", "");
        _cleanup_free_ char *masked = files_of(&search, &d, &r);
        assert_string_equal(masked, "run/k.conf.d/10-b.conf etc/k.conf.d/50-a.conf lib/k.conf.d/90-c.conf");
        files = strv_free(files);
        assert_int_equal(config_files_search(&search, &files, &d), 0);
        assert_int_equal(config_load_files(&c, files, &d), 0);
        assert_false(c.dry_run);

        /* a bad drop-in rejects the configuration, after every file has
         * been read and every problem said, with its own file and line */
        fake_write(&dropin_tree, "run/k.conf.d/60-bad.conf", "[Daemon]\nInterval=1s\nInterval: 2s\n");
        fake_write(&dropin_tree, "lib/k.conf.d/90-c.conf", "[Daemon]\nPolicyDirectorys=/y\n");
        files = strv_free(files);
        assert_int_equal(config_files_search(&search, &files, &d), 0);
        assert_int_equal(config_load_files(&c, files, &d), -EBADMSG);
        _cleanup_free_ char *bad = tree_path("run/k.conf.d/60-bad.conf"), *c90 = tree_path("lib/k.conf.d/90-c.conf");
        assert_int_equal(d.n, 3);
        diag_is(&d, 0, bad, ":3: \"Interval: 2s\": keys take '=', not ':'");
        diag_is(&d, 1, bad, ":3: syntax error, file rejected");
        diag_is(&d, 2, c90, ":2: PolicyDirectorys: unknown key in [Daemon] (did you mean PolicyDirectories=?), ignoring");
        assert_int_equal(c.interval_usec, 5 * USEC_PER_SEC); /* all defaults, not a part */
        assert_int_equal(strv_length(c.policy_dirs), 3);
        conf_diag_free(&d);

        /* an unreadable drop-in directory is an error, not an empty one */
        fake_remove(&dropin_tree, "run/k.conf.d/60-bad.conf");
        fake_remove(&dropin_tree, "run/k.conf.d/10-b.conf");
        fake_remove(&dropin_tree, "run/k.conf.d/96-empty.conf");
        fake_remove(&dropin_tree, "run/k.conf.d");
        fake_write(&dropin_tree, "run/k.conf.d", "a file");
        files = strv_free(files);
        assert_int_equal(config_files_search(&search, &files, &d), -ENOTDIR);
        assert_int_equal(d.n, 1);
        diag_is(&d, 0, run_d, ":0: cannot open directory: Not a directory");
        conf_diag_free(&d);

        config_done(&c);
        fake_tree_done(&dropin_tree);
}

/* As root, the configuration (which names the policy directories and
 * switches the sandbox off) counts only when root alone may write it, and a
 * FIFO in its place is refused without waiting for a writer. */
static void test_config_trust(void **state) {
        if (geteuid() != 0)
                skip();
        Config c = {};
        ConfDiag d = {};
        _cleanup_free_ char *main_file = NULL, *dropins = NULL, *fifo = NULL, *drop = NULL;

        fake_tree_init(&dropin_tree);
        main_file = tree_path("etc/k.conf");
        dropins = tree_path("etc/k.conf.d");
        drop = tree_path("etc/k.conf.d/50-x.conf");
        const ConfigSearch search = {
                .main_paths = (const char *const[]) { main_file, NULL },
                .dropin_dirs = (const char *const[]) { dropins, NULL },
        };
        fake_write(&dropin_tree, "etc/k.conf", "[Daemon]\nSandbox=no\n");
        fake_write(&dropin_tree, "etc/k.conf.d/50-x.conf", "[Daemon]\nInterval=2s\n");
        _cleanup_strv_free_ char **files = NULL;
        assert_int_equal(config_files_search(&search, &files, &d), 0);
        assert_int_equal(strv_length(files), 2);
        files = strv_free(files);

        /* a main file a user owns */
        assert_int_equal(chown(main_file, 65534, 65534), 0);
        assert_int_equal(config_files_search(&search, &files, &d), -EPERM);
        diag_is(&d, 0, main_file, ":0: owned by uid 65534, not root, rejected (only root may write it)");
        conf_diag_free(&d);
        assert_int_equal(chown(main_file, 0, 0), 0);

        /* a drop-in others may write */
        assert_int_equal(chmod(drop, 0664), 0);
        assert_int_equal(config_files_search(&search, &files, &d), -EPERM);
        diag_is(&d, 0, drop, ":0: writable by group or others (mode 0664), rejected (only root may write it)");
        conf_diag_free(&d);
        assert_int_equal(chmod(drop, 0644), 0);

        /* a drop-in directory others may write */
        assert_int_equal(chmod(dropins, 0777), 0);
        assert_int_equal(config_files_search(&search, &files, &d), -EPERM);
        diag_is(&d, 0, dropins, ":0: directory writable by group or others (mode 0777), its files are ignored");
        conf_diag_free(&d);
        assert_int_equal(chmod(dropins, 0755), 0);

        /* the main file's directory: a user's */
        _cleanup_free_ char *etc = tree_path("etc");
        assert_int_equal(chown(etc, 65534, 65534), 0);
        assert_int_equal(config_files_search(&search, &files, &d), -EPERM);
        diag_is(&d, 0, etc, ":0: directory owned by uid 65534, not root, its files are ignored");
        conf_diag_free(&d);
        assert_int_equal(chown(etc, 0, 0), 0);

        /* a FIFO: refused at once */
        fake_remove(&dropin_tree, "etc/k.conf");
        assert_int_equal(mkfifo(main_file, 0644), 0);
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(config_files_search(&search, &files, &d), -EBADMSG);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 < USEC_PER_SEC);
        diag_is(&d, 0, main_file, ":0: not a regular file, rejected");
        conf_diag_free(&d);
        assert_int_equal(config_load_files(&c, (char *[]) { main_file, NULL }, &d), -EBADMSG);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 < USEC_PER_SEC);
        conf_diag_free(&d);

        config_done(&c);
        fake_tree_done(&dropin_tree);
}

/* The build's search: /etc (sysconfdir), /run, the vendor's lib. */
static void test_default_search(void **state) {
        const ConfigSearch *s = &config_search_default;
        assert_string_equal(s->main_paths[0], DEFAULT_CONFIG_PATH);
        assert_string_equal(s->main_paths[1], "/run/ksmtuned2/ksmtuned2.conf");
        assert_string_equal(s->main_paths[2], PKGLIBDIR "/ksmtuned2.conf");
        assert_null(s->main_paths[3]);
        assert_string_equal(s->dropin_dirs[0], DEFAULT_CONFIG_PATH ".d");
        assert_string_equal(s->dropin_dirs[1], "/run/ksmtuned2/ksmtuned2.conf.d");
        assert_string_equal(s->dropin_dirs[2], PKGLIBDIR "/ksmtuned2.conf.d");
        assert_null(s->dropin_dirs[3]);
        assert_false(s->main_required);
}

/* Values with units, as systemd users write them; keys named after their
 * unit read a bare number as before. */
static void test_units(void **state) {
        Config c = {};
        ConfDiag d = {};
        char path[1024];

        assert_int_equal(load_text("[Daemon]\nInterval=1min 30s\n[Ksm]\nStableNodeChainsPruneMSec=2s\n"
                                   "[Tuning]\nCpuBudget=12.5%\nBurstCpu=80\nMinSleepMSec=20\nMaxSleepMSec=1.5s\n"
                                   "IdleAfter=1h 30min\nMaintenanceScanTime=2min30s\nMemAvailableTight=5 %\n",
                                   &c, &d, path, sizeof path),
                         0);
        assert_int_equal(d.n, 1); /* "5 %": no space before the sign, as in systemd */
        diag_is(&d, 0, path, ":12: MemAvailableTight: not a percentage (e.g. 10 or 2.5%) (\"5 %\"), ignoring");
        assert_int_equal(c.interval_usec, 90 * USEC_PER_SEC);
        assert_int_equal(c.stable_node_chains_prune_ms, 2000);
        assert_true(c.tuning.cpu_budget_percent == 12.5);
        assert_true(c.tuning.burst_cpu_percent == 80);
        assert_int_equal(c.tuning.min_sleep_ms, 20);
        assert_int_equal(c.tuning.max_sleep_ms, 1500);
        assert_int_equal(c.tuning.idle_after_usec, 5400 * USEC_PER_SEC);
        assert_int_equal(c.tuning.maintenance_scan_time_usec, 150 * USEC_PER_SEC);
        conf_diag_free(&d);

        assert_int_equal(load_text("[Ksm]\nStableNodeChainsPruneMSec=\n[Tuning]\nMinSleepMSec=500us\n"
                                   "MaxSleepMSec=2min\nCpuBudget=150%\nBurstCpu=ten\nMinSleepMSec=1.5\n",
                                   &c, &d, path, sizeof path),
                         0);
        assert_int_equal(d.n, 5);
        diag_is(&d, 0, path, ":4: MinSleepMSec: not a whole number of ms (\"500us\"), ignoring");
        diag_is(&d, 1, path, ":5: MaxSleepMSec: out of range 0..60000 ms (\"2min\"), ignoring");
        diag_is(&d, 2, path, ":6: CpuBudget: out of range 0..100% (\"150%\"), ignoring");
        diag_is(&d, 3, path, ":7: BurstCpu: not a percentage (e.g. 10 or 2.5%) (\"ten\"), ignoring");
        diag_is(&d, 4, path, ":8: MinSleepMSec: not a whole number of ms (\"1.5\"), ignoring");
        assert_int_equal(c.stable_node_chains_prune_ms, -1);
        assert_int_equal(c.tuning.min_sleep_ms, 10);
        assert_int_equal(c.tuning.max_sleep_ms, 1000);
        conf_diag_free(&d);
        config_done(&c);
}

/* A line longer than inih's buffer would be parsed in pieces; it is refused
 * instead, however long the buffer of this build's inih is. Comments may be
 * as long as they like. */
static void test_long_lines(void **state) {
        Config c = {};
        ConfDiag d = {};
        char path[1024];
        size_t n = 20000;
        _cleanup_free_ char *text = malloc(2 * n + 200), *dirs = malloc(n);

        assert_non_null(text);
        assert_non_null(dirs);
        memset(dirs, 'x', n - 1);
        dirs[0] = '/';
        dirs[n - 1] = 0;
        snprintf(text, 2 * n + 200, "# %s\n[Daemon]\nPolicyDirectories=%s\nInterval=2s\n", dirs, dirs);
        assert_int_equal(load_text(text, &c, &d, path, sizeof path), -EBADMSG);
        assert_int_equal(d.n, 2);
        char want[1200];
        snprintf(want, sizeof want, "%s:3: line longer than ", path);
        assert_true(startswith(d.lines[0], want));
        assert_non_null(strstr(d.lines[0], " bytes (inih's line buffer)"));
        diag_is(&d, 1, path, ":3: syntax error, file rejected");
        conf_diag_free(&d);

        /* what fits in upstream's default buffer (200 bytes) is read whole */
        dirs[170] = 0;
        snprintf(text, 2 * n + 200, "[Daemon]\nPolicyDirectories=%s /b\n", dirs);
        assert_int_equal(load_text(text, &c, &d, path, sizeof path), 0);
        assert_int_equal(d.n, 0);
        assert_int_equal(strv_length(c.policy_dirs), 2);
        assert_string_equal(c.policy_dirs[0], dirs);
        config_done(&c);
}

static void test_util(void **state) {
        uint64_t v;
        int i;
        assert_int_equal(parse_timespan_usec("5", &v), 0);
        assert_int_equal(v, 5 * USEC_PER_SEC);
        assert_int_equal(parse_timespan_usec("1.5s", &v), 0);
        assert_int_equal(v, 1500000);
        assert_int_equal(parse_timespan_usec("2min", &v), 0);
        assert_int_equal(v, 120 * USEC_PER_SEC);
        assert_int_equal(parse_timespan_usec("20 ms", &v), 0);
        assert_int_equal(v, 20000);
        assert_int_equal(parse_timespan_usec("-1s", &v), -EINVAL);
        assert_int_equal(parse_timespan_usec("1parsec", &v), -EINVAL);
        assert_int_equal(safe_atou64(" 12 ", &v), 0);
        assert_int_equal(safe_atou64("+1", &v), -EINVAL);
        assert_int_equal(safe_atou64("", &v), -EINVAL);
        assert_int_equal(safe_atoi("-2147483649", &i), -ERANGE);
        assert_int_equal(parse_boolean("On"), 1);
        assert_int_equal(parse_boolean("nope"), -EINVAL);
        char buf[32];
        assert_string_equal(format_bytes(buf, sizeof buf, 3 * 1024 * 1024), "3.0 MiB");
        assert_string_equal(format_bytes(buf, sizeof buf, 512), "512 B");
        /* LogLevel= and --log-level: the syslog names and two aliases, exactly */
        assert_int_equal(log_level_from_string("warning"), LOG_WARNING);
        assert_int_equal(log_level_from_string("warn"), LOG_WARNING);
        assert_int_equal(log_level_from_string("error"), LOG_ERR);
        assert_int_equal(log_level_from_string("Debug"), -EINVAL);
        assert_string_equal(log_level_to_string(LOG_ERR), "err");
        assert_null(log_level_to_string(LOG_DEBUG + 1));
        char e[8];
        assert_string_equal(CESCAPE("a\nb\\", CESCAPE_ASCII), "a\\x0ab\\x5c");
        assert_string_equal(CESCAPE("caf\xc3\xa9", CESCAPE_ASCII), "caf\\xc3\\xa9");
        /* for a terminal: UTF-8 and systemd's escapes as they are, DEL escaped */
        assert_string_equal(CESCAPE("caf\xc3\xa9 a\\x2d\x7f\x1b", CESCAPE_CONTROL), "caf\xc3\xa9 a\\x2d\\x7f\\x1b");
        assert_string_equal(CESCAPE(NULL, CESCAPE_CONTROL), "");
        /* a copy that does not fit is cut at a whole escape, and says so */
        assert_string_equal(cescape_buf(e, sizeof e, "abcdefg", CESCAPE_ASCII), "abcdefg");
        assert_string_equal(cescape_buf(e, sizeof e, "abcdefgh", CESCAPE_ASCII), "abcd...");
        assert_string_equal(cescape_buf(e, sizeof e, "ab\ncdefgh", CESCAPE_ASCII), "ab...");
        assert_string_equal(cescape_buf(e, sizeof e, "abc\n", CESCAPE_ASCII), "abc\\x0a");
        assert_string_equal(cescape_buf(e, 3, "abc", CESCAPE_ASCII), "..");
        assert_string_equal(cescape_buf(e, 1, "abc", CESCAPE_ASCII), "");
        char comm[CESCAPE_SIZE(4)];
        assert_string_equal(cescape_buf(comm, sizeof comm, "\x01\x02\x03\x04", CESCAPE_ASCII), "\\x01\\x02\\x03\\x04");
        const char *name = "web.policy";
        assert_ptr_equal(endswith(name, ".policy"), name + 3);
        assert_ptr_equal(endswith(name, ""), name + strlen(name));
        assert_null(endswith(name, "x.web.policy"));
        assert_null(endswith(name, ".polic"));

        int *a = NULL;
        size_t n_alloc = 0;
        assert_int_equal(greedy_realloc((void **) &a, &n_alloc, 1, sizeof *a, 4), 0);
        assert_int_equal(n_alloc, 4);
        a[3] = 7;
        assert_int_equal(greedy_realloc((void **) &a, &n_alloc, 4, sizeof *a, 4), 0);
        assert_int_equal(n_alloc, 4);
        assert_int_equal(greedy_realloc((void **) &a, &n_alloc, 9, sizeof *a, 4), 0);
        assert_int_equal(n_alloc, 16);
        assert_int_equal(a[3], 7);
        /* A size that would overflow leaves the array as it was. */
        int *before = a;
        assert_int_equal(greedy_realloc((void **) &a, &n_alloc, SIZE_MAX / 2, sizeof *a, 4), -ENOMEM);
        assert_ptr_equal(a, before);
        assert_int_equal(n_alloc, 16);
        free(a);

        char **l = NULL, **add = NULL;
        assert_int_equal(strv_split_whitespace("a b", &add), 0);
        assert_int_equal(strv_push_all(&l, add), 0);
        assert_int_equal(strv_split_whitespace("c", &add), 0);
        assert_int_equal(strv_push_all(&l, add), 0);
        assert_int_equal(strv_length(l), 3);
        assert_string_equal(l[2], "c");
        assert_int_equal(strv_split_whitespace("  ", &add), 0);
        assert_int_equal(strv_push_all(&l, add), 0);
        assert_int_equal(strv_length(l), 3);
        strv_free(l);
        l = NULL;
        assert_int_equal(strv_split_whitespace("", &add), 0);
        assert_int_equal(strv_push_all(&l, add), 0);
        assert_null(l);
}

static void test_json(void **state) {
        char *buf = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&buf, &n);
        JsonWriter w;
        json_init(&w, f, false);
        json_begin_object(&w);
        json_kv_string(&w, "comm", "a\"b\\c\n\x01\xff");
        json_key(&w, "list");
        json_begin_array(&w);
        json_u64(&w, 1);
        json_bool(&w, true);
        json_null(&w);
        json_end_array(&w);
        json_kv_double(&w, "x", 0.5);
        json_kv_string(&w, "utf8", "m\xc3\xa9moire");
        json_end_object(&w);
        fclose(f);
        assert_string_equal(buf, "{\"comm\":\"a\\\"b\\\\c\\n\\u0001\\u00ff\",\"list\":[1,true,null],\"x\":0.5,"
                                 "\"utf8\":\"m\xc3\xa9moire\"}");
        free(buf);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults_and_shipped), cmocka_unit_test(test_good_values),
                cmocka_unit_test(test_bad_values),           cmocka_unit_test(test_syntax_error),
                cmocka_unit_test(test_names_and_separators), cmocka_unit_test(test_long_lines),
                cmocka_unit_test(test_units),                cmocka_unit_test(test_dropins),
                cmocka_unit_test(test_default_search),      cmocka_unit_test(test_config_trust),
                cmocka_unit_test(test_util),                 cmocka_unit_test(test_json),
        };
        log_set_max_level(LOG_ERR);
        return cmocka_run_group_tests(tests, NULL, remove_text_tree);
}
