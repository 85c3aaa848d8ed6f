/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* A small streaming JSON writer for --json output: objects and arrays nest,
 * commas are placed automatically, strings are escaped (control characters
 * and invalid UTF-8 bytes as \u00XX), so hostile process names stay valid. */
typedef struct JsonWriter {
        FILE *f;
        int depth;
        bool need_comma[32];
        bool after_key;
        bool pretty;
} JsonWriter;

void json_init(JsonWriter *w, FILE *f, bool pretty);
void json_begin_object(JsonWriter *w);
void json_end_object(JsonWriter *w);
void json_begin_array(JsonWriter *w);
void json_end_array(JsonWriter *w);
void json_key(JsonWriter *w, const char *key);
void json_string(JsonWriter *w, const char *s); /* NULL writes null */
void json_u64(JsonWriter *w, uint64_t v);
void json_i64(JsonWriter *w, int64_t v);
void json_double(JsonWriter *w, double v);
void json_bool(JsonWriter *w, bool v);
void json_null(JsonWriter *w);
/* key + value shorthands */
void json_kv_string(JsonWriter *w, const char *key, const char *s);
void json_kv_u64(JsonWriter *w, const char *key, uint64_t v);
void json_kv_i64(JsonWriter *w, const char *key, int64_t v);
void json_kv_double(JsonWriter *w, const char *key, double v);
void json_kv_bool(JsonWriter *w, const char *key, bool v);
