/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "policy.h"
#include "process.h"

/* Classification is pure (DESIGN.md §3): policies + the facts of one
 * process -> its verdict. No I/O, no clock: the caller passes "now". */
typedef struct ClassifyContext {
        uint64_t now_boottime_usec;     /* CLOCK_BOOTTIME, the clock of start_time_usec */
        int self_pid;                   /* the daemon itself is always left alone */
} ClassifyContext;

/* Does every [Match] key of pol hold for p? 1 yes, 0 no, -EAGAIN when all
 * other keys hold but Cmdline= needs the command line, not read yet;
 * -ENOENT when pol excludes (Mode=never or Method=none), every other key
 * holds, and Exe= cannot be told because p's executable is unknown (for a
 * policy that would take p in, an unknown executable is no match). */
int policy_matches(const Policy *pol, const Process *p);

/* The first matching policy decides; none matching leaves it alone. An
 * exclusion that may hold for a process of unknown executable (-ENOENT
 * above) decides too: the process waits, untouched. Kernel
 * threads, zombies without an mm, PID 1 and the daemon itself are left
 * alone before any policy is consulted. */
void classify_process(const PolicySet *set, const ClassifyContext *ctx, const Process *p, Verdict *ret);

/* The policy that decided a verdict, or NULL. */
const Policy *classify_find_policy(const PolicySet *set, const Verdict *v);
