/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Discovery and classification benchmark, on the real kernel:
 *
 *  1. exec-to-verdict latency (median, p99) of processes exec'd at 200/s,
 *     with proc connector events, against the polling fallback (a scan per
 *     1 s tick) measured in the same run;
 *  2. the time to scan and classify 10,000 processes at start, against
 *     `ps -e -o pid,ppid,uid,rss,comm,cgroup` reading the same facts;
 *  3. the daemon's (build/src/daemon/ksmtuned2 --dry-run) CPU and RSS while 500
 *     processes a second are born and die, against what the storm itself
 *     costs, and idle.
 *
 * Touches no KSM knob (the daemon runs with --dry-run and fixed settings
 * unset), so it does not take the KSM lock. Every process it starts is in a
 * process group of its own and killed on every exit path. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "discovery.h"
#include "fileio.h"
#include "log.h"
#include "root.h"
#include "util.h"

extern char **environ;

static pid_t spawner = -1, daemon_pid = -1;
static char tmpdir[] = "/tmp/ksmtuned2-bench-classify.XXXXXX";

static void cleanup(void) {
        if (spawner > 0) {
                kill(-spawner, SIGKILL);
                kill(spawner, SIGKILL);
        }
        if (daemon_pid > 0) {
                kill(daemon_pid, SIGTERM);
                waitpid(daemon_pid, NULL, 0);
                daemon_pid = -1;
        }
        /* we are the subreaper: collect whatever died */
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
        if (!strstr(tmpdir, "XXXXXX")) {
                char cmd[256];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
                (void) !system(cmd);
        }
}

static void on_signal(int sig) {
        cleanup();
        signal(sig, SIG_DFL);
        raise(sig);
}

static void sleep_usec(uint64_t usec) {
        struct timespec ts = { (time_t) (usec / USEC_PER_SEC), (long) (usec % USEC_PER_SEC) * 1000 };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* A process group that starts n children at rate_hz. mode "cat": each
 * execs /bin/cat on a pipe and lives until the group is told to stop
 * (SIGUSR1); "true": each execs /bin/true and dies; "pause": forks that
 * pause() without exec (cheap, for the 10,000-process scan). Prints
 * nothing; the parent reads "1" on ret_ready_fd once all are started. */
static volatile sig_atomic_t spawner_stop;
static void on_usr1(int sig) {
        spawner_stop = 1;
}

static pid_t start_spawner(const char *mode, unsigned n, unsigned rate_hz, int *ret_ready_fd) {
        int ready[2];
        if (pipe2(ready, O_CLOEXEC) < 0)
                return -1;
        pid_t pid = fork();
        if (pid < 0)
                return -1;
        if (pid > 0) {
                close(ready[1]);
                setpgid(pid, pid);
                *ret_ready_fd = ready[0];
                return pid;
        }
        setpgid(0, 0);
        close(ready[0]);
        signal(SIGUSR1, on_usr1);
        int *pipes = calloc(n, sizeof(int));
        pid_t *kids = calloc(n, sizeof(pid_t));
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        for (unsigned i = 0; i < n && !spawner_stop; i++) {
                if (rate_hz) {
                        uint64_t due = start + (uint64_t) i * USEC_PER_SEC / rate_hz, now = now_usec(CLOCK_MONOTONIC);
                        if (due > now)
                                sleep_usec(due - now);
                }
                int p[2] = { -1, -1 };
                if (streq(mode, "cat") && pipe2(p, 0) < 0)
                        break;
                pid_t k = fork();
                if (k == 0) {
                        if (streq(mode, "pause")) {
                                signal(SIGUSR1, SIG_DFL);
                                for (;;)
                                        pause();
                        }
                        if (streq(mode, "cat")) {
                                dup2(p[0], 0);
                                close(p[0]);
                                close(p[1]);
                                int null = open("/dev/null", O_WRONLY);
                                dup2(null, 1);
                                execl("/bin/cat", "cat", NULL);
                        } else
                                execl("/bin/true", "true", NULL);
                        _exit(127);
                }
                kids[i] = k;
                if (p[0] >= 0) {
                        close(p[0]);
                        pipes[i] = p[1];
                }
                if (streq(mode, "true"))
                        while (waitpid(-1, NULL, WNOHANG) > 0)
                                ;
        }
        (void) !write(ready[1], "1", 1);
        if (streq(mode, "true")) {
                while (waitpid(-1, NULL, 0) > 0)
                        ;
                struct rusage ru;
                getrusage(RUSAGE_CHILDREN, &ru);
                struct rusage self;
                getrusage(RUSAGE_SELF, &self);
                uint64_t usec = (uint64_t) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + self.ru_utime.tv_sec +
                                            self.ru_stime.tv_sec) * USEC_PER_SEC +
                                (uint64_t) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec + self.ru_utime.tv_usec +
                                            self.ru_stime.tv_usec);
                (void) !write(ready[1], &usec, sizeof usec);
                _exit(0);
        }
        while (!spawner_stop)
                pause();
        for (unsigned i = 0; i < n; i++)
                if (kids[i] > 0 && streq(mode, "pause"))
                        kill(kids[i], SIGKILL);
        for (unsigned i = 0; i < n; i++)
                if (pipes[i] > 0)
                        close(pipes[i]);
        while (waitpid(-1, NULL, 0) > 0)
                ;
        _exit(0);
}

