/* SPDX-License-Identifier: GPL-2.0-or-later */
/* System calls run inside another process with ptrace; see inject.h for the
 * method and why it cannot leave the target stopped or broken. */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <elf.h>
#include <stddef.h>
#include <sys/user.h>
#endif

#include "inject.h"
#include "proc-maps.h"
#include "process-read.h"
#include "procfs.h"
#include "seccomp-eval.h"
#include "string-table.h"
#include "syscalls.h"
#include "util.h"

static const char *const inject_phase_table[_INJECT_PHASE_MAX] = {
        [INJECT_PHASE_SEIZED] = "seized",
        [INJECT_PHASE_STOPPED] = "stopped",
        [INJECT_PHASE_CHECKED] = "checked",
        [INJECT_PHASE_FRAME_WRITTEN] = "frame-written",
        [INJECT_PHASE_REGS_SET] = "regs-set",
        [INJECT_PHASE_SYSCALL_ENTRY] = "syscall-entry",
        [INJECT_PHASE_SYSCALL_EXIT] = "syscall-exit",
        [INJECT_PHASE_FINAL_STOP] = "final-stop",
        [INJECT_PHASE_RESTORED] = "restored",
};

DEFINE_STRING_TABLE_TO_STRING(inject_phase, InjectPhase);

#if !defined(__x86_64__)

bool inject_supported(void) {
        return false;
}

size_t inject_poll_abandoned(void) {
        return 0;
}

int inject_syscalls(const Root *root, int pidfd, int pid, InjectSyscall *calls, size_t n,
                    const InjectOptions *o, InjectStats *ret_stats) {
        if (ret_stats) {
                *ret_stats = (InjectStats) {};
                strscpy(ret_stats->reason, sizeof ret_stats->reason, "injection is implemented for x86-64 only");
        }
        return -EOPNOTSUPP;
}

#else

bool inject_supported(void) {
        return true;
}

/* The kernel's restart codes (include/linux/errno.h, not exported). */
#define K_ERESTARTSYS 512
#define K_ERESTARTNOINTR 513
#define K_ERESTARTNOHAND 514
#define K_ERESTART_RESTARTBLOCK 516

#define USER_CS_64 0x33 /* __USER_CS: a 64-bit task; 0x23 is ia32 */

/* struct rt_sigframe of arch/x86/include/asm/sigframe.h for 64-bit tasks,
 * with the uapi sigcontext and ucontext spelled out. */
struct k_sigcontext64 {
        uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
        uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
        uint16_t cs, gs, fs, ss;
        uint64_t err, trapno, oldmask, cr2;
        uint64_t fpstate;
        uint64_t reserved1[8];
};

struct k_stack {
        uint64_t ss_sp;
        int32_t ss_flags;
        int32_t pad;
        uint64_t ss_size;
};

struct k_ucontext {
        uint64_t uc_flags;
        uint64_t uc_link;
        struct k_stack uc_stack;
        struct k_sigcontext64 uc_mcontext;
        uint64_t uc_sigmask;
};

struct k_rt_sigframe {
        uint64_t pretcode;
        struct k_ucontext uc;
        uint8_t info[128];
};

_Static_assert(offsetof(struct k_rt_sigframe, uc.uc_mcontext) == 48, "sigcontext offset");
_Static_assert(offsetof(struct k_rt_sigframe, uc.uc_sigmask) == 304, "sigmask offset");
_Static_assert(sizeof(struct k_rt_sigframe) == 440, "rt_sigframe size");

#define UC_FP_XSTATE 0x1
#define UC_SIGCONTEXT_SS 0x2
#define UC_STRICT_RESTORE_SS 0x4
#define FP_XSTATE_MAGIC1 0x46505853U
#define FP_XSTATE_MAGIC2 0x46505845U
#define FXSAVE_SIZE 512
#define XSTATE_BUF_MAX (64 * 1024)
/* Invalid ss_flags: do_sigaltstack() answers EINVAL, which rt_sigreturn's
 * restore_altstack() ignores, so the target's sigaltstack stays as it is
 * (we cannot read it from outside). */
#define SS_FLAGS_LEAVE_ALONE 4

#define XFEATURE_MASK_XTILE (UINT64_C(3) << 17)

static uint64_t xgetbv0(void) {
        uint32_t lo, hi;
        asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        return ((uint64_t) hi << 32) | lo;
}

static const uint8_t gadget_syscall_ret[] = { 0x0f, 0x05, 0xc3 };
static const uint8_t gadget_restorer[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };

/* The most of the target's text read looking for the gadgets. */
#define GADGET_SCAN_MAX (64U * 1024 * 1024)
#define GADGET_CHUNK (256U * 1024)

typedef struct Injector {
        int pid, tid;
        int pid_dirfd;
        int mem_fd;
        uint64_t g_syscall, g_restorer;
        struct user_regs_struct saved;
        uint64_t scratch_lo, scratch_hi;
        uint8_t *scratch_orig;
        bool scratch_written;
        uint64_t sigmask;       /* the thread's blocked set at the stop */
        unsigned suppressed;    /* synchronous signals our own calls raised */
        const InjectOptions *o;
        int seccomp;            /* Seccomp: of the chosen thread's status (-1: no such line, no CONFIG_SECCOMP) */
        uint64_t stop_timeout_usec, call_timeout_usec;
        bool abandoned;         /* given up on, still seized: see inject_poll_abandoned() */
        MapList maps;           /* read before the stop; the stack check uses it */
} Injector;

static void hook(const Injector *j, InjectPhase p) {
        if (j->o && j->o->phase_hook)
                j->o->phase_hook(p, j->o->userdata);
}

static int xptrace(int req, pid_t tid, void *addr, void *data) {
        if (ptrace((enum __ptrace_request) req, tid, addr, data) < 0)
                return negative_errno();
        return 0;
}

static int pidfd_alive(int pidfd) {
        return pidfd_is_alive(pidfd) == 1 ? 0 : -ESRCH;
}

typedef enum StopKind {
        STOP_EXITED,
        STOP_EVENT,             /* PTRACE_EVENT_STOP: our interrupt or a group stop, inside get_signal */
        STOP_SYSCALL,           /* syscall entry or exit (PTRACE_O_TRACESYSGOOD) */
        STOP_SIGNAL,            /* signal-delivery stop */
        STOP_OTHER,
} StopKind;

