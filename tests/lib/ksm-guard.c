/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ksm-guard.h"

#define KSM_DIR "/sys/kernel/mm/ksm"

/* Knobs in the order they are put back: advisor off first (it makes
 * pages_to_scan refuse writes), run last. */
static const char *const knob_order[] = {
        "pages_to_scan", "sleep_millisecs", "smart_scan", "use_zero_pages", "max_page_sharing",
        "stable_node_chains_prune_millisecs", "advisor_max_cpu", "advisor_min_pages_to_scan",
        "advisor_max_pages_to_scan", "advisor_target_scan_time", "advisor_mode", "merge_across_nodes",
        "run",
};
#define N_KNOBS (sizeof knob_order / sizeof knob_order[0])

static char saved[N_KNOBS][64];
static bool have_saved[N_KNOBS];
static bool active;
static int lock_fd = -1;
static pid_t children[64];
static size_t n_children;

static int read_knob(const char *name, char *buf, size_t n) {
        char path[256];
        snprintf(path, sizeof path, KSM_DIR "/%s", name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t k = read(fd, buf, n - 1);
        close(fd);
        if (k < 0)
                return -errno;
        buf[k] = 0;
        buf[strcspn(buf, "\n")] = 0;
        /* advisor_mode reads "[none] scan-time": keep the bracketed word. */
        char *o = strchr(buf, '['), *c = o ? strchr(o, ']') : NULL;
        if (o && c) {
                memmove(buf, o + 1, (size_t) (c - o - 1));
                buf[c - o - 1] = 0;
        }
        return 0;
}

static int write_knob(const char *name, const char *value) {
        char path[256];
        snprintf(path, sizeof path, KSM_DIR "/%s", name);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t k = write(fd, value, strlen(value));
        int e = k < 0 ? -errno : 0;
        close(fd);
        return e;
}

void ksm_guard_track_child(pid_t pid) {
        if (n_children < sizeof children / sizeof children[0])
                children[n_children++] = pid;
}

void ksm_guard_untrack_child(pid_t pid) {
        for (size_t i = 0; i < n_children; i++)
                if (children[i] == pid) {
                        children[i] = children[--n_children];
                        return;
                }
}

static uint64_t mono_usec(void);

/* Pages of test processes that merged and exited stay in KSM's stable tree
 * while run=0: ksmd frees an exited mm's rmap_items only when its scan
 * reaches that mm, so pages_shared stays > 0, and while it does the kernel
 * refuses max_page_sharing and merge_across_nodes writes with EBUSY (seen on
 * 6.18: the next test's first knob write failed). Let ksmd run until they
 * are gone (or two full passes went by, for pages that belong to someone
 * else), at most 5 s. */
static void settle_stale_pages(void) {
        char buf[64];
        if (read_knob("pages_shared", buf, sizeof buf) < 0 || strcmp(buf, "0") == 0)
                return;
        uint64_t f0 = ksm_read_counter("full_scans"), start = mono_usec();
        if (write_knob("run", "1") < 0)
                return;
        while (mono_usec() - start < 5000000) {
                struct timespec ts = { 0, 20 * 1000 * 1000 };
                if (read_knob("pages_shared", buf, sizeof buf) == 0 && strcmp(buf, "0") == 0)
                        break;
                if (ksm_read_counter("full_scans") >= f0 + 2)
                        break;
                nanosleep(&ts, NULL);
        }
        (void) write_knob("run", "0");
}

void ksm_guard_restore(void) {
        if (!active)
                return;
        /* Async-signal-safe enough: only open/read/write/kill/waitpid/nanosleep. */
        for (size_t i = 0; i < n_children; i++) {
                kill(children[i], SIGKILL);
                waitpid(children[i], NULL, 0);
        }
        n_children = 0;
        (void) write_knob("advisor_mode", "none");
        settle_stale_pages();
        for (size_t i = 0; i < N_KNOBS; i++)
                if (have_saved[i]) {
                        char now[64];
                        if (read_knob(knob_order[i], now, sizeof now) == 0 && strcmp(now, saved[i]) == 0)
                                continue;
                        (void) write_knob(knob_order[i], saved[i]);
                }

}

static void on_fatal(int sig) {
        ksm_guard_restore();
        signal(sig, SIG_DFL);
        raise(sig);
}

void ksm_guard_acquire(void) {
        const char *lock = getenv("KSMTUNED2_TEST_LOCK");
        char buf[64];

        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: kernel tests need root\n");
                exit(77);
        }
        if (access(KSM_DIR "/run", W_OK) < 0) {
                fprintf(stderr, "SKIP: no writable " KSM_DIR "\n");
                exit(77);
        }
        lock_fd = open(lock ? lock : "/run/ksmtuned2-ksm-tests.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (lock_fd < 0 || flock(lock_fd, LOCK_EX) < 0) {
                fprintf(stderr, "cannot take the KSM test lock: %s\n", strerror(errno));
                exit(1);
        }
        for (size_t i = 0; i < N_KNOBS; i++)
                have_saved[i] = read_knob(knob_order[i], saved[i], sizeof saved[i]) == 0;
        /* A test left behind by a crash that could not restore must not make
         * us save a wild value as "original". */
        if (have_saved[N_KNOBS - 1] && strcmp(saved[N_KNOBS - 1], "2") == 0)
                strcpy(saved[N_KNOBS - 1], "0");
        active = true;
        atexit(ksm_guard_restore);
        int sigs[] = { SIGINT, SIGTERM, SIGALRM, SIGABRT, SIGSEGV, SIGBUS, SIGHUP };
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
                signal(sigs[i], on_fatal);
        (void) buf;
}

void ksm_guard_set(const char *knob, const char *value) {
        int r = write_knob(knob, value);
        if (r < 0) {
                fprintf(stderr, "cannot set %s=%s: %s\n", knob, value, strerror(-r));
                abort();
        }
}

uint64_t ksm_read_counter(const char *name) {
        char buf[64];
        if (read_knob(name, buf, sizeof buf) < 0)
                return UINT64_MAX;
        return strtoull(buf, NULL, 10);
}

uint64_t ksm_process_merging_pages(pid_t pid) {
        char path[64], buf[64];
        snprintf(path, sizeof path, "/proc/%d/ksm_merging_pages", (int) pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return UINT64_MAX;
        ssize_t k = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (k <= 0)
                return UINT64_MAX;
        buf[k] = 0;
        return strtoull(buf, NULL, 10);
}

static uint64_t mono_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

uint64_t ksm_wait_merging(pid_t pid, uint64_t want, uint64_t timeout_usec) {
        uint64_t start = mono_usec();
        for (;;) {
                uint64_t v = ksm_process_merging_pages(pid);
                uint64_t now = mono_usec();
                if (v != UINT64_MAX && v >= want)
                        return now - start > 0 ? now - start : 1;
                if (v == UINT64_MAX || now - start > timeout_usec)
                        return 0;
                usleep(10000);
        }
}
