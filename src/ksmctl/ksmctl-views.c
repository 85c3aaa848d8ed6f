/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Operators' views of what the daemon did, over time, and why:
 *
 *   ksmctl top       savings per VM, unit and cgroup, largest first, with
 *                    what changed since the previous frame, redrawn every
 *                    --interval until Ctrl-C or -n frames;
 *   ksmctl history   the daemon's History() as two charts, memory saved and
 *                    ksmd's CPU, as wide as the terminal, with what merging
 *                    bought and cost below them;
 *
 * and the controller's line they share with status. On a terminal top
 * clears the screen for each frame; anything else gets plain text, frames
 * one after the other. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "bus-api.h"
#include "controller.h"
#include "json.h"
#include "ksmctl.h"
#include "log.h"
#include "util.h"

#define LABEL_WIDTH 12          /* "Controller: ", as status aligns its lines */
#define AXIS_WIDTH 10           /* "1023.9 MiB" */
#define CHART_MIN_COLUMNS 20
#define CHART_ROWS 8            /* each chart, when the terminal's height is not known */

void print_controller(FILE *f, const char *phase, int64_t allowance_usec, const char *reason) {
        char t[32];

        if (isempty(phase))
                return;
        fprintf(f, "%-*s%s, ", LABEL_WIDTH, "Controller:", CESCAPE(phase, CESCAPE_CONTROL));
        if (allowance_usec > 0)
                fprintf(f, "allowance %s left", format_timespan(t, sizeof t, (uint64_t) allowance_usec));
        else if (allowance_usec < 0)
                fprintf(f, "allowance overdrawn by %s", format_timespan(t, sizeof t, (uint64_t) -allowance_usec));
        else
                fputs("allowance spent", f);
        fprintf(f, ": %s\n", CESCAPE(reason, CESCAPE_CONTROL));
}

void json_controller(JsonWriter *w, const char *phase, int64_t allowance_usec, const char *reason) {
        json_key(w, "controller");
        json_begin_object(w);
        json_kv_string(w, "phase", phase);
        json_kv_i64(w, "burst_allowance_usec", allowance_usec);
        json_kv_string(w, "reason", reason);
        json_end_object(w);
}

/* The terminal's size; $COLUMNS/$LINES or 80x24 when stdout is none. */
static void terminal_size(unsigned *ret_columns, unsigned *ret_lines) {
        struct winsize ws = {};
        unsigned c = 0, l = 0;

        if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) >= 0) {
                c = ws.ws_col;
                l = ws.ws_row;
        }
        if (c == 0 && (!getenv("COLUMNS") || safe_atou(getenv("COLUMNS"), &c) < 0))
                c = 80;
        if (l == 0 && (!getenv("LINES") || safe_atou(getenv("LINES"), &l) < 0))
                l = 24;
        *ret_columns = c;
        *ret_lines = l;
}

static const char *format_clock(char *buf, size_t n, uint64_t realtime_usec, bool seconds) {
        time_t t = (time_t) (realtime_usec / USEC_PER_SEC);
        struct tm tm;
        if (!localtime_r(&t, &tm) || strftime(buf, n, seconds ? "%H:%M:%S" : "%H:%M", &tm) == 0)
                snprintf(buf, n, "?");
        return buf;
}

static int open_daemon_bus(const KsmctlOptions *o, sd_bus **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r = bus_open(o, ret, &error);
        if (r < 0)
                return exit_for_no_bus(o, r, &error);
        return KSMCTL_EXIT_OK;
}

static int parse_failed(int r) {
        log_error_errno(r, "Cannot parse the daemon's answer: %m");
        return KSMCTL_EXIT_FAILURE;
}

/* ---- the daemon's figures of now ---- */

typedef struct Overview {
        sd_bus_message *reply;          /* holds the strings */
        uint64_t saved_bytes, ksmd_cpu_usec;
        int64_t general_profit_bytes, burst_allowance_usec;
        double ksmd_cpu_fraction;
        const char *phase, *reason;
} Overview;

static void overview_done(Overview *o) {
        sd_bus_message_unref(o->reply);
        *o = (Overview) {};
}

