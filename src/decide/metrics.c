/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksm-state.h"
#include "metrics.h"
#include "util.h"

char *metrics_escape_label(const char *s) {
        size_t n = strlen(strempty(s));
        /* Worst case: every byte becomes U+FFFD (3 bytes). */
        char *out = malloc(n * 3 + 1), *o = out;
        const unsigned char *p = (const unsigned char *) strempty(s);

        if (!out)
                return NULL;
        while (*p) {
                size_t k = utf8_sequence_length((const char *) p);
                if (*p == '\\' || *p == '"') {
                        *o++ = '\\';
                        *o++ = (char) *p++;
                } else if (*p == '\n') {
                        *o++ = '\\';
                        *o++ = 'n';
                        p++;
                } else if (k == 0) {
                        memcpy(o, "\xef\xbf\xbd", 3);
                        o += 3;
                        p++;
                } else {
                        memcpy(o, p, k);
                        o += k;
                        p += k;
                }
        }
        *o = 0;
        return out;
}

static void family(FILE *f, const char *name, const char *type, const char *help) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void value_u64(FILE *f, const char *name, const char *type, const char *help, uint64_t v) {
        family(f, name, type, help);
        fprintf(f, "%s %" PRIu64 "\n", name, v);
}

static void ksm_value(FILE *f, const KsmState *k, KsmKey key, const char *name, const char *type, const char *help) {
        if (ksm_state_has(k, key))
                value_u64(f, name, type, help, k->value[key]);
}

/* A state set (OpenMetrics' stateset; a gauge in this format): a series per
 * state, 1 for the one in force and 0 for the others, so that a change is a
 * change of value, not a new series. */
static void state_set(FILE *f, const char *name, const char *help, const char *label, const char *const *states,
                      size_t n, size_t current) {
        family(f, name, "gauge", help);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%s{%s=\"%s\"} %d\n", name, label, states[i], i == current);
}

/* The labelled series of one kind of group (VMs, units), labels escaped. */
typedef struct Series {
        char *label;
        unsigned processes;
        uint64_t merging_pages;
        int64_t profit_bytes;
} Series;

typedef struct SeriesList {
        Series *items;
        size_t n;
} SeriesList;

static void series_list_done(SeriesList *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->items[i].label);
        free(l->items);
        *l = (SeriesList) {};
}

static void series_add(Series *s, const SavingsGroup *g) {
        s->processes += g->processes;
        s->merging_pages += g->merging_pages;
        s->profit_bytes += g->profit_bytes;
}

/* The groups worth a series (every VM; a unit only while it merges or
 * profits, which keeps the idle majority of a host's units out), largest
 * first, at most max of them; the rest summed under METRICS_OTHER_LABEL. */
static int pick_series(const SavingsGroups *g, bool keep_idle, size_t max, SeriesList *ret) {
        _cleanup_(series_list_done) SeriesList l = {};
        Series other = {};
        bool have_other = false;

        l.items = calloc(MIN(g->n, max) + 1, sizeof *l.items);
        if (!l.items)
                return -ENOMEM;
        for (size_t i = 0; i < g->n; i++) {
                const SavingsGroup *x = &g->items[i];
                if (!keep_idle && x->merging_pages == 0 && x->profit_bytes == 0)
                        continue;
                if (l.n >= max) {
                        series_add(&other, x);
                        have_other = true;
                        continue;
                }
                Series *s = &l.items[l.n];
                s->label = metrics_escape_label(x->name ?: METRICS_NO_UNIT_LABEL);
                if (!s->label)
                        return -ENOMEM;
                l.n++;
                series_add(s, x);
        }
        if (have_other) {
                other.label = strdup(METRICS_OTHER_LABEL);
                if (!other.label)
                        return -ENOMEM;
                l.items[l.n++] = other;
        }
        *ret = TAKE_STRUCT(l);
        return 0;
}

static int group_series(const SavingsTable *cgroups, SavingsKey key, size_t max, SeriesList *ret) {
        _cleanup_(savings_groups_done) SavingsGroups g = {};
        int r = savings_group(cgroups, key, &g);
        if (r < 0)
                return r;
        return pick_series(&g, key == SAVINGS_BY_VM, max, ret);
}

