/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the manager lets through to the merge actuator: every reason
 * manager_merge_policy_allows() refuses an action, the narrowing of
 * Method=any to the policy's method, and manager_merge_select() telling
 * discovery's actions from the controller's. On a hand-built process table,
 * without discovery, a worker or a Manager. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "manager-merge.h"
#include "process.h"
#include "util.h"

#define START 4711

static Process *add(ProcessTable *t, int pid, VerdictAction action, MergeMethod method, bool always) {
        Process *p;
        assert_int_equal(process_table_ensure(t, pid, &p, NULL), 0);
        p->start_time_ticks = START;
        p->have_verdict = true;
        p->verdict = (Verdict) { .action = action, .method = method, .always = always };
        strscpy(p->comm, sizeof p->comm, "app");
        return p;
}

static ProcessAction action(int pid, MergeAction what, MergeMethod method) {
        ProcessAction a = { .pid = pid, .start_time_ticks = START, .action = what, .method = method };
        strscpy(a.reason, sizeof a.reason, "test");
        return a;
}

/* Neither discovery's nor the controller's action passes. */
static void assert_refused_both(const ProcessTable *t, ProcessAction a) {
        ProcessAction x = a;
        assert_false(manager_merge_policy_allows(t, &x, false));
        assert_int_equal(x.method, a.method);
        x = a;
        assert_false(manager_merge_policy_allows(t, &x, true));
        assert_int_equal(x.method, a.method); /* a refusal narrows nothing */
}

static void test_not_classified(void **state) {
        _cleanup_(process_table_freep) ProcessTable *t = NULL;
        assert_int_equal(process_table_new(&t), 0);

        /* no table yet (before discovery started), no such pid */
        assert_refused_both(NULL, action(10, MERGE_ACTION_ENABLE, MERGE_METHOD_ANY));
        assert_refused_both(t, action(10, MERGE_ACTION_ENABLE, MERGE_METHOD_ANY));

        /* the pid was reused between plan and act */
        add(t, 10, VERDICT_MERGE, MERGE_METHOD_ANY, false);
        ProcessAction a = action(10, MERGE_ACTION_ENABLE, MERGE_METHOD_ANY);
        a.start_time_ticks = START + 1;
        assert_refused_both(t, a);

        /* known, but not classified yet */
        Process *p = add(t, 11, VERDICT_MERGE, MERGE_METHOD_ANY, false);
        p->have_verdict = false;
        assert_refused_both(t, action(11, MERGE_ACTION_ENABLE, MERGE_METHOD_ANY));
        assert_refused_both(t, action(11, MERGE_ACTION_DISABLE, MERGE_METHOD_ANY));
}

/* One row per rule of the verdict: what the process's policy says, the
 * action, who planned it, and whether it may be carried out. */
static void test_verdict_rules(void **state) {
#define D MERGE_ACTION_DISABLE
#define E MERGE_ACTION_ENABLE
        static const struct {
                VerdictAction verdict;
                MergeMethod method;
                bool always;
                MergeAction what;
                bool from_controller;
                bool allowed;
        } rules[] = {
                /* no policy matched: never touched, in either direction */
                { VERDICT_LEAVE_ALONE, MERGE_METHOD_ANY, false, E, false, false },
                { VERDICT_LEAVE_ALONE, MERGE_METHOD_ANY, false, D, true, false },
                /* a policy wants merging but says Method=none: tuning only,
                 * even with Mode=always */
                { VERDICT_MERGE, MERGE_METHOD_NONE, false, E, false, false },
                { VERDICT_MERGE, MERGE_METHOD_NONE, false, D, true, false },
                { VERDICT_MERGE, MERGE_METHOD_NONE, true, E, true, false },
                /* Mode=always: the controller may readmit, never exclude;
                 * discovery's own actions follow the verdict already */
                { VERDICT_MERGE, MERGE_METHOD_ANY, true, D, true, false },
                { VERDICT_MERGE, MERGE_METHOD_ANY, true, E, true, true },
                { VERDICT_MERGE, MERGE_METHOD_ANY, true, D, false, true },
                /* without Mode=always the same exclusion goes through */
                { VERDICT_MERGE, MERGE_METHOD_ANY, false, D, true, true },
                /* Mode=never: no readmission, and no "exclusion" of what its
                 * policy keeps off already; discovery switches it off */
                { VERDICT_DONT_MERGE, MERGE_METHOD_ANY, false, E, true, false },
                { VERDICT_DONT_MERGE, MERGE_METHOD_ANY, false, D, true, false },
                { VERDICT_DONT_MERGE, MERGE_METHOD_ANY, false, D, false, true },
                /* merging wanted, but not yet (too small, too young) */
                { VERDICT_WAIT, MERGE_METHOD_ANY, false, E, true, false },
                { VERDICT_WAIT, MERGE_METHOD_ANY, false, D, true, true },
        };
#undef D
#undef E
        _cleanup_(process_table_freep) ProcessTable *t = NULL;
        assert_int_equal(process_table_new(&t), 0);

        for (size_t i = 0; i < ELEMENTSOF(rules); i++) {
                int pid = 100 + (int) i;
                add(t, pid, rules[i].verdict, rules[i].method, rules[i].always);
                ProcessAction a = action(pid, rules[i].what, MERGE_METHOD_INJECT);
                if (manager_merge_policy_allows(t, &a, rules[i].from_controller) != rules[i].allowed)
                        fail_msg("rule %zu: %s", i, rules[i].allowed ? "refused" : "allowed");
                /* a named method is never changed, allowed or not */
                assert_int_equal(a.method, MERGE_METHOD_INJECT);
        }
}

