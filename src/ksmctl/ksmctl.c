/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ksmctl: the command-line client of ksmtuned2. Each verb is a function in
 * the table below; verbs that talk to the daemon do so over the system bus
 * (org.ksmtuned2(5)). Output is the interface: the human form is for people,
 * --json is stable and documented in ksmctl(1). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "bus-api.h"
#include "json.h"
#include "ksm-sysfs.h"
#include "ksmctl-pager.h"
#include "ksmctl-table.h"
#include "ksmctl.h"
#include "log.h"
#include "root.h"
#include "string-table.h"
#include "util.h"

#define DECISIONS_SHOWN 8

static void help(const KsmctlOptions *o) {
        (void) pager_open(!o->no_pager);
        printf("%s [OPTIONS...] [COMMAND ...]\n\n"
               "Query and control ksmtuned2.\n\n"
               "Commands:\n"
               "  status               Savings, costs, knobs, mode, decisions (the default)\n"
               "  list [--cgroups|--all] Processes (or cgroups/VMs/units), largest savings first\n"
               "  explain PID          Why the daemon treats PID as it does\n"
               "  monitor              Status, refreshed live until Ctrl-C\n"
               "  top                  Savings per VM, unit and cgroup, with changes, live\n"
               "  history              Savings and ksmd CPU over the last hours, as a chart\n"
               "  reload               Re-read the configuration and policies (root)\n"
               "  pause                Stop changing knobs and processes (root)\n"
               "  resume               Undo pause (root)\n"
               "  set-mode MODE        auto, tune-only or observe (root)\n"
               "  exec [--] CMD ARG... Run CMD with KSM merging on for it and its children\n"
               "  help                 Show this help\n"
               "\nOptions:\n"
               "  -h --help            Show this help\n"
               "     --version         Show the version\n"
               "     --json[=MODE]     JSON output for read commands: pretty, short or off\n"
               "     --no-pager        Do not pipe long output into a pager\n"
               "     --no-legend       Tables without their header and footer lines\n"
               "  -q --quiet           status, list, explain: print nothing, exit status only\n"
               "  -H --host=[USER@]HOST\n"
               "                       Ask the daemon on HOST, over ssh\n"
               "  -M --machine=CONTAINER\n"
               "                       Ask the daemon in a local container\n"
               "     --cgroups         With list: one line per cgroup, VM or unit\n"
               "     --all             With list: every process, not only those KSM concerns\n"
               "     --interval=TIME   With monitor and top: refresh period (default 2s)\n"
               "  -n --iterations=N    With top: N frames, then exit\n"
               "     --since=TIME      With history: this long back (default: all it keeps)\n",
               program_invocation_short_name);
}

static int verb_help(int argc, char **argv, const KsmctlOptions *o) {
        help(o);
        return KSMCTL_EXIT_OK;
}


/* Strings from the daemon (cgroup paths, policy paths, reasons that quote a
 * process name) are untrusted: control characters are escaped as \xNN before
 * they reach a terminal. Backslashes stay, so systemd's own escapes in unit
 * names read as systemd writes them. The copy lives until the end of the
 * block, so one printf can take several. */
#define ESC(s) CESCAPE((s), CESCAPE_CONTROL)

/* ---- talking to the daemon ---- */

static bool error_means_not_running(const sd_bus_error *e) {
        return sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER,
                                      SD_BUS_ERROR_DISCONNECTED, SD_BUS_ERROR_NO_REPLY, SD_BUS_ERROR_UNKNOWN_OBJECT);
}

/* Says what went wrong in the words of the daemon (its error message), and
 * returns the exit status documented for it. */
int exit_for_error(const sd_bus_error *e, int r, const char *what) {
        if (sd_bus_error_is_set(e)) {
                if (error_means_not_running(e)) {
                        log_error("ksmtuned2 is not running: %s", e->message ?: e->name);
                        return KSMCTL_EXIT_NOT_RUNNING;
                }
                if (sd_bus_error_has_name(e, SD_BUS_ERROR_ACCESS_DENIED)) {
                        log_error("Cannot %s: permission denied; only root may change ksmtuned2.", what);
                        return KSMCTL_EXIT_ACCESS_DENIED;
                }
                if (sd_bus_error_has_name(e, BUS_ERROR_PROCESS_HIDDEN)) {
                        log_error("%s", e->message ?: e->name);
                        return KSMCTL_EXIT_ACCESS_DENIED;
                }
                if (sd_bus_error_has_name(e, BUS_ERROR_NO_SUCH_PROCESS)) {
                        log_error("%s", e->message ?: e->name);
                        return KSMCTL_EXIT_NO_SUCH_PROCESS;
                }
                log_error("Cannot %s: %s (%s)", what, e->message ?: "no message", e->name);
                return KSMCTL_EXIT_FAILURE;
        }
        log_error_errno(r, "Cannot %s: %m", what);
        return KSMCTL_EXIT_FAILURE;
}

/* The system bus of this host; with -H, of HOST through ssh and
 * systemd-stdio-bridge there; with -M, of a local container: the three
 * transports of systemctl, through sd-bus's own functions. 0, or -errno
 * with the reason in error. */
int bus_open(const KsmctlOptions *o, sd_bus **ret, sd_bus_error *error) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        const char *unique;
        int r;

        if (o->host)
                r = sd_bus_open_system_remote(&bus, o->host);
        else if (o->machine)
                r = sd_bus_open_system_machine(&bus, o->machine);
        else
                r = sd_bus_open_system(&bus);
        /* A remote bus is only a started ssh until its Hello is answered:
         * wait for that, so an unreachable host fails here, as a missing
         * local socket does, not in the middle of the first call. */
        if (r >= 0 && o->host)
                r = sd_bus_get_unique_name(bus, &unique);
        if (r >= 0) {
                *ret = TAKE_PTR(bus);
                return 0;
        }
        if (o->host)
                sd_bus_error_set_errnof(error, r, "the system bus of host %s is not reachable: %s", o->host,
                                        r == -EINVAL ? "not a valid [USER@]HOST" : strerror(-r));
        else if (o->machine)
                /* EHOSTDOWN: sd-bus's answer for a name /run/systemd/machines/ does not have. */
                sd_bus_error_set_errnof(error, r, "the system bus of container %s is not reachable: %s", o->machine,
                                        r == -EINVAL      ? "not a valid container name"
                                        : r == -EHOSTDOWN ? "no container of that name is running"
                                                          : strerror(-r));
        else
                sd_bus_error_set_errnof(error, r, "the system bus is not reachable: %s", strerror(-r));
        return r;
}

/* The exit status when bus_open() failed. Here, no system bus means no
 * daemon (3); a host or container out of reach says nothing about the
 * daemon there, so that is a failure (1), or a usage error for a name
 * sd-bus refuses. */
int exit_for_no_bus(const KsmctlOptions *o, int r, const sd_bus_error *error) {
        if (!o->host && !o->machine) {
                log_error("ksmtuned2 is not running: %s", error->message);
                return KSMCTL_EXIT_NOT_RUNNING;
        }
        log_error("Cannot reach ksmtuned2: %s.", error->message);
        return r == -EINVAL ? KSMCTL_EXIT_USAGE : KSMCTL_EXIT_FAILURE;
}

/* A method call that never starts the daemon through bus activation:
 * status must tell whether it runs, and a pause must not start one. */
int bus_call(sd_bus *bus, const char *interface, const char *member, sd_bus_error *error,
             sd_bus_message **ret_reply, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, BUS_PATH, interface, member);
        if (r < 0)
                return r;
        (void) sd_bus_message_set_auto_start(m, false);
        if (types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(m, types, ap);
                va_end(ap);
                if (r < 0)
                        return r;
        }
        return sd_bus_call(bus, m, 0, error, ret_reply);
}