/* ksmtuned2_<kind>_merging_bytes{<kind>="..."} and its two siblings. */
static void group_families(FILE *f, const char *kind, const char *what, const SeriesList *l, uint64_t page_size) {
        static const struct {
                const char *suffix, *help;
        } families[] = {
                { "merging_bytes", "Memory of the processes mapped to KSM pages (ksm_merging_pages)" },
                { "profit_bytes", "ksm_process_profit summed over the processes" },
                { "processes", "Processes" },
        };
        char name[64], help[128];

        if (l->n == 0)
                return;
        for (size_t m = 0; m < ELEMENTSOF(families); m++) {
                snprintf(name, sizeof name, "ksmtuned2_%s_%s", kind, families[m].suffix);
                snprintf(help, sizeof help, "%s, per %s.", families[m].help, what);
                family(f, name, "gauge", help);
                for (size_t i = 0; i < l->n; i++) {
                        const Series *s = &l->items[i];
                        fprintf(f, "%s{%s=\"%s\"} ", name, kind, s->label);
                        if (m == 0)
                                fprintf(f, "%" PRIu64 "\n", s->merging_pages * page_size);
                        else if (m == 1)
                                fprintf(f, "%" PRIi64 "\n", s->profit_bytes);
                        else
                                fprintf(f, "%u\n", s->processes);
                }
        }
}

/* The controller's phase as a state set and its burst allowance; nothing
 * without a tuning stage. */
static void controller_metrics(FILE *f, const Controller *c) {
        const char *phases[_TUNE_MODE_MAX];

        if (!c)
                return;
        for (TuneMode p = 0; p < _TUNE_MODE_MAX; p++)
                phases[p] = tune_mode_to_string(p);
        state_set(f, "ksmtuned2_controller_phase", "The controller's phase: 1 for the current one, 0 for the others.",
                  "phase", phases, _TUNE_MODE_MAX, (size_t) c->mode);
        family(f, "ksmtuned2_controller_burst_allowance_seconds", "gauge",
               "ksmd CPU time left for bursts, refilled at the CPU budget; negative when overdrawn.");
        fprintf(f, "ksmtuned2_controller_burst_allowance_seconds %.3f\n", c->allowance_nsec / 1e9);
        family(f, "ksmtuned2_controller_burst_borrow_seconds", "gauge",
               "ksmd CPU time the current burst may overdraw the allowance by: three full scans of its memory at "
               "the measured cost, less the allowance; 0 outside bursts.");
        fprintf(f, "ksmtuned2_controller_burst_borrow_seconds %.3f\n", c->borrow_nsec / 1e9);
}

/* The seed fixes as one state set per fix, with what their detection and
 * the smart_scan workaround counted. */
static void kernel_fix_metrics(FILE *f, const KernelFixes *k, const SmartScanWorkaround *w) {
        if (!k)
                return;
        family(f, "ksmtuned2_kernel_fix", "gauge",
               "Whether the kernel carries each seed fix, told from behaviour: 1 for the state in force.");
        for (KernelFixId i = 0; i < _KERNEL_FIX_MAX; i++)
                for (FixState st = 0; st < _FIX_STATE_MAX; st++)
                        fprintf(f, "ksmtuned2_kernel_fix{fix=\"%s\",seed=\"%s\",state=\"%s\"} %d\n",
                                kernel_fix_id_to_string(i), kernel_fix_seed(i), fix_state_to_string(st),
                                k->fix[i].state == st);
        value_u64(f, "ksmtuned2_ksmd_trylock_failures_total", "counter",
                  "ksmd's mmap lock tries that failed in the trace windows: pages skipped because contended (seed 000).",
                  k->ksmd_trylock_failures);
        value_u64(f, "ksmtuned2_ksmd_contended_waits_total", "counter",
                  "ksmd's blocking mmap lock acquisitions that waited behind a writer in the trace windows.",
                  k->ksmd_contended_waits);
        family(f, "ksmtuned2_ksmd_khugepaged_wait_seconds_total", "counter",
               "ksmd's waits in the trace windows that khugepaged's own write holds caused (seed 002).");
        fprintf(f, "ksmtuned2_ksmd_khugepaged_wait_seconds_total %.6f\n", (double) k->khugepaged_wait_nsec / 1e9);
        if (!w)
                return;
        value_u64(f, "ksmtuned2_smart_scan_workaround_scans_total", "counter",
                  "Full scans run with smart_scan=0 because merging had stalled (seed 004).", w->count);
        family(f, "ksmtuned2_smart_scan_workaround_ksmd_cpu_seconds_total", "counter",
               "ksmd CPU time spent during those scans.");
        fprintf(f, "ksmtuned2_smart_scan_workaround_ksmd_cpu_seconds_total %.6f\n", (double) w->cpu_nsec / 1e9);
        value_u64(f, "ksmtuned2_smart_scan_workaround_active", "gauge", "1 while smart_scan=0 is the workaround's.",
                  w->active);
}

