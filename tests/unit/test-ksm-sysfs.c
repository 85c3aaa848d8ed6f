/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "fake-tree.h"
#include "knobs.h"
#include "ksm-sysfs.h"
#include "ksmd.h"
#include "probe.h"
#include "root.h"
#include "util.h"

static void test_parse_values(void **state) {
        uint64_t v;
        assert_int_equal(ksm_parse_value(KSM_ADVISOR_MODE, "[none] scan-time", &v), 0);
        assert_int_equal(v, KSM_ADVISOR_NONE);
        assert_int_equal(ksm_parse_value(KSM_ADVISOR_MODE, "none [scan-time]", &v), 0);
        assert_int_equal(v, KSM_ADVISOR_SCAN_TIME);
        assert_int_equal(ksm_parse_value(KSM_ADVISOR_MODE, "none scan-time", &v), -EINVAL);
        assert_int_equal(ksm_parse_value(KSM_ADVISOR_MODE, "scan-time", &v), 0);
        assert_int_equal(v, KSM_ADVISOR_SCAN_TIME);
        assert_int_equal(ksm_parse_value(KSM_ADVISOR_MODE, "[future] none", &v), -EINVAL);
        /* the kernel's names, exactly: no other case, no unclosed bracket */
        assert_int_equal(ksm_parse_value(KSM_ADVISOR_MODE, "[None] scan-time", &v), -EINVAL);
        assert_int_equal(ksm_parse_value(KSM_ADVISOR_MODE, "Scan-time", &v), -EINVAL);
        assert_int_equal(ksm_parse_value(KSM_ADVISOR_MODE, "none [scan-time", &v), -EINVAL);
        assert_int_equal(ksm_parse_value(KSM_ADVISOR_MODE, "[a-word-far-too-long-for-a-mode]", &v), -EINVAL);
        char buf[16];
        assert_int_equal(ksm_format_value(KSM_ADVISOR_MODE, KSM_ADVISOR_SCAN_TIME, buf, sizeof buf), 0);
        assert_string_equal(buf, "scan-time");
        assert_int_equal(ksm_format_value(KSM_ADVISOR_MODE, 7, buf, sizeof buf), 0);
        assert_string_equal(buf, "none");
        assert_int_equal(ksm_parse_value(KSM_GENERAL_PROFIT, "-4096", &v), 0);
        assert_int_equal((int64_t) v, -4096);
        assert_int_equal(ksm_parse_value(KSM_PAGES_SHARING, "18446744073709551615", &v), 0);
        assert_int_equal(ksm_parse_value(KSM_PAGES_SHARING, "18446744073709551616", &v), -ERANGE);
        assert_int_equal(ksm_parse_value(KSM_PAGES_SHARING, "-1", &v), -EINVAL);
        assert_int_equal(ksm_parse_value(KSM_PAGES_SHARING, "12abc", &v), -EINVAL);
        assert_int_equal(ksm_key_from_string("pages_to_scan"), KSM_PAGES_TO_SCAN);
        assert_true(ksm_key_from_string("nonsense") < 0);
        assert_true(ksm_key_from_string("Pages_To_Scan") < 0);
        assert_true(ksm_key_from_string(NULL) < 0);
        assert_string_equal(ksm_key_to_string(KSM_ADVISOR_TARGET_SCAN_TIME), "advisor_target_scan_time");
        assert_null(ksm_key_to_string(_KSM_KEY_MAX));
        assert_null(ksm_key_to_string(_KSM_KEY_INVALID));
        assert_true(ksm_key_is_knob(KSM_RUN));
        assert_false(ksm_key_is_knob(KSM_PAGES_SHARING));
}

