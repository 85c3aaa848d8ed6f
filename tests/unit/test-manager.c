/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The manager on a fake proc and sys tree, driven one manager_tick() at a
 * time: set up by manager_start_stages(), so without the tick timer, the
 * bus or the merge actuator (which would act on real pids). What a tick
 * writes into the fake KSM knobs and the knob journal, what the
 * administrator's verbs do to the next tick, what the process table and the
 * decision log hold, and what the metrics file says. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake-tree.h"
#include "fileio.h"
#include "manager.h"
#include "tuner.h"
#include "util.h"

typedef struct Fixture {
        FakeTree tree;
        Manager *m;
} Fixture;

/* A knob's file in the fake sysfs, without its newline ("" when absent). */
static const char *knob(Fixture *f, const char *name) {
        static char buf[256];
        _cleanup_free_ char *text = NULL;
        char path[512];

        snprintf(path, sizeof path, "%s/sys/kernel/mm/ksm/%s", f->tree.path, name);
        if (read_full_file_at(AT_FDCWD, path, sizeof buf - 1, &text, NULL) < 0)
                return "";
        snprintf(buf, sizeof buf, "%s", text);
        buf[strcspn(buf, "\n")] = 0;
        return buf;
}

static void set_knob(Fixture *f, const char *name, const char *value) {
        char rel[128];
        snprintf(rel, sizeof rel, "sys/kernel/mm/ksm/%s", name);
        fake_write(&f->tree, rel, value);
}

static void write_process(Fixture *f, int pid, const char *comm) {
        char rel[64], buf[1024];

        snprintf(rel, sizeof rel, "proc/%d/stat", pid);
        snprintf(buf, sizeof buf,
                 "%d (%s) S 1 %d %d 0 -1 4194560 100 0 0 0 12 34 0 0 20 0 3 0 1000 1048576 256 "
                 "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
                 pid, comm, pid, pid);
        fake_write(&f->tree, rel, buf);
        snprintf(rel, sizeof rel, "proc/%d/status", pid);
        snprintf(buf, sizeof buf,
                 "Name:\t%s\nTgid:\t%d\nPPid:\t1\nTracerPid:\t0\nUid:\t0\t0\t0\t0\n"
                 "Threads:\t3\nVmRSS:\t 900000 kB\nRssAnon:\t 819200 kB\n",
                 comm, pid);
        fake_write(&f->tree, rel, buf);
        snprintf(rel, sizeof rel, "proc/%d/cgroup", pid);
        fake_write(&f->tree, rel, "0::/system.slice/app.service\n");
        snprintf(rel, sizeof rel, "proc/%d/ksm_merging_pages", pid);
        fake_write(&f->tree, rel, "0\n");
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof *f);
        char conf[4096], path[512];

        assert_non_null(f);
        fake_tree_init(&f->tree);
        fake_tree_populate_minimal(&f->tree);
        fake_mkdir(&f->tree, "run");
        fake_write(&f->tree, "policy.d/10-secrets.policy", "[Match]\nComm=secret-agent\n[Merge]\nMode=never\n");
        fake_write(&f->tree, "policy.d/50-app.policy", "[Match]\nComm=app\n[Merge]\nMode=always\nMethod=madvise\n");
        write_process(f, 4242, "app");
        write_process(f, 4343, "secret-agent");
        snprintf(conf, sizeof conf,
                 "[Daemon]\nRuntimeDirectory=%1$s/run\nPolicyDirectories=%1$s/policy.d\n"
                 "[Ksm]\nSmartScan=no\nMaxPageSharing=512\n"
                 "[Tuning]\nTracepoints=no\n"
                 "[Metrics]\nTextfilePath=%1$s/metrics.prom\n",
                 f->tree.path);
        fake_write(&f->tree, "ksmtuned2.conf", conf);
        snprintf(path, sizeof path, "%s/ksmtuned2.conf", f->tree.path);

        ManagerOptions o = { .config_path = path, .root_prefix = f->tree.path };
        assert_int_equal(manager_new(&o, &f->m), 0);
        assert_int_equal(manager_start_stages(f->m), 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        manager_free(f->m);
        fake_tree_done(&f->tree);
        free(f);
        return 0;
}

/* One tick, then what the loop would run after it before the next: the
 * slices of the polling scan the tick began (idle-priority defer sources)
 * and ksm_stat results that are in already. No timer is armed, so nothing
 * else fires. */
