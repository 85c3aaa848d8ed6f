/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ksmtuned2.conf through the table parser (inih underneath), read from
 * memory as the daemon reads a file. */
#include <errno.h>

#include "conf.h"
#include "fuzz.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Config c;
        ConfDiag diag = {};
        FILE *f;

        /* fmemopen() of zero bytes is refused on older glibc; an empty
         * file is still a file. */
        f = size ? fmemopen((void *) data, size, "r") : fopen("/dev/null", "re");
        if (!f)
                return 0;
        config_init_defaults(&c);
        int r = conf_parse_file(f, "fuzz.conf", config_table, config_table_size, &c, NULL, &diag);
        fclose(f);
        FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -EIO || r == -ENOMEM);

        /* Every diagnostic names the file and a line. */
        for (size_t i = 0; i < diag.n; i++)
                FUZZ_CHECK(startswith(diag.lines[i], "fuzz.conf:") && diag.lines[i][10] >= '0' &&
                           diag.lines[i][10] <= '9');
        /* A syntax error is said once, as the last word. */
        if (r == -EBADMSG)
                FUZZ_CHECK(diag.n > 0 && strstr(diag.lines[diag.n - 1], "syntax error"));
        /* Out-of-range values are rejected, so what stands is in range. */
        FUZZ_CHECK(c.interval_usec >= 100 * USEC_PER_MSEC && c.interval_usec <= 3600 * USEC_PER_SEC);
        FUZZ_CHECK(c.ksmd_sample_interval_usec >= USEC_PER_MSEC &&
                   c.ksmd_sample_interval_usec <= 10 * USEC_PER_SEC);
        FUZZ_CHECK(c.max_page_sharing == -1 || (c.max_page_sharing >= 2 && c.max_page_sharing <= 1 << 20));
        FUZZ_CHECK(c.smart_scan >= -1 && c.smart_scan <= 1);
        FUZZ_CHECK(c.runtime_dir);

        conf_diag_free(&diag);
        config_done(&c);
        return 0;
}
