/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "contention.h"
#include "util.h"

/* ---- the line parser (pure) ---- */

static const char *skip_spaces(const char *p) {
        while (*p == ' ' || *p == '\t')
                p++;
        return p;
}

/* Parses decimal digits at p into *ret; returns the end, NULL when none or
 * on overflow. */
static const char *parse_dec(const char *p, uint64_t *ret) {
        uint64_t v = 0;
        const char *s = p;
        while (*p >= '0' && *p <= '9') {
                unsigned d = (unsigned) (*p - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return NULL;
                v = v * 10 + d;
                p++;
        }
        if (p == s)
                return NULL;
        *ret = v;
        return p;
}

static const char *parse_hex(const char *p, uint64_t *ret) {
        uint64_t v = 0;
        const char *s = p;
        if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
                p += 2, s += 2;
        while (isxdigit((unsigned char) *p)) {
                if (v >> 60)
                        return NULL;
                v = (v << 4) | (uint64_t) (isdigit((unsigned char) *p) ? *p - '0' : (tolower((unsigned char) *p) - 'a' + 10));
                p++;
        }
        if (p == s)
                return NULL;
        *ret = v;
        return p;
}

/* "true"/"false" as the mmap_lock events print their bools; older kernels
 * printed 1/0. */
static int parse_bool_word(const char *v, size_t n, bool *ret) {
        if ((n == 4 && strneq(v, "true", 4)) || (n == 1 && v[0] == '1'))
                *ret = true;
        else if ((n == 5 && strneq(v, "false", 5)) || (n == 1 && v[0] == '0'))
                *ret = false;
        else
                return -EINVAL;
        return 0;
}

/* "secs.frac" where frac has 1..9 digits (6 with the default clocks). */
static const char *parse_timestamp(const char *p, uint64_t *ret_nsec) {
        uint64_t secs, frac = 0;
        unsigned digits = 0;

        p = parse_dec(p, &secs);
        if (!p || *p != '.' || secs > UINT64_MAX / NSEC_PER_SEC - 1)
                return NULL;
        p++;
        while (*p >= '0' && *p <= '9') {
                if (digits < 9) {
                        frac = frac * 10 + (uint64_t) (*p - '0');
                        digits++;
                }
                p++;
        }
        if (digits == 0)
                return NULL;
        for (; digits < 9; digits++)
                frac *= 10;
        *ret_nsec = secs * NSEC_PER_SEC + frac;
        return p;
}

static int parse_mmap_lock_fields(const char *p, TraceEvent *e) {
        bool have_mm = false, have_write = false, have_success = false;

        while (*(p = skip_spaces(p))) {
                const char *key = p, *eq, *val, *end;
                size_t klen, vlen;

                end = p + strcspn(p, " \t");
                eq = memchr(key, '=', (size_t) (end - key));
                if (!eq)
                        return -EINVAL;
                klen = (size_t) (eq - key);
                val = eq + 1;
                vlen = (size_t) (end - val);
                if (klen == 2 && strneq(key, "mm", 2)) {
                        const char *q = parse_hex(val, &e->mm);
                        if (q != end)
                                return -EINVAL;
                        have_mm = true;
                } else if (klen == 8 && strneq(key, "memcg_id", 8)) {
                        const char *q = parse_dec(val, &e->memcg_id);
                        if (q != end)
                                return -EINVAL;
                } else if (klen == 5 && strneq(key, "write", 5)) {
                        if (parse_bool_word(val, vlen, &e->write) < 0)
                                return -EINVAL;
                        have_write = true;
                } else if (klen == 7 && strneq(key, "success", 7)) {
                        if (parse_bool_word(val, vlen, &e->success) < 0)
                                return -EINVAL;
                        have_success = true;
                }
                /* Other keys (memcg_path="..." on kernels before 6.14, which
                 * may hold spaces inside its quotes) are not needed. */
                else if (*val == '"') {
                        const char *close = strchr(val + 1, '"');
                        if (!close)
                                return -EINVAL;
                        end = close + 1;
                }
                p = end;
        }
        if (!have_mm || !have_write)
                return -EINVAL;
        if (e->type == TRACE_EVENT_ACQUIRE_RETURNED && !have_success)
                return -EINVAL;
        return 0;
}

/* Everything after "] ": "FLAGS TIMESTAMP: EVENT: FIELDS". */
static int parse_after_cpu(const char *p, TraceEvent *e) {
        static const struct {
                const char *name;
                TraceEventType type;
        } names[] = {
                { "mmap_lock_start_locking", TRACE_EVENT_START_LOCKING },
                { "mmap_lock_acquire_returned", TRACE_EVENT_ACQUIRE_RETURNED },
                { "mmap_lock_released", TRACE_EVENT_RELEASED },
                { "ksm_enter", TRACE_EVENT_KSM_ENTER },
                { "ksm_exit", TRACE_EVENT_KSM_EXIT },
                { "ksm_stop_scan", TRACE_EVENT_KSM_STOP_SCAN },
        };
        const char *name;
        size_t nlen;
        bool known = false;

        /* the irq/preempt flags column ("d..1.", "....."), absent with
         * some trace options */
        uint64_t ts;
        const char *q;

        p = skip_spaces(p);
        q = parse_timestamp(p, &ts);
        if (!q || *q != ':')
                p = skip_spaces(p + strcspn(p, " "));
        p = parse_timestamp(p, &e->time_nsec);
        if (!p || *p != ':')
                return -EINVAL;
        p = skip_spaces(p + 1);
        name = p;
        nlen = strcspn(p, ": ");
        if (nlen == 0 || p[nlen] != ':')
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strlen(names[i].name) == nlen && strneq(name, names[i].name, nlen)) {
                        e->type = names[i].type;
                        known = true;
                        break;
                }
        /* "ksmtuned2_vma_lockN: (lock_vma_under_rcu+0x0/0x170)": who hit it
         * is all that counts */
        if (!known && nlen == strlen(TRACE_VMA_PROBE_EVENT) + 1 && strneq(name, TRACE_VMA_PROBE_EVENT, nlen - 1) &&
            name[nlen - 1] >= '0' && name[nlen - 1] <= '9') {
                e->type = TRACE_EVENT_VMA_LOCK;
                return *skip_spaces(p + nlen + 1) == '(' ? 0 : -EINVAL;
        }
        if (!known)
                return -ENOMSG;
        p += nlen + 1;

        if (e->type == TRACE_EVENT_KSM_STOP_SCAN) {
                /* "seq 119002 rmap size 512" */
                p = skip_spaces(p);
                if (!startswith(p, "seq "))
                        return -EINVAL;
                p = parse_dec(skip_spaces(p + 4), &e->seq);
                if (!p || !startswith(skip_spaces(p), "rmap size "))
                        return -EINVAL;
                p = parse_dec(skip_spaces(skip_spaces(p) + 10), &e->rmap_entries);
                if (!p || *skip_spaces(p))
                        return -EINVAL;
                return 0;
        }
        if (e->type == TRACE_EVENT_KSM_ENTER || e->type == TRACE_EVENT_KSM_EXIT) {
                p = skip_spaces(p);
                if (!startswith(p, "mm "))
                        return -EINVAL;
                p = parse_hex(skip_spaces(p + 3), &e->mm);
                if (!p || *skip_spaces(p))
                        return -EINVAL;
                return 0;
        }
        return parse_mmap_lock_fields(p, e);
}

