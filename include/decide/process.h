/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"
#include "merge-method.h"
#include "procfs-parse.h"

/* The processes the daemon knows, with the facts classification needs and
 * the verdict it reached. Filled on the event loop from files that never
 * take the target's mmap_lock (stat, status, cgroup, exe, ksm_merging_pages);
 * the ksm_stat figures arrive later from the off-loop reader (mm-reader.h).
 * Only the event loop thread touches a ProcessTable. */

typedef enum VerdictAction {
        VERDICT_LEAVE_ALONE,    /* no policy matched (or Method=none): never touched */
        VERDICT_MERGE,          /* a policy wants merging on, and its conditions hold */
        VERDICT_WAIT,           /* a policy wants merging, but not yet (too small, too young) */
        VERDICT_DONT_MERGE,     /* Mode=never: merging must be off */
        _VERDICT_ACTION_MAX,
} VerdictAction;

const char *verdict_action_to_string(VerdictAction a); /* "leave-alone", "merge", "wait", "dont-merge" */

#define VERDICT_REASON_MAX 192  /* same size as ProcessAction.reason */
#define VERDICT_POLICY_MAX 256

typedef struct Verdict {
        VerdictAction action;
        MergeMethod method;             /* from the policy's Method= */
        bool always;                    /* Mode=always: the controller must not exclude it */
        bool inject_privileged;         /* InjectPrivileged=yes */
        char policy_file[VERDICT_POLICY_MAX]; /* "" when no policy matched */
        unsigned policy_line;           /* line of the [Match] section that matched */
        char reason[VERDICT_REASON_MAX]; /* "anon RSS 12 MiB < MinAnonMiB=64" */
        bool needs_cmdline;             /* WAIT until the command line has been read */
        bool opted_out;                 /* LEAVE_ALONE because the process opted out itself (opt-out.h) */
} Verdict;

/* Whether the daemon may change merging for a process with this verdict at
 * all: not when no policy matched or its policy says Method=none. NULL
 * reason when it may. */
const char *verdict_refuses_change(const Verdict *v);
/* Whether the controller may exclude (disable) or readmit (enable) a
 * process with this verdict: only one the daemon may change at all; never
 * takes a Mode=always process out, never switches merging on for one whose
 * policy no longer wants it (Mode=never, or no policy since a reload). NULL
 * reason when allowed. */
const char *verdict_refuses_controller(const Verdict *v, bool enable);

/* What a policy matched a process as, kept so that the actuator can tell,
 * once it holds the process stopped and before it writes anything, whether
 * it is still that program with those credentials: an exec changes neither
 * pid nor start time, and facts may be an Interval= old.
 *  - exe_dev/exe_ino: the executable itself (stat of /proc/PID/exe), not its
 *    path, which a rename or a new file under the same name keeps;
 *  - the uid and gid sets and CapPrm of status: a setuid exec or a change of
 *    credentials moves them;
 *  - mm_layout (stat): where the mm put its code, stack, arguments and
 *    environment. Every exec builds a new mm, and with ASLR (the default) its
 *    stack and a PIE's code land elsewhere each time, so an exec of the same
 *    binary with the same credentials shows here too; with ASLR off for the
 *    process (setarch -R) such an exec can look the same, and then it is the
 *    same program with the same credentials the policy matched.
 * dumpable is read with every refresh (a stat: the bus's visibility rule
 * needs it), AT_SECURE only at action time. */
typedef struct ProcessIdentity {
        bool valid;                     /* false: nothing known, nothing to compare */
        uint64_t exe_dev, exe_ino;
        uid_t uid[4];                   /* real, effective, saved, filesystem */
        gid_t gid[4];
        uint64_t cap_permitted;
        uint64_t mm_layout[10];
        int dumpable;                   /* 1, 0, -1 unknown: its status file is owned by its euid/egid (1)
                                         * or by root (0), as task_dump_owner() decides; for a process whose
                                         * euid and egid are root's the owner tells nothing (-1) */
        /* At action time only (process_read_identity with privilege): */
        int secure_exec;                /* AT_SECURE of auxv: its exec gained privileges (setuid, setgid,
                                         * file capabilities); -1 unknown */
} ProcessIdentity;

/* Whether now is still the process then was (both valid): NULL if so, else
 * what changed, written into buf ("executable changed (8:1 ino 1234 ->
 * 8:1 ino 99)"). */
