/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A target for ptrace injection that checks itself, for kernel tests.
 *
 *   inject-target [--seccomp|--seccomp-deny-merge|--ppoll-leader]
 *
 * Its main thread (the one an injector seizes: the thread group leader) loops
 * on raw blocking syscalls -- nanosleep(1 ms) and read() on a pipe fed every
 * millisecond -- with known values in rbx, r9, r10, r12-r15 and in every
 * xmm/ymm register across each syscall, and checks them afterwards, checks
 * that neither call ever returns EINTR or a short count (an injection must
 * restart an interrupted syscall, not break it), and every 64 rounds checks
 * its sigaltstack, its signal mask and the checksum of a 2 MiB region of
 * duplicate content. Other threads: a reader checking a sequence on a pipe,
 * a glibc nanosleep(2 ms) loop checking the time slept, a futex waiter
 * (timed and untimed waits), a compute thread verifying a known sequence,
 * and a thread that takes SIGUSR1 (blocked everywhere else).
 *
 * --seccomp installs an allow-all filter (that kills on acct(2)) first, so
 * /proc/PID/status says Seccomp: 2; --seccomp-deny-merge one that also kills
 * the process on prctl(PR_SET_MEMORY_MERGE, ...), as a strict service
 * filter might. --ppoll-leader parks the main thread in ppoll() with a
 * temporary signal mask instead of its register loop (an injector must
 * take another thread then, and leave the main thread's mask as it was).
 *
 * Prints "ready PID ADDR". On a stdin line "report" it prints "report
 * errors=E main=N eintr=N reader=N sleeper=N futex=N compute=N signals=N"
 * (eintr: raw nanosleeps that returned EINTR, counted apart); at EOF it
 * exits 0, or 3 when any check failed (each failure is also on stderr). */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PR_SET_MEMORY_MERGE_NR 67

static atomic_ulong errors, n_eintr, n_main, n_reader, n_sleeper, n_futex, n_compute, n_signals;
static int pipe_a[2], pipe_b[2];
static atomic_uint futex_word2;
static uint8_t *region;
static size_t region_len;
static uint64_t region_sum;
static stack_t alt_orig;

#define fail(...)                                             \
        do {                                                  \
                fprintf(stderr, "inject-target: " __VA_ARGS__); \
                fputc('\n', stderr);                          \
                atomic_fetch_add(&errors, 1);                 \
        } while (0)

static uint64_t mix(uint64_t x) {
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdULL;
        x ^= x >> 33;
        x *= 0xc4ceb9fe1a85ec53ULL;
        x ^= x >> 33;
        return x;
}

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static uint64_t checksum(const uint8_t *p, size_t n) {
        uint64_t h = 1469598103934665603ULL;
        for (size_t i = 0; i < n; i += 8) {
                uint64_t v;
                memcpy(&v, p + i, 8);
                h = (h ^ v) * 1099511628211ULL;
        }
        return h;
}

/* In/out block for the register check; r8 points at it across the syscall. */
typedef struct RegBlock {
        uint64_t gin[8];        /* rbx r9 r10 r12 r13 r14 r15 (spare) */
        uint8_t vin[16 * 32];
        uint8_t vout[16 * 32];
        uint64_t gout[8];
} RegBlock;

_Static_assert(offsetof(RegBlock, vin) == 64, "vin");
_Static_assert(offsetof(RegBlock, vout) == 576, "vout");
_Static_assert(offsetof(RegBlock, gout) == 1088, "gout");

#define LOAD_G                                                                          \
        "movq 0(%%r8), %%rbx\n\tmovq 8(%%r8), %%r9\n\tmovq 16(%%r8), %%r10\n\t"       \
        "movq 24(%%r8), %%r12\n\tmovq 32(%%r8), %%r13\n\tmovq 40(%%r8), %%r14\n\t"    \
        "movq 48(%%r8), %%r15\n\t"
#define STORE_G                                                                         \
        "movq %%rbx, 1088(%%r8)\n\tmovq %%r9, 1096(%%r8)\n\tmovq %%r10, 1104(%%r8)\n\t" \
        "movq %%r12, 1112(%%r8)\n\tmovq %%r13, 1120(%%r8)\n\tmovq %%r14, 1128(%%r8)\n\t" \
        "movq %%r15, 1136(%%r8)\n\t"
#define V16(op, a, b)                                                                                         \
        op " " a "0\n\t" op " " a "1\n\t" op " " a "2\n\t" op " " a "3\n\t" op " " a "4\n\t" op " " a "5\n\t" \
        op " " a "6\n\t" op " " a "7\n\t" op " " a "8\n\t" op " " a "9\n\t" op " " a "10\n\t" op " " a "11\n\t" \
        op " " a "12\n\t" op " " a "13\n\t" op " " a "14\n\t" op " " a "15\n\t"
#define CLOBBERS                                                                                          \
        "rbx", "r9", "r10", "r12", "r13", "r14", "r15", "rcx", "r11", "memory", "cc", "xmm0", "xmm1", "xmm2", \
                "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",  \
                "xmm14", "xmm15"

static long checked_syscall_avx(RegBlock *b, long nr, long a1, long a2, long a3) {
        register RegBlock *base asm("r8") = b;
        long ret;
        asm volatile(LOAD_G
                     "vmovdqu 64(%%r8), %%ymm0\n\tvmovdqu 96(%%r8), %%ymm1\n\tvmovdqu 128(%%r8), %%ymm2\n\t"
                     "vmovdqu 160(%%r8), %%ymm3\n\tvmovdqu 192(%%r8), %%ymm4\n\tvmovdqu 224(%%r8), %%ymm5\n\t"
                     "vmovdqu 256(%%r8), %%ymm6\n\tvmovdqu 288(%%r8), %%ymm7\n\tvmovdqu 320(%%r8), %%ymm8\n\t"
                     "vmovdqu 352(%%r8), %%ymm9\n\tvmovdqu 384(%%r8), %%ymm10\n\tvmovdqu 416(%%r8), %%ymm11\n\t"
                     "vmovdqu 448(%%r8), %%ymm12\n\tvmovdqu 480(%%r8), %%ymm13\n\tvmovdqu 512(%%r8), %%ymm14\n\t"
                     "vmovdqu 544(%%r8), %%ymm15\n\t"
                     "syscall\n\t"
                     STORE_G
                     "vmovdqu %%ymm0, 576(%%r8)\n\tvmovdqu %%ymm1, 608(%%r8)\n\tvmovdqu %%ymm2, 640(%%r8)\n\t"
                     "vmovdqu %%ymm3, 672(%%r8)\n\tvmovdqu %%ymm4, 704(%%r8)\n\tvmovdqu %%ymm5, 736(%%r8)\n\t"
                     "vmovdqu %%ymm6, 768(%%r8)\n\tvmovdqu %%ymm7, 800(%%r8)\n\tvmovdqu %%ymm8, 832(%%r8)\n\t"
                     "vmovdqu %%ymm9, 864(%%r8)\n\tvmovdqu %%ymm10, 896(%%r8)\n\tvmovdqu %%ymm11, 928(%%r8)\n\t"
                     "vmovdqu %%ymm12, 960(%%r8)\n\tvmovdqu %%ymm13, 992(%%r8)\n\tvmovdqu %%ymm14, 1024(%%r8)\n\t"
                     "vmovdqu %%ymm15, 1056(%%r8)\n\t"
                     "vzeroupper\n\t"
                     : "=a"(ret)
                     : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(base)
                     : CLOBBERS);
        return ret;
}

static long checked_syscall_sse(RegBlock *b, long nr, long a1, long a2, long a3) {
        register RegBlock *base asm("r8") = b;
        long ret;
        asm volatile(LOAD_G
                     "movdqu 64(%%r8), %%xmm0\n\tmovdqu 96(%%r8), %%xmm1\n\tmovdqu 128(%%r8), %%xmm2\n\t"
                     "movdqu 160(%%r8), %%xmm3\n\tmovdqu 192(%%r8), %%xmm4\n\tmovdqu 224(%%r8), %%xmm5\n\t"
                     "movdqu 256(%%r8), %%xmm6\n\tmovdqu 288(%%r8), %%xmm7\n\tmovdqu 320(%%r8), %%xmm8\n\t"
                     "movdqu 352(%%r8), %%xmm9\n\tmovdqu 384(%%r8), %%xmm10\n\tmovdqu 416(%%r8), %%xmm11\n\t"
                     "movdqu 448(%%r8), %%xmm12\n\tmovdqu 480(%%r8), %%xmm13\n\tmovdqu 512(%%r8), %%xmm14\n\t"
                     "movdqu 544(%%r8), %%xmm15\n\t"
                     "syscall\n\t"
                     STORE_G
                     "movdqu %%xmm0, 576(%%r8)\n\tmovdqu %%xmm1, 608(%%r8)\n\tmovdqu %%xmm2, 640(%%r8)\n\t"
                     "movdqu %%xmm3, 672(%%r8)\n\tmovdqu %%xmm4, 704(%%r8)\n\tmovdqu %%xmm5, 736(%%r8)\n\t"
                     "movdqu %%xmm6, 768(%%r8)\n\tmovdqu %%xmm7, 800(%%r8)\n\tmovdqu %%xmm8, 832(%%r8)\n\t"
                     "movdqu %%xmm9, 864(%%r8)\n\tmovdqu %%xmm10, 896(%%r8)\n\tmovdqu %%xmm11, 928(%%r8)\n\t"
                     "movdqu %%xmm12, 960(%%r8)\n\tmovdqu %%xmm13, 992(%%r8)\n\tmovdqu %%xmm14, 1024(%%r8)\n\t"
                     "movdqu %%xmm15, 1056(%%r8)\n\t"
                     : "=a"(ret)
                     : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(base)
                     : CLOBBERS);
        return ret;
}

static void regs_round(RegBlock *b, uint64_t round, bool avx, long nr, long a1, long a2, long a3, long want) {
        size_t vlen = avx ? 32 : 16;
        for (int i = 0; i < 7; i++)
                b->gin[i] = mix(round * 8 + (uint64_t) i + 1);
        for (size_t i = 0; i < 16; i++)
                for (size_t k = 0; k < 32; k += 8) {
                        uint64_t v = mix(round * 1000 + i * 4 + k + 77);
                        memcpy(b->vin + i * 32 + k, &v, 8);
                }
        memset(b->vout, 0, sizeof b->vout);
        memset(b->gout, 0, sizeof b->gout);
        long ret = avx ? checked_syscall_avx(b, nr, a1, a2, a3) : checked_syscall_sse(b, nr, a1, a2, a3);
        if (ret == -EINTR && nr == SYS_nanosleep)
                /* Counted apart: the one thing an injector killed mid-way
                 * may cause (a sleep already in restart_syscall), see inject.h. */
                atomic_fetch_add(&n_eintr, 1);
        else if (ret != want)
                fail("main: syscall %ld returned %ld, expected %ld", nr, ret, want);
        for (int i = 0; i < 7; i++)
                if (b->gout[i] != b->gin[i])
                        fail("main: general register %d changed across syscall %ld", i, nr);
        for (size_t i = 0; i < 16; i++)
                if (memcmp(b->vout + i * 32, b->vin + i * 32, vlen) != 0)
                        fail("main: vector register %zu changed across syscall %ld", i, nr);
}

static void *reader_main(void *arg) {
        uint64_t want = 0;
        for (;;) {
                uint64_t v;
                ssize_t k = read(pipe_a[0], &v, sizeof v);
                if (k == 0)
                        return NULL;
                if (k != (ssize_t) sizeof v) {
                        fail("reader: read returned %zd (%s)", k, k < 0 ? strerror(errno) : "short");
                        continue;
                }
                if (v != want)
                        fail("reader: got %llu, expected %llu", (unsigned long long) v, (unsigned long long) want);
                want = v + 1;
                atomic_fetch_add(&n_reader, 1);
        }
}

static void *sleeper_main(void *arg) {
        for (;;) {
                struct timespec ts = { 0, 2000000 };
                uint64_t t0 = now_ns();
                if (nanosleep(&ts, NULL) < 0)
                        fail("sleeper: nanosleep: %s", strerror(errno));
                else if (now_ns() - t0 < 2000000)
                        fail("sleeper: slept only %llu ns", (unsigned long long) (now_ns() - t0));
                atomic_fetch_add(&n_sleeper, 1);
        }
        return NULL;
}

static void *futex_main(void *arg) {
        unsigned word1 = 0;
        for (;;) {
                struct timespec ts = { 0, 3000000 };
                long r = syscall(SYS_futex, &word1, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
                if (r == 0 || (r < 0 && errno != ETIMEDOUT))
                        fail("futex: timed wait returned %ld (%s)", r, r < 0 ? strerror(errno) : "woken");
                unsigned v = atomic_load(&futex_word2);
                r = syscall(SYS_futex, &futex_word2, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
                if (r < 0 && errno != EAGAIN)
                        fail("futex: untimed wait: %s", strerror(errno));
                atomic_fetch_add(&n_futex, 1);
        }
        return NULL;
}

static void *compute_main(void *arg) {
        /* Block sums of a known sequence, integer and floating point, each
         * computed once and then re-verified forever. */
        enum { BLOCKS = 16, LEN = 200000 };
        uint64_t want_i[BLOCKS];
        double want_d[BLOCKS];
        for (uint64_t round = 0;; round++) {
                uint64_t b = round % BLOCKS, si = 0;
                double sd = 0;
                for (uint64_t i = 0; i < LEN; i++) {
                        uint64_t x = mix(b * LEN + i);
                        si += x;
                        sd += (double) (x >> 40) * 0.5;
                }
                if (round < BLOCKS) {
                        want_i[b] = si;
                        want_d[b] = sd;
                } else if (si != want_i[b] || sd != want_d[b])
                        fail("compute: block %llu differs", (unsigned long long) b);
                atomic_fetch_add(&n_compute, 1);
        }
        return NULL;
}

static void on_usr1(int sig) {
        atomic_fetch_add(&n_signals, 1);
}

static void *signal_main(void *arg) {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGUSR1);
        pthread_sigmask(SIG_UNBLOCK, &s, NULL);
        for (;;)
                pause();
        return NULL;
}

static void *feeder_main(void *arg) {
        for (uint64_t seq = 0;; seq++) {
                struct timespec ts = { 0, 1000000 };
                if (write(pipe_a[1], &seq, sizeof seq) != (ssize_t) sizeof seq)
                        fail("feeder: write: %s", strerror(errno));
                char c = 'x';
                (void) write(pipe_b[1], &c, 1); /* non-blocking: a full pipe is fine */
                atomic_fetch_add(&futex_word2, 1);
                syscall(SYS_futex, &futex_word2, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
                nanosleep(&ts, NULL);
        }
        return NULL;
}

static void *control_main(void *arg) {
        char line[64];
        while (fgets(line, sizeof line, stdin)) {
                if (strncmp(line, "report", 6) == 0) {
                        printf("report errors=%lu main=%lu eintr=%lu reader=%lu sleeper=%lu futex=%lu compute=%lu "
                               "signals=%lu\n",
                               atomic_load(&errors), atomic_load(&n_main), atomic_load(&n_eintr), atomic_load(&n_reader),
                               atomic_load(&n_sleeper), atomic_load(&n_futex), atomic_load(&n_compute),
                               atomic_load(&n_signals));
                        fflush(stdout);
                }
        }
        fflush(stderr);
        _exit(atomic_load(&errors) ? 3 : 0);
}

static int install_seccomp(bool deny_merge) {
        struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_acct, 4, 0),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prctl, 0, 2),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, deny_merge ? PR_SET_MEMORY_MERGE_NR : 0xffffffff, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        };
        struct sock_fprog prog = { .len = sizeof f / sizeof f[0], .filter = f };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -1;
        return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

int main(int argc, char **argv) {
        bool want_seccomp = argc > 1 && strcmp(argv[1], "--seccomp") == 0;
        bool deny_merge = argc > 1 && strcmp(argv[1], "--seccomp-deny-merge") == 0;
        bool ppoll_leader = argc > 1 && strcmp(argv[1], "--ppoll-leader") == 0;
        size_t page = (size_t) sysconf(_SC_PAGESIZE);
        pthread_t t;

        if ((want_seccomp || deny_merge) && install_seccomp(deny_merge) < 0) {
                perror("seccomp");
                return 1;
        }
        if (pipe(pipe_a) < 0 || pipe2(pipe_b, O_NONBLOCK) < 0) {
                perror("pipe");
                return 1;
        }
        /* The main thread's own read must block: only its write end is non-blocking. */
        int fl = fcntl(pipe_b[0], F_GETFL);
        fcntl(pipe_b[0], F_SETFL, fl & ~O_NONBLOCK);

        /* 64 unique pages x 8 copies: content KSM can merge, which must read back the same. */
        region_len = 512 * page;
        region = mmap(NULL, region_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (region == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        for (size_t p = 0; p < 512; p++)
                for (size_t w = 0; w < page; w += 8) {
                        uint64_t v = mix((p % 64) * 4096 + w);
                        memcpy(region + p * page + w, &v, 8);
                }
        region_sum = checksum(region, region_len);

        static uint8_t altstack[64 * 1024];
        stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack };
        if (sigaltstack(&ss, NULL) < 0 || sigaltstack(NULL, &alt_orig) < 0) {
                perror("sigaltstack");
                return 1;
        }
        struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
        sigaction(SIGUSR1, &sa, NULL);
        sigset_t block;
        sigemptyset(&block);
        sigaddset(&block, SIGUSR1);
        sigaddset(&block, SIGUSR2);
        pthread_sigmask(SIG_BLOCK, &block, NULL);

        void *(*threads[])(void *) = { reader_main, sleeper_main, futex_main, compute_main,
                                       signal_main, feeder_main, control_main };
        for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++)
                if (pthread_create(&t, NULL, threads[i], NULL) != 0) {
                        fprintf(stderr, "pthread_create failed\n");
                        return 1;
                }

        printf("ready %d %p\n", (int) getpid(), (void *) region);
        fflush(stdout);

        if (ppoll_leader) {
                /* Temporarily unblock SIGUSR2 only; SIGUSR1 stays blocked. */
                sigset_t tmp;
                sigfillset(&tmp);
                sigdelset(&tmp, SIGUSR2);
                for (;;) {
                        if (ppoll(NULL, 0, NULL, &tmp) < 0 && errno != EINTR)
                                fail("main: ppoll: %s", strerror(errno));
                        sigset_t now;
                        pthread_sigmask(SIG_BLOCK, NULL, &now);
                        if (!sigismember(&now, SIGUSR1) || !sigismember(&now, SIGUSR2))
                                fail("main: signal mask changed");
                }
        }
        bool avx = __builtin_cpu_supports("avx");
        static RegBlock blk;
        for (uint64_t round = 0;; round++) {
                struct timespec ts = { 0, 1000000 };
                char c;
                regs_round(&blk, round * 2, avx, SYS_nanosleep, (long) &ts, 0, 0, 0);
                regs_round(&blk, round * 2 + 1, avx, SYS_read, pipe_b[0], (long) &c, 1, 1);
                if (round % 64 == 0) {
                        stack_t cur;
                        sigset_t now;
                        if (sigaltstack(NULL, &cur) < 0 || cur.ss_sp != alt_orig.ss_sp ||
                            cur.ss_size != alt_orig.ss_size || cur.ss_flags != alt_orig.ss_flags)
                                fail("main: sigaltstack changed");
                        pthread_sigmask(SIG_BLOCK, NULL, &now);
                        if (!sigismember(&now, SIGUSR1) || !sigismember(&now, SIGUSR2))
                                fail("main: signal mask changed");
                        if (checksum(region, region_len) != region_sum)
                                fail("main: region checksum changed");
                }
                atomic_fetch_add(&n_main, 1);
        }
        return 0;
}