static int overview_property(sd_bus_message *m, const char *name, void *userdata) {
        Overview *o = userdata;

        if (streq(name, "SavedBytes"))
                return sd_bus_message_read(m, "v", "t", &o->saved_bytes);
        if (streq(name, "GeneralProfitBytes"))
                return sd_bus_message_read(m, "v", "x", &o->general_profit_bytes);
        if (streq(name, "KsmdCPUUSec"))
                return sd_bus_message_read(m, "v", "t", &o->ksmd_cpu_usec);
        if (streq(name, "KsmdCPUFraction"))
                return sd_bus_message_read(m, "v", "d", &o->ksmd_cpu_fraction);
        if (streq(name, "ControllerPhase"))
                return sd_bus_message_read(m, "v", "s", &o->phase);
        if (streq(name, "ControllerReason"))
                return sd_bus_message_read(m, "v", "s", &o->reason);
        if (streq(name, "BurstAllowanceUSec"))
                return sd_bus_message_read(m, "v", "x", &o->burst_allowance_usec);
        return sd_bus_message_skip(m, "v");
}

/* One GetAll, so that every figure is of the same tick. Returns an exit
 * status; a failure is said. */
static int overview_get(sd_bus *bus, Overview *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(overview_done) Overview o = {};
        int r;

        r = bus_call(bus, "org.freedesktop.DBus.Properties", "GetAll", &error, &o.reply, "s", BUS_INTERFACE);
        if (r < 0)
                return exit_for_error(&error, r, "read the daemon's status");
        r = properties_parse(o.reply, overview_property, &o);
        if (r < 0)
                return parse_failed(r);
        *ret = TAKE_STRUCT(o);
        return KSMCTL_EXIT_OK;
}

/* ---- top ---- */

typedef struct CgroupRow {
        char *cgroup;
        const char *unit, *vm;          /* in the frame's reply */
        uint32_t processes;
        uint64_t merging_bytes;
        int64_t profit_bytes;
} CgroupRow;

typedef struct TopFrame {
        sd_bus_message *reply;
        Overview now;
        CgroupRow *rows;
        size_t n, n_alloc;
} TopFrame;

static void top_frame_done(TopFrame *f) {
        for (size_t i = 0; i < f->n; i++)
                free(f->rows[i].cgroup);
        free(f->rows);
        overview_done(&f->now);
        sd_bus_message_unref(f->reply);
        *f = (TopFrame) {};
}

static int top_frame_get(sd_bus *bus, TopFrame *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(top_frame_done) TopFrame f = {};
        const char *cgroup, *unit, *vm;
        uint32_t processes;
        uint64_t pages;
        int64_t profit;
        int r;

        r = overview_get(bus, &f.now);
        if (r != KSMCTL_EXIT_OK)
                return r;
        r = bus_call(bus, BUS_INTERFACE, "ListCgroups", &error, &f.reply, NULL);
        if (r < 0)
                return exit_for_error(&error, r, "list the cgroups");
        r = sd_bus_message_enter_container(f.reply, 'a', "(sssutx)");
        while (r >= 0 &&
               (r = sd_bus_message_read(f.reply, "(sssutx)", &cgroup, &unit, &vm, &processes, &pages, &profit)) > 0) {
                if (greedy_realloc((void **) &f.rows, &f.n_alloc, f.n + 1, sizeof *f.rows, 16) < 0)
                        return log_oom(), KSMCTL_EXIT_FAILURE;
                /* the path outlives the reply: it keys the next frame's deltas */
                CgroupRow *row = &f.rows[f.n];
                *row = (CgroupRow) {
                        .cgroup = strdup(cgroup),
                        .unit = unit,
                        .vm = vm,
                        .processes = processes,
                        .merging_bytes = pages * page_size(),
                        .profit_bytes = profit,
                };
                if (!row->cgroup)
                        return log_oom(), KSMCTL_EXIT_FAILURE;
                f.n++;
        }
        if (r < 0)
                return parse_failed(r);
        *ret = TAKE_STRUCT(f);
        return KSMCTL_EXIT_OK;
}

/* What changed in row since the frame before: false when that frame is
 * the first, or had no such cgroup. */
