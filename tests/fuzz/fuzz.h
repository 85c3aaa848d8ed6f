/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fuzz targets: each defines LLVMFuzzerTestOneInput(). Built with clang and
 * -Dfuzz=true they link libFuzzer; otherwise tests/fuzz/fuzz-main.c drives
 * them over the seed corpus and the regression inputs, so every build
 * replays every input that ever crashed. A broken invariant aborts, which
 * both drivers report as a failure. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(expr)                                                                      \
        do {                                                                                  \
                if (!(expr)) {                                                                \
                        fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #expr); \
                        abort();                                                              \
                }                                                                             \
        } while (0)

/* The parsers take C strings: the input up to its first NUL, terminated. */
static inline char *fuzz_text(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);
        if (!s)
                abort();
        memcpy(s, data, size);
        s[size] = 0;
        return s;
}

/* True when every byte of a buffer still holds the poison a test put there:
 * the ret_* contract says outputs are written only on success. */
static inline int fuzz_untouched(const void *p, size_t n, uint8_t poison) {
        const uint8_t *b = p;
        for (size_t i = 0; i < n; i++)
                if (b[i] != poison)
                        return 0;
        return 1;
}
