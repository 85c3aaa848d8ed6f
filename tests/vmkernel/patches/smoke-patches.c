/* SPDX-License-Identifier: GPL-2.0-or-later */
/* smoke-patches [--expect=patched|stock]: checks, from user space, the
 * evidence README.md describes for each patch of the series, on the running
 * kernel, and prints one line per patch: "present", "absent" or
 * "unknown", with what was measured. With --expect, exits 1 when a verdict
 * differs from the expectation ("unknown" never fails).
 *
 * Meant for the test guests (run-in-guest.sh KERNEL .../smoke-patches), but
 * safe on a shared host: takes the KSM test guard (tests/lib/ksm-guard.c:
 * lock, every knob saved and restored, children killed on every exit path),
 * traces in its own tracefs instance, and bounds every wait.
 *
 * Build: gcc -O2 -Wall -Wextra -pthread -I tests/lib \
 *            tests/vmkernel/patches/smoke-patches.c tests/lib/ksm-guard.c
 *
 * Not covered: 0003 (khugepaged), which needs ~10^5 VMAs and a writer's
 * latency distribution to show. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ksm-guard.h"

#ifndef MADV_MERGEABLE
#define MADV_MERGEABLE 12
#define MADV_UNMERGEABLE 13
#endif
#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE 67
#endif

#define PAGE 4096UL
#define KSM_DIR "/sys/kernel/mm/ksm/"
#define TRACEFS "/sys/kernel/tracing"

typedef enum Verdict { ABSENT, PRESENT, UNKNOWN } Verdict;
static const char *const verdict_name[] = { "absent", "present", "unknown" };
static int expect = -1; /* ABSENT for stock, PRESENT for patched */
static int mismatches;

static void report(const char *patch, Verdict v, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void report(const char *patch, Verdict v, const char *fmt, ...) {
        char text[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof text, fmt, ap);
        va_end(ap);
        bool bad = expect >= 0 && v != UNKNOWN && (int) v != expect;
        printf("%-5s %-8s %s%s\n", patch, verdict_name[v], text, bad ? "  <-- not as expected" : "");
        fflush(stdout);
        mismatches += bad;
}

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static int read_file(const char *path, char *buf, size_t size) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, size - 1);
        int e = errno;
        close(fd);
        if (n < 0)
                return -e;
        buf[n] = 0;
        return (int) n;
}

static int write_file(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = write(fd, text, strlen(text));
        int e = errno;
        close(fd);
        return n < 0 ? -e : 0;
}

/* A child that waits, with its own address space, until killed or until
 * the parent closes the pipe. fill: pages of the given region to touch. */
typedef struct Child {
        pid_t pid;
        int pidfd;
        int wake_fd; /* write end: closing it lets the child exit */
} Child;

static void child_stop(Child *c) {
        if (c->pid <= 0)
                return;
        close(c->wake_fd);
        kill(c->pid, SIGKILL);
        waitpid(c->pid, NULL, 0);
        ksm_guard_untrack_child(c->pid);
        close(c->pidfd);
        c->pid = 0;
}

static int child_start(Child *c) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                char ch;
                close(p[1]);
                while (read(p[0], &ch, 1) < 0 && errno == EINTR)
                        ;
                _exit(0);
        }
        close(p[0]);
        ksm_guard_track_child(pid);
        *c = (Child) { .pid = pid, .wake_fd = p[1], .pidfd = (int) syscall(SYS_pidfd_open, pid, 0) };
        if (c->pidfd < 0) {
                int e = errno;
                child_stop(c);
                return -e;
        }
        return 0;
}

