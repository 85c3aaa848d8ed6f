/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The injector's processes: the supervisor, its workers and the seccomp
 * reader (injector.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "injector-msg.h"
#include "injector.h"
#include "log.h"
#include "merge.h"
#include "procfs.h"
#include "root.h"
#include "sandbox.h"
#include "syscalls.h"
#include "util.h"

#define CAP_BIT(c) (UINT64_C(1) << (c))
#define K_PTRACE_SECCOMP_GET_FILTER 0x420c
/* A seccomp reader is killed past this; its tracees are detached by the
 * kernel as it dies. */
#define READER_BUDGET_USEC (3 * USEC_PER_SEC)
/* How long the reader waits for one thread to stop. */
#define READER_STOP_USEC (1 * USEC_PER_SEC)
/* BPF_MAXINSNS per filter, and a bound on the whole answer. */
#define FILTERS_MAX_BYTES (8u << 20)
#define WORKERS_MAX 8
#define READERS_MAX 8
/* How often threads given up on by an injection are looked at. */
#define ABANDONED_POLL_MSEC 5

/* --- Validation shared by every process that takes a pid --- */

static pid_t daemon_pid, supervisor_pid;

/* Why pid must not be touched by this request, or NULL; *ret_errno set. */
static const char *forbidden_pid(int pid, int *ret_errno) {
        *ret_errno = EPERM;
        if (pid <= 0) {
                *ret_errno = EINVAL;
                return "not a pid";
        }
        if (pid == 1)
                return "pid 1 (init) is never touched";
        if (pid == getpid())
                return "the injector's own process";
        if (pid == supervisor_pid || pid == getppid())
                return "the injector's supervisor";
        if (pid == daemon_pid)
                return "ksmtuned2 itself";
        return NULL;
}

typedef struct Checked {
        int pid_dirfd;
        ProcStatus status;
} Checked;

static void reply_set(InjectorReply *rep, InjectorOutcome outcome, int error, const char *fmt, ...)
        _printf_(4, 5);
static void reply_set(InjectorReply *rep, InjectorOutcome outcome, int error, const char *fmt, ...) {
        va_list ap;
        rep->outcome = outcome;
        rep->error = error;
        va_start(ap, fmt);
        vsnprintf(rep->reason, sizeof rep->reason, fmt, ap);
        va_end(ap);
}

/* The request names pid through pidfd, and pid is still the incarnation the
 * daemon saw: 0 with *ret filled, or -1 with the reply set. */
static int check_target(const Root *root, const InjectorRequest *req, int pidfd, InjectorReply *rep, Checked *ret) {
        int e;
        const char *why = forbidden_pid(req->pid, &e);
        if (why) {
                reply_set(rep, INJECTOR_REFUSED, e, "pid %d: %s", req->pid, why);
                return -1;
        }
        if (pidfd < 0) {
                reply_set(rep, INJECTOR_REFUSED, EBADF, "pid %d: no pidfd came with the request", req->pid);
                return -1;
        }
        int p = injector_pidfd_pid(pidfd);
        if (p < 0) {
                reply_set(rep, INJECTOR_REFUSED, EBADF, "pid %d: the fd that came with the request is not a pidfd",
                          req->pid);
                return -1;
        }
        if (p == 0) {
                reply_set(rep, INJECTOR_FAILED, ESRCH, "process exited");
                return -1;
        }
        if (p != req->pid) {
                reply_set(rep, INJECTOR_REFUSED, EINVAL, "pid %d: the pidfd names pid %d", req->pid, p);
                return -1;
        }
        if (req->start_time_ticks == 0) {
                reply_set(rep, INJECTOR_REFUSED, EINVAL, "pid %d: no start time to check its identity against",
                          req->pid);
                return -1;
        }
        _cleanup_close_ int dfd = -EBADF;
        ProcStat st;
        if (root_open_pid_dir(root, req->pid, &dfd) < 0 || procfs_read_stat(dfd, &st) < 0) {
                reply_set(rep, INJECTOR_FAILED, ESRCH, "process exited");
                return -1;
        }
        if (st.start_time_ticks != req->start_time_ticks) {
                reply_set(rep, INJECTOR_FAILED, ESRCH, "pid %d was reused by another process: not touched", req->pid);
                return -1;
        }
        if (proc_stat_is_kthread(&st)) {
                reply_set(rep, INJECTOR_REFUSED, EINVAL, "pid %d is a kernel thread", req->pid);
                return -1;
        }
        if (procfs_read_status(dfd, &ret->status) < 0) {
                reply_set(rep, INJECTOR_FAILED, ESRCH, "process exited");
                return -1;
        }
        ret->pid_dirfd = TAKE_FD(dfd);
        return 0;
}

/* --- The seccomp reader --- */

/* What a thread's entry in the answer looks like: the header, then per
 * filter a uint32_t length and that many sock_filter. */
typedef struct FilterThread {
        int32_t tid;
        uint32_t n_filters;
} FilterThread;

static bool write_all(int fd, const void *buf, size_t n) {
        const uint8_t *p = buf;
        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return false;
                p += k;
                n -= (size_t) k;
        }
        return true;
}

