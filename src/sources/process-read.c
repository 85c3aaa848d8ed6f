/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroupfs.h"
#include "process-read.h"
#include "procfs.h"
#include "util.h"

static int read_exe(const Root *root, int pid, uint64_t start_time_ticks, int pid_dirfd, char **ret) {
        char buf[PATH_MAX];
        ssize_t n;
        if (root->ptrace_read)
                n = root->ptrace_read(root->ptrace_read_userdata, pid, start_time_ticks, "exe", buf, sizeof buf - 1);
        else {
                n = readlinkat(pid_dirfd, "exe", buf, sizeof buf - 1);
                if (n < 0)
                        n = negative_errno();
        }
        if (n < 0)
                return (int) n;
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

/* task_dump_owner(): the files of a process that is not dumpable belong to
 * root (of its mm's user namespace), the others to its euid and egid --
 * except the directory itself, which is why status is asked. A root process
 * looks the same either way (-1). A stat: no lock of the target's. */
static int read_dumpable(int pid_dirfd, const ProcStatus *ps) {
        struct stat owner;
        if (ps->uid_effective == 0 && ps->gid_effective == 0)
                return -1;
        if (fstatat(pid_dirfd, "status", &owner, 0) < 0)
                return -1;
        return owner.st_uid == ps->uid_effective && owner.st_gid == ps->gid_effective;
}

/* The identity (process.h) from the stat and status already read, and the
 * executable itself. */
static void identity_fill(int pid_dirfd, const ProcStat *st, const ProcStatus *ps, ProcessIdentity *ret) {
        struct stat exe;
        *ret = (ProcessIdentity) {
                .uid = { ps->uid_real, ps->uid_effective, ps->uid_saved, ps->uid_fs },
                .gid = { ps->gid_real, ps->gid_effective, ps->gid_saved, ps->gid_fs },
                .cap_permitted = ps->cap_permitted,
                .dumpable = read_dumpable(pid_dirfd, ps),
                .secure_exec = -1,
        };
        memcpy(ret->mm_layout, st->mm_layout, sizeof ret->mm_layout);
        /* exe is a magic link: stat follows it to the file the mm maps. */
        if (fstatat(pid_dirfd, "exe", &exe, 0) < 0)
                return; /* no mm, gone, or not permitted: nothing to compare */
        ret->exe_dev = (uint64_t) exe.st_dev;
        ret->exe_ino = (uint64_t) exe.st_ino;
        ret->valid = true;
}

/* AT_SECURE from the auxiliary vector the kernel saved at exec (a copy in
 * the mm: reading it takes no lock of the target's). */
static int read_secure_exec(int pid_dirfd) {
        _cleanup_close_ int fd = openat(pid_dirfd, "auxv", O_RDONLY | O_CLOEXEC);
        uint64_t v[2 * 64];
        if (fd < 0)
                return -1;
        ssize_t k = read(fd, v, sizeof v);
        if (k < 16)
                return -1;
        for (size_t i = 0; i + 1 < (size_t) k / sizeof v[0]; i += 2) {
                if (v[i] == 0) /* AT_NULL */
                        break;
                if (v[i] == 23) /* AT_SECURE */
                        return v[i + 1] != 0;
        }
        return -1;
}

int process_read_identity(int pid_dirfd, bool privilege, ProcessIdentity *ret) {
        ProcStat st;
        ProcStatus ps;
        int r;

        r = procfs_read_stat(pid_dirfd, &st);
        if (r < 0)
                return r;
        r = procfs_read_status(pid_dirfd, &ps);
        if (r < 0)
                return r;
        identity_fill(pid_dirfd, &st, &ps, ret);
        if (!privilege)
                return 0;
        ret->secure_exec = read_secure_exec(pid_dirfd);
        return 0;
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
        ProcessIndexState index = p->index; /* discovery's: it uncounts the old facts itself */
        process_done(p);
        p->index = index;
        p->pid = pid;
        p->discovered_usec = discovered;
        p->generation = gen;
}

/* The clock ticks of /proc/PID/stat's start time, per second. */
static uint64_t clock_ticks_per_sec(void) {
        long hz = sysconf(_SC_CLK_TCK);
        return (uint64_t) (hz > 0 ? hz : 100);
}

/* A task's start, CLOCK_BOOTTIME in usec (what /proc/PID/stat counts). */
static uint64_t stat_start_usec(const ProcStat *st) {
        return st->start_time_ticks * USEC_PER_SEC / clock_ticks_per_sec();
}

static void set_stat_facts(Process *p, const ProcStat *st) {
        p->start_time_ticks = st->start_time_ticks;
        p->start_time_usec = stat_start_usec(st);
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

int process_read_facts_flags(const Root *root, int pid, Process *p, unsigned flags) {
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
                /* The exe of a known incarnation is kept when the caller
                 * says no exec can have gone unseen: read through the
                 * injector it is most of a resync's cost. */
                bool keep = (flags & PROCESS_READ_KEEP_EXE) && p->exe && p->pid == pid &&
                            p->start_time_ticks == st.start_time_ticks && p->facts_usec > 0;
                if (!keep) {
                        r = read_exe(root, pid, st.start_time_ticks, dfd, &exe);
                        if (r == -ENOMEM)
                                return r;
                }
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
        if (!kthread)
                identity_fill(dfd, &st, &status, &p->identity);
        p->rss_anon_kib = status.rss_anon_kib;
        p->threads = status.threads ? status.threads : (unsigned) MAX(st.num_threads, 0);
        p->tracer_pid = status.tracer_pid;
        if (exe || !same || !(flags & PROCESS_READ_KEEP_EXE))
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

int process_read_facts(const Root *root, int pid, Process *p) {
        return process_read_facts_flags(root, pid, p, 0);
}

int process_read_brief(const Root *root, int pid, ProcStat *ret_stat, uint64_t *ret_merging_pages) {
        _cleanup_close_ int dfd = -EBADF;
        int r;

        r = open_live_pid(root, pid, &dfd, ret_stat);
        if (r < 0)
                return r;
        if (procfs_read_ksm_merging_pages(dfd, ret_merging_pages) < 0)
                *ret_merging_pages = UINT64_MAX;
        return 0;
}

int process_read_task_tgid(const Root *root, int tid, uint64_t started_by_usec, int *ret_tgid) {
        _cleanup_close_ int dfd = -EBADF;
        ProcStatus ps;
        int r;

        if (tid <= 0)
                return -ESRCH;
        r = root_open_pid_dir(root, tid, &dfd);
        if (r < 0)
                return r;
        if (started_by_usec != UINT64_MAX) {
                ProcStat st;
                r = procfs_read_stat(dfd, &st);
                if (r < 0)
                        return r;
                /* started a tick or more after: the number's next task */
                if (stat_start_usec(&st) > started_by_usec + USEC_PER_SEC / clock_ticks_per_sec())
                        return -ESTALE;
        }
        r = procfs_read_status(dfd, &ps);
        if (r < 0)
                return r;
        if (ps.tgid <= 0)
                return -EBADMSG;
        *ret_tgid = ps.tgid;
        return 0;
}