/* Value of "key" in /proc/pid/ksm_stat ("key: yes" or "key N"), or NULL. */
static const char *ksm_stat_value(pid_t pid, const char *key, char *buf, size_t size) {
        char path[64], text[1024];
        snprintf(path, sizeof path, "/proc/%d/ksm_stat", (int) pid);
        if (read_file(path, text, sizeof text) < 0)
                return NULL;
        size_t k = strlen(key);
        for (char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                if (strncmp(l, key, k) == 0 && (l[k] == ':' || l[k] == ' ')) {
                        l += k + 1;
                        l += strspn(l, " ");
                        size_t n = strcspn(l, "\n");
                        snprintf(buf, size, "%.*s", (int) n, l);
                        return buf;
                }
        return NULL;
}

/* Whether the VmFlags of the mapping starting at addr in pid's smaps have "mg". */
static int smaps_mergeable(pid_t pid, uintptr_t addr) {
        char path[64], line[512];
        snprintf(path, sizeof path, "/proc/%d/smaps", (int) pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return -errno;
        bool in = false;
        int r = -ENOENT;
        while (fgets(line, sizeof line, f)) {
                uintptr_t lo, hi;
                if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2) {
                        in = lo <= addr && addr < hi;
                        continue;
                }
                if (in && strncmp(line, "VmFlags:", 8) == 0) {
                        r = strstr(line, " mg") != NULL;
                        break;
                }
        }
        fclose(f);
        return r;
}

/* 0007 and 0008: process_ksm_* on a child, checked through ksm_stat. */
static void check_process_ksm(void) {
        static const char *const names[] = { "process_ksm_enable", "process_ksm_disable", "process_ksm_status" };
        long nr[3];
        char path[128], buf[64];
        for (int i = 0; i < 3; i++) {
                snprintf(path, sizeof path, "/sys/kernel/process_ksm/%s", names[i]);
                if (read_file(path, buf, sizeof buf) < 0) {
                        report("0007", ABSENT, "no %s", path);
                        if (!ksm_stat_value(getpid(), "ksm_merge_any", buf, sizeof buf))
                                report("0008", ABSENT, "ksm_stat has no ksm_merge_any line");
                        return;
                }
                nr[i] = strtol(buf, NULL, 10);
        }
        Child c;
        int r = child_start(&c);
        if (r < 0) {
                report("0007", UNKNOWN, "cannot start a child: %s", strerror(-r));
                return;
        }
        long st0 = syscall(nr[2], c.pidfd, 0);
        long en = syscall(nr[0], c.pidfd, 0);
        int en_errno = errno;
        long st1 = syscall(nr[2], c.pidfd, 0);
        char merge_any[16] = "", *ma = (char *) ksm_stat_value(c.pid, "ksm_merge_any", merge_any, sizeof merge_any);
        long dis = syscall(nr[1], c.pidfd, 0);
        long st2 = syscall(nr[2], c.pidfd, 0);
        long bad = syscall(nr[2], c.pidfd, 1);
        int bad_errno = errno;
        child_stop(&c);
        bool ok = st0 == 0 && en == 0 && st1 == 1 && dis == 0 && st2 == 0 && bad == -1 && bad_errno == EINVAL;
        report("0007", ok ? PRESENT : UNKNOWN,
               "numbers %ld/%ld/%ld; status %ld, enable %ld (%s), status %ld, disable %ld, status %ld, flags=1: %s",
               nr[0], nr[1], nr[2], st0, en, en < 0 ? strerror(en_errno) : "ok", st1, dis, st2,
               bad < 0 ? strerrorname_np(bad_errno) : "accepted");
        if (ma)
                report("0008", strcmp(merge_any, "yes") == 0 ? PRESENT : UNKNOWN,
                       "ksm_stat after process_ksm_enable: ksm_merge_any: %s", merge_any);
        else
                report("0008", ABSENT, "ksm_stat has no ksm_merge_any line");
}

/* 0006: process_madvise(MADV_MERGEABLE) on a child, checked in its smaps. */
static void check_remote_madvise(void) {
        size_t len = 16 * PAGE;
        char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
                report("0006", UNKNOWN, "mmap: %m");
                return;
        }
        memset(m, 0x5a, len);
        Child c;
        int r = child_start(&c); /* inherits the mapping */
        if (r < 0) {
                munmap(m, len);
                report("0006", UNKNOWN, "cannot start a child: %s", strerror(-r));
                return;
        }
        struct iovec iov = { .iov_base = m, .iov_len = len };
        long k = syscall(SYS_process_madvise, c.pidfd, &iov, 1, MADV_MERGEABLE, 0);
        int e = errno;
        if (k < 0) {
                child_stop(&c);
                munmap(m, len);
                report("0006", e == EINVAL ? ABSENT : UNKNOWN, "process_madvise(MADV_MERGEABLE): %s", strerrorname_np(e));
                return;
        }
        int mg1 = smaps_mergeable(c.pid, (uintptr_t) m);
        char v[16] = "", *mergeable = (char *) ksm_stat_value(c.pid, "ksm_mergeable", v, sizeof v);
        long u = syscall(SYS_process_madvise, c.pidfd, &iov, 1, MADV_UNMERGEABLE, 0);
        int ue = errno;
        int mg2 = smaps_mergeable(c.pid, (uintptr_t) m);
        child_stop(&c);
        munmap(m, len);
        bool ok = k == (long) len && mg1 == 1 && u == (long) len && mg2 == 0;
        report("0006", ok ? PRESENT : UNKNOWN,
               "MADV_MERGEABLE returned %ld, VmFlags mg %d, ksm_mergeable: %s; MADV_UNMERGEABLE returned %ld%s%s, mg %d",
               k, mg1, mergeable ? mergeable : "(no line)", u, u < 0 ? " " : "", u < 0 ? strerrorname_np(ue) : "",
               mg2);
}