static bool row_change(const CgroupRow *row, const TopFrame *before, int64_t *ret_merging, int64_t *ret_profit) {
        for (size_t i = 0; before && i < before->n; i++) {
                const CgroupRow *old = &before->rows[i];
                if (!streq(old->cgroup, row->cgroup))
                        continue;
                /* two's complement: a shrinking saving comes out negative */
                *ret_merging = (int64_t) (row->merging_bytes - old->merging_bytes);
                *ret_profit = row->profit_bytes - old->profit_bytes;
                return true;
        }
        *ret_merging = *ret_profit = 0;
        return false;
}

/* "+4.0 MiB", "-512 B", "0 B"; "-" without a value to compare with. */
static const char *format_delta(char *buf, size_t n, bool known, int64_t delta) {
        if (!known)
                return "-";
        if (delta <= 0)
                return format_signed_bytes(buf, n, delta);
        buf[0] = '+';
        format_bytes(buf + 1, n - 1, (uint64_t) delta);
        return buf;
}

/* " (+4.0 MiB)" after a figure of the header; nothing on the first frame. */
static const char *format_change(char *buf, size_t n, bool known, int64_t delta) {
        char d[40];
        if (!known)
                return "";
        snprintf(buf, n, " (%s)", format_delta(d, sizeof d, true, delta));
        return buf;
}

static void print_top_header(const Overview *now, const Overview *then, uint64_t interval_usec) {
        char a[40], b[48], t[32];

        printf("ksmtuned2 top, %s, every %s%s\n", format_clock(t, sizeof t, now_usec(CLOCK_REALTIME), true),
               format_timespan(a, sizeof a, interval_usec),
               then ? "; changes since the previous frame" : "");
        printf("%-*s%s%s", LABEL_WIDTH, "Saved:", format_bytes(a, sizeof a, now->saved_bytes),
               format_change(b, sizeof b, then, then ? (int64_t) (now->saved_bytes - then->saved_bytes) : 0));
        printf("; general profit %s%s\n", format_signed_bytes(a, sizeof a, now->general_profit_bytes),
               format_change(b, sizeof b, then, then ? now->general_profit_bytes - then->general_profit_bytes : 0));
        printf("%-*sCPU %.1f%% now; %s since boot", LABEL_WIDTH, "ksmd:", now->ksmd_cpu_fraction * 100.0,
               format_timespan(a, sizeof a, now->ksmd_cpu_usec));
        if (then && now->ksmd_cpu_usec >= then->ksmd_cpu_usec)
                printf(" (+%s)", format_timespan(a, sizeof a, now->ksmd_cpu_usec - then->ksmd_cpu_usec));
        fputc('\n', stdout);
        print_controller(stdout, now->phase, now->burst_allowance_usec, now->reason);
}

static void print_top_frame(const TopFrame *f, const TopFrame *before, uint64_t interval_usec, bool tty) {
        unsigned columns, lines;
        size_t shown = f->n;

        terminal_size(&columns, &lines);
        print_top_header(&f->now, before ? &before->now : NULL, interval_usec);
        printf("\n%10s %10s %10s %10s %6s  %-24s %s\n", "MERGED", "DELTA", "PROFIT", "DELTA", "PROCS", "VM/UNIT",
               "CGROUP");
        /* On a terminal the frame fits the screen: 6 lines above, 1 below. */
        if (tty && lines > 8 && shown > lines - 8)
                shown = lines - 8;
        for (size_t i = 0; i < shown; i++) {
                const CgroupRow *row = &f->rows[i];
                char a[32], b[40], c[40], d[40], name[256], line[1024];
                int64_t merging, profit;
                bool known = row_change(row, before, &merging, &profit);

                if (!isempty(row->vm))
                        snprintf(name, sizeof name, "vm:%s", row->vm);
                else
                        snprintf(name, sizeof name, "%s", isempty(row->unit) ? "-" : row->unit);
                snprintf(line, sizeof line, "%10s %10s %10s %10s %6" PRIu32 "  %-24s /%s",
                         format_bytes(a, sizeof a, row->merging_bytes), format_delta(b, sizeof b, known, merging),
                         format_signed_bytes(c, sizeof c, row->profit_bytes), format_delta(d, sizeof d, known, profit),
                         row->processes, CESCAPE(name, CESCAPE_CONTROL), CESCAPE(row->cgroup, CESCAPE_CONTROL));
                /* a terminal's lines are not wrapped: a long path is cut,
                 * at a character's start */
                if (tty && columns < strlen(line)) {
                        size_t cut = columns;
                        while (cut > 0 && (line[cut] & 0xc0) == 0x80)
                                cut--;
                        line[cut] = 0;
                }
                puts(line);
        }
        if (shown < f->n)
                printf("... %zu more\n", f->n - shown);
}

