/* test_hash.c - FNV-1a (core/hash.h): the published test vectors, the string form with its NUL,
 * hex formatting. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/hash.h"

Test(hash, fnv1a_vectors)
{
    /* FNV-1a 64 of "" is the offset basis; of "a" and "foobar", the reference values */
    cr_expect_eq(hash_fnv1a(HASH_FNV_OFFSET, "", 0), 0xcbf29ce484222325ull);
    cr_expect_eq(hash_fnv1a(HASH_FNV_OFFSET, "a", 1), 0xaf63dc4c8601ec8cull);
    cr_expect_eq(hash_fnv1a(HASH_FNV_OFFSET, "foobar", 6), 0x85944171f73967e8ull);
}

Test(hash, incremental_and_str)
{
    uint64_t whole = hash_fnv1a(HASH_FNV_OFFSET, "foobar", 6);
    uint64_t parts = hash_fnv1a(hash_fnv1a(HASH_FNV_OFFSET, "foo", 3), "bar", 3);
    cr_expect_eq(whole, parts);
    uint64_t with_nul = hash_fnv1a(HASH_FNV_OFFSET, "ab", 3);
    cr_expect_eq(hash_fnv1a_str(HASH_FNV_OFFSET, "ab"), with_nul, "the string and its NUL");
    cr_expect_neq(hash_fnv1a_str(hash_fnv1a_str(HASH_FNV_OFFSET, "ab"), "c"),
                  hash_fnv1a_str(hash_fnv1a_str(HASH_FNV_OFFSET, "a"), "bc"));
}

Test(hash, hex)
{
    char hex[17];
    cr_expect_str_eq(hash_hex(0xaf63dc4c8601ec8cull, hex), "af63dc4c8601ec8c");
    cr_expect_str_eq(hash_hex(1, hex), "0000000000000001");
}
