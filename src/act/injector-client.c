/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's side of the injector (injector.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "injector-msg.h"
#include "injector.h"
#include "log.h"
#include "util.h"

/* A worker that does not answer within this is killed and replaced. An
 * injection's own waits are bounded (inject.h: 2 s to stop, 5 s per call),
 * and so is the seccomp reader (3 s); the rest is reading maps. */
#define INJECT_BUDGET_USEC (20 * USEC_PER_SEC)
#define READ_BUDGET_USEC (1 * USEC_PER_SEC)
#define SUPERVISOR_BUDGET_USEC (2 * USEC_PER_SEC)
/* Restarts of a worker that died or hung back off from this to the cap. */
#define BACKOFF_MIN_USEC (100 * USEC_PER_MSEC)
#define BACKOFF_MAX_USEC (30 * USEC_PER_SEC)

typedef struct Channel {
        pthread_mutex_t lock;
        InjectorRole role;
        int fd;
        pid_t pid;
        uint64_t seq;
        uint64_t backoff_usec, next_spawn_usec;
        unsigned restarts;
} Channel;

struct InjectorClient {
        pthread_mutex_t lock;           /* the supervisor's socket */
        int fd;
        pid_t pid;                      /* 0 until known (the service's: from its first reply) */
        bool service;                   /* ksmtuned2-injector.service: systemd starts it again */
        uint64_t seq;
        bool gone_logged;
        Channel inject, read;
};

static const char *role_name(InjectorRole r) {
        return r == INJECTOR_ROLE_INJECT ? "inject" : "read";
}

/* The supervisor of ksmtuned2-injector.service: a connection and its pid,
 * or -errno (-ENOENT, -ECONNREFUSED: not there). */
