/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "process.h"
#include "root.h"

struct sock_filter;

/* Runs a few system calls inside another, live process with ptrace
 * (x86-64 only): the only way to reach PR_SET_MEMORY_MERGE, which is per mm
 * and settable only by the process itself, on a stock kernel.
 *
 * How, and why it cannot harm the target:
 *  - PTRACE_SEIZE one thread (never PTRACE_O_EXITKILL) and PTRACE_INTERRUPT
 *    it; the stop is inside the kernel's signal path (get_signal), after an
 *    interrupted blocking syscall has set rax to -ERESTART*.
 *  - Save the registers (PTRACE_GETREGS) and, for the fallback frame below,
 *    the xstate (NT_X86_XSTATE) and signal mask.
 *  - Below the red zone of the thread's stack write a complete rt_sigframe
 *    holding the saved state, then point rip at a `syscall; ret` the target
 *    already has (libc, vdso) and rsp at the frame, whose return slot is a
 *    `mov $15,%rax; syscall` (glibc/musl __restore_rt, Go's sigreturn).
 *    Should the tracer die at any moment from here on (the daemon SIGKILLed),
 *    the kernel detaches and the target runs: the syscall, `ret` into the
 *    restorer, rt_sigreturn, and it is back in its own state (with an
 *    interrupted syscall rewound for restart, as CRIU does; a
 *    -ERESTART_RESTARTBLOCK call is re-issued with its original arguments,
 *    i.e. a relative sleep starts again). Its FP/SSE/AVX state comes back
 *    from the xstate image, its signal mask from the frame, and its
 *    sigaltstack is left alone (the frame's ss_flags are invalid on purpose:
 *    rt_sigreturn ignores restore_altstack()'s EINVAL).
 *  - Normally the tracer lives: PTRACE_SYSCALL to the call's entry and exit
 *    stops, read rax, then PTRACE_INTERRUPT + PTRACE_CONT into another stop
 *    inside get_signal, where the saved registers go back *exactly*
 *    (orig_rax included), the stack bytes are put back, and PTRACE_DETACH.
 *    Leaving get_signal the kernel then applies its own restart logic to the
 *    restored registers, so -ERESTARTSYS/-ERESTARTNOINTR/-ERESTARTNOHAND
 *    syscalls restart and -ERESTART_RESTARTBLOCK ones continue through
 *    restart_syscall with their restart_block intact (a nanosleep keeps its
 *    remaining time).
 *  - While the target runs injected code its signal mask blocks everything
 *    (PTRACE_SETSIGMASK), so signals that arrive meanwhile stay pending and
 *    are delivered in its own context once the mask is back (restart path or
 *    the fallback's rt_sigreturn); a thread stopped inside a syscall with a
 *    temporary mask (ppoll, pselect, epoll_pwait, sigsuspend, io_pgetevents,
 *    io_uring_enter with a sigset) is left untouched and another thread
 *    taken, since PTRACE_SETSIGMASK would drop the kernel's note to restore
 *    its own mask after delivering the signal that ended the wait.
 *
 * What the target can notice (kernel behaviour, not ours to change):
 *  - Syscalls the kernel never restarts return EINTR when any ptrace stop
 *    (or SIGSTOP/SIGCONT) interrupts them: epoll_wait, epoll_pwait(2),
 *    semop, sigtimedwait, io_getevents... (signal(7), "Interruption of
 *    system calls ... by stop signals"). Rewinding them instead would
 *    restart their full timeout, which is worse for event loops.
 *  - Only if the injector dies mid-way: a thread that was already inside
 *    restart_syscall (its sleep restarted by an earlier stop) gets EINTR,
 *    since rt_sigreturn resets restart_block.
 *
 * Refused, without touching the target: PID 1 (-EPERM); a process that
 * is no longer what its policy matched, checked once the thread is stopped
 * (-ESTALE: another executable, credentials or memory layout than
 * InjectOptions.expect, i.e. an exec since the verdict); one not dumpable or
 * running with more than its owner's credentials (setuid, setgid, file
 * capabilities: -EPERM) unless allow_privileged; a thread already traced (-EBUSY),
 * a process stopped by job control, or whose threads all wait with a
 * temporary signal mask (-EAGAIN), a zombie or exiting process
 * (-ESRCH), a seccomp filter that would not let every injected call (and
 * the fallback's rt_sigreturn) through, or that cannot be read (-EACCES;
 * the filters are read with PTRACE_SECCOMP_GET_FILTER, which needs
 * CAP_SYS_ADMIN, and run on the exact calls; allow_seccomp skips that), a
 * 32-bit or shadow-stack task or a non-x86-64 build
 * (-EOPNOTSUPP), no usable gadgets in its executable mappings (-ENOEXEC),
 * no writable room below its stack pointer (-EFAULT), a thread that does not
 * stop in time (-ETIMEDOUT, given up on untouched).
 *
 * Not refused but given up on: calls that do not return in time (-ETIMEDOUT;
 * their ->ret is -ETIMEDOUT too, since not known). */

