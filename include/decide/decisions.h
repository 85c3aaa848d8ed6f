/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

#include "macro.h"

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
} Decision;

typedef struct DecisionLog {
        Decision ring[DECISION_RING_SIZE];
        uint64_t total;                 /* decisions ever recorded */
} DecisionLog;

/* Records a decision (and returns it, e.g. to log it). */
const Decision *decision_log_add(DecisionLog *l, const char *kind, const char *fmt, ...) _printf_(3, 4);
/* Number of entries held, at most DECISION_RING_SIZE. */
unsigned decision_log_size(const DecisionLog *l);
/* i = 0 is the newest. NULL past the end. */
const Decision *decision_log_get(const DecisionLog *l, unsigned i);
