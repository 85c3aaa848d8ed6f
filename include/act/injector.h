/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inject.h"
#include "macro.h"
#include "merge.h"
#include "merge-method.h"
#include "plan.h"

/* The injector: the only process of the service that may ptrace.
 *
 * At start, before it has threads, the daemon forks and execs itself as
 * `ksmtuned2 --injector` (the supervisor) with a socketpair on fd 3, and then
 * drops CAP_SYS_PTRACE and the ptrace system calls from its own sandbox. The
 * supervisor only forks: on the daemon's request a worker per role, each
 * with a socketpair straight to the daemon, fewer capabilities and its own
 * seccomp filter; on an inject worker's request a short-lived seccomp
 * reader (below). It never ptraces or reads anything of a target itself.
 *
 *   role     capabilities                      serves
 *   inject   CAP_SYS_PTRACE CAP_DAC_READ_SEARCH INJECT: prctl/madvise injected (inject.h)
 *   read     CAP_SYS_PTRACE                     READ: /proc/PID/exe, /proc/PID/wchan, which
 *                                               the kernel shows only to a ptrace-capable reader
 *   seccomp  CAP_SYS_ADMIN CAP_SYS_PTRACE       the filters of every thread of one process
 *   reader   (no filter of its own: the kernel refuses PTRACE_SECCOMP_GET_FILTER to a caller
 *            that has one), one request, then it exits
 *
 * A supervisor itself under a seccomp filter (the shipped unit's
 * SystemCallFilter=) cannot fork a reader without one: it connects instead
 * to INJECTOR_SECCOMP_READER_SOCKET, where systemd starts
 * `ksmtuned2 --seccomp-reader` per connection (ksmtuned2-seccomp-reader.socket).
 *
 * Messages are fixed-size SOCK_SEQPACKET datagrams; a pidfd travels with
 * SCM_RIGHTS. Every worker validates every request itself: magic, size,
 * op, never pid 1, never the daemon, the supervisor or itself, the fd must
 * be a pidfd of that very pid, and the pid's start time must be the one the
 * daemon saw. A worker that dies or does not answer in time is killed by the
 * supervisor at the daemon's request and started again with a back-off; the
 * action is an outcome (ETIMEDOUT, EPIPE), never a failure of the daemon. */

#define INJECTOR_MAGIC UINT32_C(0x6b736d69) /* "ksmi" */
#define INJECTOR_SECCOMP_READER_SOCKET "/run/ksmtuned2-seccomp-reader.socket"
/* Under systemd the supervisor is a service of its own
 * (ksmtuned2-injector.socket), so that ksmtuned2.service needs neither
 * CAP_SYS_PTRACE nor ptrace(2); the daemon connects to it when it exists and
 * forks its own supervisor only when it does not. */
#define INJECTOR_SOCKET "/run/ksmtuned2-injector.socket"

typedef enum InjectorRole {
        INJECTOR_ROLE_INJECT = 1,
        INJECTOR_ROLE_READ = 2,
} InjectorRole;

typedef enum InjectorOp {
        INJECTOR_OP_SPAWN = 1,          /* daemon -> supervisor: role in arg; reply carries the worker's socket */
        INJECTOR_OP_KILL = 2,           /* daemon -> supervisor: SIGKILL worker pid (one of its own) */
        INJECTOR_OP_INJECT = 3,         /* daemon -> inject worker, with the pidfd */
        INJECTOR_OP_READ_EXE = 4,       /* daemon -> read worker */
        INJECTOR_OP_READ_WCHAN = 5,     /* daemon -> read worker */
        INJECTOR_OP_READ_RANGES = 7,    /* daemon -> read worker: arg InjectorRanges; reply data holds
                                         * uint64_t [start, end) pairs, E2BIG past what data holds */
        INJECTOR_OP_FETCH_FILTERS = 6,  /* inject worker -> supervisor -> seccomp reader, with the pidfd;
                                         * the supervisor answers with the socket the reader replies on */
} InjectorOp;

#define INJECTOR_FLAG_ALLOW_SECCOMP UINT32_C(1) /* InjectIntoSeccomp=yes */
#define INJECTOR_FLAG_ALLOW_PRIVILEGED UINT32_C(2) /* the policy's InjectPrivileged=yes */

typedef struct InjectorRequest {
        uint32_t magic;
        uint32_t op;                    /* InjectorOp */
        uint64_t seq;                   /* echoed: a late reply to an abandoned request is dropped */
        int32_t pid;
        uint32_t arg;                   /* INJECT: MergeAction; SPAWN: InjectorRole */
        uint64_t start_time_ticks;      /* the identity the daemon expects; 0 only for READ of ksmd */
        int32_t merge_any;              /* ksm_stat's ksm_merge_any as the daemon read it (-1 unknown) */
        uint32_t flags;                 /* INJECTOR_FLAG_* */
        uint64_t stop_timeout_usec;     /* 0: inject.h's default */
        /* INJECT: the rest of the job (merge.h MergeInjectJob; arg and merge_any above are its action
         * and merge_any) */
        ProcessIdentity expect;
        uint32_t n_ranges;
        uint64_t ranges[MERGE_INJECT_RANGES_MAX][2];
} InjectorRequest;

