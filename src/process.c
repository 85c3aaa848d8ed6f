/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroupfs.h"
#include "process.h"
#include "util.h"

const char *verdict_action_to_string(VerdictAction a) {
        static const char *const names[_VERDICT_ACTION_MAX] = {
                [VERDICT_LEAVE_ALONE] = "leave-alone",
                [VERDICT_MERGE] = "merge",
                [VERDICT_WAIT] = "wait",
                [VERDICT_DONT_MERGE] = "dont-merge",
        };
        return (unsigned) a < _VERDICT_ACTION_MAX ? names[a] : "?";
}

const char *verdict_refuses_change(const Verdict *v) {
        if (v->action == VERDICT_LEAVE_ALONE || v->method == MERGE_METHOD_NONE)
                return "its policy does not let the daemon change it";
        return NULL;
}

const char *verdict_refuses_controller(const Verdict *v, bool enable) {
        const char *why = verdict_refuses_change(v);
        if (why)
                return why;
        if (enable && v->action != VERDICT_MERGE)
                return v->action == VERDICT_DONT_MERGE ? "its policy says Mode=never now"
                                                       : "its policy does not want merging yet";
        if (!enable && v->always)
                return "its policy says Mode=always";
        if (!enable && v->action == VERDICT_DONT_MERGE)
                return "its policy keeps merging off already";
        return NULL;
}

int process_merging_enabled(const Process *p) {
        if (!p->ksm_stat_valid)
                return -1;
        return p->ksm_stat.merge_any == 1 || p->ksm_stat.mergeable == 1;
}

void process_forget_exec_state(Process *p) {
        p->cmdline = (free(p->cmdline), NULL);
        p->cmdline_read = false;
        p->ksm_stat_valid = false;
        p->ksm_stat = (ProcKsmStat) {};
        p->action_planned_usec = 0;
}

void process_done(Process *p) {
        free(p->cmdline);
        free(p->exe);
        free(p->cgroup);
        free(p->unit);
        free(p->vm_name);
        *p = (Process) {};
}

