/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "mm-reader.h"
#include "util.h"

typedef struct Job {
        MmReadKind kind;
        int pid;
        uint64_t start_time_ticks;
        uint64_t started_usec;          /* CLOCK_MONOTONIC when a worker took it; 0 while queued */
        bool overdue_reported;
        MmReadResult result;
        struct Job *next;
} Job;

/* The state shared with the workers lives in its own refcounted block: a
 * worker stuck in the kernel may return long after the loop freed its
 * MmReader, and must still find its mutex. */
typedef struct Shared {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        unsigned refs;
        int proc_fd;                    /* our own dup: Root may be gone before a stuck worker */
        int efd;
        Job *queue_head, *queue_tail;   /* waiting */
        Job *running;                   /* taken by a worker */
        Job *done;                      /* finished, for the loop */
        unsigned n_threads, n_idle, n_queued, max_threads;
        unsigned n_stuck;               /* running past their deadline, as of the last dispatch */
        unsigned n_starting;            /* created, not yet waiting for work */
        uint64_t deadline_usec;
        bool stopping;
        MmReaderCounters counters;
} Shared;

struct MmReader {
        Shared *s;
        sd_event_source *efd_source;
        sd_event_source *timer_source;
        MmReadHandler cb;
        void *userdata;
};

static void job_list_free(Job *j) {
        while (j) {
                Job *n = j->next;
                mm_read_result_done(&j->result);
                free(j);
                j = n;
        }
}

/* Called with s->lock held; unlocks it, and frees s when the last
 * reference is gone. */
static void shared_unref_unlock(Shared *s) {
        bool last = --s->refs == 0;
        pthread_mutex_unlock(&s->lock);
        if (!last)
                return;
        job_list_free(s->queue_head);
        job_list_free(s->running);
        job_list_free(s->done);
        safe_close(s->proc_fd);
        safe_close(s->efd);
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->cond);
        free(s);
}

