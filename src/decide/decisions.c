/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>
#include <stdio.h>

#include "decisions.h"
#include "util.h"

const Decision *decision_log_add(DecisionLog *l, const char *kind, const char *fmt, ...) {
        Decision *d = &l->ring[l->total % DECISION_RING_SIZE];
        va_list ap;

        d->realtime_usec = now_usec(CLOCK_REALTIME);
        d->monotonic_usec = now_usec(CLOCK_MONOTONIC);
        strscpy(d->kind, sizeof d->kind, kind);
        va_start(ap, fmt);
        vsnprintf(d->text, sizeof d->text, fmt, ap);
        va_end(ap);
        l->total++;
        return d;
}

unsigned decision_log_size(const DecisionLog *l) {
        return l->total < DECISION_RING_SIZE ? (unsigned) l->total : DECISION_RING_SIZE;
}

const Decision *decision_log_get(const DecisionLog *l, unsigned i) {
        if (i >= decision_log_size(l))
                return NULL;
        return &l->ring[(l->total - 1 - i) % DECISION_RING_SIZE];
}