const char *process_identity_changed(const ProcessIdentity *then, const ProcessIdentity *now, char *buf, size_t n);
/* Whether it runs with more than its owner's privileges: not dumpable, a
 * privileged exec, uids or gids that differ, or capabilities its non-root
 * owner does not have. NULL if not, else why, in buf. */
const char *process_identity_privileged(const ProcessIdentity *id, char *buf, size_t n);

struct SavingsIndexGroup;

/* Where the daemon's incremental sums count a process (discovery.c keeps
 * them current on every change and removal, so that no tick has to walk
 * the whole table): which verdict and "slow" it is counted under, its
 * place in the list of processes worth a look each tick, and its share of
 * its cgroup's savings (savings.h, SavingsIndex). Belongs to the table
 * entry, not to the incarnation: kept when a reused pid starts over. */
typedef struct ProcessIndexState {
        size_t hot_pos;                 /* 1 + its position in that list; 0: not in it */
        bool verdict_counted;
        VerdictAction counted_action;
        bool slow_counted;
        struct SavingsIndexGroup *savings_group; /* NULL: counted in none */
        uint64_t savings_pages;         /* what it added to that group */
        int64_t savings_profit;
} ProcessIndexState;

/* What decides who may see a process's details (process_owner_visible_to()). */
typedef struct ProcessOwner {
        uid_t uid, euid, suid;          /* real, effective, saved */
        gid_t gid, egid, sgid;
        int dumpable;                   /* as ProcessIdentity.dumpable: 1, 0, -1 unknown */
} ProcessOwner;

/* What is known about one process (a thread group), by its pid. */
typedef struct Process {
        int pid;
        uint64_t start_time_ticks;      /* stat field 22: tells a reused pid apart */
        uint64_t start_time_usec;       /* the same as CLOCK_BOOTTIME usec, for ages */
        int ppid;
        uid_t uid;                      /* real uid */
        uid_t euid;                     /* effective uid */
        ProcessIdentity identity;       /* read with the facts the verdict is made of */
        char comm[64];                  /* from stat: may hold spaces and ')' */
        char *exe;                      /* readlink of exe without " (deleted)"; NULL when unreadable
                                         * (kernel thread, gone, no permission) */
        char *cgroup;                   /* v2 path relative to the cgroup root, "" for the root; NULL when unknown */
        char *unit;                     /* systemd unit the cgroup is in ("nginx.service"); NULL when none */
        char *vm_name;                  /* libvirt/machined VM name from machine-qemu\x2dN\x2dNAME.scope; NULL */
        bool kthread;
        bool zombie_leader;             /* its main thread exited, other threads live on */
        uint64_t rss_anon_kib;          /* status RssAnon */
        unsigned threads;               /* status Threads */
        int tracer_pid;                 /* status TracerPid, 0 when not traced */
        char *cmdline;                  /* arguments joined by spaces; read off the loop, only when a
                                         * policy has Cmdline=; NULL until then (or unreadable) */
        bool cmdline_read;              /* the off-loop read of cmdline finished (cmdline may be NULL) */

        /* KSM state of the process. ksm_merging_pages is lock-free and read
         * on the loop; the rest comes from ksm_stat off the loop. */
        uint64_t ksm_merging_pages;
        bool ksm_stat_valid;            /* ksm_stat below has been read at least once */
        ProcKsmStat ksm_stat;
        uint64_t ksm_stat_usec;         /* CLOCK_MONOTONIC of that read */
        bool slow;                      /* a read of an mmap_lock file overran its deadline */
        uint64_t slow_since_usec;       /* CLOCK_MONOTONIC, 0 when not slow */

        uint64_t facts_usec;            /* CLOCK_MONOTONIC of the last fact refresh */
        uint64_t discovered_usec;       /* CLOCK_MONOTONIC when the daemon first saw it */
        uint64_t generation;            /* resync mark: entries not seen in a full scan are gone */

        bool have_verdict;
        Verdict verdict;
        uint64_t verdict_usec;          /* CLOCK_MONOTONIC when the verdict was reached */
        bool verdict_logged;            /* announced at info level (once it outlived a tick) */
        uint64_t action_planned_usec;   /* CLOCK_MONOTONIC of the last ProcessAction planned, 0 none;
                                         * or of its ETIMEDOUT outcome (a target stuck in D waits the
                                         * retry back-off from then) */

        /* The controller took it out of KSM (contention) and has not
         * readmitted it: discovery must not switch merging back on for it
         * at its next tick (one owner of the process's merge state). */
        bool excluded;

        /* The merge actuator's last outcome for it (merge.h), for status and the bus. */
        char merge_outcome[192];        /* "method inject refused: EBUSY (already traced by pid 77)" */
        int merge_outcome_kind;         /* MergeOutcomeKind */
        uint64_t merge_outcome_usec;    /* CLOCK_MONOTONIC, 0 when none yet */

        ProcessIndexState index;        /* discovery's bookkeeping, see above */
} Process;

