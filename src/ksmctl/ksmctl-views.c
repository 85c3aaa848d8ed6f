/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Operators' views of what the daemon did, over time, and why: the
 * controller's line of status. */
#include <stdio.h>

#include "ksmctl.h"
#include "util.h"

void print_controller(FILE *f, const char *phase, int64_t allowance_usec, const char *reason) {
        char t[32];

        if (isempty(phase))
                return;
        fprintf(f, "%-12s%s, ", "Controller:", CESCAPE(phase, CESCAPE_CONTROL));
        if (allowance_usec > 0)
                fprintf(f, "allowance %s left", format_timespan(t, sizeof t, (uint64_t) allowance_usec));
        else if (allowance_usec < 0)
                fprintf(f, "allowance overdrawn by %s", format_timespan(t, sizeof t, (uint64_t) -allowance_usec));
        else
                fputs("allowance spent", f);
        fprintf(f, ": %s\n", CESCAPE(reason, CESCAPE_CONTROL));
}