static int tick(Fixture *f) {
        int r = manager_tick(f->m);
        while (sd_event_run(f->m->event, 0) > 0)
                ;
        return r;
}

static bool metrics_say(Fixture *f, const char *line) {
        char path[512];
        _cleanup_free_ char *text = NULL;
        snprintf(path, sizeof path, "%s/metrics.prom", f->tree.path);
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 1 << 20, &text, NULL), 0);
        for (char *l = text, *next; l && *l; l = next) {
                next = strchr(l, '\n');
                if (next)
                        *next++ = 0;
                if (streq(l, line))
                        return true;
        }
        return false;
}

/* Whether the decision log holds a decision of kind whose text starts so. */
static bool decided(Fixture *f, const char *kind, const char *prefix) {
        const Decision *d;
        for (unsigned i = 0; (d = decision_log_get(&f->m->decisions, i)); i++)
                if (streq(d->kind, kind) && strncmp(d->text, prefix, strlen(prefix)) == 0)
                        return true;
        return false;
}

static const char *newest_decision(Fixture *f) {
        const Decision *d = decision_log_get(&f->m->decisions, 0);
        return d ? d->text : "";
}

static void test_tick_writes_knobs_and_restores(void **state) {
        Fixture *f = *state;
        Manager *m = f->m;

        assert_string_equal(knob(f, "max_page_sharing"), "256");
        assert_int_equal(tick(f), 0);
        assert_int_equal(m->tick_count, 1);

        /* [Ksm] fixed values, and the controller's knobs as its snapshot says */
        assert_string_equal(knob(f, "max_page_sharing"), "512");
        assert_string_equal(knob(f, "smart_scan"), "0");
        assert_string_equal(knob(f, "run"), "1");
        static const KsmKey tuned[] = { KSM_RUN, KSM_PAGES_TO_SCAN, KSM_SLEEP_MILLISECS };
        for (size_t i = 0; i < ELEMENTSOF(tuned); i++)
                assert_int_equal(strtoull(knob(f, ksm_key_to_string(tuned[i])), NULL, 10),
                                 m->snapshot.ksm.value[tuned[i]]);

        /* the journal has each first original, persisted before the write */
        KnobJournal j;
        char path[512];
        snprintf(path, sizeof path, "%s/run/saved-knobs", f->tree.path);
        assert_true(knob_journal_open(&j, path) >= 2);
        assert_int_equal(j.original[KSM_MAX_PAGE_SHARING], 256);
        assert_int_equal(j.original[KSM_SMART_SCAN], 1);
        assert_int_equal(j.original[KSM_RUN], 0);
        knob_journal_done(&j);

        assert_true(metrics_say(f, "ksmtuned2_ticks_total 1"));
        assert_true(metrics_say(f, "ksmtuned2_ksm_run 1"));
        assert_true(metrics_say(f, "ksmtuned2_paused 0"));

        /* a second tick with nothing new writes the same */
        assert_int_equal(tick(f), 0);
        assert_string_equal(knob(f, "max_page_sharing"), "512");
        assert_true(metrics_say(f, "ksmtuned2_ticks_total 2"));

        /* on the way out every knob is as it was, and the journal is gone */
        assert_int_equal(manager_restore(m), 0);
        assert_string_equal(knob(f, "max_page_sharing"), "256");
        assert_string_equal(knob(f, "smart_scan"), "1");
        assert_string_equal(knob(f, "run"), "0");
        assert_string_equal(knob(f, "pages_to_scan"), "100");
        assert_string_equal(knob(f, "sleep_millisecs"), "20");
        assert_int_equal(access(path, F_OK), -1);
}