/* Seizes and stops tid: 1 stopped, 0 gone, -errno (-ETIMEDOUT: did not stop;
 * it stays seized until this process exits, which detaches it). */
static int reader_stop(int tid, uint64_t deadline_usec) {
        if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0)
                return errno == ESRCH ? 0 : negative_errno();
        if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0)
                return errno == ESRCH ? 0 : negative_errno();
        for (;;) {
                int status;
                pid_t w = waitpid(tid, &status, __WALL | WNOHANG);
                if (w < 0)
                        return errno == ECHILD ? 0 : negative_errno();
                if (w == 0) {
                        if (now_usec(CLOCK_MONOTONIC) >= deadline_usec)
                                return -ETIMEDOUT;
                        (void) usleep(200);
                        continue;
                }
                if (WIFEXITED(status) || WIFSIGNALED(status))
                        return 0;
                if (!WIFSTOPPED(status))
                        continue;
                if (status >> 16 == PTRACE_EVENT_STOP)
                        return 1;
                /* A signal on its way: pass it on, our interrupt stays pending. */
                if (ptrace(PTRACE_CONT, tid, NULL, (void *) (uintptr_t) WSTOPSIG(status)) < 0)
                        return errno == ESRCH ? 0 : negative_errno();
        }
}

/* Writes the filters of every thread of the checked process to out. */
static int reader_dump(const Checked *t, int out, InjectorReply *rep) {
        _cleanup_close_ int task_fd = openat(t->pid_dirfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (task_fd < 0) {
                reply_set(rep, INJECTOR_FAILED, ESRCH, "process exited");
                return -1;
        }
        DIR *d = fdopendir(TAKE_FD(task_fd));
        if (!d)
                return -ENOMEM;
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + READER_STOP_USEC;
        size_t total = 0;
        int r = 0;
        struct sock_filter *prog = malloc(BPF_MAXINSNS * sizeof *prog);
        if (!prog) {
                closedir(d);
                return -ENOMEM;
        }
        for (struct dirent *de; r == 0 && (de = readdir(d));) {
                int tid;
                if (safe_atoi(de->d_name, &tid) < 0 || tid <= 0)
                        continue;
                int k = reader_stop(tid, deadline);
                if (k == 0)
                        continue;
                if (k < 0) {
                        reply_set(rep, INJECTOR_REFUSED, -k, "thread %d %s", tid,
                                  k == -ETIMEDOUT ? "did not stop in time to read its seccomp filters"
                                                  : "could not be stopped to read its seccomp filters");
                        r = -1;
                        break;
                }
                /* Stopped: count its filters, then write them. */
                uint32_t n = 0;
                while (ptrace((enum __ptrace_request) K_PTRACE_SECCOMP_GET_FILTER, tid, (void *) (uintptr_t) n,
                              NULL) > 0)
                        n++;
                int err = errno;
                FilterThread h = { .tid = tid, .n_filters = n };
                bool ok = err == ENOENT || err == EINVAL; /* EINVAL: no filter at all (SECCOMP_MODE_DISABLED) */
                if (!ok) {
                        reply_set(rep, INJECTOR_REFUSED, EACCES, "thread %d: PTRACE_SECCOMP_GET_FILTER: %s", tid,
                                  strerrorname_np(err) ?: "?");
                        r = -1;
                }
                if (r == 0 && !write_all(out, &h, sizeof h))
                        r = -EIO;
                for (uint32_t i = 0; r == 0 && i < n; i++) {
                        long len = ptrace((enum __ptrace_request) K_PTRACE_SECCOMP_GET_FILTER, tid,
                                          (void *) (uintptr_t) i, prog);
                        uint32_t l = len > 0 && len <= BPF_MAXINSNS ? (uint32_t) len : 0;
                        total += sizeof l + l * sizeof *prog;
                        if (l == 0 || total > FILTERS_MAX_BYTES) {
                                reply_set(rep, INJECTOR_REFUSED, EACCES, "thread %d: filter %u could not be read",
                                          tid, i);
                                r = -1;
                        } else if (!write_all(out, &l, sizeof l) || !write_all(out, prog, l * sizeof *prog))
                                r = -EIO;
                }
                (void) ptrace(PTRACE_DETACH, tid, NULL, NULL);
        }
        free(prog);
        closedir(d);
        if (r == -EIO)
                reply_set(rep, INJECTOR_FAILED, EIO, "cannot write the filters");
        return r;
}

/* Serves one FETCH_FILTERS request on sock and returns the exit status. */
static int reader_serve(const Root *root, int sock) {
        InjectorRequest req;
        InjectorReply rep = { .magic = INJECTOR_MAGIC, .op = INJECTOR_OP_FETCH_FILTERS };
        _cleanup_close_ int pidfd = -EBADF, memfd = -EBADF;
        Checked t = { .pid_dirfd = -EBADF };

        if (injector_wait_readable(sock, now_usec(CLOCK_MONOTONIC) + READER_BUDGET_USEC) <= 0)
                return EXIT_FAILURE;
        int n = injector_recv(sock, &req, sizeof req, &pidfd);
        if (n <= 0 || req.magic != INJECTOR_MAGIC || req.op != INJECTOR_OP_FETCH_FILTERS) {
                reply_set(&rep, INJECTOR_REFUSED, EBADMSG, "malformed request");
                (void) injector_send(sock, &rep, sizeof rep, -1);
                return EXIT_FAILURE;
        }
        rep.seq = req.seq;
        if (check_target(root, &req, pidfd, &rep, &t) >= 0) {
                memfd = memfd_create("ksmtuned2-seccomp-filters", MFD_CLOEXEC);
                if (memfd < 0)
                        reply_set(&rep, INJECTOR_FAILED, errno, "memfd_create failed");
                else if (reader_dump(&t, memfd, &rep) == 0)
                        reply_set(&rep, INJECTOR_DONE, 0, "filters read");
                safe_close(t.pid_dirfd);
        }
        (void) injector_send(sock, &rep, sizeof rep, rep.outcome == INJECTOR_DONE ? memfd : -1);
        return EXIT_SUCCESS;
}

static bool self_filtered(void) {
        ProcStatus ps;
        _cleanup_close_ int dfd = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return dfd < 0 || procfs_read_status(dfd, &ps) < 0 || ps.seccomp != 0;
}

int seccomp_reader_main(int fd) {
        _cleanup_(root_freep) Root *root = NULL;
        struct ucred cred;
        socklen_t l = sizeof cred;

        /* The socket is root's (SocketMode=0600); check anyway. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &l) < 0 || cred.uid != 0) {
                log_error("seccomp reader: the peer is not root, refusing.");
                return EXIT_FAILURE;
        }
        daemon_pid = supervisor_pid = cred.pid;
        if (root_open(NULL, &root) < 0)
                return EXIT_FAILURE;
        (void) sandbox_drop_capabilities(CAP_BIT(CAP_SYS_ADMIN) | CAP_BIT(CAP_SYS_PTRACE));
        return reader_serve(root, fd);
}

/* --- Workers --- */

typedef struct FilterSet {
        uint8_t *data;
        size_t size;
        int pid_dirfd;
} FilterSet;

/* Filter idx of tid, as the reader wrote it. Once the thread is stopped
 * (inject.c asks from its stop) it cannot add a filter any more, so a count
 * that differs from what the reader saw means one came in between. */
static long filter_lookup(int tid, unsigned long idx, const struct sock_filter **ret_prog, void *userdata) {
        const FilterSet *fs = userdata;
        size_t at = 0;
        while (at + sizeof(FilterThread) <= fs->size) {
                FilterThread h;
                memcpy(&h, fs->data + at, sizeof h);
                at += sizeof h;
                if (h.tid == tid) {
                        if (idx == 0) {
                                char path[64];
                                _cleanup_free_ char *status = NULL;
                                snprintf(path, sizeof path, "task/%d/status", tid);
                                if (procfs_read_pid_file(fs->pid_dirfd, path, 64 * 1024, &status) < 0)
                                        return -ESRCH;
                                const char *p = strstr(status, "\nSeccomp_filters:");
                                unsigned now;
                                if (!p || sscanf(p + 17, "%u", &now) != 1 || now != h.n_filters)
                                        return -ESTALE;
                        }
                        for (uint32_t i = 0; i < h.n_filters; i++) {
                                uint32_t len;
                                if (at + sizeof len > fs->size)
                                        return -EBADMSG;
                                memcpy(&len, fs->data + at, sizeof len);
                                at += sizeof len;
                                if (len > BPF_MAXINSNS || at + len * sizeof(struct sock_filter) > fs->size)
                                        return -EBADMSG;
                                if (i == idx) {
                                        *ret_prog = (const struct sock_filter *) (fs->data + at);
                                        return len;
                                }
                                at += len * sizeof(struct sock_filter);
                        }
                        return -ENOENT;
                }
                for (uint32_t i = 0; i < h.n_filters; i++) {
                        uint32_t len;
                        if (at + sizeof len > fs->size)
                                return -EBADMSG;
                        memcpy(&len, fs->data + at, sizeof len);
                        at += sizeof len + (size_t) len * sizeof(struct sock_filter);
                }
        }
        /* A thread started after the filters were read. */
        return -ESRCH;
}

/* Asks the supervisor for the filters of the checked process. 0, or -1 with
 * the reply set. */
static int fetch_filters(int ctl, const InjectorRequest *req, int pidfd, FilterSet *ret, InjectorReply *rep) {
        InjectorRequest q = *req;
        q.op = INJECTOR_OP_FETCH_FILTERS;
        InjectorReply a;
        _cleanup_close_ int conn = -EBADF, memfd = -EBADF;
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + READER_BUDGET_USEC + USEC_PER_SEC;
        int r;

        r = injector_send(ctl, &q, sizeof q, pidfd);
        if (r >= 0)
                r = injector_wait_readable(ctl, deadline) > 0 ? 0 : -ETIMEDOUT;
        if (r >= 0)
                r = injector_recv(ctl, &a, sizeof a, &conn);
        if (r >= 0 && (a.magic != INJECTOR_MAGIC || a.error != 0 || conn < 0))
                r = a.error > 0 ? -a.error : -EBADMSG;
        if (r >= 0)
                r = injector_wait_readable(conn, deadline) > 0 ? 0 : -ETIMEDOUT;
        if (r >= 0)
                r = injector_recv(conn, &a, sizeof a, &memfd);
        if (r == 0)
                r = -EPIPE; /* the reader died (killed past its budget) */
        if (r < 0) {
                reply_set(rep, INJECTOR_REFUSED, EACCES, "its seccomp filters could not be read (%s)",
                          strerrorname_np(-r) ?: "?");
                return -1;
        }
        if (a.outcome != INJECTOR_DONE || memfd < 0) {
                reply_set(rep, INJECTOR_REFUSED, EACCES, "its seccomp filters could not be read: %s", a.reason);
                return -1;
        }
        struct stat st;
        if (fstat(memfd, &st) < 0 || (uint64_t) st.st_size > FILTERS_MAX_BYTES) {
                reply_set(rep, INJECTOR_REFUSED, EACCES, "its seccomp filters could not be read (size)");
                return -1;
        }
        ret->size = (size_t) st.st_size;
        ret->data = malloc(MAX(ret->size, (size_t) 1));
        if (!ret->data)
                return -ENOMEM;
        if (pread(memfd, ret->data, ret->size, 0) != (ssize_t) ret->size) {
                reply_set(rep, INJECTOR_REFUSED, EACCES, "its seccomp filters could not be read (short read)");
                return -1;
        }
        return 0;
}

/* injector_main()'s: inherited by the workers it forks. */
static InjectorConfigReader read_inject_into_seccomp;

static void serve_inject(const Root *root, int ctl, const InjectorRequest *req, int pidfd, InjectorReply *rep) {
        Checked t = { .pid_dirfd = -EBADF };
        FilterSet fs = { .pid_dirfd = -EBADF };

        if (req->arg != MERGE_ACTION_ENABLE && req->arg != MERGE_ACTION_DISABLE) {
                reply_set(rep, INJECTOR_REFUSED, EINVAL, "no such action %u", req->arg);
                return;
        }
        if (check_target(root, req, pidfd, rep, &t) < 0)
                return;
        /* The daemon's word alone does not switch the filter checks off: a
         * compromised daemon would ask for it. Only when the root-owned
         * configuration says InjectIntoSeccomp=yes too; else the filters are
         * read and run, as for InjectIntoSeccomp=no. */
        bool allow_seccomp = false;
        if ((req->flags & INJECTOR_FLAG_ALLOW_SECCOMP) && t.status.seccomp == 2) {
                int k = read_inject_into_seccomp ? read_inject_into_seccomp() : -ENOSYS;
                allow_seccomp = k > 0;
                if (!allow_seccomp)
                        log_notice("injector: pid %d: the daemon asked to inject without running its seccomp filters, "
                                   "but the configuration %s: its filters decide.", req->pid,
                                   k == 0 ? "says InjectIntoSeccomp=no" : "cannot be read or trusted");
        }
        MergeContext ctx = {
                .root = root,
                .inject_seccomp = allow_seccomp,
                .stop_timeout_usec = MIN(req->stop_timeout_usec, 10 * USEC_PER_SEC),
        };
        if (t.status.seccomp == 2 && !allow_seccomp) {
                if (fetch_filters(ctl, req, pidfd, &fs, rep) < 0) {
                        free(fs.data);
                        safe_close(t.pid_dirfd);
                        return;
                }
                fs.pid_dirfd = t.pid_dirfd;
                ctx.get_filter = filter_lookup;
                ctx.filter_userdata = &fs;
        }
        InjectStats stats = {};
        bool call_failed = false;
        MergeInjectJob job = {
                .action = (MergeAction) req->arg,
                .start_time_ticks = req->start_time_ticks,
                .merge_any = req->merge_any,
                .expect = req->expect,
                .allow_privileged = req->flags & INJECTOR_FLAG_ALLOW_PRIVILEGED,
                .n_ranges = MIN(req->n_ranges, (uint32_t) MERGE_INJECT_RANGES_MAX),
        };
        memcpy(job.ranges, req->ranges, sizeof job.ranges);
        int r = merge_inject_local(&ctx, pidfd, req->pid, t.pid_dirfd, &job, &stats, &call_failed);
        free(fs.data);
        safe_close(t.pid_dirfd);
        rep->outcome = r == 0 ? INJECTOR_DONE : call_failed ? INJECTOR_DONE : INJECTOR_FAILED;
        rep->error = r < 0 ? -r : 0;
        rep->call_failed = call_failed;
        rep->tid = stats.tid;
        rep->pause_usec = stats.pause_usec;
        rep->total_usec = stats.total_usec;
        strscpy(rep->reason, sizeof rep->reason, stats.reason);
}

static void serve_read(const Root *root, const InjectorRequest *req, InjectorReply *rep) {
        _cleanup_close_ int dfd = -EBADF;
        ProcStat st;

        if (req->pid <= 0) {
                reply_set(rep, INJECTOR_REFUSED, EINVAL, "not a pid");
                return;
        }
        if (root_open_pid_dir(root, req->pid, &dfd) < 0) {
                reply_set(rep, INJECTOR_FAILED, ESRCH, "process exited");
                return;
        }
        /* The same incarnation before and after: the answer is its own. */
        for (int pass = 0; pass < 2; pass++) {
                if (req->start_time_ticks &&
                    (procfs_read_stat(dfd, &st) < 0 || st.start_time_ticks != req->start_time_ticks)) {
                        reply_set(rep, INJECTOR_FAILED, ESRCH, "process exited");
                        return;
                }
                if (pass == 1)
                        break;
                ssize_t n;
                if (req->op == INJECTOR_OP_READ_RANGES) {
                        MapList maps = {}, runs = {};
                        int r = req->arg == INJECTOR_RANGES_MERGEABLE ? proc_smaps_read_mergeable(dfd, &runs)
                                                                      : proc_maps_read(dfd, &maps);
                        if (r >= 0 && req->arg != INJECTOR_RANGES_MERGEABLE)
                                r = req->arg == INJECTOR_RANGES_ADVISABLE ? map_list_advisable_runs(&maps, &runs)
                                                                          : map_list_anon_private(&maps, &runs);
                        map_list_done(&maps);
                        if (r >= 0 && runs.n * 2 * sizeof(uint64_t) > sizeof rep->data)
                                r = -E2BIG;
                        if (r < 0) {
                                map_list_done(&runs);
                                reply_set(rep, INJECTOR_FAILED, -r, "cannot read its ranges");
                                return;
                        }
                        for (size_t i = 0; i < runs.n; i++) {
                                uint64_t pair[2] = { runs.ranges[i].start, runs.ranges[i].end };
                                memcpy(rep->data + i * sizeof pair, pair, sizeof pair);
                        }
                        rep->data_len = (uint32_t) (runs.n * 2 * sizeof(uint64_t));
                        map_list_done(&runs);
                        continue;
                }
                if (req->op == INJECTOR_OP_READ_EXE)
                        n = readlinkat(dfd, "exe", rep->data, sizeof rep->data - 1);
                else {
                        _cleanup_close_ int f = openat(dfd, "wchan", O_RDONLY | O_CLOEXEC);
                        n = f < 0 ? -1 : read(f, rep->data, sizeof rep->data - 1);
                }
                if (n < 0) {
                        reply_set(rep, INJECTOR_FAILED, errno, "cannot read it");
                        return;
                }
                rep->data[n] = 0;
                rep->data_len = (uint32_t) n;
        }
        rep->outcome = INJECTOR_DONE;
}

static int worker_main(const Root *root, InjectorRole role, int sock, int ctl) {
        uint64_t keep = role == INJECTOR_ROLE_INJECT ? CAP_BIT(CAP_SYS_PTRACE) | CAP_BIT(CAP_DAC_READ_SEARCH)
                                                     : CAP_BIT(CAP_SYS_PTRACE);
        int r = sandbox_drop_capabilities(keep);
        if (r < 0) {
                log_error_errno(r, "injector: cannot drop capabilities: %m");
                return EXIT_FAILURE;
        }
        const char *fatal_env = getenv("KSMTUNED2_SECCOMP_FATAL");
        r = sandbox_load_injector_seccomp(role, fatal_env && parse_boolean(fatal_env) > 0);
        if (r < 0) {
                log_error_errno(r, "injector: cannot load its seccomp filter: %m");
                return EXIT_FAILURE;
        }
        for (;;) {
                size_t left = role == INJECTOR_ROLE_INJECT ? inject_poll_abandoned() : 0;
                struct pollfd p = { .fd = sock, .events = POLLIN };
                int k = poll(&p, 1, left > 0 ? ABANDONED_POLL_MSEC : -1);
                if (k < 0 && errno != EINTR)
                        return EXIT_FAILURE;
                if (k <= 0)
                        continue;

                InjectorRequest req;
                _cleanup_close_ int fd = -EBADF;
                int n = injector_recv(sock, &req, sizeof req, &fd);
                if (n == 0)
                        return EXIT_SUCCESS; /* the daemon is gone */
                InjectorReply rep = { .magic = INJECTOR_MAGIC };
                if (n < 0 && n != -EBADMSG)
                        return EXIT_FAILURE;
                if (n > 0)
                        rep.seq = req.seq;
                if (n < 0 || req.magic != INJECTOR_MAGIC) {
                        reply_set(&rep, INJECTOR_REFUSED, EBADMSG, "malformed request");
                } else {
                        rep.op = req.op;
                        rep.seq = req.seq;
                        if (role == INJECTOR_ROLE_INJECT && req.op == INJECTOR_OP_INJECT)
                                serve_inject(root, ctl, &req, fd, &rep);
                        else if (role == INJECTOR_ROLE_READ &&
                                 (req.op == INJECTOR_OP_READ_EXE || req.op == INJECTOR_OP_READ_WCHAN ||
                                  req.op == INJECTOR_OP_READ_RANGES))
                                serve_read(root, &req, &rep);
                        else
                                reply_set(&rep, INJECTOR_REFUSED, EOPNOTSUPP, "operation %u is not served here",
                                          req.op);
                }
                if (injector_send(sock, &rep, sizeof rep, -1) < 0)
                        return EXIT_FAILURE;
        }
}

/* --- The supervisor --- */

typedef struct Child {
        pid_t pid;
        InjectorRole role;              /* 0: a seccomp reader */
        int ctl;                        /* inject workers: their socket to us, else -EBADF */
        uint64_t deadline_usec;         /* readers: killed past it */
} Child;

static Child children[WORKERS_MAX + READERS_MAX];
static const char *root_prefix_arg;
static bool unfiltered;

static Child *child_slot(void) {
        for (size_t i = 0; i < ELEMENTSOF(children); i++)
                if (children[i].pid == 0)
                        return &children[i];
        return NULL;
}

/* In a forked child: only the fds it needs, moved to 3 and 4, and a Root of
 * its own (the parent's fds are gone). */
static Root *child_setup(int a, int b) {
        Root *root = NULL;
        /* Dies with the supervisor, which dies with the daemon: no tracer
         * outlives the daemon (a SIGKILLed daemon leaves its targets as
         * before, detached by the kernel, their signal frames bringing them
         * home; inject.h). */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != supervisor_pid)
                _exit(EXIT_FAILURE);
        int fa = fcntl(a, F_DUPFD_CLOEXEC, 100), fb = b >= 0 ? fcntl(b, F_DUPFD_CLOEXEC, 101) : -EBADF;
        if (fa < 0 || dup2(fa, 3) < 0 || (fb >= 0 && dup2(fb, 4) < 0))
                _exit(EXIT_FAILURE);
        if (syscall(SYS_close_range, fb >= 0 ? 5 : 4, ~0U, 0) < 0)
                _exit(EXIT_FAILURE);
        if (root_open(root_prefix_arg, &root) < 0)
                _exit(EXIT_FAILURE);
        return root;
}

/* Starts a worker; its socket goes with the reply, which is sent here when
 * it succeeds (returns true) and left to the caller otherwise. */
static bool supervisor_spawn(int sock, const InjectorRequest *req, InjectorReply *rep) {
        int sp[2], ctl[2] = { -EBADF, -EBADF };
        InjectorRole role = (InjectorRole) req->arg;
        Child *c = child_slot();

        if (role != INJECTOR_ROLE_INJECT && role != INJECTOR_ROLE_READ) {
                reply_set(rep, INJECTOR_REFUSED, EINVAL, "no such role %u", req->arg);
                return false;
        }
        if (!c) {
                reply_set(rep, INJECTOR_REFUSED, EAGAIN, "too many workers");
                return false;
        }
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
                reply_set(rep, INJECTOR_FAILED, errno, "socketpair failed");
                return false;
        }
        if (role == INJECTOR_ROLE_INJECT && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) < 0) {
                reply_set(rep, INJECTOR_FAILED, errno, "socketpair failed");
                safe_close(sp[0]);
                safe_close(sp[1]);
                return false;
        }
        pid_t pid = fork();
        if (pid == 0) {
                Root *root = child_setup(sp[1], ctl[1]);
                _exit(worker_main(root, role, 3, role == INJECTOR_ROLE_INJECT ? 4 : -EBADF));
        }
        safe_close(sp[1]);
        safe_close(ctl[1]);
        if (pid < 0) {
                reply_set(rep, INJECTOR_FAILED, errno, "fork failed");
                safe_close(sp[0]);
                safe_close(ctl[0]);
                return false;
        }
        *c = (Child) { .pid = pid, .role = role, .ctl = ctl[0] };
        rep->pid = pid;
        reply_set(rep, INJECTOR_DONE, 0, "started");
        (void) injector_send(sock, rep, sizeof *rep, sp[0]);
        safe_close(sp[0]);
        return true;
}