static int read_exe(int pid_dirfd, char **ret) {
        char buf[PATH_MAX];
        ssize_t n = readlinkat(pid_dirfd, "exe", buf, sizeof buf - 1);
        if (n < 0)
                return negative_errno();
        buf[n] = 0;
        /* A daemon still running a binary that a package upgrade replaced
         * reads "/usr/sbin/foo (deleted)"; Exe=/usr/sbin/foo must still
         * match it. */
        procfs_strip_deleted(buf);
        char *s = strdup(buf);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int read_cgroup(int pid_dirfd, char **ret) {
        _cleanup_free_ char *text = NULL;
        int r = procfs_read_pid_file(pid_dirfd, "cgroup", 64 * 1024, &text);
        if (r < 0)
                return r;
        return cgroup_parse_proc_path(text, ret);
}

/* The pid's directory and stat; -ESRCH once it is gone. A zombie is gone
 * for our purposes, and must not enter the model: its reaping sends no
 * event, so it would stay until a resync. A zombie leader whose other
 * threads still run is a live process. */
static int open_live_pid(const Root *root, int pid, int *ret_dirfd, ProcStat *ret_stat) {
        _cleanup_close_ int dfd = -EBADF;
        ProcStat st;
        int r;

        r = root_open_pid_dir(root, pid, &dfd);
        if (r < 0)
                return r;
        r = procfs_read_stat(dfd, &st);
        if (r < 0)
                return r;
        if (st.state == 'X' || (st.state == 'Z' && st.num_threads <= 1))
                return -ESRCH;
        *ret_dirfd = TAKE_FD(dfd);
        *ret_stat = st;
        return 0;
}

/* The cgroup and the unit and VM it names; all NULL when cgroup cannot be
 * read for a reason other than the process being gone. */
static int read_placement(int pid_dirfd, char **ret_cgroup, char **ret_unit, char **ret_vm) {
        _cleanup_free_ char *cg = NULL, *unit = NULL, *vm = NULL;
        int r = read_cgroup(pid_dirfd, &cg);
        if (r == -ENOMEM || r == -ESRCH)
                return r;
        if (cg && (cgroup_path_get_unit(cg, &unit) < 0 || cgroup_path_get_machine(cg, &vm) < 0))
                return -ENOMEM;
        *ret_cgroup = TAKE_PTR(cg);
        *ret_unit = TAKE_PTR(unit);
        *ret_vm = TAKE_PTR(vm);
        return 0;
}

/* A new incarnation of the pid (or a fresh entry) starts from scratch. */
static void process_reset(Process *p, int pid) {
        uint64_t discovered = p->pid == pid ? p->discovered_usec : 0, gen = p->generation;
        process_done(p);
        p->pid = pid;
        p->discovered_usec = discovered;
        p->generation = gen;
}

static void set_stat_facts(Process *p, const ProcStat *st) {
        long hz = sysconf(_SC_CLK_TCK);
        p->start_time_ticks = st->start_time_ticks;
        p->start_time_usec = st->start_time_ticks * USEC_PER_SEC / (uint64_t) (hz > 0 ? hz : 100);
        p->ppid = st->ppid;
        strscpy(p->comm, sizeof p->comm, st->comm);
        p->kthread = proc_stat_is_kthread(st);
        p->zombie_leader = st->state == 'Z';
}

static void set_facts_read(Process *p) {
        p->facts_usec = now_usec(CLOCK_MONOTONIC);
        if (!p->discovered_usec)
                p->discovered_usec = p->facts_usec;
}

int process_read_facts(const Root *root, int pid, Process *p) {
        _cleanup_close_ int dfd = -EBADF;
        _cleanup_free_ char *exe = NULL, *cg = NULL, *unit = NULL, *vm = NULL;
        ProcStat st;
        ProcStatus status = {};
        int r;

        r = open_live_pid(root, pid, &dfd, &st);
        if (r < 0)
                return r;
        bool kthread = proc_stat_is_kthread(&st);
        if (!kthread) {
                /* Without status there is no uid: better unknown than root. */
                r = procfs_read_status(dfd, &status);
                if (r < 0)
                        return r;
                r = read_exe(dfd, &exe);
                if (r == -ENOMEM)
                        return r;
        } else {
                status.ppid = st.ppid;
                status.threads = (unsigned) MAX(st.num_threads, 0);
        }
        r = read_placement(dfd, &cg, &unit, &vm);
        if (r < 0)
                return r;

        bool same = p->pid == pid && p->start_time_ticks == st.start_time_ticks && p->facts_usec > 0;
        if (!same)
                process_reset(p, pid);
        /* Polling sees no exec event: a new executable or name on the same
         * incarnation means one happened. */
        if (same && ((p->exe && exe && !streq(p->exe, exe)) || !streq(p->comm, st.comm)))
                process_forget_exec_state(p);
        set_stat_facts(p, &st);
        p->uid = status.uid_real;
        p->euid = status.uid_effective;
        p->rss_anon_kib = status.rss_anon_kib;
        p->threads = status.threads ? status.threads : (unsigned) MAX(st.num_threads, 0);
        p->tracer_pid = status.tracer_pid;
        free(p->exe), p->exe = TAKE_PTR(exe);
        free(p->cgroup), p->cgroup = TAKE_PTR(cg);
        free(p->unit), p->unit = TAKE_PTR(unit);
        free(p->vm_name), p->vm_name = TAKE_PTR(vm);

        uint64_t merging;
        if (!kthread && procfs_read_ksm_merging_pages(dfd, &merging) >= 0)
                p->ksm_merging_pages = merging;

        set_facts_read(p);
        return 0;
}

static char *strdup_or_null(const char *s, bool *oom) {
        if (!s)
                return NULL;
        char *c = strdup(s);
        if (!c)
                *oom = true;
        return c;
}

int process_read_forked(const Root *root, int pid, const Process *parent, Process *p) {
        _cleanup_close_ int dfd = -EBADF;
        _cleanup_free_ char *cg = NULL, *unit = NULL, *vm = NULL;
        ProcStat st;
        bool oom = false;
        int r;

        r = open_live_pid(root, pid, &dfd, &st);
        if (r < 0)
                return r;
        r = read_placement(dfd, &cg, &unit, &vm);
        if (r < 0)
                return r;

        process_reset(p, pid);
        set_stat_facts(p, &st);
        p->threads = (unsigned) MAX(st.num_threads, 1);
        p->uid = parent->uid;
        p->euid = parent->euid;
        p->rss_anon_kib = parent->rss_anon_kib;
        p->exe = strdup_or_null(parent->exe, &oom);
        p->cmdline = strdup_or_null(parent->cmdline, &oom);
        p->cmdline_read = parent->cmdline_read;
        p->cgroup = TAKE_PTR(cg);
        p->unit = TAKE_PTR(unit);
        p->vm_name = TAKE_PTR(vm);
        if (oom)
                return -ENOMEM;
        set_facts_read(p);
        return 0;
}

/* Open addressing with linear probing and tombstones: removal never moves
 * an entry, so removing while iterating is safe. */
#define TOMBSTONE ((Process *) (uintptr_t) 1)

struct ProcessTable {
        Process **slots;
        size_t n_slots;         /* power of two */
        size_t n_used;          /* live entries */
        size_t n_tombstones;
};

int process_table_new(ProcessTable **ret) {
        ProcessTable *t = calloc(1, sizeof *t);
        if (!t)
                return -ENOMEM;
        t->n_slots = 1024;
        t->slots = calloc(t->n_slots, sizeof *t->slots);
        if (!t->slots) {
                free(t);
                return -ENOMEM;
        }
        *ret = t;
        return 0;
}

ProcessTable *process_table_free(ProcessTable *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_slots; i++)
                if (t->slots[i] && t->slots[i] != TOMBSTONE) {
                        process_done(t->slots[i]);
                        free(t->slots[i]);
                }
        free(t->slots);
        free(t);
        return NULL;
}

