/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

/* cgroup paths and the names encoded in them. Pure string functions, so
 * they run on hostile input in tests. */

/* The cgroup v2 path of a process relative to the v2 root, from the text
 * of /proc/<pid>/cgroup: the "0::" line, without its leading '/' and
 * without the " (deleted)" the kernel appends for a removed cgroup. On a
 * legacy (v1-only) host the 0:: line says "/" for everyone; then the
 * name=systemd line, which systemd keeps in step, is used instead.
 * "" for the root cgroup; -ENODATA when neither line exists. */
int cgroup_parse_proc_path(const char *text, char **ret);

/* Decodes systemd's \xNN escapes ("machine-qemu\x2d3\x2dweb01.scope" ->
 * "machine-qemu-3-web01.scope"). An invalid escape is kept as written. */
int cgroup_unescape(const char *s, char **ret);

/* The systemd unit a cgroup path belongs to: its first component that is a
 * unit name other than a slice ("system.slice/nginx.service/x" ->
 * "nginx.service"; "user.slice/user-1000.slice/user@1000.service/app.slice/
 * a.scope" -> "user@1000.service"). Returned as systemd spells it (escaped).
 * 0 and NULL when the path is in no unit (a slice, the root). */
int cgroup_path_get_unit(const char *path, char **ret);

/* The name of the VM or container a cgroup path belongs to, from the
 * machined scope ("machine.slice/machine-qemu\x2d3\x2dweb01.scope/libvirt/
 * emulator" -> "web01"; "machine-qemu\x2dweb01.scope" from libvirt < 1.3
 * without the id -> "web01"; "machine-foo.scope" from systemd-nspawn ->
 * "foo") or from libvirt's cgroup layout without systemd
 * ("machine/qemu-3-web01.libvirt-qemu/emulator" -> "web01").
 * Only the scope that ends the system manager's part of the path
 * (cgroup_path_system_depth) below machine.slice counts: a user's own
 * "user.slice/.../machine-qemu\x2d1\x2dweb.scope" is no VM.
 * 0 and NULL when the path is in no machine. */
int cgroup_path_get_machine(const char *path, char **ret);
