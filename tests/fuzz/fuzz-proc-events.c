/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Datagrams from the proc connector socket: netlink messages carrying a
 * cn_msg and a proc_event each. Anything can arrive there in principle (a
 * newer kernel's event, a truncated read); nothing may read past the
 * buffer or hand a process event with a pid <= 0 to the discovery code. */
#include <errno.h>

#include "fuzz.h"
#include "proc-events.h"

static void check_event(const ProcEvent *ev, void *userdata) {
        unsigned *n = userdata;
        FUZZ_CHECK((unsigned) ev->type < _PROC_EV_MAX);
        if (ev->type != PROC_EV_ACK && ev->type != PROC_EV_OTHER)
                FUZZ_CHECK(ev->pid > 0 && ev->tid > 0);
        if (ev->type == PROC_EV_COMM)
                FUZZ_CHECK(strnlen(ev->comm, sizeof ev->comm) < sizeof ev->comm);
        (*n)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* A copy of exactly size bytes, so ASan sees any overread; the
         * socket buffer is 4-byte aligned (netlink), and so is malloc's. */
        uint8_t *buf = malloc(size ? size : 1);
        unsigned n = 0;
        ProcEvent ev;

        if (!buf)
                abort();
        memcpy(buf, data, size);
        int r = proc_events_decode_datagram(buf, size, check_event, &n);
        FUZZ_CHECK(r == -EBADMSG || (r >= 0 && (unsigned) r == n));

        /* The same bytes as one bare connector payload. */
        memset(&ev, 0xa5, sizeof ev);
        r = proc_event_decode(buf, size, &ev);
        FUZZ_CHECK(r == 0 || r == -EBADMSG);
        if (r == 0) {
                unsigned one = 0;
                check_event(&ev, &one);
        } else
                FUZZ_CHECK(fuzz_untouched(&ev, sizeof ev, 0xa5));
        free(buf);
        return 0;
}
