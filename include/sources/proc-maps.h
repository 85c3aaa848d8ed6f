/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* /proc/<pid>/maps. Reading it takes the target's mmap_lock: only off the
 * event loop (the merge worker), see DESIGN.md §3. */

typedef enum MapKind {
        MAP_KIND_ANON,          /* anonymous: no file, or [heap], [stack], [anon:NAME] */
        MAP_KIND_FILE,
        MAP_KIND_SPECIAL,       /* [vdso], [vvar], [vsyscall], [uprobes]...: not a place to advise */
} MapKind;

typedef struct MapRange {
        uint64_t start, end;
        bool read, write, exec, private_;
        MapKind kind;
        bool vdso;
        bool mergeable;         /* VM_MERGEABLE: known only from smaps (proc_smaps_*) */
        char path[128];         /* truncated; "" for anonymous */
} MapRange;

typedef struct MapList {
        MapRange *ranges;
        size_t n;
} MapList;

void map_list_done(MapList *l);
/* A copy of src into *ret (empty for an empty src): 0 or -ENOMEM. */
int map_list_copy(const MapList *src, MapList *ret);

/* Parses maps text. A line that does not parse makes the whole text
 * -EINVAL (the kernel writes every line the same way). */
int proc_maps_parse(const char *text, MapList *ret);
int proc_maps_read(int pid_dirfd, MapList *ret);

/* The ranges marked VM_MERGEABLE ("mg" in smaps' VmFlags: madvise
 * MADV_MERGEABLE, or every VMA under PR_SET_MEMORY_MERGE), adjacent ones
 * coalesced: what a process merges, exactly, so that taking it out of KSM
 * and back in restores what it had. smaps walks the page tables too (it
 * counts RSS): read it only when acting on the process, never per tick. */
int proc_smaps_parse_mergeable(const char *text, MapList *ret);
int proc_smaps_read_mergeable(int pid_dirfd, MapList *ret);

/* Anonymous private ranges (what KSM can merge and MADV_MERGEABLE is for),
 * adjacent ones coalesced. */
int map_list_anon_private(const MapList *l, MapList *ret);
/* Every advisable range (not SPECIAL), adjacent ones coalesced: the runs
 * MADV_UNMERGEABLE is applied to when a process marked ranges itself. */
int map_list_advisable_runs(const MapList *l, MapList *ret);