static void on_usr1(int sig) {
        (void) sig;
}

/* 0004: MADV_UNMERGEABLE of a 1 TiB mapping with one page populated, in a
 * child, interrupted by a timer signal after 2 s. */
static void check_sparse_unmerge(void) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0) {
                report("0004", UNKNOWN, "pipe: %m");
                return;
        }
        pid_t pid = fork();
        if (pid < 0) {
                report("0004", UNKNOWN, "fork: %m");
                return;
        }
        if (pid == 0) {
                struct { long ret; int err; uint64_t usec; } res = { -1, 0, 0 };
                size_t len = 1UL << 40;
                char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
                if (m == MAP_FAILED)
                        _exit(2);
                m[0] = 1; /* an anon_vma: otherwise there is nothing to unmerge */
                if (madvise(m, len, MADV_MERGEABLE) < 0)
                        _exit(3);
                struct sigaction sa = { .sa_handler = on_usr1 }; /* no SA_RESTART */
                sigaction(SIGUSR1, &sa, NULL);
                struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1 };
                timer_t t;
                if (timer_create(CLOCK_MONOTONIC, &sev, &t) < 0)
                        _exit(4);
                struct itimerspec its = { .it_value = { .tv_sec = 2 }, .it_interval = { .tv_nsec = 100000000 } };
                timer_settime(t, 0, &its, NULL);
                uint64_t t0 = now_usec();
                res.ret = madvise(m, len, MADV_UNMERGEABLE);
                res.err = errno;
                res.usec = now_usec() - t0;
                if (write(p[1], &res, sizeof res) != sizeof res)
                        _exit(5);
                _exit(0);
        }
        close(p[1]);
        ksm_guard_track_child(pid);
        struct { long ret; int err; uint64_t usec; } res;
        ssize_t n = read(p[0], &res, sizeof res); /* the child's timer bounds it */
        close(p[0]);
        int status;
        waitpid(pid, &status, 0);
        ksm_guard_untrack_child(pid);
        if (n != sizeof res) {
                report("0004", UNKNOWN, "the child failed (exit status %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
                return;
        }
        if (res.ret == 0 && res.usec < 1000000)
                report("0004", PRESENT, "MADV_UNMERGEABLE of 1 TiB (1 page populated) took %" PRIu64 " us", res.usec);
        else if (res.ret < 0 && res.err == EINTR)
                report("0004", ABSENT, "MADV_UNMERGEABLE of 1 TiB still running after %" PRIu64 " ms (interrupted)",
                       res.usec / 1000);
        else
                report("0004", UNKNOWN, "MADV_UNMERGEABLE of 1 TiB: ret %ld (%s) after %" PRIu64 " us", res.ret,
                       res.ret < 0 ? strerrorname_np(res.err) : "ok", res.usec);
}

static pid_t find_kthread(const char *name) {
        char path[64], comm[32];
        for (pid_t pid = 2; pid < 4096; pid++) {
                snprintf(path, sizeof path, "/proc/%d/comm", (int) pid);
                if (read_file(path, comm, sizeof comm) > 0) {
                        comm[strcspn(comm, "\n")] = 0;
                        if (strcmp(comm, name) == 0)
                                return pid;
                }
        }
        return -1;
}

/* A tracefs instance of our own: its buffer and event switches are not
 * the top-level ones other tests (and the daemon) use. */
static char instance[128];