static void do_read(int proc_fd, Job *j) {
        char name[32];
        ProcStat st;
        _cleanup_close_ int dfd = -EBADF;
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        int r;

        j->result.kind = j->kind;
        j->result.pid = j->pid;
        j->result.start_time_ticks = j->start_time_ticks;
        snprintf(name, sizeof name, "%d", j->pid);
        dfd = openat(proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                r = errno == ENOENT ? -ESRCH : negative_errno();
        else {
                /* stat does not take the mmap_lock: check the incarnation first. */
                r = procfs_read_stat(dfd, &st);
                if (r >= 0 && st.start_time_ticks != j->start_time_ticks)
                        r = -ESRCH;
                if (r >= 0)
                        switch (j->kind) {
                        case MM_READ_CMDLINE:
                                r = procfs_read_cmdline(dfd, &j->result.cmdline);
                                break;
                        case MM_READ_MAPS:
                                r = proc_maps_read(dfd, &j->result.maps);
                                break;
                        case MM_READ_SMAPS_MERGEABLE:
                                r = proc_smaps_read_mergeable(dfd, &j->result.maps);
                                break;
                        default:
                                r = procfs_read_ksm_stat(dfd, &j->result.ksm_stat);
                        }
                if (r == -ENOENT)
                        r = -ESRCH;
        }
        j->result.error = r;
        j->result.duration_usec = now_usec(CLOCK_MONOTONIC) - t0;
}

static void unlink_running(Shared *s, Job *j) {
        for (Job **p = &s->running; *p; p = &(*p)->next)
                if (*p == j) {
                        *p = j->next;
                        j->next = NULL;
                        return;
                }
}

static void *worker(void *arg) {
        Shared *s = arg;

        pthread_mutex_lock(&s->lock);
        s->n_starting--;
        for (;;) {
                while (!s->queue_head && !s->stopping) {
                        s->n_idle++;
                        pthread_cond_wait(&s->cond, &s->lock);
                        s->n_idle--;
                }
                if (s->stopping)
                        break;
                Job *j = s->queue_head;
                s->queue_head = j->next;
                if (!s->queue_head)
                        s->queue_tail = NULL;
                s->n_queued--;
                j->started_usec = now_usec(CLOCK_MONOTONIC);
                j->next = s->running;
                s->running = j;
                int proc_fd = s->proc_fd;
                pthread_mutex_unlock(&s->lock);

                do_read(proc_fd, j);

                pthread_mutex_lock(&s->lock);
                unlink_running(s, j);
                j->result.late = j->overdue_reported;
                j->next = s->done;
                s->done = j;
                uint64_t one = 1;
                (void) !write(s->efd, &one, sizeof one);
                /* A replacement took over while this one was stuck: the
                 * pool shrinks back once the kernel let it go. */
                if (j->result.late && s->n_threads - MIN(s->n_stuck, s->n_threads) > s->max_threads)
                        break;
        }
        s->n_threads--;
        shared_unref_unlock(s);
        return NULL;
}

/* With s->lock held: does a queued read lack a worker that will take it? */
static bool need_worker(const Shared *s) {
        unsigned live = s->n_threads - MIN(s->n_stuck, s->n_threads);
        return s->n_queued > s->n_idle + s->n_starting && live < s->max_threads &&
               s->n_threads < s->max_threads * MM_READER_MAX_THREADS_FACTOR;
}

/* With s->lock held. */
static int spawn_worker(Shared *s) {
        pthread_attr_t attr;
        pthread_t t;
        int r;

        if (pthread_attr_init(&attr) != 0)
                return -ENOMEM;
        (void) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        /* A read of one small file needs little stack. */
        (void) pthread_attr_setstacksize(&attr, 256 * 1024);
        s->refs++;
        r = pthread_create(&t, &attr, worker, s);
        pthread_attr_destroy(&attr);
        if (r != 0) {
                s->refs--;
                return -r;
        }
        (void) pthread_setname_np(t, "ksmtuned2-mm");
        s->n_threads++;
        s->n_starting++;
        s->counters.threads++;
        return 0;
}

static void arm_timer(MmReader *r) {
        if (!r->timer_source)
                return;
        pthread_mutex_lock(&r->s->lock);
        bool pending = r->s->running || r->s->queue_head;
        pthread_mutex_unlock(&r->s->lock);
        if (!pending)
                return;
        (void) sd_event_source_set_time_relative(r->timer_source, MAX(r->s->deadline_usec / 2, 5 * USEC_PER_MSEC));
        (void) sd_event_source_set_enabled(r->timer_source, SD_EVENT_ONESHOT);
}

static int on_efd(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        (void) mm_reader_dispatch(userdata);
        return 0;
}

static int on_timer(sd_event_source *es, uint64_t usec, void *userdata) {
        (void) mm_reader_dispatch(userdata);
        return 0;
}

int mm_reader_new(const Root *root, sd_event *e, unsigned max_threads, uint64_t deadline_usec,
                  MmReadHandler cb, void *userdata, MmReader **ret) {
        _cleanup_(mm_reader_freep) MmReader *r = NULL;
        Shared *s;
        int k;

        r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;
        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        r->s = s;
        r->cb = cb;
        r->userdata = userdata;
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->cond, NULL);
        s->refs = 1;
        s->max_threads = MAX(max_threads, 1u);
        s->deadline_usec = deadline_usec;
        s->efd = -EBADF;
        /* Each checked at once: the second call may clobber the first's errno. */
        s->proc_fd = fcntl(root->proc_fd, F_DUPFD_CLOEXEC, 3);
        if (s->proc_fd < 0)
                return negative_errno();
        s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->efd < 0)
                return negative_errno();
        if (e) {
                k = sd_event_add_io(e, &r->efd_source, s->efd, EPOLLIN, on_efd, r);
                if (k < 0)
                        return k;
                /* a tenth of the deadline, not sd-event's default 250 ms */
                k = sd_event_add_time_relative(e, &r->timer_source, CLOCK_MONOTONIC, deadline_usec,
                                               MAX(deadline_usec / 10, (uint64_t) USEC_PER_MSEC), on_timer, r);
                if (k < 0)
                        return k;
                (void) sd_event_source_set_enabled(r->timer_source, SD_EVENT_OFF);
        }
        *ret = TAKE_PTR(r);
        return 0;
}

