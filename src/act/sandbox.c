/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include <seccomp.h>
#include <sys/capability.h>
#include <sys/psx_syscall.h>
#if HAVE_VALGRIND_VALGRIND_H
#include <valgrind/valgrind.h>
#endif

#include "fileio.h"
#include "log-messages.h"
#include "log.h"
#include "sandbox.h"
#include "util.h"

/* Capabilities, and why. Measured on 6.18 as uid 0 with a reduced set:
 * - ptrace "read" access (PTRACE_MODE_READ_FSCREDS) to a process whose
 *   permitted set is not a subset of ours needs CAP_SYS_PTRACE, even as
 *   uid 0: without it readlink(/proc/PID/exe) and smaps_rollup fail with
 *   EACCES, and /proc/<ksmd>/wchan silently reads "0" (ksmd is a kernel
 *   thread with every capability), which would blind the blocked-time
 *   sampler. So CAP_SYS_PTRACE stays whether or not injection is on; it also
 *   covers PTRACE_SEIZE for Method=inject.
 * - ksm_stat and ksm_merging_pages are mode 0400, owned by the task's euid:
 *   reading them for other users (QEMU runs as libvirt-qemu) needs
 *   CAP_DAC_READ_SEARCH.
 * - Injection reads the target's /proc/PID/mem (mode 0600, the target's
 *   euid: CAP_DAC_READ_SEARCH) and writes with PTRACE_POKEDATA, which
 *   only checks that it is our tracee: opening another user's mem O_RDWR
 *   would need CAP_DAC_OVERRIDE, which is not kept.
 * - The KSM knobs are root's, 0644: writing them as uid 0 needs no
 *   CAP_DAC_OVERRIDE. tracefs instances are root's too.
 * - The proc connector checks CAP_NET_ADMIN (on kernels that check it) when
 *   the socket joins its group: before the sandbox, or by the service
 *   manager (ksmtuned2-proc-events.socket); taskstats checks it on every query
 *   (GENL_ADMIN_PERM), so it stays only for a taskstats user.
 * - Remote process_madvise() checks CAP_SYS_NICE (mm/madvise.c), as does the
 *   out-of-tree process_ksm_enable(); both first check ptrace "read" access
 *   (mm_access()), so CAP_SYS_PTRACE stays with them even when the
 *   injector runs (EACCES on a target of another uid otherwise: seen in
 *   the patched 6.12 guest, "method madvise failed: EACCES" on a nobody
 *   target, tests/kernel/test-daemon-remote-methods.sh). */
#define CAP_BIT(c) (UINT64_C(1) << (c))
static const uint64_t always_kept = CAP_BIT(CAP_DAC_READ_SEARCH);

void sandbox_needs_from_probe(const Probe *p, SandboxNeeds *ret) {
        *ret = (SandboxNeeds) {
                .ptrace = true,
                .remote_madvise = p->process_madvise_remote_mergeable || p->process_ksm_syscall,
                .taskstats = false,     /* no module queries taskstats after start-up yet */
                .process_ksm_nrs = { -1, -1, -1 },
        };
        if (p->process_ksm_syscall) {
                ret->process_ksm_nrs[0] = p->process_ksm_enable_nr;
                ret->process_ksm_nrs[1] = p->process_ksm_disable_nr;
                ret->process_ksm_nrs[2] = p->process_ksm_status_nr;
        }
}

uint64_t sandbox_keep_mask(const SandboxNeeds *needs) {
        uint64_t m = always_kept;
        /* Remote process_madvise() and process_ksm_*() take the target's
         * mm with mm_access(PTRACE_MODE_READ_FSCREDS) before their
         * CAP_SYS_NICE check: a target of another uid, or one with a
         * capability we lack, needs CAP_SYS_PTRACE there (EACCES without
         * it), injector or not. The capability alone: ptrace(2) stays
         * outside the seccomp allow-list unless needs->ptrace. */
        if (needs->ptrace || needs->remote_madvise)
                m |= CAP_BIT(CAP_SYS_PTRACE);
        if (needs->remote_madvise)
                m |= CAP_BIT(CAP_SYS_NICE);
        if (needs->taskstats)
                m |= CAP_BIT(CAP_NET_ADMIN);
        return m;
}

/* Capabilities are per thread. libcap's own calls change only the calling
 * thread, so every change goes through libpsx, which runs the system call on
 * each thread (the daemon links with -Wl,-wrap,pthread_create so that libpsx
 * knows all of them). */
