/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "json.h"
#include "ksm-sysfs.h"
#include "ksmd.h"
#include "log.h"
#include "probe.h"
#include "procfs.h"
#include "syscalls.h"
#include "util.h"

/* Forks a child that maps one page and waits; asks the kernel to mark that
 * page MADV_MERGEABLE from here. Upstream allows only COLD, PAGEOUT,
 * WILLNEED and COLLAPSE remotely and answers EINVAL. */
static int probe_remote_madvise(int *ret_errno) {
        const size_t len = 4096;
        int pipefd[2];
        void *addr;
        pid_t child;
        int r = 0;

        addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (addr == MAP_FAILED)
                return negative_errno();
        memset(addr, 0x5a, len);
        if (pipe2(pipefd, O_CLOEXEC) < 0) {
                r = negative_errno();
                munmap(addr, len);
                return r;
        }
        child = fork();
        if (child < 0) {
                r = negative_errno();
                close(pipefd[0]);
                close(pipefd[1]);
                munmap(addr, len);
                return r;
        }
        if (child == 0) {
                char c;
                close(pipefd[1]);
                /* Wait until the parent closes its end, then leave. */
                while (read(pipefd[0], &c, 1) < 0 && errno == EINTR)
                        ;
                _exit(0);
        }
        close(pipefd[0]);

        int pidfd = sys_pidfd_open(child, 0);
        if (pidfd < 0)
                *ret_errno = errno;
        else {
                struct iovec iov = { .iov_base = addr, .iov_len = len };
                long k = sys_process_madvise(pidfd, &iov, 1, MADV_MERGEABLE, 0);
                *ret_errno = k < 0 ? errno : 0;
                if (k >= 0) {
                        /* Allowed: put the child's page back as it was. */
                        (void) sys_process_madvise(pidfd, &iov, 1, MADV_UNMERGEABLE, 0);
                }
                close(pidfd);
        }
        close(pipefd[1]);
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
                ;
        munmap(addr, len);
        return r;
}

/* The unmerge probe (seed 003): MADV_UNMERGEABLE over a sparse
 * mergeable region walks every page on a stock break_ksm() and only the
 * populated page tables with the range walk. Two regions, the large one
 * 16 times the small, the same four pages touched in each: a flat time
 * says holes are skipped, a 16-fold one that they are walked. 256 MiB
 * costs a stock kernel ~20-90 ms on the test machine (220-360 ns per page
 * measured for 1-256 GiB on 6.18) and a patched one microseconds. */
#define UNMERGE_PROBE_SMALL_BYTES (UINT64_C(16) << 20)
#define UNMERGE_PROBE_LARGE_BYTES (UINT64_C(256) << 20)
#define UNMERGE_PROBE_TRIES 3
/* a stock kernel under emulation (TCG) is ~20x slower than hardware */
#define UNMERGE_PROBE_DEADLINE_MSEC 5000

static uint64_t probe_now_nsec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

/* In the child: one MADV_UNMERGEABLE of a fresh sparse mapping. */
static int time_unmerge_once(uint64_t bytes, uint64_t *ret_nsec) {
        char *a = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (a == MAP_FAILED)
                return -errno;
        /* an anon_vma, and a few page tables to walk */
        for (int j = 0; j < 4; j++)
                a[(bytes / 4) * (uint64_t) j] = 1;
        if (madvise(a, bytes, MADV_MERGEABLE) < 0) {
                int e = errno;
                munmap(a, bytes);
                return -e;
        }
        uint64_t t0 = probe_now_nsec();
        int r = madvise(a, bytes, MADV_UNMERGEABLE);
        uint64_t t = probe_now_nsec() - t0;
        int e = errno;
        munmap(a, bytes);
        if (r < 0)
                return -e;
        *ret_nsec = t;
        return 0;
}