static void test_read_fake(void **state) {
        FakeTree t;
        Root *r = NULL;
        KsmState s;
        uint64_t v;

        fake_tree_init(&t);
        fake_tree_populate_minimal(&t);
        fake_write(&t, "sys/kernel/mm/ksm/pages_sharing", "6144\n");
        fake_write(&t, "sys/kernel/mm/ksm/pages_volatile", "garbage\n");
        fake_write(&t, "sys/kernel/mm/ksm/advisor_mode", "none [scan-time]\n");
        assert_int_equal(root_open(t.path, &r), 0);
        assert_int_equal(ksm_sysfs_read(r, &s), 0);
        assert_true(ksm_state_has(&s, KSM_PAGES_SHARING));
        assert_int_equal(s.value[KSM_PAGES_SHARING], 6144);
        assert_int_equal(s.value[KSM_ADVISOR_MODE], KSM_ADVISOR_SCAN_TIME);
        /* unparsable and absent files are "not supported", never errors */
        assert_false(ksm_state_has(&s, KSM_PAGES_VOLATILE));
        assert_false(ksm_state_has(&s, KSM_STABLE_NODE_DUPS));
        assert_int_equal(ksm_sysfs_read_one(r, KSM_STABLE_NODE_DUPS, &v), -EOPNOTSUPP);
        assert_int_equal(ksm_sysfs_write(r, KSM_STABLE_NODE_DUPS, 1), -EROFS);
        assert_int_equal(ksm_sysfs_write(r, KSM_ADVISOR_MAX_CPU, 1), -EOPNOTSUPP);
        assert_int_equal(ksm_sysfs_write(r, KSM_ADVISOR_MODE, KSM_ADVISOR_NONE), 0);
        assert_int_equal(ksm_sysfs_read_one(r, KSM_ADVISOR_MODE, &v), 0);
        assert_int_equal(v, KSM_ADVISOR_NONE);
        fake_write(&t, "sys/kernel/mm/ksm/advisor_mode", "[none scan-time\n");
        assert_int_equal(ksm_sysfs_read_one(r, KSM_ADVISOR_MODE, &v), -EINVAL);
        /* a read-only knob reports the kernel's errno */
        char path[512];
        snprintf(path, sizeof path, "%s/sys/kernel/mm/ksm/pages_to_scan", t.path);
        chmod(path, 0444);
        if (geteuid() != 0)
                assert_int_equal(ksm_sysfs_write(r, KSM_PAGES_TO_SCAN, 5), -EACCES);
        root_free(r);

        /* no KSM at all */
        fake_remove(&t, "sys/kernel/mm/ksm");
        assert_int_equal(root_open(t.path, &r), 0);
        assert_int_equal(ksm_sysfs_read(r, &s), -ENODEV);
        assert_int_equal(ksm_sysfs_write(r, KSM_RUN, 1), -ENODEV);
        root_free(r);
        fake_tree_done(&t);
}

static void test_root_layouts(void **state) {
        FakeTree t;
        Root *r = NULL;

        fake_tree_init(&t);
        fake_tree_populate_minimal(&t);
        assert_int_equal(root_open(t.path, &r), 0);
        assert_int_equal(r->cgroup_layout, CGROUP_LAYOUT_HYBRID);
        assert_true(r->cgroup2_fd >= 0);
        assert_null(r->tracefs_path);
        root_free(r);

        fake_write(&t, "proc/self/mounts", "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n"
                                           "tracefs /sys/kernel/tr\\040acing tracefs rw 0 0\n");
        fake_mkdir(&t, "sys/kernel/tr acing/events");
        assert_int_equal(root_open(t.path, &r), 0);
        assert_int_equal(r->cgroup_layout, CGROUP_LAYOUT_UNIFIED);
        assert_non_null(r->tracefs_path);
        assert_true(strstr(r->tracefs_path, "tr acing") != NULL);
        root_free(r);

        fake_write(&t, "proc/self/mounts", "garbage line\n\n");
        assert_int_equal(root_open(t.path, &r), 0);
        assert_int_equal(r->cgroup_layout, CGROUP_LAYOUT_NONE);
        assert_true(r->cgroup2_fd < 0);
        root_free(r);

        fake_remove(&t, "proc");
        assert_true(root_open(t.path, &r) < 0);
        fake_tree_done(&t);
}

/* A ptrace_read (the sandbox's helper) that counts its calls; the sampler
 * thread calls it. */
