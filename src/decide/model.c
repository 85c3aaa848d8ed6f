/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "model.h"
#include "string-table.h"
#include "util.h"

/* Before ksmd's cost is measured on this host: ~4 us of CPU per scanned
 * page, what the trylock thread in shared/seeds measured uncontended (3.9 /
 * 4.0 us per page) and close to what this 6.18 machine shows. */
#define DEFAULT_CPU_NSEC_PER_PAGE 4000.0
/* Rates are averaged only over ticks with at least this much work, so that a
 * tick with a handful of pages does not swing them. */
#define MIN_PAGES_FOR_RATE 512
#define EWMA_WEIGHT 0.3
/* Full scans in a row that contended skips may keep from counting as
 * barren (seed 000). */
#define PENDING_SCANS_MAX 8

static const char *const ksm_lock_core_table[_KSM_LOCK_CORE_MAX] = {
        [KSM_LOCK_CORE_UNKNOWN] = "unknown",
        [KSM_LOCK_CORE_BLOCKING] = "blocking",
        [KSM_LOCK_CORE_TRYLOCK] = "trylock",
        [KSM_LOCK_CORE_PER_VMA] = "per-vma",
};

DEFINE_STRING_TABLE_TO_STRING(ksm_lock_core, KsmLockCore);

void model_init(Model *m, uint64_t page_size, uint64_t min_gain_pages) {
        *m = (Model) {
                .page_size = page_size ? page_size : PAGE_SIZE_DEFAULT,
                .min_gain_pages = MAX(min_gain_pages, UINT64_C(1)),
                .mem_available_ratio = 1.0,
        };
        kernel_fixes_init(&m->fixes);
}

/* Measured in Q1 (five TCG guests, 174k pages in KSM, 6.18): the last five
 * full scans of a burst gained 737, 253, 639, 448 and 0 pages, ~150 ms of
 * ksmd each, and a maintenance scan that found 9.4 MiB (0.9% of the set
 * over 2 minutes) started another burst of two full scans. Bursts for so
 * little cost ksmd 2.4x the kernel defaults' CPU over the run; maintenance
 * finds such pages within a scan period anyway. At 1/128 the floor is
 * MinGainPages= (64) up to 32 MiB tracked, 1/128 of 1.5 GiB is 12 MiB. */
uint64_t model_gain_floor(const Model *m, uint64_t floor_pages) {
        return MAX(floor_pages, m->rmap_items / MODEL_GAIN_SHARE);
}

uint64_t model_unmet_floor(const Model *m, uint64_t floor_pages) {
        return MAX(floor_pages, m->rmap_items / MODEL_UNMET_SHARE);
}

static double ewma(double old, double sample) {
        return old <= 0 ? sample : old + EWMA_WEIGHT * (sample - old);
}

static uint64_t delta_u64(uint64_t now, uint64_t before) {
        /* Counters only go back when KSM was reset (run=2 zeroes some). */
        return now >= before ? now - before : 0;
}

const ModelTick *model_tick(const Model *m, size_t i) {
        if (i >= m->n_ticks)
                return NULL;
        return &m->ticks[(m->head + MODEL_HISTORY - 1 - i) % MODEL_HISTORY];
}

double model_cpu_nsec_per_page(const Model *m) {
        return m->cpu_nsec_per_page > 0 ? m->cpu_nsec_per_page : DEFAULT_CPU_NSEC_PER_PAGE;
}

