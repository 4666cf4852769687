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