static int psx_call(long nr, long a1, long a2, long a3) {
        /* Six arguments: prctl() insists that the unused ones are 0. */
        long r = psx_syscall6(nr, a1, a2, a3, 0, 0, 0);
        return r < 0 ? negative_errno() : 0;
}

int sandbox_drop_capabilities(uint64_t keep_mask) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[2] = {};
        int last = (int) cap_max_bits() - 1, r;

        if (capget(&h, d) < 0)
                return negative_errno();
        uint64_t permitted = d[0].permitted | (uint64_t) d[1].permitted << 32;
        uint64_t keep = keep_mask & permitted;
        bool setpcap = permitted & CAP_BIT(CAP_SETPCAP);

        /* The bounding set needs CAP_SETPCAP, so it goes before the capset. */
        for (int c = 0; setpcap && c <= last; c++) {
                if (keep & CAP_BIT(c) || prctl(PR_CAPBSET_READ, c, 0, 0, 0) <= 0)
                        continue;
                r = psx_call(SYS_prctl, PR_CAPBSET_DROP, c, 0);
                if (r < 0)
                        return r;
        }
        /* uid 0 would regain the full set on execve (which the filter refuses
         * anyway) and keep it across setuid; lock both doors. */
        if (setpcap) {
                r = psx_call(SYS_prctl, PR_SET_SECUREBITS,
                         SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                 SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                                 SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
                         0);
                if (r < 0)
                        return r;
        }
        r = psx_call(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0);
        if (r < 0 && r != -EINVAL) /* EINVAL: kernel without ambient capabilities */
                return r;

        d[0] = (struct __user_cap_data_struct) { .effective = (uint32_t) keep, .permitted = (uint32_t) keep };
        d[1] = (struct __user_cap_data_struct) { .effective = (uint32_t) (keep >> 32),
                                                 .permitted = (uint32_t) (keep >> 32) };
        r = psx_call(SYS_capset, (long) &h, (long) d, 0);
        if (r < 0)
                return r;
        return psx_call(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0);
}

/* The allow-list: every system call the daemon makes, by who needs it. A
 * module that starts calling something new adds it here; the test suites run
 * the daemon with KSMTUNED2_SECCOMP_FATAL=1, so a missing entry fails a test
 * rather than a feature in production. Names that do not exist on this
 * architecture are skipped. Calls with argument checks are added in
 * add_argument_rules(). */
static const char *const allow_list[] = {
        /* glibc, every module: memory and plain I/O */
        "brk", "munmap", "mremap", "madvise", "read", "write", "pread64", "pwrite64", "readv", "writev",
        "close", "lseek", "fcntl", "ioctl" /* isatty() */, "dup", "dup2", "dup3", "getrandom",
        /* files: Root, procfs, sysfs, the knob journal (write_file_atomic), config and policies */
        "openat", "open", "newfstatat", "fstat", "stat", "lstat", "statx", "statfs", "fstatfs", "access",
        "faccessat", "faccessat2", "readlinkat", "readlink", "getdents64", "mkdir", "mkdirat", "unlink",
        "unlinkat", "rename", "renameat", "renameat2", "fchmod", "fsync", "fdatasync", "ftruncate",
        "umask", "getcwd", "pipe2",
        /* policy directories watched for changes */
        "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
        /* time: sd-event, the sampler, now_usec() (usually the vDSO) */
        "clock_gettime", "clock_getres", "gettimeofday", "time", "nanosleep", "clock_nanosleep",
        /* sd-event */
        "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "timerfd_create",
        "timerfd_settime", "timerfd_gettime", "signalfd4", "eventfd2", "poll", "ppoll",
        /* signals; abort(). restart_syscall: the kernel's own resumption of a
         * nanosleep/poll interrupted by a signal (found by the storm test) */
        "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack", "rt_sigtimedwait", "restart_syscall",
        /* pthreads (ksmd sampler, readers with deadlines); libpsx */
        "set_robust_list", "get_robust_list", "rseq", "futex", "set_tid_address", "sched_yield",
        "sched_getaffinity", "exit", "exit_group", "gettid", "getpid", "getppid", "prlimit64",
        "getrlimit", "prctl" /* thread names, PR_CAPBSET_READ */, "capget", "membarrier",
        /* identity: sd-bus credentials, log, User= matching */
        "getuid", "geteuid", "getgid", "getegid", "getgroups", "getresuid", "getresgid", "uname",
        "sysinfo", "getrusage", "times",
        /* sockets: sd-bus, sd_notify, sd-journal (AF_UNIX); libnl proc connector and taskstats
         * (AF_NETLINK). socket() itself is restricted to those two families below. */
        "socketpair", "connect", "bind", "getsockname", "getpeername", "getsockopt", "setsockopt",
        "sendmsg", "sendmmsg", "sendto", "recvmsg", "recvmmsg", "recvfrom", "shutdown",
        /* sd-journal passes large messages in a sealed memfd */
        "memfd_create",
        /* actuators: pidfds, remote madvise, process_ksm; reaping the injector */
        "pidfd_open", "process_madvise", "wait4", "waitid",
};

