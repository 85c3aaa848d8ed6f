/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A process whose mmap_lock stays taken for as long as the test wants,
 * deterministically (mmap-contender only makes it busy, by chance).
 *
 *   mmap-lock-hog
 *
 * How, on 6.18: this program mounts a FUSE file system of its own (in a
 * private mount namespace, so the mount goes with it) and forks the target,
 * "lock-hog-target". A thread of the target reads its own /proc/self/mem
 * at an address where it mapped a FUSE file. The read runs
 * __access_remote_vm(): mmap_read_lock(), then get_user_pages_remote()
 * with no "locked" argument, so the fault cannot drop the lock to wait;
 * the fault reads the page through FUSE (FUSE_ASYNC_READ is not offered,
 * so synchronously) and this program never answers the READ. The thread
 * now holds mmap_read_lock indefinitely; other readers still pass.
 *
 * Commands on stdin, one a line:
 *   lock  a second thread calls mmap(), which queues for the write lock; an
 *         rwsem with a writer queued makes every later reader wait: ksm_stat,
 *         maps, mem, cmdline (and ksmd) block on it until the end.
 *   grow  the target touches 48 MiB of anonymous memory it mapped (and
 *         faulted once) at start. That works while locked: anonymous faults
 *         take the VMA's own lock (per-VMA locking), not mmap_lock.
 *
 * The reading thread is unkillable meanwhile: a FUSE request that the
 * server has read is waited for uninterruptibly (request_wait_answer()
 * "wait it out"), so after SIGKILL the target's other threads exit and the
 * thread-group leader's exit stays unreported until the read ends.
 *
 * Prints "target PID" once the read is held, "locked" once the writer
 * sleeps in D, "grown" once the memory is touched. At stdin EOF or SIGTERM
 * (bounded: 10 minutes) it aborts the connection (closing /dev/fuse fails
 * the read with ECONNABORTED), kills the target and reaps it. The target's
 * main thread sleeps in read() on a socket. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FILE_SIZE (1U << 20)
#define BUF_SIZE (FUSE_MIN_READ_BUFFER + 256 * 1024)

static char dir[] = "/tmp/mmap-lock-hog.XXXXXX";
static char *mapped;
static int lock_fd = -1;

#define GROW_SIZE (48U << 20)

static void die(const char *what) {
        fprintf(stderr, "mmap-lock-hog: %s: %s\n", what, strerror(errno));
        exit(1);
}

static void *reader(void *arg) {
        (void) arg;
        char c;
        int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
                (void) !pread(fd, &c, 1, (off_t) (uintptr_t) mapped);
        return NULL;
}

/* Waits for the word, then queues for the write lock. Started before:
 * pthread_create() itself calls mmap(). */
static void *writer(void *arg) {
        (void) arg;
        char c;
        if (read(lock_fd, &c, 1) == 1)
                (void) mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return NULL;
}