static void json_kv_delta(JsonWriter *w, const char *key, bool known, int64_t delta) {
        json_key(w, key);
        if (known)
                json_i64(w, delta);
        else
                json_null(w);
}

static void json_top_frame(const KsmctlOptions *o, const TopFrame *f, const TopFrame *before) {
        JsonWriter w;

        json_init(&w, stdout, ksmctl_json_pretty(o, /* stream= */ true));
        json_begin_object(&w);
        json_kv_u64(&w, "realtime_usec", now_usec(CLOCK_REALTIME));
        json_kv_u64(&w, "saved_bytes", f->now.saved_bytes);
        json_kv_i64(&w, "general_profit_bytes", f->now.general_profit_bytes);
        json_kv_double(&w, "ksmd_cpu_fraction", f->now.ksmd_cpu_fraction);
        json_kv_u64(&w, "ksmd_cpu_usec", f->now.ksmd_cpu_usec);
        json_controller(&w, f->now.phase, f->now.burst_allowance_usec, f->now.reason);
        json_key(&w, "cgroups");
        json_begin_array(&w);
        for (size_t i = 0; i < f->n; i++) {
                const CgroupRow *row = &f->rows[i];
                int64_t merging, profit;
                bool known = row_change(row, before, &merging, &profit);

                json_begin_object(&w);
                json_kv_string(&w, "cgroup", row->cgroup);
                json_kv_string(&w, "unit", isempty(row->unit) ? NULL : row->unit);
                json_kv_string(&w, "vm", isempty(row->vm) ? NULL : row->vm);
                json_kv_u64(&w, "processes", row->processes);
                json_kv_u64(&w, "merging_bytes", row->merging_bytes);
                json_kv_i64(&w, "profit_bytes", row->profit_bytes);
                json_kv_delta(&w, "merging_bytes_delta", known, merging);
                json_kv_delta(&w, "profit_bytes_delta", known, profit);
                json_end_object(&w);
        }
        json_end_array(&w);
        json_end_object(&w);
        fputc('\n', stdout);
}

int verb_top(int argc, char **argv, const KsmctlOptions *o) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(top_frame_done) TopFrame before = {};
        uint64_t interval = o->interval_usec ?: 2 * USEC_PER_SEC;
        bool tty = isatty(STDOUT_FILENO) && !o->json;
        sigset_t stop, saved;
        int r;

        r = open_daemon_bus(o, &bus);
        if (r != KSMCTL_EXIT_OK)
                return r;
        /* Ctrl-C ends the wait between frames, never a call to the daemon
         * half-way: the signals stay blocked and are waited for. */
        sigemptyset(&stop);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGHUP);
        (void) sigprocmask(SIG_BLOCK, &stop, &saved);

        for (unsigned i = 0;; i++) {
                _cleanup_(top_frame_done) TopFrame f = {};
                const TopFrame *previous = i > 0 ? &before : NULL;

                r = top_frame_get(bus, &f);
                if (r != KSMCTL_EXIT_OK)
                        break;
                if (o->json)
                        json_top_frame(o, &f, previous);
                else {
                        fputs(tty ? "\033[H\033[2J" : previous ? "\n" : "", stdout);
                        print_top_frame(&f, previous, interval, tty);
                }
                fflush(stdout);
                top_frame_done(&before);
                before = TAKE_STRUCT(f);
                if (o->iterations > 0 && i + 1 >= o->iterations)
                        break;
                struct timespec ts = { .tv_sec = (time_t) (interval / USEC_PER_SEC),
                                       .tv_nsec = (long) (interval % USEC_PER_SEC * NSEC_PER_USEC) };
                if (sigtimedwait(&stop, NULL, &ts) > 0)
                        break;
        }
        (void) sigprocmask(SIG_SETMASK, &saved, NULL);
        return r;
}