void model_update(Model *m, const Snapshot *s) {
        const KsmState *k = &s->ksm;
        int64_t sharing, rmap;

        m->time_usec = s->time_usec;
        if (!s->ksm_present)
                return;

        m->run = k->value[KSM_RUN] == 1;
        m->advisor_scan_time = ksm_state_has(k, KSM_ADVISOR_MODE) && k->value[KSM_ADVISOR_MODE] == KSM_ADVISOR_SCAN_TIME;
        m->smart_scan = ksm_state_has(k, KSM_SMART_SCAN) && k->value[KSM_SMART_SCAN] == 1;
        m->pages_to_scan = k->value[KSM_PAGES_TO_SCAN];
        m->sleep_ms = k->value[KSM_SLEEP_MILLISECS];
        m->pages_shared = k->value[KSM_PAGES_SHARED];
        m->pages_sharing = k->value[KSM_PAGES_SHARING];
        m->pages_unshared = k->value[KSM_PAGES_UNSHARED];
        m->pages_volatile = k->value[KSM_PAGES_VOLATILE];
        m->full_scans = k->value[KSM_FULL_SCANS];
        /* The kernel computes pages_volatile as rmap_items - shared - sharing
         * - unshared (clamped at 0), so their sum gives back ksm_rmap_items:
         * one per page ksmd has met in a mergeable area. */
        m->rmap_items = m->pages_shared + m->pages_sharing + m->pages_unshared + m->pages_volatile;

        if (s->mem.mem_total_kib > 0 && s->mem.has_mem_available)
                m->mem_available_ratio = (double) s->mem.mem_available_kib / (double) s->mem.mem_total_kib;
        m->psi_present = s->psi.present;
        if (s->psi.present) {
                m->psi_some_avg10 = s->psi.some.avg10;
                m->psi_full_avg10 = s->psi.full.avg10;
        }

        sharing = (int64_t) m->pages_sharing;
        rmap = (int64_t) m->rmap_items;
        if (!m->have_last) {
                m->have_last = true;
                m->last_time_usec = s->time_usec;
                m->last_scanned = k->value[KSM_PAGES_SCANNED];
                m->last_skipped = k->value[KSM_PAGES_SKIPPED];
                m->last_full_scans = m->full_scans;
                m->last_cpu_nsec = s->ksmd_present ? s->ksmd.cpu_ns : 0;
                m->last_sharing = sharing;
                m->last_rmap = rmap;
                return;
        }

        ModelTick t = {
                .time_usec = s->time_usec,
                .dt_usec = delta_u64(s->time_usec, m->last_time_usec),
                .scanned_pages = delta_u64(k->value[KSM_PAGES_SCANNED], m->last_scanned),
                .skipped_pages = delta_u64(k->value[KSM_PAGES_SKIPPED], m->last_skipped),
                .full_scans = delta_u64(m->full_scans, m->last_full_scans),
                .sharing_delta = sharing - m->last_sharing,
                .rmap_delta = rmap - m->last_rmap,
                .ksmd_cpu_nsec = s->ksmd_present ? delta_u64(s->ksmd.cpu_ns, m->last_cpu_nsec) : 0,
                .samples = s->ksmd_waits.samples,
                .blocked_fraction = ksmd_wait_fraction(&s->ksmd_waits, KSMD_BLOCKED_MMAP_LOCK),
                .run = m->run,
        };
        m->last_time_usec = s->time_usec;
        m->last_scanned = k->value[KSM_PAGES_SCANNED];
        m->last_skipped = k->value[KSM_PAGES_SKIPPED];
        m->last_full_scans = m->full_scans;
        if (s->ksmd_present)
                m->last_cpu_nsec = s->ksmd.cpu_ns;
        m->last_sharing = sharing;
        m->last_rmap = rmap;

        m->ticks[m->head] = t;
        m->head = (m->head + 1) % MODEL_HISTORY;
        if (m->n_ticks < MODEL_HISTORY)
                m->n_ticks++;

        if (t.dt_usec > 0)
                m->ksmd_cpu_fraction = (double) t.ksmd_cpu_nsec / ((double) t.dt_usec * NSEC_PER_USEC);
        if (t.samples > 0)
                m->blocked_fraction = ewma(m->blocked_fraction, t.blocked_fraction);
        if (t.scanned_pages >= MIN_PAGES_FOR_RATE) {
                if (t.ksmd_cpu_nsec > 0)
                        m->cpu_nsec_per_page = ewma(m->cpu_nsec_per_page,
                                                    (double) t.ksmd_cpu_nsec / (double) t.scanned_pages);
                double gain = t.sharing_delta > 0 ? (double) t.sharing_delta : 0;
                m->sharing_per_page = ewma(m->sharing_per_page, gain / (double) t.scanned_pages);
                if (t.ksmd_cpu_nsec > 0)
                        m->sharing_per_cpu_sec = ewma(m->sharing_per_cpu_sec,
                                                      gain / ((double) t.ksmd_cpu_nsec / NSEC_PER_SEC));
        }

        if (t.rmap_delta > 0) {
                m->new_mergeable_total += (uint64_t) t.rmap_delta;
                m->new_mergeable_usec = s->time_usec;
        }

        /* A full scan pays when it found new sharing, or met memory it had
         * not seen: a page needs two passes (checksum, then the unstable
         * tree) before it can merge, so the pass that meets new memory
         * cannot show its gain yet. Gains are attributed to all the scans
         * that ended in this tick, which may lag by one tick when a small
         * set is scanned many times per tick. */
        m->scan_sharing_gain += t.sharing_delta;
        m->scan_rmap_gain += t.rmap_delta;
        m->scan_skipped += t.skipped_pages;
        if (t.full_scans > 0) {
                /* Two judgements of the scan. "found": it gained anything
                 * above noise (MinGainPages=): what idle and the smart-scan
                 * workaround ask, since on a 16 GiB set a maintenance scan
                 * that finds 100 MiB is still merging. "paid": it was worth a
                 * burst's round, a full scan of everything ksmd tracks: new
                 * sharing above the floor that grows with the set
                 * (model_gain_floor), or memory met that it had not seen.
                 * That pass cannot show its gain yet, and a small process
                 * entering a large set gives little, so in the passes that
                 * meet what was announced (meet_scans) memory met pays at
                 * the absolute floor: else its burst could end with its
                 * pages met once and none merged. Outside them, memory that
                 * trickles in (a guest faulting in its RAM) pays at the
                 * floor at which it starts a burst (model_unmet_floor): at
                 * the absolute one, 100 new pages a pass kept a 174k-page
                 * burst going for good, and at the gain floor Q1's two
                 * booting guests, meeting 2-8k pages a pass among 140k,
                 * kept one going for 22 full scans (3.0 s of ksmd) that a
                 * growth of that size would not have started. */
                int64_t abs_floor = (int64_t) m->min_gain_pages;
                int64_t floor = (int64_t) model_gain_floor(m, m->min_gain_pages);
                int64_t trickle_floor = (int64_t) model_unmet_floor(
                        m, m->burst_min_new_pages > 0 ? m->burst_min_new_pages : m->min_gain_pages);
                bool found = m->scan_sharing_gain >= abs_floor || m->scan_rmap_gain >= abs_floor;
                bool paid = m->scan_sharing_gain >= floor ||
                            m->scan_rmap_gain >= (m->meet_scans > 0 ? abs_floor : trickle_floor);
                if (m->meet_scans > 0)
                        m->meet_scans -= MIN(m->meet_scans, t.full_scans);
                /* Unmet memory was noted while this pass ran: the pass
                 * began before it (after a start or restart, ksmd's pass
                 * in progress; the daemon saw only its end), so it says
                 * nothing about that memory either way. Seen in S4
                 * restarted mid-merge: that pass counted as barren and
                 * halved ksmd's rate for 3 s of the merge. */
                bool before_unmet = m->unmet_notes != m->unmet_notes_at_scan_end;
                /* ksm_enter events are compared with the scan end before
                 * the previous one: a scan end is seen only at the next
                 * tick, an event at once, and an mm entering KSM is put
                 * behind ksmd's cursor, so an mm that entered during the
                 * pass that just ended is met only at the end of the next
                 * one (mm/ksm.c __ksm_enter), and its rmap growth cannot
                 * have shown yet. Unmet memory is noted in the tick, after
                 * the scan ends it saw, and lies in mms ksmd already walks:
                 * the pass after the note's meets it, so the previous scan
                 * end is enough. Measured in S4 started late (1.5 GiB
                 * found at start): the second lag cost one more pass over
                 * all of it after the merge, ~1.1 s of ksmd.
                 *
                 * A race of milliseconds is left: the estimate is read in
                 * discovery_tick(), after the tick's snapshot, so a scan can
                 * end between the two and memory appear after that end. The
                 * end seen next tick then passed before the memory, and this
                 * can call the pass after it settled one pass early. The
                 * burst ends then and maintenance meets the memory in its
                 * next scan: a slower merge of that memory, nothing lost. */
                m->last_scan_settled = m->news == m->news_at_scan_end[0] &&
                                       !before_unmet &&
                                       m->pages_volatile < m->min_gain_pages + m->scan_skipped &&
                                       m->scan_rmap_gain < (int64_t) m->min_gain_pages;
                if (m->last_scan_settled)
                        m->settled_usec = s->time_usec;
                m->news_at_scan_end[0] = m->news_at_scan_end[1];
                m->news_at_scan_end[1] = m->news;
                m->unmet_notes_at_scan_end = m->unmet_notes;
                m->last_scan_gain_pages = m->scan_sharing_gain;
                m->last_scan_rmap_gain = m->scan_rmap_gain;
                /* On a trylock kernel (seed 000) ksmd skips the pages of an
                 * mm whose lock is contended and retries them only in a
                 * later full scan: a scan that skipped some is work still
                 * pending, not a barren one, and must not end a burst. For
                 * at most PENDING_SCANS_MAX in a row, so that an mm
                 * contended for good cannot keep ksmd bursting. */
                bool pending = !paid && m->pending_skips > 0 &&
                               m->fixes.fix[KERNEL_FIX_TRYLOCK].state == FIX_YES &&
                               m->pending_scans < PENDING_SCANS_MAX;
                /* After an exclusion ksmd drops its rmap items while it
                 * meets new memory: seen on 6.18 in S2 as "rmap -11739" in
                 * the scan that also met the victim's 8192 pages, the burst
                 * ended on "2 full scans without new sharing" and the victim
                 * merged at maintenance rate in 84 s instead of 0.4 s. */
                bool excluded = !paid && m->exclusion_scans > 0;
                if (m->exclusion_scans > 0)
                        m->exclusion_scans -= MIN(m->exclusion_scans, t.full_scans);
                if (excluded)
                        m->last_scan_settled = false;
                else if (pending) {
                        m->pending_scans++;
                        m->last_scan_settled = false;
                } else if (paid || m->pending_skips == 0)
                        m->pending_scans = 0;
                m->pending_skips = 0;
                /* paid implies found: pending and excluded (both !paid)
                 * hold for either count */
                bool counts = !pending && !excluded && !before_unmet;
                if (paid)
                        m->scans_without_gain = 0;
                else if (counts)
                        m->scans_without_gain += t.full_scans;
                if (found) {
                        m->scans_without_find = 0;
                        m->last_gain_usec = s->time_usec;
                } else if (counts)
                        m->scans_without_find += t.full_scans;
                m->last_scan_skipped = m->scan_skipped;
                m->scan_sharing_gain = 0;
                m->scan_rmap_gain = 0;
                m->scan_skipped = 0;
                if (t.dt_usec > 0)
                        m->full_scan_usec = ewma(m->full_scan_usec, (double) t.dt_usec / (double) t.full_scans);
        }
}

