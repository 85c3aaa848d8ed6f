/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "string-table.h"
#include "util.h"

const char *const policy_mode_table[_POLICY_MODE_MAX] = {
        [POLICY_MODE_ALWAYS] = "always",
        [POLICY_MODE_AUTO] = "auto",
        [POLICY_MODE_NEVER] = "never",
};

/* "?" rather than NULL: a verdict's reason quotes it. */
DEFINE_STRING_TABLE_TO_STRING_FALLBACK(policy_mode, PolicyMode, "?");

void policy_done(Policy *p) {
        free(p->path);
        free(p->name);
        strv_free(p->cgroup.globs);
        strv_free(p->comm.globs);
        strv_free(p->exe.globs);
        strv_free(p->unit.globs);
        strv_free(p->vm.globs);
        strv_free(p->cmdline.globs);
        free(p->users.uids);
        *p = (Policy) {};
}

void policy_set_done(PolicySet *s) {
        for (size_t i = 0; i < s->n; i++)
                policy_done(&s->policies[i]);
        free(s->policies);
        free(s->rejected_reason);
        *s = (PolicySet) {};
}

bool policy_cgroup_glob_match(const char *glob, const char *path) {
        while (*glob == '/')
                glob++;
        while (*path == '/')
                path++;
        /* Try the path itself, then each ancestor: a VM's processes live in
         * children of its scope (libvirt/emulator, libvirt/vcpu0). */
        _cleanup_free_ char *copy = strdup(path);
        if (!copy)
                return false;
        for (;;) {
                if (fnmatch(glob, copy, FNM_PATHNAME) == 0)
                        return true;
                char *slash = strrchr(copy, '/');
                if (!slash)
                        return false;
                *slash = 0;
        }
}

static bool component_is(const char *c, size_t len, const char *name) {
        return len == strlen(name) && strneq(c, name, len);
}

size_t cgroup_path_system_depth(const char *path) {
        size_t depth = 0;

        while (*path == '/')
                path++;
        for (const char *c = path; *c;) {
                const char *slash = strchr(c, '/');
                size_t len = slash ? (size_t) (slash - c) : strlen(c);
                bool slice = len > strlen(".slice") && strneq(c + len - strlen(".slice"), ".slice", strlen(".slice"));
                if (depth == 0 && !component_is(c, len, "system.slice") && !component_is(c, len, "machine.slice"))
                        return 0;
                if (len == 0)
                        break;
                depth++;
                /* The first unit that is not a slice ends it: what lies below
                 * is that unit's own (delegated) business. */
                if (!slice || !slash)
                        break;
                c = slash + 1;
        }
        return depth;
}