/* ---- history ---- */

typedef struct Sample {
        uint64_t realtime_usec, duration_usec;
        uint32_t ticks;
        const char *phase;              /* in the reply */
        uint64_t saved_bytes;
        int64_t general_profit_bytes;
        double ksmd_cpu_fraction, ksmd_blocked_fraction;
        uint64_t pages_to_scan, sleep_ms;
        double scan_pages_per_sec;
        uint32_t managed_processes;
} Sample;

static int read_samples(sd_bus_message *reply, Sample **ret, size_t *ret_n) {
        _cleanup_free_ Sample *s = NULL;
        size_t n = 0, n_alloc = 0;
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "(ttustxddttdu)");
        while (r >= 0) {
                Sample x;
                r = sd_bus_message_read(reply, "(ttustxddttdu)", &x.realtime_usec, &x.duration_usec, &x.ticks,
                                        &x.phase, &x.saved_bytes, &x.general_profit_bytes, &x.ksmd_cpu_fraction,
                                        &x.ksmd_blocked_fraction, &x.pages_to_scan, &x.sleep_ms,
                                        &x.scan_pages_per_sec, &x.managed_processes);
                if (r <= 0)
                        break;
                if (greedy_realloc((void **) &s, &n_alloc, n + 1, sizeof *s, 64) < 0)
                        return -ENOMEM;
                s[n++] = x;
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        *ret_n = n;
        return 0;
}

static void json_samples(const KsmctlOptions *o, const Sample *s, size_t n) {
        JsonWriter w;
        char t[32];

        json_init(&w, stdout, ksmctl_json_pretty(o, /* stream= */ false));
        json_begin_array(&w);
        for (size_t i = 0; i < n; i++) {
                json_begin_object(&w);
                json_kv_u64(&w, "realtime_usec", s[i].realtime_usec);
                json_kv_string(&w, "time", format_realtime(t, sizeof t, s[i].realtime_usec));
                json_kv_u64(&w, "duration_usec", s[i].duration_usec);
                json_kv_u64(&w, "ticks", s[i].ticks);
                json_kv_string(&w, "phase", s[i].phase);
                json_kv_u64(&w, "saved_bytes", s[i].saved_bytes);
                json_kv_i64(&w, "general_profit_bytes", s[i].general_profit_bytes);
                json_kv_double(&w, "ksmd_cpu_fraction", s[i].ksmd_cpu_fraction);
                json_kv_double(&w, "ksmd_blocked_fraction", s[i].ksmd_blocked_fraction);
                json_kv_u64(&w, "pages_to_scan", s[i].pages_to_scan);
                json_kv_u64(&w, "sleep_millisecs", s[i].sleep_ms);
                json_kv_double(&w, "scan_pages_per_sec", s[i].scan_pages_per_sec);
                json_kv_u64(&w, "managed_processes", s[i].managed_processes);
                json_end_object(&w);
        }
        json_end_array(&w);
        fputc('\n', stdout);
}

static double sample_saved(const Sample *s) {
        return (double) s->saved_bytes;
}

static double sample_cpu(const Sample *s) {
        return s->ksmd_cpu_fraction;
}

/* The time-weighted mean of a figure over each of the columns that split
 * [t0, t1) evenly, into ret; NAN where no entry covers a column. An entry
 * covers [realtime - duration, realtime]. weight: room for the columns. */
static void chart_columns(const Sample *s, size_t n, uint64_t t0, uint64_t t1, double (*figure)(const Sample *),
                          double *weight, double *ret, size_t columns) {
        double span = (double) (t1 - t0), width = span / (double) columns;

        for (size_t c = 0; c < columns; c++)
                ret[c] = weight[c] = 0;
        for (size_t i = 0; i < n; i++) {
                double end = MIN((double) s[i].realtime_usec - (double) t0, span);
                double start = MAX(end - (double) s[i].duration_usec, 0.0);

                for (size_t c = (size_t) (start / width); c < columns && (double) c * width < end; c++) {
                        double overlap = MIN(end, (double) (c + 1) * width) - MAX(start, (double) c * width);
                        if (overlap <= 0)
                                continue;
                        ret[c] += figure(&s[i]) * overlap;
                        weight[c] += overlap;
                }
        }
        for (size_t c = 0; c < columns; c++)
                ret[c] = weight[c] > 0 ? ret[c] / weight[c] : NAN;
}

