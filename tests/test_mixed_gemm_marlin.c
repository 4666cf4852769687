/* Tests of the mixed_gemm family's Marlin baseline (harness/families/mixed_gemm_marlin.c): the
 * weight and scale packing equals Marlin's format computed step by step from its definition
 * (IST-DASLab/marlin, marlin/__init__.py: _get_perms and Layer.pack), and each word holds the
 * mma.m16n8k16 B fragments Marlin's dequantization expects. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "families/mixed_gemm.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint32_t rnd32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static uint8_t nibble(const uint8_t *q, int64_t n, int64_t i, int64_t j)
{
    return (q[(i * n + j) / 2] >> (4 * (j & 1))) & 0xf;
}

/* _get_perms' weight permutation, built as the Python builds it: per lane i, the values of
 * its two B fragments' rows in each of four tiles, then every 8 reordered by `interleave`. */
static void marlin_perm(int perm[1024])
{
    int pre[1024], n = 0;
    for (int i = 0; i < 32; i++) {
        int perm1[8], m = 0, col = i / 4;
        for (int block = 0; block < 2; block++) {
            const int rows[4] = {2 * (i % 4), 2 * (i % 4) + 1, 2 * (i % 4 + 4),
                                 2 * (i % 4 + 4) + 1};
            for (int r = 0; r < 4; r++)
                perm1[m++] = 16 * rows[r] + col + 8 * block;
        }
        for (int j = 0; j < 4; j++)
            for (int t = 0; t < 8; t++)
                pre[n++] = perm1[t] + 256 * j;
    }
    const int interleave[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    for (int b = 0; b < 128; b++)
        for (int u = 0; u < 8; u++)
            perm[8 * b + u] = pre[8 * b + interleave[u]];
}

/* Layer.pack on raw q (k x n), step by step: 16 x 16 tiles laid out as rows of k / 16, each
 * 1024 values of a row permuted, 8 values per word (the first in the low nibble). */
static void marlin_pack_by_definition(const uint8_t *q, int64_t k, int64_t n, uint32_t *out)
{
    int perm[1024];
    marlin_perm(perm);
    int64_t len = 16 * n;
    uint8_t *res = malloc((size_t)len), *res2 = malloc((size_t)len);
    for (int64_t kt = 0; kt < k / 16; kt++) {
        /* w.reshape((k/16, 16, n/16, 16)).permute((0, 2, 1, 3)).reshape((k/16, 16 n)) */
        for (int64_t nt = 0; nt < n / 16; nt++)
            for (int r = 0; r < 16; r++)
                for (int c = 0; c < 16; c++)
                    res[nt * 256 + r * 16 + c] = nibble(q, n, kt * 16 + r, nt * 16 + c);
        /* res.reshape((-1, 1024))[:, perm] */
        for (int64_t e = 0; e < len; e++)
            res2[e] = res[e - e % 1024 + perm[e % 1024]];
        /* q |= res[:, i::8] << 4 i */
        for (int64_t w = 0; w < len / 8; w++) {
            uint32_t v = 0;
            for (int i = 0; i < 8; i++)
                v |= (uint32_t)res2[8 * w + i] << (4 * i);
            out[kt * (len / 8) + w] = v;
        }
    }
    free(res);
    free(res2);
}

Test(marlin, permutation_is_a_permutation)
{
    int perm[1024], seen[1024] = {0};
    marlin_perm(perm);
    for (int i = 0; i < 1024; i++) {
        cr_assert(perm[i] >= 0 && perm[i] < 1024);
        seen[perm[i]]++;
    }
    for (int i = 0; i < 1024; i++)
        cr_assert_eq(seen[i], 1, "value %d appears %d times", i, seen[i]);
}

/* k = 128, n = 256 (one k16 row of 16 tiles per 16 rows; every nibble), then 256 x 512. */
Test(marlin, weight_packing_follows_layer_pack)
{
    const int64_t shapes[2][2] = {{128, 256}, {256, 512}};
    for (int sh = 0; sh < 2; sh++) {
        int64_t k = shapes[sh][0], n = shapes[sh][1];
        size_t bytes = (size_t)(k * n / 2);
        uint8_t *q = malloc(bytes);
        uint32_t *got = malloc(bytes), *want = malloc(bytes);
        for (size_t i = 0; i < bytes; i++)
            q[i] = (uint8_t)rnd32();
        mixed_gemm_marlin_pack_cpu(q, k, n, got);
        marlin_pack_by_definition(q, k, n, want);
        size_t bad = 0, first = SIZE_MAX;
        for (size_t w = 0; w < bytes / 4; w++)
            for (int i = 0; i < 8; i++)
                if (((got[w] >> (4 * i)) & 0xf) != ((want[w] >> (4 * i)) & 0xf)) {
                    bad++;
                    first = first == SIZE_MAX ? w : first;
                }
        cr_expect_eq(bad, 0, "k = %lld, n = %lld: %zu of %zu nibbles differ (first in word %zu)",
                     (long long)k, (long long)n, bad, bytes * 2, first);
        free(q);
        free(got);
        free(want);
    }
}

/* What Marlin's kernel takes from word 4 L + t of a 64-column chunk of a k16 row (lane L, g =
 * L / 4, tq = L % 4, tile t): its dequantization turns the nibble pairs (0, 4), (1, 5) into
 * the B fragment registers b0, b1 of columns g of the tile (b0: rows 2 tq, 2 tq + 1; b1: rows
 * 2 tq + 8, 2 tq + 9; PTX ISA, mma.m16n8k16), then (2, 6), (3, 7) for columns 8 + g. */
Test(marlin, words_hold_the_mma_fragments)
{
    const int64_t k = 64, n = 256;
    uint8_t *q = malloc(k * n / 2);
    uint32_t *p = malloc(k * n / 2);
    for (int64_t i = 0; i < k * n / 2; i++)
        q[i] = (uint8_t)rnd32();
    mixed_gemm_marlin_pack_cpu(q, k, n, p);
    int64_t checked = 0;
    for (int64_t kt = 0; kt < k / 16; kt++)
        for (int64_t chunk = 0; chunk < n / 64; chunk++)
            for (int lane = 0; lane < 32; lane++)
                for (int t = 0; t < 4; t++) {
                    uint32_t w = p[kt * 2 * n + chunk * 128 + 4 * lane + t];
                    int g = lane / 4, tq = lane % 4;
                    for (int h = 0; h < 2; h++)
                        for (int b = 0; b < 2; b++)
                            for (int o = 0; o < 2; o++) {
                                int64_t row = kt * 16 + 2 * tq + o + 8 * b;
                                int64_t col = chunk * 64 + t * 16 + g + 8 * h;
                                int nib = 2 * h + b + 4 * o;
                                cr_assert_eq((w >> (4 * nib)) & 0xf, nibble(q, n, row, col),
                                             "row %lld col %lld", (long long)row, (long long)col);
                                checked++;
                            }
                }
    cr_expect_eq(checked, k * n);
    free(q);
    free(p);
}

/* _scale_perm (groups > 1) and _scale_perm_single (one group per column), built as the Python
 * builds them, applied to every 64 (32) values of the scales. */
Test(marlin, scale_permutations_follow_layer_pack)
{
    int perm[64], single[32], a = 0, b = 0;
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            perm[a++] = i + 8 * j;
    const int offs[8] = {0, 1, 8, 9, 16, 17, 24, 25};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++)
            single[b++] = 2 * i + offs[j];
    const int64_t n = 256;
    uint16_t s[2 * 256], got[2 * 256];
    for (int i = 0; i < 2 * n; i++)
        s[i] = (uint16_t)(1000 + i);
    mixed_gemm_marlin_pack_scales_cpu(s, 2, n, got); /* k = 256, group 128 */
    for (int64_t o = 0; o < 2 * n; o++)
        cr_assert_eq(got[o], s[o - o % 64 + perm[o % 64]], "grouped: value %lld", (long long)o);
    mixed_gemm_marlin_pack_scales_cpu(s, 1, n, got); /* one group: k = 128 with group 128 too */
    for (int64_t o = 0; o < n; o++)
        cr_assert_eq(got[o], s[o - o % 32 + single[o % 32]], "per column: value %lld",
                     (long long)o);
}
