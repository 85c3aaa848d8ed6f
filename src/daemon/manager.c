/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <systemd/sd-daemon.h>

#include "log-messages.h"
#include "log.h"
#include "manager-bus.h"
#include "manager-history.h"
#include "manager-merge.h"
#include "manager-metrics.h"
#include "manager.h"
#include "injector.h"
#include "proc-events.h"
#include "sandbox.h"
#include "util.h"

static void log_config_files(const Manager *m, const char *what, const char *message_id) {
        _cleanup_free_ char *list = strv_join(m->config_files, ", ");
        if (strv_length(m->config_files) == 0)
                log_struct(LOG_INFO, LOG_FIELDS(.message_id = message_id), "%s: no file, built-in defaults.", what);
        else
                log_struct(LOG_INFO, LOG_FIELDS(.message_id = message_id), "%s: %s.", what, strna(list));
}

int manager_new(const ManagerOptions *o, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        m = calloc(1, sizeof *m);
        if (!m)
                return log_oom();
        m->ksmd_pid = -1;
        m->dry_run_forced = o->dry_run;
        if (history_init(&m->history, HISTORY_TICKS, HISTORY_MINUTES) < 0)
                return log_oom();
        config_init_defaults(&m->config);
        m->config_path = strdup(o->config_path ? o->config_path : DEFAULT_CONFIG_PATH);
        m->config_explicit = o->config_path;
        if (!m->config_path || !m->config.policy_dirs)
                return log_oom();

        r = config_load_logged(&m->config, o->config_path, &m->config_files, /* diag_stream= */ NULL);
        if (r == -EBADMSG)
                return log_error_errno(r, "The configuration cannot be parsed (see above), refusing to start.");
        if (r < 0)
                return log_error_errno(r, "Failed to read the configuration (see above): %m");
        log_set_max_level(m->config.log_level);
        (void) manager_set_mode(m, m->config.mode, "by Mode= of the configuration");

        r = root_open(o->root_prefix, &m->root);
        if (r < 0)
                return log_error_errno(r, "Failed to open the kernel's proc and sys trees under \"%s\": %m",
                                       o->root_prefix ? o->root_prefix : "/");

        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate event loop: %m");

        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        ksmd_sampler_stop(m->ksmd_sampler);
        merge_worker_stop(m->merge);
        discovery_free(m->discovery);
        manager_bus_free(m->bus);
        tuner_free(m->tuner);
        /* After everything that reads or injects through it. */
        injector_client_free(m->injector);
        sd_event_source_unref(m->tick_source);
        sd_event_source_unref(m->watchdog_source);
        sd_event_unref(m->event);
        knob_journal_done(&m->knobs);
        root_free(m->root);
        config_done(&m->config);
        history_done(&m->history);
        free(m->config_path);
        strv_free(m->config_files);
        free(m->journal_path);
        free(m);
        return NULL;
}

const ProcessTable *manager_processes(const Manager *m) {
        return m->discovery ? discovery_processes(m->discovery) : NULL;
}

static bool process_owner(const void *userdata, int pid, ProcessOwner *ret) {
        const ProcessTable *t = manager_processes(userdata);
        const Process *p = t ? process_table_get(t, pid) : NULL;
        if (!p)
                return false;
        *ret = process_owner_of(p);
        return true;
}

uint64_t manager_managed_processes(const Manager *m) {
        DiscoveryStatus st = {};
        if (m->discovery)
                discovery_get_status(m->discovery, &st);
        return st.verdicts[VERDICT_MERGE] + st.verdicts[VERDICT_WAIT] + st.verdicts[VERDICT_DONT_MERGE];
}

double manager_ksmd_cpu_fraction(const Manager *m) {
        return m->tuner ? tuner_model(m->tuner)->ksmd_cpu_fraction : 0.0;
}

const KernelFixes *manager_kernel_fixes(const Manager *m, KernelFixes *buf) {
        if (m->tuner)
                return &tuner_model(m->tuner)->fixes;
        probe_kernel_fixes(&m->probe, buf);
        return buf;
}

