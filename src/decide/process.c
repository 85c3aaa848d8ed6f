/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process.h"
#include "string-table.h"
#include "util.h"

static const char *const verdict_action_table[_VERDICT_ACTION_MAX] = {
        [VERDICT_LEAVE_ALONE] = "leave-alone",
        [VERDICT_MERGE] = "merge",
        [VERDICT_WAIT] = "wait",
        [VERDICT_DONT_MERGE] = "dont-merge",
};

/* "?" rather than NULL: logs and the bus print it as it is. */
DEFINE_STRING_TABLE_TO_STRING_FALLBACK(verdict_action, VerdictAction, "?");

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

bool process_owner_visible_to(const ProcessOwner *o, uid_t viewer) {
        if (viewer == (uid_t) -1)
                return false;
        if (viewer == 0)
                return true;
        return viewer == o->uid && viewer == o->euid && viewer == o->suid && o->gid == o->egid &&
               o->egid == o->sgid && o->dumpable == 1;
}

const char *process_identity_changed(const ProcessIdentity *then, const ProcessIdentity *now, char *buf, size_t n) {
        if (then->exe_dev != now->exe_dev || then->exe_ino != now->exe_ino)
                snprintf(buf, n, "another executable (ino %" PRIu64 " -> %" PRIu64 ")", then->exe_ino, now->exe_ino);
        else if (memcmp(then->uid, now->uid, sizeof then->uid) != 0 || memcmp(then->gid, now->gid, sizeof then->gid) != 0)
                snprintf(buf, n, "other credentials (euid %u egid %u -> euid %u egid %u)", then->uid[1], then->gid[1],
                         now->uid[1], now->gid[1]);
        else if (then->cap_permitted != now->cap_permitted)
                snprintf(buf, n, "other capabilities (CapPrm %" PRIx64 " -> %" PRIx64 ")", then->cap_permitted,
                         now->cap_permitted);
        else if (memcmp(then->mm_layout, now->mm_layout, sizeof then->mm_layout) != 0)
                snprintf(buf, n, "an exec since (stack %" PRIx64 " -> %" PRIx64 ")", then->mm_layout[2],
                         now->mm_layout[2]);
        else
                return NULL;
        return buf;
}

const char *process_identity_privileged(const ProcessIdentity *id, char *buf, size_t n) {
        bool uids_differ = false, gids_differ = false;
        for (size_t i = 1; i < ELEMENTSOF(id->uid); i++) {
                uids_differ |= id->uid[i] != id->uid[0];
                gids_differ |= id->gid[i] != id->gid[0];
        }
        if (uids_differ || gids_differ)
                snprintf(buf, n, "setuid or setgid (uid %u %u %u %u gid %u %u %u %u)", id->uid[0], id->uid[1],
                         id->uid[2], id->uid[3], id->gid[0], id->gid[1], id->gid[2], id->gid[3]);
        else if (id->secure_exec == 1)
                snprintf(buf, n, "privileged exec (AT_SECURE)");
        else if (id->dumpable == 0)
                snprintf(buf, n, "not dumpable");
        else if (id->uid[0] != 0 && id->cap_permitted != 0)
                snprintf(buf, n, "uid %u holds capabilities (CapPrm %" PRIx64 ")", id->uid[0], id->cap_permitted);
        else
                return NULL;
        return buf;
}

int process_merging_enabled(const Process *p) {
        if (!p->ksm_stat_valid)
                return -1;
        if (p->ksm_stat.merge_any < 0 && p->ksm_stat.mergeable < 0)
                /* Neither ksm_stat nor smaps said (a kernel without the
                 * lines, smaps not readable to this reader): ksmd keeps
                 * rmap items only for pages of VM_MERGEABLE mappings. They
                 * outlive a switch-off until ksmd passes again, so this
                 * errs towards "on"; the actuator, which can read smaps
                 * through the injector, checks again before it acts. */
                return p->ksm_stat.rmap_items > 0 || p->ksm_stat.merging_pages > 0;
        return p->ksm_stat.merge_any == 1 || p->ksm_stat.mergeable == 1;
}

uint64_t process_unmet_pages(const Process *p, uint64_t page_size) {
        if (process_merging_enabled(p) != 1 || page_size == 0)
                return 0;
        uint64_t rss = p->rss_anon_kib * 1024 / page_size;
        /* rmap items outlive a page for a while (ksmd drops them when it
         * passes), and a page merged into the zero page leaves RSS but keeps
         * its item: clamp, never borrow from another process. */
        return rss > p->ksm_stat.rmap_items ? rss - p->ksm_stat.rmap_items : 0;
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
