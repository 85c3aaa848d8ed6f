/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* One fixed-size datagram of the injector's protocol (injector.h), with at
 * most one fd beside it. */

/* Sends size bytes, and fd (>= 0) with SCM_RIGHTS. 0 or -errno. */
int injector_send(int sock, const void *buf, size_t size, int fd);
/* Receives one datagram: its length (0 at EOF), or -errno. The fd that came
 * with it lands in *ret_fd (-EBADF when none); any further fds are closed,
 * and so is the fd of a datagram that is not exactly size bytes long
 * (-EBADMSG), which is never truncated silently. */
int injector_recv(int sock, void *buf, size_t size, int *ret_fd);
/* Waits until sock is readable or CLOCK_MONOTONIC deadline_usec passes:
 * 1 readable (or hung up), 0 timed out, -errno. */
int injector_wait_readable(int sock, uint64_t deadline_usec);
/* The pid a pidfd names (its fdinfo's "Pid:" line): > 0, 0 when it has
 * exited, -EBADF when fd is not a pidfd. */
int injector_pidfd_pid(int fd);
