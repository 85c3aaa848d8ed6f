/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One policy file, read through policy_load_file() from a memfd (it wants a
 * path: the file name is what orders and masks policies). */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "policy-load.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char path[64];
        ConfDiag diag = {};
        Policy p;

        int fd = memfd_create("fuzz.policy", MFD_CLOEXEC);
        if (fd < 0)
                return 0;
        /* A memfd is created 0777; as root, a policy others may write is
         * rejected before it is parsed. */
        (void) fchmod(fd, 0644);
        if (size && write(fd, data, size) != (ssize_t) size) {
                close(fd);
                return 0;
        }
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        int r = policy_load_file(path, &p, &diag);
        close(fd);
        FUZZ_CHECK(r == 0 || r == 1 || r == -EBADMSG || r == -ENOMEM);
        for (size_t i = 0; i < diag.n; i++)
                FUZZ_CHECK(startswith(diag.lines[i], path));
        if (r >= 0) {
                FUZZ_CHECK(p.path && p.name);
                if (r == 1)
                        FUZZ_CHECK(size == 0);
                FUZZ_CHECK(p.mode >= 0 && p.mode < _POLICY_MODE_MAX);
                FUZZ_CHECK(p.method >= 0 && p.method < _MERGE_METHOD_MAX);
                FUZZ_CHECK(p.min_anon_mib <= UINT64_C(1) << 20);
                /* A policy that is not marked invalid matches on something:
                 * an empty [Match] must never mean "every process". A new
                 * [Match] key must be added here (Cmdline= was). */
                if (r == 0 && !p.match_invalid)
                        FUZZ_CHECK(p.cgroup.globs || p.comm.globs || p.exe.globs || p.unit.globs ||
                                   p.vm.globs || p.cmdline.globs || p.users.n > 0);
                policy_done(&p);
        }
        conf_diag_free(&diag);
        return 0;
}
