/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Lines of a tracefs instance's trace_pipe, one per input line, each handed
 * over as exactly its bytes (no terminator: the parser takes a length, and
 * ASan sees any read past it); what parses feeds a contention window, as
 * the sampler does. The first line of the input is also read as ksmd's pid
 * for the window, so the fuzzer finds its way into ksmd's pairing code. */
#include <errno.h>

#include "fuzz.h"
#include "contention.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static ContentionWindow w; /* 30 KiB: not on the stack */
        int ksmd_pid = 39;

        if (size > 0 && data[0] < 128)
                ksmd_pid = data[0];
        contention_window_init(&w, ksmd_pid);
        for (size_t off = 0; off < size;) {
                const uint8_t *nl = memchr(data + off, '\n', size - off);
                size_t len = nl ? (size_t) (nl - (data + off)) : size - off;
                char *line = malloc(len ? len : 1);
                TraceEvent e;

                if (!line)
                        abort();
                memcpy(line, data + off, len);
                memset(&e, 0xa5, sizeof e);
                int r = tracefs_parse_line(line, len, &e);
                FUZZ_CHECK(r == 0 || r == -ENOMSG || r == -EINVAL);
                if (r < 0)
                        FUZZ_CHECK(fuzz_untouched(&e, sizeof e, 0xa5));
                else {
                        FUZZ_CHECK((unsigned) e.type < _TRACE_EVENT_MAX);
                        FUZZ_CHECK(strnlen(e.comm, sizeof e.comm) < sizeof e.comm);
                        contention_window_add(&w, &e);
                }
                free(line);
                off += len + 1;
        }
        FUZZ_CHECK(w.n_holders <= CONTENTION_MAX_HOLDERS && w.n_pending <= CONTENTION_MAX_PENDING);
        const LockHolder *h = contention_window_worst(&w);
        FUZZ_CHECK(!h || (h >= w.holders && h < w.holders + w.n_holders));
        (void) contention_window_span_nsec(&w);
        return 0;
}