static int wchan_reads;
static int counting_ptrace_read(void *userdata, int pid, uint64_t start_time_ticks, const char *name, char *buf,
                                size_t size) {
        (void) userdata, (void) pid, (void) start_time_ticks;
        __atomic_add_fetch(&wchan_reads, 1, __ATOMIC_SEQ_CST);
        assert_string_equal(name, "wchan");
        strscpy(buf, size, "ksm_scan_thread");
        return (int) strlen(buf);
}

static void test_ksmd(void **state) {
        FakeTree t;
        Root *r = NULL;
        int pid = 0;
        KsmdSample s;

        assert_int_equal(ksmd_classify_wait('D', "ksm_scan_thread"), KSMD_BLOCKED_MMAP_LOCK);
        assert_int_equal(ksmd_classify_wait('D', "rwsem_down_read_slowpath"), KSMD_BLOCKED_MMAP_LOCK);
        assert_int_equal(ksmd_classify_wait('D', "__flush_work"), KSMD_BLOCKED_OTHER);
        assert_int_equal(ksmd_classify_wait('S', "ksm_scan_thread"), KSMD_SLEEPING);
        assert_int_equal(ksmd_classify_wait('R', ""), KSMD_RUNNING);

        fake_tree_init(&t);
        fake_tree_populate_minimal(&t);
        /* a user process called ksmd is not the kernel thread */
        fake_write(&t, "proc/5/stat", "5 (ksmd) S 1 5 5 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 1 1 1 1");
        assert_int_equal(root_open(t.path, &r), 0);
        assert_int_equal(ksmd_find(r, &pid), -ESRCH);
        fake_write(&t, "proc/37/stat", "37 (ksmd) D 2 0 0 0 -1 2097216 0 0 0 0 0 0 0 0 25 5 1 0 24 0 0 1");
        fake_write(&t, "proc/37/wchan", "ksm_scan_thread");
        fake_write(&t, "proc/37/schedstat", "123456789 1000 7\n");
        assert_int_equal(ksmd_find(r, &pid), 0);
        assert_int_equal(pid, 37);
        assert_int_equal(ksmd_read_sample(r, pid, &s), 0);
        assert_int_equal(s.state, 'D');
        assert_string_equal(s.wchan, "ksm_scan_thread");
        assert_int_equal(s.cpu_ns, 123456789);

        /* the sampler counts what it sees */
        KsmdSampler *sm = NULL;
        KsmdWaitCounts c;
        assert_int_equal(ksmd_sampler_start(r, 37, 1000, &sm), 0);
        ksmd_sampler_set_paused(sm, false);
        usleep(100000);
        ksmd_sampler_set_paused(sm, true);
        ksmd_sampler_take(sm, &c);
        assert_true(c.samples > 5);
        assert_int_equal(c.by_wait[KSMD_BLOCKED_MMAP_LOCK], c.samples);
        ksmd_sampler_take(sm, &c);
        assert_int_equal(c.samples, 0);
        ksmd_sampler_stop(sm);

        /* the wait channel is read for D samples only: in the sandbox each
         * read is a round trip to the helper */
        r->ptrace_read = counting_ptrace_read;
        fake_write(&t, "proc/37/stat", "37 (ksmd) R 2 0 0 0 -1 2097216 0 0 0 0 0 0 0 0 25 5 1 0 24 0 0 1");
        assert_int_equal(ksmd_sampler_start(r, 37, 1000, &sm), 0);
        ksmd_sampler_set_paused(sm, false);
        usleep(100000);
        ksmd_sampler_set_paused(sm, true);
        ksmd_sampler_take(sm, &c);
        ksmd_sampler_stop(sm);
        assert_true(c.samples > 5);
        assert_int_equal(c.by_wait[KSMD_RUNNING], c.samples);
        assert_int_equal(__atomic_load_n(&wchan_reads, __ATOMIC_SEQ_CST), 0);
        fake_write(&t, "proc/37/stat", "37 (ksmd) D 2 0 0 0 -1 2097216 0 0 0 0 0 0 0 0 25 5 1 0 24 0 0 1");
        assert_int_equal(ksmd_sampler_start(r, 37, 1000, &sm), 0);
        ksmd_sampler_set_paused(sm, false);
        usleep(100000);
        ksmd_sampler_set_paused(sm, true);
        ksmd_sampler_take(sm, &c);
        ksmd_sampler_stop(sm);
        assert_true(c.samples > 5);
        assert_int_equal(c.by_wait[KSMD_BLOCKED_MMAP_LOCK], c.samples);
        assert_true(__atomic_load_n(&wchan_reads, __ATOMIC_SEQ_CST) >= (int) c.samples);
        r->ptrace_read = NULL;

        /* a ksmd without wchan: the start fails, closes what it opened and
         * leaves *ret alone (the sanitizer build checks for leaks) */
        fake_remove(&t, "proc/37/wchan");
        sm = NULL;
        assert_int_equal(ksmd_sampler_start(r, 37, 1000, &sm), -ENOENT);
        assert_null(sm);
        root_free(r);
        fake_tree_done(&t);
}