static void stop_spawner(void) {
        if (spawner <= 0)
                return;
        kill(spawner, SIGUSR1);
        waitpid(spawner, NULL, 0);
        spawner = -1;
}

static void wait_ready(int fd) {
        char c;
        if (read(fd, &c, 1) != 1) {
                fprintf(stderr, "spawner failed\n");
                exit(1);
        }
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static void write_file(const char *dir, const char *name, const char *text) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, name);
        FILE *f = fopen(p, "we");
        if (!f) {
                perror(p);
                exit(1);
        }
        fputs(text, f);
        fclose(f);
}

static char policy_dir[512];

/* The shipped policies, and twenty more that do not match, so the scan
 * does the work of a host with a realistic policy set; the bench's own
 * processes are matched last with MinAge=1h (a verdict, no action). */
static void write_policies(void) {
        const char *src = getenv("SOURCE_ROOT");
        char cmd[1024];
        snprintf(policy_dir, sizeof policy_dir, "%s/policy.d", tmpdir);
        mkdir(policy_dir, 0755);
        snprintf(cmd, sizeof cmd, "cp '%s'/conf/policy.d/*.policy '%s'/", src ? src : ".", policy_dir);
        if (system(cmd) != 0) {
                fprintf(stderr, "cannot copy the shipped policies\n");
                exit(1);
        }
        for (int i = 0; i < 20; i++) {
                char name[64], text[256];
                snprintf(name, sizeof name, "6%02d-app.policy", i);
                snprintf(text, sizeof text,
                         "[Match]\nCgroup=system.slice/app%d-*.service\nComm=worker%d-* java%d\nUser=root\n"
                         "[Merge]\nMode=auto\nMinAnonMiB=64\n",
                         i, i, i);
                write_file(policy_dir, name, text);
        }
        write_file(policy_dir, "90-bench.policy",
                   "[Match]\nComm=cat true bench-classify\n[Merge]\nMode=auto\nMinAge=1h\n");
}

static Discovery *new_discovery(sd_event *e, const Root *root, bool polling) {
        DiscoveryOptions o = { .force_polling = polling };
        Discovery *d;
        ConfDiag diag = {};
        char *dirs[] = { policy_dir, NULL };
        if (discovery_new(e, root, &o, &d) < 0 || discovery_load_policies(d, dirs, &diag) < 0 || diag.n > 0) {
                conf_diag_print(&diag, stderr);
                exit(1);
        }
        if (discovery_start(d) < 0)
                exit(1);
        return d;
}