static void instance_remove(void) {
        char path[192];
        if (!instance[0])
                return;
        snprintf(path, sizeof path, "%s/events/enable", instance);
        write_file(path, "0");
        rmdir(instance);
        instance[0] = 0;
}

static int instance_create(void) {
        snprintf(instance, sizeof instance, TRACEFS "/instances/kpatch-smoke-%d", (int) getpid());
        if (mkdir(instance, 0700) < 0) {
                instance[0] = 0;
                return -errno;
        }
        atexit(instance_remove);
        char path[256];
        snprintf(path, sizeof path, "%s/buffer_size_kb", instance);
        write_file(path, "8192");
        return 0;
}

static int event_set(const char *event, const char *filter, bool on) {
        char path[256];
        int r;
        snprintf(path, sizeof path, "%s/events/mmap_lock/%s/filter", instance, event);
        if ((r = write_file(path, filter ? filter : "0")) < 0)
                return r;
        snprintf(path, sizeof path, "%s/events/mmap_lock/%s/enable", instance, event);
        return write_file(path, on ? "1" : "0");
}

static void trace_clear(void) {
        char path[256];
        snprintf(path, sizeof path, "%s/trace", instance);
        write_file(path, "");
}

/* Counts trace lines of the instance containing all of the needles. */
static long trace_count(const char *needle1, const char *needle2) {
        char path[256], line[1024];
        snprintf(path, sizeof path, "%s/trace", instance);
        FILE *f = fopen(path, "re");
        if (!f)
                return -1;
        long n = 0;
        while (fgets(line, sizeof line, f))
                if (line[0] != '#' && strstr(line, needle1) && (!needle2 || strstr(line, needle2)))
                        n++;
        fclose(f);
        return n;
}

/* The hashed "mm=..." a task's own mmap() shows in mmap_lock events. */
static int trace_mm_of(pid_t pid, char *ret, size_t size) {
        char path[256], line[1024], pat[32];
        snprintf(path, sizeof path, "%s/trace", instance);
        snprintf(pat, sizeof pat, "-%d ", (int) pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return -errno;
        int r = -ENOENT;
        while (fgets(line, sizeof line, f)) {
                char *m = strstr(line, " mm=");
                if (line[0] == '#' || !strstr(line, pat) || !m)
                        continue;
                m += 1;
                snprintf(ret, size, "%.*s ", (int) strcspn(m, " "), m);
                r = 0;
                break;
        }
        fclose(f);
        return r;
}

static uint64_t wait_full_scans(uint64_t target, uint64_t deadline_usec) {
        uint64_t v;
        while ((v = ksm_read_counter("full_scans")) < target && now_usec() < deadline_usec)
                usleep(2000);
        return v;
}

/* N pages of unique content that never changes: never merge, always
 * descend the unstable tree. */
static char *unique_pages(size_t n) {
        char *m = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                uint64_t *w = (uint64_t *) (m + i * PAGE);
                for (size_t j = 0; j < PAGE / 8; j++)
                        w[j] = (i + 1) * 0x9e3779b97f4a7c15ULL ^ (j * 0xbf58476d1ce4e5b9ULL) ^ (uint64_t) getpid() << 20;
        }
        return m;
}

static atomic_bool churn_stop;
static void *churn_mprotect(void *arg) {
        char *page = arg;
        while (!atomic_load(&churn_stop)) {
                mprotect(page, PAGE, PROT_READ);
                mprotect(page, PAGE, PROT_READ | PROT_WRITE);
        }
        return NULL;
}

