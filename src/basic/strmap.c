/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"

static uint8_t seed[16] = { 0x6b, 0x73, 0x6d, 0x74, 0x75, 0x6e, 0x65, 0x64,
                            0x32, 0x2d, 0x73, 0x74, 0x72, 0x6d, 0x61, 0x70 };

void strmap_set_seed(const uint8_t s[16]) {
        memcpy(seed, s, sizeof seed);
}

#define ROTL(x, b) (uint64_t) (((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                        \
        do {                                                                            \
                v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);              \
                v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                                  \
                v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                                  \
                v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);              \
        } while (0)

static uint64_t le64(const uint8_t *p) {
        uint64_t v = 0;
        for (int i = 7; i >= 0; i--)
                v = v << 8 | p[i];
        return v;
}

/* SipHash-1-3 (one compression round, three finalisation rounds), as
 * Rust's and Python's hash tables use it. */
uint64_t siphash13(const void *data, size_t len, const uint8_t key[16]) {
        const uint8_t *in = data;
        uint64_t k0 = le64(key), k1 = le64(key + 8);
        uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL,
                 v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
        size_t i = 0;

        for (; i + 8 <= len; i += 8) {
                uint64_t m = le64(in + i);
                v3 ^= m;
                SIPROUND;
                v0 ^= m;
        }
        uint64_t b = (uint64_t) len << 56;
        for (size_t j = 0; i + j < len; j++)
                b |= (uint64_t) in[i + j] << (8 * j);
        v3 ^= b;
        SIPROUND;
        v0 ^= b;
        v2 ^= 0xff;
        SIPROUND;
        SIPROUND;
        SIPROUND;
        return v0 ^ v1 ^ v2 ^ v3;
}

/* Finds key's slot, or the empty one where it would go. */
static StrMapSlot *lookup(StrMap *m, const char *key, uint64_t h) {
        size_t mask = m->n_slots - 1;
        for (size_t i = (size_t) h & mask;; i = (i + 1) & mask) {
                StrMapSlot *s = &m->slots[i];
                m->probes++;
                if (!s->key || (s->hash == h && strcmp(s->key, key) == 0))
                        return s;
        }
}

static int grow(StrMap *m) {
        size_t n = m->n_slots ? m->n_slots * 2 : 64;
        StrMapSlot *old = m->slots, *slots = calloc(n, sizeof *slots);
        size_t n_old = m->n_slots;

        if (!slots)
                return -ENOMEM;
        m->slots = slots;
        m->n_slots = n;
        for (size_t i = 0; i < n_old; i++)
                if (old[i].key)
                        *lookup(m, old[i].key, old[i].hash) = old[i];
        free(old);
        return 0;
}

int strmap_put(StrMap *m, const char *key, size_t value) {
        /* at most half full: probe runs stay short */
        if ((m->n + 1) * 2 > m->n_slots) {
                int r = grow(m);
                if (r < 0)
                        return r;
        }
        uint64_t h = siphash13(key, strlen(key), seed);
        StrMapSlot *s = lookup(m, key, h);
        if (!s->key) {
                *s = (StrMapSlot) { .key = key, .hash = h };
                m->n++;
        }
        s->value = value;
        return 0;
}

bool strmap_get(StrMap *m, const char *key, size_t *ret) {
        if (m->n == 0)
                return false;
        StrMapSlot *s = lookup(m, key, siphash13(key, strlen(key), seed));
        if (!s->key)
                return false;
        *ret = s->value;
        return true;
}

void strmap_done(StrMap *m) {
        free(m->slots);
        *m = (StrMap) {};
}
