/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ksm-guard.h"
#include "workload.h"

int workload_start(Workload *w, const char *const *args) {
        return workload_spawn(w, "KSM_WORKLOAD", args, false);
}

int workload_spawn(Workload *w, const char *bin, const char *const *args, bool keep_stdout) {
        int in[2], out[2];
        char *argv[32];
        size_t n = 0;

        if (bin && !strchr(bin, '/'))
                bin = getenv(bin);
        if (!bin)
                return -ENOENT;
        argv[n++] = (char *) bin;
        for (; args && *args && n < 31; args++)
                argv[n++] = (char *) *args;
        argv[n] = NULL;

        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                dup2(in[0], STDIN_FILENO);
                dup2(out[1], STDOUT_FILENO);
                execv(bin, argv);
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        ksm_guard_track_child(pid);

        char line[128] = "";
        size_t got = 0;
        struct pollfd p = { .fd = out[0], .events = POLLIN };
        while (got < sizeof line - 1 && !strchr(line, '\n')) {
                if (poll(&p, 1, 30000) <= 0)
                        break;
                ssize_t k = read(out[0], line + got, sizeof line - 1 - got);
                if (k <= 0)
                        break;
                got += (size_t) k;
                line[got] = 0;
        }
        int rpid = 0;
        void *addr = NULL;
        if (sscanf(line, "ready %d %p", &rpid, &addr) != 2 || rpid != pid) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                ksm_guard_untrack_child(pid);
                close(in[1]);
                close(out[0]);
                return -EIO;
        }
        if (keep_stdout)
                w->stdout_fd = out[0];
        else {
                close(out[0]);
                w->stdout_fd = -1;
        }
        w->pid = pid;
        w->stdin_fd = in[1];
        w->addr = (uintptr_t) addr;
        return 0;
}

int workload_stop(Workload *w) {
        int status = 0;
        if (w->pid <= 0)
                return -ESRCH;
        close(w->stdin_fd);
        if (w->stdout_fd >= 0)
                close(w->stdout_fd);
        w->stdout_fd = -1;
        for (int i = 0; i < 500; i++) {
                pid_t r = waitpid(w->pid, &status, WNOHANG);
                if (r == w->pid)
                        goto done;
                usleep(10000);
        }
        kill(w->pid, SIGKILL);
        waitpid(w->pid, &status, 0);
done:
        ksm_guard_untrack_child(w->pid);
        w->pid = 0;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int workload_command(Workload *w, const char *line, char *buf, size_t n, int timeout_ms) {
        char cmd[256];
        size_t got = 0;
        int len = snprintf(cmd, sizeof cmd, "%s\n", line);

        if (w->stdout_fd < 0 || n == 0)
                return -EBADF;
        if (write(w->stdin_fd, cmd, (size_t) len) != len)
                return -errno;
        buf[0] = 0;
        /* Read byte by byte so nothing after the reply's newline is consumed. */
        while (got < n - 1) {
                struct pollfd p = { .fd = w->stdout_fd, .events = POLLIN };
                if (poll(&p, 1, timeout_ms) <= 0)
                        return -ETIMEDOUT;
                char c;
                ssize_t k = read(w->stdout_fd, &c, 1);
                if (k <= 0)
                        return -EIO;
                if (c == '\n')
                        break;
                buf[got++] = c;
                buf[got] = 0;
        }
        return 0;
}
