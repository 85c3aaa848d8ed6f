/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The restore book a killed daemon leaves in its runtime directory (what
 * excluded processes had): whatever a restart accepts from it must survive
 * a format/parse round trip unchanged, or a second restart would give a
 * process back other ranges than it had. The ledger of what the daemon
 * switched on is read the same way. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "log.h"
#include "merge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = fuzz_text(data, size);
        MergeRestoreBook a = {}, b = {};

        log_set_max_level(LOG_CRIT); /* a warning per bad line */
        int n = merge_restore_book_parse(&a, text, "fuzz");
        FUZZ_CHECK(n >= 0 || n == -ENOMEM);
        if (n >= 0) {
                FUZZ_CHECK(a.n <= (size_t) n);
                char *out = merge_restore_book_format(&a);
                FUZZ_CHECK(out);
                int m = merge_restore_book_parse(&b, out, "fuzz");
                FUZZ_CHECK(m == (int) a.n);
                FUZZ_CHECK(b.n == a.n);
                char *again = merge_restore_book_format(&b);
                FUZZ_CHECK(again && strcmp(again, out) == 0);
                for (size_t i = 0; i < a.n; i++) {
                        const MergeRestoreEntry *x = &a.entries[i];
                        FUZZ_CHECK(x->pid > 0);
                        FUZZ_CHECK(x->merge_any ? x->ranges.n == 0 : x->ranges.n > 0);
                        for (size_t k = 0; k < x->ranges.n; k++)
                                FUZZ_CHECK(x->ranges.ranges[k].start < x->ranges.ranges[k].end);
                }
                free(again);
                free(out);
        }
        merge_restore_book_done(&a);
        merge_restore_book_done(&b);

        /* the ledger beside it (RuntimeDirectory=/enabled), the same way */
        MergeLedger la = {}, lb = {};
        n = merge_ledger_parse(&la, text, "fuzz");
        FUZZ_CHECK(n >= 0 || n == -ENOMEM);
        if (n >= 0) {
                FUZZ_CHECK(la.n <= (size_t) n);
                char *out = merge_ledger_format(&la);
                FUZZ_CHECK(out);
                FUZZ_CHECK(merge_ledger_parse(&lb, out, "fuzz") == (int) la.n);
                char *again = merge_ledger_format(&lb);
                FUZZ_CHECK(again && strcmp(again, out) == 0);
                free(again);
                free(out);
        }
        merge_ledger_done(&la);
        merge_ledger_done(&lb);
        free(text);
        return 0;
}