/* The method an allowed action is carried out with. */
static MergeMethod narrowed(const ProcessTable *t, int pid, MergeAction what, MergeMethod method,
                            bool from_controller) {
        ProcessAction a = action(pid, what, method);
        assert_true(manager_merge_policy_allows(t, &a, from_controller));
        return a.method;
}

static void test_method_narrowing(void **state) {
        _cleanup_(process_table_freep) ProcessTable *t = NULL;
        assert_int_equal(process_table_new(&t), 0);
        add(t, 50, VERDICT_MERGE, MERGE_METHOD_INJECT, false);
        add(t, 51, VERDICT_MERGE, MERGE_METHOD_ANY, false);

        /* the controller's Method=any becomes the policy's Method= */
        assert_int_equal(narrowed(t, 50, MERGE_ACTION_ENABLE, MERGE_METHOD_ANY, true), MERGE_METHOD_INJECT);
        assert_int_equal(narrowed(t, 50, MERGE_ACTION_DISABLE, MERGE_METHOD_ANY, true), MERGE_METHOD_INJECT);
        /* a method the action names already is kept */
        assert_int_equal(narrowed(t, 50, MERGE_ACTION_ENABLE, MERGE_METHOD_MADVISE, false), MERGE_METHOD_MADVISE);
        /* a policy with Method=any leaves the choice to the actuator */
        assert_int_equal(narrowed(t, 51, MERGE_ACTION_ENABLE, MERGE_METHOD_ANY, true), MERGE_METHOD_ANY);
}

static void test_select(void **state) {
        _cleanup_(process_table_freep) ProcessTable *t = NULL;
        _cleanup_(plan_done) Plan discovery = {}, controller = {}, out = {};
        ProcessAction a;
        assert_int_equal(process_table_new(&t), 0);
        add(t, 60, VERDICT_MERGE, MERGE_METHOD_PROCESS_KSM, true);
        add(t, 61, VERDICT_LEAVE_ALONE, MERGE_METHOD_ANY, false);
        add(t, 62, VERDICT_MERGE, MERGE_METHOD_MADVISE, false);

        a = action(60, MERGE_ACTION_DISABLE, MERGE_METHOD_ANY);
        assert_int_equal(plan_add_action(&discovery, &a), 0);
        a = action(61, MERGE_ACTION_ENABLE, MERGE_METHOD_ANY);
        assert_int_equal(plan_add_action(&discovery, &a), 0);
        /* the same exclusion of the Mode=always process, from the controller */
        a = action(60, MERGE_ACTION_DISABLE, MERGE_METHOD_ANY);
        assert_int_equal(plan_add_action(&controller, &a), 0);
        a = action(62, MERGE_ACTION_DISABLE, MERGE_METHOD_ANY);
        assert_int_equal(plan_add_action(&controller, &a), 0);
        a = action(63, MERGE_ACTION_ENABLE, MERGE_METHOD_ANY); /* gone */
        assert_int_equal(plan_add_action(&controller, &a), 0);

        assert_int_equal(manager_merge_select(t, &discovery, &controller, &out), 0);
        /* discovery's 60 passes, the controller's 60 does not; 61 has no
         * policy; 62 is narrowed to madvise; 63 is not known */
        assert_int_equal(out.n_actions, 2);
        assert_int_equal(out.actions[0].pid, 60);
        assert_int_equal(out.actions[0].method, MERGE_METHOD_PROCESS_KSM);
        assert_int_equal(out.actions[1].pid, 62);
        assert_int_equal(out.actions[1].action, MERGE_ACTION_DISABLE);
        assert_int_equal(out.actions[1].method, MERGE_METHOD_MADVISE);
        /* the plans themselves are not narrowed */
        assert_int_equal(controller.actions[1].method, MERGE_METHOD_ANY);

        /* nothing known yet: nothing passes */
        plan_done(&out);
        assert_int_equal(manager_merge_select(NULL, &discovery, &controller, &out), 0);
        assert_int_equal(out.n_actions, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_not_classified),
                cmocka_unit_test(test_verdict_rules),
                cmocka_unit_test(test_method_narrowing),
                cmocka_unit_test(test_select),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
