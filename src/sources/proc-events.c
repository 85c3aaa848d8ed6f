/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "log.h"
#include "proc-events.h"
#include "string-table.h"
#include "util.h"

/* A fork storm sends three events per process (fork, exec, exit) of about
 * 80 bytes each in its own skb (~768 bytes of rmem apiece): the default
 * 208 KiB rcvbuf holds ~270 of them, i.e. half a second of 500 processes per
 * second while the loop is busy elsewhere. 8 MiB (forced past rmem_max, we
 * have CAP_NET_ADMIN) rides out seconds; beyond that ENOBUFS and a resync. */
#define PROC_EVENTS_RCVBUF_BYTES (8 * 1024 * 1024)

/* Storm guard. Draining at once on every wakeup keeps exec-to-verdict
 * latency at a fraction of a millisecond, but a fork loop then wakes the
 * loop per child (~1000 wakeups a second for 500 forks a second, measured)
 * and every child is read from /proc while it is still alive, even the half
 * that exit a moment later: 6.8% of a core for prctl-merge children at
 * 500/s (tests/kernel/test-daemon-enter-storm.sh). Each drain takes
 * PROC_EVENTS_DRAIN_USEC of credit from a bucket that refills in real time
 * and holds PROC_EVENTS_DRAIN_BURST drains: up to ~660 wakeups a second
 * (the classification benchmark's 200 execs a second need ~400; at 500 a
 * second and a burst of 64 its p99 rose to 40 ms) are read at once. A
 * wakeup that finds the bucket dry waits PROC_EVENTS_STORM_USEC: then one
 * batch holds the storm's events of that time, and a child that forked and
 * exited within it is never read (2.7-3.7% of a core, measured, in the
 * storm above, with verdicts up to 50 ms late while it lasts). How many
 * children were read alive then still hung on whether the bucket ran dry;
 * discovery.c holds fork-only children FORK_HOLD_USEC for that. */
#define PROC_EVENTS_DRAIN_USEC (1500)
#define PROC_EVENTS_DRAIN_BURST 256
#define PROC_EVENTS_STORM_USEC (50 * USEC_PER_MSEC)

struct ProcEvents {
        struct nl_sock *sk;
        sd_event_source *io;
        sd_event_source *defer;         /* the bucket ran dry: the next drain's time */
        uint64_t tokens_usec;           /* the bucket, in microseconds of credit */
        uint64_t tokens_at_usec;        /* when it was last refilled */
        ProcEventsHandlers handlers;
        ProcEventsCounters counters;
        bool overflow_pending;  /* ENOBUFS seen, resync not yet asked for */
        uint32_t listen_seq;    /* our LISTEN request's cn_msg seq, to know its ack among others' */
};

static const char *const proc_event_type_table[_PROC_EV_MAX] = {
        [PROC_EV_FORK] = "fork", [PROC_EV_EXEC] = "exec", [PROC_EV_EXIT] = "exit",
        [PROC_EV_COMM] = "comm", [PROC_EV_UID] = "uid",   [PROC_EV_OTHER] = "other",
        [PROC_EV_ACK] = "ack",
};

DEFINE_STRING_TABLE_TO_STRING_FALLBACK(proc_event_type, ProcEventType, "?");