const Controller *manager_controller(const Manager *m) {
        return m->tuner ? tuner_controller(m->tuner) : NULL;
}

static int ensure_runtime_dir(const Manager *m) {
        if (mkdir(m->config.runtime_dir, 0755) < 0 && errno != EEXIST)
                return log_warning_errno(negative_errno(), "Cannot create runtime directory %s: %m",
                                         m->config.runtime_dir);
        return 0;
}

static char *knob_state_path(const Manager *m) {
        char *p = NULL;
        if (asprintf(&p, "%s/saved-knobs", m->config.runtime_dir) < 0)
                return NULL;
        return p;
}

static void apply_knob_plan(Manager *m, const KnobPlan *plan) {
        KsmKey order[_KSM_KEY_MAX];
        size_t n = knob_write_order(plan->value, plan->set_mask, order);

        for (size_t i = 0; i < n; i++) {
                KsmKey k = order[i];
                char v[32];
                int r;

                r = knob_set(m->root, &m->knobs, &m->snapshot.ksm, k, plan->value[k], manager_dry_run(m));
                (void) ksm_format_value(k, plan->value[k], v, sizeof v);
                if (r < 0) {
                        /* A refused write is an outcome; say it once per distinct errno. */
                        if (m->last_knob_error[k] != r)
                                log_struct_errno(LOG_WARNING, r,
                                                 LOG_FIELDS(.action = "set", .knob = ksm_key_to_string(k), .value = v,
                                                            .outcome = "failed"),
                                                 "Kernel refused %s=%s: %m", ksm_key_to_string(k), v);
                        m->last_knob_error[k] = r;
                        continue;
                }
                m->last_knob_error[k] = 0;
                if (r > 0 && manager_dry_run(m)) {
                        /* A dry run never changes the value, so the same
                         * "would set" came back every tick (5 a second in
                         * the storm test): say it once per value. */
                        uint64_t bit = UINT64_C(1) << k;
                        if ((m->dry_run_said_mask & bit) && m->dry_run_said[k] == plan->value[k])
                                continue;
                        m->dry_run_said_mask |= bit;
                        m->dry_run_said[k] = plan->value[k];
                } else if (r == 0)
                        m->dry_run_said_mask &= ~(UINT64_C(1) << k);
                if (r > 0) {
                        /* A burst steps its sleep by a millisecond or two
                         * at each full scan without gain (20, 21, 22 ms):
                         * the journal gets the moves an administrator reads,
                         * not that trim (the enter-storm test counted 43
                         * lines for 10 s of bursts, most of them this). */
                        uint64_t was = m->snapshot.ksm.value[k];
                        bool trim = k == KSM_SLEEP_MILLISECS && plan->value[k] > 0 && was > 0 &&
                                    (plan->value[k] > was ? plan->value[k] - was : was - plan->value[k]) * 4 <
                                            MAX(plan->value[k], was);
                        log_struct(trim ? LOG_DEBUG : LOG_INFO,
                                   LOG_FIELDS(.action = "set", .knob = ksm_key_to_string(k), .value = v,
                                              .outcome = manager_dry_run(m) ? "dry-run" : "done"),
                                   "%s%s=%s (was %" PRIu64 ")", manager_dry_run(m) ? "[dry-run] would set " : "set ",
                                   ksm_key_to_string(k), v, m->snapshot.ksm.value[k]);
                        if (!manager_dry_run(m))
                                m->snapshot.ksm.value[k] = plan->value[k];
                }
        }
}

static void notify_status(Manager *m) {
        const Snapshot *s = &m->snapshot;
        char saved[32];

        format_bytes(saved, sizeof saved, snapshot_saved_bytes(s, page_size()));
        DiscoveryStatus ds = { .mode = DISCOVERY_POLLING };
        if (m->discovery)
                discovery_get_status(m->discovery, &ds);
        (void) sd_notifyf(false, "STATUS=%s run=%" PRIu64 " pages_to_scan=%" PRIu64 " sleep_millisecs=%" PRIu64
                                 ", saving %s; %" PRIu64 " processes (%s), %" PRIu64 " to merge",
                          m->paused ? "paused" : manager_dry_run(m) ? "[dry-run]" : "tuning", s->ksm.value[KSM_RUN],
                          s->ksm.value[KSM_PAGES_TO_SCAN], s->ksm.value[KSM_SLEEP_MILLISECS], saved, ds.processes,
                          discovery_mode_to_string(ds.mode), ds.verdicts[VERDICT_MERGE]);
}