/* Only while the daemon injects itself (SandboxNeeds.ptrace: Sandbox= on
 * valgrind's terms, no injector): ptrace, waiting for the tracee, the
 * fallback frame written below its stack pointer, and tgkill() re-sending
 * to its thread the signals that arrived while it was held. Otherwise the
 * injector process makes these calls (sandbox_load_injector_seccomp). */
static const char *const ptrace_list[] = {
        "ptrace", "tgkill",
};

/* The injector's workers (injector.h): what reading /proc, the protocol and
 * malloc need. */
static const char *const worker_list[] = {
        "read", "write", "pread64", "close", "lseek", "fcntl", "newfstatat", "fstat", "statx",
        "readlinkat", "getdents64", "faccessat", "faccessat2", "brk", "munmap", "mremap", "madvise",
        "getrandom", "clock_gettime", "clock_nanosleep", "nanosleep", "poll", "ppoll", "recvmsg", "sendmsg",
        "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "restart_syscall", "exit", "exit_group", "getpid",
        "gettid", "getppid", "futex", "sched_yield",
        /* inject.c reopens the target's mem after the stop into the same descriptor */
        "dup3",
        /* the inject worker reads InjectIntoSeccomp= with the daemon's loader:
         * its owner checks apply as root (conf_trust_checks), and realpath()
         * resolves the directories it checks */
        "geteuid", "readlink",
};

unsigned sandbox_allow_list_size(void) {
        return (unsigned) ELEMENTSOF(allow_list);
}

/* Memory that is writable and executable at once is never needed (the
 * unit also sets MemoryDenyWriteExecute=). */
static int add_wx_rules(scmp_filter_ctx ctx) {
        const int protected_calls[] = { SCMP_SYS(mmap), SCMP_SYS(mprotect) };
        int r = 0;
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(protected_calls); i++) {
                const scmp_datum_t wx = PROT_WRITE | PROT_EXEC;
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, protected_calls[i], 1, SCMP_A2(SCMP_CMP_MASKED_EQ, wx, 0));
                if (r >= 0)
                        r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, protected_calls[i], 1,
                                             SCMP_A2(SCMP_CMP_MASKED_EQ, wx, PROT_WRITE));
                if (r >= 0)
                        r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, protected_calls[i], 1,
                                             SCMP_A2(SCMP_CMP_MASKED_EQ, wx, PROT_EXEC));
        }
        return r;
}

static int add_list(scmp_filter_ctx ctx, const char *const *list, size_t n) {
        for (size_t i = 0; i < n; i++) {
                int nr = seccomp_syscall_resolve_name(list[i]);
                if (nr == __NR_SCMP_ERROR || nr < 0)
                        continue; /* not on this architecture (e.g. open on aarch64) */
                int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_argument_rules(scmp_filter_ctx ctx, const SandboxNeeds *needs) {
        int r;

        /* Only the socket families the unit allows (RestrictAddressFamilies=). */
        r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, AF_NETLINK));
        /* Threads only: no fork after start-up (the probe's child runs before).
         * clone3 passes its flags in memory the filter cannot see, so it gets
         * ENOSYS and glibc falls back to clone(). */
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                                     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        /* The daemon never signals another process: kill() and
         * pidfd_send_signal() only with signal 0 (does it exist?). tgkill()
         * is in the plain list: pthread_kill/raise/abort, and the injector
         * re-sends to the target's thread the signals that arrived while it
         * held it stopped (ptrace could do worse anyway). */
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(kill), 1, SCMP_A1(SCMP_CMP_EQ, 0));
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(pidfd_send_signal), 1, SCMP_A1(SCMP_CMP_EQ, 0));
        /* Without injection of its own the daemon signals only its own
         * threads (pthread_kill, raise, abort, libpsx): tgkill(getpid(), ...). */
        if (r >= 0 && !(needs && needs->ptrace))
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
                                     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t) getpid()));
        if (r >= 0)
                r = add_wx_rules(ctx);
        return r;
}