/* A worker asks for the filters of a process: a reader answers it on a
 * socket of its own, which the worker gets. */
static void supervisor_fetch(Child *w, const InjectorRequest *req, int pidfd) {
        InjectorReply rep = { .magic = INJECTOR_MAGIC, .op = req->op, .seq = req->seq };
        _cleanup_close_ int conn = -EBADF;

        if (req->magic != INJECTOR_MAGIC || req->op != INJECTOR_OP_FETCH_FILTERS || pidfd < 0) {
                reply_set(&rep, INJECTOR_REFUSED, EBADMSG, "malformed request");
                (void) injector_send(w->ctl, &rep, sizeof rep, -1);
                return;
        }
        if (unfiltered) {
                Child *c = child_slot();
                int sp[2];
                if (!c || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
                        reply_set(&rep, INJECTOR_FAILED, EAGAIN, "cannot start a seccomp reader");
                        (void) injector_send(w->ctl, &rep, sizeof rep, -1);
                        return;
                }
                pid_t pid = fork();
                if (pid == 0) {
                        Root *root = child_setup(sp[1], -EBADF);
                        if (sandbox_drop_capabilities(CAP_BIT(CAP_SYS_ADMIN) | CAP_BIT(CAP_SYS_PTRACE)) < 0)
                                _exit(EXIT_FAILURE);
                        _exit(reader_serve(root, 3));
                }
                safe_close(sp[1]);
                conn = sp[0];
                if (pid < 0) {
                        reply_set(&rep, INJECTOR_FAILED, errno, "fork failed");
                        (void) injector_send(w->ctl, &rep, sizeof rep, -1);
                        return;
                }
                *c = (Child) { .pid = pid, .ctl = -EBADF,
                               .deadline_usec = now_usec(CLOCK_MONOTONIC) + READER_BUDGET_USEC };
        } else {
                /* Under a filter of our own (systemd's SystemCallFilter=) a
                 * reader of ours could not read filters: systemd starts one
                 * per connection outside it. */
                struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = INJECTOR_SECCOMP_READER_SOCKET };
                conn = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
                if (conn < 0 || connect(conn, (struct sockaddr *) &sa, sizeof sa) < 0) {
                        reply_set(&rep, INJECTOR_FAILED, errno, "cannot reach %s", INJECTOR_SECCOMP_READER_SOCKET);
                        (void) injector_send(w->ctl, &rep, sizeof rep, -1);
                        return;
                }
        }
        if (injector_send(conn, req, sizeof *req, pidfd) < 0) {
                reply_set(&rep, INJECTOR_FAILED, EPIPE, "the seccomp reader is gone");
                (void) injector_send(w->ctl, &rep, sizeof rep, -1);
                return;
        }
        reply_set(&rep, INJECTOR_DONE, 0, "reader started");
        (void) injector_send(w->ctl, &rep, sizeof rep, conn);
}