/* Loads the policies of PolicyDirectories=; a broken file keeps its last
 * good version (policy_set_load). 1 when some file was rejected. */
static int manager_load_policies(Manager *m) {
        ConfDiag diag = {};
        int r = discovery_load_policies(m->discovery, m->config.policy_dirs, &diag);
        conf_diag_log(&diag);
        conf_diag_free(&diag);
        if (r < 0)
                return log_error_errno(r, "Failed to load policies: %m");
        log_info("%zu policies in use%s.", discovery_policies(m->discovery)->n,
                 r > 0 ? " (some files rejected, see above)" : "");
        return r > 0;
}

/* A knob this instance wrote that reads differently now was written by
 * someone else (an administrator, virsh node-memory-tune, another tuner):
 * say so once, and leave it to them (ForeignKnobWrites=leave) or take it
 * back (override). */
static void notice_foreign_knobs(Manager *m) {
        bool override = m->config.foreign_knob_writes == FOREIGN_KNOB_WRITES_OVERRIDE;

        /* written[] keeps the values: only the mask says they are no longer ours. */
        uint64_t changed = knob_journal_notice_foreign(&m->knobs, &m->snapshot.ksm, override);
        for (KsmKey k = _KSM_FIRST_KNOB; changed && k < _KSM_KEY_MAX; k++) {
                if (!(changed & (UINT64_C(1) << k)))
                        continue;
                char now[32], ours[32];
                (void) ksm_format_value(k, m->snapshot.ksm.value[k], now, sizeof now);
                (void) ksm_format_value(k, m->knobs.written[k], ours, sizeof ours);
                const Decision *d = decision_log_add(
                        &m->decisions, "knob", "%s=%s written by someone else (this daemon wrote %s): %s",
                        ksm_key_to_string(k), now, ours,
                        override ? "writing it back (ForeignKnobWrites=override)"
                                 : "leaving it alone and not restoring it at exit (ForeignKnobWrites=leave; "
                                   "resume, set-mode or reload hands it back)");
                if (d)
                        log_notice("%s", d->text);
        }
}

int manager_tick(Manager *m) {
        _cleanup_(plan_done) Plan plan = {}, actions = {};
        Snapshot s;
        int r;

        r = snapshot_collect(m->root, m->ksmd_pid, m->ksmd_sampler, &s);
        if (r < 0)
                return log_error_errno(r, "Failed to collect snapshot: %m");
        if (m->tick_count > 0) {
                m->previous = m->snapshot;
                m->have_previous = true;
        }
        m->snapshot = s;
        m->tick_count++;
        if (s.ksm_present)
                notice_foreign_knobs(m);
        ksmd_wait_counts_add(&m->ksmd_samples, &s.ksmd_waits);

        /* Sample ksmd's state only while it scans (an idle host costs
         * nothing), and at full rate only while it scans hard. */
        uint64_t sample_usec = tuner_sample_interval_usec(m->tuner, m->config.ksmd_sample_interval_usec);
        ksmd_sampler_set_interval(m->ksmd_sampler, sample_usec);
        ksmd_sampler_set_paused(m->ksmd_sampler, !(s.ksm_present && s.ksm.value[KSM_RUN] == 1 && sample_usec > 0));

        manager_merge_collect(m);
        if (m->discovery) {
                r = discovery_tick(m->discovery, &actions);
                if (r == -ENOMEM)
                        return log_oom();
        }

        if (manager_may_tune(m)) {
                if (m->discovery) {
                        tuner_note_unmet(m->tuner, discovery_unmet_pages(m->discovery));
                        tuner_note_departed(m->tuner, discovery_take_departed(m->discovery));
                }
                knob_plan_from_config(&m->config, &plan.knobs);
                r = tuner_tick(m->tuner, &s, &m->config, &m->decisions, &plan, &m->next_tick_usec);
                if (r < 0)
                        return log_error_errno(r, "Tuning failed: %m");
                /* The controller names pids only: their owners, for the bus. */
                decision_log_resolve_owners(&m->decisions, process_owner, m);
                if (s.ksm_present)
                        apply_knob_plan(m, &plan.knobs);
        }
        /* Policy actions and the controller's exclusions, as one batch. */
        manager_merge_submit(m, &actions, &plan);
        manager_exclusions_sync(m);
        /* Measured in test-daemon-start-late.sh before this came last:
         * switching the window events on took 85-99 ms, and a burst's
         * knobs were written that much later. */
        if (manager_may_tune(m))
                tuner_tick_windows(m->tuner, &s, &m->config);

        manager_record_history(m);
        notify_status(m);
        manager_bus_emit_changes(m);
        manager_write_metrics(m);
        return 0;
}