static int call_simple(const KsmctlOptions *o, const char *method, const char *what, const char *types,
                       const char *arg) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = bus_open(o, &bus, &error);
        if (r < 0)
                return exit_for_no_bus(o, r, &error);
        if (types)
                r = bus_call(bus, BUS_INTERFACE, method, &error, &reply, types, arg);
        else
                r = bus_call(bus, BUS_INTERFACE, method, &error, &reply, NULL);
        if (r < 0)
                return exit_for_error(&error, r, what);
        return KSMCTL_EXIT_OK;
}

static int verb_reload(int argc, char **argv, const KsmctlOptions *o) {
        return call_simple(o, "Reload", "reload", NULL, NULL);
}

static int verb_pause(int argc, char **argv, const KsmctlOptions *o) {
        return call_simple(o, "Pause", "pause", NULL, NULL);
}

static int verb_resume(int argc, char **argv, const KsmctlOptions *o) {
        return call_simple(o, "Resume", "resume", NULL, NULL);
}

static int verb_set_mode(int argc, char **argv, const KsmctlOptions *o) {
        return call_simple(o, "SetMode", "set the mode", "s", argv[1]);
}

/* ---- status ---- */

typedef struct NamedValue {
        char *name;
        char *text;             /* knobs */
        int64_t number;         /* counters */
        bool flag;              /* features */
} NamedValue;

typedef struct NamedList {
        NamedValue *items;
        size_t n;
} NamedList;

typedef struct StatusDecision {
        uint64_t realtime_usec;
        char *kind, *text;
} StatusDecision;

typedef struct StatusFix {
        char *name, *state, *evidence, *adaptation;
} StatusFix;

typedef struct Status {
        bool running;
        bool remote;            /* -H, -M: no kernel figures of this host when not running */
        char *not_running_reason;
        char *version, *state, *mode, *kernel_release, *cgroup_layout, *config_path;
        char *controller_phase, *controller_reason;
        int64_t burst_allowance_usec;
        bool dry_run;
        uint64_t interval_usec, saved_bytes, ksmd_cpu_usec, ksmd_wait_samples, mem_total_bytes,
                mem_available_bytes, decisions_total, ticks;
        uint32_t managed_processes;
        bool have_managed;
        int64_t general_profit_bytes;
        bool have_general_profit;
        double ksmd_cpu_fraction, ksmd_blocked_fraction, ksmd_blocked_other_fraction;
        int32_t ksmd_pid;
        NamedList features, knobs, counters;
        StatusDecision *decisions;
        size_t n_decisions;
        StatusFix *fixes;
        size_t n_fixes;
} Status;

static void named_list_done(NamedList *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].name);
                free(l->items[i].text);
        }
        free(l->items);
        *l = (NamedList) {};
}

static NamedValue *named_list_add(NamedList *l, const char *name) {
        NamedValue *n = reallocarray(l->items, l->n + 1, sizeof *n);
        if (!n)
                return NULL;
        l->items = n;
        n = &l->items[l->n];
        *n = (NamedValue) { .name = strdup(name) };
        if (!n->name)
                return NULL;
        l->n++;
        return n;
}

static const NamedValue *named_list_find(const NamedList *l, const char *name) {
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->items[i].name, name))
                        return &l->items[i];
        return NULL;
}

static void status_done(Status *s) {
        free(s->not_running_reason);
        free(s->version);
        free(s->state);
        free(s->mode);
        free(s->kernel_release);
        free(s->cgroup_layout);
        free(s->config_path);
        free(s->controller_phase);
        free(s->controller_reason);
        named_list_done(&s->features);
        named_list_done(&s->knobs);
        named_list_done(&s->counters);
        for (size_t i = 0; i < s->n_decisions; i++) {
                free(s->decisions[i].kind);
                free(s->decisions[i].text);
        }
        free(s->decisions);
        for (size_t i = 0; i < s->n_fixes; i++) {
                free(s->fixes[i].name);
                free(s->fixes[i].state);
                free(s->fixes[i].evidence);
                free(s->fixes[i].adaptation);
        }
        free(s->fixes);
        *s = (Status) {};
}

static int read_string(sd_bus_message *m, char **dst) {
        const char *v;
        int r = sd_bus_message_read(m, "v", "s", &v);
        if (r < 0)
                return r;
        free(*dst);
        *dst = strdup(v);
        return *dst ? 0 : -ENOMEM;
}

/* Enters the variant of array type sig ("a..."), then the array in it. */
static int enter_variant_array(sd_bus_message *m, const char *sig) {
        int r = sd_bus_message_enter_container(m, 'v', sig);
        if (r < 0)
                return r;
        return sd_bus_message_enter_container(m, 'a', sig + 1);
}