static void test_knob_journal(void **state) {
        FakeTree t;
        Root *r = NULL;
        KnobJournal j;
        KsmState s;
        char path[512], *text;
        uint64_t v;

        fake_tree_init(&t);
        fake_tree_populate_minimal(&t);
        snprintf(path, sizeof path, "%s/saved-knobs", t.path);
        assert_int_equal(root_open(t.path, &r), 0);
        assert_int_equal(knob_journal_open(&j, path), 0);
        assert_int_equal(ksm_sysfs_read(r, &s), 0);

        assert_int_equal(knob_set(r, &j, &s, KSM_PAGES_TO_SCAN, 100, false), 0); /* unchanged */
        assert_int_equal(knob_set(r, &j, &s, KSM_PAGES_TO_SCAN, 5000, true), 1);  /* dry run */
        assert_int_equal(j.saved_mask, 0);
        assert_int_equal(knob_set(r, &j, &s, KSM_PAGES_TO_SCAN, 5000, false), 1);
        assert_int_equal(knob_set(r, &j, &s, KSM_RUN, 1, false), 1);
        assert_int_equal(knob_set(r, &j, &s, KSM_PAGES_SHARING, 1, false), -EROFS);
        assert_int_equal(ksm_sysfs_read_one(r, KSM_PAGES_TO_SCAN, &v), 0);
        assert_int_equal(v, 5000);

        /* persisted before the write: a second instance would see originals */
        KnobJournal j2;
        assert_int_equal(knob_journal_open(&j2, path), 2);
        assert_int_equal(j2.original[KSM_PAGES_TO_SCAN], 100);
        assert_int_equal(j2.original[KSM_RUN], 0);
        text = knob_journal_format(&j2);
        assert_string_equal(text, "run=0\npages_to_scan=100\n");
        free(text);
        knob_journal_done(&j2);

        /* a second change keeps the first original */
        s.value[KSM_PAGES_TO_SCAN] = 5000;
        assert_int_equal(knob_set(r, &j, &s, KSM_PAGES_TO_SCAN, 7000, false), 1);
        assert_int_equal(j.original[KSM_PAGES_TO_SCAN], 100);

        assert_int_equal(knob_journal_restore(r, &j), 0);
        assert_int_equal(ksm_sysfs_read_one(r, KSM_PAGES_TO_SCAN, &v), 0);
        assert_int_equal(v, 100);
        assert_int_equal(ksm_sysfs_read_one(r, KSM_RUN, &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(access(path, F_OK), -1); /* removed once all restored */

        /* run=2 is never restored: it would unmerge the whole host */
        KnobJournal j3 = {};
        assert_int_equal(knob_journal_parse(&j3, "run=2\nbogus=1\npages_to_scan=x\nadvisor_mode=scan-time\n"), 2);
        assert_int_equal(j3.original[KSM_ADVISOR_MODE], KSM_ADVISOR_SCAN_TIME);
        fake_write(&t, "sys/kernel/mm/ksm/run", "1");
        assert_int_equal(knob_journal_restore(r, &j3), 0);
        assert_int_equal(ksm_sysfs_read_one(r, KSM_RUN, &v), 0);
        assert_int_equal(v, 0);

        knob_journal_done(&j);
        root_free(r);
        fake_tree_done(&t);
}

/* A journal that cannot be written (its directory gone, as a full /run
 * refuses it): the knob is left as it is, and changed once it can be. */
static void test_knob_journal_unsaved(void **state) {
        FakeTree t;
        Root *r = NULL;
        KnobJournal j;
        KsmState s;
        char dir[512], path[600];
        uint64_t v;

        fake_tree_init(&t);
        fake_tree_populate_minimal(&t);
        snprintf(dir, sizeof dir, "%s/run", t.path);
        snprintf(path, sizeof path, "%s/saved-knobs", dir);
        assert_int_equal(root_open(t.path, &r), 0);
        assert_int_equal(knob_journal_open(&j, path), 0);
        assert_int_equal(ksm_sysfs_read(r, &s), 0);

        assert_int_equal(knob_set(r, &j, &s, KSM_PAGES_TO_SCAN, 5000, false), 0);
        assert_int_equal(j.unsaved_error, -ENOENT);
        assert_int_equal(j.saved_mask, 0);
        assert_int_equal(ksm_sysfs_read_one(r, KSM_PAGES_TO_SCAN, &v), 0);
        assert_int_equal(v, 100); /* not written */
        assert_int_equal(knob_set(r, &j, &s, KSM_PAGES_TO_SCAN, 5000, false), 0); /* tried again, said once */

        assert_int_equal(mkdir(dir, 0755), 0);
        assert_int_equal(knob_set(r, &j, &s, KSM_PAGES_TO_SCAN, 5000, false), 1);
        assert_int_equal(j.unsaved_error, 0);
        assert_int_equal(ksm_sysfs_read_one(r, KSM_PAGES_TO_SCAN, &v), 0);
        assert_int_equal(v, 5000);
        KnobJournal j2;
        assert_int_equal(knob_journal_open(&j2, path), 1);
        assert_int_equal(j2.original[KSM_PAGES_TO_SCAN], 100);
        knob_journal_done(&j2);

        /* restoring removes the file */
        assert_int_equal(knob_journal_restore(r, &j), 0);
        assert_int_equal(rmdir(dir), 0);
        knob_journal_done(&j);
        root_free(r);
        fake_tree_done(&t);
}

static uint64_t bits(const KsmKey *k, size_t n) {
        uint64_t m = 0;
        for (size_t i = 0; i < n; i++)
                m |= UINT64_C(1) << k[i];
        return m;
}

/* One order for the tuned values and the restore: the advisor off before
 * pages_to_scan, on only after its parameters, run=1 last, run=0 first. */
static void test_knob_write_order(void **state) {
        uint64_t value[_KSM_KEY_MAX] = {};
        KsmKey order[_KSM_KEY_MAX];

        const KsmKey off[] = { KSM_ADVISOR_MODE, KSM_PAGES_TO_SCAN, KSM_SLEEP_MILLISECS, KSM_MAX_PAGE_SHARING,
                               KSM_RUN };
        value[KSM_ADVISOR_MODE] = KSM_ADVISOR_NONE;
        value[KSM_RUN] = 1;
        /* a counter in the mask is no knob to write */
        uint64_t mask = bits(off, ELEMENTSOF(off)) | UINT64_C(1) << KSM_PAGES_SHARING;
        assert_int_equal(knob_write_order(value, mask, order), ELEMENTSOF(off));
        assert_memory_equal(order, off, sizeof off);

        const KsmKey on[] = { KSM_PAGES_TO_SCAN, KSM_ADVISOR_MAX_CPU, KSM_ADVISOR_MODE, KSM_RUN };
        value[KSM_ADVISOR_MODE] = KSM_ADVISOR_SCAN_TIME;
        assert_int_equal(knob_write_order(value, bits(on, ELEMENTSOF(on)), order), ELEMENTSOF(on));
        assert_memory_equal(order, on, sizeof on);

        /* every knob has a place, once */
        uint64_t all = 0;
        for (int k = _KSM_FIRST_KNOB; k < _KSM_KEY_MAX; k++)
                all |= UINT64_C(1) << k;
        size_t n = knob_write_order(value, all, order);
        assert_int_equal(n, _KSM_KEY_MAX - _KSM_FIRST_KNOB);
        assert_int_equal(bits(order, n), all);
        assert_int_equal(order[n - 1], KSM_RUN);

        /* stopping: ksmd stops before anything else changes (switching the
         * advisor on resets pages_to_scan, which a scan in between moves) */
        const KsmKey stop[] = { KSM_RUN, KSM_PAGES_TO_SCAN, KSM_ADVISOR_MODE };
        value[KSM_RUN] = 0;
        assert_int_equal(knob_write_order(value, bits(stop, ELEMENTSOF(stop)), order), ELEMENTSOF(stop));
        assert_memory_equal(order, stop, sizeof stop);

        assert_int_equal(knob_write_order(value, 0, order), 0);
}

/* Found by fuzz-knob-journal: a repeated key counted twice ("Found 2 knob
 * value(s)" for one knob), and a numeric advisor_mode was stored as a number
 * that formatted back as "none". */
static void test_knob_journal_odd_lines(void **state) {
        KnobJournal j = {};
        char *text;

        assert_int_equal(knob_journal_parse(&j, "run=0\npages_to_scan=100\nrun=1\npages_to_scan=100\n"), 2);
        assert_int_equal(j.original[KSM_RUN], 1);
        assert_int_equal(knob_journal_parse(&j, "advisor_mode=5\nadvisor_mode=1\n"), 0);
        assert_false(j.saved_mask & (UINT64_C(1) << KSM_ADVISOR_MODE));
        text = knob_journal_format(&j);
        assert_string_equal(text, "run=1\npages_to_scan=100\n");
        free(text);
        knob_journal_done(&j);
}

static void test_probe_fake(void **state) {
        FakeTree t;
        Root *r = NULL;
        Probe p;

        fake_tree_init(&t);
        fake_tree_populate_minimal(&t);
        fake_write(&t, "sys/kernel/process_ksm/process_ksm_enable", "451\n");
        fake_write(&t, "sys/kernel/process_ksm/process_ksm_disable", "452\n");
        fake_write(&t, "sys/kernel/process_ksm/process_ksm_status", "453\n");
        fake_write(&t, "proc/pressure/memory", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
        assert_int_equal(root_open(t.path, &r), 0);
        assert_int_equal(probe_run(r, &p), 0);
        assert_true(p.ksm);
        assert_true(p.advisor);
        assert_true(p.smart_scan);
        assert_false(p.ksm_zero_pages);
        assert_false(p.ksmd_thread);
        assert_true(p.process_ksm_syscall);
        assert_int_equal(p.process_ksm_enable_nr, 451);
        assert_true(p.psi_memory);
        assert_false(p.tracefs);
        assert_int_equal(p.cgroup_layout, CGROUP_LAYOUT_HYBRID);
        root_free(r);

        fake_remove(&t, "sys/kernel/mm/ksm");
        fake_remove(&t, "sys/kernel/process_ksm");
        assert_int_equal(root_open(t.path, &r), 0);
        assert_int_equal(probe_run(r, &p), 0);
        assert_false(p.ksm);
        assert_false(p.advisor);
        assert_false(p.process_ksm_syscall);
        root_free(r);
        fake_tree_done(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_values), cmocka_unit_test(test_read_fake),
                cmocka_unit_test(test_root_layouts), cmocka_unit_test(test_ksmd),
                cmocka_unit_test(test_knob_journal),
                cmocka_unit_test(test_knob_journal_unsaved), cmocka_unit_test(test_knob_journal_odd_lines),
                cmocka_unit_test(test_knob_write_order), cmocka_unit_test(test_probe_fake),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
