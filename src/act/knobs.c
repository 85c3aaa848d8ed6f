/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fileio.h"
#include "knobs.h"
#include "log.h"
#include "util.h"

int knob_journal_parse(KnobJournal *j, const char *text) {
        _cleanup_free_ char *copy = strdup(text);
        uint64_t seen = 0;

        if (!copy)
                return -ENOMEM;
        for (char *line = copy, *next; line && *line; line = next) {
                char *eq;
                uint64_t v;
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                eq = strchr(line, '=');
                if (!eq)
                        continue;
                *eq++ = 0;
                KsmKey k = ksm_key_from_string(line);
                if (k < 0 || !ksm_key_is_knob(k))
                        continue;
                /* Exactly what knob_journal_format() writes: a numeric
                 * advisor_mode such as "5" used to be taken as is, and came
                 * back from a format/parse round trip as "none" (found by
                 * fuzz-knob-journal). */
                if (ksm_parse_value(k, eq, &v) < 0)
                        continue;
                j->original[k] = v;
                j->saved_mask |= UINT64_C(1) << k;
                seen |= UINT64_C(1) << k;
        }
        /* Knobs, not lines: a key repeated (the last one wins) counts once. */
        return __builtin_popcountll(seen);
}

char *knob_journal_format(const KnobJournal *j) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        for (int k = _KSM_FIRST_KNOB; k < _KSM_KEY_MAX; k++) {
                char v[32];
                if (!(j->saved_mask & (UINT64_C(1) << k)))
                        continue;
                if (ksm_format_value((KsmKey) k, j->original[k], v, sizeof v) >= 0)
                        fprintf(f, "%s=%s\n", ksm_key_to_string((KsmKey) k), v);
        }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

