/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "fileio.h"
#include "log.h"
#include "tracefs.h"
#include "util.h"

/* ---- the instance (I/O) ---- */

#define INSTANCE_NAME "ksmtuned2"
/* Per-CPU ring of the instance: enough for a 200 ms window of a task that
 * takes its mmap lock for writing 50,000 times a second (measured on the
 * S2 contender: ~100 bytes per event in the ring), small enough not to
 * matter on a host. */
#define INSTANCE_BUFFER_KB "1024"

struct Tracer {
        int tracefs_fd;
        int inst_fd;
        int pipe_fd;
        bool mmap_lock;
        bool ksm_enter;
        bool ksm_stop_scan;
        bool window;
        bool made;                      /* we created the instance: remove it */
        char name[64];                  /* "instances/ksmtuned2[-PID]" */
        char carry[512];
        size_t n_carry;
};

static const char *const window_events[] = {
        "events/mmap_lock/mmap_lock_start_locking",
        "events/mmap_lock/mmap_lock_acquire_returned",
        "events/mmap_lock/mmap_lock_released",
};

/* A daemon that was SIGKILLed while another held the plain name leaves
 * "instances/ksmtuned2-PID" behind, with ksm_enter still enabled and its ring
 * buffer allocated. Remove those whose PID is gone; one still open answers
 * EBUSY and stays. */
static void remove_stale_pid_instances(int tracefs_fd) {
        int fd = openat(tracefs_fd, "instances", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return;
        DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return;
        }
        for (struct dirent *de; (de = readdir(d));) {
                const char *prefix = INSTANCE_NAME "-";
                int pid;
                if (!startswith(de->d_name, prefix) || safe_atoi(de->d_name + strlen(prefix), &pid) < 0 || pid <= 0)
                        continue;
                if (kill(pid, 0) == 0 || errno != ESRCH)
                        continue;
                if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) >= 0)
                        log_debug("Removed stale tracefs instance %s of a daemon that is gone.", de->d_name);
        }
        closedir(d);
}

static int inst_write(Tracer *t, const char *path, const char *value) {
        int r = write_string_at(t->inst_fd, path, value);
        if (r < 0)
                log_debug_errno(r, "tracefs instance: cannot write \"%s\" to %s: %m", value, path);
        return r;
}

Tracer *tracer_free(Tracer *t) {
        if (!t)
                return NULL;
        if (t->inst_fd >= 0)
                (void) write_string_at(t->inst_fd, "events/enable", "0");
        /* The instance cannot be removed while any of its files is open
         * (EBUSY). */
        safe_close(t->pipe_fd);
        safe_close(t->inst_fd);
        if (t->made && unlinkat(t->tracefs_fd, t->name, AT_REMOVEDIR) < 0)
                log_debug_errno(negative_errno(), "Cannot remove tracefs %s: %m", t->name);
        safe_close(t->tracefs_fd);
        free(t);
        return NULL;
}

