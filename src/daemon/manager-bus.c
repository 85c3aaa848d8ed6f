/* SPDX-License-Identifier: GPL-2.0-or-later */
/* org.ksmtuned2.Manager1: read-only properties for every figure `ksmctl
 * status` shows, and the few methods that change the daemon. Anyone may read;
 * only root may change anything. Privilege is sd-bus's own check: every
 * method without SD_BUS_VTABLE_UNPRIVILEGED is refused with AccessDenied
 * unless the sender has our euid (root), decided from the credentials the bus
 * driver vouches for, never from arguments. That needs an untrusted bus,
 * which sd_bus_open_system() gives. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-id128.h>

#include "bus-api.h"
#include "log.h"
#include "manager-bus.h"
#include "savings.h"
#include "util.h"

#define RETRY_MIN_USEC (1 * USEC_PER_SEC)
#define RETRY_MAX_USEC (15 * USEC_PER_SEC)

struct ManagerBus {
        Manager *manager;
        sd_bus *bus;
        sd_event_source *retry_source;
        uint64_t retry_usec;            /* next backoff */
        bool outage_logged;             /* "not reachable" said once per outage */
        bool name_owned;
        char **last_values;             /* per vtable index: property value as last emitted */
        size_t n_last_values;
};

/* D-Bus refuses a string that is not valid UTF-8 and sd-bus fails the
 * whole message, so one process named "\xff" would break ListProcesses for
 * everyone. Every string that comes from a process, a file name or a
 * decision passes through here: returned as is when valid, else as a copy
 * with U+FFFD in place of each bad byte, kept in *copies, which the caller
 * frees once the message is built; "" when the copy fails (no memory). */
static const char *bus_str(char ***copies, const char *s) {
        s = strempty(s);
        if (utf8_is_valid(s))
                return s;
        char *c = utf8_make_valid(s);
        if (!c || strv_push(copies, c) < 0) /* strv_push frees c on failure */
                return "";
        return c;
}

/* Who asked: the sender's effective uid, as the bus driver vouches for it
 * (dbus-daemon and dbus-broker: the peer credentials of its socket, asked
 * with GetConnectionCredentials), never from arguments; (uid_t) -1 when
 * unknown. Not SD_BUS_CREDS_AUGMENT: that fills what the driver leaves out
 * from /proc/PID of the sender's pid, which by then may name another
 * process. For the decision log, and for what the caller may see: a
 * process's details go to its owner and root only (process_visible_to(),
 * ksmtuned2(8) "What callers see"), as the kernel shows /proc/PID/ksm_stat,
 * exe and, under hidepid=, the rest. */
static uid_t sender_uid(sd_bus_message *msg) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *c = NULL;
        uid_t uid = (uid_t) -1;
        if (sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID, &c) >= 0)
                (void) sd_bus_creds_get_euid(c, &uid);
        return uid;
}

/* Who reads a property: the sender of the Get or GetAll being answered.
 * Anything else (the daemon comparing values for PropertiesChanged) gets
 * the view of a caller who owns no process; the properties that depend on
 * the caller only invalidate, so no value of theirs is ever broadcast. */
static uid_t reader_uid(sd_bus *bus) {
        sd_bus_message *m = bus ? sd_bus_get_current_message(bus) : NULL;
        if (!m || !sd_bus_message_is_method_call(m, "org.freedesktop.DBus.Properties", NULL))
                return (uid_t) -1;
        return sender_uid(m);
}

/* What a caller who may not see the process reads in place of a text about it. */
#define HIDDEN_TEXT "(about another user's process: shown to its owner and root only)"

/* ---- properties ---- */

#define GETTER(name) \
        static int name(sd_bus *bus, const char *path, const char *interface, const char *property, \
                        sd_bus_message *reply, void *userdata, sd_bus_error *error)

GETTER(property_get_version) {
        return sd_bus_message_append(reply, "s", PACKAGE_VERSION);
}

GETTER(property_get_state) {
        const Manager *m = userdata;
        return sd_bus_message_append(reply, "s", m->tick_count == 0 ? "starting" : m->paused ? "paused" : "running");
}

GETTER(property_get_mode) {
        const Manager *m = userdata;
        return sd_bus_message_append(reply, "s", manager_mode_to_string(m->mode));
}

GETTER(property_get_dry_run) {
        const Manager *m = userdata;
        return sd_bus_message_append(reply, "b", manager_dry_run(m));
}

