/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "classify.h"
#include "opt-out.h"
#include "util.h"

static bool any_glob(const PolicyGlobs *g, const char *s, int flags) {
        if (!s)
                return false;
        for (char **gl = g->globs; *gl; gl++)
                if (fnmatch(*gl, s, flags) == 0)
                        return true;
        return false;
}

/* Unit= without a '/' matches a unit of the system manager: a slice or the
 * unit along the leading part of the cgroup path that it named
 * (cgroup_path_system_depth). Deeper names, and anything under user.slice,
 * are chosen by the cgroup's owner: any user can start
 * "app-worker@x.service" under its own user@UID.service, or a Delegate=yes
 * service create one below itself. A glob with a '/' names the place
 * itself and is matched as Cgroup= is
 * ("user.slice/user-1000.slice/user@1000.service/app.slice/app-worker@*.service"). */
static bool any_unit(const PolicyGlobs *g, const char *cgroup) {
        if (!cgroup)
                return false;
        for (char **gl = g->globs; *gl; gl++)
                if (strchr(*gl, '/') && policy_cgroup_glob_match(*gl, cgroup))
                        return true;
        size_t depth = cgroup_path_system_depth(cgroup);
        const char *c = cgroup;
        while (*c == '/')
                c++;
        for (size_t i = 0; i < depth && *c; i++) {
                const char *slash = strchr(c, '/');
                size_t len = slash ? (size_t) (slash - c) : strlen(c);
                char comp[256];
                if (len > 0 && len < sizeof comp) {
                        memcpy(comp, c, len);
                        comp[len] = 0;
                        for (char **gl = g->globs; *gl; gl++)
                                if (!strchr(*gl, '/') && fnmatch(*gl, comp, 0) == 0)
                                        return true;
                }
                if (!slash)
                        break;
                c = slash + 1;
        }
        return false;
}

/* A policy that keeps the daemon's hands off what it matches: Mode=never,
 * or Method=none (tuning only). */
static bool policy_excludes(const Policy *pol) {
        return pol->mode == POLICY_MODE_NEVER || pol->method == MERGE_METHOD_NONE;
}

int policy_matches(const Policy *pol, const Process *p) {
        bool exe_unknown = false;

        if (pol->match_invalid)
                return 0;
        if (pol->cgroup.globs) {
                bool ok = false;
                for (char **g = pol->cgroup.globs; *g && !ok && p->cgroup; g++)
                        ok = policy_cgroup_glob_match(*g, p->cgroup);
                if (!ok)
                        return 0;
        }
        if (pol->comm.globs && !any_glob(&pol->comm, p->comm, 0))
                return 0;
        /* '*' in Exe= may cross '/': "/usr/bin/qemu-system-*" and "*\/java" both work. */
        if (pol->exe.globs && !any_glob(&pol->exe, p->exe, 0)) {
                /* No executable known (unreadable: the injector that reads
                 * it for the daemon is gone, a zombie leader, a refused
                 * read): for a policy that would only take the process in,
                 * that is no match. But an exclusion by Exe= must not be
                 * skipped for want of a fact, or a broader policy further on
                 * takes the very process it was written to protect. */
                if (p->exe || !policy_excludes(pol))
                        return 0;
                exe_unknown = true;
        }
        if (pol->unit.globs && !any_unit(&pol->unit, p->cgroup))
                return 0;
        if (pol->vm.globs && !any_glob(&pol->vm, p->vm_name, 0))
                return 0;
        if (pol->users.n) {
                bool ok = false;
                for (size_t i = 0; i < pol->users.n && !ok; i++)
                        ok = pol->users.uids[i] == p->euid;
                if (!ok)
                        return 0;
        }
        /* Last: the only key whose fact may still be on its way. */
        if (pol->cmdline.globs) {
                if (!p->cmdline_read)
                        return -EAGAIN;
                if (!any_glob(&pol->cmdline, p->cmdline, 0))
                        return 0;
        }
        return exe_unknown ? -ENOENT : 1;
}

static void set_reason(Verdict *v, const char *fmt, ...) _printf_(2, 3);
static void set_reason(Verdict *v, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->reason, sizeof v->reason, fmt, ap);
        va_end(ap);
}