/* What the SIGSYS handler needs, prepared before the filter is loaded: the
 * handler may only make async-signal-safe calls that the filter allows. */
#define MAX_SYSCALL_NR 1024
static const char *syscall_names[MAX_SYSCALL_NR];
static bool sigsys_fatal;
static bool sigsys_journal;

static size_t append(char *buf, size_t n, size_t at, const char *s) {
        while (*s && at + 1 < n)
                buf[at++] = *s++;
        buf[at] = 0;
        return at;
}

static size_t append_int(char *buf, size_t n, size_t at, long v) {
        char digits[24];
        size_t k = sizeof digits - 1;
        bool neg = v < 0;
        unsigned long u = neg ? -(unsigned long) v : (unsigned long) v;

        digits[k] = 0;
        do
                digits[--k] = (char) ('0' + u % 10);
        while ((u /= 10) && k > 1);
        if (neg)
                digits[--k] = '-';
        return append(buf, n, at, digits + k);
}

static void on_sigsys(int sig, siginfo_t *si, void *context) {
        int saved_errno = errno;
        int nr = si->si_syscall;
        const char *name = nr >= 0 && nr < MAX_SYSCALL_NR && syscall_names[nr] ? syscall_names[nr] : "?";
        char line[256];
        size_t at = 0;

        /* "<3>" is the priority prefix journald reads on a stream (err). */
        if (sigsys_journal)
                at = append(line, sizeof line, at, "<3>");
        else
                at = append(line, sizeof line, at, "ksmtuned2: ");
        at = append(line, sizeof line, at, "seccomp: refused system call ");
        at = append(line, sizeof line, at, name);
        at = append(line, sizeof line, at, " (");
        at = append_int(line, sizeof line, at, nr);
        at = append(line, sizeof line, at, sigsys_fatal ? "), exiting (KSMTUNED2_SECCOMP_FATAL=1)"
                                                        : "), returning EPERM");
        at = append(line, sizeof line, at, "; if the daemon needs it, add it to the allow-list in src/act/sandbox.c\n");
        (void) !write(STDERR_FILENO, line, at);
        if (sigsys_fatal)
                _exit(128 + SIGSYS);

        ucontext_t *uc = context;
#if defined(__x86_64__)
        uc->uc_mcontext.gregs[REG_RAX] = -EPERM;
#elif defined(__aarch64__)
        uc->uc_mcontext.regs[0] = (uint64_t) -EPERM;
#else
#error "set the return register of the refused system call for this architecture"
#endif
        errno = saved_errno;
}

/* The SIGSYS handler and what it needs, before a filter is loaded. */
static int sigsys_prepare(bool fatal) {
        for (int nr = 0; nr < MAX_SYSCALL_NR; nr++)
                if (!syscall_names[nr])
                        syscall_names[nr] = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
        sigsys_fatal = fatal;
        sigsys_journal = getenv("JOURNAL_STREAM") != NULL;
        struct sigaction sa = { .sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO | SA_RESTART };
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGSYS, &sa, NULL) < 0)
                return negative_errno();
        /* A thread that blocks SIGSYS would be killed by a refused call. */
        sigset_t sys;
        sigemptyset(&sys);
        sigaddset(&sys, SIGSYS);
        (void) pthread_sigmask(SIG_UNBLOCK, &sys, NULL);
        return 0;
}

static void seccomp_releasep(scmp_filter_ctx *ctx) {
        if (*ctx)
                seccomp_release(*ctx);
}

int sandbox_load_seccomp(const SandboxNeeds *needs, bool fatal) {
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
        int r;

        r = sigsys_prepare(fatal);
        if (r < 0)
                return r;

        /* Trap (EPERM plus a line naming the call), not KILL_PROCESS: a libc
         * update that starts using a new system call must not take the
         * service down on every host at once, mid-tick with knobs changed; a
         * refusal degrades one feature and says which call to add. The test
         * suites make it fatal so that a missing entry fails there. */
        ctx = seccomp_init(SCMP_ACT_TRAP);
        if (!ctx)
                return -ENOMEM;
        /* Every thread, including those started before. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
        if (r < 0)
                return r;
        r = add_list(ctx, allow_list, ELEMENTSOF(allow_list));
        if (r >= 0 && (!needs || needs->ptrace))
                r = add_list(ctx, ptrace_list, ELEMENTSOF(ptrace_list));
        if (r >= 0)
                r = add_argument_rules(ctx, needs);
        if (r < 0)
                return r;
        /* process_ksm_enable/disable/status: numbers only the kernel knows. */
        for (size_t i = 0; needs && i < ELEMENTSOF(needs->process_ksm_nrs); i++)
                if (needs->process_ksm_nrs[i] >= 0) {
                        r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, (int) needs->process_ksm_nrs[i], 0);
                        if (r < 0)
                                return r;
                }

        return seccomp_load(ctx);
}