/* sd-event's default timer accuracy is 250 ms (sd_event_add_time(3)): a
 * 250 ms burst tick came 250-500 ms apart, and a wake-up "now" up to 250 ms
 * late, by when ksmd had started another 100000-page batch at burst rate.
 * Short ticks get 1 ms; the slow ones keep a tenth of their interval, so an
 * idle daemon's wake-ups still coalesce with the rest of the system's. */
static uint64_t tick_accuracy_usec(uint64_t interval_usec) {
        return interval_usec < USEC_PER_SEC ? USEC_PER_MSEC : interval_usec / 10;
}

static int on_tick(sd_event_source *es, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        uint64_t start = now_usec(CLOCK_MONOTONIC), cpu = now_usec(CLOCK_THREAD_CPUTIME_ID);
        int r = manager_tick(m);
        loop_stats_record_tick(&m->loop, now_usec(CLOCK_MONOTONIC) - start, now_usec(CLOCK_THREAD_CPUTIME_ID) - cpu);
        if (r == -ENOMEM)
                return sd_event_exit(m->event, r);
        if (!m->ready_sent) {
                (void) sd_notify(false, "READY=1");
                m->ready_sent = true;
        }
        /* The tuner's interval (a burst's, a hold's end, a readmission due)
         * is set only by a tick that tunes: paused, a last one of 1 ms would
         * tick every millisecond until the resume. */
        uint64_t next = m->next_tick_usec && manager_may_tune(m) ? m->next_tick_usec : m->config.interval_usec;
        r = sd_event_source_set_time(es, now_usec(CLOCK_MONOTONIC) + next);
        if (r < 0)
                return sd_event_exit(m->event, r);
        (void) sd_event_source_set_time_accuracy(es, tick_accuracy_usec(next));
        /* A oneshot timer is disabled while it is dispatched; set_time alone
         * does not re-arm it. */
        r = sd_event_source_set_enabled(es, SD_EVENT_ONESHOT);
        if (r < 0)
                return sd_event_exit(m->event, r);
        return 0;
}

void manager_request_tick(Manager *m) {
        if (!m->tick_source)
                return;
        (void) sd_event_source_set_time(m->tick_source, now_usec(CLOCK_MONOTONIC));
        (void) sd_event_source_set_time_accuracy(m->tick_source, 1);
        (void) sd_event_source_set_enabled(m->tick_source, SD_EVENT_ONESHOT);
}

/* New mergeable memory, or the end of one of ksmd's full scans during a
 * burst: tick now rather than at the next interval. */
static void manager_wake(void *userdata) {
        manager_request_tick(userdata);
}

/* The tuner asks whether a ksm_enter was a fork's (discovery's proc
 * connector events). Only for a process whose mm was in KSM before the
 * event: ksm_stat said so before it, or it has merged pages now (a merge
 * takes ksmd two looks, so they are not of an mm that entered just now;
 * ksm_merging_pages is lock-free). */
