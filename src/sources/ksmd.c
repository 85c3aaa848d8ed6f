/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fileio.h"
#include "ksmd.h"
#include "procfs.h"
#include "util.h"

struct find_ctx {
        const Root *root;
        const char *comm;
        int found;
};

static int find_cb(int pid, void *userdata) {
        struct find_ctx *c = userdata;
        _cleanup_close_ int dfd = -EBADF;
        ProcStat st;

        if (root_open_pid_dir(c->root, pid, &dfd) < 0)
                return 0;
        if (procfs_read_stat(dfd, &st) < 0)
                return 0;
        if (proc_stat_is_kthread(&st) && strcmp(st.comm, c->comm) == 0) {
                c->found = pid;
                return -1; /* stop */
        }
        return 0;
}

int ksmd_find(const Root *root, int *ret_pid) {
        return kthread_find(root, "ksmd", ret_pid);
}

int kthread_find(const Root *root, const char *comm, int *ret_pid) {
        struct find_ctx c = { .root = root, .comm = comm };
        int r = procfs_for_each_pid(root, find_cb, &c);
        if (c.found > 0) {
                *ret_pid = c.found;
                return 0;
        }
        return r < 0 ? r : -ESRCH;
}

static int parse_state_from_stat(const char *buf, char *ret) {
        const char *close = strrchr(buf, ')');
        if (!close || close[1] != ' ' || !close[2])
                return -EINVAL;
        *ret = close[2];
        return 0;
}

int ksmd_read_sample(const Root *root, int pid, KsmdSample *ret) {
        _cleanup_close_ int dfd = -EBADF;
        _cleanup_free_ char *stat = NULL, *wchan = NULL;
        KsmdSample s = {};
        int r;

        r = root_open_pid_dir(root, pid, &dfd);
        if (r < 0)
                return r;
        r = read_full_file_at(dfd, "stat", 64 * 1024, &stat, NULL);
        if (r < 0)
                return r;
        r = parse_state_from_stat(stat, &s.state);
        if (r < 0)
                return r;
        if (root->ptrace_read) {
                char buf[sizeof s.wchan];
                int k = root->ptrace_read(root->ptrace_read_userdata, pid, 0, "wchan", buf, sizeof buf - 1);
                if (k >= 0) {
                        buf[k] = 0;
                        buf[strcspn(buf, "\n")] = 0;
                        strscpy(s.wchan, sizeof s.wchan, buf);
                }
        } else if (read_one_line_at(dfd, "wchan", &wchan) >= 0)
                strscpy(s.wchan, sizeof s.wchan, wchan);
        r = procfs_read_schedstat(dfd, &s.cpu_ns, NULL);
        if (r < 0)
                return r;
        *ret = s;
        return 0;
}

int ksmd_read_cpu_nsec(const Root *root, int pid, uint64_t *ret) {
        _cleanup_close_ int dfd = -EBADF;
        int r = root_open_pid_dir(root, pid, &dfd);
        if (r < 0)
                return r;
        return procfs_read_schedstat(dfd, ret, NULL);
}

struct KsmdSampler {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool stop, paused;
        uint64_t interval_usec;
        int stat_fd, wchan_fd;
        /* wchan through the injector once the daemon holds no CAP_SYS_PTRACE
         * (the kernel checks it at every read and prints 0 otherwise). */
        int pid;
        int (*ptrace_read)(void *userdata, int pid, uint64_t start_time_ticks, const char *name, char *buf,
                           size_t size);
        void *ptrace_read_userdata;
        KsmdWaitCounts counts;
};

static ssize_t pread_line(int fd, char *buf, size_t n) {
        ssize_t k = pread(fd, buf, n - 1, 0);
        if (k < 0)
                return -errno;
        buf[k] = 0;
        buf[strcspn(buf, "\n")] = 0;
        return k;
}

