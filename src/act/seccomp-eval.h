/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

/* Runs a classic-BPF seccomp filter the way the kernel would, on a
 * seccomp_data we make up: to know, before injecting a system call into a
 * process with a filter, whether the filter lets that call through or
 * would kill, trap or fail it. Only the instructions seccomp accepts are
 * implemented (seccomp_check_filter()); anything else, a jump out of the
 * program or a load out of bounds is -EINVAL, which callers treat as "may
 * not". Returns the filter's SECCOMP_RET_* value, or -EINVAL. */
int64_t seccomp_eval(const struct sock_filter *prog, size_t n, const struct seccomp_data *d);

/* Whether an action lets the call run: ALLOW and LOG do; ERRNO, TRAP,
 * TRACE (no seccomp-aware tracer: ENOSYS), USER_NOTIF and KILL do not. */
static inline int seccomp_action_allows(uint32_t ret) {
        uint32_t a = ret & SECCOMP_RET_ACTION_FULL;
        return a == SECCOMP_RET_ALLOW || a == SECCOMP_RET_LOG;
}