static int mount_tracefs(Root *root) {
        _cleanup_free_ char *where = NULL;

        /* Only on the real system: a fake tree is never mounted on. */
        if (!isempty(root->prefix))
                return -ENOENT;
        where = root_path(root, root->sys_path, "kernel/tracing");
        if (!where)
                return -ENOMEM;
        if (mount("nodev", where, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                return negative_errno();
        return root_refresh_tracefs(root);
}

int tracer_open(Root *root, bool mount_ok, Tracer **ret, bool *ret_mounted) {
        _cleanup_(tracer_freep) Tracer *t = NULL;
        bool mounted = false;
        int r;

        if (root->tracefs_fd < 0) {
                if (!mount_ok)
                        return -ENOENT;
                r = mount_tracefs(root);
                if (r < 0)
                        return r;
                if (root->tracefs_fd < 0)
                        return -ENOENT;
                mounted = true;
        }

        t = calloc(1, sizeof *t);
        if (!t)
                return -ENOMEM;
        t->inst_fd = t->pipe_fd = -EBADF;
        t->tracefs_fd = fcntl(root->tracefs_fd, F_DUPFD_CLOEXEC, 3);
        if (t->tracefs_fd < 0)
                return negative_errno();

        /* An instance left by a daemon that was killed has no open files and
         * can be removed; one that is busy (EBUSY) belongs to another
         * running instance of the daemon (a test, a second root): that one
         * keeps it and we take a name of our own. */
        remove_stale_pid_instances(t->tracefs_fd);
        snprintf(t->name, sizeof t->name, "instances/" INSTANCE_NAME);
        if (mkdirat(t->tracefs_fd, t->name, 0700) < 0) {
                if (errno != EEXIST)
                        return negative_errno();
                if (unlinkat(t->tracefs_fd, t->name, AT_REMOVEDIR) < 0) {
                        if (errno != EBUSY)
                                return negative_errno();
                        snprintf(t->name, sizeof t->name, "instances/" INSTANCE_NAME "-%d", (int) getpid());
                        (void) unlinkat(t->tracefs_fd, t->name, AT_REMOVEDIR);
                }
                if (mkdirat(t->tracefs_fd, t->name, 0700) < 0)
                        return negative_errno();
        }
        t->made = true;
        t->inst_fd = openat(t->tracefs_fd, t->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (t->inst_fd < 0)
                return negative_errno();

        (void) inst_write(t, "events/enable", "0");
        for (size_t i = 0; i < ELEMENTSOF(window_events); i++) {
                char p[128];
                snprintf(p, sizeof p, "%s/filter", window_events[i]);
                (void) inst_write(t, p, "0");
        }
        (void) inst_write(t, "buffer_size_kb", INSTANCE_BUFFER_KB);
        /* trace_pipe's poll waits for the ring to be buffer_percent full
         * (50 by default): one ksm_enter would never wake us. */
        (void) inst_write(t, "buffer_percent", "0");
        /* ksmd may move between CPUs while it waits: its start_locking and
         * acquire_returned must be on one clock. */
        (void) inst_write(t, "trace_clock", "mono");
        (void) inst_write(t, "options/record-tgid", "1");
        (void) inst_write(t, "tracing_on", "1");
        int fd = openat(t->inst_fd, "trace", O_WRONLY | O_TRUNC | O_CLOEXEC);
        safe_close(fd);

        t->mmap_lock = faccessat(t->inst_fd, "events/mmap_lock/mmap_lock_acquire_returned/enable", F_OK, 0) >= 0 &&
                       faccessat(t->inst_fd, "events/mmap_lock/mmap_lock_start_locking/enable", F_OK, 0) >= 0 &&
                       faccessat(t->inst_fd, "events/mmap_lock/mmap_lock_released/enable", F_OK, 0) >= 0;
        t->ksm_enter = inst_write(t, "events/ksm/ksm_enter/enable", "1") >= 0;
        /* once per full scan: at most a few hundred lines a second while a
         * tiny set is scanned flat out, one per scan otherwise */
        t->ksm_stop_scan = inst_write(t, "events/ksm/ksm_stop_scan/enable", "1") >= 0;
        if (!t->mmap_lock && !t->ksm_enter)
                return -EOPNOTSUPP;

        t->pipe_fd = openat(t->inst_fd, "trace_pipe", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (t->pipe_fd < 0)
                return negative_errno();

        if (ret_mounted)
                *ret_mounted = mounted;
        *ret = TAKE_PTR(t);
        return 0;
}

const char *tracer_name(const Tracer *t) {
        return t->name;
}

int tracer_fd(const Tracer *t) {
        return t ? t->pipe_fd : -EBADF;
}

bool tracer_has_mmap_lock_events(const Tracer *t) {
        return t && t->mmap_lock;
}

bool tracer_window_active(const Tracer *t) {
        return t && t->window;
}

static void emit_line(const char *s, size_t n, TracerEventCallback cb, void *userdata) {
        TraceEvent e;
        if (tracefs_parse_line(s, n, &e) >= 0)
                cb(&e, userdata);
}

int tracer_read(Tracer *t, size_t budget_bytes, TracerEventCallback cb, void *userdata) {
        char buf[64 * 1024];
        size_t total = 0;

        while (total < budget_bytes) {
                ssize_t k = read(t->pipe_fd, buf, MIN(sizeof buf, budget_bytes - total));
                if (k < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                break;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                total += (size_t) k;

                const char *p = buf, *end = buf + k;
                while (p < end) {
                        const char *nl = memchr(p, '\n', (size_t) (end - p));
                        if (!nl) {
                                /* a line cut by the read size: keep it for next time */
                                size_t n = (size_t) (end - p);
                                if (t->n_carry + n < sizeof t->carry) {
                                        memcpy(t->carry + t->n_carry, p, n);
                                        t->n_carry += n;
                                } else
                                        t->n_carry = 0;
                                break;
                        }
                        if (t->n_carry > 0) {
                                size_t n = (size_t) (nl - p);
                                if (t->n_carry + n < sizeof t->carry) {
                                        memcpy(t->carry + t->n_carry, p, n);
                                        emit_line(t->carry, t->n_carry + n, cb, userdata);
                                }
                                t->n_carry = 0;
                        } else
                                emit_line(p, (size_t) (nl - p), cb, userdata);
                        p = nl + 1;
                }
        }
        return (int) MIN(total, (size_t) INT32_MAX);
}

int tracer_window_start(Tracer *t, int ksmd_pid, int khugepaged_pid) {
        char f[128];
        int r;

        if (!t->mmap_lock)
                return -EOPNOTSUPP;
        if (t->window)
                return 0;
        /* khugepaged's read locks too (a few per scanned mm, every 10 s
         * by default): whether it drops a contended one (seed 002). */
        char kh[48] = "";
        if (khugepaged_pid > 0)
                snprintf(kh, sizeof kh, " || common_pid == %d", khugepaged_pid);
        snprintf(f, sizeof f, "common_pid == %d%s", ksmd_pid, kh);
        r = inst_write(t, "events/mmap_lock/mmap_lock_start_locking/filter", f);
        if (r < 0)
                return r;
        snprintf(f, sizeof f, "common_pid == %d%s || write == 1", ksmd_pid, kh);
        r = inst_write(t, "events/mmap_lock/mmap_lock_acquire_returned/filter", f);
        if (r < 0)
                return r;
        snprintf(f, sizeof f, "(write == 1 && common_pid != %d)%s", ksmd_pid, kh);
        r = inst_write(t, "events/mmap_lock/mmap_lock_released/filter", f);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(window_events); i++) {
                char p[128];
                snprintf(p, sizeof p, "%s/enable", window_events[i]);
                r = inst_write(t, p, "1");
                if (r < 0) {
                        (void) tracer_window_stop(t);
                        return r;
                }
        }
        t->window = true;
        return 0;
}

int tracer_window_stop(Tracer *t) {
        int first = 0;
        for (size_t i = 0; i < ELEMENTSOF(window_events); i++) {
                char p[128];
                snprintf(p, sizeof p, "%s/enable", window_events[i]);
                int r = inst_write(t, p, "0");
                if (r < 0 && first == 0)
                        first = r;
        }
        t->window = false;
        return first;
}