/* 0001 and 0002, from ksmd's mmap_lock events on our own mm. */
static void check_ksmd_locking(void) {
        pid_t ksmd = find_kthread("ksmd");
        if (ksmd < 0) {
                report("0001", UNKNOWN, "no ksmd thread");
                report("0002", UNKNOWN, "no ksmd thread");
                return;
        }
        int r = instance_create();
        if (r < 0) {
                report("0001", UNKNOWN, "no tracefs instance (%s)", strerror(-r));
                report("0002", UNKNOWN, "no tracefs instance");
                return;
        }
        const size_t n = 2048;
        char *m = unique_pages(n);
        if (!m || madvise(m, n * PAGE, MADV_MERGEABLE) < 0) {
                report("0001", UNKNOWN, "cannot map mergeable pages: %m");
                return;
        }
        char filter[128], mm[64];
        snprintf(filter, sizeof filter, "common_pid == %d || common_pid == %d", (int) ksmd, (int) getpid());
        if (event_set("mmap_lock_start_locking", filter, true) < 0) {
                report("0001", UNKNOWN, "no mmap_lock events");
                report("0002", UNKNOWN, "no mmap_lock events");
                return;
        }
        trace_clear();
        void *probe = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); /* our mm= value */
        munmap(probe, PAGE);
        if (trace_mm_of(getpid(), mm, sizeof mm) < 0) {
                report("0002", UNKNOWN, "our own mmap() left no mmap_lock event");
                return;
        }
        snprintf(filter, sizeof filter, "common_pid == %d", (int) ksmd);
        event_set("mmap_lock_start_locking", filter, true);

        /* 0002: no smart scan (every page every scan), no churn. The first
         * scan only records checksums; count from the second. */
        ksm_guard_set("smart_scan", "0");
        ksm_guard_set("pages_to_scan", "1000");
        ksm_guard_set("sleep_millisecs", "1");
        ksm_guard_set("run", "1");
        uint64_t deadline = now_usec() + 120 * 1000000ULL;
        uint64_t f0 = ksm_read_counter("full_scans");
        wait_full_scans(f0 + 2, deadline);
        trace_clear();
        uint64_t f1 = ksm_read_counter("full_scans");
        uint64_t f2 = wait_full_scans(f1 + 2, deadline);
        event_set("mmap_lock_start_locking", NULL, false);
        long events = trace_count(mm, NULL);
        ksm_guard_set("run", "0");
        if (f2 < f1 + 2 || events < 0)
                report("0002", UNKNOWN, "ksmd made only %" PRIu64 " full scans in time", f2 - f1);
        else {
                double per_page = (double) events / (double) (n * (f2 - f1));
                report("0002", per_page < 2.0 ? PRESENT : per_page > 3.0 ? ABSENT : UNKNOWN,
                       "ksmd mmap_lock acquisitions of our mm per scanned page: %.2f (%ld in %" PRIu64
                       " scans of %zu unique pages; about 1 with the VMA lock, log2(pages) more without)",
                       per_page, events, f2 - f1, n);
        }

        /* 0001: failed acquisitions while a thread mprotect()s a page of
         * the mergeable VMA (write-locking it, so 0002's VMA lock falls back). */
        snprintf(filter, sizeof filter, "common_pid == %d && success == 0", (int) ksmd);
        trace_clear();
        if (event_set("mmap_lock_acquire_returned", filter, true) < 0) {
                report("0001", UNKNOWN, "no mmap_lock_acquire_returned event");
                return;
        }
        pthread_t th;
        atomic_store(&churn_stop, false);
        if (pthread_create(&th, NULL, churn_mprotect, m + (n - 1) * PAGE) != 0) {
                report("0001", UNKNOWN, "pthread_create failed");
                return;
        }
        ksm_guard_set("run", "1");
        f1 = ksm_read_counter("full_scans");
        f2 = wait_full_scans(f1 + 4, now_usec() + 60 * 1000000ULL);
        ksm_guard_set("run", "0");
        atomic_store(&churn_stop, true);
        pthread_join(th, NULL);
        event_set("mmap_lock_acquire_returned", NULL, false);
        long failed = trace_count("success=false", NULL);
        if (failed > 0)
                report("0001", PRESENT, "ksmd's mmap_read_trylock() failed %ld times in %" PRIu64 " scans under an mprotect churner",
                       failed, f2 - f1);
        else if (failed == 0 && f2 >= f1 + 4)
                report("0001", ABSENT, "ksmd never failed to take the mmap lock in %" PRIu64 " scans under an mprotect churner",
                       f2 - f1);
        else
                report("0001", UNKNOWN, "only %" PRIu64 " scans in time", f2 - f1);
        munmap(m, n * PAGE);
        instance_remove();
}

/* The PFN mapped at addr (pagemap; root sees PFNs), 0 if none. Two pages
 * of ours merged by KSM map the same PFN. Not /proc/kpageflags' KPF_KSM:
 * 6.12's stable_page_flags() tests mapping & PAGE_MAPPING_KSM, which is
 * true for every anonymous page. */