int proc_event_decode(const void *payload, size_t len, ProcEvent *ret) {
        struct cn_msg hdr, *cn = &hdr;
        struct proc_event pe = {};
        ProcEvent ev = {};

        /* The payload may sit at any alignment (a netlink buffer, a fuzzer's
         * input): copy the header out rather than dereference it in place. */
        if (len < sizeof hdr)
                return -EBADMSG;
        memcpy(&hdr, payload, sizeof hdr);
        if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC)
                return -EBADMSG;
        if ((size_t) cn->len > len - sizeof *cn)
                return -EBADMSG;
        /* The union is sized for its largest member; older kernels may send
         * less for small events, so require only the header and copy what
         * came (the buffer may also be unaligned). */
        size_t head = offsetof(struct proc_event, event_data);
        if (cn->len < head)
                return -EBADMSG;
        memcpy(&pe, (const uint8_t *) payload + sizeof hdr, MIN((size_t) cn->len, sizeof pe));
        size_t body = cn->len - head;

        ev.timestamp_ns = pe.timestamp_ns;
        switch (pe.what) {
        case PROC_EVENT_NONE:
                /* cn_proc_ack(): the request's seq, its ack + 1, and the
                 * error, multicast to every listener */
                ev.type = PROC_EV_ACK;
                ev.ack_seq = cn->seq;
                ev.ack_ack = cn->ack;
                if (body >= sizeof pe.event_data.ack)
                        ev.ack_error = pe.event_data.ack.err;
                break;
        case PROC_EVENT_FORK:
                if (body < sizeof pe.event_data.fork)
                        return -EBADMSG;
                ev.type = PROC_EV_FORK;
                ev.pid = pe.event_data.fork.child_tgid;
                ev.tid = pe.event_data.fork.child_pid;
                ev.parent_pid = pe.event_data.fork.parent_tgid;
                break;
        case PROC_EVENT_EXEC:
                if (body < sizeof pe.event_data.exec)
                        return -EBADMSG;
                ev.type = PROC_EV_EXEC;
                ev.pid = pe.event_data.exec.process_tgid;
                ev.tid = pe.event_data.exec.process_pid;
                break;
        case PROC_EVENT_EXIT:
                if (body < offsetof(struct exit_proc_event, exit_signal))
                        return -EBADMSG;
                ev.type = PROC_EV_EXIT;
                ev.pid = pe.event_data.exit.process_tgid;
                ev.tid = pe.event_data.exit.process_pid;
                ev.exit_code = pe.event_data.exit.exit_code;
                break;
        case PROC_EVENT_COMM:
                if (body < sizeof pe.event_data.comm)
                        return -EBADMSG;
                ev.type = PROC_EV_COMM;
                ev.pid = pe.event_data.comm.process_tgid;
                ev.tid = pe.event_data.comm.process_pid;
                memcpy(ev.comm, pe.event_data.comm.comm, sizeof ev.comm);
                ev.comm[sizeof ev.comm - 1] = 0;
                break;
        case PROC_EVENT_UID:
                if (body < sizeof pe.event_data.id)
                        return -EBADMSG;
                ev.type = PROC_EV_UID;
                ev.pid = pe.event_data.id.process_tgid;
                ev.tid = pe.event_data.id.process_pid;
                ev.uid_effective = pe.event_data.id.e.euid;
                break;
        default:
                ev.type = PROC_EV_OTHER;
                break;
        }
        if (ev.type != PROC_EV_ACK && ev.type != PROC_EV_OTHER && (ev.pid <= 0 || ev.tid <= 0))
                return -EBADMSG;
        *ret = ev;
        return 0;
}

int proc_events_decode_datagram(const void *buf, size_t len, ProcEventHandler cb, void *userdata) {
        int remaining = (int) MIN(len, (size_t) INT32_MAX), n = 0;

        for (const struct nlmsghdr *h = buf; nlmsg_ok(h, remaining); h = nlmsg_next((struct nlmsghdr *) h, &remaining)) {
                ProcEvent ev;
                if (h->nlmsg_type == NLMSG_NOOP)
                        continue;
                if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_OVERRUN)
                        return -EBADMSG;
                if (proc_event_decode(nlmsg_data(h), (size_t) nlmsg_datalen(h), &ev) < 0)
                        return -EBADMSG;
                if (cb)
                        cb(&ev, userdata);
                n++;
        }
        /* trailing bytes that do not form a message */
        if (remaining >= (int) sizeof(struct nlmsghdr))
                return -EBADMSG;
        return n;
}

static int send_mcast_op(struct nl_sock *sk, enum proc_cn_mcast_op op, uint32_t seq) {
        struct {
                struct cn_msg cn;
                uint32_t op;
        } __attribute__((packed)) req = {
                .cn = { .id = { .idx = CN_IDX_PROC, .val = CN_VAL_PROC }, .seq = seq, .len = sizeof(uint32_t) },
                .op = op,
        };
        struct nl_msg *msg = nlmsg_alloc_simple(NLMSG_DONE, 0);
        int r;

        if (!msg)
                return -ENOMEM;
        r = nlmsg_append(msg, &req, sizeof req, NLMSG_ALIGNTO);
        if (r >= 0)
                r = nl_send_auto(sk, msg);
        nlmsg_free(msg);
        return r < 0 ? -EIO : 0;
}

