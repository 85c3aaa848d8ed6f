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
/* The windows' instance is the main one's name with this suffix. */
#define LOCKS_SUFFIX "-locks"
/* Per-CPU ring of the main instance: ksm_enter and ksm_stop_scan lines
 * (~90 bytes), thousands of them while the pipe rests (a fork storm's
 * coalesced wake-up). */
#define INSTANCE_BUFFER_KB "256"
/* Per-CPU ring of the windows' instance: enough for a 200 ms window of a
 * task that takes its mmap lock for writing 50,000 times a second
 * (measured on the S2 contender: ~100 bytes per event in the ring), small
 * enough not to matter on a host. */
#define LOCKS_BUFFER_KB "1024"

typedef struct TracePipe {
        int fd;
        char carry[512];                /* a line cut by the read size */
        size_t n_carry;
} TracePipe;

/* Two instances. The main one carries ksm_enter and ksm_stop_scan for the
 * daemon's whole life. The windows' one carries the mmap_lock events (and
 * the seed-001 kprobes), enabled for each window only: a window switches
 * them on with recording off, then is that instance's tracing_on switched
 * on and off, then switches them off again.
 *
 * Registered, an event costs every mmap lock call on the host, and ksmd,
 * which takes a page's mm lock and the lock of every mm whose pages it
 * compares the page with on its way down the unstable tree, most: each
 * lock three events. An event with a filter is written out in full before
 * the filter looks at it, tracing_on or not (the kernel's buffered-event
 * path for filtered events), so enabled between windows ksmd needed 1.7x
 * the CPU to merge S4's fleet (6 x 256 MiB, 75% alike, at aggressive
 * knobs: 4.0-4.4 s against 2.3-2.5 s with the events off; 6.18,
 * 2026-12-04). Until commit 9fde544 (later that day) they were
 * registered for a burst's quick windows soft-disabled (a disable_event
 * trigger on oom's mark_victim), each window flipping their soft flag:
 * 2.9-3.0 s for that merge, still a quarter over the events off, and
 * taking the trigger away waits for tracepoint_synchronize_unregister(),
 * 100-115 ms of the daemon's loop blocked at every burst's end. Switching
 * the three events on or off patches kernel text (a static key and a
 * static call per tracepoint): 1.5-3 ms each way on the test machine's
 * 6.18 (idle and in a fork storm alike; bench-trace-cost.sh), 38 ms once
 * measured there on an earlier day, so the tuner spaces windows by what
 * switching costs (tracer_switch_nsec). Switched per window, ksmd needed
 * 1.59/1.78 us a scanned page in Q1 against 1.98/2.05 us with the events
 * kept for the quick windows, and 3.77/4.19 s for S4 against 4.42/4.93 s
 * (6.18, 2 runs each, the same afternoon).
 *
 * The order keeps a window exact: every event is on before tracing_on is,
 * and tracing_on is off before any event goes, so no window records a
 * half-switched set (a start_locking from before it paired with an
 * acquire after it). Between "enable" and tracing_on the events are
 * written out for nothing, for the few ms of the switch. */
struct Tracer {
        int tracefs_fd;
        int inst_fd;
        int locks_fd;
        TracePipe pipe, locks_pipe;
        bool mmap_lock;
        bool ksm_enter;
        bool ksm_stop_scan;
        bool window;                    /* the window events are enabled and recording */
        int filter_ksmd, filter_khugepaged; /* the pids the events' filters name (0: none written) */
        bool made, locks_made;          /* we created the instances: remove them */
        char probe_group[32];           /* "ksmtuned2_PID": our kprobe events */
        bool vma_probe[TRACER_MAX_VMA_PROBES]; /* placed on vma_lock_symbols[i] */
        bool vma_probe_armed;
        char name[64];                  /* "instances/ksmtuned2[-PID]" */
        char locks_name[64 + sizeof LOCKS_SUFFIX];
        uint64_t switch_nsec;           /* spent switching the window events on and off */
        unsigned switches;              /* each way counts one */
};