int sandbox_load_injector_seccomp(int role, bool fatal) {
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
        int r;

        r = sigsys_prepare(fatal);
        if (r < 0)
                return r;
        /* One thread; nothing to synchronise. */
        ctx = seccomp_init(SCMP_ACT_TRAP);
        if (!ctx)
                return -ENOMEM;
        r = add_list(ctx, worker_list, ELEMENTSOF(worker_list));
        if (r >= 0 && role == 1 /* INJECTOR_ROLE_INJECT */)
                r = add_list(ctx, ptrace_list, ELEMENTSOF(ptrace_list));
        if (r >= 0 && role == 1)
                r = add_list(ctx, (const char *const[]) { "wait4", "waitid" }, 2);
        if (r >= 0)
                r = add_wx_rules(ctx);
        /* Files for reading only: nothing a worker opens is written. (The
         * kernel's own O_TMPFILE bit: glibc's __O_TMPFILE includes
         * O_DIRECTORY, which /proc/PID/task needs.) */
        const scmp_datum_t write_flags = O_ACCMODE | O_CREAT | O_TRUNC | 020000000;
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
                                     SCMP_A2(SCMP_CMP_MASKED_EQ, write_flags, O_RDONLY));
        if (r < 0)
                return r;
        return seccomp_load(ctx);
}

bool sandbox_running_on_valgrind(void) {
#if HAVE_VALGRIND_VALGRIND_H
        if (RUNNING_ON_VALGRIND)
                return true;
#endif
        /* Without the header: valgrind preloads its vgpreload_*.so. */
        const char *p = getenv("LD_PRELOAD");
        return p && strstr(p, "vgpreload");
}

static char *caps_to_string(uint64_t mask) {
        char *s = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&s, &n);
        if (!f)
                return NULL;
        bool first = true;
        for (int c = 0; c < 64; c++) {
                if (!(mask & CAP_BIT(c)))
                        continue;
                char *name = cap_to_name(c);
                fprintf(f, "%s%s", first ? "" : ",", name ? name : "?");
                cap_free(name);
                first = false;
        }
        if (fclose(f) != 0) {
                free(s);
                return NULL;
        }
        return s;
}

int sandbox_apply(const SandboxNeeds *needs) {
        uint64_t keep = sandbox_keep_mask(needs);
        int r;

        /* valgrind cannot follow a seccomp filter, and it asserts when
         * libpsx signals the other threads to run capset() (seen with
         * valgrind 3.19: syswrap-main.c "sci->status.what == SsIdle"). */
        if (sandbox_running_on_valgrind()) {
                log_notice("Sandbox skipped under valgrind, which follows neither a seccomp filter nor "
                           "libpsx's system calls on every thread: keeping every capability.");
                return 0;
        }

        r = sandbox_drop_capabilities(keep);
        if (r < 0)
                return log_error_errno(r, "Failed to drop capabilities: %m");

        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2] = {};
        uint64_t eff = capget(&h, d) >= 0 ? d[0].effective | (uint64_t) d[1].effective << 32 : 0;
        _cleanup_free_ char *kept = caps_to_string(eff);

        const char *fatal_env = getenv("KSMTUNED2_SECCOMP_FATAL");
        bool fatal = fatal_env && parse_boolean(fatal_env) > 0;
        r = sandbox_load_seccomp(needs, fatal);
        if (r < 0)
                return log_error_errno(r, "Failed to load the seccomp filter: %m");
        log_struct(LOG_INFO, LOG_FIELDS(.message_id = KSMTUNED2_MESSAGE_SANDBOX_APPLIED),
                   "Sandbox: kept capabilities %s, dropped all others; seccomp allow-list of %u system calls "
                   "(and some with argument checks) loaded; others fail with EPERM%s.",
                   isempty(kept) ? "(none)" : kept, sandbox_allow_list_size(),
                   fatal ? ", fatal for tests" : " and are logged");
        return 0;
}