/* The task column before "[CPU]": "comm-pid" or "comm-pid (  tgid)". The
 * comm may itself hold '-', ' ', '(' or ']', so the pid is taken after the
 * last '-'. Returns 0 when [s, end) is such a column. */
static int parse_task_column(const char *s, const char *end, TraceEvent *e) {
        const char *dash, *q;
        uint64_t v = 0;

        while (end > s && end[-1] == ' ')
                end--;
        e->tgid = -1;
        if (end > s && end[-1] == ')') {
                const char *open = end - 1;
                while (open > s && *open != '(')
                        open--;
                if (*open != '(')
                        return -EINVAL;
                q = skip_spaces(open + 1);
                if (*q == '-')          /* "(-------)": tgid not recorded */
                        ;
                else {
                        q = parse_dec(q, &v);
                        if (!q || *skip_spaces(q) != ')' || v > INT32_MAX)
                                return -EINVAL;
                        e->tgid = (int) v;
                }
                end = open;
                while (end > s && end[-1] == ' ')
                        end--;
        }
        dash = end;
        while (dash > s && dash[-1] >= '0' && dash[-1] <= '9')
                dash--;
        if (dash == end || dash == s || dash[-1] != '-')
                return -EINVAL;
        q = parse_dec(dash, &v);
        if (q != end || v > INT32_MAX)
                return -EINVAL;
        e->pid = (int) v;
        s = skip_spaces(s);
        size_t n = dash - 1 > s ? MIN((size_t) (dash - 1 - s), sizeof e->comm - 1) : 0;
        memcpy(e->comm, s, n);
        e->comm[n] = 0;
        return 0;
}