/* An area chart, rows high: '#' a full cell, '.' at least half of one (and
 * anything above 0 in the bottom row); a row's label is the value that
 * fills it, at the top and half-way up. */
static void print_chart(const char *title, const double *v, size_t columns, unsigned rows, double max,
                        const char *(*label)(char *buf, size_t n, double v)) {
        _cleanup_free_ char *line = malloc(columns + 1);
        char l[32];

        if (!line)
                return (void) log_oom();
        printf("%s\n", title);
        for (unsigned r = rows; r > 0; r--) {
                const char *axis = r == rows || r == (rows + 1) / 2 ? label(l, sizeof l, max * r / rows) : "";
                for (size_t c = 0; c < columns; c++) {
                        /* in half cells, from the bottom */
                        double halves = isnan(v[c]) ? -1 : round(v[c] / max * rows * 2);
                        if (halves >= 2.0 * r)
                                line[c] = '#';
                        else if (halves >= 2.0 * r - 1 || (r == 1 && v[c] > 0))
                                line[c] = '.';
                        else
                                line[c] = ' ';
                }
                line[columns] = 0;
                printf("%*s |%s\n", AXIS_WIDTH, axis, line);
        }
}

static const char *label_bytes(char *buf, size_t n, double v) {
        return format_bytes(buf, n, (uint64_t) llround(v));
}

static const char *label_percent(char *buf, size_t n, double v) {
        /* an idle ksmd's scale is a tenth of a percent */
        snprintf(buf, n, v < 0.01 ? "%.2f%%" : "%.1f%%", v * 100.0);
        return buf;
}

/* The time axis: a mark and a clock time every so many columns (the
 * corner marks the first). */
static void print_time_axis(uint64_t t0, uint64_t t1, size_t columns) {
        _cleanup_free_ char *marks = malloc(columns + 1), *times = malloc(columns + 1);
        bool seconds = t1 - t0 < 10 * 60 * USEC_PER_SEC;
        size_t step = seconds ? 12 : 8;

        if (!marks || !times)
                return (void) log_oom();
        memset(marks, '-', columns);
        memset(times, ' ', columns);
        for (size_t c = 0; c + step / 2 < columns; c += step) {
                char t[16];
                uint64_t at = t0 + (uint64_t) ((double) (t1 - t0) * (double) c / (double) columns);
                size_t len = strlen(format_clock(t, sizeof t, at, seconds));
                if (c + len > columns)
                        break;
                if (c > 0)
                        marks[c] = '+';
                memcpy(times + c, t, len);
        }
        marks[columns] = times[columns] = 0;
        printf("%*s +%s\n%*s  %s\n", AXIS_WIDTH, "", marks, AXIS_WIDTH, "", strstrip(times));
}

/* A chart of one figure from t0 to t1 with its time axis, scaled to its
 * largest column, or to least when that is larger. */
static void print_figure(const char *title, const Sample *s, size_t n, uint64_t t0, uint64_t t1,
                         double (*figure)(const Sample *), double least,
                         const char *(*label)(char *buf, size_t n, double v), size_t columns, unsigned rows) {
        _cleanup_free_ double *v = calloc(columns, sizeof *v), *weight = calloc(columns, sizeof *weight);
        double max = least;

        if (!v || !weight)
                return (void) log_oom();
        chart_columns(s, n, t0, t1, figure, weight, v, columns);
        for (size_t c = 0; c < columns; c++)
                if (!isnan(v[c]))
                        max = MAX(max, v[c]);
        print_chart(title, v, columns, rows, max, label);
        print_time_axis(t0, t1, columns);
}