static int manager_fork_child(void *userdata, int parent, uint64_t event_ns, uint64_t until_ns, bool *ret_in_ksm) {
        Manager *m = userdata;
        _cleanup_close_ int dfd = -EBADF;
        uint64_t merging = 0;
        if (!m->discovery) {
                *ret_in_ksm = false;
                return 0;
        }
        *ret_in_ksm = discovery_was_in_ksm(m->discovery, parent, event_ns) ||
                      (root_open_pid_dir(m->root, parent, &dfd) >= 0 &&
                       procfs_read_ksm_merging_pages(dfd, &merging) >= 0 && merging > 0);
        return *ret_in_ksm ? discovery_take_fork(m->discovery, parent, event_ns, until_ns) : 0;
}

void manager_note_request(Manager *m, const char *origin, const char *what) {
        const Decision *d = decision_log_add(&m->decisions, "admin", "%s (requested %s)", what, origin);
        log_struct(LOG_NOTICE, LOG_FIELDS(.message_id = KSMTUNED2_MESSAGE_ADMIN_REQUEST, .decision = d->kind), "%s",
                   d->text);
}

int manager_set_paused(Manager *m, bool paused, const char *origin) {
        if (m->paused == paused)
                return 0;
        m->paused = paused;
        if (paused) {
                manager_note_request(m, origin, "paused: no knob or process is changed until resumed");
                tuner_quiesce(m->tuner);
        } else {
                manager_note_request(m, origin, "resumed");
                /* Knobs set by hand meanwhile are the daemon's again. */
                knob_journal_forget_foreign(&m->knobs);
                /* what ksmd met while paused is not known to the controller */
                tuner_forget_unmet(m->tuner);
                manager_request_tick(m);
        }
        return 1;
}

int manager_set_mode(Manager *m, ManagerMode mode, const char *origin) {
        char what[64];

        if (!manager_mode_to_string(mode))
                return -EINVAL;
        if (m->mode == mode)
                return 0;
        snprintf(what, sizeof what, "mode %s (was %s)", manager_mode_to_string(mode), manager_mode_to_string(m->mode));
        m->mode = mode;
        manager_note_request(m, origin, what);
        knob_journal_forget_foreign(&m->knobs);
        /* observe decided without the knobs taking effect */
        tuner_forget_unmet(m->tuner);
        manager_request_tick(m);
        return 1;
}

static int on_watchdog(sd_event_source *es, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        (void) sd_notify(false, "WATCHDOG=1");
        int r = sd_event_source_set_time(es, usec + m->watchdog_usec / 2);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(es, SD_EVENT_ONESHOT);
}

int manager_reload(Manager *m) {
        Config c = {};
        char **files = NULL;
        int r;

        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, now_usec(CLOCK_MONOTONIC));
        r = config_load_logged(&c, m->config_explicit ? m->config_path : NULL, &files, /* diag_stream= */ NULL);
        if (r < 0) {
                log_struct_errno(LOG_ERR, r, LOG_FIELDS(.message_id = KSMTUNED2_MESSAGE_RELOAD_FAILED),
                                 r == -EBADMSG ? "Reloading the configuration failed: it cannot be parsed (see above); "
                                                 "keeping the running one."
                                               : "Reloading the configuration failed (%m), keeping the running one.");
                config_done(&c);
        } else {
                config_done(&m->config);
                m->config = c;
                strv_free(m->config_files);
                m->config_files = files;
                log_set_max_level(m->config.log_level);
                knob_journal_forget_foreign(&m->knobs);
                tuner_forget_unmet(m->tuner);
                manager_request_tick(m);
                log_config_files(m, "Reloaded configuration", KSMTUNED2_MESSAGE_RELOADED);
                /* The file is what the administrator wants from now on: a
                 * SetMode since the last reload gives way to it. */
                (void) manager_set_mode(m, m->config.mode, "by Mode= of the reloaded configuration");
        }
        int k = m->discovery ? manager_load_policies(m) : 0;
        (void) sd_notify(false, "READY=1");
        return r < 0 ? r : k > 0 ? 1 : 0;
}

const char *manager_policy_rejected(const Manager *m) {
        const PolicySet *s = m->discovery ? discovery_policies(m->discovery) : NULL;
        return s ? s->rejected_reason : NULL;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        (void) manager_reload(userdata);
        return 0;
}