/* Seed 001: ksmd looking a page up under the read lock of its VMA instead
 * of the mmap lock. No tracepoint tells it; a kprobe on the functions that
 * take a VMA's read lock by address does, filtered to ksmd: outside ksmd
 * only the page-fault path and /proc readers call them, and ksmd, a kernel
 * thread, takes no user page fault. lock_vma_under_rcu() is what the 6.12
 * port uses (tests/vmkernel/patches/0002), vma_start_read_unlocked() the
 * seed's own helper on newer kernels, lock_next_vma() its RFC 3/3's scan.
 * Each exists or not on a given kernel: a probe is placed on those that do.
 * The probes live in a group of this daemon's own (kprobe_events is global),
 * are armed only during the windows that need them (every page fault pays
 * for an armed probe) and are removed at exit; those of a daemon that was
 * SIGKILLed are removed by the next one. Kernels without kprobe events
 * (CONFIG_KPROBE_EVENTS=n, as the test machine's 6.18) have none.
 * Arming and disarming patches the text every page fault runs: under QEMU's
 * multi-threaded TCG (7.2) a guest CPU went on running the removed int3 and
 * the 6.12 guest panicked ("Oops: int3" at lock_vma_under_rcu+0x1); the
 * test guests run single-threaded TCG (tests/vmkernel/run-in-guest.sh). */
static const char *const vma_lock_symbols[TRACER_MAX_VMA_PROBES] = {
        "lock_vma_under_rcu",
        "vma_start_read_unlocked",
        "lock_next_vma",
};
#define VMA_PROBE_GROUP_PREFIX "ksmtuned2_"

static const char *const window_events[] = {
        "events/mmap_lock/mmap_lock_start_locking",
        "events/mmap_lock/mmap_lock_acquire_returned",
        "events/mmap_lock/mmap_lock_released",
};
/* The daemon that left an instance or a kprobe behind no longer exists
 * (EPERM: it exists, under another user). */
static bool pid_gone(int pid) {
        return kill(pid, 0) < 0 && errno == ESRCH;
}

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
                char digits[32];
                int pid;
                if (!startswith(de->d_name, prefix))
                        continue;
                /* "ksmtuned2-PID" or its windows' "ksmtuned2-PID-locks" */
                strscpy(digits, sizeof digits, de->d_name + strlen(prefix));
                if (endswith(digits, LOCKS_SUFFIX))
                        digits[strlen(digits) - strlen(LOCKS_SUFFIX)] = 0;
                if (safe_atoi(digits, &pid) < 0 || pid <= 0)
                        continue;
                if (!pid_gone(pid))
                        continue;
                if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) >= 0)
                        log_debug("Removed stale tracefs instance %s of a daemon that is gone.", de->d_name);
        }
        closedir(d);
}

/* Removes the kprobe events of daemons that are gone ("p:ksmtuned2_PID/NAME
 * SYMBOL" lines of kprobe_events whose PID no longer exists). Their
 * instances are removed first: an event enabled anywhere cannot go (EBUSY). */
static void remove_stale_probes(int tracefs_fd) {
        _cleanup_free_ char *buf = NULL;
        size_t size;

        if (read_full_file_at(tracefs_fd, "kprobe_events", 64 * 1024, &buf, &size) < 0)
                return;
        for (char *line = buf, *next; line && *line; line = next) {
                char cmd[128], *sp;
                int pid;

                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                if (!startswith(line, "p:" VMA_PROBE_GROUP_PREFIX))
                        continue;
                sp = strchr(line, ' ');
                if (sp)
                        *sp = 0;
                char *slash = strchr(line, '/');
                if (!slash)
                        continue;
                *slash = 0;
                if (safe_atoi(line + strlen("p:" VMA_PROBE_GROUP_PREFIX), &pid) < 0 || pid <= 0 || !pid_gone(pid))
                        continue;
                snprintf(cmd, sizeof cmd, "-:%s/%s", line + 2, slash + 1);
                if (append_string_at(tracefs_fd, "kprobe_events", cmd) >= 0)
                        log_debug("Removed the stale kprobe event %s/%s of a daemon that is gone.", line + 2,
                                  slash + 1);
        }
}

