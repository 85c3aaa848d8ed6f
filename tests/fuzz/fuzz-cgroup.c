/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cgroup path functions on hostile names: /proc/<pid>/cgroup text, then
 * systemd's escapes, the unit and machine names in the path, and the
 * Cgroup= glob (the input up to its first newline is the glob, the rest the
 * /proc/<pid>/cgroup text). */
#include <errno.h>

#include "cgroupfs.h"
#include "fuzz.h"
#include "policy-load.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = fuzz_text(data, size), *path = (char *) 1, *s;
        char *nl = strchr(text, '\n');
        const char *glob = "machine.slice/machine-*.scope", *proc = text;
        int r;

        if (nl) {
                *nl = 0;
                glob = text;
                proc = nl + 1;
        }
        r = cgroup_parse_proc_path(proc, &path);
        FUZZ_CHECK(r == 0 || r == -ENODATA || r == -EINVAL || r == -ENOMEM);
        if (r < 0) {
                FUZZ_CHECK(path == (char *) 1);
                /* The functions below take any path: use the raw text. */
                path = strdup(proc);
                if (!path)
                        abort();
        } else
                FUZZ_CHECK(!strchr(path, '\n'));

        if (cgroup_unescape(path, &s) >= 0) {
                FUZZ_CHECK(strlen(s) <= strlen(path));
                free(s);
        }
        s = (char *) 1;
        r = cgroup_path_get_unit(path, &s);
        FUZZ_CHECK(r >= 0 || r == -ENOMEM);
        if (r >= 0) {
                FUZZ_CHECK(!s || (strstr(path, s) && !strchr(s, '/')));
                free(s);
        }
        s = (char *) 1;
        r = cgroup_path_get_machine(path, &s);
        FUZZ_CHECK(r >= 0 || r == -ENOMEM);
        if (r >= 0) {
                FUZZ_CHECK(!s || !strchr(s, '/'));
                free(s);
        }
        (void) policy_cgroup_glob_match(glob, path);
        free(path);
        free(text);
        return 0;
}