static int on_sigusr1(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/state.json", m->config.runtime_dir) < 0)
                return log_oom();
        int r = state_dump_write(m, path);
        if (r < 0)
                log_warning_errno(r, "Cannot write state dump %s: %m", path);
        else
                log_debug("State dumped to %s.", path);
        return 0;
}

static int on_exit_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        log_struct(LOG_INFO, LOG_FIELDS(.message_id = KSMTUNED2_MESSAGE_STOPPING), "Received %s, stopping.",
                   strsignal((int) si->ssi_signo));
        return sd_event_exit(m->event, 0);
}

int manager_start_stages(Manager *m) {
        _cleanup_free_ char *summary = NULL, *state = NULL;
        _cleanup_close_ int events_fd = -EBADF;
        int r;

        if (m->root->ksm_fd < 0)
                return log_error_errno(-ENODEV, "KSM is not available: %s/kernel/mm/ksm does not exist "
                                                "(kernel built without CONFIG_KSM?).", m->root->sys_path);

        r = probe_run(m->root, &m->probe);
        if (r < 0)
                return log_error_errno(r, "Kernel feature probe failed: %m");
        /* The socket the service manager joined to the connector's group
         * for us (discovery takes it below): the probe's own may have been
         * refused (EPERM without CAP_NET_ADMIN on 6.18.44). */
        events_fd = proc_events_listen_fd();
        if (events_fd >= 0) {
                m->probe.proc_connector = true;
                m->probe.proc_connector_errno = 0;
        }
        summary = probe_summary(&m->probe);
        log_struct(LOG_INFO, LOG_FIELDS(.message_id = KSMTUNED2_MESSAGE_STARTED), "ksmtuned2 %s starting; %s",
                   PACKAGE_VERSION, strna(summary));
        /* After the KSM check: without KSM the one line says why it stops. */
        log_config_files(m, "Configuration", NULL);
        if (!m->probe.ksm_writable && !manager_dry_run(m))
                log_warning("KSM knobs under %s/kernel/mm/ksm are not writable: observing only.", m->root->sys_path);

        (void) ensure_runtime_dir(m);
        state = knob_state_path(m);
        if (!state)
                return log_oom();
        r = knob_journal_open(&m->knobs, state);
        if (r < 0)
                log_warning_errno(r, "Cannot read knob journal %s, ignoring: %m", state);
        else if (r > 0)
                log_notice("Found %d knob value(s) saved by an earlier instance in %s; will restore those on exit.",
                           r, state);

        m->ksmd_pid = m->probe.ksmd_pid;
        if (m->ksmd_pid > 0) {
                r = ksmd_sampler_start(m->root, m->ksmd_pid, m->config.ksmd_sample_interval_usec, &m->ksmd_sampler);
                if (r < 0)
                        log_warning_errno(r, "Cannot sample ksmd (pid %d), blocked time unknown: %m", m->ksmd_pid);
        }

        DiscoveryOptions dopts = { .decisions = &m->decisions, .unmet_grew = manager_wake, .userdata = m };
        r = discovery_new(m->event, m->root, &dopts, &m->discovery);
        if (r < 0)
                return log_error_errno(r, "Failed to set up process discovery: %m");
        /* A socket systemd opened and bound for us
         * (ksmtuned2-proc-events.socket): events without CAP_NET_ADMIN on
         * kernels whose connector wants it to join the group (6.6 and
         * later; before, the request for events wants it too). Taken in
         * any case, so that nothing passed stays open or in the
         * environment; discovery closes it where it polls. */
        discovery_set_events_fd(m->discovery, TAKE_FD(events_fd));
        (void) manager_load_policies(m);
        r = discovery_start(m->discovery);
        if (r < 0)
                return log_error_errno(r, "Failed to scan processes: %m");

        r = tuner_new(m->event, m->root, m->ksmd_pid, &m->config, manager_wake, m, &m->tuner);
        if (r < 0)
                return log_error_errno(r, "Failed to set up tuning: %m");
        tuner_set_kernel(m->tuner, &m->probe,
                         (m->knobs.saved_mask & (UINT64_C(1) << KSM_SMART_SCAN)) ? (int) m->knobs.original[KSM_SMART_SCAN] : -1);
        tuner_set_fork_lookup(m->tuner, manager_fork_child, m);
        manager_exclusions_adopt(m);
        return 0;
}