GETTER(property_get_kernel_release) {
        const Manager *m = userdata;
        return sd_bus_message_append(reply, "s", m->probe.kernel_release);
}

GETTER(property_get_features) {
        const Manager *m = userdata;
        const char *name;
        bool present;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "{sb}");
        if (r < 0)
                return r;
        for (unsigned i = 0; probe_feature(&m->probe, i, &name, &present) >= 0; i++) {
                r = sd_bus_message_append(reply, "{sb}", name, present);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

GETTER(property_get_kernel_fixes) {
        KernelFixes buf;
        const KernelFixes *k = manager_kernel_fixes(userdata, &buf);
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(ssss)");
        if (r < 0)
                return r;
        for (KernelFixId i = 0; i < _KERNEL_FIX_MAX; i++) {
                r = sd_bus_message_append(reply, "(ssss)", kernel_fix_id_to_string(i), fix_state_to_string(k->fix[i].state),
                                          k->fix[i].evidence, kernel_fix_adaptation(k, i));
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

GETTER(property_get_cgroup_layout) {
        const Manager *m = userdata;
        return sd_bus_message_append(reply, "s", cgroup_layout_to_string(m->probe.cgroup_layout));
}

GETTER(property_get_ksmd_pid) {
        const Manager *m = userdata;
        return sd_bus_message_append(reply, "i", (int32_t) m->ksmd_pid);
}

GETTER(property_get_config_path) {
        _cleanup_strv_free_ char **copies = NULL;
        const Manager *m = userdata;
        return sd_bus_message_append(reply, "s", bus_str(&copies, m->config_path));
}

GETTER(property_get_interval) {
        const Manager *m = userdata;
        return sd_bus_message_append(reply, "t", m->config.interval_usec);
}

static KsmKey knob_of_property(const char *property) {
        if (streq(property, "Run"))
                return KSM_RUN;
        if (streq(property, "PagesToScan"))
                return KSM_PAGES_TO_SCAN;
        return KSM_SLEEP_MILLISECS;
}

GETTER(property_get_knob) {
        const Manager *m = userdata;
        return sd_bus_message_append(reply, "t", m->snapshot.ksm.value[knob_of_property(property)]);
}

/* Every knob (is_knob) or every counter of this kernel, in sysfs order. Knobs
 * as the kernel spells them (advisor_mode is a word); counters as numbers,
 * signed because general_profit is. */
static int append_ksm_dict(sd_bus_message *reply, const KsmState *s, bool knobs) {
        int r = sd_bus_message_open_container(reply, 'a', knobs ? "{ss}" : "{sx}");
        if (r < 0)
                return r;
        for (int k = 0; k < _KSM_KEY_MAX; k++) {
                char v[32];
                if (!ksm_state_has(s, (KsmKey) k) || ksm_key_is_knob((KsmKey) k) != knobs)
                        continue;
                if (knobs) {
                        (void) ksm_format_value((KsmKey) k, s->value[k], v, sizeof v);
                        r = sd_bus_message_append(reply, "{ss}", ksm_key_to_string((KsmKey) k), v);
                } else
                        r = sd_bus_message_append(reply, "{sx}", ksm_key_to_string((KsmKey) k), (int64_t) s->value[k]);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

GETTER(property_get_knobs) {
        const Manager *m = userdata;
        return append_ksm_dict(reply, &m->snapshot.ksm, true);
}

GETTER(property_get_counters) {
        const Manager *m = userdata;
        return append_ksm_dict(reply, &m->snapshot.ksm, false);
}

GETTER(property_get_saved_bytes) {
        const Manager *m = userdata;
        return sd_bus_message_append(reply, "t", snapshot_saved_bytes(&m->snapshot, page_size()));
}

GETTER(property_get_general_profit) {
        const Manager *m = userdata;
        return sd_bus_message_append(reply, "x", ksm_state_has(&m->snapshot.ksm, KSM_GENERAL_PROFIT)
                                                          ? ksm_state_general_profit(&m->snapshot.ksm)
                                                          : INT64_C(0));
}

GETTER(property_get_ksmd_cpu_fraction) {
        const Manager *m = userdata;
        return sd_bus_message_append(reply, "d", manager_ksmd_cpu_fraction(m));
}

GETTER(property_get_ksmd_cpu_usec) {
        const Manager *m = userdata;
        return sd_bus_message_append(reply, "t", m->snapshot.ksmd.cpu_ns / NSEC_PER_USEC);
}

GETTER(property_get_ksmd_blocked) {
        const Manager *m = userdata;
        KsmdWait w = streq(property, "KsmdBlockedFraction") ? KSMD_BLOCKED_MMAP_LOCK : KSMD_BLOCKED_OTHER;
        return sd_bus_message_append(reply, "d", ksmd_wait_fraction(&m->snapshot.ksmd_waits, w));
}

GETTER(property_get_ksmd_wait_samples) {
        const Manager *m = userdata;
        return sd_bus_message_append(reply, "t", m->snapshot.ksmd_waits.samples);
}

GETTER(property_get_managed_processes) {
        return sd_bus_message_append(reply, "u", (uint32_t) manager_managed_processes(userdata));
}

GETTER(property_get_mem) {
        const Manager *m = userdata;
        const Meminfo *mi = &m->snapshot.mem;
        uint64_t kib = streq(property, "MemTotalBytes") ? mi->mem_total_kib
                       : mi->has_mem_available         ? mi->mem_available_kib
                                                       : mi->mem_free_kib;
        return sd_bus_message_append(reply, "t", kib * 1024);
}

GETTER(property_get_last_decisions) {
        _cleanup_strv_free_ char **copies = NULL;
        const Manager *m = userdata;
        uid_t reader = reader_uid(bus);
        const Decision *d;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(tss)");
        if (r < 0)
                return r;
        /* Every entry stays, with its time and kind: the count and the
         * host's own decisions are everyone's; the text of one about a
         * process names it (pid, comm, what it costs ksmd). */
        for (unsigned i = 0; (d = decision_log_get(&m->decisions, i)); i++) {
                const char *text = decision_visible_to(d, reader) ? d->text : HIDDEN_TEXT;
                r = sd_bus_message_append(reply, "(tss)", d->realtime_usec, bus_str(&copies, d->kind), bus_str(&copies, text));
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

GETTER(property_get_decisions_total) {
        const Manager *m = userdata;
        return sd_bus_message_append(reply, "t", m->decisions.total);
}

GETTER(property_get_controller_phase) {
        const Controller *c = manager_controller(userdata);
        return sd_bus_message_append(reply, "s", c ? tune_mode_to_string(c->mode) : "");
}

/* It may name the process that entered KSM: for its owner and root. */
static bool reason_visible_to(const Manager *m, const Controller *c, uid_t reader) {
        if (c->reason_pid <= 0 || reader == 0)
                return true;
        const ProcessTable *t = manager_processes(m);
        const Process *p = t ? process_table_get(t, c->reason_pid) : NULL;
        return p && process_visible_to(p, reader);
}

GETTER(property_get_controller_reason) {
        _cleanup_strv_free_ char **copies = NULL; /* it may quote a process's name */
        const Controller *c = manager_controller(userdata);
        const char *text = !c ? "" : reason_visible_to(userdata, c, reader_uid(bus)) ? c->reason : HIDDEN_TEXT;
        return sd_bus_message_append(reply, "s", bus_str(&copies, text));
}

GETTER(property_get_burst_allowance) {
        const Controller *c = manager_controller(userdata);
        return sd_bus_message_append(reply, "x", c ? (int64_t) (c->allowance_nsec / NSEC_PER_USEC) : INT64_C(0));
}

GETTER(property_get_ticks) {
        const Manager *m = userdata;
        return sd_bus_message_append(reply, "t", m->tick_count);
}

/* ---- methods ---- */

/* Who asked, for the decision log: "over the bus by uid 0". */
static const char *request_origin(sd_bus_message *msg, char *buf, size_t n) {
        snprintf(buf, n, "over the bus by uid %d", (int) sender_uid(msg));
        return buf;
}

static int method_pause(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        char origin[64];
        if (manager_set_paused(m, true, request_origin(msg, origin, sizeof origin)) > 0)
                manager_bus_emit_changes(m);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_resume(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        char origin[64];
        if (manager_set_paused(m, false, request_origin(msg, origin, sizeof origin)) > 0)
                manager_bus_emit_changes(m);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_set_mode(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *name;
        ManagerMode mode;
        char origin[64];
        int r;

        r = sd_bus_message_read(msg, "s", &name);
        if (r < 0)
                return r;
        mode = manager_mode_from_string(name);
        if (mode < 0)
                return sd_bus_error_setf(error, BUS_ERROR_INVALID_MODE,
                                         "Unknown mode \"%s\": expected auto, tune-only or observe.",
                                         CESCAPE(name, CESCAPE_ASCII));
        if (manager_set_mode(m, mode, request_origin(msg, origin, sizeof origin)) > 0)
                manager_bus_emit_changes(m);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        char origin[64];
        int r;

        r = manager_reload(m);
        if (r < 0)
                return sd_bus_error_setf(error, BUS_ERROR_RELOAD_FAILED,
                                         "Reloading the configuration failed (%s); the running configuration "
                                         "is kept, the files and lines at fault are in the daemon's log.",
                                         r == -EBADMSG ? "it cannot be parsed" : strerror(-r));
        manager_note_request(m, request_origin(msg, origin, sizeof origin), "configuration reloaded");
        manager_bus_emit_changes(m);
        if (r > 0) {
                _cleanup_strv_free_ char **copies = NULL;
                return sd_bus_error_setf(error, BUS_ERROR_RELOAD_FAILED,
                                         "Reloading the policies failed: %s; the configuration and the other "
                                         "policies are in force, a rejected file keeps its previous version if it "
                                         "had one, every problem is in the daemon's log.",
                                         bus_str(&copies, manager_policy_rejected(m) ?: "a policy file was rejected"));
        }
        return sd_bus_reply_method_return(msg, NULL);
}


/* ---- processes ---- */

static void format_policy(char *buf, size_t n, const Process *p) {
        if (p->have_verdict && p->verdict.policy_file[0])
                snprintf(buf, n, "%s:%u", p->verdict.policy_file, p->verdict.policy_line);
        else
                buf[0] = 0;
}

static const char *process_verdict(const Process *p) {
        return p->have_verdict ? verdict_action_to_string(p->verdict.action) : "unclassified";
}

static int method_list_processes(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_strv_free_ char **copies = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ const Process **list = NULL;
        const ProcessTable *t = manager_processes(userdata);
        size_t n = 0, shown = 0;
        int r;

        /* Only what the caller may see, not even the pid of the rest: under
         * hidepid= the caller could not know it. Then bounded: the largest
         * SAVINGS_LIST_MAX - 1, and one sum of the rest (of its own). */
        if (t) {
                r = savings_top_processes(t, sender_uid(msg), SAVINGS_LIST_MAX, &list, &n, &shown);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(isssssssbtxs)");
        if (r < 0)
                return r;
        for (size_t i = 0; i < shown; i++) {
                const Process *p = list[i];
                char policy[VERDICT_POLICY_MAX + 16];

                format_policy(policy, sizeof policy, p);
                r = sd_bus_message_append(reply, "(isssssssbtxs)", (int32_t) p->pid, bus_str(&copies, p->comm),
                                          bus_str(&copies, p->cgroup), bus_str(&copies, p->unit), bus_str(&copies, p->vm_name), bus_str(&copies, policy),
                                          process_verdict(p),
                                          p->have_verdict ? strempty(merge_method_to_string(p->verdict.method)) : "",
                                          process_merging_enabled(p) > 0, p->ksm_merging_pages,
                                          process_profit_bytes(p), bus_str(&copies, p->have_verdict ? p->verdict.reason : ""));
                if (r < 0)
                        return r;
        }
        if (shown < n) {
                SavingsGroup rest;
                char why[64];
                savings_sum_processes(list + shown, n - shown, &rest);
                snprintf(why, sizeof why, "%u more processes, not listed", rest.processes);
                r = sd_bus_message_append(reply, "(isssssssbtxs)", (int32_t) 0, rest.name, "", "", "", "", "", "",
                                          false, rest.merging_pages, rest.profit_bytes, why);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_list_cgroups(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_strv_free_ char **copies = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(savings_table_done) SavingsTable s = {};
        const ProcessTable *t = manager_processes(userdata);
        Manager *m = userdata;
        int r;

        if (t) {
                uid_t caller = sender_uid(msg);
                /* Root sees every process: the sums discovery keeps cost
                 * O(cgroups); anyone else's are summed over what it may see. */
                r = caller == 0 ? discovery_savings_by_cgroup(m->discovery, &s)
                                : savings_by_cgroup_visible(t, caller, &s);
                if (r >= 0)
                        r = savings_table_truncate(&s, SAVINGS_LIST_MAX);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(sssutx)");
        if (r < 0)
                return r;
        for (size_t i = 0; i < s.n; i++) {
                const CgroupSavings *c = &s.items[i];
                r = sd_bus_message_append(reply, "(sssutx)", bus_str(&copies, c->cgroup), bus_str(&copies, c->unit),
                                          bus_str(&copies, c->vm_name), (uint32_t) c->processes, c->merging_pages,
                                          c->profit_bytes);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_explain(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_strv_free_ char **copies = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Manager *m = userdata;
        const ProcessTable *t = manager_processes(m);
        const Process *p;
        char policy[VERDICT_POLICY_MAX + 16];
        uint32_t pid;
        int r;

        r = sd_bus_message_read(msg, "u", &pid);
        if (r < 0)
                return r;
        if (pid == 0 || pid > INT32_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "%" PRIu32 " is not a pid.", pid);
        p = t ? process_table_get(t, (int) pid) : NULL;
        if (!p) {
                _cleanup_close_ int fd = -EBADF;
                if (root_open_pid_dir(m->root, (int) pid, &fd) < 0)
                        return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_PROCESS, "No process with pid %" PRIu32 ".", pid);
                return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_PROCESS,
                                         "Process %" PRIu32 " is not known to ksmtuned2 yet (it appears at the "
                                         "next scan).", pid);
        }
        /* Which pids exist is /proc's to say (hidepid=); what they are is
         * for their owner and root, exe included, as the kernel shows it. */
        if (!process_visible_to(p, sender_uid(msg)))
                return sd_bus_error_setf(error, BUS_ERROR_PROCESS_HIDDEN,
                                         "Process %" PRIu32 " is another user's: ksmtuned2 shows a process's "
                                         "details to its owner and root only.", pid);
        format_policy(policy, sizeof policy, p);
        const char *exe = strempty(p->exe);

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "a{sv}", 19,
                                  "pid", "i", (int32_t) p->pid,
                                  "comm", "s", bus_str(&copies, p->comm),
                                  "exe", "s", bus_str(&copies, exe),
                                  "uid", "u", (uint32_t) p->uid,
                                  "cgroup", "s", bus_str(&copies, p->cgroup),
                                  "unit", "s", bus_str(&copies, p->unit),
                                  "vm", "s", bus_str(&copies, p->vm_name),
                                  "kernel_thread", "b", p->kthread,
                                  "rss_anon_bytes", "t", p->rss_anon_kib * 1024,
                                  "verdict", "s", process_verdict(p),
                                  "method", "s", p->have_verdict ? strempty(merge_method_to_string(p->verdict.method)) : "",
                                  "always", "b", p->have_verdict && p->verdict.always,
                                  "policy", "s", bus_str(&copies, policy),
                                  "reason", "s", bus_str(&copies, p->have_verdict ? p->verdict.reason : ""),
                                  "merging", "i", (int32_t) process_merging_enabled(p),
                                  "merging_pages", "t", p->ksm_merging_pages,
                                  "profit_bytes", "x", process_profit_bytes(p),
                                  "slow", "b", p->slow,
                                  "last_action", "s", p->merge_outcome);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* ---- history ---- */

#define HISTORY_SAMPLE_TYPE "(ttustxddttdu)"

/* The entries at or after since (CLOCK_REALTIME), oldest first. */
static int append_history(sd_bus_message *reply, const History *h, uint64_t since) {
        HistorySample s;
        int r = sd_bus_message_open_container(reply, 'a', HISTORY_SAMPLE_TYPE);

        for (size_t i = 0; r >= 0 && history_get(h, i, &s) >= 0; i++)
                if (s.realtime_usec >= since)
                        r = sd_bus_message_append(reply, HISTORY_SAMPLE_TYPE, s.realtime_usec, s.duration_usec,
                                                  s.ticks, strempty(tune_mode_to_string(s.phase)), s.saved_bytes,
                                                  s.general_profit_bytes, s.ksmd_cpu_fraction,
                                                  s.ksmd_blocked_fraction, s.pages_to_scan, s.sleep_ms,
                                                  s.scan_pages_per_sec, s.managed_processes);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int method_history(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const Manager *m = userdata;
        uint64_t since;
        int r;

        r = sd_bus_message_read(msg, "t", &since);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = append_history(reply, &m->history, since);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("KernelRelease", "s", property_get_kernel_release, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Features", "a{sb}", property_get_features, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("KernelFixes", "a(ssss)", property_get_kernel_fixes, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("CgroupLayout", "s", property_get_cgroup_layout, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("KsmdPID", "i", property_get_ksmd_pid, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("ConfigPath", "s", property_get_config_path, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("State", "s", property_get_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Mode", "s", property_get_mode, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("DryRun", "b", property_get_dry_run, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("IntervalUSec", "t", property_get_interval, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Run", "t", property_get_knob, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("PagesToScan", "t", property_get_knob, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("SleepMillisecs", "t", property_get_knob, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Knobs", "a{ss}", property_get_knobs, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Counters", "a{sx}", property_get_counters, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("SavedBytes", "t", property_get_saved_bytes, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("GeneralProfitBytes", "x", property_get_general_profit, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("KsmdCPUFraction", "d", property_get_ksmd_cpu_fraction, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("KsmdCPUUSec", "t", property_get_ksmd_cpu_usec, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("KsmdBlockedFraction", "d", property_get_ksmd_blocked, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("KsmdBlockedOtherFraction", "d", property_get_ksmd_blocked, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("KsmdWaitSamples", "t", property_get_ksmd_wait_samples, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ManagedProcesses", "u", property_get_managed_processes, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("MemTotalBytes", "t", property_get_mem, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("MemAvailableBytes", "t", property_get_mem, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        /* These two depend on who reads them: invalidated, never broadcast. */
        SD_BUS_PROPERTY("LastDecisions", "a(tss)", property_get_last_decisions, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION),
        SD_BUS_PROPERTY("DecisionsTotal", "t", property_get_decisions_total, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Ticks", "t", property_get_ticks, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ControllerPhase", "s", property_get_controller_phase, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ControllerReason", "s", property_get_controller_reason, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION),
        SD_BUS_PROPERTY("BurstAllowanceUSec", "x", property_get_burst_allowance, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_METHOD("Reload", "", "", method_reload, 0),
        SD_BUS_METHOD("Pause", "", "", method_pause, 0),
        SD_BUS_METHOD("Resume", "", "", method_resume, 0),
        SD_BUS_METHOD_WITH_NAMES("SetMode", "s", SD_BUS_PARAM(mode), "", , method_set_mode, 0),
        SD_BUS_METHOD_WITH_NAMES("ListProcesses", "", , "a(isssssssbtxs)", SD_BUS_PARAM(processes),
                                 method_list_processes, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListCgroups", "", , "a(sssutx)", SD_BUS_PARAM(cgroups), method_list_cgroups,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Explain", "u", SD_BUS_PARAM(pid), "a{sv}", SD_BUS_PARAM(facts), method_explain,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("History", "t", SD_BUS_PARAM(since_usec), "a" HISTORY_SAMPLE_TYPE,
                                 SD_BUS_PARAM(samples), method_history, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

/* ---- PropertiesChanged ---- */

/* A property's current value as text (sd-bus's own dump of it), so one
 * comparison covers every type and no property can be forgotten. */
static char *property_value_text(sd_bus *bus, const sd_bus_vtable *v, Manager *m) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        int r;

        r = sd_bus_message_new_signal(bus, &msg, BUS_PATH, BUS_INTERFACE, "Scratch");
        if (r < 0)
                return NULL;
        r = v->x.property.get(bus, BUS_PATH, BUS_INTERFACE, v->x.property.member, msg, m, NULL);
        if (r < 0 || sd_bus_message_seal(msg, 1, 0) < 0)
                return NULL;
        FILE *f = open_memstream(&text, &size);
        if (!f)
                return NULL;
        r = sd_bus_message_dump(msg, f, SD_BUS_MESSAGE_DUMP_SUBTREE_ONLY);
        if (fclose(f) != 0 || r < 0)
                return NULL;
        return TAKE_PTR(text);
}

void manager_bus_emit_changes(Manager *m) {
        ManagerBus *b = m->bus;
        _cleanup_free_ const char **changed = NULL;
        size_t n_changed = 0;
        int r;

        if (!b || !b->bus || !b->name_owned)
                return;
        if (!b->last_values) {
                b->n_last_values = ELEMENTSOF(manager_vtable);
                b->last_values = calloc(b->n_last_values, sizeof(char *));
                if (!b->last_values)
                        return (void) log_oom();
        }
        changed = calloc(ELEMENTSOF(manager_vtable) + 1, sizeof(char *));
        if (!changed)
                return (void) log_oom();

        for (size_t i = 0; i < ELEMENTSOF(manager_vtable); i++) {
                const sd_bus_vtable *v = &manager_vtable[i];
                if (v->type != _SD_BUS_VTABLE_PROPERTY ||
                    !(v->flags & (SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE | SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION)))
                        continue;
                char *now = property_value_text(b->bus, v, m);
                if (!now)
                        continue;
                if (b->last_values[i] && streq(b->last_values[i], now)) {
                        free(now);
                        continue;
                }
                /* The first pass after connecting only records: clients that
                 * just connected read the current values anyway. */
                if (b->last_values[i])
                        changed[n_changed++] = v->x.property.member;
                free(b->last_values[i]);
                b->last_values[i] = now;
        }
        if (n_changed == 0)
                return;
        r = sd_bus_emit_properties_changed_strv(b->bus, BUS_PATH, BUS_INTERFACE, (char **) changed);
        if (r < 0)
                log_debug_errno(r, "Cannot emit PropertiesChanged: %m");
}

/* ---- connection ---- */

static void forget_values(ManagerBus *b) {
        for (size_t i = 0; i < b->n_last_values; i++) {
                free(b->last_values[i]);
                b->last_values[i] = NULL;
        }
}

static void bus_drop(ManagerBus *b) {
        /* No flush: a bus daemon that hangs must not hang us. */
        b->bus = sd_bus_close_unref(b->bus);
        b->name_owned = false;
        forget_values(b);
}

static int bus_connect(ManagerBus *b);

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        ManagerBus *b = userdata;
        bus_drop(b);
        (void) bus_connect(b);
        return 0;
}

static void schedule_retry(ManagerBus *b) {
        int r;
        if (!b->retry_source)
                r = sd_event_add_time_relative(b->manager->event, &b->retry_source, CLOCK_MONOTONIC, b->retry_usec,
                                               USEC_PER_SEC / 10, on_retry, b);
        else {
                r = sd_event_source_set_time_relative(b->retry_source, b->retry_usec);
                if (r >= 0)
                        r = sd_event_source_set_enabled(b->retry_source, SD_EVENT_ONESHOT);
        }
        if (r < 0)
                log_warning_errno(r, "Cannot schedule a new attempt to reach the system bus, going on without it: %m");
        b->retry_usec = MIN(b->retry_usec * 2, RETRY_MAX_USEC);
}

static void bus_outage(ManagerBus *b, int error, const char *what) {
        if (!b->outage_logged)
                log_warning_errno(error, "%s (%m); tuning goes on, the bus API will appear once it is reachable.",
                                  what);
        else
                log_debug_errno(error, "%s (%m), retrying.", what);
        b->outage_logged = true;
        schedule_retry(b);
}

static int on_name_acquired(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        ManagerBus *b = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        uint32_t result = 0;

        if (e) {
                if (!b->outage_logged)
                        log_warning("Cannot own %s on the system bus: %s (%s); tuning goes on without the bus API.",
                                    BUS_NAME, e->message ?: "no message", e->name);
                b->outage_logged = true;
                schedule_retry(b);
                return 0;
        }
        if (sd_bus_message_read(reply, "u", &result) < 0 || (result != 1 && result != 4)) {
                if (!b->outage_logged)
                        log_warning("%s is owned by another process (another ksmtuned2?); tuning goes on without "
                                    "the bus API.", BUS_NAME);
                b->outage_logged = true;
                schedule_retry(b);
                return 0;
        }
        b->name_owned = true;
        b->retry_usec = RETRY_MIN_USEC;
        if (b->outage_logged)
                log_notice("Connected to the system bus as %s.", BUS_NAME);
        else
                log_info("Connected to the system bus as %s.", BUS_NAME);
        b->outage_logged = false;
        manager_bus_emit_changes(b->manager); /* records the values to compare with */
        return 0;
}

/* sd-bus turns a closed connection (dbus-daemon stopped or restarted) into
 * a synthetic Disconnected signal from org.freedesktop.DBus.Local; filters
 * see it without any match being registered on the bus. */
static int on_bus_message(sd_bus_message *msg, void *userdata, sd_bus_error *ret_error) {
        ManagerBus *b = userdata;
        if (!sd_bus_message_is_signal(msg, "org.freedesktop.DBus.Local", "Disconnected"))
                return 0;
        b->name_owned = false;
        if (!b->outage_logged)
                log_warning("Lost the system bus; tuning goes on, reconnecting when it is back.");
        b->outage_logged = true;
        /* Not dropped here: freeing a bus inside its own dispatch is not allowed. */
        b->retry_usec = RETRY_MIN_USEC;
        schedule_retry(b);
        return 0;
}

static int bus_connect(ManagerBus *b) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        r = sd_bus_open_system_with_description(&bus, "ksmtuned2");
        if (r < 0) {
                bus_outage(b, r, "The system bus is not reachable");
                return 0;
        }
        r = sd_bus_add_object_vtable(bus, NULL, BUS_PATH, BUS_INTERFACE, manager_vtable, b->manager);
        if (r >= 0)
                r = sd_bus_add_filter(bus, NULL, on_bus_message, b);
        if (r >= 0)
                r = sd_bus_request_name_async(bus, NULL, BUS_NAME, 0, on_name_acquired, b);
        if (r >= 0)
                r = sd_bus_attach_event(bus, b->manager->event, SD_EVENT_PRIORITY_NORMAL);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0) {
                /* Only the bus API is lost, never the tuning. */
                bus_outage(b, r, "Cannot set up the bus connection");
                return 0;
        }
        b->bus = TAKE_PTR(bus);
        return 0;
}

int manager_bus_new(Manager *m, ManagerBus **ret) {
        _cleanup_(manager_bus_freep) ManagerBus *b = NULL;
        int r;

        b = calloc(1, sizeof *b);
        if (!b)
                return log_oom();
        b->manager = m;
        b->retry_usec = RETRY_MIN_USEC;
        r = bus_connect(b);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(b);
        return 0;
}

ManagerBus *manager_bus_free(ManagerBus *b) {
        if (!b)
                return NULL;
        sd_event_source_unref(b->retry_source);
        bus_drop(b);
        free(b->last_values);
        free(b);
        return NULL;
}

bool manager_bus_connected(const Manager *m) {
        return m->bus && m->bus->name_owned;
}

/* ---- --bus-introspect ---- */

int manager_bus_introspect(FILE *f) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *server = NULL, *client = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_close_ int fd0 = -EBADF, fd1 = -EBADF;
        Manager dummy = {};
        uint64_t cookie;
        const char *xml;
        sd_id128_t id;
        int fds[2], r;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) < 0)
                return -errno;
        fd0 = fds[0];
        fd1 = fds[1];

        r = sd_id128_randomize(&id);
        if (r < 0)
                return r;
        if ((r = sd_bus_new(&server)) < 0 || (r = sd_bus_set_fd(server, fd0, fd0)) < 0)
                return r;
        TAKE_FD(fd0);
        if ((r = sd_bus_set_server(server, true, id)) < 0 ||
            (r = sd_bus_add_object_vtable(server, NULL, BUS_PATH, BUS_INTERFACE, manager_vtable, &dummy)) < 0 ||
            (r = sd_bus_start(server)) < 0)
                return r;
        if ((r = sd_bus_new(&client)) < 0 || (r = sd_bus_set_fd(client, fd1, fd1)) < 0)
                return r;
        TAKE_FD(fd1);
        if ((r = sd_bus_start(client)) < 0)
                return r;

        r = sd_bus_message_new_method_call(client, &call, NULL, BUS_PATH, "org.freedesktop.DBus.Introspectable",
                                           "Introspect");
        if (r < 0)
                return r;
        r = sd_bus_send(client, call, &cookie);
        if (r < 0)
                return r;

        /* Both ends live in this thread: pump them until the reply is in. */
        for (int i = 0; i < 1000 && !reply; i++) {
                int a = sd_bus_process(server, NULL);
                int c = sd_bus_process(client, &reply);
                if (a < 0)
                        return a;
                if (c < 0)
                        return c;
                if (reply)
                        break;
                if (a == 0 && c == 0) {
                        struct pollfd p[2] = {
                                { .fd = sd_bus_get_fd(server), .events = (short) sd_bus_get_events(server) },
                                { .fd = sd_bus_get_fd(client), .events = (short) sd_bus_get_events(client) },
                        };
                        (void) poll(p, 2, 10);
                }
        }
        if (!reply)
                return -ETIMEDOUT;
        if (sd_bus_message_is_method_error(reply, NULL))
                return -sd_bus_error_get_errno(sd_bus_message_get_error(reply));
        r = sd_bus_message_read(reply, "s", &xml);
        if (r < 0)
                return r;
        fputs(xml, f);
        return 0;
}