/* Leaves the array and its variant. */
static int exit_variant_array(sd_bus_message *m) {
        int r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

/* a{sb}, a{ss} or a{sx} inside the variant. */
static int read_dict(sd_bus_message *m, char type, NamedList *l) {
        char sig[8], entry[8];
        int r;

        snprintf(sig, sizeof sig, "a{s%c}", type);
        snprintf(entry, sizeof entry, "s%c", type);
        r = enter_variant_array(m, sig);
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', entry)) > 0) {
                const char *name, *text = NULL;
                int64_t x = 0;
                int b = 0;
                NamedValue *n;

                if (type == 's')
                        r = sd_bus_message_read(m, "ss", &name, &text);
                else if (type == 'x')
                        r = sd_bus_message_read(m, "sx", &name, &x);
                else
                        r = sd_bus_message_read(m, "sb", &name, &b);
                if (r < 0)
                        return r;
                n = named_list_add(l, name);
                if (!n)
                        return -ENOMEM;
                n->number = x;
                n->flag = b;
                if (text && !(n->text = strdup(text)))
                        return -ENOMEM;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return exit_variant_array(m);
}

static int read_fixes(sd_bus_message *m, Status *s) {
        int r = enter_variant_array(m, "a(ssss)");
        if (r < 0)
                return r;
        for (;;) {
                const char *name, *state, *evidence, *adaptation;
                StatusFix *x;

                r = sd_bus_message_read(m, "(ssss)", &name, &state, &evidence, &adaptation);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                x = reallocarray(s->fixes, s->n_fixes + 1, sizeof *x);
                if (!x)
                        return -ENOMEM;
                s->fixes = x;
                x = &s->fixes[s->n_fixes++];
                *x = (StatusFix) { .name = strdup(name), .state = strdup(state), .evidence = strdup(evidence),
                                   .adaptation = strdup(adaptation) };
                if (!x->name || !x->state || !x->evidence || !x->adaptation)
                        return -ENOMEM;
        }
        return exit_variant_array(m);
}

static int read_decisions(sd_bus_message *m, Status *s) {
        int r = enter_variant_array(m, "a(tss)");
        if (r < 0)
                return r;
        for (;;) {
                uint64_t t;
                const char *kind, *text;
                StatusDecision *d;

                r = sd_bus_message_read(m, "(tss)", &t, &kind, &text);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                d = reallocarray(s->decisions, s->n_decisions + 1, sizeof *d);
                if (!d)
                        return -ENOMEM;
                s->decisions = d;
                d = &s->decisions[s->n_decisions++];
                *d = (StatusDecision) { .realtime_usec = t, .kind = strdup(kind), .text = strdup(text) };
                if (!d->kind || !d->text)
                        return -ENOMEM;
        }
        return exit_variant_array(m);
}

/* One property of GetAll's reply, the reader positioned at its variant.
 * Unknown properties (a newer daemon) are skipped. */
static int read_property(sd_bus_message *m, const char *name, void *userdata) {
        Status *s = userdata;
        static const struct {
                const char *name;
                char type;
                size_t offset;
        } simple[] = {
#define F(n, t, field) { n, t, offsetof(Status, field) }
                F("Version", 's', version),
                F("State", 's', state),
                F("Mode", 's', mode),
                F("KernelRelease", 's', kernel_release),
                F("CgroupLayout", 's', cgroup_layout),
                F("ConfigPath", 's', config_path),
                F("ControllerPhase", 's', controller_phase),
                F("ControllerReason", 's', controller_reason),
                F("BurstAllowanceUSec", 'x', burst_allowance_usec),
                F("DryRun", 'b', dry_run),
                F("IntervalUSec", 't', interval_usec),
                F("SavedBytes", 't', saved_bytes),
                F("KsmdCPUUSec", 't', ksmd_cpu_usec),
                F("KsmdWaitSamples", 't', ksmd_wait_samples),
                F("MemTotalBytes", 't', mem_total_bytes),
                F("MemAvailableBytes", 't', mem_available_bytes),
                F("DecisionsTotal", 't', decisions_total),
                F("Ticks", 't', ticks),
                F("ManagedProcesses", 'u', managed_processes),
                F("GeneralProfitBytes", 'x', general_profit_bytes),
                F("KsmdCPUFraction", 'd', ksmd_cpu_fraction),
                F("KsmdBlockedFraction", 'd', ksmd_blocked_fraction),
                F("KsmdBlockedOtherFraction", 'd', ksmd_blocked_other_fraction),
                F("KsmdPID", 'i', ksmd_pid),
#undef F
        };
        for (size_t i = 0; i < ELEMENTSOF(simple); i++) {
                void *dst = (char *) s + simple[i].offset;
                char sig[2] = { simple[i].type, 0 };
                int b, r;

                if (!streq(simple[i].name, name))
                        continue;
                if (streq(name, "ManagedProcesses"))
                        s->have_managed = true;
                if (streq(name, "GeneralProfitBytes"))
                        s->have_general_profit = true;
                switch (simple[i].type) {
                case 's':
                        return read_string(m, dst);
                case 'b':
                        r = sd_bus_message_read(m, "v", "b", &b);
                        *(bool *) dst = b;
                        return r;
                default:
                        return sd_bus_message_read(m, "v", sig, dst);
                }
        }
        if (streq(name, "Features"))
                return read_dict(m, 'b', &s->features);
        if (streq(name, "Knobs"))
                return read_dict(m, 's', &s->knobs);
        if (streq(name, "Counters"))
                return read_dict(m, 'x', &s->counters);
        if (streq(name, "LastDecisions"))
                return read_decisions(m, s);
        if (streq(name, "KernelFixes"))
                return read_fixes(m, s);
        return sd_bus_message_skip(m, "v");
}

int properties_parse(sd_bus_message *reply, int (*read_one)(sd_bus_message *m, const char *name, void *userdata),
                     void *userdata) {
        int r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                const char *name;
                r = sd_bus_message_read(reply, "s", &name);
                if (r < 0)
                        return r;
                r = read_one(reply, name, userdata);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(reply);
}

static int status_parse(sd_bus_message *reply, Status *s) {
        int r = properties_parse(reply, read_property, s);
        if (r < 0)
                return r;
        s->running = true;
        return 0;
}

/* The kernel's own view, for when the daemon does not answer. */
static int status_from_kernel(Status *s) {
        _cleanup_(root_freep) Root *root = NULL;
        KsmState k;
        int r;

        r = root_open(getenv("KSMCTL_ROOT"), &root);
        if (r < 0)
                return r;
        r = ksm_sysfs_read(root, &k);
        if (r < 0)
                return r;
        for (int i = 0; i < _KSM_KEY_MAX; i++) {
                NamedValue *n;
                char v[32];

                if (!ksm_state_has(&k, (KsmKey) i))
                        continue;
                n = named_list_add(ksm_key_is_knob((KsmKey) i) ? &s->knobs : &s->counters, ksm_key_to_string((KsmKey) i));
                if (!n)
                        return -ENOMEM;
                n->number = (int64_t) k.value[i];
                if (ksm_key_is_knob((KsmKey) i)) {
                        (void) ksm_format_value((KsmKey) i, k.value[i], v, sizeof v);
                        if (!(n->text = strdup(v)))
                                return -ENOMEM;
                }
        }
        if (ksm_state_has(&k, KSM_PAGES_SHARING))
                s->saved_bytes = k.value[KSM_PAGES_SHARING] * page_size();
        if (ksm_state_has(&k, KSM_GENERAL_PROFIT)) {
                s->general_profit_bytes = ksm_state_general_profit(&k);
                s->have_general_profit = true;
        }
        return 0;
}

/* Fills s from the daemon, or (not running) from the kernel. Returns an
 * exit status: OK, NOT_RUNNING (s still filled from the kernel, but for
 * -H or -M: this host's kernel is not theirs), or a failure already
 * reported. bus may be NULL: then one is opened. */
static int status_get(const KsmctlOptions *o, sd_bus *bus, Status *s) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *own = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r = 0;

        s->remote = o->host || o->machine;
        if (!bus) {
                r = bus_open(o, &own, &error);
                if (r < 0 && s->remote)
                        return exit_for_no_bus(o, r, &error);
                bus = own;
        }
        if (bus)
                r = bus_call(bus, "org.freedesktop.DBus.Properties", "GetAll", &error, &reply, "s", BUS_INTERFACE);
        else
                r = r < 0 ? r : -ENOTCONN;
        if (r >= 0) {
                r = status_parse(reply, s);
                if (r < 0) {
                        log_error_errno(r, "Cannot parse the daemon's answer: %m");
                        return KSMCTL_EXIT_FAILURE;
                }
                return KSMCTL_EXIT_OK;
        }
        if (bus && sd_bus_error_is_set(&error) && !error_means_not_running(&error))
                return exit_for_error(&error, r, "read the daemon's status");
        s->not_running_reason = strdup(error.message ?: strerror(-r));
        if (s->remote)
                return KSMCTL_EXIT_NOT_RUNNING;
        r = status_from_kernel(s);
        if (r < 0)
                log_warning_errno(r, "Cannot read the kernel's KSM counters either: %m");
        return KSMCTL_EXIT_NOT_RUNNING;
}

static const char *format_percent(char *buf, size_t n, double f) {
        snprintf(buf, n, "%.1f%%", f * 100.0);
        return buf;
}

const char *format_realtime(char *buf, size_t n, uint64_t usec) {
        time_t t = (time_t) (usec / USEC_PER_SEC);
        struct tm tm;
        if (!localtime_r(&t, &tm) || strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm) == 0)
                snprintf(buf, n, "@%" PRIu64, usec / USEC_PER_SEC);
        return buf;
}

/* Every size ksmctl prints goes through format_bytes(): IEC units, one
 * decimal. */
const char *format_signed_bytes(char *buf, size_t n, int64_t v) {
        if (v >= 0)
                return format_bytes(buf, n, (uint64_t) v);
        buf[0] = '-';
        format_bytes(buf + 1, n - 1, UINT64_C(0) - (uint64_t) v); /* INT64_MIN too */
        return buf;
}

/* "1.0 GiB (262144 pages)": the size people read, the count the kernel's
 * files and tools show. */
static const char *format_pages(char *buf, size_t n, uint64_t pages) {
        char bytes[32];
        snprintf(buf, n, "%s (%" PRIu64 " page%s)", format_bytes(bytes, sizeof bytes, pages * page_size()), pages,
                 pages == 1 ? "" : "s");
        return buf;
}

/* A counter of /sys/kernel/mm/ksm as its unit wants it: pages as a size,
 * general_profit (bytes already) as a signed size, the rest (full_scans,
 * stable node counts, a counter this ksmctl does not know) as numbers. */