void model_note_ksm_enter(Model *m, uint64_t now_usec, int pid, const char *comm) {
        m->entered_usec = now_usec;
        m->entered_count++;
        m->entered_pid = pid;
        m->news++;
        m->last_scan_settled = false;
        strscpy(m->entered_comm, sizeof m->entered_comm, comm ? comm : "");
        /* The new mm has not been scanned yet: the scans so far say nothing
         * about it. */
        m->scans_without_gain = 0;
        m->scans_without_find = 0;
        /* the pass that ends next may not have met it (it is put behind
         * ksmd's cursor), the one after does */
        m->meet_scans = 3;
}

void model_note_unmet(Model *m, uint64_t now_usec, uint64_t pages, uint64_t min_new_pages) {
        if (!m->unmet_known) {
                pages += m->pages_volatile;
                m->unmet_floor = 0;
                m->unmet_known = true;
        }
        m->unmet_pages = pages;
        m->unmet_floor = MIN(m->unmet_floor, pages);
        if (pages - m->unmet_floor < MAX(min_new_pages, UINT64_C(1)))
                return;
        m->unmet_new_total += pages - m->unmet_floor;
        m->unmet_floor = pages;
        m->unmet_usec = now_usec;
        /* ksmd has not been there yet: the scans so far say nothing about it */
        m->scans_without_gain = 0;
        m->scans_without_find = 0;
        /* the pass in progress began before the note, the next meets it */
        m->meet_scans = MAX(m->meet_scans, UINT64_C(2));
        m->unmet_notes++;
        m->last_scan_settled = false;
}

