/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "conf.h"
#include "contention.h"
#include "controller.h"
#include "decisions.h"
#include "model.h"
#include "plan.h"
#include "probe.h"
#include "root.h"
#include "snapshot.h"

/* The tuning stage as the manager sees it: it owns the model, the
 * controller and the private tracefs instance (ksm_enter wake-ups, sampled
 * mmap_lock windows), and turns one snapshot into knobs, process actions and
 * decisions. The manager calls it once per tick. */
typedef struct Tuner Tuner;

/* wake is called (from the event loop) when the tuner wants a tick now:
 * new mergeable memory appeared. Without tracefs the tuner still works, on
 * the counters alone. */
int tuner_new(sd_event *event, Root *root, int ksmd_pid, const Config *config, void (*wake)(void *userdata),
              void *userdata, Tuner **ret);
Tuner *tuner_free(Tuner *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Tuner *, tuner_free);

/* One tick: model update, controller, plan. The knobs and actions go into
 * plan (on top of what is there), every decision into log and the journal.
 * *ret_next_usec says when the next tick is due. -ENOMEM. */
int tuner_tick(Tuner *t, const Snapshot *s, const Config *config, DecisionLog *log, Plan *plan,
               uint64_t *ret_next_usec);

/* After the tick's plan is applied: switches the contention window events
 * on or off as the tick's mode asks and starts a window when one is due.
 * Switching costs the loop 10-100 ms on a paravirtualised VM, so it comes
 * after the knobs are written, not before: a burst's ksmd starts scanning
 * at once and a back-off slows it at once. */
void tuner_tick_windows(Tuner *t, const Snapshot *s, const Config *config);

/* Paused: a window in progress is dropped and the window events are
 * switched off (armed, every mmap lock call on the host passes through
 * them), until the next tick. */
void tuner_quiesce(Tuner *t);
/* The process table's estimate of mergeable memory ksmd has not met
 * (discovery_unmet_pages), for the tick that follows. */
void tuner_note_unmet(Tuner *t, uint64_t pages);
/* The most rmap items of one process in KSM that went away since the last
 * tick (discovery_take_departed): for the tick that follows. */
void tuner_note_departed(Tuner *t, uint64_t rmap_items);
/* Who tells a fork's ksm_enter from a process entering KSM: fork_child
 * says whether parent's mm was known to be in KSM before event_ns
 * (CLOCK_MONOTONIC) and, where it was, answers the child of parent's fork
 * reported within [event_ns, until_ns], or 0. Without it every ksm_enter
 * is a process entering (tuner.c, PENDING_ENTERS). */
typedef int (*TunerForkLookup)(void *userdata, int parent, uint64_t event_ns, uint64_t until_ns, bool *ret_in_ksm);
void tuner_set_fork_lookup(Tuner *t, TunerForkLookup fork_child, void *userdata);
/* After a pause, observe or a reload, all of that memory is new again. */
void tuner_forget_unmet(Tuner *t);

/* How often ksmd's state is worth sampling now: every configured_usec while
 * it bursts, five times less often while it only maintains (a sample costs
 * ~70 us of daemon CPU on the test machine: 0.35% of a core at 20 ms), 0
 * when it did not scan at all. */
uint64_t tuner_sample_interval_usec(const Tuner *t, uint64_t configured_usec);

/* What the start-up probe found that the tuner uses: khugepaged's pid
 * (its waits are told apart), the unmerge probe (seed 003). With
 * smart_scan_journaled == 1 (the knob journal holds smart_scan's value from
 * before an instance that was killed) smart_scan=1 is put back at the next
 * tick should it read 0. */
void tuner_set_kernel(Tuner *t, const Probe *p, int smart_scan_journaled);
const SmartScanWorkaround *tuner_smart_scan_workaround(const Tuner *t);
const Model *tuner_model(const Tuner *t);
const Controller *tuner_controller(const Tuner *t);
/* controller_adopt_exclusion() */
/* Confirms each holder of a contention window that ksmd met by one of its
 * writer tasks still running (its tgid then replaces the trace's hint), or
 * sets its tgid to -1 (blamed for nothing) when that cannot be told:
 * tuner.c says how. The clocks are now's, CLOCK_MONOTONIC (the trace's)
 * and CLOCK_BOOTTIME (/proc/PID/stat's); exposed for tests. */
void tuner_confirm_holders(ContentionWindow *w, const Root *root, uint64_t window_start_usec, uint64_t mono_now,
                           uint64_t boot_now);
int tuner_adopt_exclusion(Tuner *t, int pid, uint64_t start_time_ticks, uint64_t since_usec, bool due,
                          const char *comm, uint64_t now_usec);