static void bench_latency(const Root *root) {
        enum { N = 1000, RATE = 200 };
        sd_event *e = NULL;
        int ready;

        /* events */
        sd_event_new(&e);
        Discovery *d = new_discovery(e, root, false);
        DiscoveryStatus st;
        discovery_get_status(d, &st);
        if (st.mode != DISCOVERY_EVENTS) {
                fprintf(stderr, "proc connector unavailable: %s\n", st.mode_reason);
                exit(77);
        }
        spawner = start_spawner("cat", N, RATE, &ready);
        uint64_t end = now_usec(CLOCK_MONOTONIC) + (N / RATE + 2) * USEC_PER_SEC;
        while (now_usec(CLOCK_MONOTONIC) < end)
                sd_event_run(e, 100 * USEC_PER_MSEC);
        wait_ready(ready);
        close(ready);
        uint64_t *lat = calloc(N, sizeof *lat);
        size_t n = discovery_exec_latencies(d, lat, N);
        stop_spawner();
        discovery_free(d);
        qsort(lat, n, sizeof *lat, cmp_u64);
        uint64_t ev_med = n ? lat[n / 2] : 0, ev_p99 = n ? lat[n * 99 / 100] : 0;

        /* polling, one scan per 1 s tick; latency from the process's start
         * time (10 ms resolution) to the scan that first read and classified
         * it (discovered_usec, moved from CLOCK_MONOTONIC to CLOCK_BOOTTIME) */
        d = new_discovery(e, root, true);
        spawner = start_spawner("cat", N, RATE, &ready);
        size_t m = 0;
        end = now_usec(CLOCK_MONOTONIC) + (N / RATE + 2) * USEC_PER_SEC;
        uint64_t *seen = calloc(N * 2, sizeof *seen), *plat = calloc(N, sizeof *plat);
        size_t n_seen = 0;
        while (now_usec(CLOCK_MONOTONIC) < end) {
                /* the loop runs the sliced scan the previous tick started */
                for (uint64_t t = now_usec(CLOCK_MONOTONIC), until = t + USEC_PER_SEC; t < until;
                     t = now_usec(CLOCK_MONOTONIC))
                        sd_event_run(e, until - t);
                discovery_tick(d, NULL);
                uint64_t boot_minus_mono = now_usec(CLOCK_BOOTTIME) - now_usec(CLOCK_MONOTONIC);
                Process *p;
                PROCESS_TABLE_FOREACH(p, discovery_processes(d), i) {
                        if (!streq(p->comm, "cat") || p->ppid != spawner || m >= N)
                                continue;
                        bool dup = false;
                        for (size_t k = 0; k < n_seen && !dup; k++)
                                dup = seen[k] == (uint64_t) p->pid;
                        if (dup || n_seen >= N * 2)
                                continue;
                        seen[n_seen++] = (uint64_t) p->pid;
                        uint64_t found_boot = p->discovered_usec + boot_minus_mono;
                        plat[m++] = found_boot > p->start_time_usec ? found_boot - p->start_time_usec : 0;
                }
        }
        wait_ready(ready);
        close(ready);
        stop_spawner();
        discovery_free(d);
        qsort(plat, m, sizeof *plat, cmp_u64);
        uint64_t po_med = m ? plat[m / 2] : 0, po_p99 = m ? plat[m * 99 / 100] : 0;

        printf("exec-to-verdict, %d execs at %d/s:\n", N, RATE);
        printf("  proc events:     median %8.3f ms  p99 %8.3f ms  (%zu samples)\n", ev_med / 1000.0,
               ev_p99 / 1000.0, n);
        printf("  polling, 1 s:    median %8.3f ms  p99 %8.3f ms  (%zu samples)\n", po_med / 1000.0,
               po_p99 / 1000.0, m);
        if (ev_med && ev_p99)
                printf("  ratio polling/events: median %.0fx, p99 %.0fx\n", (double) po_med / (double) ev_med,
                       (double) po_p99 / (double) ev_p99);
        free(lat);
        free(plat);
        free(seen);
        sd_event_unref(e);
}