void model_note_exclusion(Model *m) {
        m->exclusion_scans = 2;
}

void model_forget_unmet(Model *m) {
        m->unmet_known = false;
}

/* model_add_window(): the least work a window's share is taken of */
#define WINDOW_MIN_ACTIVE_NSEC (5.0 * NSEC_PER_MSEC)
/* What a window must hold of ksmd's time on one process, and of its waits
 * there (>= CONTENTION_WAIT_THRESHOLD_NSEC each), to judge that process by
 * its share of that time (ModelContender.scan_blocked_fraction). */
#define CONTENDER_MIN_SCAN_NSEC (2 * NSEC_PER_MSEC)
#define CONTENDER_MIN_WAITS 3
/* How far back the windows' evidence on a process reaches: a burst takes
 * a quick window every 500 ms, then one every 5 s (tuner.c). */
#define CONTENDER_EVIDENCE_USEC (60 * USEC_PER_SEC)

/* Adds what window w showed of ksmd's time on holder h's process to its
 * evidence and returns it; NULL when there is no room (the oldest entry
 * still within CONTENDER_EVIDENCE_USEC is kept over a new one). */
static const ContenderEvidence *evidence_add(Model *m, const LockHolder *h, uint64_t now_usec) {
        ContenderEvidence *e = NULL, *free_slot = NULL;
        for (size_t i = 0; i < MODEL_MAX_EVIDENCE; i++) {
                ContenderEvidence *x = &m->evidence[i];
                if (x->pid == h->tgid && x->mm == h->mm) {
                        e = x;
                        break;
                }
                if (!free_slot && (x->pid == 0 || now_usec - x->last_usec > CONTENDER_EVIDENCE_USEC))
                        free_slot = x;
        }
        if (e && now_usec - e->since_usec > CONTENDER_EVIDENCE_USEC)
                *e = (ContenderEvidence) { .pid = 0 };  /* too old: start again */
        if (!e || e->pid == 0) {
                if (!e)
                        e = free_slot;
                if (!e)
                        return NULL;
                *e = (ContenderEvidence) { .pid = h->tgid, .mm = h->mm, .since_usec = now_usec };
        }
        e->last_usec = now_usec;
        e->wait_nsec += h->ksmd_wait_nsec;
        e->on_nsec += h->ksmd_wait_nsec + h->ksmd_work_nsec;
        e->waits += h->ksmd_waits;
        return e;
}

