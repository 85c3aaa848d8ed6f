/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "policy-load.h"
#include "util.h"


static void policy_init(Policy *p) {
        *p = (Policy) {
                .line = 1,
                .mode = POLICY_MODE_AUTO,
                .method = MERGE_METHOD_ANY,
        };
}

/* Parsers of the [Match] keys. A bad value poisons the policy: the base
 * pointer of the table is the Policy itself, so the item's offset finds the
 * list and the parser reaches match_invalid through the PolicyMatchItem. */
typedef struct MatchData {
        size_t invalid_offset;
} MatchData;

static const MatchData match_data = { offsetof(Policy, match_invalid) };

static bool *invalid_flag(void *dst, size_t list_offset, const void *data) {
        const MatchData *md = data;
        return (bool *) ((char *) dst - list_offset + md->invalid_offset);
}

/* A [Match] value that cannot be taken narrows the policy to nothing, which
 * is safe, so the file is not rejected for it (a User= whose account is
 * made later). */
static int match_nothing(const ConfContext *c, void *dst, size_t list_offset, const void *data, const char *value,
                         const char *reason) {
        *invalid_flag(dst, list_offset, data) = true;
        conf_diag_add(c->diag, c->file, c->line, c->key, "%s (\"%s\"): this policy will match nothing", reason,
                      CESCAPE(value, CESCAPE_ASCII));
        return 0;
}

static int parse_globs(const ConfContext *c, const char *value, void *dst, const void *data, size_t offset) {
        PolicyGlobs *g = dst;
        _cleanup_strv_free_ char **l = NULL;
        int r;

        if (isempty(value)) {
                g->globs = strv_free(g->globs);
                return 0;
        }
        r = strv_split_whitespace(value, &l);
        if (r < 0)
                return r;
        for (char **s = l; *s; s++)
                if (strlen(*s) > 4096)
                        return match_nothing(c, dst, offset, data, *s, "glob too long");
        return strv_push_all(&g->globs, TAKE_PTR(l));
}

#define GLOB_PARSER(field)                                                                            \
        static int parse_globs_##field(const ConfContext *c, const char *value, void *dst, const void *data) { \
                return parse_globs(c, value, dst, data, offsetof(Policy, field));                     \
        }
GLOB_PARSER(cgroup)
GLOB_PARSER(comm)
GLOB_PARSER(exe)
GLOB_PARSER(unit)
GLOB_PARSER(vm)

/* Cmdline=: command lines hold spaces, so the whole value is one glob; the
 * key repeated adds another. */
static int parse_glob_cmdline(const ConfContext *c, const char *value, void *dst, const void *data) {
        PolicyGlobs *g = dst;
        if (isempty(value)) {
                g->globs = strv_free(g->globs);
                return 0;
        }
        if (strlen(value) > 4096)
                return match_nothing(c, dst, offsetof(Policy, cmdline), data, value, "glob too long");
        char *s = strdup(value);
        if (!s)
                return -ENOMEM;
        return strv_push(&g->globs, s);
}

static int parse_users(const ConfContext *c, const char *value, void *dst, const void *data) {
        PolicyUsers *u = dst;
        _cleanup_strv_free_ char **l = NULL;
        int r;

        if (isempty(value)) {
                u->uids = (free(u->uids), NULL);
                u->n = 0;
                return 0;
        }
        r = strv_split_whitespace(value, &l);
        if (r < 0)
                return r;
        for (char **s = l; *s; s++) {
                unsigned uid;
                if (safe_atou(*s, &uid) < 0 || uid == (unsigned) -1) {
                        /* Names are resolved once at load: classification is pure. */
                        struct passwd pw, *res = NULL;
                        char buf[4096];
                        int k = getpwnam_r(*s, &pw, buf, sizeof buf, &res);
                        if (k != 0 || !res)
                                return match_nothing(c, dst, offsetof(Policy, users), data, *s,
                                                     k ? "cannot look up user" : "no such user");
                        uid = res->pw_uid;
                }
                uid_t *n = realloc(u->uids, sizeof *n * (u->n + 1));
                if (!n)
                        return -ENOMEM;
                u->uids = n;
                u->uids[u->n++] = (uid_t) uid;
        }
        return 0;
}

/* Up to 1 TiB of anonymous memory, and a week of age: beyond is a typo. */
static const ConfUnit anon_unit = { .unit = UINT64_C(1) << 20, .name = "MiB", .range = { 0, UINT64_C(1) << 20 } };
static const ConfRange age_range = { 0, 7 * 24 * 3600 * USEC_PER_SEC };

#define ITEM(sec, key, parser, field, data) { sec, key, parser, offsetof(Policy, field), data }