int tracefs_parse_line(const char *line, size_t len, TraceEvent *ret) {
        char buf[512];
        const char *p;
        TraceEvent e = {};

        if (!line)
                return -EINVAL;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
                len--;
        if (len >= sizeof buf)
                return -EINVAL;
        memcpy(buf, line, len);
        buf[len] = 0;
        if (strlen(buf) != len) /* embedded NUL */
                return -EINVAL;

        p = skip_spaces(buf);
        if (*p == 0 || *p == '#')
                return -ENOMSG;

        if (startswith(p, "CPU:")) {
                const char *lost = strstr(p, "[LOST ");
                uint64_t cpu, n;
                const char *q = parse_dec(p + 4, &cpu);
                if (!q || !lost || cpu > UINT32_MAX)
                        return -EINVAL;
                q = parse_dec(lost + 6, &n);
                if (!q || !startswith(q, " EVENTS]"))
                        return -EINVAL;
                e.type = TRACE_EVENT_LOST;
                e.cpu = (unsigned) cpu;
                e.lost = n;
                e.pid = e.tgid = -1;
                *ret = e;
                return 0;
        }

        /* Try every " [digits] " as the CPU column, leftmost first: a comm
         * can contain one too, but then the rest does not parse. */
        int r = -EINVAL;
        for (const char *b = strchr(p, '['); b; b = strchr(b + 1, '[')) {
                uint64_t cpu;
                const char *q;
                TraceEvent t = {};

                if (b == buf || b[-1] != ' ')
                        continue;
                q = parse_dec(b + 1, &cpu);
                if (!q || *q != ']' || q[1] != ' ' || cpu > UINT32_MAX)
                        continue;
                if (parse_task_column(buf, b, &t) < 0)
                        continue;
                t.cpu = (unsigned) cpu;
                r = parse_after_cpu(q + 2, &t);
                if (r == -EINVAL)
                        continue;
                if (r < 0)
                        return r;
                *ret = t;
                return 0;
        }
        return r;
}

/* ---- the window (pure) ---- */

void contention_window_init(ContentionWindow *w, int ksmd_pid) {
        *w = (ContentionWindow) { .ksmd_pid = ksmd_pid };
}

static LockHolder *window_holder(ContentionWindow *w, uint64_t mm) {
        for (size_t i = 0; i < w->n_holders; i++)
                if (w->holders[i].mm == mm)
                        return &w->holders[i];
        if (w->n_holders >= CONTENTION_MAX_HOLDERS) {
                w->dropped_holders++;
                return NULL;
        }
        LockHolder *h = &w->holders[w->n_holders++];
        *h = (LockHolder) { .mm = mm, .tgid = -1 };
        return h;
}

void contention_window_set_vma_probe(ContentionWindow *w, bool armed) {
        w->vma_probe = armed;
}

void contention_window_set_khugepaged(ContentionWindow *w, int khugepaged_pid) {
        w->khugepaged_pid = khugepaged_pid;
}

