/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>
#include <stdio.h>

#include "decisions.h"
#include "process.h"
#include "util.h"

_printf_(4, 0) static const Decision *log_add(DecisionLog *l, DecisionSubject who, const char *kind, const char *fmt,
                                              va_list ap) {
        Decision *d = &l->ring[l->total % DECISION_RING_SIZE];

        d->realtime_usec = now_usec(CLOCK_REALTIME);
        d->monotonic_usec = now_usec(CLOCK_MONOTONIC);
        strscpy(d->kind, sizeof d->kind, kind);
        vsnprintf(d->text, sizeof d->text, fmt, ap);
        d->pid = who.pid;
        d->owner_known = who.pid > 0 && who.owner_known;
        d->owner_pending = who.pid > 0 && !who.owner_known && who.resolve;
        d->owner = who.owner;
        l->total++;
        return d;
}

const Decision *decision_log_add(DecisionLog *l, const char *kind, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        const Decision *d = log_add(l, (DecisionSubject) {}, kind, fmt, ap);
        va_end(ap);
        return d;
}

const Decision *decision_log_add_about(DecisionLog *l, DecisionSubject who, const char *kind, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        const Decision *d = log_add(l, who, kind, fmt, ap);
        va_end(ap);
        return d;
}

void decision_log_resolve_owners(DecisionLog *l, bool (*owner)(const void *userdata, int pid, ProcessOwner *ret),
                                 const void *userdata) {
        for (size_t i = 0; i < DECISION_RING_SIZE; i++) {
                Decision *d = &l->ring[i];
                if (!d->owner_pending)
                        continue;
                d->owner_pending = false;
                d->owner_known = owner(userdata, d->pid, &d->owner);
        }
}

bool decision_visible_to(const Decision *d, uid_t viewer) {
        if (d->pid <= 0 || viewer == 0)
                return true;
        return d->owner_known && process_owner_visible_to(&d->owner, viewer);
}

unsigned decision_log_size(const DecisionLog *l) {
        return l->total < DECISION_RING_SIZE ? (unsigned) l->total : DECISION_RING_SIZE;
}

const Decision *decision_log_get(const DecisionLog *l, unsigned i) {
        if (i >= decision_log_size(l))
                return NULL;
        return &l->ring[(l->total - 1 - i) % DECISION_RING_SIZE];
}
