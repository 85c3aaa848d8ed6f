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

/* ksm_merge_any and ksm_mergeable for a kernel whose /proc/PID/ksm_stat
 * does not print them (6.12 and older), from behaviour: mergeable when a
 * range is marked VM_MERGEABLE; merge_any (PR_SET_MEMORY_MERGE over the
 * whole mm) when a marked range is not anonymous private memory. The kernel
 * marks every KSM-compatible mapping of a merge-any mm, its executable's
 * and libraries' private file mappings included (mm/ksm.c
 * ksm_add_vmas(), and ksm_add_vma() for each new mapping), while a process
 * that marks ranges itself (QEMU, a JVM) marks the anonymous memory it
 * wants merged. Not sure in two rare cases: a merge-any process that
 * unmarked every file mapping itself reads merge_any 0, and one that
 * marks a private file mapping itself reads 1. mergeable and anon_private
 * are sorted, coalesced runs (proc_smaps_parse_mergeable(),
 * map_list_anon_private()). */
void map_list_ksm_flags(const MapList *mergeable, const MapList *anon_private, int *ret_merge_any,
                        int *ret_mergeable);
/* The same from one smaps text: walks the target's page tables under its
 * mmap_lock, so off the event loop only. */
int proc_smaps_parse_ksm_flags(const char *text, int *ret_merge_any, int *ret_mergeable);
int proc_smaps_read_ksm_flags(int pid_dirfd, int *ret_merge_any, int *ret_mergeable);

/* Anonymous private ranges (what KSM can merge and MADV_MERGEABLE is for),
 * adjacent ones coalesced. */
int map_list_anon_private(const MapList *l, MapList *ret);
/* Every advisable range (not SPECIAL), adjacent ones coalesced: the runs
 * MADV_UNMERGEABLE is applied to when a process marked ranges itself. */
int map_list_advisable_runs(const MapList *l, MapList *ret);