static void test_pause_resume_mode(void **state) {
        Fixture *f = *state;
        Manager *m = f->m;

        assert_int_equal(tick(f), 0);
        assert_string_equal(knob(f, "smart_scan"), "0");

        /* paused: hands off, even for a knob set by hand meanwhile */
        assert_int_equal(manager_set_paused(m, true, "by the test"), 1);
        assert_string_equal(newest_decision(f),
                            "paused: no knob or process is changed until resumed (requested by the test)");
        uint64_t total = m->decisions.total;
        assert_int_equal(manager_set_paused(m, true, "by the test"), 0);
        assert_int_equal(m->decisions.total, total); /* nothing to record */
        set_knob(f, "smart_scan", "1");
        set_knob(f, "pages_to_scan", "77");
        assert_int_equal(tick(f), 0);
        assert_string_equal(knob(f, "smart_scan"), "1");
        assert_string_equal(knob(f, "pages_to_scan"), "77");
        /* measuring goes on */
        assert_int_equal(m->snapshot.ksm.value[KSM_PAGES_TO_SCAN], 77);
        assert_true(metrics_say(f, "ksmtuned2_paused 1"));

        assert_int_equal(manager_set_paused(m, false, "by the test"), 1);
        assert_string_equal(newest_decision(f), "resumed (requested by the test)");
        assert_int_equal(tick(f), 0);
        assert_string_equal(knob(f, "smart_scan"), "0");
        assert_true(metrics_say(f, "ksmtuned2_paused 0"));

        /* observe: decided and said, not written */
        assert_int_equal(manager_set_mode(m, MANAGER_MODE_OBSERVE, "by the test"), 1);
        assert_string_equal(newest_decision(f), "mode observe (was auto) (requested by the test)");
        assert_true(manager_dry_run(m));
        assert_false(manager_may_act_on_processes(m));
        set_knob(f, "smart_scan", "1");
        assert_int_equal(tick(f), 0);
        assert_string_equal(knob(f, "smart_scan"), "1");
        assert_true(metrics_say(f, "ksmtuned2_dry_run 1"));
        assert_true(metrics_say(f, "ksmtuned2_mode{mode=\"observe\"} 1"));
        assert_true(metrics_say(f, "ksmtuned2_mode{mode=\"auto\"} 0"));

        /* tune-only writes knobs again, but still no process action */
        assert_int_equal(manager_set_mode(m, MANAGER_MODE_TUNE_ONLY, "by the test"), 1);
        assert_false(manager_dry_run(m));
        assert_false(manager_may_act_on_processes(m));
        assert_int_equal(tick(f), 0);
        assert_string_equal(knob(f, "smart_scan"), "0");

        assert_int_equal(manager_set_mode(m, MANAGER_MODE_AUTO, "by the test"), 1);
        assert_true(manager_may_act_on_processes(m));
        assert_int_equal(manager_set_mode(m, MANAGER_MODE_AUTO, "by the test"), 0);
        assert_int_equal(manager_set_mode(m, _MANAGER_MODE_MAX, "by the test"), -EINVAL);
        assert_int_equal(m->mode, MANAGER_MODE_AUTO);
        /* no timer without manager_startup(): nothing to bring forward */
        manager_request_tick(m);
}

static void test_tick_process_table(void **state) {
        Fixture *f = *state;
        Manager *m = f->m;
        const ProcessTable *t;
        const Process *p;

        assert_int_equal(tick(f), 0);
        t = manager_processes(m);
        assert_non_null(t);

        p = process_table_get(t, 4242);
        assert_non_null(p);
        assert_string_equal(p->comm, "app");
        assert_string_equal(p->unit, "app.service");
        assert_true(p->have_verdict);
        assert_int_equal(p->verdict.action, VERDICT_MERGE);
        assert_true(p->verdict.always);
        assert_int_equal(p->verdict.method, MERGE_METHOD_MADVISE);

        p = process_table_get(t, 4343);
        assert_non_null(p);
        assert_true(p->have_verdict);
        assert_int_equal(p->verdict.action, VERDICT_DONT_MERGE);
        assert_int_equal(manager_managed_processes(m), 2);
        /* verdicts are decisions too, for status and the bus */
        assert_true(decided(f, "policy", "pid 4343 (secret-agent): dont-merge by "));
        assert_true(decided(f, "policy", "pid 4242 (app): merge by "));
        assert_true(metrics_say(f, "ksmtuned2_managed_processes 2"));

        /* one exits, one with a hostile name starts: the next tick knows */
        fake_remove(&f->tree, "proc/4343");
        write_process(f, 4444, "app) S 1 (x");
        assert_int_equal(tick(f), 0);
        assert_null(process_table_get(t, 4343));
        p = process_table_get(t, 4444);
        assert_non_null(p);
        assert_string_equal(p->comm, "app) S 1 (x");
        assert_true(p->have_verdict);
        assert_int_equal(p->verdict.action, VERDICT_LEAVE_ALONE);
        assert_int_equal(manager_managed_processes(m), 1);
}

/* Every tick, paused ones too, leaves its figures in the history, the
 * knobs as the tick left them. */