typedef enum InjectorOutcome {
        INJECTOR_DONE = 0,              /* error 0, or the injected call's own errno with call_failed */
        INJECTOR_REFUSED = 1,           /* not done to protect the target or the host; error says why */
        INJECTOR_FAILED = 2,            /* could not be done */
} InjectorOutcome;

typedef struct InjectorReply {
        uint32_t magic;
        uint32_t op;
        uint64_t seq;
        int32_t error;                  /* 0 or a positive errno */
        uint32_t outcome;               /* InjectorOutcome */
        int32_t tid;
        uint32_t call_failed;
        uint64_t pause_usec;
        uint64_t total_usec;
        int32_t pid;                    /* SPAWN: the worker's pid */
        int32_t supervisor_pid;         /* every reply of the supervisor: its own pid */
        uint32_t data_len;
        char reason[160];
        char data[4096];                /* READ: the file's text or the link's target */
} InjectorReply;

/* What the injector takes from the root-owned configuration itself rather
 * than from the daemon's request: InjectIntoSeccomp=. A daemon's
 * INJECTOR_FLAG_ALLOW_SECCOMP counts only when this says yes too (a
 * compromised daemon cannot switch the filter checks off); read at each
 * request that needs it, so it is the files as they are now, with the
 * daemon's own loader and owner/mode checks (conf.c). > 0 yes, 0 no,
 * -errno when it cannot be read (taken as no). */
typedef int (*InjectorConfigReader)(void);

/* `ksmtuned2 --injector`: the supervisor, on fd 3. Returns the exit status. */
int injector_main(int fd, const char *root_prefix, InjectorConfigReader read_inject_into_seccomp);
/* `ksmtuned2 --seccomp-reader`: one request on fd (the socket systemd
 * accepted), answered, then the exit status. */
int seccomp_reader_main(int fd);

/* The daemon's side. */
typedef struct InjectorClient InjectorClient;

/* Connects to INJECTOR_SOCKET (root_prefix NULL), or forks and execs the
 * supervisor, with --config=config_path when not NULL (the configuration
 * the injector reads InjectIntoSeccomp= from; the service reads the default
 * one); call before any thread exists. */
int injector_client_spawn(const char *root_prefix, const char *config_path, InjectorClient **ret);
InjectorClient *injector_client_free(InjectorClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(InjectorClient *, injector_client_free);
int injector_client_supervisor_pid(const InjectorClient *c);
/* The worker of a role now serving (starting it if needed), or -errno. */
int injector_client_worker_pid(InjectorClient *c, InjectorRole role);

/* What merge.c's inject method gets back from the inject worker. */
typedef struct InjectorResult {
        int r;                          /* as inject_syscalls()/merge_inject_local(): 0 or -errno */
        bool call_failed;
        InjectStats stats;
} InjectorResult;

/* One injection through the worker. Waits for the reply until
 * CLOCK_MONOTONIC *give_up_usec (when set) or the worker's budget, whichever
 * is first; past it the result is -ECANCELED or -ETIMEDOUT and a worker that
 * overran is killed and replaced. Returns 0 (the result says what happened)
 * or -ENOMEM. */
int injector_client_inject(InjectorClient *c, int pidfd, int pid, uint64_t start_time_ticks,
                           const MergeInjectJob *job, bool allow_seccomp, uint64_t stop_timeout_usec,
                           const _Atomic uint64_t *give_up_usec, InjectorResult *ret);

/* Root's reader of files the kernel shows only with CAP_SYS_PTRACE
 * (root.h): name is "exe" (the link's target) or "wchan". Returns the length
 * read, or -errno (-EACCES as the kernel would, -EPIPE without a worker). */
/* The ranges of a target's maps the merge actuator works on, which the
 * daemon cannot read itself without CAP_SYS_PTRACE (maps and smaps check
 * ptrace access): its VM_MERGEABLE ranges (smaps), its advisable runs, its
 * anonymous private runs (maps). 0 with the list, or -errno (-E2BIG: more
 * than one reply holds, -EPIPE without a worker). */
typedef enum InjectorRanges {
        INJECTOR_RANGES_MERGEABLE,
        INJECTOR_RANGES_ADVISABLE,
        INJECTOR_RANGES_ANON_PRIVATE,
} InjectorRanges;
int injector_client_read_ranges(InjectorClient *c, int pid, uint64_t start_time_ticks, InjectorRanges which,
                                MapList *ret);

int injector_client_read(void *userdata, int pid, uint64_t start_time_ticks, const char *name, char *buf,
                         size_t size);
