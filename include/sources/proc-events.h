/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "macro.h"

/* Process events from the kernel's proc connector (NETLINK_CONNECTOR,
 * CN_IDX_PROC) through libnl-3: fork, exec, exit and comm changes of every
 * process on the host, as they happen. */

typedef enum ProcEventType {
        PROC_EV_FORK,
        PROC_EV_EXEC,
        PROC_EV_EXIT,
        PROC_EV_COMM,
        PROC_EV_UID,
        PROC_EV_OTHER,          /* gid, sid, ptrace, coredump: not used */
        PROC_EV_ACK,            /* the answer to our LISTEN request */
        _PROC_EV_MAX,
} ProcEventType;

const char *proc_event_type_to_string(ProcEventType t);

typedef struct ProcEvent {
        ProcEventType type;
        int pid;                /* the process (thread group id); fork: the child's */
        int tid;                /* the thread; fork: the child thread. tid != pid: a thread, not a process */
        int parent_pid;         /* fork: the parent's tgid */
        uint64_t timestamp_ns;  /* when the kernel sent it, CLOCK_MONOTONIC */
        char comm[16];          /* comm: the new name */
        uint32_t exit_code;     /* exit: wait status */
        uint32_t uid_effective; /* uid: the new euid */
        uint32_t ack_seq, ack_ack; /* ack: the request's cn_msg seq, and its ack + 1 */
        uint32_t ack_error;     /* ack: the request's error (EPERM), 0 when accepted */
} ProcEvent;

/* Decodes the payload of one netlink message from the connector (a struct
 * cn_msg and the struct proc_event in it). -EBADMSG for a short or foreign
 * message. */
int proc_event_decode(const void *payload, size_t len, ProcEvent *ret);

/* Calls cb for every proc event in one datagram (a sequence of netlink
 * messages). Returns the number of events, or -EBADMSG when the datagram is
 * malformed (events before the fault were delivered). */
typedef void (*ProcEventHandler)(const ProcEvent *ev, void *userdata);
int proc_events_decode_datagram(const void *buf, size_t len, ProcEventHandler cb, void *userdata);

typedef struct ProcEvents ProcEvents;

/* The connector socket the service manager opened and bound for the
 * daemon (ksmtuned2-proc-events.socket: ListenNetlink=connector 1), taken
 * from sd_listen_fds(): since 6.6 a process without CAP_NET_ADMIN can
 * subscribe on it (PROC_CN_MCAST_LISTEN checks only the namespaces), also
 * where joining the group needs CAP_NET_ADMIN (6.18.44 as built here:
 * bind() EPERM without it, tests/kernel/test-daemon-events-caps.sh).
 * Before 6.6 the request itself wants CAP_NET_ADMIN, and the socket does
 * not help.
 * The fd, or -ENOENT when none was passed. Any other passed fd is closed
 * with a warning saying what it is not. */
int proc_events_listen_fd(void);

/* Opens the connector socket and subscribes (PROC_CN_MCAST_LISTEN).
 * Kernels before 6.6 want CAP_NET_ADMIN in the initial user namespace to
 * join the group (-EPERM here) and for the request itself (refused in its
 * ack: proc_events_self_test()); 6.6-6.12 let any process in the initial
 * namespaces join (NL_CFG_F_NONROOT_RECV, cn_bind()) and ask
 * (cn_proc_mcast_ctl() ignores requests from other user or PID namespaces
 * instead of checking a capability); the host's 6.18.44 wants it to join
 * again, not to ask (tests/kernel/test-daemon-events-caps.sh, in the
 * vmkernel guests too). -EPROTONOSUPPORT without the connector. rcvbuf_bytes 0 is the default
 * (8 MiB); tests pass a small one to provoke ENOBUFS. fd >= 0: the socket
 * of proc_events_listen_fd(), taken over (closed on failure too), its
 * buffer never made smaller; -EBADF when libnl refuses it. */
int proc_events_open(size_t rcvbuf_bytes, int fd, ProcEvents **ret);
ProcEvents *proc_events_free(ProcEvents *pe);
DEFINE_TRIVIAL_CLEANUP_FUNC(ProcEvents *, proc_events_free);

/* Forks a child that exits at once and waits until its events arrive. The
 * kernel accepts a LISTEN from a PID namespace or a non-initial user
 * namespace and then sends nothing, so only this shows that events really
 * flow. -ETIMEDOUT when none came within timeout_usec. Events read meanwhile
 * are discarded (call it before the initial scan). Forking with threads
 * running is fine: the child only calls _exit(). */
int proc_events_self_test(ProcEvents *pe, uint64_t timeout_usec);

/* Hooks the socket into the loop. cb gets every event; on_overflow is
 * called once the socket buffer overflowed (ENOBUFS: events were lost)
 * so the caller resyncs; on_batch after each drained batch; on_error when
 * reading failed otherwise, after which the source is off (the caller may
 * free pe later, not from within the callback). */
typedef struct ProcEventsHandlers {
        ProcEventHandler on_event;
        void (*on_overflow)(void *userdata);
        void (*on_batch)(void *userdata);
        void (*on_error)(int error, void *userdata);
        void *userdata;
} ProcEventsHandlers;

int proc_events_attach(ProcEvents *pe, sd_event *e, const ProcEventsHandlers *h);

/* Reads what is queued (at most max_datagrams), delivering to the
 * handlers. Returns the number of events (0 when nothing was queued). */
int proc_events_drain(ProcEvents *pe, unsigned max_datagrams);

typedef struct ProcEventsCounters {
        uint64_t events;
        uint64_t datagrams;
        uint64_t overflows;     /* ENOBUFS seen */
        uint64_t malformed;
        uint64_t cpu_usec;      /* the loop thread's CPU time reading and handling them (callbacks included) */
        uint64_t drains;        /* batches read */
        uint64_t deferred_drains; /* wakeups that found the storm guard's bucket dry and waited 50 ms */
} ProcEventsCounters;

void proc_events_get_counters(const ProcEvents *pe, ProcEventsCounters *ret);
int proc_events_fd(const ProcEvents *pe);