MmReader *mm_reader_free(MmReader *r) {
        if (!r)
                return NULL;
        sd_event_source_disable_unref(r->efd_source);
        sd_event_source_disable_unref(r->timer_source);
        if (r->s) {
                pthread_mutex_lock(&r->s->lock);
                r->s->stopping = true;
                pthread_cond_broadcast(&r->s->cond);
                /* Idle workers exit now; stuck ones when the kernel lets
                 * them go. Whoever is last frees the shared block. */
                shared_unref_unlock(r->s);
        }
        free(r);
        return NULL;
}

/* kind -1: any */
static bool busy_locked(const Shared *s, int pid, int kind) {
        for (const Job *j = s->queue_head; j; j = j->next)
                if (j->pid == pid && (kind < 0 || (int) j->kind == kind))
                        return true;
        for (const Job *j = s->running; j; j = j->next)
                if (j->pid == pid && (kind < 0 || (int) j->kind == kind))
                        return true;
        return false;
}

bool mm_reader_busy(const MmReader *r, int pid) {
        pthread_mutex_lock(&r->s->lock);
        bool b = busy_locked(r->s, pid, -1);
        pthread_mutex_unlock(&r->s->lock);
        return b;
}

/* Queues a read; *ret_job (may be NULL) stays valid until the job is
 * taken off the done list. */
static int queue_job(MmReader *r, MmReadKind kind, int pid, uint64_t start_time_ticks, Job **ret_job) {
        Shared *s = r->s;
        int k = 0;

        pthread_mutex_lock(&s->lock);
        if (busy_locked(s, pid, (int) kind)) {
                pthread_mutex_unlock(&s->lock);
                return -EALREADY;
        }
        Job *j = calloc(1, sizeof *j);
        if (!j) {
                pthread_mutex_unlock(&s->lock);
                return -ENOMEM;
        }
        j->kind = kind;
        j->pid = pid;
        j->start_time_ticks = start_time_ticks;
        if (s->queue_tail)
                s->queue_tail->next = j;
        else
                s->queue_head = j;
        s->queue_tail = j;
        s->n_queued++;
        s->counters.queued++;
        /* Every queued read needs a worker that is not stuck: a stuck one
         * counts neither as idle nor as coming back soon. */
        if (need_worker(s))
                k = spawn_worker(s);
        /* Workers change n_threads under the lock as they exit. */
        bool no_worker = k < 0 && s->n_threads == 0;
        pthread_cond_signal(&s->cond);
        pthread_mutex_unlock(&s->lock);
        if (no_worker)
                log_debug_errno(k, "Cannot start an mm reader thread: %m");
        if (ret_job)
                *ret_job = j;
        arm_timer(r);
        return 0;
}

int mm_reader_queue(MmReader *r, MmReadKind kind, int pid, uint64_t start_time_ticks) {
        return queue_job(r, kind, pid, start_time_ticks, NULL);
}

/* With s->lock held: counts the workers inside a read past its deadline,
 * which need_worker() does not count as live. */
static void count_stuck_locked(Shared *s, uint64_t now) {
        s->counters.stuck_now = 0;
        for (Job *j = s->running; j; j = j->next)
                if (j->overdue_reported || now - j->started_usec >= s->deadline_usec)
                        s->counters.stuck_now++;
        s->n_stuck = (unsigned) s->counters.stuck_now;
}