void classify_process(const PolicySet *set, const ClassifyContext *ctx, const Process *p, Verdict *ret) {
        Verdict v = { .action = VERDICT_LEAVE_ALONE, .method = MERGE_METHOD_NONE };

        if (p->kthread) {
                set_reason(&v, "kernel thread");
                *ret = v;
                return;
        }
        /* The init process: every other process depends on it, and no
         * policy may name it (the actuator refuses it again). */
        if (p->pid == 1) {
                set_reason(&v, "PID 1: never touched");
                *ret = v;
                return;
        }
        if (ctx && p->pid == ctx->self_pid) {
                set_reason(&v, "the daemon itself");
                *ret = v;
                return;
        }
        const Policy *pol = NULL;
        for (size_t i = 0; set && i < set->n && !pol; i++) {
                int m = policy_matches(&set->policies[i], p);
                if (m == -EAGAIN) {
                        /* First match wins, so nothing later may decide before this one is known. */
                        const Policy *w = &set->policies[i];
                        v.action = VERDICT_WAIT;
                        v.needs_cmdline = true;
                        strscpy(v.policy_file, sizeof v.policy_file, w->path);
                        v.policy_line = w->line;
                        v.method = (MergeMethod) w->method;
                        set_reason(&v, "waiting for the command line (Cmdline=)");
                        *ret = v;
                        return;
                }
                if (m == -ENOENT) {
                        /* An exclusion that may hold: touch nothing (Method=none
                         * keeps the controller off it too) until exe is known. */
                        const Policy *w = &set->policies[i];
                        v.action = VERDICT_WAIT;
                        strscpy(v.policy_file, sizeof v.policy_file, w->path);
                        v.policy_line = w->line;
                        set_reason(&v, "executable unknown (unreadable); this policy's Exe= may match, and it "
                                       "says %s: waiting", w->mode == POLICY_MODE_NEVER ? "Mode=never" : "Method=none");
                        *ret = v;
                        return;
                }
                if (m > 0)
                        pol = &set->policies[i];
        }
        if (!pol) {
                set_reason(&v, "no policy matches");
                *ret = v;
                return;
        }

        strscpy(v.policy_file, sizeof v.policy_file, pol->path);
        v.policy_line = pol->line;
        v.method = (MergeMethod) pol->method;
        v.always = pol->mode == POLICY_MODE_ALWAYS;
        v.inject_privileged = pol->inject_privileged;
        const char *tail = v.method == MERGE_METHOD_NONE ? " (Method=none: tuning only, never touched)" : "";

        if (pol->mode == POLICY_MODE_NEVER) {
                v.action = VERDICT_DONT_MERGE;
                set_reason(&v, "Mode=never%s", tail);
                *ret = v;
                return;
        }
        uint64_t anon_mib = p->rss_anon_kib / 1024;
        if (anon_mib < pol->min_anon_mib) {
                v.action = VERDICT_WAIT;
                set_reason(&v, "anon RSS %" PRIu64 " MiB < MinAnonMiB=%" PRIu64 "%s", anon_mib, pol->min_anon_mib, tail);
                *ret = v;
                return;
        }
        if (pol->min_age_usec > 0) {
                uint64_t now = ctx ? ctx->now_boottime_usec : 0;
                uint64_t age = now > p->start_time_usec ? now - p->start_time_usec : 0;
                if (age < pol->min_age_usec) {
                        char a[32], b[32];
                        v.action = VERDICT_WAIT;
                        set_reason(&v, "age %s < MinAge=%s%s", format_timespan(a, sizeof a, age),
                                   format_timespan(b, sizeof b, pol->min_age_usec), tail);
                        *ret = v;
                        return;
                }
        }
        /* A process that opted out of KSM itself keeps its choice: only an
         * administrator's OverrideOptOut=yes switches merging on for it.
         * Tuning-only policies (Method=none) never switch anything on. */
        if (v.method != MERGE_METHOD_NONE && !pol->override_opt_out && opt_out_applies(p)) {
                char opt[160];
                if (!p->cmdline_read) {
                        v.action = VERDICT_WAIT;
                        v.needs_cmdline = true;
                        set_reason(&v, "waiting for the command line (QEMU may have opted out of KSM)");
                        *ret = v;
                        return;
                }
                if (opt_out_find(p->cmdline, opt, sizeof opt)) {
                        v.action = VERDICT_LEAVE_ALONE;
                        v.opted_out = true;
                        set_reason(&v, "opted out of KSM itself (%s); only OverrideOptOut=yes overrides", opt);
                        *ret = v;
                        return;
                }
        }
        v.action = VERDICT_MERGE;
        if (pol->min_anon_mib > 0)
                set_reason(&v, "Mode=%s, anon RSS %" PRIu64 " MiB >= MinAnonMiB=%" PRIu64 "%s",
                           policy_mode_to_string((PolicyMode) pol->mode), anon_mib, pol->min_anon_mib, tail);
        else
                set_reason(&v, "Mode=%s%s", policy_mode_to_string((PolicyMode) pol->mode), tail);
        *ret = v;
}

const Policy *classify_find_policy(const PolicySet *set, const Verdict *v) {
        if (!v->policy_file[0])
                return NULL;
        for (size_t i = 0; set && i < set->n; i++)
                if (streq(set->policies[i].path, v->policy_file))
                        return &set->policies[i];
        return NULL;
}
