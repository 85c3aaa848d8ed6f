/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* Reading and writing files: the I/O half of what util.h was. */

/* Reads a whole file below dirfd (at most max_size bytes, -EFBIG beyond) into
 * a NUL-terminated buffer. */
int read_full_file_at(int dirfd, const char *path, size_t max_size, char **ret, size_t *ret_size);
/* First line, without its newline. */
int read_one_line_at(int dirfd, const char *path, char **ret);
int read_u64_at(int dirfd, const char *path, uint64_t *ret);
/* Writes the string with a single write(2) so the kernel's errno comes back. */
int write_string_at(int dirfd, const char *path, const char *value);
/* The shell's '>>': tracefs's kprobe_events adds a probe, where '>' (O_TRUNC)
 * would remove every probe on the system first. */
int append_string_at(int dirfd, const char *path, const char *value);
/* Atomic replace: write to a temporary file in the same directory, rename. */
int write_file_atomic(const char *path, const char *data, size_t size, unsigned mode);
/* The lines of a state file an earlier instance wrote, one record each:
 * parse gets each non-empty line (writable) and returns 1 taken, 0 or a
 * negative errno with *why set for a line it cannot read (logged with name
 * and the line's number, and skipped), -ENOMEM to stop. The number of lines
 * taken, or -ENOMEM. */
typedef int (*StateLineParse)(char *line, const char **why, void *userdata);
int state_file_parse_lines(const char *text, const char *name, StateLineParse parse, void *userdata);
/* A state file: text written as write_file_atomic() does, or the file
 * removed when there is nothing to keep (NULL or ""; none there is fine). */
int write_state_file(const char *path, const char *text, unsigned mode);
/* The same, root's alone (0600), with a warning naming path and what it
 * is for when it fails; text NULL is ENOMEM (it could not be made). With
 * last_error (0 at first), for a file written again until it succeeds: the
 * warning once per errno, and a notice when it is written again. */
int write_state_file_logged(const char *path, const char *text, const char *what, int *last_error);
/* The same without the fsync(2): atomic for readers (they see the old file
 * or the new one), not durable across a crash. For a file rewritten every
 * tick (the metrics), where a flush a second on a disk costs a journal
 * commit each and a stale copy after a crash is worth nothing. */
int write_file_replace(const char *path, const char *data, size_t size, unsigned mode);
/* An empty file or /dev/null (a symlink to it, followed): what masks a
 * file of the same name in a later directory, as in systemd. */
bool stat_is_null_or_empty(const struct stat *st);
