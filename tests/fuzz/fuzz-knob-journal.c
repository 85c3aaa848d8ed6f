/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The on-disk knob journal a SIGKILLed daemon leaves behind: whatever a
 * restart accepts from it must survive a format/parse round trip unchanged,
 * or a second restart would restore something else. */
#include <errno.h>

#include "fuzz.h"
#include "knobs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = fuzz_text(data, size);
        KnobJournal a = {}, b = {};

        int n = knob_journal_parse(&a, text);
        FUZZ_CHECK(n >= 0 || n == -ENOMEM);
        if (n >= 0) {
                /* Counters are never journaled: only knobs are restored. */
                FUZZ_CHECK((a.saved_mask & ((UINT64_C(1) << _KSM_FIRST_KNOB) - 1)) == 0);
                FUZZ_CHECK(n == __builtin_popcountll(a.saved_mask));
                char *out = knob_journal_format(&a);
                FUZZ_CHECK(out);
                int m = knob_journal_parse(&b, out);
                FUZZ_CHECK(m == n);
                FUZZ_CHECK(b.saved_mask == a.saved_mask);
                for (int k = _KSM_FIRST_KNOB; k < _KSM_KEY_MAX; k++)
                        if (a.saved_mask & (UINT64_C(1) << k))
                                FUZZ_CHECK(a.original[k] == b.original[k]);
                free(out);
        }
        knob_journal_done(&a);
        knob_journal_done(&b);
        free(text);
        return 0;
}