static const char *format_counter(char *buf, size_t n, const NamedValue *v) {
        switch (ksm_key_from_string(v->name)) {
        case KSM_PAGES_SHARED:
        case KSM_PAGES_SHARING:
        case KSM_PAGES_UNSHARED:
        case KSM_PAGES_VOLATILE:
        case KSM_PAGES_SCANNED:
        case KSM_PAGES_SKIPPED:
        case KSM_ZERO_PAGES:
                if (v->number >= 0)
                        return format_pages(buf, n, (uint64_t) v->number);
                break;
        case KSM_GENERAL_PROFIT:
                return format_signed_bytes(buf, n, v->number);
        default:
                break;
        }
        snprintf(buf, n, "%" PRIi64, v->number);
        return buf;
}

/* "Label:      item item item", wrapped under the label one column short
 * of the terminal's width (79 when it has none: a pipe, a file). */
static void print_wrapped(FILE *f, const char *label, char **items, size_t n) {
        const size_t indent = 12, limit = (terminal_columns() ?: 80) - 1;
        size_t col = (size_t) fprintf(f, "%-*s", (int) indent, label);
        for (size_t i = 0; i < n; i++) {
                size_t len = text_width(items[i]);
                if (i > 0 && col + 1 + len > limit) {
                        fprintf(f, "\n%*s", (int) indent, "");
                        col = indent;
                } else if (i > 0)
                        col += (size_t) fprintf(f, " ");
                col += len;
                fputs(items[i], f);
        }
        fputc('\n', f);
}

/* Knobs as "name=value"; counters as "name=size (pages)," since a size
 * has blanks in it, the comma says where one ends. */
static void print_pairs(FILE *f, const char *label, const NamedList *l, bool counters) {
        _cleanup_strv_free_ char **items = calloc(l->n + 1, sizeof(char *));
        if (!items)
                return;
        for (size_t i = 0; i < l->n; i++) {
                char v[64];
                if (counters ? asprintf(&items[i], "%s=%s%s", l->items[i].name, format_counter(v, sizeof v, &l->items[i]),
                                        i + 1 < l->n ? "," : "") < 0
                             : asprintf(&items[i], "%s=%s", l->items[i].name, strna(l->items[i].text)) < 0) {
                        items[i] = NULL;
                        return;
                }
        }
        print_wrapped(f, label, items, l->n);
}

static void print_features(FILE *f, const Status *s, bool present, const char *label) {
        _cleanup_free_ char **items = calloc(s->features.n + 1, sizeof(char *));
        size_t n = 0;
        if (!items)
                return;
        for (size_t i = 0; i < s->features.n; i++)
                if (s->features.items[i].flag == present)
                        items[n++] = s->features.items[i].name;
        if (n > 0)
                print_wrapped(f, label, items, n);
}

static void print_savings(FILE *f, const Status *s) {
        char saved[32], profit[40];
        const NamedValue *sharing = named_list_find(&s->counters, "pages_sharing");

        fprintf(f, "%-12s%s (%" PRIi64 " pages sharing)", "Saved:", format_bytes(saved, sizeof saved, s->saved_bytes),
                sharing ? sharing->number : 0);
        if (s->have_general_profit)
                fprintf(f, "; general profit %s", format_signed_bytes(profit, sizeof profit, s->general_profit_bytes));
        fputc('\n', f);
}

static void print_status(FILE *f, const Status *s) {
        char a[32], b[32], c[32];

        if (!s->running) {
                fprintf(f, "ksmtuned2 is not running (%s).\n", strna(s->not_running_reason));
                if (s->remote)
                        return;
                if (s->knobs.n == 0 && s->counters.n == 0) {
                        fprintf(f, "The kernel's KSM counters cannot be read either.\n");
                        return;
                }
                fprintf(f, "The kernel's own KSM figures:\n");
                print_savings(f, s);
                print_pairs(f, "Knobs:", &s->knobs, false);
                print_pairs(f, "Counters:", &s->counters, true);
                return;
        }

        fprintf(f, "ksmtuned2 %s: %s, mode %s%s, every %s\n", strna(s->version), strna(s->state), strna(s->mode),
                s->dry_run ? " (dry run: nothing is written)" : "", format_timespan(a, sizeof a, s->interval_usec));
        print_savings(f, s);
        fprintf(f, "%-12sCPU %s, blocked on mmap_lock %s, elsewhere %s (%" PRIu64 " samples), pid %d\n", "ksmd:",
                format_percent(a, sizeof a, s->ksmd_cpu_fraction), format_percent(b, sizeof b, s->ksmd_blocked_fraction),
                format_percent(c, sizeof c, s->ksmd_blocked_other_fraction), s->ksmd_wait_samples, (int) s->ksmd_pid);
        print_controller(f, s->controller_phase, s->burst_allowance_usec, s->controller_reason);
        print_pairs(f, "Knobs:", &s->knobs, false);
        print_pairs(f, "Counters:", &s->counters, true);
        if (s->have_managed)
                fprintf(f, "%-12s%" PRIu32 " managed\n", "Processes:", s->managed_processes);
        fprintf(f, "%-12s%s available of %s\n", "Memory:", format_bytes(a, sizeof a, s->mem_available_bytes),
                format_bytes(b, sizeof b, s->mem_total_bytes));
        fprintf(f, "%-12s%s, cgroup layout %s\n", "Kernel:", strna(s->kernel_release), strna(s->cgroup_layout));
        print_features(f, s, true, "Features:");
        print_features(f, s, false, "Missing:");
        if (s->n_fixes > 0) {
                fprintf(f, "Kernel fixes:\n");
                for (size_t i = 0; i < s->n_fixes; i++)
                        fprintf(f, "  %-11s %-8s %s\n", ESC(s->fixes[i].name), ESC(s->fixes[i].state),
                                ESC(s->fixes[i].evidence));
        }
        if (s->n_decisions == 0) {
                fprintf(f, "No decisions yet.\n");
                return;
        }
        fprintf(f, "Last decisions (%" PRIu64 " in all):\n", s->decisions_total);
        for (size_t i = 0; i < s->n_decisions && i < DECISIONS_SHOWN; i++)
                fprintf(f, "  %s  %-8s %s\n", format_realtime(a, sizeof a, s->decisions[i].realtime_usec),
                        ESC(s->decisions[i].kind), ESC(s->decisions[i].text));
}