static uint64_t page_pfn(int pagemap_fd, const void *addr) {
        uint64_t e;
        if (pread(pagemap_fd, &e, 8, (off_t) ((uintptr_t) addr / PAGE * 8)) != 8 || !(e & (1ULL << 63)))
                return 0;
        return e & ((1ULL << 55) - 1);
}

/* 0005: pairs of identical pages made mergeable d = 0..20 full scans
 * apart, with unique filler pages keeping each scan long enough to time. */
static void check_pairs(void) {
        enum { DELAYS = 21, FILLER = 4096, AFTER = 64 };
        int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
        if (pm < 0) {
                report("0005", UNKNOWN, "no pagemap: %m");
                return;
        }
        char *filler = unique_pages(FILLER);
        char *a[DELAYS], *b[DELAYS];
        for (int d = 0; d < DELAYS; d++) {
                a[d] = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                b[d] = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (!filler || a[d] == MAP_FAILED || b[d] == MAP_FAILED) {
                        report("0005", UNKNOWN, "mmap: %m");
                        return;
                }
                memset(a[d], 0x40 + d, PAGE);
                memset(b[d], 0x40 + d, PAGE);
                snprintf(a[d], 64, "pair %d of %d", d, (int) getpid());
                snprintf(b[d], 64, "pair %d of %d", d, (int) getpid());
        }
        /* Slow scans (several batches of 64 with 20 ms sleeps each), so
         * that polling full_scans every 2 ms places each page in the scan
         * meant for it; the delays really reached are reported. */
        ksm_guard_set("smart_scan", "1");
        ksm_guard_set("pages_to_scan", "64");
        ksm_guard_set("sleep_millisecs", "20");
        madvise(filler, FILLER * PAGE, MADV_MERGEABLE);
        ksm_guard_set("run", "1");
        uint64_t deadline = now_usec() + 300 * 1000000ULL;
        uint64_t s0 = wait_full_scans(ksm_read_counter("full_scans") + 12, deadline); /* filler old */
        for (int d = 0; d < DELAYS; d++)
                madvise(a[d], PAGE, MADV_MERGEABLE);
        uint64_t sb[DELAYS];
        for (int d = 0; d < DELAYS; d++) {
                sb[d] = wait_full_scans(s0 + (uint64_t) d, deadline);
                madvise(b[d], PAGE, MADV_MERGEABLE);
        }
        uint64_t end = wait_full_scans(sb[DELAYS - 1] + AFTER, deadline);
        int merged = 0;
        char missing[160] = "", reached[160] = "";
        for (int d = 0; d < DELAYS; d++) {
                snprintf(reached + strlen(reached), sizeof reached - strlen(reached), "%s%" PRIu64, d ? "," : "",
                         sb[d] - s0);
                uint64_t pfn = page_pfn(pm, a[d]);
                if (pfn && pfn == page_pfn(pm, b[d]))
                        merged++;
                else
                        snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " %" PRIu64,
                                 sb[d] - s0);
        }
        ksm_guard_set("run", "0");
        close(pm);
        if (end < sb[DELAYS - 1] + AFTER)
                report("0005", UNKNOWN, "only %" PRIu64 " full scans in 300 s", end - s0);
        else
                report("0005", merged == DELAYS ? PRESENT : ABSENT,
                       "%d/%d pairs merged %d scans after the last was made mergeable; delays reached %s%s%s",
                       merged, DELAYS, AFTER, reached, merged < DELAYS ? "; not merged at delays" : "", missing);
}

static atomic_bool writer_stop;
static uint64_t writer_max_usec;
static void *writer(void *arg) {
        (void) arg;
        while (!atomic_load(&writer_stop)) {
                uint64_t t0 = now_usec();
                void *p = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                uint64_t dt = now_usec() - t0;
                if (p != MAP_FAILED)
                        munmap(p, PAGE);
                if (dt > writer_max_usec)
                        writer_max_usec = dt;
                usleep(500);
        }
        return NULL;
}

#define THP "/sys/kernel/mm/transparent_hugepage/"

/* 0003 (guest only: changes khugepaged's knobs, restored on return only):
 * 20000 ineligible VMAs and a writer; the longest hold of our mm's mmap
 * lock by khugepaged, from its mmap_lock events' timestamps. */
