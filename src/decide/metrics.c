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

static void gauge_u64(FILE *f, const char *name, const char *help, uint64_t v) {
        family(f, name, "gauge", help);
        fprintf(f, "%s %" PRIu64 "\n", name, v);
}

static void ksm_value(FILE *f, const KsmState *k, KsmKey key, const char *name, const char *type, const char *help) {
        if (!ksm_state_has(k, key))
                return;
        family(f, name, type, help);
        fprintf(f, "%s %" PRIu64 "\n", name, k->value[key]);
}

/* The phase as a state set (a sample per phase, 1 for the current one) and
 * the burst allowance. */
static void controller_metrics(FILE *f, const Controller *c) {
        if (!c)
                return;
        family(f, "ksmtuned2_controller_phase", "gauge",
               "The controller's phase: 1 for the current one, 0 for the others.");
        for (TuneMode p = 0; p < _TUNE_MODE_MAX; p++)
                fprintf(f, "ksmtuned2_controller_phase{phase=\"%s\"} %d\n", tune_mode_to_string(p), c->mode == p);
        family(f, "ksmtuned2_controller_burst_allowance_seconds", "gauge",
               "ksmd CPU time left for bursts, refilled at the CPU budget; negative when overdrawn.");
        fprintf(f, "ksmtuned2_controller_burst_allowance_seconds %.3f\n", c->allowance_nsec / 1e9);
}

/* One labelled sample per cgroup; label strings are escaped once by the caller. */
typedef struct Labels {
        char *cgroup, *unit, *vm;
} Labels;

int metrics_format(const MetricsInput *in, char **ret) {
        _cleanup_free_ char *text = NULL, *version = NULL, *kernel = NULL, *mode = NULL;
        _cleanup_free_ Labels *labels = NULL;
        const Snapshot *s = in->snapshot;
        const KsmState *k = &s->ksm;
        size_t size = 0, n_cg = in->cgroups ? in->cgroups->n : 0;
        int r = 0;
        FILE *f;

        version = metrics_escape_label(in->version);
        kernel = metrics_escape_label(in->kernel_release);
        mode = metrics_escape_label(in->mode);
        labels = calloc(n_cg + 1, sizeof *labels);
        if (!version || !kernel || !mode || !labels)
                return -ENOMEM;
        for (size_t i = 0; i < n_cg; i++) {
                const CgroupSavings *c = &in->cgroups->items[i];
                labels[i].cgroup = metrics_escape_label(c->cgroup ? c->cgroup : "");
                labels[i].unit = metrics_escape_label(c->unit);
                labels[i].vm = metrics_escape_label(c->vm_name);
                if (!labels[i].cgroup || !labels[i].unit || !labels[i].vm)
                        r = -ENOMEM;
        }

        f = r < 0 ? NULL : open_memstream(&text, &size);
        if (f) {
                family(f, "ksmtuned2_info", "gauge", "The running ksmtuned2: version, kernel and mode as labels, value 1.");
                fprintf(f, "ksmtuned2_info{version=\"%s\",kernel=\"%s\",mode=\"%s\"} 1\n", version, kernel, mode);
                gauge_u64(f, "ksmtuned2_paused", "1 while paused: no knob or process is changed.", in->paused);
                gauge_u64(f, "ksmtuned2_dry_run", "1 while nothing is written to the kernel.", in->dry_run);
                gauge_u64(f, "ksmtuned2_saved_bytes", "Memory saved by KSM: pages_sharing times the page size.",
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
                controller_metrics(f, in->controller);
                if (s->ksmd_present) {
                        family(f, "ksmtuned2_ksmd_cpu_seconds_total", "counter", "CPU time ksmd used since boot.");
                        fprintf(f, "ksmtuned2_ksmd_cpu_seconds_total %.6f\n", (double) s->ksmd.cpu_ns / 1e9);
                }
                family(f, "ksmtuned2_ksmd_cpu_ratio", "gauge", "ksmd's CPU use over the latest tick, of one CPU.");
                fprintf(f, "ksmtuned2_ksmd_cpu_ratio %.6f\n", in->ksmd_cpu_ratio);
                family(f, "ksmtuned2_ksmd_blocked_ratio", "gauge",
                       "Share of the latest tick ksmd spent blocked, by what it waited for.");
                fprintf(f, "ksmtuned2_ksmd_blocked_ratio{on=\"mmap_lock\"} %.6f\n",
                        ksmd_wait_fraction(&s->ksmd_waits, KSMD_BLOCKED_MMAP_LOCK));
                fprintf(f, "ksmtuned2_ksmd_blocked_ratio{on=\"other\"} %.6f\n",
                        ksmd_wait_fraction(&s->ksmd_waits, KSMD_BLOCKED_OTHER));
                gauge_u64(f, "ksmtuned2_managed_processes", "Processes a policy took a position on.",
                          in->managed_processes);
                family(f, "ksmtuned2_decisions_total", "counter", "Decisions the daemon recorded since it started.");
                fprintf(f, "ksmtuned2_decisions_total %" PRIu64 "\n", in->decisions_total);
                family(f, "ksmtuned2_ticks_total", "counter", "Ticks since the daemon started.");
                fprintf(f, "ksmtuned2_ticks_total %" PRIu64 "\n", in->ticks);
                family(f, "ksmtuned2_last_tick_timestamp_seconds", "gauge", "When this file was written.");
                fprintf(f, "ksmtuned2_last_tick_timestamp_seconds %.3f\n", (double) in->now_realtime_usec / 1e6);

                if (in->cgroups) {
                        static const struct {
                                const char *name, *help;
                        } per_cgroup[] = {
                                { "ksmtuned2_cgroup_merging_bytes", "Memory of the cgroup's processes mapped to KSM pages." },
                                { "ksmtuned2_cgroup_profit_bytes", "ksm_process_profit summed over the cgroup's processes." },
                                { "ksmtuned2_cgroup_processes", "Processes in the cgroup." },
                        };
                        for (size_t m = 0; m < ELEMENTSOF(per_cgroup); m++) {
                                family(f, per_cgroup[m].name, "gauge", per_cgroup[m].help);
                                for (size_t i = 0; i < n_cg; i++) {
                                        const CgroupSavings *c = &in->cgroups->items[i];
                                        /* Keep the cardinality to what saves something, and VMs. */
                                        if (c->merging_pages == 0 && c->profit_bytes == 0 && !c->vm_name)
                                                continue;
                                        fprintf(f, "%s{cgroup=\"/%s\",unit=\"%s\",vm=\"%s\"} ", per_cgroup[m].name,
                                                labels[i].cgroup, labels[i].unit, labels[i].vm);
                                        if (m == 0)
                                                fprintf(f, "%" PRIu64 "\n", c->merging_pages * in->page_size);
                                        else if (m == 1)
                                                fprintf(f, "%" PRIi64 "\n", c->profit_bytes);
                                        else
                                                fprintf(f, "%u\n", c->processes);
                                }
                        }
                }
                if (fclose(f) != 0)
                        r = -ENOMEM;
        } else if (r == 0)
                r = -ENOMEM;

        for (size_t i = 0; i < n_cg; i++) {
                free(labels[i].cgroup);
                free(labels[i].unit);
                free(labels[i].vm);
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(text);
        return 0;
}
