/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A map from strings to indexes, for grouping by names that hostile users
 * choose (cgroup paths under a delegated subtree, unit names): open
 * addressing with linear probing over a keyed hash (SipHash-1-3), so that
 * nobody who does not know the key can make names collide and the map
 * quadratic. The key is strmap_seed's, which the daemon sets once from
 * getrandom() at start (a fixed one until then, for tests). Keys are
 * borrowed: they must outlive the map and not change. */

typedef struct StrMapSlot {
        const char *key;                /* NULL: empty */
        uint64_t hash;
        size_t value;
} StrMapSlot;

typedef struct StrMap {
        StrMapSlot *slots;
        size_t n, n_slots;
        uint64_t probes;                /* slots looked at, over all calls: what tests of cost count */
} StrMap;

void strmap_set_seed(const uint8_t seed[16]);

/* Adds key -> value; a key already there gets the new value. -ENOMEM. */
int strmap_put(StrMap *m, const char *key, size_t value);
/* The value of key, or false when it is not there. */
bool strmap_get(StrMap *m, const char *key, size_t *ret);
void strmap_done(StrMap *m);

uint64_t siphash13(const void *data, size_t len, const uint8_t key[16]);
