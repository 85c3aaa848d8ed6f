/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A single-threaded process whose only thread sits in D: it vfork()s, and
 * the child renames itself "vfork-child" (so that a policy naming the
 * parent's comm does not match it) and pause()s. The parent waits for it in
 * wait_for_vfork_done(), killable but uninterruptible: a ptrace interrupt
 * does not stop it until the child exits.
 *
 *   vfork-stuck
 *
 * The child prints "child PID"; once it is gone the parent prints
 * "released", then sleeps in pause() until a signal ends it. 8 MiB of
 * duplicate pages give KSM something to merge. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(void) {
        size_t len = 8U << 20;
        char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return 1;
        memset(p, 0x5a, len);
        setvbuf(stdout, NULL, _IONBF, 0);

        pid_t c = vfork();
        if (c == 0) {
                /* Only async-signal-safe calls that touch no shared memory
                 * beyond this frame. */
                char line[32];
                (void) prctl(PR_SET_NAME, "vfork-child");
                int n = snprintf(line, sizeof line, "child %d\n", (int) getpid());
                (void) !write(STDOUT_FILENO, line, (size_t) n);
                for (;;)
                        pause();
        }
        if (c < 0)
                return 1;
        printf("released\n");
        for (;;)
                pause();
}