int metrics_format(const MetricsInput *in, char **ret) {
        _cleanup_free_ char *text = NULL, *version = NULL, *kernel = NULL;
        _cleanup_(series_list_done) SeriesList vms = {}, units = {};
        _cleanup_fclose_ FILE *f = NULL;
        const Snapshot *s = in->snapshot;
        const KsmState *k = &s->ksm;
        size_t size = 0;
        int r;

        version = metrics_escape_label(in->version);
        kernel = metrics_escape_label(in->kernel_release);
        if (!version || !kernel)
                return -ENOMEM;
        if (in->cgroups) {
                r = group_series(in->cgroups, SAVINGS_BY_VM, in->max_group_series, &vms);
                if (r < 0)
                        return r;
                r = group_series(in->cgroups, SAVINGS_BY_UNIT, in->max_group_series, &units);
                if (r < 0)
                        return r;
        }

        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        family(f, "ksmtuned2_info", "gauge", "The running ksmtuned2: version and kernel as labels, value 1.");
        fprintf(f, "ksmtuned2_info{version=\"%s\",kernel=\"%s\"} 1\n", version, kernel);
        state_set(f, "ksmtuned2_mode", "What the daemon may change (SetMode): 1 for the mode in force.", "mode",
                  in->modes, in->n_modes, in->mode);
        value_u64(f, "ksmtuned2_paused", "gauge", "1 while paused: no knob or process is changed.", in->paused);
        value_u64(f, "ksmtuned2_dry_run", "gauge", "1 while nothing is written to the kernel.", in->dry_run);
        value_u64(f, "ksmtuned2_saved_bytes", "gauge", "Memory saved by KSM: pages_sharing times the page size.",
                  snapshot_saved_bytes(s, in->page_size));
        if (ksm_state_has(k, KSM_GENERAL_PROFIT)) {
                family(f, "ksmtuned2_general_profit_bytes", "gauge",
                       "The kernel's general_profit: the saving minus KSM's metadata.");
                fprintf(f, "ksmtuned2_general_profit_bytes %" PRIi64 "\n", ksm_state_general_profit(k));
        }
        ksm_value(f, k, KSM_PAGES_SHARED, "ksmtuned2_ksm_pages_shared", "gauge", "KSM pages in use (pages_shared).");
        ksm_value(f, k, KSM_PAGES_SHARING, "ksmtuned2_ksm_pages_sharing", "gauge",
                  "Pages that point at a KSM page (pages_sharing).");
        ksm_value(f, k, KSM_PAGES_UNSHARED, "ksmtuned2_ksm_pages_unshared", "gauge",
                  "Pages scanned and unique so far (pages_unshared).");
        ksm_value(f, k, KSM_PAGES_VOLATILE, "ksmtuned2_ksm_pages_volatile", "gauge",
                  "Pages changing too fast to merge (pages_volatile).");
        ksm_value(f, k, KSM_ZERO_PAGES, "ksmtuned2_ksm_zero_pages", "gauge",
                  "Empty pages merged with the kernel zero page (ksm_zero_pages).");
        ksm_value(f, k, KSM_PAGES_SCANNED, "ksmtuned2_ksm_pages_scanned_total", "counter",
                  "Pages ksmd scanned since boot (pages_scanned).");
        ksm_value(f, k, KSM_FULL_SCANS, "ksmtuned2_ksm_full_scans_total", "counter",
                  "Full scans of all mergeable memory since boot (full_scans).");
        ksm_value(f, k, KSM_RUN, "ksmtuned2_ksm_run", "gauge", "The run knob: 0 stopped, 1 running, 2 unmerging.");
        ksm_value(f, k, KSM_PAGES_TO_SCAN, "ksmtuned2_ksm_pages_to_scan", "gauge",
                  "The pages_to_scan knob: pages per ksmd batch.");
        if (ksm_state_has(k, KSM_SLEEP_MILLISECS)) {
                family(f, "ksmtuned2_ksm_sleep_seconds", "gauge", "The sleep_millisecs knob, in seconds.");
                fprintf(f, "ksmtuned2_ksm_sleep_seconds %.3f\n", (double) k->value[KSM_SLEEP_MILLISECS] / 1000.0);
        }
        if (s->ksmd_present) {
                family(f, "ksmtuned2_ksmd_cpu_seconds_total", "counter", "CPU time ksmd used since boot.");
                fprintf(f, "ksmtuned2_ksmd_cpu_seconds_total %.6f\n", (double) s->ksmd.cpu_ns / 1e9);
        }
        family(f, "ksmtuned2_ksmd_cpu_ratio", "gauge", "ksmd's CPU use over the latest tick, of one CPU.");
        fprintf(f, "ksmtuned2_ksmd_cpu_ratio %.6f\n", in->ksmd_cpu_ratio);
        family(f, "ksmtuned2_ksmd_cpu_budget_ratio", "gauge",
               "The long-run ksmd CPU budget the tuner holds to now, of one CPU.");
        fprintf(f, "ksmtuned2_ksmd_cpu_budget_ratio %.6f\n", in->ksmd_cpu_budget_ratio);
        controller_metrics(f, in->controller);
        kernel_fix_metrics(f, in->fixes, in->smart_scan);
        family(f, "ksmtuned2_ksmd_blocked_ratio", "gauge",
               "Share of the latest tick ksmd spent blocked, by what it waited for.");
        fprintf(f, "ksmtuned2_ksmd_blocked_ratio{on=\"mmap_lock\"} %.6f\n",
                ksmd_wait_fraction(&s->ksmd_waits, KSMD_BLOCKED_MMAP_LOCK));
        fprintf(f, "ksmtuned2_ksmd_blocked_ratio{on=\"other\"} %.6f\n",
                ksmd_wait_fraction(&s->ksmd_waits, KSMD_BLOCKED_OTHER));
        family(f, "ksmtuned2_ksmd_samples_total", "counter",
               "Samples of ksmd's state since the daemon started, by state (none while ksmd is idle).");
        for (KsmdWait w = 0; w < _KSMD_WAIT_MAX; w++)
                fprintf(f, "ksmtuned2_ksmd_samples_total{state=\"%s\"} %" PRIu64 "\n", ksmd_wait_to_string(w),
                        in->ksmd_samples.by_wait[w]);
        if (in->n_actions > 0)
                family(f, "ksmtuned2_actions_total", "counter",
                       "Process actions since the daemon started, by action, method and outcome.");
        for (size_t i = 0; i < in->n_actions; i++) {
                const MetricsActionCount *a = &in->actions[i];
                fprintf(f, "ksmtuned2_actions_total{action=\"%s\",method=\"%s\",outcome=\"%s\"} %" PRIu64 "\n",
                        a->action, a->method, a->outcome, a->count);
        }
        value_u64(f, "ksmtuned2_managed_processes", "gauge", "Processes a policy took a position on.",
                  in->managed_processes);
        value_u64(f, "ksmtuned2_decisions_total", "counter", "Decisions the daemon recorded since it started.",
                  in->decisions_total);
        value_u64(f, "ksmtuned2_ticks_total", "counter", "Ticks since the daemon started.", in->ticks);
        family(f, "ksmtuned2_last_tick_timestamp_seconds", "gauge", "When this file was written.");
        fprintf(f, "ksmtuned2_last_tick_timestamp_seconds %.3f\n", (double) in->now_realtime_usec / 1e6);
        group_families(f, "vm", "VM", &vms, in->page_size);
        group_families(f, "unit", "unit", &units, in->page_size);

        r = fclose(TAKE_PTR(f));
        if (r != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(text);
        return 0;
}