void model_add_window(Model *m, const ContentionWindow *w, uint64_t now_usec, uint64_t wall_usec,
                      uint64_t scanned_pages) {
        double wall_nsec = (double) MAX(wall_usec, UINT64_C(1)) * NSEC_PER_USEC;
        uint64_t ksmd_span = contention_window_ksmd_span_nsec(w);

        /* The ring keeps the newest events when it overflows: a fast ksmd
         * fills 1 MiB per CPU in milliseconds (measured on 6.18: ~2 million
         * lock events a second in a checksum pass). Then ksmd's waits are a
         * share of the span its surviving events cover, not of the window;
         * against the window they read 1% where the span showed 40-60%. A read
         * cut at its budget is the same: at 1.3 million ksmd lock calls a
         * second the 4 MiB budget held 11 ms of a 47 ms window, which read
         * 15% blocked where its 11 ms showed ~60%. */
        if (!contention_window_complete(w) && ksmd_span > 0 && (double) ksmd_span < wall_nsec)
                wall_nsec = (double) ksmd_span;
        /* A complete window: ksmd's waits are a share of the time it was at
         * work, its CPU time and its waits, not of its sleep between
         * batches as well. A burst's ksmd scans 100,000 pages in ~200 ms and
         * sleeps ~400 ms after barren scans: a 14 ms window that caught the
         * end of a batch read 7% where the batch waited 25% (both before the
         * tracing's share came off the waits, most of those 25%), and whether a
         * contender was judged at all was the windows' luck against ksmd's
         * sleeps. Spinning on the lock (rwsem optimistic spinning) is CPU
         * time too, so a spinning ksmd's share reads up to half too low,
         * never too high. Below WINDOW_MIN_ACTIVE_NSEC of work a window is
         * taken as that long: a ksmd that ran for 100 us says little. */
        else if (contention_window_complete(w) && w->ksmd_cpu_known) {
                double active = MAX((double) w->ksmd_cpu_nsec + (double) w->ksmd_wait_nsec, WINDOW_MIN_ACTIVE_NSEC);
                wall_nsec = MIN(wall_nsec, active);
        }

        m->window_usec = now_usec;
        m->window_full_scans = m->full_scans;
        m->window_lost_events = w->lost_events;
        m->window_ksmd_blocked_fraction = MIN(1.0, (double) w->ksmd_wait_nsec / wall_nsec);

        /* The locking core: a failed acquisition by ksmd only exists with
         * the trylock patch (stock ksmd's mmap_read_lock cannot fail); a
         * ksmd that scanned many pages with few mmap locks uses per-VMA
         * locks; stock ksmd takes at least one per scanned page. */
        m->fixes_changed = kernel_fixes_note_window(&m->fixes, w, scanned_pages, m->pages_unshared);
        m->pending_skips += w->ksmd_trylock_failures;
        if (m->fixes.fix[KERNEL_FIX_TRYLOCK].state == FIX_YES)
                m->lock_core = KSM_LOCK_CORE_TRYLOCK;
        else if (m->fixes.fix[KERNEL_FIX_PER_VMA].state == FIX_YES)
                m->lock_core = KSM_LOCK_CORE_PER_VMA;
        else if (m->fixes.fix[KERNEL_FIX_PER_VMA].state == FIX_NO)
                m->lock_core = KSM_LOCK_CORE_BLOCKING;

        m->n_contenders = 0;
        for (size_t i = 0; i < w->n_holders && m->n_contenders < MODEL_MAX_CONTENDERS; i++) {
                const LockHolder *h = &w->holders[i];
                double blocked = MIN(1.0, (double) h->ksmd_wait_nsec / wall_nsec);
                if (h->tgid <= 0)
                        continue;       /* no write lock of it seen, taken or released: no one to blame */
                /* A visit without a wait counts too: it is part of the
                 * time the waits are a share of. */
                const ContenderEvidence *ev =
                        h->ksmd_wait_nsec + h->ksmd_work_nsec > 0 ? evidence_add(m, h, now_usec) : NULL;
                if (h->ksmd_waits == 0 && h->ksmd_trylock_failures == 0)
                        continue;
                ModelContender *mc = &m->contenders[m->n_contenders++];
                *mc = (ModelContender) {
                        .pid = h->tgid,
                        .memcg_id = h->memcg_id,
                        .ksmd_blocked_fraction = blocked,
                        .trylock_failure_fraction =
                                h->ksmd_locks ? (double) h->ksmd_trylock_failures / (double) h->ksmd_locks : 0,
                        .ksmd_trylock_failures = h->ksmd_trylock_failures,
                        .write_locks_per_sec = (double) h->write_locks / (wall_nsec / NSEC_PER_SEC),
                        .write_hold_fraction = MIN(1.0, (double) h->write_hold_nsec / wall_nsec),
                        .merging_pages = -1,
                };
                /* A share of ksmd's time on this process needs enough of
                 * that time to mean something, in this window and the
                 * recent ones: one long wait in a short visit is not a
                 * pattern. Not where ksmd looks pages up
                 * under VMA locks: it takes the mmap lock a few times a
                 * VMA there, its work between them is not seen, and its
                 * waits would read as all of its time. */
                if (ev && m->lock_core != KSM_LOCK_CORE_PER_VMA) {
                        if (ev->on_nsec >= CONTENDER_MIN_SCAN_NSEC && ev->waits >= CONTENDER_MIN_WAITS)
                                mc->scan_blocked_fraction = (double) ev->wait_nsec / (double) ev->on_nsec;
                        else {
                                mc->scan_evidence_short = true;
                                mc->scan_blocked_partial =
                                        ev->on_nsec > 0 ? (double) ev->wait_nsec / (double) ev->on_nsec : 0;
                        }
                }
                strscpy(mc->comm, sizeof mc->comm, h->comm);
        }
}
