/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _pure_ __attribute__((pure))
#define _warn_unused_result_ __attribute__((warn_unused_result))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define CLAMP(x, lo, hi) ((x) < (lo) ? (lo) : (x) > (hi) ? (hi) : (x))

#define STRINGIFY(x) #x
#define XSTRINGIFY(x) STRINGIFY(x)

/* Take ownership of a pointer or fd out of a _cleanup_ variable. */
#define TAKE_PTR(p)                         \
        ({                                  \
                __typeof__(p) _ptr_ = (p);  \
                (p) = NULL;                 \
                _ptr_;                      \
        })
#define TAKE_FD(fd)                         \
        ({                                  \
                int _fd_ = (fd);            \
                (fd) = -EBADF;              \
                _fd_;                       \
        })
/* The same for a struct with a _done() destructor: the variable is left
 * zeroed, which the destructor must take as empty. */
#define TAKE_STRUCT(s)                                  \
        ({                                              \
                __typeof__(s) _s_ = (s);                \
                (s) = (__typeof__(s)) {};               \
                _s_;                                    \
        })

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}
static inline void closep(int *fd) {
        *fd = safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Define a cleanup helper for a type with a destructor returning NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)     \
        static inline void func##p(type *p) {       \
                if (*p)                             \
                        *p = func(*p);              \
        }

static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

#define streq(a, b) (strcmp((a), (b)) == 0)
#define strneq(a, b, n) (strncmp((a), (b), (n)) == 0)
#define isempty(s) (!(s) || !*(s))
#define strna(s) ((s) ? (s) : "n/a")
#define strempty(s) ((s) ? (s) : "")
#define yes_no(b) ((b) ? "yes" : "no")

#define NSEC_PER_USEC UINT64_C(1000)
#define NSEC_PER_MSEC UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define USEC_PER_SEC UINT64_C(1000000)
#define NSEC_PER_SEC UINT64_C(1000000000)
#define PAGE_SIZE_DEFAULT UINT64_C(4096)
/* Room for a process name as trace lines print it (the tracefs parser cuts
 * a longer field to fit): the kernel keeps at most TASK_COMM_LEN - 1 = 15
 * characters (its TASK_COMM_LEN, 16, counts the NUL), so this leaves a byte
 * to spare. */
#define TASK_COMM_SIZE 17
