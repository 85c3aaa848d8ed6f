/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"
#include "process.h"

/* The last decisions the daemon took, each with its reason, for
 * `ksmctl status`, the bus and the journal ("burst: 2.1 GiB newly
 * mergeable", "excluding pid 812 (contender): ..."). A fixed ring: the
 * oldest entry is overwritten. */
#define DECISION_TEXT_MAX 256
#define DECISION_RING_SIZE 32

typedef struct Decision {
        uint64_t realtime_usec;         /* CLOCK_REALTIME, for people */
        uint64_t monotonic_usec;
        char kind[32];                  /* "tuning", "merge", "exclude", "policy", ... */
        char text[DECISION_TEXT_MAX];
        /* The process the decision is about (its text names it), 0 for
         * the host's own: the bus shows the text to that process's owner
         * and root only (decision_visible_to()). */
        int pid;
        bool owner_known;
        bool owner_pending;             /* for decision_log_resolve_owners() */
        ProcessOwner owner;             /* the process's, when owner_known */
} Decision;

typedef struct DecisionLog {
        Decision ring[DECISION_RING_SIZE];
        uint64_t total;                 /* decisions ever recorded */
} DecisionLog;

/* Whom a decision is about: a pid, with its owner when known, or to be
 * looked up by decision_log_resolve_owners() (resolve); neither: root's to
 * see (a pid whose process is not known any more). */
typedef struct DecisionSubject {
        int pid;
        bool owner_known;
        bool resolve;
        ProcessOwner owner;
} DecisionSubject;
#define DECISION_SUBJECT_PROCESS(p) \
        ((DecisionSubject) { .pid = (p)->pid, .owner_known = true, .owner = process_owner_of(p) })
#define DECISION_SUBJECT_PID(p) ((DecisionSubject) { .pid = (p), .resolve = true })

/* Records a decision about the host (and returns it, e.g. to log it). */
const Decision *decision_log_add(DecisionLog *l, const char *kind, const char *fmt, ...) _printf_(3, 4);
/* Records a decision about one process. */
const Decision *decision_log_add_about(DecisionLog *l, DecisionSubject who, const char *kind, const char *fmt, ...)
        _printf_(4, 5);
/* Looks up, once, the owner of each decision recorded with
 * DECISION_SUBJECT_PID() (the controller's know pids only): owner() returns
 * false for a process that is gone, whose decisions then stay root's to
 * see. Once only, and right after they were recorded, so a pid reused later
 * is not taken for the process the decision was about. */
void decision_log_resolve_owners(DecisionLog *l, bool (*owner)(const void *userdata, int pid, ProcessOwner *ret),
                                 const void *userdata);
/* Whether viewer may read d's text: a decision about the host, or about a
 * process viewer may see (process_visible_to()). */
bool decision_visible_to(const Decision *d, uid_t viewer);
/* Number of entries held, at most DECISION_RING_SIZE. */
unsigned decision_log_size(const DecisionLog *l);
/* i = 0 is the newest. NULL past the end. */
const Decision *decision_log_get(const DecisionLog *l, unsigned i);