static void place_vma_probes(Tracer *t) {
        snprintf(t->probe_group, sizeof t->probe_group, VMA_PROBE_GROUP_PREFIX "%d", (int) getpid());
        for (size_t i = 0; i < ELEMENTSOF(vma_lock_symbols); i++) {
                char cmd[128];
                snprintf(cmd, sizeof cmd, "p:%s/" TRACE_VMA_PROBE_EVENT "%zu %s", t->probe_group, i,
                         vma_lock_symbols[i]);
                /* ENOENT: no kprobe events at all; EINVAL/ENOENT in
                 * error_log: no such function on this kernel */
                int r = append_string_at(t->tracefs_fd, "kprobe_events", cmd);
                if (r == -ENOENT && faccessat(t->tracefs_fd, "kprobe_events", F_OK, 0) < 0)
                        return;
                t->vma_probe[i] = r >= 0;
                log_debug("kprobe on %s (seed 001): %s", vma_lock_symbols[i],
                          r >= 0 ? "placed" : strerror(-r));
        }
}

static void vma_probe_path(const Tracer *t, size_t i, const char *file, char *buf, size_t n) {
        snprintf(buf, n, "events/%s/" TRACE_VMA_PROBE_EVENT "%zu/%s", t->probe_group, i, file);
}

static void remove_vma_probes(Tracer *t) {
        for (size_t i = 0; i < ELEMENTSOF(vma_lock_symbols); i++) {
                char cmd[128];
                if (!t->vma_probe[i])
                        continue;
                snprintf(cmd, sizeof cmd, "-:%s/" TRACE_VMA_PROBE_EVENT "%zu", t->probe_group, i);
                int r = append_string_at(t->tracefs_fd, "kprobe_events", cmd);
                if (r < 0)
                        log_debug_errno(r, "Cannot remove the kprobe event %s: %m", cmd + 2);
                t->vma_probe[i] = false;
        }
}

static int dir_write(int dir_fd, const char *path, const char *value) {
        int r = write_string_at(dir_fd, path, value);
        if (r < 0)
                log_debug_errno(r, "tracefs instance: cannot write \"%s\" to %s: %m", value, path);
        return r;
}

static int inst_write(Tracer *t, const char *path, const char *value) {
        return dir_write(t->inst_fd, path, value);
}

static int locks_write(Tracer *t, const char *path, const char *value) {
        return dir_write(t->locks_fd, path, value);
}

static void remove_instance(Tracer *t, int *fd, TracePipe *pipe, bool made, const char *name) {
        if (*fd >= 0)
                (void) write_string_at(*fd, "events/enable", "0");
        /* The instance cannot be removed while any of its files is open
         * (EBUSY). */
        pipe->fd = safe_close(pipe->fd);
        *fd = safe_close(*fd);
        if (made && unlinkat(t->tracefs_fd, name, AT_REMOVEDIR) < 0)
                log_debug_errno(negative_errno(), "Cannot remove tracefs %s: %m", name);
}