static void json_status(JsonWriter *w, const Status *s) {
        char t[32];

        json_begin_object(w);
        json_key(w, "daemon");
        json_begin_object(w);
        json_kv_bool(w, "running", s->running);
        if (!s->running)
                json_kv_string(w, "reason", s->not_running_reason);
        else {
                json_kv_string(w, "version", s->version);
                json_kv_string(w, "state", s->state);
                json_kv_string(w, "mode", s->mode);
                json_kv_bool(w, "dry_run", s->dry_run);
                json_kv_u64(w, "interval_usec", s->interval_usec);
                json_kv_string(w, "config_path", s->config_path);
                json_kv_u64(w, "ticks", s->ticks);
        }
        json_end_object(w);
        if (!s->running && s->remote) {
                /* This host's kernel figures would pass for the other's. */
                json_end_object(w);
                return;
        }

        json_key(w, "savings");
        json_begin_object(w);
        json_kv_u64(w, "saved_bytes", s->saved_bytes);
        if (s->have_general_profit)
                json_kv_i64(w, "general_profit_bytes", s->general_profit_bytes);
        else {
                json_key(w, "general_profit_bytes");
                json_null(w);
        }
        json_end_object(w);

        if (s->running) {
                json_key(w, "ksmd");
                json_begin_object(w);
                json_kv_i64(w, "pid", s->ksmd_pid);
                json_kv_double(w, "cpu_fraction", s->ksmd_cpu_fraction);
                json_kv_u64(w, "cpu_usec", s->ksmd_cpu_usec);
                json_kv_double(w, "blocked_mmap_lock_fraction", s->ksmd_blocked_fraction);
                json_kv_double(w, "blocked_other_fraction", s->ksmd_blocked_other_fraction);
                json_kv_u64(w, "wait_samples", s->ksmd_wait_samples);
                json_end_object(w);
                json_controller(w, s->controller_phase, s->burst_allowance_usec, s->controller_reason);
        }

        json_key(w, "knobs");
        json_begin_object(w);
        /* Numbers where the kernel prints a number, its word otherwise (advisor_mode). */
        for (size_t i = 0; i < s->knobs.n; i++) {
                uint64_t v;
                if (s->knobs.items[i].text && safe_atou64(s->knobs.items[i].text, &v) >= 0)
                        json_kv_u64(w, s->knobs.items[i].name, v);
                else
                        json_kv_string(w, s->knobs.items[i].name, s->knobs.items[i].text);
        }
        json_end_object(w);
        json_key(w, "counters");
        json_begin_object(w);
        for (size_t i = 0; i < s->counters.n; i++)
                json_kv_i64(w, s->counters.items[i].name, s->counters.items[i].number);
        json_end_object(w);

        if (s->running) {
                json_key(w, "memory");
                json_begin_object(w);
                json_kv_u64(w, "total_bytes", s->mem_total_bytes);
                json_kv_u64(w, "available_bytes", s->mem_available_bytes);
                json_end_object(w);
                if (s->have_managed)
                        json_kv_u64(w, "managed_processes", s->managed_processes);
                json_key(w, "kernel");
                json_begin_object(w);
                json_kv_string(w, "release", s->kernel_release);
                json_kv_string(w, "cgroup_layout", s->cgroup_layout);
                json_key(w, "features");
                json_begin_object(w);
                for (size_t i = 0; i < s->features.n; i++)
                        json_kv_bool(w, s->features.items[i].name, s->features.items[i].flag);
                json_end_object(w);
                json_key(w, "fixes");
                json_begin_array(w);
                for (size_t i = 0; i < s->n_fixes; i++) {
                        json_begin_object(w);
                        json_kv_string(w, "name", s->fixes[i].name);
                        json_kv_string(w, "state", s->fixes[i].state);
                        json_kv_string(w, "evidence", s->fixes[i].evidence);
                        json_kv_string(w, "adaptation", s->fixes[i].adaptation);
                        json_end_object(w);
                }
                json_end_array(w);
                json_end_object(w);
                json_key(w, "decisions");
                json_begin_array(w);
                for (size_t i = 0; i < s->n_decisions; i++) {
                        json_begin_object(w);
                        json_kv_u64(w, "realtime_usec", s->decisions[i].realtime_usec);
                        json_kv_string(w, "time", format_realtime(t, sizeof t, s->decisions[i].realtime_usec));
                        json_kv_string(w, "kind", s->decisions[i].kind);
                        json_kv_string(w, "text", s->decisions[i].text);
                        json_end_object(w);
                }
                json_end_array(w);
                json_kv_u64(w, "decisions_total", s->decisions_total);
        }
        json_end_object(w);
}

static int verb_status(int argc, char **argv, const KsmctlOptions *o) {
        _cleanup_(status_done) Status s = {};
        int ret = status_get(o, NULL, &s);

        if (ret != KSMCTL_EXIT_OK && ret != KSMCTL_EXIT_NOT_RUNNING)
                return ret;
        if (o->quiet)
                return ret;
        (void) pager_open(!o->no_pager);
        if (o->json) {
                JsonWriter w;
                json_init(&w, stdout, ksmctl_json_pretty(o, false));
                json_status(&w, &s);
                fputc('\n', stdout);
        } else
                print_status(stdout, &s);
        return ret;
}


/* ---- list, explain ---- */

/* The most telling name of where a process lives: its VM, else its unit,
 * else its cgroup path. */
static const char *where(const char *cgroup, const char *unit, const char *vm, char *buf, size_t n) {
        if (!isempty(vm))
                snprintf(buf, n, "vm:%s", vm);
        else if (!isempty(unit))
                snprintf(buf, n, "%s", unit);
        else
                snprintf(buf, n, "/%s", strempty(cgroup));
        return buf;
}

static int call_list(const KsmctlOptions *o, const char *method, sd_bus_message **ret_reply) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = bus_open(o, &bus, &error);
        if (r < 0)
                return exit_for_no_bus(o, r, &error);
        r = bus_call(bus, BUS_INTERFACE, method, &error, ret_reply, NULL);
        if (r < 0)
                return exit_for_error(&error, r, "list");
        return KSMCTL_EXIT_OK;
}

/* A list's start: the daemon's answer to method, entered at its array of
 * sig elements, the pager, and the JSON array or the table begun. Nothing
 * but the call with --quiet. */
static int list_begin(const KsmctlOptions *o, const char *method, const char *sig, const TableColumn *columns,
                      size_t n_columns, sd_bus_message **reply, Table *t, JsonWriter *w) {
        int r = call_list(o, method, reply);
        if (r != KSMCTL_EXIT_OK || o->quiet)
                return r;
        r = sd_bus_message_enter_container(*reply, 'a', sig);
        if (r < 0)
                return log_error_errno(r, "Cannot parse the daemon's answer: %m"), KSMCTL_EXIT_FAILURE;
        (void) pager_open(!o->no_pager);
        if (o->json) {
                json_init(w, stdout, ksmctl_json_pretty(o, false));
                json_begin_array(w);
        } else
                table_init(t, columns, n_columns);
        return KSMCTL_EXIT_OK;
}

/* A list's end, r the last read's result: the JSON array closed or the
 * table printed. *ret_legend says whether the caller's legend follows. */
static int list_end(const KsmctlOptions *o, int r, Table *t, JsonWriter *w, bool *ret_legend) {
        *ret_legend = false;
        if (r < 0)
                return log_error_errno(r, "Cannot parse the daemon's answer: %m"), KSMCTL_EXIT_FAILURE;
        if (o->json) {
                json_end_array(w);
                fputc('\n', stdout);
                return KSMCTL_EXIT_OK;
        }
        table_print(t, stdout, terminal_columns(), !o->no_legend);
        *ret_legend = !o->no_legend;
        return KSMCTL_EXIT_OK;
}

/* The widths ksmctl list had before it followed the terminal: as least as
 * wide, so the columns stay where people are used to them. */
static const TableColumn process_columns[] = {
        { "PID", false, 8 },
        { "COMM", false, 16 },
        { "MERGED", true, 10 },
        { "PROFIT", true, 10 },
        { "VERDICT", false, 12 },
        { "METHOD", false, 8 },
        { "ON", false, 3 },
        { "WHERE", false, 0 },
        { "POLICY", false, 0 },
};

/* The daemon lists a caller's own processes only, root's all: say so under
 * the table, so an empty one does not read as "nothing merges", with the
 * host's totals, which are everyone's. Only where this uid is the one the
 * daemon sees (not over -H or -M). */
static void note_own_processes_only(const KsmctlOptions *o, const char *what) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *saved_reply = NULL, *managed_reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t saved;
        uint32_t managed;
        char b[32];

        if (geteuid() == 0 || o->host || o->machine)
                return;
        printf("%s; ksmtuned2 shows other users' processes to root only.\n", what);
        if (bus_open(o, &bus, &error) < 0 ||
            bus_call(bus, "org.freedesktop.DBus.Properties", "Get", &error, &saved_reply, "ss", BUS_INTERFACE,
                     "SavedBytes") < 0 ||
            bus_call(bus, "org.freedesktop.DBus.Properties", "Get", &error, &managed_reply, "ss", BUS_INTERFACE,
                     "ManagedProcesses") < 0 ||
            sd_bus_message_read(saved_reply, "v", "t", &saved) < 0 ||
            sd_bus_message_read(managed_reply, "v", "u", &managed) < 0)
                return; /* the table was read: the totals are a bonus */
        printf("The host in all: %s saved, %" PRIu32 " process%s managed.\n", format_bytes(b, sizeof b, saved),
               managed, managed == 1 ? "" : "es");
}