static StopKind classify_status(int st, int *ret_sig) {
        *ret_sig = 0;
        if (WIFEXITED(st) || WIFSIGNALED(st))
                return STOP_EXITED;
        if (!WIFSTOPPED(st))
                return STOP_OTHER;
        int sig = WSTOPSIG(st);
        if ((st >> 16) == PTRACE_EVENT_STOP) {
                *ret_sig = sig;
                return STOP_EVENT;
        }
        if ((st >> 16) != 0)
                return STOP_OTHER;
        if (sig == (SIGTRAP | 0x80))
                return STOP_SYSCALL;
        *ret_sig = sig;
        return STOP_SIGNAL;
}

/* Threads this thread gave up waiting for (-ETIMEDOUT): seized and not
 * stopped yet, so PTRACE_DETACH cannot release them (ESRCH: it needs a
 * stopped tracee). A tracer is a thread, not a process, hence one list per
 * thread; inject_poll_abandoned() detaches each as soon as it stops. */
typedef struct Abandoned {
        int tid;
        bool regs_ours;         /* our registers are in place: the frame brings it home */
} Abandoned;

#define ABANDONED_MAX 64
static _Thread_local Abandoned abandoned[ABANDONED_MAX];
static _Thread_local size_t n_abandoned;

static void abandon(Injector *j, bool regs_ours) {
        /* inject_run() refuses to seize while the list is full. */
        assert(n_abandoned < ABANDONED_MAX);
        abandoned[n_abandoned++] = (Abandoned) { .tid = j->tid, .regs_ours = regs_ours };
        j->abandoned = true;
}

/* Why a detach at whatever stop an abandoned thread reports is safe:
 *  - Before our registers (regs_ours false): nothing of it was changed but
 *    perhaps the bytes below its red zone, which the ABI leaves to signal
 *    frames. It stops in get_signal for our PTRACE_INTERRUPT (or for a
 *    signal on its way, or a group stop) and the detach lets it go on as if
 *    a signal had been handled; a signal-delivery stop passes its signal on.
 *  - At or after the injected registers (regs_ours true): the complete
 *    rt_sigframe is on its stack and rsp points at it. Wherever it stops --
 *    the entry or exit stop of one of our calls (PTRACE_SYSCALL is still in
 *    effect), or the final interrupt stop in get_signal -- it is about to
 *    run (or has run) `syscall` of the gadget; detached, it runs the call to
 *    its end, `ret`s into the restorer and rt_sigreturn puts back its own
 *    registers (rewound for a restart), signal mask and FP state. Its mask
 *    blocks everything meanwhile, so a signal-delivery stop can only be a
 *    SIGSTOP (passed on: a job-control stop, not ours to drop) or a
 *    synchronous signal our own call raised, which is not its to see.
 *  - A group stop (PTRACE_EVENT_STOP with a stop signal) is reinstated by the
 *    kernel at detach. */
size_t inject_poll_abandoned(void) {
        for (size_t i = 0; i < n_abandoned;) {
                Abandoned *a = &abandoned[i];
                bool released = false;
                int st;
                pid_t k = waitpid(a->tid, &st, __WALL | WNOHANG);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        released = true; /* ECHILD: exited and collected, nothing of ours left */
                else if (k == a->tid) {
                        int sig;
                        StopKind kind = classify_status(st, &sig);
                        if (kind == STOP_EXITED)
                                released = true;
                        else {
                                int pass = kind == STOP_SIGNAL && (!a->regs_ours || sig == SIGSTOP) ? sig : 0;
                                /* ESRCH: killed since it stopped; its exit report comes next. */
                                released = xptrace(PTRACE_DETACH, a->tid, NULL, (void *) (uintptr_t) pass) >= 0;
                        }
                }
                if (released)
                        abandoned[i] = abandoned[--n_abandoned];
                else
                        i++;
        }
        return n_abandoned;
}

/* Waits for the next ptrace stop of tid until deadline_usec
 * (CLOCK_MONOTONIC), or the caller's give-up time if that comes first.
 * It only polls: a thread in uninterruptible sleep (a vfork() parent, an
 * unanswered FUSE or NFS request) or inside a long injected call does not
 * stop, and nothing may hold this thread (and every action queued behind
 * it) for that long. -ETIMEDOUT then (-ECANCELED at the give-up time), with
 * the thread still seized and running: the caller abandons it. */
static int wait_stop(Injector *j, uint64_t deadline_usec, StopKind *ret_kind, int *ret_sig) {
        unsigned spins = 0;
        for (;;) {
                int st;
                pid_t k = waitpid(j->tid, &st, __WALL | WNOHANG);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == j->tid) {
                        *ret_kind = classify_status(st, ret_sig);
                        return 0;
                }
                uint64_t give_up = j->o->give_up_usec ? atomic_load(j->o->give_up_usec) : 0;
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                if (give_up && now >= give_up)
                        return -ECANCELED;
                if (now >= deadline_usec)
                        return -ETIMEDOUT;
                /* Stops come within microseconds; yield first, then back off
                 * (at most 1 ms), serving threads abandoned earlier. */
                if (spins++ < 50)
                        sched_yield();
                else {
                        if (n_abandoned > 0)
                                (void) inject_poll_abandoned();
                        struct timespec ts = { 0, (long) MIN(1000000U, 1000U << MIN(spins - 50, 10U)) };
                        nanosleep(&ts, NULL);
                }
        }
}

static int detach(Injector *j) {
        return xptrace(PTRACE_DETACH, j->tid, NULL, NULL);
}

/* Writes into the stopped tracee with PTRACE_POKEDATA, a word at a time.
 * It is bound to the task we seized: should the process exec meanwhile,
 * the task under that tid is no tracee of ours and the write fails (ESRCH)
 * instead of landing in the new image, as process_vm_writev() by tid
 * number would. What 6.18 does when a sibling of our stopped tracee execs
 * (tests/kernel/test-inject-trust, test_sibling_exec*):
 *  - de_thread() SIGKILLs every other thread; a fatal signal wakes a
 *    tracee from its ptrace stop (unless a ptrace request of ours is under
 *    way at that instant: the kernel kills it as the request ends).
 *  - Our tracee is the leader: the exec'ing thread waits only for it to be
 *    a zombie, then takes over its pid (exchange_tids) and releases it
 *    silently (EXIT_DEAD, release_task: no exit report, waitpid() on that
 *    pid is ECHILD). The new image runs under the very pid we were
 *    writing by, untraced (TracerPid 0), and no PTRACE_EVENT_EXEC comes to
 *    us (it goes to the exec'ing thread's tracer, and that is not us).
 *    Every ptrace request on the pid is ESRCH from then on; a write by
 *    pid number (process_vm_writev) would land in the new image.
 *  - Our tracee is another thread: it stays a zombie that only we can
 *    reap, and the exec waits in de_thread() until we do (until then
 *    pid's status shows the old image, State Z). ptrace requests are
 *    ESRCH; reap_exited() collects it, which lets the exec finish.
 * It needs only the ptrace attach
 * right (CAP_SYS_PTRACE); opening /proc/PID/mem for writing would also
 * need CAP_DAC_OVERRIDE for another user's process. Like mem, it writes
 * with FOLL_FORCE, through page protections: scratch_fits() is what keeps
 * it on the thread's writable stack. A last partial word keeps the bytes
 * that follow (PEEKDATA). Reads go through mem opened read-only
 * (CAP_DAC_READ_SEARCH), which also reads execute-only text. */
