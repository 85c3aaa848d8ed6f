/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The init (PID 1) of the tuning benchmark's QEMU tenants (scenario Q1),
 * linked statically into the initramfs that tests/bench/build-tenant-image.sh
 * makes. Every guest boots the same kernel and this same init; what differs
 * comes from the kernel command line, which passes parameters it does not
 * know to init as environment variables:
 *
 *   tenant_shared_mib=N   N MiB whose pages are the same in every guest
 *                         (page i holds the words of stream i, seed 0):
 *                         what KSM can merge across guests
 *   tenant_unique_mib=N   N MiB that differ between guests (seed tenant_seed)
 *   tenant_seed=S         the unique region's seed, one per guest
 *
 * It fills both regions, prints "ksmt2-tenant-ready shared=N unique=N" on
 * the console (the serial port: console=ttyS0) and then sleeps for ever:
 * an idle guest, its vCPU halted, which is what a host's resting tenants
 * look like. The pages within the shared region all differ, so that each
 * merges with its twins in the other guests and not into one page (which
 * max_page_sharing would split into chains). PID 1 must never exit (the
 * kernel panics), so a failure is printed and then slept on too. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE 4096UL

static int console = 2;

static void say(const char *fmt, unsigned long a, unsigned long b) {
        char buf[160];
        int n = snprintf(buf, sizeof buf, fmt, a, b);
        if (n > 0)
                (void) !write(console, buf, (size_t) n);
}

static void idle_forever(void) {
        for (;;)
                pause();
}

static unsigned long env_ulong(const char *name, unsigned long def) {
        const char *v = getenv(name);
        char *end;
        if (!v || !*v)
                return def;
        unsigned long r = strtoul(v, &end, 10);
        if (*end) {
                say("ksmt2-tenant: bad %s value, using %lu\n", 0, def);
                return def;
        }
        return r;
}

/* splitmix64: a page's words from (seed, page index), the same in every guest */
static uint64_t mix(uint64_t x) {
        x += 0x9e3779b97f4a7c15ULL;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
        return x ^ (x >> 31);
}

static int fill(unsigned long mib, uint64_t seed) {
        if (mib == 0)
                return 0;
        size_t len = mib << 20;
        uint64_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (p == MAP_FAILED)
                return -1;
        for (size_t pg = 0; pg < len / PAGE; pg++) {
                uint64_t s = mix(seed * 0x100000001b3ULL + pg);
                uint64_t *w = p + pg * (PAGE / sizeof *p);
                for (size_t i = 0; i < PAGE / sizeof *p; i++)
                        w[i] = s = mix(s);
        }
        return 0;
}

int main(void) {
        (void) mkdir("/dev", 0755);
        if (mount("devtmpfs", "/dev", "devtmpfs", 0, NULL) == 0 || access("/dev/console", W_OK) == 0) {
                int fd = open("/dev/console", O_WRONLY | O_NOCTTY);
                if (fd >= 0)
                        console = fd;
        }
        unsigned long shared = env_ulong("tenant_shared_mib", 64);
        unsigned long unique = env_ulong("tenant_unique_mib", 16);
        unsigned long seed = env_ulong("tenant_seed", 1);
        if (fill(shared, 0) < 0 || fill(unique, seed + 1) < 0) {
                say("ksmt2-tenant-failed: cannot allocate %lu+%lu MiB\n", shared, unique);
                idle_forever();
        }
        say("ksmt2-tenant-ready shared=%lu unique=%lu\n", shared, unique);
        idle_forever();
}
