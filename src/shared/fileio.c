/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "util.h"

int read_full_file_at(int dirfd, const char *path, size_t max_size, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, alloc = 0;

        fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();

        for (;;) {
                ssize_t k;

                if (alloc - size < 1024) {
                        size_t na = alloc ? alloc * 2 : 4096;
                        if (na > max_size + 1)
                                na = max_size + 1;
                        if (na <= size)
                                return -EFBIG;
                        char *nb = realloc(buf, na);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                        alloc = na;
                }
                k = read(fd, buf + size, alloc - size - 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                size += (size_t) k;
                if (size >= max_size)
                        return -EFBIG;
        }
        buf[size] = 0;
        if (ret_size)
                *ret_size = size;
        *ret = TAKE_PTR(buf);
        return 0;
}

int read_one_line_at(int dirfd, const char *path, char **ret) {
        char *buf;
        int r = read_full_file_at(dirfd, path, 64 * 1024, &buf, NULL);
        if (r < 0)
                return r;
        buf[strcspn(buf, "\n")] = 0;
        *ret = buf;
        return 0;
}

int read_u64_at(int dirfd, const char *path, uint64_t *ret) {
        _cleanup_free_ char *line = NULL;
        int r = read_one_line_at(dirfd, path, &line);
        if (r < 0)
                return r;
        return safe_atou64(line, ret);
}

static int write_string_flags_at(int dirfd, const char *path, const char *value, int flags) {
        _cleanup_close_ int fd = -EBADF;
        size_t len = strlen(value);
        ssize_t k;

        fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY | flags);
        if (fd < 0)
                return negative_errno();
        do
                k = write(fd, value, len);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return negative_errno();
        if ((size_t) k != len)
                return -EIO;
        return 0;
}

int write_string_at(int dirfd, const char *path, const char *value) {
        /* O_TRUNC as the shell's '>' does: sysfs and tracefs take it as "replace". */
        return write_string_flags_at(dirfd, path, value, O_TRUNC);
}

int append_string_at(int dirfd, const char *path, const char *value) {
        return write_string_flags_at(dirfd, path, value, O_APPEND);
}

static int write_file_replace_full(const char *path, const char *data, size_t size, unsigned mode, bool sync) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t done = 0;

        if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
                return -ENOMEM;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        while (done < size) {
                ssize_t k = write(fd, data + done, size - done);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        int r = negative_errno();
                        (void) unlink(tmp);
                        return r;
                }
                done += (size_t) k;
        }
        if (fchmod(fd, mode) < 0 || (sync && fsync(fd) < 0) || rename(tmp, path) < 0) {
                int r = negative_errno();
                (void) unlink(tmp);
                return r;
        }
        return 0;
}

int write_file_atomic(const char *path, const char *data, size_t size, unsigned mode) {
        return write_file_replace_full(path, data, size, mode, true);
}

int state_file_parse_lines(const char *text, const char *name, StateLineParse parse, void *userdata) {
        _cleanup_free_ char *copy = strdup(text);
        unsigned line_no = 0;
        int n = 0;

        if (!copy)
                return -ENOMEM;
        for (char *line = copy, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                line_no++;
                if (isempty(line))
                        continue;
                const char *why = "cannot be read";
                int r = parse(line, &why, userdata);
                if (r == -ENOMEM)
                        return r;
                if (r <= 0)
                        log_warning("%s:%u: %s, line ignored.", name, line_no, why);
                else
                        n++;
        }
        return n;
}

int write_state_file(const char *path, const char *text, unsigned mode) {
        if (isempty(text))
                return unlink(path) < 0 && errno != ENOENT ? negative_errno() : 0;
        return write_file_atomic(path, text, strlen(text), mode);
}

int write_state_file_logged(const char *path, const char *text, const char *what, int *last_error) {
        int r = text ? write_state_file(path, text, 0600) : -ENOMEM;
        if (r < 0 && (!last_error || *last_error != r))
                log_warning_errno(r, "Cannot write %s (%s): %m%s", path, what,
                                  last_error ? "; said once until it is written again" : "");
        else if (r >= 0 && last_error && *last_error != 0)
                log_notice("Wrote %s again.", path);
        if (last_error)
                *last_error = MIN(r, 0);
        return r;
}

int write_file_replace(const char *path, const char *data, size_t size, unsigned mode) {
        return write_file_replace_full(path, data, size, mode, false);
}

bool stat_is_null_or_empty(const struct stat *st) {
        return (S_ISREG(st->st_mode) && st->st_size == 0) ||
               (S_ISCHR(st->st_mode) && st->st_rdev == makedev(1, 3));
}
