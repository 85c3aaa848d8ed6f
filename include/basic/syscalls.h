/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Syscalls and constants that glibc 2.36 or its headers may lack. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE 67
#endif
#ifndef PR_GET_MEMORY_MERGE
#define PR_GET_MEMORY_MERGE 68
#endif
#ifndef MADV_MERGEABLE
#define MADV_MERGEABLE 12
#endif
#ifndef MADV_UNMERGEABLE
#define MADV_UNMERGEABLE 13
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
#ifndef __NR_pidfd_send_signal
#define __NR_pidfd_send_signal 424
#endif
#ifndef __NR_process_madvise
#define __NR_process_madvise 440
#endif

static inline int sys_pidfd_open(pid_t pid, unsigned flags) {
        return (int) syscall(__NR_pidfd_open, pid, flags);
}

static inline long sys_process_madvise(int pidfd, const struct iovec *iov, size_t n, int advice,
                                       unsigned flags) {
        return syscall(__NR_process_madvise, pidfd, iov, n, advice, flags);
}

/* Whether the process behind a pidfd still runs: the pidfd turns readable
 * when it exits. Unlike pidfd_send_signal(fd, 0), this needs no permission
 * to signal it (CAP_KILL for another user's process). 1 alive, 0 exited. */
static inline int pidfd_is_alive(int pidfd) {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };
        int k = poll(&p, 1, 0);
        return k == 0 ? 1 : k > 0 ? 0 : -errno;
}

static inline int sys_pidfd_send_signal(int pidfd, int sig, siginfo_t *info, unsigned flags) {
        return (int) syscall(__NR_pidfd_send_signal, pidfd, sig, info, flags);
}
