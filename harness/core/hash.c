#include "core/hash.h"

#include <stdio.h>
#include <string.h>

uint64_t hash_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * HASH_FNV_PRIME;
    return h;
}

uint64_t hash_fnv1a_str(uint64_t h, const char *s)
{
    return hash_fnv1a(h, s, strlen(s) + 1);
}

const char *hash_hex(uint64_t h, char hex[17])
{
    snprintf(hex, 17, "%016llx", (unsigned long long)h);
    return hex;
}

void hash128_bytes(hash128 *h, const void *data, size_t n)
{
    h->a = hash_fnv1a(h->a, data, n);
    h->b = hash_fnv1a(h->b, data, n);
    h->a = hash_fnv1a(h->a, "\xff", 1);
    h->b = hash_fnv1a(h->b, "\xfe", 1);
}

void hash128_str(hash128 *h, const char *s)
{
    hash128_bytes(h, s, strlen(s));
}