static bool write_target(const Injector *j, uint64_t addr, const void *buf, size_t len) {
        const uint8_t *p = buf;
        for (size_t off = 0; off < len; off += sizeof(long)) {
                size_t k = MIN(sizeof(long), len - off);
                long word = 0;
                if (k < sizeof word) {
                        errno = 0;
                        word = ptrace(PTRACE_PEEKDATA, j->tid, (void *) (uintptr_t) (addr + off), NULL);
                        if (word == -1 && errno != 0)
                                return false;
                }
                memcpy(&word, p + off, k);
                if (ptrace(PTRACE_POKEDATA, j->tid, (void *) (uintptr_t) (addr + off), (void *) word) < 0)
                        return false;
        }
        return true;
}

/* Opens mem again once the thread is stopped and its identity checked:
 * a mem file reads the mm it was opened on, and the one opened before the
 * seize (for the gadget scan) could still name an mm from before an exec
 * that another process shares. What decides what is written -- the
 * gadgets checked again, the bytes saved under the frame -- is read from
 * the mm current at the stop; dup3() keeps the descriptor number. */
static int reopen_mem(Injector *j) {
        _cleanup_close_ int fd = openat(j->pid_dirfd, "mem", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : negative_errno();
        if (dup3(fd, j->mem_fd, O_CLOEXEC) < 0)
                return negative_errno();
        return 0;
}

static void restore_scratch(Injector *j) {
        if (!j->scratch_written)
                return;
        size_t len = (size_t) (j->scratch_hi - j->scratch_lo);
        if (write_target(j, j->scratch_lo, j->scratch_orig, len))
                j->scratch_written = false;
}

static const uint8_t *memmem_u8(const uint8_t *h, size_t hn, const uint8_t *n, size_t nn) {
        return memmem(h, hn, n, nn);
}

static int scan_mapping(Injector *j, const MapRange *m, uint8_t *buf, uint64_t *budget) {
        const size_t overlap = sizeof gadget_restorer;
        for (uint64_t a = m->start; a < m->end && *budget > 0;) {
                size_t want = (size_t) MIN((uint64_t) GADGET_CHUNK, m->end - a);
                ssize_t k = pread(j->mem_fd, buf, want, (off_t) a);
                if (k <= 0)
                        return 0; /* unreadable (e.g. execute-only): try the next mapping */
                if (!j->g_syscall) {
                        const uint8_t *p = memmem_u8(buf, (size_t) k, gadget_syscall_ret, sizeof gadget_syscall_ret);
                        if (p)
                                j->g_syscall = a + (uint64_t) (p - buf);
                }
                if (!j->g_restorer) {
                        const uint8_t *p = memmem_u8(buf, (size_t) k, gadget_restorer, sizeof gadget_restorer);
                        if (p)
                                j->g_restorer = a + (uint64_t) (p - buf);
                }
                if (j->g_syscall && j->g_restorer)
                        return 1;
                *budget -= MIN(*budget, (uint64_t) k);
                if ((size_t) k < want || a + (uint64_t) k >= m->end)
                        break;
                a += (uint64_t) k - overlap;
        }
        return 0;
}

/* Finds `syscall; ret` and a rt_sigreturn restorer in the target's
 * executable mappings: the vdso first (small), then libc, then the rest. */
static int find_gadgets(Injector *j) {
        _cleanup_free_ uint8_t *buf = NULL;
        uint64_t budget = GADGET_SCAN_MAX;
        int r;

        map_list_done(&j->maps);
        r = proc_maps_read(j->pid_dirfd, &j->maps);
        if (r < 0)
                return r;
        buf = malloc(GADGET_CHUNK);
        if (!buf)
                return -ENOMEM;
        for (int pass = 0; pass < 3 && !(j->g_syscall && j->g_restorer); pass++)
                for (size_t i = 0; i < j->maps.n && budget > 0; i++) {
                        const MapRange *m = &j->maps.ranges[i];
                        bool libc = strstr(m->path, "/libc.so") || strstr(m->path, "/libc-") ||
                                    strstr(m->path, "ld-musl");
                        if (!m->exec || (pass == 0 && !m->vdso) || (pass == 1 && (m->vdso || !libc)) ||
                            (pass == 2 && (m->vdso || libc)))
                                continue;
                        if (scan_mapping(j, m, buf, &budget) > 0)
                                break;
                }
        return j->g_syscall && j->g_restorer ? 0 : -ENOEXEC;
}

/* Whether [lo, rsp) may be written: memory below a thread's stack pointer is
 * its own only on a real thread stack -- the main [stack], or an anonymous
 * mapping with a guard page right below it (pthread stacks of glibc and
 * musl). A sigaltstack in the heap, a coroutine or goroutine stack inside a
 * bigger allocation may have live neighbours that other threads touch (and
 * Go's goroutine stacks are small; it takes signals on sigaltstacks), so
 * those are refused. Note that /proc/PID/mem with FOLL_FORCE would even
 * write into a PROT_NONE guard page: the bounds must be checked here. */
static bool scratch_fits(const MapList *maps, uint64_t lo, uint64_t rsp) {
        for (size_t i = 0; i < maps->n; i++) {
                const MapRange *m = &maps->ranges[i];
                if (rsp <= m->start || rsp > m->end)
                        continue;
                if (!m->write || !m->read || !m->private_ || m->kind != MAP_KIND_ANON || lo < m->start)
                        return false;
                if (startswith(m->path, "[stack"))
                        return true;
                if (i == 0)
                        return false;
                const MapRange *below = &maps->ranges[i - 1];
                return below->end == m->start && !below->read && !below->write && !below->exec;
        }
        return false;
}

static bool gadget_intact(const Injector *j, uint64_t addr, const uint8_t *want, size_t n) {
        uint8_t b[16];
        return pread(j->mem_fd, b, n, (off_t) addr) == (ssize_t) n && memcmp(b, want, n) == 0;
}

/* The registers rt_sigreturn should land on if the tracer dies: the saved
 * ones with an interrupted syscall rewound for restart, as the kernel would
 * have done leaving the stop (it cannot do it after rt_sigreturn, which sets
 * orig_rax = -1 and resets restart_block). */
static void fallback_regs(const struct user_regs_struct *s, struct user_regs_struct *ret) {
        *ret = *s;
        if ((int64_t) s->orig_rax < 0)
                return;
        switch ((int64_t) s->rax) {
        case -K_ERESTARTSYS:
        case -K_ERESTARTNOINTR:
        case -K_ERESTARTNOHAND:
        case -K_ERESTART_RESTARTBLOCK:
                ret->rax = s->orig_rax;
                ret->rip -= 2;
                break;
        default:
                break;
        }
}

static int write_frame(Injector *j) {
        _cleanup_free_ uint8_t *xbuf = NULL, *blob = NULL;
        struct iovec iov;
        size_t fp_size;
        uint64_t sigmask = 0;
        bool xsave = false;
        int r;

        xbuf = calloc(1, XSTATE_BUF_MAX);
        if (!xbuf)
                return -ENOMEM;
        iov = (struct iovec) { .iov_base = xbuf, .iov_len = XSTATE_BUF_MAX };
        if (xptrace(PTRACE_GETREGSET, j->tid, (void *) (uintptr_t) NT_X86_XSTATE, &iov) >= 0 &&
            iov.iov_len >= FXSAVE_SIZE + 64 && iov.iov_len <= XSTATE_BUF_MAX - 4) {
                /* The regset is the task's standard-format XSAVE image, but
                 * 6.18 leaves its sw_reserved bytes (where a signal frame
                 * says "extended state follows") unset: without them
                 * rt_sigreturn restores only the legacy FP/SSE part and zeroes
                 * the upper halves of ymm/zmm. Fill them in as the kernel's
                 * save_sw_bytes() does: the features to restore are every
                 * user feature XCR0 enables, less AMX tile data, whose
                 * permission is per process (XFD). */
                struct {
                        uint32_t magic1, extended_size;
                        uint64_t xfeatures;
                        uint32_t xstate_size, padding[7];
                } sw = {
                        .magic1 = FP_XSTATE_MAGIC1,
                        .extended_size = (uint32_t) iov.iov_len + 4,
                        .xfeatures = xgetbv0() & ~XFEATURE_MASK_XTILE,
                        .xstate_size = (uint32_t) iov.iov_len,
                };
                _Static_assert(sizeof sw == 48, "fx_sw_bytes");
                memcpy(xbuf + 464, &sw, sizeof sw);
                xsave = true;
                fp_size = iov.iov_len + 4;
        }
        if (!xsave) {
                iov = (struct iovec) { .iov_base = xbuf, .iov_len = FXSAVE_SIZE };
                r = xptrace(PTRACE_GETREGSET, j->tid, (void *) (uintptr_t) NT_PRFPREG, &iov);
                if (r < 0)
                        return r;
                memset(xbuf + 464, 0, 48); /* no extended state: sigreturn does fxrstor */
                fp_size = FXSAVE_SIZE;
        }
        sigmask = j->sigmask;

        /* Layout below the 128-byte red zone: [frame][pad][fpstate, 64-aligned],
         * where a signal frame would go: the same size as the one the kernel
         * writes there for any signal delivered without a sigaltstack. */
        uint64_t top = (j->saved.rsp - 128 - 64) & ~UINT64_C(15);
        uint64_t fp_addr = (top - fp_size) & ~UINT64_C(63);
        uint64_t frame_addr = (fp_addr - sizeof(struct k_rt_sigframe)) & ~UINT64_C(15);
        size_t len = (size_t) (top - frame_addr);

        if (!scratch_fits(&j->maps, frame_addr, j->saved.rsp)) {
                /* The main stack may have grown since maps was read. */
                map_list_done(&j->maps);
                int k = proc_maps_read(j->pid_dirfd, &j->maps);
                if (k < 0)
                        return k;
                if (!scratch_fits(&j->maps, frame_addr, j->saved.rsp))
                        return -EFAULT;
        }

        j->scratch_lo = frame_addr;
        j->scratch_hi = top;
        j->scratch_orig = malloc(len);
        blob = calloc(1, len);
        if (!j->scratch_orig || !blob)
                return -ENOMEM;
        if (pread(j->mem_fd, j->scratch_orig, len, (off_t) frame_addr) != (ssize_t) len)
                return -EFAULT;

        struct user_regs_struct f;
        fallback_regs(&j->saved, &f);
        struct k_rt_sigframe fr = {
                .pretcode = j->g_restorer,
                .uc = {
                        .uc_flags = (xsave ? UC_FP_XSTATE : 0) | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS,
                        .uc_stack = { .ss_flags = SS_FLAGS_LEAVE_ALONE },
                        .uc_mcontext = {
                                .r8 = f.r8, .r9 = f.r9, .r10 = f.r10, .r11 = f.r11,
                                .r12 = f.r12, .r13 = f.r13, .r14 = f.r14, .r15 = f.r15,
                                .rdi = f.rdi, .rsi = f.rsi, .rbp = f.rbp, .rbx = f.rbx,
                                .rdx = f.rdx, .rax = f.rax, .rcx = f.rcx, .rsp = f.rsp,
                                .rip = f.rip, .eflags = f.eflags,
                                .cs = (uint16_t) f.cs, .ss = (uint16_t) f.ss,
                                .fpstate = fp_addr,
                        },
                        .uc_sigmask = sigmask,
                },
        };
        memcpy(blob, &fr, sizeof fr);
        memcpy(blob + (fp_addr - frame_addr), xbuf, fp_size);
        if (xsave) {
                uint32_t magic2 = FP_XSTATE_MAGIC2;
                memcpy(blob + (fp_addr - frame_addr) + fp_size - 4, &magic2, 4);
        }
        hook(j, INJECT_PHASE_CHECKED);
        j->scratch_written = true;
        if (!write_target(j, frame_addr, blob, len)) {
                /* ESRCH: no tracee of ours under that tid any more (an exec
                 * killed it): nothing was written into whatever is there now. */
                int e = errno;
                restore_scratch(j);
                return e == ESRCH ? -ESRCH : -EFAULT;
        }
        return 0;
}

static bool skipped(const int *skip, size_t n_skip, int tid) {
        for (size_t i = 0; i < n_skip; i++)
                if (skip[i] == tid)
                        return true;
        return false;
}

#define IORING_ENTER_GETEVENTS_FLAG 0x1U

/* Syscalls that run with a temporary signal mask and put the thread's own
 * back on the way out (TIF_RESTORE_SIGMASK, saved_sigmask: set_user_sigmask()
 * and its callers). PTRACE_GETSIGMASK does show the saved mask there, but
 * PTRACE_SETSIGMASK clears the flag: the signal that ended the wait would
 * then no longer be delivered under the temporary mask and stay pending
 * under the thread's own (tests/kernel/test-inject-trust, io_uring_enter
 * on 6.18). So a thread stopped in one is left alone and another taken. */
static bool in_temporary_mask_syscall(const struct user_regs_struct *r) {
        switch ((int64_t) r->orig_rax) {
        case SYS_rt_sigsuspend:
        case SYS_pselect6:
        case SYS_ppoll:
        case SYS_epoll_pwait:
        case 441: /* epoll_pwait2 */
        case SYS_io_pgetevents:
                return true;
        case SYS_io_uring_enter:
                /* io_uring_enter(fd, to_submit, min_complete, flags, argp,
                 * argsz) waits with argp's sigset (or, with
                 * IORING_ENTER_EXT_ARG, the one its struct names) like
                 * ppoll, when IORING_ENTER_GETEVENTS. What argp holds is not
                 * read: any argument counts. */
                return (r->r10 & IORING_ENTER_GETEVENTS_FLAG) && r->r8 != 0;
        default:
                return false;
        }
}

static int choose_thread(Injector *j, const int *skip, size_t n_skip, int *ret_tid) {
        ProcStat st;
        _cleanup_close_ int task_fd = -EBADF;
        int r;

        /* The leader is a zombie when main() called pthread_exit(): it can
         * never stop, so take a live thread; and one in uninterruptible
         * sleep (D) would not stop until it wakes, so prefer another. */
        r = procfs_read_stat(j->pid_dirfd, &st);
        if (r < 0)
                return r;
        bool leader_ok = !skipped(skip, n_skip, j->pid);
        if (leader_ok && st.state != 'Z' && st.state != 'X' && st.state != 'D') {
                *ret_tid = j->pid;
                return 0;
        }
        int fallback = leader_ok && st.state == 'D' ? j->pid : -ESRCH;
        task_fd = openat(j->pid_dirfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (task_fd < 0)
                return -ESRCH;
        DIR *d = fdopendir(task_fd);
        if (!d)
                return -ESRCH;
        task_fd = -EBADF;
        int found = -ESRCH;
        for (struct dirent *de; (de = readdir(d));) {
                int tid;
                if (safe_atoi(de->d_name, &tid) < 0 || skipped(skip, n_skip, tid))
                        continue;
                _cleanup_close_ int tfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (tfd < 0 || procfs_read_stat(tfd, &st) < 0 || st.state == 'Z' || st.state == 'X')
                        continue;
                if (st.state != 'D') {
                        found = tid;
                        break;
                }
                if (fallback < 0)
                        fallback = tid;
        }
        closedir(d);
        if (found < 0)
                found = fallback;
        if (found < 0)
                return found;
        *ret_tid = found;
        return 0;
}

static int refuse(InjectStats *s, int r, const char *fmt, ...) _printf_(3, 4);
static int refuse(InjectStats *s, int r, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->reason, sizeof s->reason, fmt, ap);
        va_end(ap);
        return r;
}

/* The process behind pid now: still what its policy matched (expect),
 * and not running with more than its owner's credentials unless its policy
 * allows it. Checked before seizing, so that such a process is not even
 * stopped, and again with the thread stopped, which is the check that
 * counts: from then on an exec in the process (de_thread) ends our tracee,
 * and every later ptrace call on that tid fails. */
static int check_identity(Injector *j, InjectStats *s) {
        ProcessIdentity now;
        char why[96];
        int r = process_read_identity(j->pid_dirfd, true, &now);
        if (r < 0)
                return r;
        if (j->o->expect.valid && process_identity_changed(&j->o->expect, &now, why, sizeof why))
                return refuse(s, -ESTALE, "pid %d is not what its policy matched: %s", j->pid, why);
        if (!j->o->allow_privileged && process_identity_privileged(&now, why, sizeof why))
                return refuse(s, -EPERM, "pid %d is %s; InjectPrivileged=no", j->pid, why);
        return 0;
}

static int check_target(Injector *j, const InjectOptions *o, InjectStats *s) {
        ProcStatus ps;
        ProcStat st;
        int r;

        r = procfs_read_status(j->pid_dirfd, &ps);
        if (r < 0)
                return r;
        if (!ps.has_mm)
                return refuse(s, -EINVAL, "no user memory (kernel thread or exiting)");
        if (ps.tracer_pid != 0)
                return refuse(s, -EBUSY, "already traced by pid %d", ps.tracer_pid);
        /* Seccomp and the shadow stack are the thread's own: check_thread(). */
        r = procfs_read_stat(j->pid_dirfd, &st);
        if (r < 0)
                return r;
        if (st.state == 'Z' || st.state == 'X')
                return refuse(s, -ESRCH, "exiting");
        if (st.state == 'T' || st.state == 't')
                return refuse(s, -EAGAIN, "stopped (job control or another debugger)");
        return check_identity(j, s);
}

/* Seccomp mode, filters and the shadow stack belong to each thread: one
 * may install a filter without SECCOMP_FILTER_FLAG_TSYNC, or enable a
 * shadow stack, that the leader's status does not show. Read from the
 * stopped thread's own status. */
static int check_thread(Injector *j, InjectStats *s) {
        _cleanup_close_ int tfd = -EBADF;
        char task[32];
        ProcStatus ps;
        int r;

        snprintf(task, sizeof task, "task/%d", j->tid);
        tfd = openat(j->pid_dirfd, task, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (tfd < 0)
                return -ESRCH;
        r = procfs_read_status(tfd, &ps);
        if (r < 0)
                return r;
        if (ps.seccomp == 1)
                return refuse(s, -EACCES, "thread %d is in seccomp strict mode (any other syscall kills it)", j->tid);
        /* A filter is read and run further on (check_filters). */
        j->seccomp = ps.seccomp;
        /* A user shadow stack would make the fallback's `ret` and
         * rt_sigreturn fault: no crash-safe injection. */
        if (ps.shadow_stack)
                return refuse(s, -EOPNOTSUPP, "thread %d has a user shadow stack enabled", j->tid);
        return 0;
}

#ifndef AUDIT_ARCH_X86_64
#define AUDIT_ARCH_X86_64 0xc000003eU
#endif
#define K_PTRACE_SECCOMP_GET_FILTER 0x420c

static const char *seccomp_action_name(uint32_t ret) {
        switch (ret & SECCOMP_RET_ACTION_FULL) {
        case SECCOMP_RET_KILL_PROCESS: return "kill the process on";
        case SECCOMP_RET_KILL_THREAD: return "kill the thread on";
        case SECCOMP_RET_TRAP: return "send SIGSYS for";
        case SECCOMP_RET_ERRNO: return "fail";
        case SECCOMP_RET_USER_NOTIF: return "hand to a supervisor";
        case SECCOMP_RET_TRACE: return "hand to a tracer";
        default: return "not allow";
        }
}

static bool check_one(const struct sock_filter *prog, size_t len, long nr, const uint64_t args[6], uint64_t ip,
                      uint32_t *ret_action) {
        struct seccomp_data d = { .nr = (int) nr, .arch = AUDIT_ARCH_X86_64, .instruction_pointer = ip };
        memcpy(d.args, args, sizeof d.args);
        int64_t v = seccomp_eval(prog, len, &d);
        if (v < 0 || !seccomp_action_allows((uint32_t) v)) {
                *ret_action = v < 0 ? SECCOMP_RET_KILL_PROCESS : (uint32_t) v;
                return false;
        }
        return true;
}

/* Runs every seccomp filter of the stopped thread on the calls we are about
 * to make (and on the fallback's rt_sigreturn), as the kernel will: all
 * filters run and any one that does not allow a call is enough to refuse.
 * Reading filters needs CAP_SYS_ADMIN (PTRACE_SECCOMP_GET_FILTER); a filter
 * we cannot read counts as one that may kill. */
static int check_filters(Injector *j, const InjectSyscall *calls, size_t n, InjectStats *s) {
        _cleanup_free_ struct sock_filter *prog_buf = NULL;
        for (unsigned long idx = 0;; idx++) {
                const struct sock_filter *prog;
                long len;
                if (j->o->get_filter) {
                        len = j->o->get_filter(j->tid, idx, &prog, j->o->filter_userdata);
                        if (len < 0)
                                errno = (int) -len;
                } else
                        len = ptrace((enum __ptrace_request) K_PTRACE_SECCOMP_GET_FILTER, j->tid, (void *) idx, NULL);
                if (len < 0 && errno == ENOENT && idx > 0)
                        return 0;
                if (len <= 0)
                        return refuse(s, -EACCES, "seccomp filter that cannot be read (%s; InjectIntoSeccomp=no)",
                                      strerrorname_np(errno) ?: "?");
                if (!j->o->get_filter) {
                        free(prog_buf);
                        prog_buf = calloc((size_t) len, sizeof *prog_buf);
                        if (!prog_buf)
                                return -ENOMEM;
                        if (ptrace((enum __ptrace_request) K_PTRACE_SECCOMP_GET_FILTER, j->tid, (void *) idx,
                                   prog_buf) != len)
                                return refuse(s, -EACCES, "seccomp filter that cannot be read (InjectIntoSeccomp=no)");
                        prog = prog_buf;
                }
                uint32_t act;
                for (size_t i = 0; i < n; i++)
                        if (!check_one(prog, (size_t) len, calls[i].nr, calls[i].args, j->g_syscall + 2, &act))
                                return refuse(s, -EACCES, "its seccomp filter would %s syscall %ld (InjectIntoSeccomp=no)",
                                              seccomp_action_name(act), calls[i].nr);
                static const uint64_t none[6] = {};
                if (!check_one(prog, (size_t) len, SYS_rt_sigreturn, none, j->g_restorer + sizeof gadget_restorer, &act))
                        return refuse(s, -EACCES, "its seccomp filter would %s rt_sigreturn (InjectIntoSeccomp=no)",
                                      seccomp_action_name(act));
        }
}

/* The thread did not come back from our registers in time. It is not
 * stopped (or it would have reported), so it cannot be detached: it runs
 * the call to its end and returns through the frame on its own, and the
 * poll detaches it at its next stop. */
static int call_overran(Injector *j, int r, InjectSyscall *calls, size_t n, InjectStats *s) {
        abandon(j, true);
        for (size_t i = 0; i < n; i++)
                calls[i].ret = r; /* not known */
        if (r == -ECANCELED)
                return refuse(s, r, "given up on at the stop before the injected call returned; it finishes on its "
                                    "own and returns through the signal frame");
        return refuse(s, r, "the injected call did not return within %" PRIu64 " ms; it finishes on its own "
                            "and returns through the signal frame", j->call_timeout_usec / USEC_PER_MSEC);
}

static int run_calls(Injector *j, InjectSyscall *calls, size_t n, InjectStats *s) {
        StopKind kind;
        int sig, r;

        /* While our calls run, every signal stays pending: none is delivered
         * in a context that is not the target's own (the restart below, or
         * the fallback's rt_sigreturn, puts the mask back and they arrive
         * as usual). A stop inside a temporary-mask syscall was ruled out
         * before: PTRACE_SETSIGMASK drops TIF_RESTORE_SIGMASK. */
        uint64_t all = ~UINT64_C(0);
        r = xptrace(PTRACE_SETSIGMASK, j->tid, (void *) (uintptr_t) sizeof all, &all);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n; i++) {
                struct user_regs_struct regs = j->saved;
                regs.rax = (uint64_t) calls[i].nr;
                regs.rdi = calls[i].args[0];
                regs.rsi = calls[i].args[1];
                regs.rdx = calls[i].args[2];
                regs.r10 = calls[i].args[3];
                regs.r8 = calls[i].args[4];
                regs.r9 = calls[i].args[5];
                regs.rip = j->g_syscall;
                regs.rsp = j->scratch_lo;
                /* No restart logic for our registers when leaving this stop. */
                regs.orig_rax = (uint64_t) -1;
                r = xptrace(PTRACE_SETREGS, j->tid, NULL, &regs);
                if (r < 0)
                        return r;
                if (i == 0)
                        hook(j, INJECT_PHASE_REGS_SET);

                bool entered = false;
                uint64_t deadline = now_usec(CLOCK_MONOTONIC) + j->call_timeout_usec;
                r = xptrace(PTRACE_SYSCALL, j->tid, NULL, NULL);
                for (;;) {
                        if (r < 0)
                                return r;
                        r = wait_stop(j, deadline, &kind, &sig);
                        if (r == -ETIMEDOUT || r == -ECANCELED)
                                return call_overran(j, r, calls + i, n - i, s);
                        if (r < 0)
                                return r;
                        if (kind == STOP_EXITED)
                                return -ESRCH;
                        if (kind == STOP_SYSCALL && !entered) {
                                entered = true;
                                hook(j, INJECT_PHASE_SYSCALL_ENTRY);
                        } else if (kind == STOP_SYSCALL) {
                                errno = 0;
                                long v = ptrace(PTRACE_PEEKUSER, j->tid,
                                                (void *) offsetof(struct user_regs_struct, rax), NULL);
                                if (v == -1 && errno != 0)
                                        return negative_errno();
                                calls[i].ret = v;
                                hook(j, INJECT_PHASE_SYSCALL_EXIT);
                                break;
                        } else if (kind == STOP_SIGNAL)
                                /* All are blocked: this one was forced by our
                                 * own call (seccomp's SIGSYS, ...) and is not
                                 * the target's to see. */
                                j->suppressed++;
                        /* STOP_EVENT here is a group stop or a stale interrupt:
                         * the kernel reinstates a group stop at detach. */
                        r = xptrace(PTRACE_SYSCALL, j->tid, NULL, NULL);
                }
        }

        /* Into a stop inside get_signal, so that the restored registers go
         * through the kernel's own syscall-restart logic on the way out. */
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + j->call_timeout_usec;
        r = xptrace(PTRACE_INTERRUPT, j->tid, NULL, NULL);
        if (r >= 0)
                r = xptrace(PTRACE_CONT, j->tid, NULL, NULL);
        for (;;) {
                if (r < 0)
                        return r;
                r = wait_stop(j, deadline, &kind, &sig);
                if (r == -ETIMEDOUT || r == -ECANCELED)
                        return call_overran(j, r, calls + n, 0, s);
                if (r < 0)
                        return r;
                if (kind == STOP_EXITED)
                        return -ESRCH;
                if (kind == STOP_EVENT)
                        break;
                if (kind == STOP_SIGNAL)
                        j->suppressed++;
                r = xptrace(PTRACE_CONT, j->tid, NULL, NULL);
        }
        hook(j, INJECT_PHASE_FINAL_STOP);
        return xptrace(PTRACE_SETSIGMASK, j->tid, (void *) (uintptr_t) sizeof j->sigmask, &j->sigmask);
}

/* Collects the exit of a tracee that died under us. Until its tracer has
 * waited for it, a dead tracee is not handed back to its real parent, which
 * could not reap it: the daemon would hold a zombie for as long as it runs.
 * A death under way is reported within a millisecond or two, so that much
 * is waited for (REAP_WAIT_USEC); but a thread-group leader's exit is
 * reported only once every other thread of it is gone, and one of them
 * stuck in D (an unanswered FUSE read, tests/helpers/mmap-lock-hog) delays
 * that for as long as it likes: this used to poll for up to 2 s, holding
 * every action queued behind. What is not collected by then goes on the
 * abandoned list: inject_poll_abandoned() collects it, or detaches it at its
 * next stop if it was only not stopped, between and during later actions. */
#define REAP_WAIT_USEC (20 * USEC_PER_MSEC)
static void reap_exited(Injector *j, bool regs_ours) {
        uint64_t until = now_usec(CLOCK_MONOTONIC) + REAP_WAIT_USEC;
        for (;;) {
                int st;
                pid_t k = waitpid(j->tid, &st, __WALL | WNOHANG);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return; /* ECHILD: nothing (more) to collect */
                if (k == j->tid && (WIFEXITED(st) || WIFSIGNALED(st)))
                        return;
                if (k == j->tid) {
                        /* A stop report after all: it is in a stop, so let it go. */
                        if (detach(j) >= 0)
                                return;
                        continue;
                }
                if (now_usec(CLOCK_MONOTONIC) >= until)
                        break;
                struct timespec ts = { 0, 1000000 };
                nanosleep(&ts, NULL);
        }
        /* inject_run() refuses to start with the list full; a second
         * thread of one call may find it so: the kernel hands that one
         * to its parent when this thread exits. */
        if (n_abandoned < ABANDONED_MAX)
                abandon(j, regs_ours);
}

/* What happens to one thread, from PTRACE_SEIZE to PTRACE_DETACH. Returns
 * TRY_ANOTHER_THREAD, untouched, when it stopped in a temporary-mask
 * syscall. */
#define TRY_ANOTHER_THREAD 1

static int attempt(Injector *j, int pidfd, InjectSyscall *calls, size_t n, InjectStats *s, uint64_t *t_stop) {
        const InjectOptions *o = j->o;
        StopKind kind;
        int sig, r;

        r = xptrace(PTRACE_SEIZE, j->tid, NULL, (void *) (uintptr_t) PTRACE_O_TRACESYSGOOD);
        if (r == -EPERM) {
                /* Traced meanwhile, or not allowed (CAP_SYS_PTRACE, Yama). */
                ProcStatus ps;
                if (procfs_read_status(j->pid_dirfd, &ps) >= 0 && ps.tracer_pid != 0)
                        return refuse(s, -EBUSY, "already traced by pid %d", ps.tracer_pid);
                return refuse(s, r, "ptrace refused (CAP_SYS_PTRACE, Yama ptrace_scope, or not dumpable)");
        }
        if (r < 0)
                return r;
        hook(j, INJECT_PHASE_SEIZED);

        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + j->stop_timeout_usec;
        r = xptrace(PTRACE_INTERRUPT, j->tid, NULL, NULL);
        for (;;) {
                if (r < 0) {
                        if (r == -ESRCH)
                                reap_exited(j, false);
                        return r;
                }
                r = wait_stop(j, deadline, &kind, &sig);
                if (r == -ETIMEDOUT || r == -ECANCELED) {
                        /* Our interrupt stays pending: it stops in get_signal
                         * when it wakes, and is detached there untouched. */
                        abandon(j, false);
                        if (r == -ECANCELED)
                                return refuse(s, r, "given up on at the stop before it stopped; left untouched");
                        return refuse(s, r, "did not stop within %" PRIu64 " ms (uninterruptible sleep?); left untouched",
                                      j->stop_timeout_usec / USEC_PER_MSEC);
                }
                if (r < 0)
                        return r;
                if (kind == STOP_EXITED)
                        return -ESRCH;
                if (kind == STOP_EVENT)
                        break;
                /* A signal that was on its way: registers are still the
                 * target's own, deliver it now and wait for our stop. */
                r = xptrace(PTRACE_CONT, j->tid, NULL, (void *) (uintptr_t) (kind == STOP_SIGNAL ? sig : 0));
        }
        *t_stop = now_usec(CLOCK_MONOTONIC);
        hook(j, INJECT_PHASE_STOPPED);

        /* The pidfd's process is alive, so pid still names it, and the
         * thread we stopped belongs to it: not a stranger with a reused pid. */
        char task[32];
        snprintf(task, sizeof task, "task/%d", j->tid);
        if (pidfd_alive(pidfd) < 0 || faccessat(j->pid_dirfd, task, F_OK, 0) < 0)
                r = refuse(s, -ESRCH, "exited (or its pid was reused) before the stop");
        if (r >= 0)
                r = check_identity(j, s);
        if (r >= 0)
                r = check_thread(j, s);
        if (r >= 0)
                r = reopen_mem(j);
        if (r >= 0)
                r = xptrace(PTRACE_GETREGS, j->tid, NULL, &j->saved);
        if (r >= 0 && j->saved.cs != USER_CS_64)
                r = refuse(s, -EOPNOTSUPP, "not a 64-bit task (cs=%#llx)", (unsigned long long) j->saved.cs);
        if (r >= 0 && in_temporary_mask_syscall(&j->saved))
                r = TRY_ANOTHER_THREAD;
        if (r == 0 && (!gadget_intact(j, j->g_syscall, gadget_syscall_ret, sizeof gadget_syscall_ret) ||
                       !gadget_intact(j, j->g_restorer, gadget_restorer, sizeof gadget_restorer)))
                r = refuse(s, -ENOEXEC, "its text changed under the scan");
        if (r == 0 && j->seccomp == 2 && !o->allow_seccomp)
                r = check_filters(j, calls, n, s);
        if (r == 0)
                r = xptrace(PTRACE_GETSIGMASK, j->tid, (void *) (uintptr_t) sizeof j->sigmask, &j->sigmask);
        if (r == 0) {
                r = write_frame(j);
                if (r == -EFAULT)
                        r = refuse(s, r, "its stack pointer is not on a thread stack with room below it "
                                          "(sigaltstack or coroutine stack?)");
                else if (r == -ESRCH && pidfd_alive(pidfd) < 0)
                        r = refuse(s, r, "exited before the first write; nothing written");
                else if (r == -ESRCH)
                        /* The process lives on, our thread does not: an exec. */
                        r = refuse(s, r, "thread %d is no tracee of ours any more (an exec in pid %d ended it "
                                          "after the checks); nothing written", j->tid, j->pid);
        }
        if (r != 0) {
                /* Nothing changed but perhaps the bytes below its stack. */
                restore_scratch(j);
                if (detach(j) == -ESRCH)
                        reap_exited(j, false);
                return r;
        }
        hook(j, INJECT_PHASE_FRAME_WRITTEN);

        r = run_calls(j, calls, n, s);
        if (j->abandoned)
                return r;
        if (r >= 0)
                r = xptrace(PTRACE_SETREGS, j->tid, NULL, &j->saved);
        if (r == -ESRCH) {
                reap_exited(j, true);
                return r;
        }
        if (r < 0) {
                /* Registers may be ours: detaching lets the fallback frame
                 * bring the target home. */
                if (detach(j) == -ESRCH)
                        reap_exited(j, true);
                return r;
        }
        hook(j, INJECT_PHASE_RESTORED);
        restore_scratch(j);
        r = detach(j);
        if (r == -ESRCH)
                reap_exited(j, false);
        return r;
}

static void injector_done(Injector *j) {
        free(j->scratch_orig);
        j->scratch_orig = NULL;
        map_list_done(&j->maps);
}

/* The work of inject_syscalls(), which fills in the statistics however it
 * ends; j comes with its options and pid. */
static int inject_run(Injector *j, const Root *root, int pidfd, InjectSyscall *calls, size_t n, InjectStats *s,
                      uint64_t *t_stop) {
        _cleanup_close_ int pid_dirfd = -EBADF, mem_fd = -EBADF;
        int skip[8];
        size_t n_skip = 0;
        int r;

        if (j->pid == 1)
                return refuse(s, -EPERM, "PID 1 is never touched");
        if (inject_poll_abandoned() >= ABANDONED_MAX)
                return refuse(s, -EAGAIN, "%d threads given up on earlier have not stopped yet", ABANDONED_MAX);
        r = root_open_pid_dir(root, j->pid, &pid_dirfd);
        if (r < 0)
                return r;
        j->pid_dirfd = pid_dirfd;
        r = check_target(j, j->o, s);
        if (r < 0)
                return r;
        mem_fd = openat(pid_dirfd, "mem", O_RDONLY | O_CLOEXEC);
        if (mem_fd < 0)
                return errno == ENOENT ? -ESRCH : negative_errno();
        j->mem_fd = mem_fd;
        /* Before stopping anything: the scan reads maps and text. */
        r = find_gadgets(j);
        if (r == -ENOEXEC)
                return refuse(s, r, "no `syscall; ret` and rt_sigreturn gadgets in its executable mappings");
        if (r < 0)
                return r;

        for (;;) {
                r = choose_thread(j, skip, n_skip, &j->tid);
                if (r < 0) {
                        if (n_skip > 0)
                                return refuse(s, -EAGAIN, "every thread tried waits in a syscall with a temporary "
                                                          "signal mask (ppoll, pselect, sigsuspend...)");
                        return r;
                }
                free(j->scratch_orig);
                j->scratch_orig = NULL;
                j->scratch_written = false;
                r = attempt(j, pidfd, calls, n, s, t_stop);
                if (r != TRY_ANOTHER_THREAD)
                        return r;
                if (n_skip == ELEMENTSOF(skip))
                        return refuse(s, -EAGAIN, "%zu threads tried wait in a syscall with a temporary signal mask",
                                      n_skip);
                skip[n_skip++] = j->tid;
        }
}

int inject_syscalls(const Root *root, int pidfd, int pid, InjectSyscall *calls, size_t n,
                    const InjectOptions *o, InjectStats *ret_stats) {
        static const InjectOptions defaults = {};
        _cleanup_(injector_done) Injector j = {
                .o = o ?: &defaults,
                .pid = pid,
                .pid_dirfd = -EBADF,
                .mem_fd = -EBADF,
        };
        j.stop_timeout_usec = j.o->stop_timeout_usec ?: 2 * USEC_PER_SEC;
        j.call_timeout_usec = j.o->call_timeout_usec ?: 5 * USEC_PER_SEC;
        InjectStats s = {};
        uint64_t t0 = now_usec(CLOCK_MONOTONIC), t_stop = 0;
        int r;

        r = inject_run(&j, root, pidfd, calls, n, &s, &t_stop);
        s.tid = j.tid;
        s.signals_suppressed = j.suppressed;
        uint64_t t1 = now_usec(CLOCK_MONOTONIC);
        s.total_usec = t1 - t0;
        s.pause_usec = t_stop ? t1 - t_stop : 0;
        if (ret_stats)
                *ret_stats = s;
        return r;
}

#endif
