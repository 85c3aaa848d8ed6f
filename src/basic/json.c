/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <math.h>

#include "json.h"

void json_init(JsonWriter *w, FILE *f, bool pretty) {
        *w = (JsonWriter) { .f = f, .pretty = pretty };
}

static void indent(JsonWriter *w) {
        if (!w->pretty)
                return;
        fputc('\n', w->f);
        for (int i = 0; i < w->depth; i++)
                fputs("  ", w->f);
}

static void before_value(JsonWriter *w) {
        if (w->after_key) {
                w->after_key = false;
                return;
        }
        if (w->depth > 0) {
                if (w->need_comma[w->depth])
                        fputc(',', w->f);
                w->need_comma[w->depth] = true;
                indent(w);
        }
}

static void open_container(JsonWriter *w, char c) {
        before_value(w);
        fputc(c, w->f);
        if (w->depth < 31)
                w->depth++;
        w->need_comma[w->depth] = false;
}

static void close_container(JsonWriter *w, char c) {
        bool had = w->need_comma[w->depth];
        if (w->depth > 0)
                w->depth--;
        if (had)
                indent(w);
        fputc(c, w->f);
        if (w->depth == 0 && w->pretty)
                fputc('\n', w->f);
}

void json_begin_object(JsonWriter *w) {
        open_container(w, '{');
}
void json_end_object(JsonWriter *w) {
        close_container(w, '}');
}
void json_begin_array(JsonWriter *w) {
        open_container(w, '[');
}
void json_end_array(JsonWriter *w) {
        close_container(w, ']');
}

static void write_escaped(FILE *f, const char *s) {
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                unsigned char c = *p;
                if (c == '"' || c == '\\') {
                        fputc('\\', f);
                        fputc(c, f);
                } else if (c == '\n')
                        fputs("\\n", f);
                else if (c == '\t')
                        fputs("\\t", f);
                else if (c < 0x20 || c == 0x7f)
                        fprintf(f, "\\u%04x", c);
                else if (c < 0x80)
                        fputc(c, f);
                else {
                        /* Pass through well-formed UTF-8, escape stray bytes. */
                        int len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
                        int ok = len > 0;
                        for (int i = 1; ok && i < len; i++)
                                ok = (p[i] & 0xc0) == 0x80;
                        if (ok) {
                                fwrite(p, 1, (size_t) len, f);
                                p += len - 1;
                        } else
                                fprintf(f, "\\u%04x", c);
                }
        }
        fputc('"', f);
}

void json_key(JsonWriter *w, const char *key) {
        before_value(w);
        write_escaped(w->f, key);
        fputs(w->pretty ? ": " : ":", w->f);
        w->after_key = true;
}

void json_string(JsonWriter *w, const char *s) {
        before_value(w);
        if (s)
                write_escaped(w->f, s);
        else
                fputs("null", w->f);
}

void json_u64(JsonWriter *w, uint64_t v) {
        before_value(w);
        fprintf(w->f, "%" PRIu64, v);
}

void json_i64(JsonWriter *w, int64_t v) {
        before_value(w);
        fprintf(w->f, "%" PRIi64, v);
}

void json_double(JsonWriter *w, double v) {
        before_value(w);
        if (isfinite(v))
                fprintf(w->f, "%.6g", v);
        else
                fputs("null", w->f);
}

void json_bool(JsonWriter *w, bool v) {
        before_value(w);
        fputs(v ? "true" : "false", w->f);
}

void json_null(JsonWriter *w) {
        before_value(w);
        fputs("null", w->f);
}

void json_kv_string(JsonWriter *w, const char *key, const char *s) {
        json_key(w, key);
        json_string(w, s);
}
void json_kv_u64(JsonWriter *w, const char *key, uint64_t v) {
        json_key(w, key);
        json_u64(w, v);
}
void json_kv_i64(JsonWriter *w, const char *key, int64_t v) {
        json_key(w, key);
        json_i64(w, v);
}
void json_kv_double(JsonWriter *w, const char *key, double v) {
        json_key(w, key);
        json_double(w, v);
}
void json_kv_bool(JsonWriter *w, const char *key, bool v) {
        json_key(w, key);
        json_bool(w, v);
}