Tracer *tracer_free(Tracer *t) {
        if (!t)
                return NULL;
        (void) tracer_window_stop(t);
        remove_instance(t, &t->locks_fd, &t->locks_pipe, t->locks_made, t->locks_name);
        remove_instance(t, &t->inst_fd, &t->pipe, t->made, t->name);
        if (t->tracefs_fd >= 0)
                remove_vma_probes(t);
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


/* Makes instance "name" (a stale one of the same name, whose files nobody
 * holds open, is replaced) and opens it. -EBUSY: another running daemon
 * holds it. */
static int make_instance(Tracer *t, const char *name, int *ret_fd) {
        if (mkdirat(t->tracefs_fd, name, 0700) < 0) {
                if (errno != EEXIST)
                        return negative_errno();
                if (unlinkat(t->tracefs_fd, name, AT_REMOVEDIR) < 0)
                        return negative_errno();
                if (mkdirat(t->tracefs_fd, name, 0700) < 0)
                        return negative_errno();
        }
        *ret_fd = openat(t->tracefs_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (*ret_fd < 0) {
                int r = negative_errno();
                (void) unlinkat(t->tracefs_fd, name, AT_REMOVEDIR);
                return r;
        }
        return 0;
}

/* What both instances are set to: nothing enabled, their own ring, and
 * the monotonic clock (ksmd may move between CPUs while it waits: its
 * start_locking and acquire_returned must be on one clock). */
static void setup_instance(int fd, const char *buffer_kb) {
        (void) dir_write(fd, "events/enable", "0");
        for (size_t i = 0; i < ELEMENTSOF(window_events); i++) {
                char p[128];
                snprintf(p, sizeof p, "%s/filter", window_events[i]);
                (void) dir_write(fd, p, "0");
        }
        (void) dir_write(fd, "buffer_size_kb", buffer_kb);
        /* trace_pipe's poll waits for the ring to be buffer_percent full
         * (50 by default): one ksm_enter would never wake us. */
        (void) dir_write(fd, "buffer_percent", "0");
        (void) dir_write(fd, "trace_clock", "mono");
        (void) dir_write(fd, "options/record-tgid", "1");
        int tfd = openat(fd, "trace", O_WRONLY | O_TRUNC | O_CLOEXEC);
        safe_close(tfd);
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
        t->inst_fd = t->locks_fd = t->pipe.fd = t->locks_pipe.fd = -EBADF;
        t->tracefs_fd = fcntl(root->tracefs_fd, F_DUPFD_CLOEXEC, 3);
        if (t->tracefs_fd < 0)
                return negative_errno();

        /* An instance left by a daemon that was killed has no open files and
         * can be removed; one that is busy (EBUSY) belongs to another
         * running instance of the daemon (a test, a second root): that one
         * keeps it and we take a name of our own. */
        remove_stale_pid_instances(t->tracefs_fd);
        snprintf(t->name, sizeof t->name, "instances/" INSTANCE_NAME);
        r = make_instance(t, t->name, &t->inst_fd);
        if (r == -EBUSY) {
                snprintf(t->name, sizeof t->name, "instances/" INSTANCE_NAME "-%d", (int) getpid());
                r = make_instance(t, t->name, &t->inst_fd);
        }
        if (r < 0)
                return r;
        t->made = true;
        remove_stale_probes(t->tracefs_fd);
        setup_instance(t->inst_fd, INSTANCE_BUFFER_KB);
        (void) inst_write(t, "tracing_on", "1");

        t->ksm_enter = inst_write(t, "events/ksm/ksm_enter/enable", "1") >= 0;
        /* once per full scan: at most a few hundred lines a second while a
         * tiny set is scanned flat out, one per scan otherwise */
        t->ksm_stop_scan = inst_write(t, "events/ksm/ksm_stop_scan/enable", "1") >= 0;

        /* The windows' instance: recording off until a window starts. */
        snprintf(t->locks_name, sizeof t->locks_name, "%s" LOCKS_SUFFIX, t->name);
        r = make_instance(t, t->locks_name, &t->locks_fd);
        if (r >= 0) {
                t->locks_made = true;
                setup_instance(t->locks_fd, LOCKS_BUFFER_KB);
                (void) locks_write(t, "tracing_on", "0");
                t->mmap_lock = faccessat(t->locks_fd, "events/mmap_lock/mmap_lock_acquire_returned/enable", F_OK, 0) >= 0 &&
                               faccessat(t->locks_fd, "events/mmap_lock/mmap_lock_start_locking/enable", F_OK, 0) >= 0 &&
                               faccessat(t->locks_fd, "events/mmap_lock/mmap_lock_released/enable", F_OK, 0) >= 0;
        } else
                log_debug_errno(r, "Cannot make tracefs %s, no contention windows: %m", t->locks_name);
        if (!t->mmap_lock && !t->ksm_enter)
                return -EOPNOTSUPP;
        if (t->mmap_lock) {
                t->locks_pipe.fd = openat(t->locks_fd, "trace_pipe", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
                if (t->locks_pipe.fd < 0)
                        return negative_errno();
                place_vma_probes(t);
        }

        t->pipe.fd = openat(t->inst_fd, "trace_pipe", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (t->pipe.fd < 0)
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
        return t ? t->pipe.fd : -EBADF;
}

bool tracer_has_mmap_lock_events(const Tracer *t) {
        return t && t->mmap_lock;
}

bool tracer_window_active(const Tracer *t) {
        return t && t->window;
}

bool tracer_has_vma_probe(const Tracer *t) {
        if (!t)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(vma_lock_symbols); i++)
                if (t->vma_probe[i])
                        return true;
        return false;
}

size_t tracer_vma_probe_symbols(const Tracer *t, char *buf, size_t n) {
        size_t k = 0;
        if (n > 0)
                buf[0] = 0;
        for (size_t i = 0; t && i < ELEMENTSOF(vma_lock_symbols); i++)
                if (t->vma_probe[i] && n > 0) {
                        size_t used = strlen(buf);
                        snprintf(buf + used, n - used, "%s%s", k++ ? ", " : "", vma_lock_symbols[i]);
                }
        return k;
}

bool tracer_window_vma_probe_armed(const Tracer *t) {
        return t && t->vma_probe_armed;
}

static void emit_line(const char *s, size_t n, TracerEventCallback cb, void *userdata) {
        TraceEvent e;
        if (tracefs_parse_line(s, n, &e) >= 0)
                cb(&e, userdata);
}


static int read_pipe(TracePipe *tp, size_t budget_bytes, TracerEventCallback cb, void *userdata) {
        char buf[64 * 1024];
        size_t total = 0;

        if (tp->fd < 0)
                return 0;
        while (total < budget_bytes) {
                ssize_t k = read(tp->fd, buf, MIN(sizeof buf, budget_bytes - total));
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
                                if (tp->n_carry + n < sizeof tp->carry) {
                                        memcpy(tp->carry + tp->n_carry, p, n);
                                        tp->n_carry += n;
                                } else
                                        tp->n_carry = 0;
                                break;
                        }
                        if (tp->n_carry > 0) {
                                size_t n = (size_t) (nl - p);
                                if (tp->n_carry + n < sizeof tp->carry) {
                                        memcpy(tp->carry + tp->n_carry, p, n);
                                        if (cb)
                                                emit_line(tp->carry, tp->n_carry + n, cb, userdata);
                                }
                                tp->n_carry = 0;
                        } else if (cb)
                                emit_line(p, (size_t) (nl - p), cb, userdata);
                        p = nl + 1;
                }
        }
        return (int) MIN(total, (size_t) INT32_MAX);
}

int tracer_read(Tracer *t, size_t budget_bytes, TracerEventCallback cb, void *userdata) {
        return read_pipe(&t->pipe, budget_bytes, cb, userdata);
}

int tracer_read_window(Tracer *t, size_t budget_bytes, TracerEventCallback cb, void *userdata) {
        return read_pipe(&t->locks_pipe, budget_bytes, cb, userdata);
}

/* Writes "1"/"0" to the enable files of the window events. */
static int write_enables(Tracer *t, const char *value) {
        int first = 0;
        for (size_t i = 0; i < ELEMENTSOF(window_events); i++) {
                char p[128];
                snprintf(p, sizeof p, "%s/enable", window_events[i]);
                int r = locks_write(t, p, value);
                if (r < 0 && first == 0)
                        first = r;
        }
        return first;
}

/* Switches the window events on or off, timing it (each switch patches
 * kernel text). */
static int switch_events(Tracer *t, const char *value) {
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        int r = write_enables(t, value);
        t->switch_nsec += (now_usec(CLOCK_MONOTONIC) - t0) * NSEC_PER_USEC;
        t->switches++;
        return r;
}

/* The events' filters: ksmd's and khugepaged's own lock calls
 * (khugepaged_pid <= 0: unknown), and write locks of every other task.
 * Written when the pids change, with the events off. */
static int set_filters(Tracer *t, int ksmd_pid, int khugepaged_pid) {
        char f[128];
        int r;

        if (t->filter_ksmd == ksmd_pid && t->filter_khugepaged == khugepaged_pid)
                return 0;
        t->filter_ksmd = 0;
        /* khugepaged's read locks too (a few per scanned mm, every 10 s
         * by default): whether it drops a contended one (seed 002). */
        char kh[48] = "";
        if (khugepaged_pid > 0)
                snprintf(kh, sizeof kh, " || common_pid == %d", khugepaged_pid);
        snprintf(f, sizeof f, "common_pid == %d%s", ksmd_pid, kh);
        r = locks_write(t, "events/mmap_lock/mmap_lock_start_locking/filter", f);
        if (r < 0)
                return r;
        snprintf(f, sizeof f, "common_pid == %d%s || write == 1", ksmd_pid, kh);
        r = locks_write(t, "events/mmap_lock/mmap_lock_acquire_returned/filter", f);
        if (r < 0)
                return r;
        snprintf(f, sizeof f, "(write == 1 && common_pid != %d)%s", ksmd_pid, kh);
        r = locks_write(t, "events/mmap_lock/mmap_lock_released/filter", f);
        if (r < 0)
                return r;
        t->filter_ksmd = ksmd_pid;
        t->filter_khugepaged = khugepaged_pid;
        return 0;
}

int tracer_window_start(Tracer *t, int ksmd_pid, int khugepaged_pid, bool vma_probe) {
        char f[64];
        int r;

        if (!t->mmap_lock)
                return -EOPNOTSUPP;
        if (t->window)
                return 0;
        /* recording is off here: since tracer_open() and every stop */
        r = set_filters(t, ksmd_pid, khugepaged_pid);
        if (r < 0)
                return r;
        /* What an earlier window left unread (a read budget cut it) is
         * not this window's. */
        (void) read_pipe(&t->locks_pipe, SIZE_MAX, NULL, NULL);
        t->locks_pipe.n_carry = 0;
        t->window = true;       /* from here on tracer_window_stop() undoes it */
        r = switch_events(t, "1");
        /* The seed-001 probes likewise: an enabled one traps every page
         * fault on the host. */
        t->vma_probe_armed = false;
        if (r >= 0 && vma_probe) {
                snprintf(f, sizeof f, "common_pid == %d", ksmd_pid);
                for (size_t i = 0; i < ELEMENTSOF(vma_lock_symbols); i++) {
                        char p[128];
                        if (!t->vma_probe[i])
                                continue;
                        vma_probe_path(t, i, "filter", p, sizeof p);
                        if (locks_write(t, p, f) < 0)
                                continue;
                        vma_probe_path(t, i, "enable", p, sizeof p);
                        if (locks_write(t, p, "1") >= 0)
                                t->vma_probe_armed = true;
                }
        }
        if (r >= 0)
                r = locks_write(t, "tracing_on", "1");
        if (r < 0) {
                (void) tracer_window_stop(t);
                return r;
        }
        return 0;
}

int tracer_window_stop(Tracer *t) {
        if (!t || !t->window)
                return 0;
        int r = locks_write(t, "tracing_on", "0");
        (void) switch_events(t, "0");
        for (size_t i = 0; t->vma_probe_armed && i < ELEMENTSOF(vma_lock_symbols); i++) {
                char p[128];
                if (!t->vma_probe[i])
                        continue;
                vma_probe_path(t, i, "enable", p, sizeof p);
                (void) locks_write(t, p, "0");
        }
        /* vma_probe_armed stays: the window's reader asks whether it was */
        t->window = false;
        return r;
}

uint64_t tracer_switch_nsec(const Tracer *t, unsigned *ret_switches) {
        if (ret_switches)
                *ret_switches = t ? t->switches : 0;
        return t ? t->switch_nsec : 0;
}