static void window_add_khugepaged(ContentionWindow *w, const TraceEvent *e) {
        LockHolder *h;

        if (!e->write) {
                /* Its read locks: released, then (a writer in between)
                 * taken again at once on the same mm is either the drop of
                 * a contended lock (seed 002) or a collapse's revalidation,
                 * which drops it again and write-locks the mm: the lock
                 * after the next release tells which. Any other lock of its
                 * own in between is its ordinary walk. */
                if (e->type == TRACE_EVENT_RELEASED) {
                        if (w->khugepaged_candidate == KHUGEPAGED_RETAKEN && e->mm == w->khugepaged_candidate_mm)
                                w->khugepaged_candidate = KHUGEPAGED_RETAKEN_RELEASED;
                        w->khugepaged_read_released = true;
                        w->khugepaged_writer_since = false;
                        w->khugepaged_read_released_mm = e->mm;
                        w->khugepaged_read_released_nsec = e->time_nsec;
                } else if (e->type == TRACE_EVENT_START_LOCKING || e->type == TRACE_EVENT_ACQUIRE_RETURNED) {
                        if (w->khugepaged_candidate == KHUGEPAGED_RETAKEN_RELEASED) {
                                /* a read lock, not the collapse's write lock */
                                w->khugepaged_yields++;
                                w->khugepaged_candidate = KHUGEPAGED_NO_CANDIDATE;
                        }
                        if (w->khugepaged_read_released && w->khugepaged_writer_since &&
                            e->mm == w->khugepaged_read_released_mm &&
                            e->time_nsec >= w->khugepaged_read_released_nsec &&
                            e->time_nsec - w->khugepaged_read_released_nsec <= CONTENTION_KHUGEPAGED_YIELD_NSEC) {
                                w->khugepaged_candidate = KHUGEPAGED_RETAKEN;
                                w->khugepaged_candidate_mm = e->mm;
                        }
                        w->khugepaged_read_released = false;
                }
                return;
        }
        /* a write lock of its own: a collapse, whatever came before */
        w->khugepaged_read_released = false;
        w->khugepaged_candidate = KHUGEPAGED_NO_CANDIDATE;
        if (e->type == TRACE_EVENT_ACQUIRE_RETURNED && e->success) {
                h = window_holder(w, e->mm);
                if (h)
                        h->khugepaged_write_locks++;
        } else if (e->type == TRACE_EVENT_RELEASED) {
                h = window_holder(w, e->mm);
                if (h)
                        h->khugepaged_released_nsec = e->time_nsec;
        }
}

/* The mm's writer, from the first of its write locks the window saw,
 * acquired or released: the process to blame for ksmd's waits on it; and
 * writer tasks to confirm it by: the first (the hint's) and the latest new
 * ones. When the slots are full a new writer pushes out the oldest but the
 * first: in a pool whose threads come and go, the writers seen last are the
 * likeliest to be still there when the window ends. */
static void holder_note_writer(LockHolder *h, const TraceEvent *e) {
        if (h->tgid < 0)
                h->tgid = e->tgid >= 0 ? e->tgid : e->pid;
        bool known = false;
        for (unsigned i = 0; i < h->n_tids && !known; i++)
                known = h->tids[i] == e->pid;
        if (!known && e->pid > 0) {
                if (h->n_tids == LOCK_HOLDER_MAX_TIDS) {
                        memmove(&h->tids[1], &h->tids[2], (LOCK_HOLDER_MAX_TIDS - 2) * sizeof h->tids[0]);
                        memmove(&h->tid_nsec[1], &h->tid_nsec[2], (LOCK_HOLDER_MAX_TIDS - 2) * sizeof h->tid_nsec[0]);
                        h->n_tids--;
                }
                h->tids[h->n_tids] = e->pid;
                h->tid_nsec[h->n_tids++] = e->time_nsec;
        }
        if (!h->comm[0] || streq(h->comm, "<...>"))
                strscpy(h->comm, sizeof h->comm, e->comm);
        if (e->memcg_id != 0)
                h->memcg_id = e->memcg_id;
}

/* Where the hold of a write release without its acquire counts from; its
 * true start is unknown, so this is a lower bound. When the ring lost
 * nothing, the acquire came before the events were enabled, so the hold
 * covered the whole window up to here. When it lost events, the acquire may
 * have been dropped from anywhere in the window: the hold counts from
 * ksmd's start of a wait for this mm (a reader waits only while the lock is
 * write-held or a writer is queued ahead of it) and is none without one. */
static uint64_t unpaired_hold_since_nsec(const ContentionWindow *w, const TraceEvent *e) {
        if (w->lost_events == 0)
                return w->first_nsec;
        if (w->ksmd_pending && w->ksmd_pending_mm == e->mm)
                return w->ksmd_pending_nsec;
        return e->time_nsec;
}