static int list_processes(const KsmctlOptions *o) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_done) Table t = {};
        const char *comm, *cgroup, *unit, *vm, *policy, *verdict, *method, *reason;
        uint64_t pages, total_pages = 0, shown = 0, all = 0;
        int32_t pid;
        int64_t profit;
        int merging, r;
        JsonWriter w;

        r = list_begin(o, "ListProcesses", "(isssssssbtxs)", process_columns, ELEMENTSOF(process_columns), &reply,
                       &t, &w);
        if (r != KSMCTL_EXIT_OK || o->quiet)
                return r;
        while ((r = sd_bus_message_read(reply, "(isssssssbtxs)", &pid, &comm, &cgroup, &unit, &vm, &policy, &verdict,
                                        &method, &merging, &pages, &profit, &reason)) > 0) {
                char a[32], b[40], place[512], pid_text[16];

                all++;
                total_pages += pages;
                /* By default only what the daemon or KSM is involved in. */
                if (!o->all && pages == 0 && !merging && (streq(verdict, "leave-alone") || streq(verdict, "unclassified")))
                        continue;
                shown++;
                if (o->json) {
                        json_begin_object(&w);
                        json_kv_i64(&w, "pid", pid);
                        json_kv_string(&w, "comm", comm);
                        json_kv_string(&w, "cgroup", cgroup);
                        json_kv_string(&w, "unit", isempty(unit) ? NULL : unit);
                        json_kv_string(&w, "vm", isempty(vm) ? NULL : vm);
                        json_kv_string(&w, "policy", isempty(policy) ? NULL : policy);
                        json_kv_string(&w, "verdict", verdict);
                        json_kv_string(&w, "method", isempty(method) ? NULL : method);
                        json_kv_string(&w, "reason", reason);
                        json_kv_bool(&w, "merging", merging);
                        json_kv_u64(&w, "merging_pages", pages);
                        json_kv_u64(&w, "merging_bytes", pages * page_size());
                        json_kv_i64(&w, "profit_bytes", profit);
                        json_end_object(&w);
                        continue;
                }
                snprintf(pid_text, sizeof pid_text, "%" PRIi32, pid);
                r = table_add_row(&t, pid_text, CESCAPE(comm, CESCAPE_ASCII),
                                  format_bytes(a, sizeof a, pages * page_size()), format_signed_bytes(b, sizeof b, profit),
                                  ESC(verdict), isempty(method) ? "-" : ESC(method), merging ? "yes" : "no",
                                  ESC(where(cgroup, unit, vm, place, sizeof place)), isempty(policy) ? "-" : ESC(policy),
                                  NULL);
                if (r < 0)
                        return log_oom(), KSMCTL_EXIT_FAILURE;
        }
        bool legend;
        r = list_end(o, r, &t, &w, &legend);
        if (legend) {
                char total[32];
                printf("\n%" PRIu64 " of %" PRIu64 " processes shown%s; %s merging in all.\n", shown, all,
                       o->all ? "" : " (--all for every one)", format_bytes(total, sizeof total, total_pages * page_size()));
                note_own_processes_only(o, "Only your own processes are listed");
        }
        return r;
}

static const TableColumn cgroup_columns[] = {
        { "MERGED", true, 10 },
        { "PROFIT", true, 10 },
        { "PROCS", true, 6 },
        { "VM/UNIT", false, 24 },
        { "CGROUP", false, 0 },
};

static int list_cgroups(const KsmctlOptions *o) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_done) Table t = {};
        const char *cgroup, *unit, *vm;
        uint32_t processes;
        uint64_t pages;
        int64_t profit;
        size_t n = 0;
        JsonWriter w;
        int r;

        r = list_begin(o, "ListCgroups", "(sssutx)", cgroup_columns, ELEMENTSOF(cgroup_columns), &reply, &t, &w);
        if (r != KSMCTL_EXIT_OK || o->quiet)
                return r;
        while ((r = sd_bus_message_read(reply, "(sssutx)", &cgroup, &unit, &vm, &processes, &pages, &profit)) > 0) {
                char a[32], b[40], name[256], procs[16], path[CESCAPE_BUF_SIZE + 1];
                n++;
                if (o->json) {
                        json_begin_object(&w);
                        json_kv_string(&w, "cgroup", cgroup);
                        json_kv_string(&w, "unit", isempty(unit) ? NULL : unit);
                        json_kv_string(&w, "vm", isempty(vm) ? NULL : vm);
                        json_kv_u64(&w, "processes", processes);
                        json_kv_u64(&w, "merging_pages", pages);
                        json_kv_u64(&w, "merging_bytes", pages * page_size());
                        json_kv_i64(&w, "profit_bytes", profit);
                        json_end_object(&w);
                        continue;
                }
                if (!isempty(vm))
                        snprintf(name, sizeof name, "vm:%s", vm);
                else
                        snprintf(name, sizeof name, "%s", isempty(unit) ? "-" : unit);
                snprintf(procs, sizeof procs, "%" PRIu32, processes);
                snprintf(path, sizeof path, "/%s", ESC(cgroup));
                r = table_add_row(&t, format_bytes(a, sizeof a, pages * page_size()),
                                  format_signed_bytes(b, sizeof b, profit), procs, ESC(name), path, NULL);
                if (r < 0)
                        return log_oom(), KSMCTL_EXIT_FAILURE;
        }
        bool legend;
        r = list_end(o, r, &t, &w, &legend);
        if (legend) {
                printf("\n%zu cgroup%s.\n", n, n == 1 ? "" : "s");
                note_own_processes_only(o, "Only your own processes are counted");
        }
        return r;
}

static int verb_list(int argc, char **argv, const KsmctlOptions *o) {
        return o->cgroups ? list_cgroups(o) : list_processes(o);
}

/* Explain's a{sv}: every value is a basic type; kept in the daemon's order. */
typedef struct Fact {
        char *key;
        char type;
        char *s;
        int64_t i;
        uint64_t u;
} Fact;

static void facts_free(Fact **f) {
        for (Fact *p = *f; p && p->key; p++) {
                free(p->key);
                free(p->s);
        }
        free(*f);
}

static const Fact *fact(const Fact *f, const char *key) {
        for (; f && f->key; f++)
                if (streq(f->key, key))
                        return f;
        return NULL;
}

static const char *fact_s(const Fact *f, const char *key) {
        const Fact *x = fact(f, key);
        return x && x->s ? x->s : "";
}

static int64_t fact_i(const Fact *f, const char *key) {
        const Fact *x = fact(f, key);
        return x ? x->i : 0;
}

static int read_facts(sd_bus_message *m, Fact **ret) {
        _cleanup_(facts_free) Fact *f = NULL;
        size_t n = 0;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *key, *contents;
                char type;
                Fact *g = reallocarray(f, n + 2, sizeof *f);
                if (!g)
                        return -ENOMEM;
                f = g;
                f[n + 1] = (Fact) {};
                f[n] = (Fact) {};
                r = sd_bus_message_read(m, "s", &key);
                if (r >= 0)
                        r = sd_bus_message_peek_type(m, NULL, &contents);
                if (r < 0)
                        break;
                f[n].key = strdup(key);
                type = f[n].type = contents[0];
                r = sd_bus_message_enter_container(m, 'v', contents);
                if (r < 0)
                        break;
                if (type == 's') {
                        const char *v;
                        r = sd_bus_message_read_basic(m, 's', &v);
                        if (r > 0)
                                f[n].s = strdup(v);
                } else if (type == 'b' || type == 'i') {
                        int32_t v;
                        r = sd_bus_message_read_basic(m, type, &v);
                        f[n].i = v;
                } else if (type == 'u') {
                        uint32_t v;
                        r = sd_bus_message_read_basic(m, 'u', &v);
                        f[n].i = v;
                } else if (type == 't' || type == 'x') {
                        uint64_t v;
                        r = sd_bus_message_read_basic(m, type, &v);
                        f[n].u = v;
                        f[n].i = (int64_t) v;
                } else
                        r = sd_bus_message_skip(m, contents);
                n++;
                if (r < 0 || (r = sd_bus_message_exit_container(m)) < 0 || (r = sd_bus_message_exit_container(m)) < 0)
                        break;
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(f);
        return sd_bus_message_exit_container(m);
}

