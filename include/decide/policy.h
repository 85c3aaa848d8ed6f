/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "merge-method.h"

/* Policy files (DESIGN.md §5, every key in ksmtuned2.policy(5)): one
 * *.policy file holds one policy, a [Match] and a [Merge] section. Files
 * come from the PolicyDirectories= in order; a file of the same name in an
 * earlier directory masks a later one (an empty file or a symlink to
 * /dev/null masks without adding a policy); the survivors are taken in
 * lexical order of their names, and the first that matches a process
 * decides for it. */

typedef enum PolicyMode {
        POLICY_MODE_ALWAYS,     /* merge; the controller never excludes it (e.g. for contention) */
        POLICY_MODE_AUTO,       /* merge; the controller may exclude it while it hurts */
        POLICY_MODE_NEVER,      /* keep merging off */
        _POLICY_MODE_MAX,
} PolicyMode;

/* The names of Mode=; the table (string-table.h) is public for conf_parse_enum(). */
extern const char *const policy_mode_table[_POLICY_MODE_MAX];
const char *policy_mode_to_string(PolicyMode m);

/* One match key: space-separated globs, any of which may match; the key
 * repeated appends, an empty value resets. A bad value in a [Match] key
 * makes the policy match nothing (ignoring the key would widen the match). */
typedef struct PolicyGlobs {
        char **globs;
} PolicyGlobs;

typedef struct PolicyUsers {
        uid_t *uids;
        size_t n;
} PolicyUsers;

typedef struct Policy {
        char *path;             /* the file, as found */
        char *name;             /* its file name, the ordering and masking key */
        unsigned line;          /* line of the [Match] header (1 when absent) */

        /* [Match]: every key given must match */
        PolicyGlobs cgroup;     /* Cgroup=: glob on the cgroup path or any of its ancestors */
        PolicyGlobs comm;       /* Comm= */
        PolicyGlobs exe;        /* Exe=: glob on the executable's full path */
        PolicyGlobs unit;       /* Unit=: glob on a unit of the system manager's slices
                                 * (cgroup_path_system_depth); one with a '/' on the path, as Cgroup= */
        PolicyGlobs vm;         /* VM=: glob on the VM/machine name */
        PolicyUsers users;      /* User=: names or numeric uids, of the effective uid */
        PolicyGlobs cmdline;    /* Cmdline=: one glob per line (it holds spaces) on the command line; read
                                 * off the loop, so a match waits for it */
        bool match_invalid;     /* a [Match] key had a bad value, or there is none: the policy matches nothing */

        /* [Merge] */
        int mode;               /* PolicyMode, Mode= */
        int method;             /* MergeMethod, Method= */
        uint64_t min_anon_mib;  /* MinAnonMiB= */
        uint64_t min_age_usec;  /* MinAge= */
        bool override_opt_out;  /* OverrideOptOut=: switch merging on even for a process that opted out
                                 * itself (QEMU -machine mem-merge=off); only an administrator's explicit
                                 * choice, never in a shipped policy */
        bool inject_privileged; /* InjectPrivileged=: Method=inject may also write into a process that
                                 * is not dumpable or runs with more than its owner's credentials */
} Policy;

typedef struct PolicySet {
        Policy *policies;       /* in decision order */
        size_t n;
        size_t n_masked;        /* files hidden by a same-named file in an earlier directory */
        size_t n_rejected;      /* files (or directories) rejected, without an earlier good version */
        size_t n_kept;          /* files rejected whose earlier good version stays in force */
        char *rejected_reason;  /* the first diagnostic of the first rejection, NULL when none */
} PolicySet;

void policy_done(Policy *p);
void policy_set_done(PolicySet *s);

/* Glob matching of the [Match] keys, exposed for tests. A cgroup glob
 * matches the path or any of its ancestors ("machine.slice/machine-*.scope"
 * matches ".../machine-qemu\x2d1\x2dvm.scope/libvirt/emulator"); '*' does not
 * cross '/'. A leading '/' in the glob is ignored. */
bool policy_cgroup_glob_match(const char *glob, const char *path);

/* How many leading components of a cgroup path carry names that the system
 * manager chose: the slices from the root, the first of them system.slice or
 * machine.slice, and the first unit below them ("system.slice/nginx.service/x"
 * -> 2). Below that unit (a service's Delegate=yes subtree) and anywhere under
 * user.slice (a user's own service manager below user@UID.service), names are
 * chosen by whoever owns the cgroup, so Unit= and VM= do not believe them
 * unless a pattern names that place itself. 0 when the path starts elsewhere. */
size_t cgroup_path_system_depth(const char *path);
