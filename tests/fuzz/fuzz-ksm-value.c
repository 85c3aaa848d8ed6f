/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ksm_parse_value() on any text for any KSM file (the first byte picks
 * which); whatever parses must format back to text that parses to the same
 * value, since the knob journal stores values that way. */
#include <errno.h>

#include "fuzz.h"
#include "ksm-sysfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1)
                return 0;
        KsmKey k = (KsmKey) (data[0] % _KSM_KEY_MAX);
        char *text = fuzz_text(data + 1, size - 1);
        uint64_t v = 0x5a5a5a5a, again = 0;
        char buf[32];

        int r = ksm_parse_value(k, text, &v);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r < 0)
                FUZZ_CHECK(v == 0x5a5a5a5a);
        else {
                if (k == KSM_ADVISOR_MODE)
                        FUZZ_CHECK(v == KSM_ADVISOR_NONE || v == KSM_ADVISOR_SCAN_TIME);
                FUZZ_CHECK(ksm_format_value(k, v, buf, sizeof buf) == 0);
                FUZZ_CHECK(ksm_parse_value(k, buf, &again) == 0);
                FUZZ_CHECK(again == v);
        }
        free(text);
        return 0;
}