typedef struct InjectSyscall {
        long nr;
        uint64_t args[6];
        long ret;               /* filled in: the raw return value, -errno on failure */
} InjectSyscall;

/* Points where a test can park the injector to kill it there. */
typedef enum InjectPhase {
        INJECT_PHASE_SEIZED,            /* attached, target still running */
        INJECT_PHASE_STOPPED,           /* in the interrupt stop, nothing changed */
        INJECT_PHASE_CHECKED,           /* every check passed, the bytes under the frame read; nothing
                                         * written yet: the last moment before the first write */
        INJECT_PHASE_FRAME_WRITTEN,     /* fallback frame below the red zone, registers untouched */
        INJECT_PHASE_REGS_SET,          /* injected registers in place, target not resumed */
        INJECT_PHASE_SYSCALL_ENTRY,     /* at an injected call's entry stop */
        INJECT_PHASE_SYSCALL_EXIT,      /* at its exit stop */
        INJECT_PHASE_FINAL_STOP,        /* back in get_signal, injected registers still in place */
        INJECT_PHASE_RESTORED,          /* original registers back, not yet detached */
        _INJECT_PHASE_MAX,
} InjectPhase;

const char *inject_phase_to_string(InjectPhase p);

typedef struct InjectOptions {
        uint64_t stop_timeout_usec;     /* 0: 2 s. A thread that does not stop within this (one in
                                         * uninterruptible sleep) is given up on, untouched, with
                                         * -ETIMEDOUT: see inject_poll_abandoned(). */
        uint64_t call_timeout_usec;     /* 0: 5 s. Each injected call and the stop after the last
                                         * one; past it -ETIMEDOUT, and the thread finishes the call
                                         * and returns through the signal frame on its own. */
        const _Atomic uint64_t *give_up_usec; /* NULL, or CLOCK_MONOTONIC past which no wait goes on
                                         * (0: none yet): a stopping daemon's deadline; -ECANCELED
                                         * then, given up on as for -ETIMEDOUT */
        bool allow_seccomp;             /* inject into Seccomp: 2 processes without running their filters */
        ProcessIdentity expect;         /* what the policy matched (process.h), .valid false: nothing; once
                                         * the thread is stopped and before anything is written, the process
                                         * must still be it (-ESTALE) */
        bool allow_privileged;          /* InjectPrivileged=yes: also a process that is not dumpable or runs
                                         * with more than its owner's credentials (else -EPERM) */
        /* Where a thread's filters come from when this process cannot read
         * them itself (PTRACE_SECCOMP_GET_FILTER needs CAP_SYS_ADMIN and a
         * caller without a filter of its own; the injector process has
         * neither, injector.h): returns the number of instructions of
         * filter idx of thread tid (the thread is stopped when asked) and
         * points *ret_prog at them, -ENOENT past its last filter, another
         * -errno when unknown (refused as a filter that cannot be read).
         * NULL: read with ptrace. */
        long (*get_filter)(int tid, unsigned long idx, const struct sock_filter **ret_prog, void *userdata);
        void *filter_userdata;
        void (*phase_hook)(InjectPhase phase, void *userdata);
        void *userdata;
} InjectOptions;

typedef struct InjectStats {
        int tid;                        /* the thread that ran the calls */
        uint64_t total_usec;            /* from the checks to detach */
        uint64_t pause_usec;            /* the thread was stopped or running injected code */
        unsigned signals_suppressed;    /* synchronous signals our own calls raised, not delivered */
        char reason[128];               /* why it was refused, when it was */
} InjectStats;

/* Every wait on the target is bounded (InjectOptions). A thread given up on
 * is still seized by the calling thread but not stopped, and a tracee can
 * only be detached from a stop, so it stays on a list of the calling
 * thread's (ptrace is per tracer thread): call this every few milliseconds
 * from that thread while it returns non-zero. It never blocks; it detaches
 * each thread that has stopped since (passing on a signal it stopped for),
 * forgets those that exited, and returns how many are left. At most 64 are
 * kept; beyond, inject_syscalls() refuses with -EAGAIN. Should the calling
 * thread end first, the kernel detaches them, which is as safe (inject.c,
 * before inject_poll_abandoned()). */
size_t inject_poll_abandoned(void);

/* Whether this build can inject at all. */
bool inject_supported(void);

/* Runs calls[0..n) in one thread of process pid, in order. pidfd is that
 * process's pidfd (the caller checked its start time): a pid reused after
 * pidfd_open is noticed and the stranger left alone (-ESRCH). Returns 0 when
 * every call ran (each call's own result in ->ret; a failing call does not
 * stop the rest), or -errno as listed above. ret_stats may be NULL; its
 * reason is set on refusals. */
int inject_syscalls(const Root *root, int pidfd, int pid, InjectSyscall *calls, size_t n,
                    const InjectOptions *o, InjectStats *ret_stats);