void contention_window_add(ContentionWindow *w, const TraceEvent *e) {
        LockHolder *h;

        if (e->type == TRACE_EVENT_LOST) {
                w->lost_events += e->lost;
                return;
        }
        if (e->type == TRACE_EVENT_VMA_LOCK) {
                /* the probes are filtered to ksmd; another pid is a filter
                 * that did not take, and says nothing of ksmd */
                if (e->pid == w->ksmd_pid && w->ksmd_pid > 0)
                        w->ksmd_vma_locks++;
                return;
        }
        if (e->type != TRACE_EVENT_START_LOCKING && e->type != TRACE_EVENT_ACQUIRE_RETURNED &&
            e->type != TRACE_EVENT_RELEASED)
                return;
        if (w->events == 0 || e->time_nsec < w->first_nsec)
                w->first_nsec = e->time_nsec;
        if (e->time_nsec > w->last_nsec)
                w->last_nsec = e->time_nsec;
        w->events++;

        if (e->pid == w->ksmd_pid && w->ksmd_pid > 0) {
                if (w->ksmd_start_locking + w->ksmd_acquired == 0 || e->time_nsec < w->ksmd_first_nsec)
                        w->ksmd_first_nsec = e->time_nsec;
                if (e->time_nsec > w->ksmd_last_nsec)
                        w->ksmd_last_nsec = e->time_nsec;
                /* Its next lock call (a blocking one's start, a trylock's
                 * return) ends its work at the mm it held. */
                if (w->ksmd_holding && (e->type == TRACE_EVENT_START_LOCKING || !w->ksmd_pending)) {
                        if (e->time_nsec >= w->ksmd_holding_nsec &&
                            e->time_nsec - w->ksmd_holding_nsec <= CONTENTION_WORK_GAP_NSEC) {
                                h = window_holder(w, w->ksmd_holding_mm);
                                if (h)
                                        h->ksmd_work_nsec += e->time_nsec - w->ksmd_holding_nsec;
                        }
                        w->ksmd_holding = false;
                }
                switch (e->type) {
                case TRACE_EVENT_START_LOCKING:
                        w->ksmd_start_locking++;
                        w->ksmd_pending = true;
                        w->ksmd_pending_mm = e->mm;
                        w->ksmd_pending_nsec = e->time_nsec;
                        break;
                case TRACE_EVENT_ACQUIRE_RETURNED:
                        h = window_holder(w, e->mm);
                        w->ksmd_acquired++;
                        if (h)
                                h->ksmd_locks++;
                        if (!e->success) {
                                w->ksmd_trylock_failures++;
                                if (h)
                                        h->ksmd_trylock_failures++;
                        }
                        /* A trylock has no start_locking event; pair only
                         * the blocking acquisition of the same mm. */
                        if (w->ksmd_pending && w->ksmd_pending_mm == e->mm &&
                            e->time_nsec >= w->ksmd_pending_nsec) {
                                uint64_t wait = e->time_nsec - w->ksmd_pending_nsec;
                                /* A wait that khugepaged's write release
                                 * ended was for khugepaged: the process
                                 * is not to blame (seed 002). */
                                if (h && h->khugepaged_released_nsec >= w->ksmd_pending_nsec &&
                                    h->khugepaged_released_nsec <= e->time_nsec &&
                                    wait >= CONTENTION_WAIT_THRESHOLD_NSEC) {
                                        h->ksmd_wait_khugepaged_nsec += wait;
                                        w->khugepaged_wait_nsec += wait;
                                } else if (h) {
                                        h->ksmd_wait_nsec += wait;
                                        h->ksmd_timed_waits++;
                                        if (wait >= CONTENTION_WAIT_THRESHOLD_NSEC) {
                                                h->ksmd_waits++;
                                                h->ksmd_long_wait_nsec += wait;
                                        }
                                }
                                w->ksmd_wait_nsec += wait;
                                w->ksmd_timed_waits++;
                        }
                        w->ksmd_pending = false;
                        if (e->success) {
                                w->ksmd_holding = true;
                                w->ksmd_holding_mm = e->mm;
                                w->ksmd_holding_nsec = e->time_nsec;
                        }
                        break;
                default:
                        break;
                }
                return;
        }

        if (e->pid == w->khugepaged_pid && w->khugepaged_pid > 0) {
                window_add_khugepaged(w, e);
                return;
        }
        if (!e->write)
                return;
        if (e->type == TRACE_EVENT_START_LOCKING) {
                h = window_holder(w, e->mm);
                if (h)
                        h->write_starts++;
        } else if (e->type == TRACE_EVENT_ACQUIRE_RETURNED && e->success) {
                if (w->khugepaged_read_released && e->mm == w->khugepaged_read_released_mm)
                        w->khugepaged_writer_since = true;
                h = window_holder(w, e->mm);
                if (!h)
                        return;
                h->write_locks++;
                holder_note_writer(h, e);
                size_t i;
                for (i = 0; i < w->n_pending; i++)
                        if (w->pending[i].pid == e->pid)
                                break;
                if (i == w->n_pending) {
                        if (w->n_pending >= CONTENTION_MAX_PENDING)
                                return;
                        w->n_pending++;
                }
                w->pending[i].pid = e->pid;
                w->pending[i].mm = e->mm;
                w->pending[i].since_nsec = e->time_nsec;
        } else if (e->type == TRACE_EVENT_RELEASED) {
                uint64_t since_nsec = 0;
                bool paired = false;

                for (size_t i = 0; i < w->n_pending; i++)
                        if (w->pending[i].pid == e->pid && w->pending[i].mm == e->mm) {
                                since_nsec = w->pending[i].since_nsec;
                                w->pending[i] = w->pending[--w->n_pending];
                                paired = true;
                                break;
                        }
                h = window_holder(w, e->mm);
                if (!h)
                        return;
                if (!paired) {
                        /* All the window kept of this writer: a hold that
                         * began before the window opened (Q1's QEMU main
                         * thread mid object-add), or whose acquire the full
                         * ring dropped. ksmd's wait for the mm ended here
                         * all the same, so this names whom it waited for. */
                        holder_note_writer(h, e);
                        since_nsec = unpaired_hold_since_nsec(w, e);
                }
                if (e->time_nsec >= since_nsec)
                        h->write_hold_nsec += e->time_nsec - since_nsec;
        }
}

