/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "opt-out.h"
#include "util.h"

static bool is_qemu_name(const char *name) {
        return name && (fnmatch("qemu-system-*", name, 0) == 0 || streq(name, "qemu-kvm") || streq(name, "kvm"));
}

bool opt_out_applies(const Process *p) {
        const char *base = p->exe ? strrchr(p->exe, '/') : NULL;
        return is_qemu_name(base ? base + 1 : p->exe) || is_qemu_name(p->comm);
}

/* QEMU's booleans: on/off, yes/no, true/false (qapi/qobject-input-visitor). -1 when neither. */
static int parse_qemu_bool(const char *v, size_t n) {
        static const char *const off[] = { "off", "no", "false" }, *const on[] = { "on", "yes", "true" };
        for (size_t i = 0; i < ELEMENTSOF(off); i++) {
                if (strlen(off[i]) == n && strncmp(v, off[i], n) == 0)
                        return 0;
                if (strlen(on[i]) == n && strncmp(v, on[i], n) == 0)
                        return 1;
        }
        return -1;
}

/* The value of mem-merge= in one -machine argument ("pc,mem-merge=off,..."):
 * 0 off, 1 on, -1 not given. ",," is QEMU's escaped comma inside a value. */
static int machine_mem_merge(const char *arg, size_t len) {
        int ret = -1;
        for (size_t i = 0; i < len;) {
                size_t j = i;
                while (j < len && !(arg[j] == ',' && !(j + 1 < len && arg[j + 1] == ',')))
                        j += arg[j] == ',' ? 2 : 1;
                static const char key[] = "mem-merge=";
                if (j - i > sizeof key - 1 && strncmp(arg + i, key, sizeof key - 1) == 0) {
                        int b = parse_qemu_bool(arg + i + sizeof key - 1, j - i - (sizeof key - 1));
                        if (b >= 0)
                                ret = b;
                }
                i = j + 1;
        }
        return ret;
}

bool opt_out_find(const char *cmdline, char *buf, size_t size) {
        int state = -1;
        char found[160] = "";

        if (!cmdline)
                return false;
        /* Tokens as the kernel gave them, joined by single spaces: an
         * argument holding a space splits, which at worst hides an opt-out
         * the process wrote in an odd way (then the default, merge, holds). */
        const char *s = cmdline;
        const char *prev = NULL;
        size_t prev_len = 0;
        while (*s) {
                const char *e = strchr(s, ' ');
                size_t n = e ? (size_t) (e - s) : strlen(s);
                const char *arg = NULL;
                size_t arg_len = 0;
                /* "-machine X", "--machine X", "-M X", and "-machine=X" */
                if (prev && ((prev_len == 8 && strncmp(prev, "-machine", 8) == 0) ||
                             (prev_len == 9 && strncmp(prev, "--machine", 9) == 0) ||
                             (prev_len == 2 && strncmp(prev, "-M", 2) == 0))) {
                        arg = s;
                        arg_len = n;
                } else if (n > 9 && strncmp(s, "-machine=", 9) == 0) {
                        arg = s + 9;
                        arg_len = n - 9;
                } else if (n > 10 && strncmp(s, "--machine=", 10) == 0) {
                        arg = s + 10;
                        arg_len = n - 10;
                }
                if (arg) {
                        int b = machine_mem_merge(arg, arg_len);
                        if (b >= 0) {
                                state = b;
                                snprintf(found, sizeof found, "-machine %.*s", (int) MIN(arg_len, (size_t) 120), arg);
                        }
                }
                prev = s;
                prev_len = n;
                if (!e)
                        break;
                s = e + 1;
        }
        if (state != 0)
                return false;
        if (buf && size)
                strscpy(buf, size, found);
        return true;
}