const ConfItem policy_table[] = {
        ITEM("Match", "Cgroup", parse_globs_cgroup, cgroup, &match_data),
        ITEM("Match", "Comm", parse_globs_comm, comm, &match_data),
        ITEM("Match", "Exe", parse_globs_exe, exe, &match_data),
        ITEM("Match", "Unit", parse_globs_unit, unit, &match_data),
        ITEM("Match", "VM", parse_globs_vm, vm, &match_data),
        ITEM("Match", "User", parse_users, users, &match_data),
        ITEM("Match", "Cmdline", parse_glob_cmdline, cmdline, &match_data),
        ITEM("Merge", "Mode", conf_parse_enum, mode, CONF_ENUM(policy_mode_table)),
        ITEM("Merge", "Method", conf_parse_enum, method, CONF_ENUM(merge_method_table)),
        ITEM("Merge", "MinAnonMiB", conf_parse_size_in_unit, min_anon_mib, &anon_unit),
        ITEM("Merge", "MinAge", conf_parse_timespan, min_age_usec, &age_range),
        ITEM("Merge", "OverrideOptOut", conf_parse_bool, override_opt_out, NULL),
        ITEM("Merge", "InjectPrivileged", conf_parse_bool, inject_privileged, NULL),
};

const size_t policy_table_size = ELEMENTSOF(policy_table);

static void *section_base(void *userdata, const char *section, unsigned line) {
        Policy *p = userdata;
        if (streq(section, "Match") && p->line == 1 && line > 0)
                p->line = line;
        return p;
}

/* A policy that says something this daemon does not understand must not
 * act: an ignored [Match] key would widen the match, an ignored [Merge]
 * (written "[merge]") would turn Mode=never into the default auto. */
static const char *unknown(void *userdata, const char *section, const char *key) {
        Policy *p = userdata;
        p->match_invalid = true;
        return "this policy will match nothing";
}

int policy_load_file(const char *path, Policy *ret, ConfDiag *diag) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_(policy_done) Policy p = {};
        int r;

        policy_init(&p);
        p.path = strdup(path);
        const char *slash = strrchr(path, '/');
        p.name = strdup(slash ? slash + 1 : path);
        if (!p.path || !p.name)
                return -ENOMEM;
        /* A policy decides what a root daemon does to other users'
         * processes (ptrace injection included): only root may write one,
         * checked before an empty file may mask another. */
        r = conf_file_open(path, conf_trust_checks(), &f, diag);
        if (r < 0)
                return r;
        if (r == CONF_FILE_MASKS) { /* masks only, as in systemd */
                *ret = TAKE_STRUCT(p);
                return 1;
        }
        ConfParseOptions opts = {
                .section_base = section_base, .unknown = unknown, .userdata = &p, .reject_bad_values = true,
        };
        r = conf_parse_file(f, path, policy_table, policy_table_size, &p, &opts, diag);
        if (r < 0)
                return r;
        /* An unedited copy of the template must not merge the whole host. */
        if (!p.match_invalid && !p.cgroup.globs && !p.comm.globs && !p.exe.globs && !p.unit.globs &&
            !p.vm.globs && !p.cmdline.globs && p.users.n == 0) {
                conf_diag_add(diag, path, p.line, NULL,
                              "[Match] has no keys: this policy matches nothing (Cgroup=* matches every process)");
                p.match_invalid = true;
        }
        *ret = TAKE_STRUCT(p);
        return 0;
}