static int connect_service(int *ret_pid) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = INJECTOR_SOCKET };
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        struct ucred cred;
        socklen_t l = sizeof cred;
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return negative_errno();
        /* systemd accepts for the service: the peer's credentials are the
         * socket unit's until the service takes it; the pid is learnt from
         * the first reply. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &l) < 0 || cred.uid != 0)
                return -EPERM;
        *ret_pid = 0;
        return TAKE_FD(fd);
}

static InjectorClient *client_new(int fd, pid_t pid, bool service) {
        InjectorClient *c = calloc(1, sizeof *c);
        if (!c)
                return NULL;
        pthread_mutex_init(&c->lock, NULL);
        c->fd = fd;
        c->pid = pid;
        c->service = service;
        c->inject = (Channel) { .role = INJECTOR_ROLE_INJECT, .fd = -EBADF };
        c->read = (Channel) { .role = INJECTOR_ROLE_READ, .fd = -EBADF };
        pthread_mutex_init(&c->inject.lock, NULL);
        pthread_mutex_init(&c->read.lock, NULL);
        return c;
}

int injector_client_spawn(const char *root_prefix, const char *config_path, InjectorClient **ret) {
        int sp[2];
        if (isempty(root_prefix)) {
                int service_pid;
                int fd = connect_service(&service_pid);
                if (fd >= 0) {
                        InjectorClient *c = client_new(fd, service_pid, true);
                        if (!c) {
                                safe_close(fd);
                                return -ENOMEM;
                        }
                        *ret = c;
                        return 0;
                }
                if (fd != -ENOENT && fd != -ECONNREFUSED)
                        log_warning_errno(fd, "Cannot connect to %s, starting an injector of our own: %m",
                                          INJECTOR_SOCKET);
        }
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
                return negative_errno();
        pid_t pid = fork();
        if (pid < 0) {
                int r = negative_errno();
                safe_close(sp[0]);
                safe_close(sp[1]);
                return r;
        }
        if (pid == 0) {
                /* Exec'd, not just forked: an image and address layout of its
                 * own, nothing of the daemon's memory, only fd 3 open. */
                int fd = fcntl(sp[1], F_DUPFD, 100);
                if (fd < 0 || dup2(fd, 3) < 0 || syscall(SYS_close_range, 4, ~0U, 0) < 0)
                        _exit(127);
                char root_arg[4096 + 16], config_arg[4096 + 16];
                char *argv[] = { (char *) "ksmtuned2", (char *) "--injector", NULL, NULL, NULL };
                size_t k = 2;
                if (root_prefix && *root_prefix) {
                        snprintf(root_arg, sizeof root_arg, "--root=%s", root_prefix);
                        argv[k++] = root_arg;
                }
                if (config_path) {
                        snprintf(config_arg, sizeof config_arg, "--config=%s", config_path);
                        argv[k++] = config_arg;
                }
                execv("/proc/self/exe", argv);
                _exit(127);
        }
        safe_close(sp[1]);
        InjectorClient *c = client_new(sp[0], pid, false);
        if (!c) {
                safe_close(sp[0]);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

InjectorClient *injector_client_free(InjectorClient *c) {
        if (!c)
                return NULL;
        /* Closing the supervisor's socket ends it, and its workers with it
         * (PR_SET_PDEATHSIG). It is reaped if it already has. */
        safe_close(c->inject.fd);
        safe_close(c->read.fd);
        safe_close(c->fd);
        if (!c->service)
                (void) waitpid(c->pid, NULL, WNOHANG);
        pthread_mutex_destroy(&c->inject.lock);
        pthread_mutex_destroy(&c->read.lock);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
}

int injector_client_supervisor_pid(const InjectorClient *c) {
        return c->pid;
}

/* One request to the supervisor; its reply and the fd that came with it. */
static int supervisor_call(InjectorClient *c, InjectorOp op, int pid, uint32_t arg, InjectorReply *rep,
                           int *ret_fd) {
        InjectorRequest req = { .magic = INJECTOR_MAGIC, .op = op, .pid = pid, .arg = arg };
        int fd = -EBADF, r;

        pthread_mutex_lock(&c->lock);
        req.seq = ++c->seq;
        r = c->fd < 0 ? -EPIPE : injector_send(c->fd, &req, sizeof req, -1);
        if (r < 0 && c->service) {
                /* The service ended (a crash, or it was killed): systemd
                 * starts a new one at this connection. */
                int service_pid;
                safe_close(c->fd);
                c->fd = connect_service(&service_pid);
                if (c->fd >= 0) {
                        log_notice("Reconnected to the injector service at %s.", INJECTOR_SOCKET);
                        r = injector_send(c->fd, &req, sizeof req, -1);
                }
        }
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + SUPERVISOR_BUDGET_USEC;
        while (r >= 0) {
                r = injector_wait_readable(c->fd, deadline);
                if (r == 0)
                        r = -ETIMEDOUT;
                if (r < 0)
                        break;
                r = injector_recv(c->fd, rep, sizeof *rep, &fd);
                if (r == 0)
                        r = -EPIPE;
                if (r < 0 || rep->seq == req.seq)
                        break;
                fd = safe_close(fd); /* a reply to a request given up on */
        }
        if (r >= 0 && c->service && rep->supervisor_pid > 0)
                c->pid = rep->supervisor_pid;
        if (r < 0 && r != -EBADMSG && c->fd >= 0) {
                c->fd = safe_close(c->fd);
                if (!c->service)
                        (void) waitpid(c->pid, NULL, WNOHANG);
                if (!c->gone_logged)
                        log_error_errno(r, "Injector supervisor (pid %d) is gone or hung (%m): no injection and "
                                           "no ptrace-only reads (exe, ksmd's wchan) until the daemon restarts.",
                                        c->pid);
                c->gone_logged = true;
        }
        pthread_mutex_unlock(&c->lock);
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        if (ret_fd)
                *ret_fd = fd;
        else
                safe_close(fd);
        return 0;
}

/* With ch->lock held: a worker to talk to, started if need be. */
static int channel_ensure(InjectorClient *c, Channel *ch) {
        if (ch->fd >= 0)
                return 0;
        if (now_usec(CLOCK_MONOTONIC) < ch->next_spawn_usec)
                return -EAGAIN;
        InjectorReply rep;
        int fd = -EBADF;
        int r = supervisor_call(c, INJECTOR_OP_SPAWN, 0, ch->role, &rep, &fd);
        if (r >= 0 && (rep.error != 0 || fd < 0)) {
                r = rep.error ? -rep.error : -EBADMSG;
                fd = safe_close(fd);
        }
        if (r < 0) {
                ch->backoff_usec = CLAMP(ch->backoff_usec * 2, BACKOFF_MIN_USEC, BACKOFF_MAX_USEC);
                ch->next_spawn_usec = now_usec(CLOCK_MONOTONIC) + ch->backoff_usec;
                return r;
        }
        ch->fd = fd;
        ch->pid = rep.pid;
        if (ch->restarts > 0)
                log_notice("Injector %s worker started again as pid %d (restart %u).", role_name(ch->role), ch->pid,
                           ch->restarts);
        else
                log_debug("Injector %s worker started as pid %d.", role_name(ch->role), ch->pid);
        return 0;
}

/* With ch->lock held: the worker died, hung or spoke garbage; the next
 * request starts another after the back-off. */
static void channel_reset(InjectorClient *c, Channel *ch, int error, bool kill_it) {
        if (kill_it && ch->pid > 0) {
                InjectorReply rep;
                (void) supervisor_call(c, INJECTOR_OP_KILL, ch->pid, 0, &rep, NULL);
        }
        ch->backoff_usec = CLAMP(ch->backoff_usec * 2, BACKOFF_MIN_USEC, BACKOFF_MAX_USEC);
        ch->next_spawn_usec = now_usec(CLOCK_MONOTONIC) + ch->backoff_usec;
        ch->restarts++;
        log_warning_errno(error, "Injector %s worker (pid %d) %s; starting another in %" PRIu64 " ms.",
                          role_name(ch->role), ch->pid,
                          error == -ETIMEDOUT ? "did not answer in time and was killed"
                                              : "is gone (%m)",
                          ch->backoff_usec / USEC_PER_MSEC);
        ch->fd = safe_close(ch->fd);
        ch->pid = 0;
}

static int channel_call(InjectorClient *c, Channel *ch, InjectorRequest *req, int pass_fd, uint64_t budget_usec,
                        const _Atomic uint64_t *give_up_usec, InjectorReply *rep) {
        int r;

        pthread_mutex_lock(&ch->lock);
        for (int attempt = 0;; attempt++) {
                /* A worker that died while idle (killed, crashed) hangs up
                 * its end: the request was never delivered, so a new worker
                 * takes it at once rather than the action failing. */
                if (ch->fd >= 0) {
                        struct pollfd p = { .fd = ch->fd, .events = 0 };
                        if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR))) {
                                channel_reset(c, ch, -EPIPE, false);
                                if (attempt == 0)
                                        ch->next_spawn_usec = 0;
                        }
                }
                r = channel_ensure(c, ch);
                if (r < 0)
                        break;
                req->magic = INJECTOR_MAGIC;
                req->seq = ++ch->seq;
                r = injector_send(ch->fd, req, sizeof *req, pass_fd);
                if (r >= 0)
                        break;
                channel_reset(c, ch, r, true);
                if (attempt > 0)
                        break;
                ch->next_spawn_usec = 0;
        }
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + budget_usec;
        while (r >= 0) {
                uint64_t give_up = give_up_usec ? atomic_load(give_up_usec) : 0;
                uint64_t until = give_up ? MIN(deadline, give_up) : deadline;
                /* Look at give_up at least every 100 ms: it is set while we wait. */
                r = injector_wait_readable(ch->fd, MIN(until, now_usec(CLOCK_MONOTONIC) + 100 * USEC_PER_MSEC));
                if (r < 0) {
                        channel_reset(c, ch, r, true);
                        break;
                }
                if (r == 0) {
                        uint64_t now = now_usec(CLOCK_MONOTONIC);
                        if (give_up && now >= give_up) {
                                /* The daemon is stopping: the worker ends with
                                 * the supervisor, which ends with us. */
                                r = -ECANCELED;
                                break;
                        }
                        if (now >= deadline) {
                                r = -ETIMEDOUT;
                                channel_reset(c, ch, r, true);
                                break;
                        }
                        r = 0;
                        continue;
                }
                int fd = -EBADF;
                r = injector_recv(ch->fd, rep, sizeof *rep, &fd);
                safe_close(fd);
                if (r <= 0) {
                        r = r == 0 ? -EPIPE : r;
                        channel_reset(c, ch, r, r != -EPIPE);
                        break;
                }
                if (rep->magic != INJECTOR_MAGIC) {
                        r = -EBADMSG;
                        channel_reset(c, ch, r, true);
                        break;
                }
                if (rep->seq == req->seq) {
                        ch->backoff_usec = 0;
                        r = 0;
                        break;
                }
                /* a late reply to a request given up on: not ours */
        }
        pthread_mutex_unlock(&ch->lock);
        return r;
}

