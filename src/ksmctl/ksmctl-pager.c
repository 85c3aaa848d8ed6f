/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The terminal ksmctl writes to: how wide it is, and a pager in front of it
 * for output longer than a screen, as systemctl has them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksmctl-pager.h"
#include "util.h"

static pid_t pager_pid = 0;
static int saved_stdout = -EBADF, saved_stderr = -EBADF;

size_t terminal_columns(void) {
        static bool known = false;
        static size_t columns = 0;
        struct winsize ws = {};
        unsigned c;

        if (known)
                return columns;
        known = true;
        if (safe_atou(getenv("COLUMNS"), &c) >= 0 && c > 0)
                columns = c;
        else if (isatty(STDOUT_FILENO))
                /* A terminal that does not say (a serial console): the classic width. */
                columns = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) >= 0 && ws.ws_col > 0 ? ws.ws_col : 80;
        return columns;
}

/* The child: the pager, or when none can be run, a plain copy, so that the
 * output is not lost. */
static _Noreturn void pager_exec(int read_fd, const char *pager) {
        char buf[4096];
        ssize_t n;

        if (dup2(read_fd, STDIN_FILENO) < 0)
                _exit(EXIT_FAILURE);
        /* PAGER=less then behaves as the default does. */
        (void) setenv("LESS", "FRSXMK", 0);
        if (pager)
                execl("/bin/sh", "sh", "-c", pager, (char *) NULL);
        else {
                execlp("less", "less", "-FRSXMK", (char *) NULL);
                execlp("more", "more", (char *) NULL);
        }
        while ((n = read(STDIN_FILENO, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
                if (n > 0 && write(STDOUT_FILENO, buf, (size_t) n) != n)
                        break;
        _exit(EXIT_SUCCESS);
}

int pager_open(bool enabled) {
        static const char *const variables[] = { "KSMCTL_PAGER", "SYSTEMD_PAGER", "PAGER" };
        const char *pager = NULL;
        int fds[2];
        pid_t pid;

        if (!enabled || pager_pid > 0 || !isatty(STDOUT_FILENO))
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(variables) && !pager; i++)
                pager = getenv(variables[i]);
        if (pager && (pager[strspn(pager, " \t")] == 0 || streq(pager, "cat")))
                return 0;

        (void) terminal_columns(); /* while stdout is still the terminal */
        fflush(stdout);
        fflush(stderr);
        if (pipe2(fds, O_CLOEXEC) < 0)
                return negative_errno();
        pid = fork();
        if (pid < 0) {
                int r = negative_errno();
                safe_close(fds[0]);
                safe_close(fds[1]);
                return r;
        }
        if (pid == 0)
                pager_exec(fds[0], pager);

        pager_pid = pid;
        saved_stdout = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        (void) dup2(fds[1], STDOUT_FILENO);
        /* Errors then show in order with the output, not under the pager's screen. */
        if (isatty(STDERR_FILENO)) {
                saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
                (void) dup2(fds[1], STDERR_FILENO);
        }
        safe_close(fds[0]);
        safe_close(fds[1]);
        return 0;
}

void pager_close(void) {
        if (pager_pid <= 0)
                return;
        fflush(stdout);
        fflush(stderr);
        /* Our copies of the pipe are the last: putting the terminal back is the end of file. */
        if (saved_stdout >= 0)
                (void) dup2(saved_stdout, STDOUT_FILENO);
        else
                (void) close(STDOUT_FILENO);
        if (saved_stderr >= 0)
                (void) dup2(saved_stderr, STDERR_FILENO);
        saved_stdout = safe_close(saved_stdout);
        saved_stderr = safe_close(saved_stderr);
        while (waitpid(pager_pid, NULL, 0) < 0 && errno == EINTR)
                ;
        pager_pid = 0;
}
