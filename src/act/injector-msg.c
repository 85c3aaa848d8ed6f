/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The injector's datagrams (injector-msg.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "injector-msg.h"
#include "macro.h"
#include "util.h"

int injector_send(int sock, const void *buf, size_t size, int fd) {
        struct iovec iov = { .iov_base = (void *) buf, .iov_len = size };
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {};
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (fd >= 0) {
                mh.msg_control = control.buf;
                mh.msg_controllen = sizeof control.buf;
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &fd, sizeof fd);
        }
        for (;;) {
                ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);
                if (n >= 0)
                        return (size_t) n == size ? 0 : -EMSGSIZE;
                if (errno != EINTR)
                        return negative_errno();
        }
}

int injector_recv(int sock, void *buf, size_t size, int *ret_fd) {
        struct iovec iov = { .iov_base = buf, .iov_len = size };
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int) * 8)];
        } control;
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                             .msg_controllen = sizeof control.buf };
        ssize_t n;

        *ret_fd = -EBADF;
        do
                n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_TRUNC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return negative_errno();
        int fd = -EBADF;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k; i++) {
                        int f;
                        memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
                        if (fd < 0)
                                fd = f;
                        else
                                safe_close(f);
                }
        }
        if (n > 0 && ((size_t) n != size || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))) {
                safe_close(fd);
                return -EBADMSG;
        }
        *ret_fd = fd;
        return (int) n;
}

int injector_wait_readable(int sock, uint64_t deadline_usec) {
        for (;;) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                if (now >= deadline_usec)
                        return 0;
                uint64_t left_ms = (deadline_usec - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC;
                struct pollfd p = { .fd = sock, .events = POLLIN };
                int k = poll(&p, 1, (int) MIN(left_ms, (uint64_t) 60000));
                if (k < 0 && errno != EINTR)
                        return negative_errno();
                if (k > 0)
                        return 1;
        }
}

int injector_pidfd_pid(int fd) {
        char path[64], buf[1024];
        snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
        _cleanup_close_ int f = open(path, O_RDONLY | O_CLOEXEC);
        if (f < 0)
                return -EBADF;
        ssize_t n = read(f, buf, sizeof buf - 1);
        if (n <= 0)
                return -EBADF;
        buf[n] = 0;
        /* Only a pidfd's fdinfo has "Pid:"; -1 once the process is gone. */
        const char *p = strstr(buf, "\nPid:\t");
        if (!p)
                return -EBADF;
        int pid;
        if (sscanf(p + 6, "%d", &pid) != 1)
                return -EBADF;
        return pid < 0 ? 0 : pid;
}

