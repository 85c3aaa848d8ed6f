/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* A fake proc/sys tree in a temporary directory, for running readers on
 * hostile content. Paths given to fake_write() are relative to the tree
 * ("proc/42/stat") and their directories are created as needed. */
typedef struct FakeTree {
        char path[256];
} FakeTree;

void fake_tree_init(FakeTree *t);             /* aborts the test on failure */
void fake_tree_done(FakeTree *t);             /* rm -rf */
void fake_write(FakeTree *t, const char *rel, const char *content);
void fake_write_bytes(FakeTree *t, const char *rel, const char *content, unsigned long len);
void fake_mkdir(FakeTree *t, const char *rel);
void fake_remove(FakeTree *t, const char *rel);
/* A minimal tree that root_open() accepts: proc/, sys/, proc/self/mounts
 * (cgroup2 at /sys/fs/cgroup/unified), sys/kernel/mm/ksm with default knobs. */
void fake_tree_populate_minimal(FakeTree *t);
/* proc/PID/stat of a task: comm, state, flags, num_threads and the start
 * time in clock ticks after boot; ppid 1, the rest fixed. */
void fake_write_stat(FakeTree *t, int pid, const char *comm, char state, unsigned flags, int threads,
                     unsigned long long start_ticks);
