/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "process.h"

/* A process's own choice to stay out of KSM (issue 14: admin intent wins).
 * QEMU started with -machine mem-merge=off (libvirt's <nosharepages/>)
 * never marks its guest RAM mergeable; switching merging on for it anyway
 * undoes an explicit choice, often made for side-channel or latency
 * reasons. Only a policy with OverrideOptOut=yes may (ksmtuned2.policy(5)).
 *
 * The command line is the owner's to write, so it is hostile input, but
 * here it can only make the daemon do less for that owner's own process. */

/* Whether the process is one whose command line may carry an opt-out, so
 * that classification must wait for it: QEMU, by its executable's or its
 * comm's name (qemu-system-*, qemu-kvm, kvm). */
bool opt_out_applies(const Process *p);

/* The opt-out found in a command line (arguments joined by spaces, as
 * Process.cmdline holds them): writes "-machine mem-merge=off" (the option
 * as given) to buf and returns true; false when there is none. A later
 * -machine with mem-merge=on wins over an earlier off, as in QEMU. */
bool opt_out_find(const char *cmdline, char *buf, size_t size);