int injector_client_worker_pid(InjectorClient *c, InjectorRole role) {
        Channel *ch = role == INJECTOR_ROLE_INJECT ? &c->inject : &c->read;
        pthread_mutex_lock(&ch->lock);
        int r = channel_ensure(c, ch);
        if (r >= 0)
                r = ch->pid;
        pthread_mutex_unlock(&ch->lock);
        return r;
}

int injector_client_inject(InjectorClient *c, int pidfd, int pid, uint64_t start_time_ticks,
                           const MergeInjectJob *job, bool allow_seccomp, uint64_t stop_timeout_usec,
                           const _Atomic uint64_t *give_up_usec, InjectorResult *ret) {
        InjectorRequest req = {
                .op = INJECTOR_OP_INJECT,
                .pid = pid,
                .arg = (uint32_t) job->action,
                .start_time_ticks = start_time_ticks,
                .merge_any = job->merge_any,
                .flags = (allow_seccomp ? INJECTOR_FLAG_ALLOW_SECCOMP : 0) |
                         (job->allow_privileged ? INJECTOR_FLAG_ALLOW_PRIVILEGED : 0),
                .stop_timeout_usec = stop_timeout_usec,
                .expect = job->expect,
                .n_ranges = MIN(job->n_ranges, (uint32_t) MERGE_INJECT_RANGES_MAX),
        };
        memcpy(req.ranges, job->ranges, sizeof req.ranges);
        InjectorReply rep;
        InjectorResult res = {};

        int r = channel_call(c, &c->inject, &req, pidfd, INJECT_BUDGET_USEC, give_up_usec, &rep);
        if (r < 0) {
                res.r = r == -EAGAIN ? -EAGAIN : r == -ECANCELED ? -ECANCELED : r == -ETIMEDOUT ? -ETIMEDOUT : -EPIPE;
                snprintf(res.stats.reason, sizeof res.stats.reason, "%s",
                         r == -ECANCELED ? "given up on: the daemon is stopping"
                         : r == -ETIMEDOUT ? "the injector did not answer in time; it was replaced"
                         : r == -EAGAIN ? "the injector is being restarted"
                                        : "the injector process is gone");
                *ret = res;
                return 0;
        }
        res.r = -rep.error;
        res.call_failed = rep.call_failed;
        res.stats.tid = rep.tid;
        res.stats.pause_usec = rep.pause_usec;
        res.stats.total_usec = rep.total_usec;
        rep.reason[sizeof rep.reason - 1] = 0;
        strscpy(res.stats.reason, sizeof res.stats.reason, rep.reason);
        *ret = res;
        return 0;
}