static uint64_t time_command(char *const argv[]) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        pid_t pid;
        if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) != 0)
                return 0;
        waitpid(pid, NULL, 0);
        posix_spawn_file_actions_destroy(&fa);
        return now_usec(CLOCK_MONOTONIC) - t0;
}

static void bench_scan(const Root *root) {
        enum { N = 10000 };
        sd_event *e = NULL;
        int ready;

        sd_event_new(&e);
        spawner = start_spawner("pause", N, 0, &ready);
        wait_ready(ready);
        close(ready);
        sleep_usec(500 * USEC_PER_MSEC);

        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        Discovery *d = new_discovery(e, root, true); /* polling: no self-test, just the scan */
        uint64_t t_start = now_usec(CLOCK_MONOTONIC) - t0;
        DiscoveryStatus st;
        /* and once more, warm (what a resync costs) */
        discovery_scan(d);
        discovery_get_status(d, &st);
        uint64_t t_resync = st.last_scan_usec;

        uint64_t t_ps = time_command((char *[]) { "ps", "-e", "-o", "pid,ppid,uid,rss,comm,cgroup", NULL });
        printf("start-up scan and classification of %" PRIu64 " processes (%zu policies):\n", st.processes,
               st.policies);
        /* The first look at a /proc/PID instantiates its inodes and
         * dentries (cold); ps runs after our scans, on a warm cache, so it
         * is compared with the resync. */
        printf("  first scan (cold /proc), start included: %8.1f ms  (%.1f us per process)\n", t_start / 1000.0,
               (double) t_start / (double) st.processes);
        printf("  resync scan (warm):                      %8.1f ms  (%.1f us per process)\n", t_resync / 1000.0,
               (double) t_resync / (double) st.processes);
        printf("  ps -e -o pid,ppid,uid,rss,comm,cgroup (warm): %.1f ms; ratio resync/ps %.2f\n", t_ps / 1000.0,
               t_ps ? (double) t_resync / (double) t_ps : 0.0);
        discovery_free(d);
        stop_spawner();
        sd_event_unref(e);
}

typedef struct Usage {
        uint64_t cpu_ticks;
        uint64_t rss_kib, hwm_kib;
} Usage;

static Usage read_usage(pid_t pid) {
        Usage u = {};
        char path[64], *text = NULL;
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        if (read_full_file_at(AT_FDCWD, path, 4096, &text, NULL) >= 0) {
                ProcStat s;
                if (procfs_parse_stat(text, &s) >= 0)
                        u.cpu_ticks = s.utime_ticks + s.stime_ticks;
                free(text);
                text = NULL;
        }
        snprintf(path, sizeof path, "/proc/%d/status", pid);
        if (read_full_file_at(AT_FDCWD, path, 65536, &text, NULL) >= 0) {
                char *l = strstr(text, "VmRSS:");
                if (l)
                        u.rss_kib = strtoull(l + 6, NULL, 10);
                l = strstr(text, "VmHWM:");
                if (l)
                        u.hwm_kib = strtoull(l + 6, NULL, 10);
                free(text);
        }
        return u;
}

