/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ksm-flags PID: a process's KSM switches as the daemon reads them
 * (procfs_read_ksm_stat()), for the shell tests:
 *
 *   ksm_merge_any: yes|no|unknown
 *   ksm_mergeable: yes|no|unknown
 *   source: ksm_stat|smaps|none
 *
 * On a kernel whose /proc/PID/ksm_stat prints the two lines (6.14 and the
 * patched test kernel) they are the kernel's; on 6.12 and older they are
 * inferred from smaps (proc-maps.h map_list_ksm_flags()), which needs
 * ptrace access to PID. Exit 1 (a message on stderr) when ksm_stat cannot be
 * read: the process is gone (ESRCH) or past exit_mm() (EINVAL). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"
#include "root.h"
#include "util.h"

static const char *word(int b) {
        return b == 1 ? "yes" : b == 0 ? "no" : "unknown";
}

int main(int argc, char **argv) {
        Root *root = NULL;
        ProcKsmStat s;
        int pid, dfd, r;

        if (argc == 2 && streq(argv[1], "self"))
                pid = getpid();
        else if (argc != 2 || safe_atoi(argv[1], &pid) < 0 || pid <= 0) {
                fprintf(stderr, "usage: ksm-flags PID|self\n");
                return 2;
        }
        r = root_open(NULL, &root);
        if (r >= 0)
                r = root_open_pid_dir(root, pid, &dfd);
        if (r >= 0) {
                r = procfs_read_ksm_stat(dfd, &s);
                close(dfd);
        }
        root_free(root);
        if (r < 0) {
                fprintf(stderr, "ksm-flags: pid %d: /proc/%d/ksm_stat: %s\n", pid, pid, strerror(-r));
                return 1;
        }
        printf("ksm_merge_any: %s\nksm_mergeable: %s\nsource: %s\n", word(s.merge_any), word(s.mergeable),
               s.flags_inferred ? "smaps" : s.merge_any >= 0 ? "ksm_stat" : "none");
        return 0;
}
