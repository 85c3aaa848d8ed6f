/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cgroupfs.h"
#include "policy.h"
#include "procfs.h"
#include "util.h"

/* The path of the "N:name=systemd:/..." line, without the leading '/'. */
static int parse_named_systemd(const char *text, char **ret) {
        for (const char *line = text; line && *line;) {
                const char *eol = strchr(line, '\n');
                size_t len = eol ? (size_t) (eol - line) : strlen(line);
                const char *c1 = memchr(line, ':', len);

                if (c1 && (size_t) (c1 - line) + 1 < len && startswith(c1 + 1, "name=systemd:/")) {
                        const char *p = c1 + 1 + strlen("name=systemd:/");
                        char *path = strndup(p, len - (size_t) (p - line));
                        if (!path)
                                return -ENOMEM;
                        *ret = path;
                        return 0;
                }
                line = eol ? eol + 1 : NULL;
        }
        return -ENODATA;
}

int cgroup_parse_proc_path(const char *text, char **ret) {
        _cleanup_free_ char *v2 = NULL;
        int r = procfs_parse_cgroup(text, &v2);
        if (r < 0 && r != -ENODATA)
                return r;
        if (r >= 0 && *v2) {
                procfs_strip_deleted(v2);
                *ret = TAKE_PTR(v2);
                return 0;
        }
        /* v2 says root (or nothing): on a legacy host that is all it can say. */
        char *named = NULL;
        int k = parse_named_systemd(text, &named);
        if (k == -ENOMEM)
                return k;
        if (k >= 0 && *named) {
                procfs_strip_deleted(named);
                *ret = named;
                return 0;
        }
        free(named);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(v2);
        return 0;
}

static int unhex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        c = (char) tolower((unsigned char) c);
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

int cgroup_unescape(const char *s, char **ret) {
        char *out = malloc(strlen(s) + 1), *w = out;
        if (!out)
                return -ENOMEM;
        for (const char *p = s; *p; p++) {
                int a, b;
                /* \x00 would cut the name short: keep it as written. */
                if (p[0] == '\\' && p[1] == 'x' && (a = unhex(p[2])) >= 0 && (b = unhex(p[3])) >= 0 &&
                    (a | b) != 0) {
                        *w++ = (char) (a * 16 + b);
                        p += 3;
                } else
                        *w++ = *p;
        }
        *w = 0;
        *ret = out;
        return 0;
}

static const char *const unit_suffixes[] = {
        ".service", ".scope", ".socket", ".mount", ".swap", ".device", ".target", ".timer", ".path",
};

static bool component_is_unit(const char *c, size_t len) {
        for (size_t i = 0; i < ELEMENTSOF(unit_suffixes); i++) {
                size_t s = strlen(unit_suffixes[i]);
                if (len > s && strneq(c + len - s, unit_suffixes[i], s))
                        return true;
        }
        return false;
}

int cgroup_path_get_unit(const char *path, char **ret) {
        for (const char *c = path; c && *c;) {
                const char *slash = strchr(c, '/');
                size_t len = slash ? (size_t) (slash - c) : strlen(c);
                if (component_is_unit(c, len)) {
                        char *u = strndup(c, len);
                        if (!u)
                                return -ENOMEM;
                        *ret = u;
                        return 0;
                }
                c = slash ? slash + 1 : NULL;
        }
        *ret = NULL;
        return 0;
}

/* "qemu-3-web01" -> "web01", "qemu-web01" -> "web01" (libvirt before 1.3
 * had no id), "lxc-12-ct" -> "ct"; anything else is the name itself
 * (systemd-nspawn registers the machine under its own name). */
static int libvirt_machine_name(const char *m, char **ret) {
        static const char *const drivers[] = { "qemu-", "kvm-", "lxc-", "libxl-", "xen-", "bhyve-", "vz-", "ch-" };
        const char *name = m;
        for (size_t i = 0; i < ELEMENTSOF(drivers); i++)
                if (startswith(m, drivers[i])) {
                        const char *p = m + strlen(drivers[i]), *q = p;
                        while (isdigit((unsigned char) *q))
                                q++;
                        name = q > p && *q == '-' && q[1] ? q + 1 : p;
                        break;
                }
        if (!*name)
                name = m;
        char *n = strdup(name);
        if (!n)
                return -ENOMEM;
        *ret = n;
        return 0;
}

static bool name_is_printable_component(const char *s) {
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p == '/' || *p < 0x20 || *p == 0x7f)
                        return false;
        return true;
}

/* Only where the system manager (or libvirt itself) named the cgroup: a
 * user's own "machine-qemu\x2d1\x2dweb.scope" below user@UID.service, or
 * one that a delegated service made, is not a VM of the host's. */
int cgroup_path_get_machine(const char *path, char **ret) {
        while (*path == '/')
                path++;
        size_t depth = cgroup_path_system_depth(path);
        bool machined = depth >= 2 && startswith(path, "machine.slice/");
        bool libvirt = startswith(path, "machine/"); /* libvirt's layout without systemd */
        size_t i = 0;

        *ret = NULL;
        for (const char *c = path; (machined || libvirt) && c && *c; i++) {
                const char *slash = strchr(c, '/');
                size_t len = slash ? (size_t) (slash - c) : strlen(c);
                _cleanup_free_ char *comp = strndup(c, len), *plain = NULL;
                if (!comp)
                        return -ENOMEM;
                c = slash ? slash + 1 : NULL;
                if (i == 0)
                        continue;

                if (machined) {
                        /* The unit that ends the system manager's part;
                         * slices before it. */
                        if (i + 1 < depth)
                                continue;
                        if (!startswith(comp, "machine-") || len <= strlen("machine-.scope") ||
                            !streq(comp + len - strlen(".scope"), ".scope"))
                                return 0;
                        /* machined escapes '-' inside the machine name as \x2d. */
                        comp[len - strlen(".scope")] = 0;
                        if (cgroup_unescape(comp + strlen("machine-"), &plain) < 0)
                                return -ENOMEM;
                        /* Neither machined nor libvirt names a machine with
                         * '/' or control characters; "machine-a\x2fb.scope"
                         * decoded to "a/b" (found by fuzz-cgroup) and would
                         * reach logs, the bus and metrics labels as a path. */
                        if (!name_is_printable_component(plain))
                                return 0;
                        return libvirt_machine_name(plain, ret);
                }
                /* libvirt: machine/[NAME.partition/...]VM.libvirt-DRIVER */
                if (len > strlen(".partition") && streq(comp + len - strlen(".partition"), ".partition"))
                        continue;
                const char *dot = strstr(comp, ".libvirt-");
                if (!dot || dot == comp || !dot[strlen(".libvirt-")])
                        return 0;
                comp[dot - comp] = 0;
                return libvirt_machine_name(comp, ret);
        }
        return 0;
}