int mm_reader_dispatch(MmReader *r) {
        Shared *s = r->s;
        Job *done, *overdue = NULL;
        uint64_t now, buf;
        int n = 0;

        (void) !read(s->efd, &buf, sizeof buf);

        pthread_mutex_lock(&s->lock);
        /* Read the clock under the lock: a worker stamps started_usec
         * under it too, so no job can look as if it started in the future. */
        now = now_usec(CLOCK_MONOTONIC);
        done = s->done;
        s->done = NULL;
        for (Job *j = done; j; j = j->next)
                s->counters.completed++;
        count_stuck_locked(s, now);
        for (Job *j = s->running; j; j = j->next) {
                if (now - j->started_usec < s->deadline_usec)
                        continue;
                if (j->overdue_reported)
                        continue;
                j->overdue_reported = true;
                s->counters.overran++;
                Job *o = calloc(1, sizeof *o);
                if (!o)
                        continue;
                o->result = (MmReadResult) { .kind = j->kind, .pid = j->pid, .start_time_ticks = j->start_time_ticks,
                                             .error = -ETIME, .duration_usec = now - j->started_usec };
                o->next = overdue;
                overdue = o;
        }
        s->counters.queue_len = s->n_queued;
        /* Reads waiting behind stuck workers get fresh ones. */
        while (need_worker(s))
                if (spawn_worker(s) < 0)
                        break;
        pthread_mutex_unlock(&s->lock);

        for (Job *j = overdue; j; j = j->next, n++)
                if (r->cb)
                        r->cb(&j->result, r->userdata);
        job_list_free(overdue);
        for (Job *j = done; j; j = j->next, n++)
                if (r->cb)
                        r->cb(&j->result, r->userdata); /* may take result.cmdline */
        job_list_free(done);
        arm_timer(r);
        return n;
}

void mm_reader_get_counters(MmReader *r, MmReaderCounters *ret) {
        pthread_mutex_lock(&r->s->lock);
        *ret = r->s->counters;
        ret->queue_len = r->s->n_queued;
        pthread_mutex_unlock(&r->s->lock);
}

/* With s->lock held: takes j off the queue if no worker took it yet. */
static bool unqueue_locked(Shared *s, Job *j) {
        Job *prev = NULL;
        for (Job *q = s->queue_head; q; prev = q, q = q->next) {
                if (q != j)
                        continue;
                if (prev)
                        prev->next = q->next;
                else
                        s->queue_head = q->next;
                if (s->queue_tail == q)
                        s->queue_tail = prev;
                s->n_queued--;
                return true;
        }
        return false;
}

int mm_reader_read(MmReader *r, MmReadKind kind, int pid, uint64_t start_time_ticks, MmReadResult *ret) {
        Shared *s = r->s;
        uint64_t t0 = now_usec(CLOCK_MONOTONIC), buf;
        Job *j;
        int k;

        k = queue_job(r, kind, pid, start_time_ticks, &j);
        if (k < 0)
                return k;
        for (;;) {
                Job *late = NULL, *mine = NULL;

                pthread_mutex_lock(&s->lock);
                /* Ours, or reads given up on earlier that came back at last
                 * (nobody waits for those any more). */
                for (Job *d = s->done, *n; d; d = n) {
                        n = d->next;
                        s->counters.completed++;
                        if (d == j)
                                mine = d;
                        else {
                                d->next = late;
                                late = d;
                        }
                }
                s->done = NULL;
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                count_stuck_locked(s, now);
                bool expired = !mine && now - t0 >= s->deadline_usec, started = true;
                if (expired) {
                        s->counters.overran++;
                        if (unqueue_locked(s, j)) {
                                free(j);        /* never started: every worker is stuck on others */
                                started = false;
                        } else if (!j->overdue_reported) {
                                j->overdue_reported = true;
                                count_stuck_locked(s, now);
                        }
                }
                pthread_mutex_unlock(&s->lock);
                job_list_free(late);

                if (mine) {
                        *ret = mine->result;
                        mine->result = (MmReadResult) {};
                        free(mine);
                        return 0;
                }
                if (expired) {
                        *ret = (MmReadResult) { .kind = kind, .pid = pid, .start_time_ticks = start_time_ticks,
                                                .error = started ? -ETIME : -EAGAIN, .duration_usec = now - t0 };
                        return 0;
                }
                uint64_t left = s->deadline_usec - (now - t0);
                struct pollfd p = { .fd = s->efd, .events = POLLIN };
                (void) poll(&p, 1, (int) MAX((left + USEC_PER_MSEC - 1) / USEC_PER_MSEC, (uint64_t) 1));
                (void) !read(s->efd, &buf, sizeof buf);
        }
}

void mm_read_result_done(MmReadResult *r) {
        free(r->cmdline);
        r->cmdline = NULL;
        map_list_done(&r->maps);
}