/* Why fd is not a socket of the proc connector's group, or NULL. */
static const char *not_connector_socket(int fd) {
        struct sockaddr_nl a = {};
        socklen_t len = sizeof a;
        int v = 0;
        socklen_t vl = sizeof v;

        if (sd_is_socket(fd, AF_NETLINK, 0, -1) <= 0)
                return "not a netlink socket";
        if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &vl) < 0 || v != NETLINK_CONNECTOR)
                return "not a NETLINK_CONNECTOR socket";
        if (getsockname(fd, (struct sockaddr *) &a, &len) < 0 || a.nl_family != AF_NETLINK)
                return "not bound";
        /* nl_groups: the memberships in groups 1-32 as a mask */
        if (!(a.nl_groups & (UINT32_C(1) << (CN_IDX_PROC - 1))))
                return "not a member of the proc connector's group (want ListenNetlink=connector 1)";
        return NULL;
}

int proc_events_listen_fd(void) {
        int n = sd_listen_fds(true), found = -ENOENT;

        if (n < 0)
                return log_warning_errno(n, "Cannot read the sockets passed by the service manager, ignoring: %m");
        for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + n; fd++) {
                const char *why = not_connector_socket(fd);
                if (!why && found < 0) {
                        (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
                        found = fd;
                        continue;
                }
                log_warning("Socket %d passed by the service manager is %s; closing it.", fd,
                            why ?: "a second connector socket");
                safe_close(fd);
        }
        return found;
}