static void supervisor_reap(void) {
        for (;;) {
                int status;
                pid_t p = waitpid(-1, &status, WNOHANG);
                if (p <= 0)
                        return;
                for (size_t i = 0; i < ELEMENTSOF(children); i++)
                        if (children[i].pid == p) {
                                if (children[i].role)
                                        log_debug("injector: worker %d exited (status %d).", p, status);
                                safe_close(children[i].ctl);
                                children[i] = (Child) { .ctl = -EBADF };
                        }
        }
}

static void supervisor_kill(const InjectorRequest *req, InjectorReply *rep) {
        for (size_t i = 0; i < ELEMENTSOF(children); i++)
                if (children[i].pid > 0 && children[i].pid == req->pid && children[i].role) {
                        /* Our own worker; its tracees are detached as it
                         * dies, and their signal frames bring them home. */
                        (void) kill(children[i].pid, SIGKILL);
                        reply_set(rep, INJECTOR_DONE, 0, "killed");
                        return;
                }
        reply_set(rep, INJECTOR_REFUSED, ESRCH, "pid %d is not a worker of this injector", req->pid);
}

int injector_main(int fd, const char *root_prefix, InjectorConfigReader read_seccomp_setting) {
        _cleanup_close_ int conn = -EBADF;
        int r;

        root_prefix_arg = root_prefix;
        read_inject_into_seccomp = read_seccomp_setting;
        supervisor_pid = getpid();
        if (sd_listen_fds(true) == 1) {
                /* ksmtuned2-injector.service: systemd passes the listening
                 * socket; one daemon is served, and at its EOF we exit, to be
                 * started again at its next connection. */
                fd = SD_LISTEN_FDS_START;
                do
                        conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
                while (conn < 0 && errno == EINTR);
                struct ucred cred;
                socklen_t l = sizeof cred;
                if (conn < 0 || getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &l) < 0 || cred.uid != 0) {
                        log_error("injector: no connection from root, exiting.");
                        return EXIT_FAILURE;
                }
                fd = safe_close(fd);
                fd = conn;
                daemon_pid = cred.pid;
        } else {
                /* Forked and exec'd by the daemon, on fd 3. Set after the exec
                 * (which would not keep it for a binary that gains
                 * capabilities); a daemon already gone is noticed at once. */
                daemon_pid = getppid();
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || daemon_pid == 1)
                        return EXIT_FAILURE;
        }
        for (size_t i = 0; i < ELEMENTSOF(children); i++)
                children[i].ctl = -EBADF;
        sigset_t all;
        sigemptyset(&all);
        (void) sigprocmask(SIG_SETMASK, &all, NULL);
        /* The daemon's end may be gone before we read it: writes must fail,
         * not kill. */
        (void) signal(SIGPIPE, SIG_IGN);

        unfiltered = !self_filtered();
        /* CAP_SETPCAP, where it has it, lets each worker drop its bounding
         * set to its own capabilities (they keep none of it). */
        uint64_t keep = CAP_BIT(CAP_SYS_PTRACE) | CAP_BIT(CAP_DAC_READ_SEARCH) | CAP_BIT(CAP_SETPCAP) |
                        (unfiltered ? CAP_BIT(CAP_SYS_ADMIN) : 0);
        r = sandbox_drop_capabilities(keep);
        if (r < 0) {
                log_error_errno(r, "injector: cannot drop capabilities: %m");
                return EXIT_FAILURE;
        }
        log_debug("injector: supervisor %d for daemon %d, seccomp filters read by %s.", supervisor_pid, daemon_pid,
                  unfiltered ? "a reader of its own" : INJECTOR_SECCOMP_READER_SOCKET);

        for (;;) {
                struct pollfd p[1 + WORKERS_MAX + READERS_MAX];
                Child *owner[ELEMENTSOF(p)];
                size_t n = 0;
                p[n] = (struct pollfd) { .fd = fd, .events = POLLIN };
                owner[n++] = NULL;
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                for (size_t i = 0; i < ELEMENTSOF(children); i++) {
                        Child *c = &children[i];
                        if (c->pid > 0 && !c->role && c->deadline_usec <= now)
                                (void) kill(c->pid, SIGKILL); /* a reader past its budget */
                        if (c->pid > 0 && c->ctl >= 0) {
                                p[n] = (struct pollfd) { .fd = c->ctl, .events = POLLIN };
                                owner[n++] = c;
                        }
                }
                int k = poll(p, n, 100);
                supervisor_reap();
                if (k < 0 && errno != EINTR)
                        return EXIT_FAILURE;
                if (k <= 0)
                        continue;
                for (size_t i = 1; i < n; i++) {
                        if (!(p[i].revents & (POLLIN | POLLHUP)) || owner[i]->ctl != p[i].fd)
                                continue;
                        InjectorRequest req;
                        _cleanup_close_ int pidfd = -EBADF;
                        int m = injector_recv(owner[i]->ctl, &req, sizeof req, &pidfd);
                        if (m == 0 || (m < 0 && m != -EBADMSG)) {
                                owner[i]->ctl = safe_close(owner[i]->ctl);
                                continue;
                        }
                        if (m < 0)
                                req.magic = 0;
                        supervisor_fetch(owner[i], &req, pidfd);
                }
                if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
                        continue;
                InjectorRequest req;
                _cleanup_close_ int extra = -EBADF;
                int m = injector_recv(fd, &req, sizeof req, &extra);
                if (m == 0 || (m < 0 && m != -EBADMSG))
                        return EXIT_SUCCESS; /* the daemon is gone; the workers die with us (PR_SET_PDEATHSIG) */
                InjectorReply rep = { .magic = INJECTOR_MAGIC, .supervisor_pid = supervisor_pid };
                if (m > 0)
                        rep.seq = req.seq;
                if (m < 0 || req.magic != INJECTOR_MAGIC)
                        reply_set(&rep, INJECTOR_REFUSED, EBADMSG, "malformed request");
                else {
                        rep.op = req.op;
                        rep.seq = req.seq;
                        if (req.op == INJECTOR_OP_SPAWN) {
                                if (supervisor_spawn(fd, &req, &rep))
                                        continue;
                        } else if (req.op == INJECTOR_OP_KILL)
                                supervisor_kill(&req, &rep);
                        else
                                reply_set(&rep, INJECTOR_REFUSED, EOPNOTSUPP,
                                          "operation %u is not served by the supervisor", req.op);
                }
                if (injector_send(fd, &rep, sizeof rep, -1) < 0)
                        return EXIT_SUCCESS;
        }
}
