/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ksmctl exec [--] CMD [ARGS...]: runs CMD with KSM merging switched on
 * for its whole address space (PR_SET_MEMORY_MERGE), which every child and
 * grandchild inherits. Needs no daemon and no privileges. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "ksmctl.h"
#include "log.h"
#include "syscalls.h"
#include "util.h"

/* The flag (MMF_VM_MERGE_ANY) exists since Linux 6.4 but was dropped at
 * exec before 6.7 ("mm/ksm: support fork/exec for prctl"): there, the new
 * program would silently not merge. */
static bool kernel_keeps_flag_across_exec(void) {
        struct utsname u;
        unsigned major = 0, minor = 0;
        if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
                return true; /* cannot tell: let the kernel decide */
        return major > 6 || (major == 6 && minor >= 7);
}

int verb_exec(int argc, char **argv, const KsmctlOptions *o) {
        int i = 1;

        if (i < argc && streq(argv[i], "--"))
                i++;
        if (i >= argc) {
                log_error("exec: no command given; usage: ksmctl exec [--] COMMAND [ARGUMENTS...]");
                return KSMCTL_EXIT_USAGE;
        }
        if (!kernel_keeps_flag_across_exec()) {
                log_error("exec: this kernel drops PR_SET_MEMORY_MERGE at exec (Linux 6.7 keeps it); "
                          "not running %s unmerged.", argv[i]);
                return KSMCTL_EXIT_FAILURE;
        }
        if (prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0) < 0) {
                int r = negative_errno();
                log_error_errno(r, "exec: cannot switch merging on (PR_SET_MEMORY_MERGE): %m%s",
                                r == -EINVAL ? " (needs Linux 6.4 or later with CONFIG_KSM)" : "");
                return KSMCTL_EXIT_FAILURE;
        }
        execvp(argv[i], argv + i);
        int r = negative_errno();
        log_error_errno(r, "exec: cannot execute %s: %m", argv[i]);
        /* As env(1) and shells report it. */
        return r == -ENOENT ? 127 : 126;
}