uint64_t contention_window_ksmd_span_nsec(const ContentionWindow *w) {
        return w->ksmd_last_nsec > w->ksmd_first_nsec ? w->ksmd_last_nsec - w->ksmd_first_nsec : 0;
}

void contention_window_finish(ContentionWindow *w, uint64_t fallback_nsec) {
        uint64_t n = 0, sum = 0, floor_nsec = fallback_nsec;

        if (w->finished)
                return;
        w->finished = true;
        for (size_t i = 0; i < w->n_holders; i++) {
                const LockHolder *h = &w->holders[i];
                if (h->n_tids > 0 || h->write_locks > 0 || h->write_starts > 0 || h->khugepaged_write_locks > 0)
                        continue;
                /* a long wait there is a writer's all the same, one whose
                 * hold spanned the window and left no event in it */
                n += h->ksmd_timed_waits - h->ksmd_waits;
                sum += h->ksmd_wait_nsec - h->ksmd_long_wait_nsec;
        }
        if (n >= CONTENTION_FLOOR_MIN_WAITS) {
                floor_nsec = sum / n;
                w->ksmd_wait_floor_measured = true;
        }
        floor_nsec = MIN(floor_nsec, CONTENTION_WAIT_FLOOR_MAX_NSEC);
        w->ksmd_wait_floor_nsec = floor_nsec;
        w->ksmd_wait_nsec -= MIN(w->ksmd_wait_nsec, w->ksmd_timed_waits * floor_nsec);
        for (size_t i = 0; i < w->n_holders; i++) {
                LockHolder *h = &w->holders[i];
                h->ksmd_wait_nsec -= MIN(h->ksmd_wait_nsec, h->ksmd_timed_waits * floor_nsec);
        }
}

bool contention_window_complete(const ContentionWindow *w) {
        return w->lost_events == 0 && !w->truncated;
}

uint64_t contention_window_span_nsec(const ContentionWindow *w) {
        return w->events ? w->last_nsec - w->first_nsec : 0;
}

const LockHolder *contention_window_worst(const ContentionWindow *w) {
        const LockHolder *best = NULL;
        for (size_t i = 0; i < w->n_holders; i++) {
                const LockHolder *h = &w->holders[i];
                if (h->ksmd_wait_nsec == 0 && h->ksmd_trylock_failures == 0)
                        continue;
                if (!best || h->ksmd_wait_nsec > best->ksmd_wait_nsec ||
                    (h->ksmd_wait_nsec == best->ksmd_wait_nsec &&
                     h->ksmd_trylock_failures > best->ksmd_trylock_failures))
                        best = h;
        }
        return best;
}