int proc_events_open(size_t rcvbuf_bytes, int fd, ProcEvents **ret) {
        _cleanup_(proc_events_freep) ProcEvents *pe = NULL;
        int r;

        pe = calloc(1, sizeof *pe);
        if (!pe) {
                safe_close(fd);
                return -ENOMEM;
        }
        pe->sk = nl_socket_alloc();
        if (!pe->sk) {
                safe_close(fd);
                return -ENOMEM;
        }
        nl_socket_disable_seq_check(pe->sk);
        /* One recvmsg per datagram instead of a MSG_PEEK first. */
        nl_socket_disable_msg_peek(pe->sk);
        (void) nl_socket_set_msg_buf_size(pe->sk, 16384);
        if (fd >= 0) {
                /* Bound by the service manager: from here on libnl's (and
                 * nl_socket_free closes it). */
                r = nl_socket_set_fd(pe->sk, NETLINK_CONNECTOR, fd);
                if (r < 0) {
                        safe_close(fd);
                        return -EBADF;
                }
        } else {
                nl_join_groups(pe->sk, CN_IDX_PROC);
                r = nl_connect(pe->sk, NETLINK_CONNECTOR);
                if (r < 0) {
                        /* libnl folds the errno; the socket call's own tells more. */
                        return errno == EPROTONOSUPPORT || errno == EPERM || errno == EACCES ? -errno : -EPERM;
                }
        }
        r = nl_socket_set_nonblocking(pe->sk);
        if (r < 0)
                return -EIO;
        int sfd = nl_socket_get_fd(pe->sk), size = (int) (rcvbuf_bytes ? rcvbuf_bytes : PROC_EVENTS_RCVBUF_BYTES);
        /* An inherited socket's buffer was set by the service manager
         * (ReceiveBuffer=), past the rmem_max that SO_RCVBUF without
         * CAP_NET_ADMIN is held to: only SO_RCVBUFFORCE may change it, never
         * SO_RCVBUF, which could make it smaller. */
        if (setsockopt(sfd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0 && fd < 0)
                (void) setsockopt(sfd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);

        /* A seq of our own: acks go to every listener of the group. */
        pe->listen_seq = ((uint32_t) getpid() << 8) ^ (uint32_t) now_usec(CLOCK_MONOTONIC);
        r = send_mcast_op(pe->sk, PROC_CN_MCAST_LISTEN, pe->listen_seq);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(pe);
        return 0;
}

ProcEvents *proc_events_free(ProcEvents *pe) {
        if (!pe)
                return NULL;
        sd_event_source_disable_unref(pe->io);
        sd_event_source_disable_unref(pe->defer);
        if (pe->sk) {
                /* Lets the kernel stop building events when nobody else listens. */
                (void) send_mcast_op(pe->sk, PROC_CN_MCAST_IGNORE, 0);
                nl_socket_free(pe->sk);
        }
        free(pe);
        return NULL;
}

int proc_events_fd(const ProcEvents *pe) {
        return nl_socket_get_fd(pe->sk);
}

void proc_events_get_counters(const ProcEvents *pe, ProcEventsCounters *ret) {
        *ret = pe->counters;
}

/* Reads one datagram. 1 when one was read, 0 when none is queued,
 * -ENOBUFS when the kernel dropped events, -errno otherwise. */
static int recv_one(ProcEvents *pe, unsigned char **ret, int *ret_len) {
        struct sockaddr_nl nla = {};
        unsigned char *buf = NULL;
        int n;

        errno = 0;
        n = nl_recv(pe->sk, &nla, &buf, NULL);
        if (n < 0) {
                /* libnl turns ENOBUFS into NLE_NOMEM; recvmsg's errno is
                 * still there (free() keeps errno since glibc 2.33). */
                int e = errno;
                free(buf);
                if (e == EAGAIN || n == -NLE_AGAIN)
                        return 0;
                if (e == ENOBUFS || n == -NLE_NOMEM)
                        return -ENOBUFS;
                return e > 0 ? -e : -EIO;
        }
        if (n == 0) {
                free(buf);
                return 0;
        }
        /* Only the kernel (port 0) speaks for the connector. */
        if (nla.nl_pid != 0) {
                free(buf);
                pe->counters.malformed++;
                *ret = NULL;
                *ret_len = 0;
                return 1;
        }
        *ret = buf;
        *ret_len = n;
        return 1;
}

typedef struct Deliver {
        ProcEvents *pe;
        unsigned n;
} Deliver;

static void deliver(const ProcEvent *ev, void *userdata) {
        Deliver *d = userdata;
        d->n++;
        if (ev->type == PROC_EV_ACK || !d->pe->handlers.on_event)
                return;
        d->pe->handlers.on_event(ev, d->pe->handlers.userdata);
}

int proc_events_drain(ProcEvents *pe, unsigned max_datagrams) {
        Deliver d = { .pe = pe };
        bool emptied = false;

        for (unsigned i = 0; i < max_datagrams; i++) {
                unsigned char *buf = NULL;
                int len = 0;
                int r = recv_one(pe, &buf, &len);
                if (r == -ENOBUFS) {
                        pe->counters.overflows++;
                        pe->overflow_pending = true;
                        continue; /* the socket is usable again; read on */
                }
                if (r < 0)
                        return r;
                if (r == 0) {
                        emptied = true;
                        break;
                }
                if (!buf)
                        continue;
                pe->counters.datagrams++;
                if (proc_events_decode_datagram(buf, (size_t) len, deliver, &d) < 0)
                        pe->counters.malformed++;
                free(buf);
        }
        pe->counters.events += d.n;
        /* The kernel reports ENOBUFS once per congestion: it sets the
         * socket error only when NETLINK_S_CONGESTED was clear, and clears
         * that bit only once the receive queue is empty. Events it drops
         * while the old backlog is still queued are lost silently, so a
         * resync before the queue ran dry misses exits that happen in
         * between (the storm test found a dozen such stale processes after
         * one overflow). Ask for the resync once the queue is empty. */
        if (pe->overflow_pending && emptied && pe->handlers.on_overflow) {
                pe->overflow_pending = false;
                pe->handlers.on_overflow(pe->handlers.userdata);
        }
        if (d.n > 0 && pe->handlers.on_batch)
                pe->handlers.on_batch(pe->handlers.userdata);
        return (int) d.n;
}

typedef struct SelfTest {
        pid_t child;
        uint32_t listen_seq;
        bool seen;
        int refused;            /* our LISTEN's ack said this error */
} SelfTest;

static void self_test_event(const ProcEvent *ev, void *userdata) {
        SelfTest *t = userdata;
        if ((ev->type == PROC_EV_FORK || ev->type == PROC_EV_EXIT) && ev->pid == t->child)
                t->seen = true;
        /* Before 6.6 the request itself wants CAP_NET_ADMIN
         * (cn_proc_mcast_ctl(): __netlink_ns_capable() of the sender), also
         * on a socket the service manager joined to the group: the events
         * that arrive then are another listener's, and stop with it. */
        if (ev->type == PROC_EV_ACK && ev->ack_seq == t->listen_seq && ev->ack_ack == 1 && ev->ack_error != 0)
                t->refused = (int) ev->ack_error;
}

int proc_events_self_test(ProcEvents *pe, uint64_t timeout_usec) {
        SelfTest t = { .listen_seq = pe->listen_seq };
        int r = 0;

        t.child = fork();
        if (t.child < 0)
                return negative_errno();
        if (t.child == 0)
                _exit(0);
        (void) waitpid(t.child, NULL, 0);

        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + timeout_usec;
        while (!t.seen && !t.refused) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                if (now >= deadline) {
                        r = -ETIMEDOUT;
                        break;
                }
                struct pollfd p = { .fd = proc_events_fd(pe), .events = POLLIN };
                int k = poll(&p, 1, (int) ((deadline - now + 999) / 1000));
                if (k < 0 && errno != EINTR) {
                        r = negative_errno();
                        break;
                }
                for (;;) {
                        unsigned char *buf = NULL;
                        int len = 0;
                        k = recv_one(pe, &buf, &len);
                        if (k == -ENOBUFS)
                                continue;
                        if (k <= 0)
                                break;
                        if (buf)
                                (void) proc_events_decode_datagram(buf, (size_t) len, self_test_event, &t);
                        free(buf);
                }
        }
        /* a refusal wins over events that arrived for another listener */
        return t.refused ? -t.refused : r;
}