static void target(int cmd_fd) {
        pthread_t t;
        int lp[2];
        (void) prctl(PR_SET_NAME, "lock-hog-target");
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        char path[64];
        snprintf(path, sizeof path, "%s/f", dir);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                die("open the FUSE file");
        mapped = mmap(NULL, FILE_SIZE, PROT_READ, MAP_PRIVATE, fd, 0);
        if (mapped == MAP_FAILED)
                die("mmap the FUSE file");
        char *grow = mmap(NULL, GROW_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (grow == MAP_FAILED)
                die("mmap");
        (void) madvise(grow, GROW_SIZE, MADV_NOHUGEPAGE);
        grow[0] = 1;    /* its anon_vma now exists: later faults need no mmap_lock */
        if (pipe2(lp, O_CLOEXEC) < 0)
                die("pipe");
        lock_fd = lp[0];
        if (pthread_create(&t, NULL, writer, NULL) != 0 || pthread_create(&t, NULL, reader, NULL) != 0)
                die("pthread_create");
        for (;;) {
                char c;
                if (read(cmd_fd, &c, 1) != 1)
                        pause();
                if (c == 'l')
                        (void) !write(lp[1], "l", 1);
                else if (c == 'g') {
                        for (size_t i = 0; i < GROW_SIZE; i += 4096)
                                grow[i] = 0x5a;
                        (void) !write(cmd_fd, "g", 1);
                }
        }
}

static void reply(int fd, uint64_t unique, int error, const void *body, size_t len) {
        struct fuse_out_header h = { .len = (uint32_t) (sizeof h + (error ? 0 : len)), .error = error, .unique = unique };
        char buf[sizeof h + 512];
        memcpy(buf, &h, sizeof h);
        if (!error && len)
                memcpy(buf + sizeof h, body, len);
        (void) !write(fd, buf, h.len);
}

static void fill_attr(uint64_t nodeid, struct fuse_attr *a) {
        *a = (struct fuse_attr) { .ino = nodeid, .nlink = 1, .blksize = 4096 };
        if (nodeid == FUSE_ROOT_ID)
                a->mode = S_IFDIR | 0755;
        else {
                a->mode = S_IFREG | 0444;
                a->size = FILE_SIZE;
                a->blocks = FILE_SIZE / 512;
        }
}

/* Is a thread of pid other than the leader in D (the writer: the reader
 * sleeps in S, the interruptible wait comes first)? */
static int writer_blocked(pid_t pid) {
        char path[64];
        int found = 0;
        snprintf(path, sizeof path, "/proc/%d/task", pid);
        DIR *d = opendir(path);
        if (!d)
                return 0;
        for (struct dirent *de; !found && (de = readdir(d));) {
                char p[384], buf[512];
                if (de->d_name[0] == '.' || atoi(de->d_name) == pid)
                        continue;
                snprintf(p, sizeof p, "%s/%s/stat", path, de->d_name);
                FILE *f = fopen(p, "re");
                if (!f)
                        continue;
                size_t n = fread(buf, 1, sizeof buf - 1, f);
                fclose(f);
                buf[n] = 0;
                char *e = strrchr(buf, ')');
                found = e && e[1] == ' ' && e[2] == 'D';
        }
        closedir(d);
        return found;
}

int main(void) {
        int sv[2];
        char opts[128];

        setvbuf(stdout, NULL, _IOLBF, 0);
        signal(SIGPIPE, SIG_IGN);
        if (unshare(CLONE_NEWNS) < 0)
                die("unshare(CLONE_NEWNS)");
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                die("make / private");
        if (!mkdtemp(dir))
                die("mkdtemp");
        int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
        if (fd < 0)
                die("open /dev/fuse");
        snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fd);
        if (mount("mmap-lock-hog", dir, "fuse.mmap-lock-hog", MS_NOSUID | MS_NODEV, opts) < 0)
                die("mount fuse");
        /* The directory stays on the host's /tmp; the mount is ours alone. */
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                die("socketpair");
        pid_t pid = fork();
        if (pid < 0)
                die("fork");
        if (pid == 0) {
                close(sv[0]);
                close(fd);
                target(sv[1]);
        }
        close(sv[1]);

        sigset_t ss;
        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        int sfd = signalfd(-1, &ss, SFD_CLOEXEC);

        char *buf = malloc(BUF_SIZE);
        if (!buf)
                die("malloc");
        int held = 0, announced = 0, locking = 0;
        time_t t_end = time(NULL) + 600;
        for (;;) {
                struct pollfd p[4] = { { fd, POLLIN, 0 }, { STDIN_FILENO, POLLIN, 0 }, { sfd, POLLIN, 0 },
                                       { sv[0], POLLIN, 0 } };
                int k = poll(p, 4, 20);
                if (time(NULL) > t_end)
                        break;
                if (k < 0 && errno != EINTR)
                        die("poll");
                if (k > 0 && (p[1].revents & (POLLIN | POLLHUP))) {
                        char line[64];
                        ssize_t l = read(STDIN_FILENO, line, sizeof line - 1);
                        if (l <= 0)
                                break;
                        line[l] = 0;
                        if (strstr(line, "lock")) {
                                (void) !write(sv[0], "l", 1);
                                locking = 1;
                        }
                        if (strstr(line, "grow"))
                                (void) !write(sv[0], "g", 1);
                }
                if (k > 0 && (p[2].revents & POLLIN))
                        break;
                if (k > 0 && (p[3].revents & POLLIN)) {
                        char c;
                        if (read(sv[0], &c, 1) == 1 && c == 'g')
                                printf("grown\n");
                }
                if (held && !announced) {
                        printf("target %d\n", pid);
                        announced = 1;
                }
                if (locking && writer_blocked(pid)) {
                        printf("locked\n");
                        locking = 0;
                }
                if (k <= 0 || !(p[0].revents & POLLIN))
                        continue;
                ssize_t n = read(fd, buf, BUF_SIZE);
                if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == ENOENT))
                        continue;
                if (n < (ssize_t) sizeof(struct fuse_in_header))
                        die("read /dev/fuse");
                struct fuse_in_header *in = (struct fuse_in_header *) buf;
                void *arg = buf + sizeof *in;
                switch (in->opcode) {
                case FUSE_INIT: {
                        struct fuse_init_in *i = arg;
                        struct fuse_init_out o = { .major = FUSE_KERNEL_VERSION,
                                                   .minor = i->minor < FUSE_KERNEL_MINOR_VERSION ? i->minor
                                                                                                 : FUSE_KERNEL_MINOR_VERSION,
                                                   .max_readahead = 4096, .max_write = 4096, .time_gran = 1 };
                        /* no FUSE_ASYNC_READ: page reads are synchronous requests */
                        reply(fd, in->unique, 0, &o, sizeof o);
                        break;
                }
                case FUSE_LOOKUP: {
                        const char *name = arg;
                        if (in->nodeid != FUSE_ROOT_ID || strcmp(name, "f") != 0) {
                                reply(fd, in->unique, -ENOENT, NULL, 0);
                                break;
                        }
                        struct fuse_entry_out e = { .nodeid = 2, .generation = 1, .entry_valid = 3600,
                                                    .attr_valid = 3600 };
                        fill_attr(2, &e.attr);
                        reply(fd, in->unique, 0, &e, sizeof e);
                        break;
                }
                case FUSE_GETATTR: {
                        struct fuse_attr_out a = { .attr_valid = 3600 };
                        fill_attr(in->nodeid, &a.attr);
                        reply(fd, in->unique, 0, &a, sizeof a);
                        break;
                }
                case FUSE_OPEN:
                case FUSE_OPENDIR: {
                        struct fuse_open_out o = { .fh = 1 };
                        reply(fd, in->unique, 0, &o, sizeof o);
                        break;
                }
                case FUSE_READ:
                        /* Never answered: the reader holds mmap_read_lock. */
                        held = 1;
                        break;
                case FUSE_INTERRUPT:
                case FUSE_FORGET:
                case FUSE_BATCH_FORGET:
                        break;  /* no reply expected (an interrupt may go unanswered) */
                case FUSE_FLUSH:
                case FUSE_RELEASE:
                case FUSE_RELEASEDIR:
                        reply(fd, in->unique, 0, NULL, 0);
                        break;
                default:
                        reply(fd, in->unique, -ENOSYS, NULL, 0);
                }
        }
        /* Closing the only /dev/fuse fd aborts the connection: the read
         * fails, the lock is released, the target can die. */
        close(fd);
        kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
        (void) umount2(dir, MNT_DETACH);
        (void) rmdir(dir);
        return 0;
}