static void check_khugepaged(void) {
        enum { NVMAS = 20000 };
        char old_sleep[32], old_pages[32], filter[128], path[256], line[1024];
        pid_t khp = find_kthread("khugepaged");
        if (khp < 0 || read_file(THP "khugepaged/scan_sleep_millisecs", old_sleep, sizeof old_sleep) < 0 ||
            read_file(THP "khugepaged/pages_to_scan", old_pages, sizeof old_pages) < 0 || instance_create() < 0) {
                report("0003", UNKNOWN, "no khugepaged, its knobs or a tracefs instance");
                return;
        }
        /* Alternating protections: neighbours cannot merge into one VMA. */
        char *base = mmap(NULL, 2 * NVMAS * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        for (size_t i = 0; base != MAP_FAILED && i < 2 * NVMAS; i += 2)
                mprotect(base + i * PAGE, PAGE, PROT_READ);
        char *huge = mmap(NULL, 8UL << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED || huge == MAP_FAILED || madvise(huge, 8UL << 20, MADV_HUGEPAGE) < 0) {
                report("0003", UNKNOWN, "cannot map: %m");
                return;
        }
        snprintf(filter, sizeof filter, "common_pid == %d", (int) khp);
        if (event_set("mmap_lock_acquire_returned", filter, true) < 0 || event_set("mmap_lock_released", filter, true) < 0) {
                report("0003", UNKNOWN, "no mmap_lock events");
                return;
        }
        write_file(THP "khugepaged/pages_to_scan", "4096");
        write_file(THP "khugepaged/scan_sleep_millisecs", "10");
        pthread_t th;
        atomic_store(&writer_stop, false);
        writer_max_usec = 0;
        pthread_create(&th, NULL, writer, NULL);
        sleep(15);
        atomic_store(&writer_stop, true);
        pthread_join(th, NULL);
        write_file(THP "khugepaged/scan_sleep_millisecs", old_sleep);
        write_file(THP "khugepaged/pages_to_scan", old_pages);
        event_set("mmap_lock_acquire_returned", NULL, false);
        event_set("mmap_lock_released", NULL, false);
        /* Longest acquire_returned(success=true) -> released span, any mm
         * (ours is the only one with many VMAs). */
        snprintf(path, sizeof path, "%s/trace", instance);
        FILE *f = fopen(path, "re");
        double t_acq = -1, longest = 0;
        long holds = 0;
        while (f && fgets(line, sizeof line, f)) {
                char *c = strstr(line, ": mmap_lock_");
                if (line[0] == '#' || !c)
                        continue;
                char *ts = c;
                while (ts > line && ts[-1] != ' ')
                        ts--;
                double t = strtod(ts, NULL);
                if (strstr(c, "acquire_returned") && strstr(c, "success=true"))
                        t_acq = t;
                else if (strstr(c, "released") && t_acq >= 0) {
                        if (t - t_acq > longest)
                                longest = t - t_acq;
                        holds++;
                        t_acq = -1;
                }
        }
        if (f)
                fclose(f);
        munmap(base, 2 * NVMAS * PAGE);
        munmap(huge, 8UL << 20);
        instance_remove();
        if (holds == 0)
                report("0003", UNKNOWN, "khugepaged never held the mmap lock in 15 s");
        else
                report("0003", UNKNOWN,
                       "khugepaged's longest mmap_lock hold %.1f ms over %ld holds; the writer's worst mmap() %" PRIu64
                       " us (%d ineligible VMAs; compare stock and patched)",
                       longest * 1000, holds, writer_max_usec, NVMAS);
}

int main(int argc, char **argv) {
        bool khugepaged = false;
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--expect=patched") == 0)
                        expect = PRESENT;
                else if (strcmp(argv[i], "--expect=stock") == 0)
                        expect = ABSENT;
                else if (strcmp(argv[i], "--khugepaged") == 0)
                        khugepaged = true;
                else {
                        fprintf(stderr, "usage: %s [--expect=patched|stock] [--khugepaged]\n", argv[0]);
                        return 2;
                }
        }
        /* No run=2: on a shared host that would unmerge every KSM page. */
        ksm_guard_acquire();
        check_process_ksm();
        check_remote_madvise();
        check_sparse_unmerge();
        check_ksmd_locking();
        check_pairs();
        if (khugepaged)
                check_khugepaged();
        else
                printf("0003  not checked (--khugepaged, guests only)\n");
        ksm_guard_restore();
        return mismatches ? 1 : 0;
}