static void test_tick_history(void **state) {
        Fixture *f = *state;
        Manager *m = f->m;
        HistorySample s;

        assert_int_equal(history_size(&m->history), 0);
        assert_int_equal(tick(f), 0);
        assert_int_equal(manager_set_paused(m, true, "by the test"), 1);
        set_knob(f, "pages_to_scan", "77");
        assert_int_equal(tick(f), 0);
        assert_int_equal(history_size(&m->history), 2);

        assert_int_equal(history_get(&m->history, 0, &s), 0);
        assert_int_equal(s.ticks, 1);
        assert_int_equal(s.duration_usec, 0); /* nothing before the first */
        assert_int_equal(s.managed_processes, 2);
        assert_int_equal(history_get(&m->history, 1, &s), 0);
        assert_int_equal(s.monotonic_usec, m->snapshot.time_usec);
        assert_int_equal(s.duration_usec, m->snapshot.time_usec - m->previous.time_usec);
        assert_int_equal(s.pages_to_scan, 77);
        assert_int_equal(s.phase, tuner_controller(m->tuner)->mode);
        assert_int_equal(s.saved_bytes, snapshot_saved_bytes(&m->snapshot, page_size()));
        assert_int_equal(history_get(&m->history, 2, &s), -ENOENT);
}

/* Mode= sets the mode at start and on every reload; a SetMode in between
 * lasts until the reload; a rejected file changes nothing. */
static void test_mode_from_config(void **state) {
        Fixture *f = *state;
        Manager *m = f->m;
        char path[512], conf[4096];
        _cleanup_free_ char *good = NULL;

        snprintf(path, sizeof path, "%s/ksmtuned2.conf", f->tree.path);
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 1 << 20, &good, NULL), 0);
        assert_int_equal(m->mode, MANAGER_MODE_AUTO);

        snprintf(conf, sizeof conf, "%s[Daemon]\nMode=observe\n", good);
        fake_write(&f->tree, "ksmtuned2.conf", conf);
        assert_int_equal(manager_reload(m), 0);
        assert_int_equal(m->mode, MANAGER_MODE_OBSERVE);
        assert_string_equal(newest_decision(f),
                            "mode observe (was auto) (requested by Mode= of the reloaded configuration)");
        assert_true(manager_dry_run(m));

        assert_int_equal(manager_set_mode(m, MANAGER_MODE_AUTO, "over the bus by uid 0"), 1);
        assert_int_equal(manager_reload(m), 0);
        assert_int_equal(m->mode, MANAGER_MODE_OBSERVE);

        /* a file that cannot be parsed keeps the mode and the rest */
        assert_int_equal(manager_set_mode(m, MANAGER_MODE_TUNE_ONLY, "over the bus by uid 0"), 1);
        snprintf(conf, sizeof conf, "%s[Daemon]\nMode: auto\n", good);
        fake_write(&f->tree, "ksmtuned2.conf", conf);
        assert_int_equal(manager_reload(m), -EBADMSG);
        assert_int_equal(m->mode, MANAGER_MODE_TUNE_ONLY);
        assert_int_equal(m->config.max_page_sharing, 512);
        assert_int_equal(m->config.mode, MANAGER_MODE_OBSERVE);

        /* and a new manager starts in the file's mode */
        snprintf(conf, sizeof conf, "%s[Daemon]\nMode=Tune-Only\n", good);
        fake_write(&f->tree, "ksmtuned2.conf", conf);
        Manager *m2 = NULL;
        ManagerOptions o = { .config_path = path, .root_prefix = f->tree.path };
        assert_int_equal(manager_new(&o, &m2), 0);
        assert_int_equal(m2->mode, MANAGER_MODE_TUNE_ONLY);
        manager_free(m2);
}

static void test_no_ksm(void **state) {
        FakeTree t;
        Manager *m = NULL;

        fake_tree_init(&t);
        fake_tree_populate_minimal(&t);
        fake_remove(&t, "sys/kernel/mm/ksm");
        ManagerOptions o = { .config_path = "/dev/null", .root_prefix = t.path };
        assert_int_equal(manager_new(&o, &m), 0);
        assert_int_equal(manager_start_stages(m), -ENODEV);
        manager_free(m);
        fake_tree_done(&t);
}

/* A task of /proc: its stat (start time in ticks since boot) and status. */
static void write_task(FakeTree *t, int tid, int tgid, unsigned long long start_ticks) {
        char rel[64], buf[512];
        fake_write_stat(t, tid, "worker", 'S', 0, 1, start_ticks);
        snprintf(rel, sizeof rel, "proc/%d/status", tid);
        snprintf(buf, sizeof buf, "Name:\tworker\nTgid:\t%d\nPid:\t%d\nUid:\t0\t0\t0\t0\n", tgid, tid);
        fake_write(t, rel, buf);
}