static void bench_daemon(void) {
        enum { RATE = 500, SECONDS = 10 };
        const char *bin = getenv("KSMTUNED2");
        char conf[512], log[512];
        double hz = (double) sysconf(_SC_CLK_TCK);
        int ready;

        if (!bin) {
                fprintf(stderr, "KSMTUNED2 not set\n");
                exit(1);
        }
        snprintf(conf, sizeof conf, "%s/k.conf", tmpdir);
        snprintf(log, sizeof log, "%s/daemon.log", tmpdir);
        char text[1024];
        snprintf(text, sizeof text, "[Daemon]\nPolicyDirectories=%s\nRuntimeDirectory=%s/run\nInterval=5s\nLogLevel=notice\n",
                 policy_dir, tmpdir);
        write_file(tmpdir, "k.conf", text);

        daemon_pid = fork();
        if (daemon_pid == 0) {
                int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                dup2(fd, 2);
                dup2(fd, 1);
                execl(bin, bin, "--config", conf, "--dry-run", NULL);
                _exit(127);
        }
        sleep_usec(2 * USEC_PER_SEC);
        Usage u0 = read_usage(daemon_pid);
        sleep_usec(5 * USEC_PER_SEC);
        Usage u1 = read_usage(daemon_pid);

        spawner = start_spawner("true", RATE * SECONDS, RATE, &ready);
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);
        wait_ready(ready);
        uint64_t storm_cpu_usec = 0;
        (void) !read(ready, &storm_cpu_usec, sizeof storm_cpu_usec);
        close(ready);
        waitpid(spawner, NULL, 0);
        spawner = -1;
        uint64_t wall = now_usec(CLOCK_MONOTONIC) - t0;
        sleep_usec(200 * USEC_PER_MSEC); /* let it drain the tail */
        Usage u2 = read_usage(daemon_pid);

        kill(daemon_pid, SIGTERM);
        int status;
        waitpid(daemon_pid, &status, 0);
        daemon_pid = -1;

        double idle_pct = (double) (u1.cpu_ticks - u0.cpu_ticks) / hz / 5.0 * 100.0;
        double storm_s = (double) (u2.cpu_ticks - u1.cpu_ticks) / hz;
        double storm_pct = storm_s / ((double) wall / USEC_PER_SEC) * 100.0;
        unsigned lost = 0;
        char *logtext = NULL;
        if (read_full_file_at(AT_FDCWD, log, 1 << 24, &logtext, NULL) >= 0) {
                for (char *p = logtext; (p = strstr(p, "were lost")); p++)
                        lost++;
                free(logtext);
        }
        printf("daemon (ksmtuned2 --dry-run, proc events) while %d processes/s are born and die for %.1f s:\n",
               RATE, (double) wall / USEC_PER_SEC);
        printf("  CPU: %.1f%% of one core (%.2f s); idle before: %.2f%%\n", storm_pct, storm_s, idle_pct);
        printf("  the storm itself (fork+exec+exit of /bin/true) cost %.2f s CPU; ratio daemon/storm %.2f\n",
               storm_cpu_usec / 1e6, storm_cpu_usec ? storm_s / (storm_cpu_usec / 1e6) : 0.0);
        printf("  RSS: %" PRIu64 " KiB after (peak %" PRIu64 " KiB; %" PRIu64 " KiB before the storm)\n", u2.rss_kib,
               u2.hwm_kib, u1.rss_kib);
        printf("  event overflows reported: %u; daemon exit status %d\n", lost,
               WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

int main(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL;

        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: needs root (proc connector)\n");
                return 77;
        }
        umask(022); /* policy files others may write are rejected */
        if (!mkdtemp(tmpdir))
                return 1;
        atexit(cleanup);
        int sigs[] = { SIGINT, SIGTERM, SIGALRM, SIGABRT, SIGSEGV, SIGHUP };
        for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
                signal(sigs[i], on_signal);
        (void) prctl(PR_SET_CHILD_SUBREAPER, 1);
        log_set_max_level(LOG_WARNING);
        if (root_open(NULL, &root) < 0)
                return 1;
        write_policies();

        bool all = argc < 2;
        if (all || streq(argv[1], "latency"))
                bench_latency(root);
        if (all || streq(argv[1], "scan"))
                bench_scan(root);
        if (all || streq(argv[1], "daemon"))
                bench_daemon();
        return 0;
}