static void drain_now(ProcEvents *pe) {
        /* Bounded, so a storm cannot starve timers and the bus; the source
         * stays ready and is dispatched again. */
        uint64_t cpu = now_usec(CLOCK_THREAD_CPUTIME_ID);
        int r = proc_events_drain(pe, 512);
        pe->counters.cpu_usec += now_usec(CLOCK_THREAD_CPUTIME_ID) - cpu;
        pe->counters.drains++;
        if (r < 0 && r != -EINTR) {
                /* Not a passing condition (ENOBUFS is handled in drain):
                 * stop reading rather than spin on it. */
                (void) sd_event_source_set_enabled(pe->io, SD_EVENT_OFF);
                if (pe->handlers.on_error)
                        pe->handlers.on_error(r, pe->handlers.userdata);
                else
                        log_warning_errno(r, "Reading process events failed: %m");
        }
}

static int on_defer(sd_event_source *s, uint64_t usec, void *userdata) {
        ProcEvents *pe = userdata;
        /* The socket is read now and its source is armed again; the
         * credit accrued while waiting pays for this drain. */
        pe->tokens_usec = 0;
        pe->tokens_at_usec = usec;
        if (sd_event_source_set_enabled(pe->io, SD_EVENT_ON) < 0)
                return 0;
        drain_now(pe);
        return 0;
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ProcEvents *pe = userdata;
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        pe->tokens_usec = MIN(pe->tokens_usec + (now - pe->tokens_at_usec),
                              (uint64_t) PROC_EVENTS_DRAIN_BURST * PROC_EVENTS_DRAIN_USEC);
        pe->tokens_at_usec = now;
        if (pe->tokens_usec >= PROC_EVENTS_DRAIN_USEC || !pe->defer) {
                pe->tokens_usec -= MIN(pe->tokens_usec, PROC_EVENTS_DRAIN_USEC);
                drain_now(pe);
                return 0;
        }
        /* Dry: leave the events queued (the rcvbuf holds seconds of them)
         * and read them in one batch a little later. */
        uint64_t due = now + PROC_EVENTS_STORM_USEC;
        if (sd_event_source_set_time(pe->defer, due) < 0 ||
            sd_event_source_set_enabled(pe->defer, SD_EVENT_ONESHOT) < 0) {
                drain_now(pe);
                return 0;
        }
        (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
        pe->counters.deferred_drains++;
        return 0;
}

int proc_events_attach(ProcEvents *pe, sd_event *e, const ProcEventsHandlers *h) {
        pe->handlers = *h;
        pe->tokens_at_usec = now_usec(CLOCK_MONOTONIC);
        pe->tokens_usec = (uint64_t) PROC_EVENTS_DRAIN_BURST * PROC_EVENTS_DRAIN_USEC;
        int r = sd_event_add_io(e, &pe->io, proc_events_fd(pe), EPOLLIN, on_io, pe);
        if (r < 0)
                return r;
        /* Without the timer (ENOMEM) every wakeup drains at once, as before.
         * Accuracy 1 us: sd-event's default (0) lets it slip by 250 ms. */
        if (sd_event_add_time(e, &pe->defer, CLOCK_MONOTONIC, UINT64_MAX, 1, on_defer, pe) >= 0)
                (void) sd_event_source_set_enabled(pe->defer, SD_EVENT_OFF);
        return 0;
}
