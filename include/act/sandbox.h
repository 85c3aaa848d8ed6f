/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "probe.h"

/* The daemon's own sandbox (Sandbox=yes, ksmtuned2(8)): once start-up has
 * opened everything that needs privileges, drop every capability no enabled
 * method needs and load a seccomp allow-list of the system calls the daemon
 * makes. Both apply to every thread (capabilities through libpsx, the filter
 * with TSYNC), including threads started before. */

/* What the running daemon still needs beyond observing (which always keeps
 * CAP_DAC_READ_SEARCH, see src/act/sandbox.c). */
typedef struct SandboxNeeds {
        bool ptrace;            /* injects and reads exe/wchan itself, no injector process (injector.h):
                                 * CAP_SYS_PTRACE, ptrace(2) (PTRACE_POKEDATA), tgkill(2) of others */
        bool remote_madvise;    /* process_madvise() on other mms: CAP_SYS_NICE */
        bool taskstats;         /* taskstats queries after start-up: CAP_NET_ADMIN */
        long process_ksm_nrs[3]; /* out-of-tree process_ksm_* system calls to allow, -1 for none */
} SandboxNeeds;

/* From what the kernel offers: remote MADV_MERGEABLE only where the probe
 * found it works, the process_ksm numbers the kernel publishes; ptrace set
 * (the caller clears it once the injector runs). Injection needs nothing
 * beyond CAP_SYS_PTRACE (it writes with PTRACE_POKEDATA). */
void sandbox_needs_from_probe(const Probe *p, SandboxNeeds *ret);

/* Capability mask (bit n = capability n) that needs keeps. */
uint64_t sandbox_keep_mask(const SandboxNeeds *needs);

/* Drops every capability outside keep_mask from all threads (bounding,
 * ambient, inheritable, permitted, effective), locks the securebits so uid 0
 * cannot regain them, and sets no_new_privs. Keeps only what the process
 * has: never fails for lack of a capability it does not hold. */
int sandbox_drop_capabilities(uint64_t keep_mask);

/* Loads the allow-list, and the system calls needs adds, into every thread. A refused call returns EPERM and
 * writes one line naming it to stderr (the journal under systemd); with fatal
 * (KSMTUNED2_SECCOMP_FATAL=1, set by the test suites) the line is followed
 * by _exit(159). */
int sandbox_load_seccomp(const SandboxNeeds *needs, bool fatal);

/* The filter of an injector worker (injector.h; role 1 inject, 2 read):
 * its own, far shorter list; refusals as for the daemon. */
int sandbox_load_injector_seccomp(int role, bool fatal);

/* Under valgrind, which follows neither seccomp nor libpsx, the sandbox is skipped. */
bool sandbox_running_on_valgrind(void);

/* Both of the above, logging what was kept and loaded. */
int sandbox_apply(const SandboxNeeds *needs);

/* Number of system calls allowed without argument checks. */
unsigned sandbox_allow_list_size(void);