static int verb_explain(int argc, char **argv, const KsmctlOptions *o) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(facts_free) Fact *f = NULL;
        unsigned pid;
        int r;

        if (safe_atou(argv[1], &pid) < 0 || pid == 0 || pid > INT32_MAX) {
                log_error("\"%s\" is not a pid.", argv[1]);
                return KSMCTL_EXIT_USAGE;
        }
        r = bus_open(o, &bus, &error);
        if (r < 0)
                return exit_for_no_bus(o, r, &error);
        r = bus_call(bus, BUS_INTERFACE, "Explain", &error, &reply, "u", (uint32_t) pid);
        if (r < 0)
                return exit_for_error(&error, r, "explain");
        r = read_facts(reply, &f);
        if (r < 0)
                return log_error_errno(r, "Cannot parse the daemon's answer: %m"), KSMCTL_EXIT_FAILURE;
        if (o->quiet)
                return KSMCTL_EXIT_OK;

        (void) pager_open(!o->no_pager);
        if (o->json) {
                JsonWriter w;
                json_init(&w, stdout, ksmctl_json_pretty(o, false));
                json_begin_object(&w);
                for (const Fact *x = f; x->key; x++) {
                        json_key(&w, x->key);
                        switch (x->type) {
                        case 's':
                                json_string(&w, x->s);
                                break;
                        case 'b':
                                json_bool(&w, x->i);
                                break;
                        case 't':
                                json_u64(&w, x->u);
                                break;
                        case 'i':
                        case 'u':
                        case 'x':
                                json_i64(&w, x->i);
                                break;
                        default:
                                json_null(&w);
                        }
                }
                json_end_object(&w);
                fputc('\n', stdout);
                return KSMCTL_EXIT_OK;
        }

        char a[64], b[40], c[32];
        int64_t merging = fact_i(f, "merging");
        printf("pid %" PRIi64 " (%s), uid %" PRIi64 "%s%s\n", fact_i(f, "pid"),
               CESCAPE(fact_s(f, "comm"), CESCAPE_ASCII), fact_i(f, "uid"), *fact_s(f, "exe") ? ", " : "",
               ESC(fact_s(f, "exe")));
        if (fact_i(f, "kernel_thread"))
                printf("  a kernel thread: KSM never applies.\n");
        printf("  %-9s/%s", "cgroup:", ESC(fact_s(f, "cgroup")));
        if (*fact_s(f, "vm"))
                printf("  (VM %s)", ESC(fact_s(f, "vm")));
        else if (*fact_s(f, "unit"))
                printf("  (unit %s)", ESC(fact_s(f, "unit")));
        printf("\n  %-9s%s", "verdict:", ESC(fact_s(f, "verdict")));
        if (*fact_s(f, "method"))
                printf(", method %s", ESC(fact_s(f, "method")));
        if (fact_i(f, "always"))
                printf(", always (never excluded by the controller)");
        printf("\n  %-9s%s\n", "policy:", *fact_s(f, "policy") ? ESC(fact_s(f, "policy")) : "none matched");
        if (*fact_s(f, "reason"))
                printf("  %-9s%s\n", "because:", ESC(fact_s(f, "reason")));
        printf("  %-9s%s, %s, profit %s; anon RSS %s\n", "merging:",
               merging > 0 ? "on" : merging == 0 ? "off" : "not known yet",
               format_pages(a, sizeof a, (uint64_t) fact_i(f, "merging_pages")),
               format_signed_bytes(b, sizeof b, fact_i(f, "profit_bytes")),
               format_bytes(c, sizeof c, (uint64_t) fact_i(f, "rss_anon_bytes")));
        if (fact_i(f, "slow"))
                printf("  reading its memory map overran the deadline: its mmap_lock is contended.\n");
        if (*fact_s(f, "last_action"))
                printf("  %-9s%s\n", "last act:", fact_s(f, "last_action"));
        return KSMCTL_EXIT_OK;
}

/* ---- monitor ---- */

static volatile sig_atomic_t monitor_stop = 0;

static void on_stop_signal(int sig) {
        monitor_stop = 1;
}

static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *e) {
        *(bool *) userdata = true;
        return 0;
}

static int verb_monitor(int argc, char **argv, const KsmctlOptions *o) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        uint64_t interval = o->interval_usec ?: 2 * USEC_PER_SEC;
        bool tty = isatty(STDOUT_FILENO) && !o->json, dirty = true;
        struct sigaction sa = { .sa_handler = on_stop_signal }; /* no SA_RESTART: waits end with EINTR */

        (void) sigaction(SIGINT, &sa, NULL);
        (void) sigaction(SIGTERM, &sa, NULL);
        (void) sigaction(SIGHUP, &sa, NULL);

        while (!monitor_stop) {
                _cleanup_(status_done) Status s = {};
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                uint64_t deadline;
                int ret, r;

                if (!bus && bus_open(o, &bus, &error) >= 0)
                        /* Redraw early when figures move; the period is the fallback. */
                        (void) sd_bus_match_signal(bus, NULL, BUS_NAME, BUS_PATH, "org.freedesktop.DBus.Properties",
                                                   "PropertiesChanged", on_properties_changed, &dirty);
                /* Ctrl-C during the call itself would end it with EINTR and
                 * an error; hold the signals over the call and let them stop
                 * the loop right after it (the waits below stay interruptible). */
                sigset_t stop_signals, saved;
                sigemptyset(&stop_signals);
                sigaddset(&stop_signals, SIGINT);
                sigaddset(&stop_signals, SIGTERM);
                sigaddset(&stop_signals, SIGHUP);
                (void) sigprocmask(SIG_BLOCK, &stop_signals, &saved);
                ret = status_get(o, bus, &s);
                (void) sigprocmask(SIG_SETMASK, &saved, NULL);
                if (monitor_stop)
                        break;
                if (ret != KSMCTL_EXIT_OK && ret != KSMCTL_EXIT_NOT_RUNNING)
                        return ret;
                if (ret == KSMCTL_EXIT_NOT_RUNNING)
                        bus = sd_bus_flush_close_unref(bus); /* a restarted bus needs a new connection */
                if (o->json) {
                        JsonWriter w;
                        json_init(&w, stdout, ksmctl_json_pretty(o, true));
                        json_status(&w, &s);
                        fputc('\n', stdout);
                } else {
                        if (tty)
                                fputs("\033[H\033[2J", stdout);
                        else
                                fputs("\n", stdout);
                        print_status(stdout, &s);
                }
                fflush(stdout);
                dirty = false;

                /* PropertiesChanged comes once per tick; at most one frame per
                 * 200 ms however often it arrives. */
                deadline = now_usec(CLOCK_MONOTONIC) + interval;
                usleep(200 * 1000);
                while (!monitor_stop && !dirty) {
                        uint64_t now = now_usec(CLOCK_MONOTONIC);
                        if (now >= deadline)
                                break;
                        if (!bus) {
                                usleep((useconds_t) MIN(deadline - now, 200 * USEC_PER_MSEC));
                                continue;
                        }
                        r = sd_bus_process(bus, NULL);
                        if (r < 0) {
                                bus = sd_bus_flush_close_unref(bus);
                                continue;
                        }
                        if (r > 0)
                                continue;
                        r = sd_bus_wait(bus, deadline - now);
                        if (r < 0 && r != -EINTR)
                                bus = sd_bus_flush_close_unref(bus);
                }
        }
        if (tty)
                fputc('\n', stdout);
        return KSMCTL_EXIT_OK;
}

