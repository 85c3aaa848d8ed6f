/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ksm-sysfs.h"

/* The journal of KSM knobs the daemon changed: the value each had before the
 * daemon's first write, so a clean stop puts it back. It is kept on disk in
 * the runtime directory too, so a daemon that was SIGKILLed and restarted
 * restores the values from before its first incarnation, not its own. */
typedef struct KnobJournal {
        uint64_t original[_KSM_KEY_MAX];
        uint64_t saved_mask;
        char *state_path;       /* NULL: not persisted */

        /* What this instance wrote last to each knob, to tell its own value
         * from one someone else wrote since (an administrator, virsh
         * node-memory-tune, another tuner). A value stays after its bit
         * leaves written_mask, for the message that says so. */
        uint64_t written[_KSM_KEY_MAX];
        uint64_t written_mask;
        /* Knobs someone else wrote while the daemon ran: left to them, not
         * written again and not restored at exit. */
        uint64_t foreign_mask;
        /* The journal could not be written (a full /run): the knobs whose
         * original is not saved yet stay as they are until it can be; 0
         * once it could. */
        int unsaved_error;
} KnobJournal;

/* Loads a journal left behind by an earlier instance at path (absent is
 * fine). Returns the number of knobs loaded. */
int knob_journal_open(KnobJournal *j, const char *state_path);
void knob_journal_done(KnobJournal *j);

/* Parses/format the on-disk form ("name=value" lines); exposed for tests. */
int knob_journal_parse(KnobJournal *j, const char *text);
char *knob_journal_format(const KnobJournal *j);

/* Compares the latest snapshot with what this instance wrote last: a knob
 * that differs was written by someone else since. Unless override,
 * it becomes foreign (left alone from now on, dropped from the journal so
 * neither this instance nor one restarted after a crash puts its original
 * back). Returns the mask of knobs newly found changed, for the caller to
 * log; with override (ForeignKnobWrites=override) they are reported but stay
 * the daemon's. */
uint64_t knob_journal_notice_foreign(KnobJournal *j, const KsmState *current, bool override);
/* The administrator hands the knobs back (resume, reload): foreign knobs are
 * the daemon's to tune again, their current value the one to restore. */
void knob_journal_forget_foreign(KnobJournal *j);

/* Sets a knob to value unless it already has it (current comes from the
 * latest snapshot) or someone else owns it now (foreign_mask). Returns 1 when
 * written, 0 when unchanged or foreign, -errno with the kernel's verdict
 * otherwise. dry_run records nothing and writes nothing but
 * returns 1 where a write would have happened. A knob is changed for the
 * first time only once its original value is in the journal's file: when
 * that cannot be written (logged once per errno, unsaved_error), knob_set
 * returns 0 and leaves it, and tries again at the next call, since a crash
 * after the write would leave the knob changed with nothing to restore it. */
int knob_set(const Root *root, KnobJournal *j, const KsmState *current, KsmKey k, uint64_t value, bool dry_run);

/* The knobs of mask in the order they must be written: advisor_mode first
 * when value switches it off (pages_to_scan refuses writes while the advisor
 * runs), else after its parameters; run last. The only place that order is
 * kept, for the tuned values and the restore. Fills ret, returns how many. */
size_t knob_write_order(const uint64_t value[_KSM_KEY_MAX], uint64_t mask, KsmKey ret[_KSM_KEY_MAX]);

/* Puts every journaled knob back, in knob_write_order(). Returns the first error but
 * tries every knob; the journal file is removed when all succeeded. */
int knob_journal_restore(const Root *root, KnobJournal *j);