/* Merging is on for the process as far as ksm_stat tells: whole-mm
 * (PR_SET_MEMORY_MERGE) or some VMA marked MADV_MERGEABLE (QEMU guest RAM).
 * -1 when ksm_stat is not known yet. On a kernel without ksm_stat's
 * ksm_merge_any/ksm_mergeable lines whose smaps the reader could not read
 * either, from ksmd's rmap items and merged pages. */
int process_merging_enabled(const Process *p);

/* Who may see a process's details (its name, cgroup, unit, executable, KSM
 * figures, verdict): root, and a viewer whose uid is the process's real,
 * effective and saved uid, when the process is dumpable and its real,
 * effective and saved gids are one. That is the kernel's own rule for
 * /proc/PID/ksm_stat (__ptrace_may_access() in PTRACE_MODE_READ_FSCREDS: the
 * caller's fsuid equal to the target's uid, euid and suid, its fsgid to the
 * target's gid, egid and sgid, and the target's mm dumpable, or
 * CAP_SYS_PTRACE) as far as the daemon knows its caller, by uid only: a
 * setuid program a user started (euid 0), a daemon that dropped to the
 * user's uid keeping root as its saved uid, or a process of theirs that
 * made itself non-dumpable is not theirs to see, as the kernel says; one
 * whose gids differ is nobody's but root's (no caller's single gid can
 * equal them all). Unknown dumpability counts as not dumpable. (uid_t) -1,
 * a viewer whose credentials are unknown, sees none. ksmtuned2(8), "What
 * callers see". */
bool process_owner_visible_to(const ProcessOwner *o, uid_t viewer);
static inline ProcessOwner process_owner_of(const Process *p) {
        const ProcessIdentity *id = &p->identity;
        return (ProcessOwner) { .uid = p->uid, .euid = p->euid, .suid = id->uid[2],
                                .gid = id->gid[0], .egid = id->gid[1], .sgid = id->gid[2],
                                .dumpable = id->dumpable };
}
static inline bool process_visible_to(const Process *p, uid_t viewer) {
        ProcessOwner o = process_owner_of(p);
        return process_owner_visible_to(&o, viewer);
}

/* Mergeable memory ksmd has not met yet in this process, in pages: its
 * anonymous RSS (status, lock-free) beyond the pages ksmd has an rmap item
 * for (ksm_stat's ksm_rmap_items), for a process with merging on; 0 when
 * merging is off or ksm_stat is not known yet. An upper bound for a process
 * that marked only some ranges MADV_MERGEABLE: the rest of its anonymous
 * memory (QEMU's own heap) stays in the figure for good. */
uint64_t process_unmet_pages(const Process *p, uint64_t page_size);

/* After an exec the mm and the command line are new: forget what was read
 * from the old ones (ksm_stat, cmdline, a planned action). */
void process_forget_exec_state(Process *p);

/* Frees the strings of p and zeroes it. */
void process_done(Process *p);

/* pid -> Process, open hashing. Pointers stay valid until that pid is
 * removed or the table is freed (entries are allocated one by one). */
typedef struct ProcessTable ProcessTable;

int process_table_new(ProcessTable **ret);
ProcessTable *process_table_free(ProcessTable *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(ProcessTable *, process_table_free);

size_t process_table_size(const ProcessTable *t);
Process *process_table_get(const ProcessTable *t, int pid);
/* Returns the entry for pid, creating a zeroed one (pid set) when absent;
 * *ret_created says which. -ENOMEM. */
int process_table_ensure(ProcessTable *t, int pid, Process **ret, bool *ret_created);
/* Removes and frees; returns true when pid was present. Inserting while
 * iterating is not allowed (the table may grow). */
bool process_table_remove(ProcessTable *t, int pid);
/* Iteration: *iter starts at 0; returns NULL at the end. Removing the
 * returned entry while iterating is allowed. */
Process *process_table_next(const ProcessTable *t, size_t *iter);

#define PROCESS_TABLE_FOREACH(p, t, i) for (size_t i = 0; ((p) = process_table_next((t), &i));)