int manager_startup(Manager *m) {
        int r;

        /* Block the signals sd-event handles before any thread exists, so
         * that no thread inherits them unblocked and dies of them. */
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGUSR1);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(negative_errno(), "Failed to block signals: %m");

        /* Before any thread: fork and exec the injector, the one process
         * that keeps CAP_SYS_PTRACE once the sandbox is applied below. Only
         * where the sandbox drops it, and on the real tree (a test tree has
         * no process to inject into). */
        if (m->config.sandbox && !sandbox_running_on_valgrind() && isempty(m->root->prefix)) {
                r = injector_client_spawn(NULL, m->config_explicit ? m->config_path : NULL, &m->injector);
                if (r < 0)
                        log_warning_errno(r, "Cannot start the injector process, keeping CAP_SYS_PTRACE in the "
                                             "daemon: %m");
                else {
                        m->root->ptrace_read = injector_client_read;
                        m->root->ptrace_read_userdata = m->injector;
                        log_debug("Injector supervisor started as pid %d.", injector_client_supervisor_pid(m->injector));
                }
        }

        r = manager_start_stages(m);
        if (r < 0)
                return r;

        r = manager_merge_start(m);
        if (r < 0)
                return r;

        r = sd_event_add_signal(m->event, NULL, SIGTERM, on_exit_signal, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT, on_exit_signal, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGHUP, on_sighup, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGUSR1, on_sigusr1, m);
        if (r < 0)
                return log_error_errno(r, "Failed to install signal handlers: %m");

        r = sd_event_add_time_relative(m->event, &m->tick_source, CLOCK_MONOTONIC, 0, 0, on_tick, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add tick timer: %m");

        r = manager_bus_new(m, &m->bus);
        if (r < 0)
                return r;

        if (sd_watchdog_enabled(false, &m->watchdog_usec) > 0) {
                r = sd_event_add_time_relative(m->event, &m->watchdog_source, CLOCK_MONOTONIC,
                                               m->watchdog_usec / 2, 0, on_watchdog, m);
                if (r < 0)
                        return log_error_errno(r, "Failed to add watchdog timer: %m");
        }

        /* Last: everything that needs a privilege the sandbox drops is open. */
        if (m->config.sandbox) {
                SandboxNeeds needs;
                sandbox_needs_from_probe(&m->probe, &needs);
                /* Injection and the reads that need CAP_SYS_PTRACE go
                 * through the injector; a test tree needs neither. */
                needs.ptrace = !m->injector && isempty(m->root->prefix);
                r = sandbox_apply(&needs);
                if (r < 0)
                        return r;
        } else
                log_notice("Sandbox=no: keeping every capability, no seccomp filter.");
        return 0;
}

int manager_restore(Manager *m) {
        if (!m->config.restore_knobs) {
                log_info("RestoreKnobsOnExit=no: leaving KSM knobs as they are.");
                return 0;
        }
        bool changed = m->knobs.saved_mask != 0;
        int r = knob_journal_restore(m->root, &m->knobs);
        if (r < 0)
                return log_struct_errno(LOG_ERR, r, LOG_FIELDS(.message_id = KSMTUNED2_MESSAGE_KNOBS_RESTORE_FAILED),
                                        "Some KSM knobs could not be restored: %m");
        log_struct(LOG_INFO, LOG_FIELDS(.message_id = KSMTUNED2_MESSAGE_KNOBS_RESTORED), "%s",
                   changed ? "KSM knobs restored to their values from before the daemon changed them."
                           : "No KSM knob to restore: the daemon changed none.");
        return 0;
}

int manager_run(Manager *m) {
        int r = sd_event_loop(m->event);
        (void) sd_notify(false, "STOPPING=1");
        /* Knobs first: they are what the daemon owes the host, and nothing
         * the merge worker waits for (a target stuck in D) may delay them. */
        int k = manager_restore(m);
        manager_merge_stop(m);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return k;
}