static void *sampler_main(void *arg) {
        KsmdSampler *s = arg;
        char stat[512], wchan[64];

        pthread_mutex_lock(&s->lock);
        while (!s->stop) {
                if (s->paused) {
                        pthread_cond_wait(&s->cond, &s->lock);
                        continue;
                }
                pthread_mutex_unlock(&s->lock);

                char state = 0;
                bool ok = pread_line(s->stat_fd, stat, sizeof stat) > 0 &&
                          parse_state_from_stat(stat, &state) >= 0;
                /* The wait channel tells only a D sample's kind
                 * (ksmd_classify_wait); R and S are classified by the state
                 * alone. Read it for those only: in the sandbox each read is
                 * a round trip to the privileged helper (ptrace_read), and
                 * at 50 samples a second of a ksmd that runs or sleeps that
                 * was most of the daemon's CPU beside booting TCG guests
                 * (perf, 6.18: sendmsg/recvmsg and the context switches of
                 * the round trip). */
                wchan[0] = 0;
                if (ok && state == 'D') {
                        if (s->ptrace_read) {
                                int k = s->ptrace_read(s->ptrace_read_userdata, s->pid, 0, "wchan", wchan,
                                                       sizeof wchan - 1);
                                wchan[MAX(k, 0)] = 0;
                                wchan[strcspn(wchan, "\n")] = 0;
                        } else if (pread_line(s->wchan_fd, wchan, sizeof wchan) < 0)
                                wchan[0] = 0;
                }

                pthread_mutex_lock(&s->lock);
                if (ok) {
                        s->counts.samples++;
                        s->counts.by_wait[ksmd_classify_wait(state, wchan)]++;
                }
                struct timespec until;
                clock_gettime(CLOCK_MONOTONIC, &until);
                uint64_t ns = (uint64_t) until.tv_nsec + s->interval_usec * NSEC_PER_USEC;
                until.tv_sec += (time_t) (ns / NSEC_PER_SEC);
                until.tv_nsec = (long) (ns % NSEC_PER_SEC);
                while (!s->stop && !s->paused &&
                       pthread_cond_timedwait(&s->cond, &s->lock, &until) != ETIMEDOUT)
                        ;
        }
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

/* Frees a sampler whose thread is not running: not started yet, or joined. */
static KsmdSampler *sampler_free(KsmdSampler *s) {
        if (!s)
                return NULL;
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->cond);
        safe_close(s->stat_fd);
        safe_close(s->wchan_fd);
        free(s);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(KsmdSampler *, sampler_free);

int ksmd_sampler_start(const Root *root, int ksmd_pid, uint64_t interval_usec, KsmdSampler **ret) {
        _cleanup_close_ int dfd = -EBADF;
        _cleanup_(sampler_freep) KsmdSampler *s = NULL;
        pthread_condattr_t ca;
        int r;

        r = root_open_pid_dir(root, ksmd_pid, &dfd);
        if (r < 0)
                return r;
        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&s->cond, &ca);
        pthread_condattr_destroy(&ca);
        s->interval_usec = MAX(interval_usec, 1000u);
        s->paused = true;
        s->pid = ksmd_pid;
        s->ptrace_read = root->ptrace_read;
        s->ptrace_read_userdata = root->ptrace_read_userdata;
        s->stat_fd = openat(dfd, "stat", O_RDONLY | O_CLOEXEC);
        s->wchan_fd = openat(dfd, "wchan", O_RDONLY | O_CLOEXEC);
        if (s->stat_fd < 0 || s->wchan_fd < 0)
                return negative_errno();
        r = -pthread_create(&s->thread, NULL, sampler_main, s);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

void ksmd_sampler_set_paused(KsmdSampler *s, bool paused) {
        if (!s)
                return;
        pthread_mutex_lock(&s->lock);
        s->paused = paused;
        pthread_cond_signal(&s->cond);
        pthread_mutex_unlock(&s->lock);
}

void ksmd_sampler_set_interval(KsmdSampler *s, uint64_t interval_usec) {
        if (!s)
                return;
        pthread_mutex_lock(&s->lock);
        s->interval_usec = MAX(interval_usec, 1000u);
        pthread_mutex_unlock(&s->lock);
}

void ksmd_sampler_take(KsmdSampler *s, KsmdWaitCounts *ret) {
        if (!s) {
                *ret = (KsmdWaitCounts) {};
                return;
        }
        pthread_mutex_lock(&s->lock);
        *ret = s->counts;
        s->counts = (KsmdWaitCounts) {};
        pthread_mutex_unlock(&s->lock);
}

KsmdSampler *ksmd_sampler_stop(KsmdSampler *s) {
        if (!s)
                return NULL;
        pthread_mutex_lock(&s->lock);
        s->stop = true;
        pthread_cond_signal(&s->cond);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
        return sampler_free(s);
}