int knob_journal_open(KnobJournal *j, const char *state_path) {
        _cleanup_free_ char *text = NULL;
        int r;

        *j = (KnobJournal) {};
        if (!state_path)
                return 0;
        j->state_path = strdup(state_path);
        if (!j->state_path)
                return -ENOMEM;
        r = read_full_file_at(AT_FDCWD, state_path, 64 * 1024, &text, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        return knob_journal_parse(j, text);
}

void knob_journal_done(KnobJournal *j) {
        free(j->state_path);
        *j = (KnobJournal) {};
}

static int journal_persist(const KnobJournal *j) {
        _cleanup_free_ char *text = NULL;
        if (!j->state_path)
                return 0;
        text = knob_journal_format(j);
        if (!text)
                return -ENOMEM;
        return write_state_file(j->state_path, text, 0644);
}

int knob_set(const Root *root, KnobJournal *j, const KsmState *current, KsmKey k, uint64_t value, bool dry_run) {
        int r;

        if (!ksm_key_is_knob(k))
                return -EROFS;
        if (!ksm_state_has(current, k))
                return -EOPNOTSUPP;
        if (current->value[k] == value)
                return 0;
        /* A dry run (observe mode) still says what it would set: leaving
         * the mode hands foreign knobs back (manager_set_mode()). */
        if (dry_run)
                return 1;
        if (j->foreign_mask & (UINT64_C(1) << k))
                return 0;

        if (!(j->saved_mask & (UINT64_C(1) << k))) {
                j->original[k] = current->value[k];
                j->saved_mask |= UINT64_C(1) << k;
                /* Persist before writing: if we die right after the write, the
                 * next instance still knows the original. Where it cannot be
                 * saved (ENOSPC on a full /run) the knob is not written:
                 * restoring every knob it changed, after a crash too, comes
                 * before tuning. The file on disk is still the previous
                 * version (written atomically), true for the knobs in it. */
                r = journal_persist(j);
                if (r < 0) {
                        j->saved_mask &= ~(UINT64_C(1) << k);
                        if (j->unsaved_error != r)
                                log_warning_errno(r,
                                                  "Cannot save the original %s=%" PRIu64 " in %s: %m; not changing "
                                                  "it until it can be saved, since a crash would leave it changed "
                                                  "with nothing to restore it.",
                                                  ksm_key_to_string(k), current->value[k], j->state_path);
                        j->unsaved_error = r;
                        return 0;
                }
                if (j->unsaved_error != 0)
                        log_notice("Saved the original KSM knob values in %s; changing them again.", j->state_path);
                j->unsaved_error = 0;
        }
        /* A write of run (and of max_page_sharing, merge_across_nodes)
         * takes ksmd's ksm_thread_mutex, which ksmd holds for a whole batch:
         * measured on 6.18, run=0 written during a 100000-page batch of
         * unique pages blocked 360-620 ms. The controller changes run only
         * between idle (small batches) and burst (ksmd stopped), and
         * pages_to_scan/sleep_millisecs never block (1.5 ms). */
        r = ksm_sysfs_write(root, k, value);
        if (r < 0)
                return r;
        j->written[k] = value;
        j->written_mask |= UINT64_C(1) << k;
        return 1;
}

uint64_t knob_journal_notice_foreign(KnobJournal *j, const KsmState *current, bool override) {
        uint64_t changed = 0;

        for (KsmKey k = _KSM_FIRST_KNOB; k < _KSM_KEY_MAX; k++) {
                uint64_t bit = UINT64_C(1) << k;
                if (!(j->written_mask & bit) || (j->foreign_mask & bit) || !ksm_state_has(current, k))
                        continue;
                if (current->value[k] == j->written[k])
                        continue;
                changed |= bit;
                /* Either way it is no longer a value this instance wrote. */
                j->written_mask &= ~bit;
                if (override)
                        continue;
                j->foreign_mask |= bit;
                j->saved_mask &= ~bit;
        }
        if (changed && !override) {
                int r = journal_persist(j);
                if (r < 0)
                        log_debug_errno(r, "Cannot persist knob journal %s: %m", j->state_path);
        }
        return changed;
}

void knob_journal_forget_foreign(KnobJournal *j) {
        j->foreign_mask = 0;
}

/* The one order of knob writes, for the tuned values and the restore alike:
 * advisor_mode=scan-time makes pages_to_scan refuse writes (EINVAL), so the
 * advisor goes off first and on again only after its parameters; run=1 goes
 * last so ksmd does not start a scan with half-written settings, and run=0
 * first so it scans no more while they change: switching the advisor on
 * sets pages_to_scan to advisor_min_pages_to_scan, and one scan later the
 * advisor has moved it (a restore of advisor_mode=scan-time with ksmd still
 * running left pages_to_scan at 5000 instead of 500 on 6.18). Never write
 * run=2 (knob_journal_restore refuses it): that unmerges every KSM page on
 * the host at once. */
size_t knob_write_order(const uint64_t value[_KSM_KEY_MAX], uint64_t mask, KsmKey ret[_KSM_KEY_MAX]) {
        static const KsmKey order[] = {
                KSM_PAGES_TO_SCAN, KSM_SLEEP_MILLISECS, KSM_SMART_SCAN, KSM_USE_ZERO_PAGES,
                KSM_MAX_PAGE_SHARING, KSM_MERGE_ACROSS_NODES, KSM_STABLE_NODE_CHAINS_PRUNE_MILLISECS,
                KSM_ADVISOR_MAX_CPU, KSM_ADVISOR_MIN_PAGES_TO_SCAN, KSM_ADVISOR_MAX_PAGES_TO_SCAN,
                KSM_ADVISOR_TARGET_SCAN_TIME, KSM_ADVISOR_MODE, KSM_RUN,
        };
        _Static_assert(ELEMENTSOF(order) == _KSM_KEY_MAX - _KSM_FIRST_KNOB, "every knob has its place");
        bool advisor_off = (mask & (UINT64_C(1) << KSM_ADVISOR_MODE)) && value[KSM_ADVISOR_MODE] == KSM_ADVISOR_NONE;
        bool stop_first = (mask & (UINT64_C(1) << KSM_RUN)) && value[KSM_RUN] == 0;
        size_t n = 0;

        if (stop_first)
                ret[n++] = KSM_RUN;
        if (advisor_off)
                ret[n++] = KSM_ADVISOR_MODE;
        for (size_t i = 0; i < ELEMENTSOF(order); i++)
                if ((mask & (UINT64_C(1) << order[i])) && !(order[i] == KSM_ADVISOR_MODE && advisor_off) &&
                    !(order[i] == KSM_RUN && stop_first))
                        ret[n++] = order[i];
        return n;
}

int knob_journal_restore(const Root *root, KnobJournal *j) {
        KsmKey order[_KSM_KEY_MAX];
        uint64_t mode;
        int first_error = 0;

        if (j->saved_mask == 0)
                return 0;

        /* The advisor may run now even where the journal does not switch it
         * off (someone switched it on since): off while pages_to_scan is put
         * back, then to what it is now, at its place in the order. */
        if ((j->saved_mask & (UINT64_C(1) << KSM_PAGES_TO_SCAN)) &&
            ksm_sysfs_read_one(root, KSM_ADVISOR_MODE, &mode) >= 0 && mode != KSM_ADVISOR_NONE) {
                if (!(j->saved_mask & (UINT64_C(1) << KSM_ADVISOR_MODE))) {
                        j->original[KSM_ADVISOR_MODE] = mode;
                        j->saved_mask |= UINT64_C(1) << KSM_ADVISOR_MODE;
                }
                (void) ksm_sysfs_write(root, KSM_ADVISOR_MODE, KSM_ADVISOR_NONE);
        }

        size_t n = knob_write_order(j->original, j->saved_mask, order);
        for (size_t i = 0; i < n; i++) {
                KsmKey k = order[i];
                uint64_t now;
                char v[32];
                int r;

                if (k == KSM_RUN && j->original[k] == 2)
                        j->original[k] = 0; /* refuse to unmerge everything */
                if (ksm_sysfs_read_one(root, k, &now) >= 0 && now == j->original[k]) {
                        j->saved_mask &= ~(UINT64_C(1) << k);
                        continue;
                }
                r = ksm_sysfs_write(root, k, j->original[k]);
                (void) ksm_format_value(k, j->original[k], v, sizeof v);
                if (r < 0) {
                        log_warning_errno(r, "Failed to restore KSM knob %s=%s: %m", ksm_key_to_string(k), v);
                        if (first_error == 0)
                                first_error = r;
                        continue;
                }
                log_debug("Restored KSM knob %s=%s", ksm_key_to_string(k), v);
                j->saved_mask &= ~(UINT64_C(1) << k);
        }
        int r = journal_persist(j);
        if (r < 0 && first_error == 0)
                first_error = r;
        return first_error;
}