/* From since (0: the first entry's start) to now. */
static void print_history(const Sample *s, size_t n, uint64_t since, const Overview *now) {
        unsigned columns, lines, rows;
        uint64_t t1 = now_usec(CLOCK_REALTIME), t0 = MAX(s[0].realtime_usec - s[0].duration_usec, since);
        double cpu_usec = 0, blocked_usec = 0, phase_usec[_TUNE_MODE_MAX] = {}, covered = 0, max_saved = 0;
        char a[32], b[32], c[40];

        terminal_size(&columns, &lines);
        size_t width = MAX(columns, (unsigned) (AXIS_WIDTH + 2 + CHART_MIN_COLUMNS)) - AXIS_WIDTH - 2;
        /* both charts and the lines below them on one screen */
        rows = isatty(STDOUT_FILENO) ? CLAMP(lines > 14 ? (lines - 14) / 2 : 0, 3u, 16u) : CHART_ROWS;
        t1 = MAX(t1, s[n - 1].realtime_usec);
        if (t1 <= t0)
                t1 = t0 + 1;

        for (size_t i = 0; i < n; i++) {
                double d = (double) s[i].duration_usec;
                max_saved = MAX(max_saved, (double) s[i].saved_bytes);
                cpu_usec += s[i].ksmd_cpu_fraction * d;
                blocked_usec += s[i].ksmd_blocked_fraction * d;
                covered += d;
                for (TuneMode p = 0; p < _TUNE_MODE_MAX; p++)
                        if (streq(s[i].phase, tune_mode_to_string(p)))
                                phase_usec[p] += d;
        }

        print_figure("Memory saved (pages_sharing)", s, n, t0, t1, sample_saved, (double) page_size(), label_bytes,
                     width, rows);
        print_figure("ksmd CPU (of one core)", s, n, t0, t1, sample_cpu, 0.001, label_percent, width, rows);
        printf("\n%-*s%s to %s (%s), %zu entries\n", LABEL_WIDTH, "Shown:",
               format_realtime(a, sizeof a, t0), format_clock(b, sizeof b, t1, true),
               format_timespan(c, sizeof c, t1 - t0), n);
        printf("%-*s%s now, at most %s; general profit %s\n", LABEL_WIDTH, "Saved:",
               format_bytes(a, sizeof a, now->saved_bytes), format_bytes(b, sizeof b, (uint64_t) max_saved),
               format_signed_bytes(c, sizeof c, now->general_profit_bytes));
        printf("%-*s%s of CPU in that time (%.1f%% of a core, blocked on mmap_lock %.1f%%), %s since boot\n",
               LABEL_WIDTH, "ksmd:", format_timespan(a, sizeof a, (uint64_t) cpu_usec),
               covered > 0 ? cpu_usec / covered * 100.0 : 0.0, covered > 0 ? blocked_usec / covered * 100.0 : 0.0,
               format_timespan(b, sizeof b, now->ksmd_cpu_usec));
        printf("%-*s", LABEL_WIDTH, "Phases:");
        for (TuneMode p = 0; p < _TUNE_MODE_MAX; p++)
                printf("%s%s %.0f%%", p > 0 ? ", " : "", tune_mode_to_string(p),
                       covered > 0 ? phase_usec[p] / covered * 100.0 : 0.0);
        fputc('\n', stdout);
        print_controller(stdout, now->phase, now->burst_allowance_usec, now->reason);
}

int verb_history(int argc, char **argv, const KsmctlOptions *o) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(overview_done) Overview now = {};
        _cleanup_free_ Sample *s = NULL;
        uint64_t since = 0, realtime = now_usec(CLOCK_REALTIME);
        size_t n = 0;
        int r;

        if (o->since_usec > 0 && o->since_usec < realtime)
                since = realtime - o->since_usec;
        r = open_daemon_bus(o, &bus);
        if (r != KSMCTL_EXIT_OK)
                return r;
        r = bus_call(bus, BUS_INTERFACE, "History", &error, &reply, "t", since);
        if (r < 0)
                return exit_for_error(&error, r, "read the history");
        r = read_samples(reply, &s, &n);
        if (r < 0)
                return parse_failed(r);
        if (o->json) {
                json_samples(o, s, n);
                return KSMCTL_EXIT_OK;
        }
        r = overview_get(bus, &now);
        if (r != KSMCTL_EXIT_OK)
                return r;
        if (n == 0) {
                char t[32];
                printf("No history since %s.\n", format_realtime(t, sizeof t, since));
                return KSMCTL_EXIT_OK;
        }
        print_history(s, n, since, &now);
        return KSMCTL_EXIT_OK;
}