static LockHolder *holder(ContentionWindow *w, int hint, const int *tids, const uint64_t *at_sec, unsigned n) {
        LockHolder *h = &w->holders[w->n_holders++];
        *h = (LockHolder) { .mm = 0x1000 + w->n_holders, .tgid = hint, .ksmd_waits = 1 };
        for (unsigned i = 0; i < n; i++) {
                h->tids[i] = tids[i];
                h->tid_nsec[i] = at_sec[i] * NSEC_PER_SEC;
        }
        h->n_tids = n;
        return h;
}

/* Whom a window blames for ksmd's waits: a writer task still running tells
 * its process, whatever the trace's hint said; a task number reused since
 * its event vouches for nobody; the hint stands only where it names the
 * main thread of a process that is gone. CLOCK_MONOTONIC 1000 s is
 * CLOCK_BOOTTIME 1005 s here (5 s suspended). */
static void test_confirm_holders(void **state) {
        FakeTree t;
        _cleanup_(root_freep) Root *root = NULL;
        long hz = sysconf(_SC_CLK_TCK);
        unsigned long long per_sec = (unsigned long long) (hz > 0 ? hz : 100);
        const uint64_t mono_now = 1000 * USEC_PER_SEC, boot_now = 1005 * USEC_PER_SEC, start = 980 * USEC_PER_SEC;
        ContentionWindow w = {};

        fake_tree_init(&t);
        fake_tree_populate_minimal(&t);
        /* 813 gone; 814 a thread of 820 since boot 990 s */
        write_task(&t, 814, 820, 990 * per_sec);
        /* 830: a task started at boot 996 s, after its number's event at
         * mono 990 s (boot 995 s) */
        write_task(&t, 830, 830, 996 * per_sec);
        /* 850: a thread of 851 started inside the window (boot 992 s),
         * before its own first write lock (mono 988 s = boot 993 s) */
        write_task(&t, 850, 851, 992 * per_sec);
        assert_int_equal(root_open(t.path, &root), 0);

        LockHolder *a = holder(&w, 812, (int[]) { 813, 814 }, (uint64_t[]) { 985, 986 }, 2);
        LockHolder *b = holder(&w, 830, (int[]) { 830 }, (uint64_t[]) { 990 }, 1);
        LockHolder *c = holder(&w, 840, (int[]) { 840 }, (uint64_t[]) { 990 }, 1);
        LockHolder *d = holder(&w, 845, (int[]) { 846 }, (uint64_t[]) { 990 }, 1);
        LockHolder *e = holder(&w, 851, (int[]) { 850 }, (uint64_t[]) { 988 }, 1);
        /* ksmd never met it: not read, whatever its tasks */
        LockHolder *f = holder(&w, 830, (int[]) { 830 }, (uint64_t[]) { 990 }, 1);
        f->ksmd_waits = 0;
        /* an event time outside the window (another trace clock): the
         * window's start stands in, and 850, started after it, reads as
         * reused */
        LockHolder *g = holder(&w, 851, (int[]) { 850 }, (uint64_t[]) { 5 }, 1);

        tuner_confirm_holders(&w, root, start, mono_now, boot_now);
        assert_int_equal(a->tgid, 820);  /* the live writer's process, not the hint */
        assert_int_equal(b->tgid, -1);   /* reused since: blamed for nothing */
        assert_int_equal(c->tgid, 840);  /* a gone main thread: the hint stands */
        assert_int_equal(d->tgid, -1);   /* a gone thread of another number: nobody */
        assert_int_equal(e->tgid, 851);  /* started in the window, before its event */
        assert_int_equal(f->tgid, 830);
        assert_int_equal(g->tgid, -1);
        fake_tree_done(&t);
}

int main(void) {
        /* Not a service: READY= and STATUS= must not reach a supervisor. */
        unsetenv("NOTIFY_SOCKET");
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_confirm_holders),
                cmocka_unit_test_setup_teardown(test_tick_writes_knobs_and_restores, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pause_resume_mode, setup, teardown),
                cmocka_unit_test_setup_teardown(test_tick_process_table, setup, teardown),
                cmocka_unit_test_setup_teardown(test_tick_history, setup, teardown),
                cmocka_unit_test_setup_teardown(test_mode_from_config, setup, teardown),
                cmocka_unit_test(test_no_ksm),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