size_t process_table_size(const ProcessTable *t) {
        return t->n_used;
}

static size_t slot_of(const ProcessTable *t, int pid) {
        /* Fibonacci hashing: pids are dense and sequential. */
        return (size_t) (((uint64_t) (unsigned) pid * UINT64_C(11400714819323198485)) >> 32) & (t->n_slots - 1);
}

Process *process_table_get(const ProcessTable *t, int pid) {
        for (size_t i = slot_of(t, pid), n = 0; n < t->n_slots; i = (i + 1) & (t->n_slots - 1), n++) {
                Process *p = t->slots[i];
                if (!p)
                        return NULL;
                if (p != TOMBSTONE && p->pid == pid)
                        return p;
        }
        return NULL;
}

static void insert_slot(ProcessTable *t, Process *p) {
        size_t i = slot_of(t, p->pid);
        while (t->slots[i] && t->slots[i] != TOMBSTONE)
                i = (i + 1) & (t->n_slots - 1);
        if (t->slots[i] == TOMBSTONE)
                t->n_tombstones--;
        t->slots[i] = p;
}

static int rehash(ProcessTable *t, size_t n_slots) {
        Process **old = t->slots;
        size_t n_old = t->n_slots;
        Process **slots = calloc(n_slots, sizeof *slots);
        if (!slots)
                return -ENOMEM;
        t->slots = slots;
        t->n_slots = n_slots;
        t->n_tombstones = 0;
        for (size_t i = 0; i < n_old; i++)
                if (old[i] && old[i] != TOMBSTONE)
                        insert_slot(t, old[i]);
        free(old);
        return 0;
}

int process_table_ensure(ProcessTable *t, int pid, Process **ret, bool *ret_created) {
        Process *p = process_table_get(t, pid);
        if (p) {
                *ret = p;
                if (ret_created)
                        *ret_created = false;
                return 0;
        }
        /* Keep the load (tombstones included) under 70%. */
        if ((t->n_used + t->n_tombstones + 1) * 10 > t->n_slots * 7) {
                size_t n = t->n_slots;
                while ((t->n_used + 1) * 10 > n * 5)
                        n *= 2;
                int r = rehash(t, n);
                if (r < 0)
                        return r;
        }
        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        p->pid = pid;
        insert_slot(t, p);
        t->n_used++;
        *ret = p;
        if (ret_created)
                *ret_created = true;
        return 0;
}

bool process_table_remove(ProcessTable *t, int pid) {
        for (size_t i = slot_of(t, pid), n = 0; n < t->n_slots; i = (i + 1) & (t->n_slots - 1), n++) {
                Process *p = t->slots[i];
                if (!p)
                        return false;
                if (p != TOMBSTONE && p->pid == pid) {
                        process_done(p);
                        free(p);
                        t->slots[i] = TOMBSTONE;
                        t->n_tombstones++;
                        t->n_used--;
                        return true;
                }
        }
        return false;
}

Process *process_table_next(const ProcessTable *t, size_t *iter) {
        for (; *iter < t->n_slots; (*iter)++) {
                Process *p = t->slots[*iter];
                if (p && p != TOMBSTONE) {
                        (*iter)++;
                        return p;
                }
        }
        return NULL;
}