int injector_client_read_ranges(InjectorClient *c, int pid, uint64_t start_time_ticks, InjectorRanges which,
                                MapList *ret) {
        InjectorRequest req = {
                .op = INJECTOR_OP_READ_RANGES,
                .pid = pid,
                .arg = (uint32_t) which,
                .start_time_ticks = start_time_ticks,
        };
        InjectorReply rep;

        int r = channel_call(c, &c->read, &req, -1, READ_BUDGET_USEC, NULL, &rep);
        if (r < 0)
                return r == -EAGAIN ? -EAGAIN : -EPIPE;
        if (rep.error != 0)
                return -rep.error;
        size_t n = MIN((size_t) rep.data_len, sizeof rep.data) / (2 * sizeof(uint64_t));
        MapList l = {};
        if (n > 0) {
                l.ranges = calloc(n, sizeof *l.ranges);
                if (!l.ranges)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                uint64_t pair[2];
                memcpy(pair, rep.data + i * sizeof pair, sizeof pair);
                if (pair[1] <= pair[0]) {
                        free(l.ranges);
                        return -EBADMSG;
                }
                l.ranges[i] = (MapRange) { .start = pair[0], .end = pair[1], .kind = MAP_KIND_ANON,
                                           .mergeable = which == INJECTOR_RANGES_MERGEABLE };
        }
        l.n = n;
        *ret = l;
        return 0;
}

int injector_client_read(void *userdata, int pid, uint64_t start_time_ticks, const char *name, char *buf,
                         size_t size) {
        InjectorClient *c = userdata;
        InjectorRequest req = {
                .op = streq(name, "exe") ? INJECTOR_OP_READ_EXE : INJECTOR_OP_READ_WCHAN,
                .pid = pid,
                .start_time_ticks = start_time_ticks,
        };
        InjectorReply rep;

        if (!streq(name, "exe") && !streq(name, "wchan"))
                return -EINVAL;
        int r = channel_call(c, &c->read, &req, -1, READ_BUDGET_USEC, NULL, &rep);
        if (r < 0)
                return r == -EAGAIN ? -EAGAIN : -EPIPE;
        if (rep.error != 0)
                return -rep.error;
        size_t n = MIN((size_t) rep.data_len, MIN(size, sizeof rep.data));
        memcpy(buf, rep.data, n);
        return (int) n;
}
