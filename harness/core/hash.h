/* hash.h - 64-bit FNV-1a, the one hash of the project: the kernel cache key (two streams with
 * different offsets), the run key's kernel hash and the shard plan's hash.
 *
 *   uint64_t h = HASH_FNV_OFFSET;
 *   h = hash_fnv1a(h, data, size);
 *   h = hash_fnv1a_str(h, "name");           // the string's bytes and its terminating NUL
 *   char hex[17]; hash_hex(h, hex);          // "0123456789abcdef"
 *
 * Callers choose their separators (a NUL, a 0xff byte); the values are part of files tune has
 * written (meta.json's key and plan, cache file names), so they never change.
 */
#ifndef TUNE_HASH_H
#define TUNE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV_OFFSET 0xcbf29ce484222325ull
#define HASH_FNV_PRIME 0x100000001b3ull

/* h after n more bytes of data. */
uint64_t hash_fnv1a(uint64_t h, const void *data, size_t n);
/* h after the bytes of s and its terminating NUL. */
uint64_t hash_fnv1a_str(uint64_t h, const char *s);
/* 16 lower-case hex digits and a NUL into hex; returns hex. */
const char *hash_hex(uint64_t h, char hex[17]);

/* Two streams with different offsets: a 128-bit key (the kernel cache's). Each piece added is
 * followed by a separator byte, so that ("ab", "c") and ("a", "bc") differ. */
typedef struct {
    uint64_t a, b;
} hash128;
#define HASH128_INIT {HASH_FNV_OFFSET, 0x84222325cbf29ce4ull}

void hash128_bytes(hash128 *h, const void *data, size_t n);
/* The bytes of s, without its NUL (the separator ends it). */
void hash128_str(hash128 *h, const char *s);

#endif