/* ---- table ---- */

/* Verbs that take options after their name say .options = true; the rest
 * get their arguments untouched. */
static const KsmctlVerb verbs[] = {
        { "help", 0, 0, verb_help, .options = false },
        { "status", 0, 0, verb_status, .options = true },
        { "list", 0, 0, verb_list, .options = true },
        { "explain", 1, 1, verb_explain, .options = true },
        { "monitor", 0, 0, verb_monitor, .options = true },
        { "top", 0, 0, verb_top, .options = true },
        { "history", 0, 0, verb_history, .options = true },
        { "reload", 0, 0, verb_reload, .options = true },
        { "pause", 0, 0, verb_pause, .options = true },
        { "resume", 0, 0, verb_resume, .options = true },
        { "set-mode", 1, 1, verb_set_mode, .options = true },
        { "exec", 0, -1, verb_exec, .options = false },
};

enum { ARG_VERSION = 0x100, ARG_JSON, ARG_CGROUPS, ARG_ALL, ARG_INTERVAL, ARG_SINCE, ARG_NO_PAGER, ARG_NO_LEGEND };
static const struct option options[] = {
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, ARG_VERSION },
        { "json", optional_argument, NULL, ARG_JSON },
        { "no-pager", no_argument, NULL, ARG_NO_PAGER },
        { "no-legend", no_argument, NULL, ARG_NO_LEGEND },
        { "quiet", no_argument, NULL, 'q' },
        { "host", required_argument, NULL, 'H' },
        { "machine", required_argument, NULL, 'M' },
        { "cgroups", no_argument, NULL, ARG_CGROUPS },
        { "all", no_argument, NULL, ARG_ALL },
        { "interval", required_argument, NULL, ARG_INTERVAL },
        { "iterations", required_argument, NULL, 'n' },
        { "since", required_argument, NULL, ARG_SINCE },
        {},
};

/* systemctl's names; plain --json (AUTO) has none of its own. */
static const char *const json_mode_table[] = {
        [KSMCTL_JSON_OFF] = "off",
        [KSMCTL_JSON_PRETTY] = "pretty",
        [KSMCTL_JSON_SHORT] = "short",
};

/* Returns -1 to go on, else an exit status. Help waits for the end of the
 * options, so that "-h --no-pager" has no pager. */
static int parse_options(int argc, char **argv, const char *optstring, KsmctlOptions *o) {
        bool want_help = false;
        ssize_t mode;
        int c;

        while ((c = getopt_long(argc, argv, optstring, options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        want_help = true;
                        break;
                case ARG_VERSION:
                        printf("ksmctl %s\n", PACKAGE_VERSION);
                        return KSMCTL_EXIT_OK;
                case ARG_JSON:
                        mode = optarg ? string_table_from_string(json_mode_table, ELEMENTSOF(json_mode_table), optarg)
                                      : KSMCTL_JSON_AUTO;
                        if (mode < 0) {
                                log_error("Bad --json=%s: pretty, short or off.", optarg);
                                return KSMCTL_EXIT_USAGE;
                        }
                        o->json = (KsmctlJson) mode;
                        break;
                case ARG_NO_PAGER:
                        o->no_pager = true;
                        break;
                case ARG_NO_LEGEND:
                        o->no_legend = true;
                        break;
                case 'q':
                        o->quiet = true;
                        break;
                case 'H':
                case 'M':
                        if (isempty(optarg)) {
                                log_error("%s needs a name: -H [USER@]HOST, -M CONTAINER.", c == 'H' ? "--host" : "--machine");
                                return KSMCTL_EXIT_USAGE;
                        }
                        *(c == 'H' ? &o->host : &o->machine) = optarg;
                        break;
                case ARG_CGROUPS:
                        o->cgroups = true;
                        break;
                case ARG_ALL:
                        o->all = true;
                        break;
                case ARG_INTERVAL:
                        if (parse_timespan_usec(optarg, &o->interval_usec) < 0 || o->interval_usec < 100 * USEC_PER_MSEC) {
                                log_error("Bad --interval=%s: a time span of at least 100ms (2s, 500ms).", optarg);
                                return KSMCTL_EXIT_USAGE;
                        }
                        break;
                case 'n':
                        if (safe_atou(optarg, &o->iterations) < 0 || o->iterations == 0) {
                                log_error("Bad --iterations=%s: a number of frames, at least 1.", optarg);
                                return KSMCTL_EXIT_USAGE;
                        }
                        break;
                case ARG_SINCE:
                        if (parse_timespan_usec(optarg, &o->since_usec) < 0 || o->since_usec == 0) {
                                log_error("Bad --since=%s: a time span back from now (3h, 30min).", optarg);
                                return KSMCTL_EXIT_USAGE;
                        }
                        break;
                default:
                        return KSMCTL_EXIT_USAGE;
                }
        if (want_help) {
                help(o);
                return KSMCTL_EXIT_OK;
        }
        return -1;
}

static int run_verb(int argc, char *argv[], KsmctlOptions *o) {
        const char *name = argv[0];
        int r;

        for (size_t i = 0; i < ELEMENTSOF(verbs); i++) {
                const KsmctlVerb *v = &verbs[i];
                int vargc = argc;
                char **vargv = argv;

                if (!streq(v->name, name))
                        continue;
                if (v->options) {
                        /* Options may follow the verb ("list --cgroups", "explain 42 --json"). */
                        optind = 0;
                        r = parse_options(vargc, vargv, "hqn:H:M:", o);
                        if (r >= 0)
                                return r;
                        /* getopt moved the operands behind the options. */
                        vargv += optind - 1;
                        vargc -= optind - 1;
                        vargv[0] = (char *) v->name;
                }
                int n = vargc - 1;
                if (n < v->min_args || (v->max_args >= 0 && n > v->max_args)) {
                        log_error("Wrong number of arguments for \"%s\"; see --help.", name);
                        return KSMCTL_EXIT_USAGE;
                }
                if ((o->cgroups || o->all) && !streq(v->name, "list")) {
                        log_error("--cgroups and --all only apply to \"list\".");
                        return KSMCTL_EXIT_USAGE;
                }
                if ((o->iterations && !streq(v->name, "top")) || (o->since_usec && !streq(v->name, "history"))) {
                        log_error("--iterations only applies to \"top\", --since only to \"history\".");
                        return KSMCTL_EXIT_USAGE;
                }
                if (o->host && o->machine) {
                        log_error("-H and -M cannot be combined; -H HOST/CONTAINER reaches a container on HOST.");
                        return KSMCTL_EXIT_USAGE;
                }
                if ((o->host || o->machine) && streq(v->name, "exec")) {
                        log_error("exec runs the command here: -H and -M do not apply.");
                        return KSMCTL_EXIT_USAGE;
                }
                if (o->quiet)
                        log_set_max_level(LOG_ERR);
                return v->run(vargc, vargv, o);
        }
        log_error("Unknown command \"%s\"; see --help.", name);
        return KSMCTL_EXIT_USAGE;
}

int main(int argc, char *argv[]) {
        KsmctlOptions o = {};
        char *status[] = { (char *) "status", NULL };
        int r;

        log_set_target(LOG_TARGET_STDERR);
        /* Only the character set, for the width of names and the ellipsis:
         * numbers keep their C spelling ("2.4%", not "2,4%"). */
        (void) setlocale(LC_CTYPE, "");
        /* "+" stops at the first non-option, so "exec -- CMD ARGS" keeps its own arguments. */
        r = parse_options(argc, argv, "+hqn:H:M:", &o);
        /* As systemctl: no command is the overview. */
        if (r < 0 && optind >= argc)
                r = run_verb(1, status, &o);
        else if (r < 0)
                r = run_verb(argc - optind, argv + optind, &o);
        pager_close();
        return r;
}