/* The fastest of a few tries of each size, so that a preemption on a busy
 * host does not read as a page walk; the sizes alternate, so that a busy
 * spell slows both rather than only the small one (seen in the stock 6.12
 * guest under a host load of 40: 16 MiB in 12.4 ms, 256 MiB in 24.6 ms
 * when they were timed one after the other, read as "holes are skipped"). */
static int time_unmerge(uint64_t *ret_small_nsec, uint64_t *ret_large_nsec) {
        uint64_t best[2] = { UINT64_MAX, UINT64_MAX };
        for (int i = 0; i < UNMERGE_PROBE_TRIES; i++)
                for (int k = 0; k < 2; k++) {
                        uint64_t t = 0;
                        int r = time_unmerge_once(k == 0 ? UNMERGE_PROBE_SMALL_BYTES : UNMERGE_PROBE_LARGE_BYTES, &t);
                        if (r < 0)
                                return r;
                        best[k] = MIN(best[k], t);
                }
        *ret_small_nsec = best[0];
        *ret_large_nsec = best[1];
        return 0;
}

static void probe_unmerge_walk(UnmergeProbe *ret) {
        UnmergeProbe u = { .small_pages = UNMERGE_PROBE_SMALL_BYTES / 4096,
                           .large_pages = UNMERGE_PROBE_LARGE_BYTES / 4096 };
        uint64_t res[3] = {};           /* errno, small, large */
        size_t got = 0;
        int pipefd[2];

        if (pipe2(pipefd, O_CLOEXEC) < 0) {
                *ret = (UnmergeProbe) { .error = errno };
                return;
        }
        pid_t child = fork();
        if (child < 0) {
                *ret = (UnmergeProbe) { .error = errno };
                close(pipefd[0]);
                close(pipefd[1]);
                return;
        }
        if (child == 0) {
                uint64_t out[3] = {};
                int r;
                close(pipefd[0]);
                r = time_unmerge(&out[1], &out[2]);
                out[0] = r < 0 ? (uint64_t) -r : 0;
                (void) !write(pipefd[1], out, sizeof out);
                _exit(0);
        }
        close(pipefd[1]);

        /* Bounded: a kernel that walks much slower than expected gets its
         * probe child (our own) killed at the deadline; the unmerge loop
         * checks for signals between pages. */
        uint64_t deadline = probe_now_nsec() + UNMERGE_PROBE_DEADLINE_MSEC * (NSEC_PER_SEC / 1000);
        while (got < sizeof res) {
                uint64_t now = probe_now_nsec();
                if (now >= deadline)
                        break;
                struct pollfd pfd = { .fd = pipefd[0], .events = POLLIN };
                int k = poll(&pfd, 1, (int) ((deadline - now) / (NSEC_PER_SEC / 1000)) + 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                ssize_t n = read(pipefd[0], (char *) res + got, sizeof res - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                got += (size_t) n;
        }
        close(pipefd[0]);
        if (got < sizeof res) {
                (void) kill(child, SIGKILL);
                u.error = ETIMEDOUT;
                u.large_nsec = UNMERGE_PROBE_DEADLINE_MSEC * (NSEC_PER_SEC / 1000);
        } else {
                u.error = (int) res[0];
                u.small_nsec = res[1];
                u.large_nsec = res[2];
        }
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
                ;
        *ret = u;
}

static int khugepaged_find(const Root *root, int *ret_pid) {
        return kthread_find(root, "khugepaged", ret_pid);
}

static bool probe_prctl_memory_merge(void) {
        /* PR_GET_MEMORY_MERGE answers 0/1 where the kernel has it, EINVAL where not. */
        return prctl(PR_GET_MEMORY_MERGE, 0, 0, 0, 0) >= 0;
}

static void probe_process_ksm(const Root *root, Probe *p) {
        static const struct {
                const char *name;
                size_t off;
        } files[] = {
                { "process_ksm_enable", offsetof(Probe, process_ksm_enable_nr) },
                { "process_ksm_disable", offsetof(Probe, process_ksm_disable_nr) },
                { "process_ksm_status", offsetof(Probe, process_ksm_status_nr) },
        };
        _cleanup_close_ int dfd = openat(root->sys_fd, "kernel/process_ksm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        p->process_ksm_enable_nr = p->process_ksm_disable_nr = p->process_ksm_status_nr = -1;
        if (dfd < 0)
                return;
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                uint64_t nr;
                if (read_u64_at(dfd, files[i].name, &nr) >= 0 && nr < 4096)
                        *(long *) ((char *) p + files[i].off) = (long) nr;
        }
        p->process_ksm_syscall = p->process_ksm_enable_nr >= 0 && p->process_ksm_disable_nr >= 0;
}

static int probe_proc_connector(void) {
        struct nl_sock *sk = nl_socket_alloc();
        int r;

        if (!sk)
                return -ENOMEM;
        nl_socket_disable_seq_check(sk);
        nl_join_groups(sk, CN_IDX_PROC);
        /* Binding to the proc connector's multicast group needs the
         * connector, and CAP_NET_ADMIN before Linux 6.6 and on some kernels
         * since (6.18.44 as built here; a socket the service manager passes
         * counts too, manager_start_stages()); whether events really arrive
         * (not in a PID namespace) is checked by the event source with a
         * self-test. */
        r = nl_connect(sk, NETLINK_CONNECTOR);
        nl_socket_free(sk);
        return r < 0 ? -EPERM : 0;
}

static bool probe_taskstats(void) {
        struct nl_sock *sk = nl_socket_alloc();
        bool ok = false;
        if (!sk)
                return false;
        if (genl_connect(sk) >= 0)
                ok = genl_ctrl_resolve(sk, "TASKSTATS") >= 0;
        nl_socket_free(sk);
        return ok;
}

int probe_run(const Root *root, Probe *ret) {
        Probe p = { .ksmd_pid = -1, .ptrace_scope = -1, .khugepaged_pid = -1 };
        struct utsname u;
        uint64_t v;
        int r;

        if (uname(&u) >= 0)
                strscpy(p.kernel_release, sizeof p.kernel_release, u.release);

        p.ksm = root->ksm_fd >= 0;
        if (p.ksm) {
                p.ksm_writable = faccessat(root->ksm_fd, "run", W_OK, AT_EACCESS) >= 0;
                p.advisor = ksm_sysfs_read_one(root, KSM_ADVISOR_MODE, &v) >= 0;
                p.smart_scan = ksm_sysfs_read_one(root, KSM_SMART_SCAN, &v) >= 0;
                p.ksm_zero_pages = ksm_sysfs_read_one(root, KSM_ZERO_PAGES, &v) >= 0;
                p.general_profit = ksm_sysfs_read_one(root, KSM_GENERAL_PROFIT, &v) >= 0;
        }
        p.ksmd_thread = ksmd_find(root, &p.ksmd_pid) >= 0;
        (void) khugepaged_find(root, &p.khugepaged_pid);
        if (p.ksm)
                probe_unmerge_walk(&p.unmerge);
        else
                p.unmerge.error = ENOENT;

        int e = 0;
        r = probe_remote_madvise(&e);
        if (r < 0)
                e = -r;
        p.process_madvise_errno = e;
        p.process_madvise_remote_mergeable = r >= 0 && e == 0;
        p.pidfd = !(e == ENOSYS && r >= 0);

        p.prctl_memory_merge = probe_prctl_memory_merge();
        probe_process_ksm(root, &p);

        p.tracefs = root->tracefs_fd >= 0;
        if (p.tracefs) {
                p.mmap_lock_tracepoints =
                        faccessat(root->tracefs_fd, "events/mmap_lock/mmap_lock_start_locking", F_OK, 0) >= 0 &&
                        faccessat(root->tracefs_fd, "events/mmap_lock/mmap_lock_acquire_returned", F_OK, 0) >= 0;
                p.ksm_tracepoints = faccessat(root->tracefs_fd, "events/ksm", F_OK, 0) >= 0;
                strscpy(p.tracefs_path, sizeof p.tracefs_path, root->tracefs_path);
        }

        r = probe_proc_connector();
        p.proc_connector = r >= 0;
        p.proc_connector_errno = r < 0 ? -r : 0;
        p.taskstats = probe_taskstats();

        Psi psi;
        p.psi_memory = procfs_read_psi_memory(root, &psi) >= 0 && psi.present;

        if (read_u64_at(root->proc_fd, "sys/kernel/yama/ptrace_scope", &v) >= 0)
                p.ptrace_scope = (int) v;

        p.cgroup_layout = root->cgroup_layout;
        if (root->cgroup2_path)
                strscpy(p.cgroup2_path, sizeof p.cgroup2_path, root->cgroup2_path);

        *ret = p;
        return 0;
}

#define FEATURES(X)                                                                   \
        X("ksm", ksm)                                                                 \
        X("ksm_writable", ksm_writable)                                               \
        X("ksmd_thread", ksmd_thread)                                                 \
        X("process_madvise_remote_mergeable", process_madvise_remote_mergeable)       \
        X("prctl_memory_merge", prctl_memory_merge)                                   \
        X("process_ksm_syscall", process_ksm_syscall)                                 \
        X("advisor", advisor)                                                         \
        X("smart_scan", smart_scan)                                                   \
        X("ksm_zero_pages", ksm_zero_pages)                                           \
        X("general_profit", general_profit)                                           \
        X("tracefs", tracefs)                                                         \
        X("mmap_lock_tracepoints", mmap_lock_tracepoints)                             \
        X("ksm_tracepoints", ksm_tracepoints)                                         \
        X("proc_connector", proc_connector)                                           \
        X("taskstats", taskstats)                                                     \
        X("psi_memory", psi_memory)                                                   \
        X("pidfd", pidfd)

int probe_feature(const Probe *p, unsigned i, const char **ret_name, bool *ret_present) {
#define ENTRY(name, field) { name, offsetof(Probe, field) },
        static const struct {
                const char *name;
                size_t offset;
        } features[] = { FEATURES(ENTRY) };
#undef ENTRY
        if (i >= ELEMENTSOF(features))
                return -ENOENT;
        *ret_name = features[i].name;
        *ret_present = *(const bool *) ((const char *) p + features[i].offset);
        return 0;
}

void probe_print(const Probe *p, FILE *f) {
        fprintf(f, "kernel: %s\n", p->kernel_release);
#define PRINT(name, field) fprintf(f, "%-34s %s\n", name ":", yes_no(p->field));
        FEATURES(PRINT)
#undef PRINT
        if (!p->process_madvise_remote_mergeable)
                fprintf(f, "%-34s %s\n", "process_madvise remote errno:", strerrorname_np(p->process_madvise_errno) ?: "-");
        if (!p->proc_connector && p->proc_connector_errno)
                fprintf(f, "%-34s %s\n", "proc connector errno:", strerrorname_np(p->proc_connector_errno) ?: "-");
        fprintf(f, "%-34s %d\n", "ksmd pid:", p->ksmd_pid);
        fprintf(f, "%-34s %d\n", "yama ptrace_scope:", p->ptrace_scope);
        fprintf(f, "%-34s %s\n", "cgroup layout:", cgroup_layout_to_string(p->cgroup_layout));
        fprintf(f, "%-34s %s\n", "cgroup2 path:", p->cgroup2_path[0] ? p->cgroup2_path : "-");
        fprintf(f, "%-34s %s\n", "tracefs path:", p->tracefs_path[0] ? p->tracefs_path : "-");
        KernelFixes k;
        probe_kernel_fixes(p, &k);
        kernel_fixes_print(&k, f);
}

void probe_kernel_fixes(const Probe *p, KernelFixes *ret) {
        kernel_fixes_init(ret);
        kernel_fixes_note_unmerge_probe(ret, &p->unmerge);
}

void kernel_fixes_print(const KernelFixes *k, FILE *f) {
        fprintf(f, "kernel fixes (seeds 000-004, from behaviour):\n");
        for (KernelFixId i = 0; i < _KERNEL_FIX_MAX; i++) {
                char label[48];
                snprintf(label, sizeof label, "  %s %s:", kernel_fix_seed(i), kernel_fix_id_to_string(i));
                fprintf(f, "%-34s %-7s %s\n", label, fix_state_to_string(k->fix[i].state), k->fix[i].evidence);
                fprintf(f, "%-34s %-7s -> %s\n", "", "", kernel_fix_adaptation(k, i));
        }
}

void probe_print_json(const Probe *p, FILE *f) {
        JsonWriter w;
        json_init(&w, f, true);
        json_begin_object(&w);
        json_kv_string(&w, "kernel_release", p->kernel_release);
#define PRINT(name, field) json_kv_bool(&w, name, p->field);
        FEATURES(PRINT)
#undef PRINT
        json_kv_i64(&w, "process_madvise_errno", p->process_madvise_errno);
        json_kv_i64(&w, "ksmd_pid", p->ksmd_pid);
        json_kv_i64(&w, "ptrace_scope", p->ptrace_scope);
        json_kv_string(&w, "cgroup_layout", cgroup_layout_to_string(p->cgroup_layout));
        json_kv_string(&w, "cgroup2_path", p->cgroup2_path[0] ? p->cgroup2_path : NULL);
        json_kv_string(&w, "tracefs_path", p->tracefs_path[0] ? p->tracefs_path : NULL);
        json_kv_i64(&w, "khugepaged_pid", p->khugepaged_pid);
        json_key(&w, "unmerge_probe");
        json_begin_object(&w);
        json_kv_string(&w, "error", p->unmerge.error ? strerrorname_np(p->unmerge.error) : NULL);
        json_kv_u64(&w, "small_pages", p->unmerge.small_pages);
        json_kv_u64(&w, "small_nsec", p->unmerge.small_nsec);
        json_kv_u64(&w, "large_pages", p->unmerge.large_pages);
        json_kv_u64(&w, "large_nsec", p->unmerge.large_nsec);
        json_end_object(&w);
        KernelFixes k;
        probe_kernel_fixes(p, &k);
        json_key(&w, "kernel_fixes");
        json_begin_array(&w);
        for (KernelFixId i = 0; i < _KERNEL_FIX_MAX; i++) {
                json_begin_object(&w);
                json_kv_string(&w, "name", kernel_fix_id_to_string(i));
                json_kv_string(&w, "seed", kernel_fix_seed(i));
                json_kv_string(&w, "state", fix_state_to_string(k.fix[i].state));
                json_kv_string(&w, "evidence", k.fix[i].evidence);
                json_kv_string(&w, "adaptation", kernel_fix_adaptation(&k, i));
                json_end_object(&w);
        }
        json_end_array(&w);
        json_end_object(&w);
}

char *probe_summary(const Probe *p) {
        char *s = NULL;
        if (asprintf(&s,
                     "kernel %s: ksm=%s remote-madvise=%s prctl-merge=%s process_ksm=%s advisor=%s "
                     "smart_scan=%s mmap_lock-tracepoints=%s proc-connector=%s cgroup2=%s(%s)",
                     p->kernel_release, yes_no(p->ksm), yes_no(p->process_madvise_remote_mergeable),
                     yes_no(p->prctl_memory_merge), yes_no(p->process_ksm_syscall), yes_no(p->advisor),
                     yes_no(p->smart_scan), yes_no(p->mmap_lock_tracepoints), yes_no(p->proc_connector),
                     cgroup_layout_to_string(p->cgroup_layout), p->cgroup2_path[0] ? p->cgroup2_path : "-") < 0)
                return NULL;
        return s;
}