static int strv_copy(char **l, char ***ret) {
        _cleanup_strv_free_ char **n = NULL;
        for (char **s = l; s && *s; s++) {
                char *d = strdup(*s);
                if (!d || strv_push(&n, d) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(n);
        return 0;
}

static int policy_copy(const Policy *src, Policy *ret) {
        _cleanup_(policy_done) Policy p = *src;
        int r;

        /* Nothing of src's may be freed should a copy fail. */
        p.path = p.name = NULL;
        p.cgroup.globs = p.comm.globs = p.exe.globs = p.unit.globs = p.vm.globs = p.cmdline.globs = NULL;
        p.users.uids = NULL;

        p.path = strdup(src->path);
        p.name = strdup(src->name);
        if (!p.path || !p.name)
                return -ENOMEM;
        const struct {
                char **from;
                char ***to;
        } globs[] = {
                { src->cgroup.globs, &p.cgroup.globs }, { src->comm.globs, &p.comm.globs },
                { src->exe.globs, &p.exe.globs },       { src->unit.globs, &p.unit.globs },
                { src->vm.globs, &p.vm.globs },         { src->cmdline.globs, &p.cmdline.globs },
        };
        for (size_t i = 0; i < ELEMENTSOF(globs); i++) {
                r = strv_copy(globs[i].from, globs[i].to);
                if (r < 0)
                        return r;
        }
        if (src->users.n) {
                p.users.uids = malloc(sizeof(uid_t) * src->users.n);
                if (!p.users.uids)
                        return -ENOMEM;
                memcpy(p.users.uids, src->users.uids, sizeof(uid_t) * src->users.n);
        }
        *ret = TAKE_STRUCT(p);
        return 0;
}

static const Policy *find_previous(const PolicySet *prev, const char *path) {
        for (size_t i = 0; prev && i < prev->n; i++)
                if (streq(prev->policies[i].path, path))
                        return &prev->policies[i];
        return NULL;
}

/* A rejected file in an earlier directory must not take a later file of
 * its name with it: an unreadable or untrusted "mask" of 10-secrets.policy
 * would otherwise switch the secrets policy off. The first same-named file
 * after it that loads stands in. 0 and *ret, 1 when none does, -ENOMEM. */
static int load_shadowed(char *const *dirs, const char *rejected, Policy *ret, ConfDiag *diag) {
        const char *name = strrchr(rejected, '/');
        bool after = false;

        if (!name)
                return 1;
        for (char *const *d = dirs; d && *d; d++) {
                _cleanup_free_ char *path = NULL;
                if (asprintf(&path, "%s%s", *d, name) < 0)
                        return -ENOMEM;
                if (!after) {
                        after = streq(path, rejected);
                        continue;
                }
                if (access(path, F_OK) < 0 || (conf_trust_checks() && conf_dir_check_trusted(*d, NULL) < 0))
                        continue;
                int r = policy_load_file(path, ret, diag);
                if (r == -ENOMEM)
                        return r;
                if (r == 1) { /* a mask there: nothing stands in */
                        policy_done(ret);
                        return 1;
                }
                if (r == 0) {
                        conf_diag_add(diag, rejected, 0, NULL, "%s is in force in its place", path);
                        return 0;
                }
        }
        return 1;
}

/* The first diagnostic about a file that was rejected, for the Reload
 * error: diag lines from the first of this file's on. */
static int note_rejected(PolicySet *s, const ConfDiag *diag, size_t first_line) {
        if (s->rejected_reason || !diag || first_line >= diag->n)
                return 0;
        s->rejected_reason = strdup(diag->lines[first_line]);
        return s->rejected_reason ? 0 : -ENOMEM;
}

int policy_set_load(char *const *dirs, const PolicySet *previous, PolicySet *ret, ConfDiag *diag) {
        _cleanup_(policy_set_done) PolicySet s = {};
        _cleanup_strv_free_ char **found = NULL;
        size_t mark = diag ? diag->n : 0;
        int r;

        /* An unreadable or untrusted directory has been reported; the
         * others count. */
        r = conf_files_collect((const char *const *) dirs, ".policy", &found, &s.n_masked, diag);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                s.n_rejected++;
                if (note_rejected(&s, diag, mark) < 0)
                        return -ENOMEM;
        }
        size_t n_found = strv_length(found);
        s.policies = calloc(MAX(n_found, 1), sizeof *s.policies);
        if (!s.policies)
                return -ENOMEM;
        for (size_t i = 0; i < n_found; i++) {
                Policy p;
                mark = diag ? diag->n : 0;
                r = policy_load_file(found[i], &p, diag);
                if (r == -ENOMEM)
                        break;
                if (r == -ENOENT) /* gone since the directory was read */
                        continue;
                if (r == 1) { /* mask only */
                        policy_done(&p);
                        s.n_masked++;
                        continue;
                }
                if (r >= 0) {
                        s.policies[s.n++] = p;
                        continue;
                }
                if (r == -EIO)
                        conf_diag_add(diag, found[i], 0, NULL, "cannot be read (%s), rejected", strerror(-r));
                r = note_rejected(&s, diag, mark);
                if (r < 0)
                        break;
                const Policy *old = find_previous(previous, found[i]);
                if (old) {
                        r = policy_copy(old, &s.policies[s.n]);
                        if (r < 0)
                                break;
                        s.n++;
                        s.n_kept++;
                        conf_diag_add(diag, found[i], 0, NULL, "keeping the previous version of this policy");
                } else {
                        s.n_rejected++;
                        r = load_shadowed(dirs, found[i], &s.policies[s.n], diag);
                        if (r < 0)
                                break;
                        if (r == 0)
                                s.n++;
                }
                r = 0;
        }
        if (r == -ENOMEM)
                return r;
        *ret = TAKE_STRUCT(s);
        return 0;
}
