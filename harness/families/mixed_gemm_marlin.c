/* mixed_gemm_marlin.c - the mixed_gemm family's peer baseline `marlin`, its CPU side: Marlin's
 * weight and scale formats (our implementation of what IST-DASLab/marlin's Layer.pack and
 * _get_perms define). No CUDA.
 *
 * The weight format. Marlin's 4-bit value is q = round(w / s) + 8, dequantized as (q - 8) s: the
 * family's symmetric case (z = 8) on the raw nibbles as they are. Its Layer.pack cuts q (k x n)
 * into 16 x 16 tiles, lays each k16 row of tiles out as one row of 16 n values (tile by tile, each
 * tile row-major), permutes every 1024 values of that row (four tiles) by a fixed permutation, and
 * packs each 8 consecutive values into a 32-bit word, the first in the low nibble. The
 * permutation puts, for lane L of a warp (g = L / 4, tq = L % 4) and tile t of the four, in word
 * 4 L + t the eight nibbles of that tile's two mma.m16n8k16 B fragments (columns g and 8 + g) in
 * the order the kernel's dequantization takes them: nibble 2 h + b + 4 o holds tile row
 * 2 tq + o + 8 b, column g + 8 h (o, b, h in {0, 1}). mixed_gemm_marlin_pos is that map in closed
 * form; tests/test_mixed_gemm_marlin.c checks it against the permutation built as _get_perms
 * builds it.
 */
#include <stdint.h>
#include <string.h>

#include "mixed_gemm.h"

void mixed_gemm_marlin_pos(int64_t i, int64_t j, int64_t n, size_t *word, int *shift)
{
    int64_t kt = i / 16, nt = j / 16;
    int r = (int)(i % 16), c = (int)(j % 16);
    int lane = 4 * (c % 8) + (r % 8) / 2;
    *word = (size_t)(kt * 2 * n + nt / 4 * 128 + 4 * lane + nt % 4);
    *shift = 4 * (2 * (c / 8) + r / 8 + 4 * (r % 2));
}

void mixed_gemm_marlin_pack_cpu(const uint8_t *q, int64_t k, int64_t n, uint32_t *out)
{
    memset(out, 0, (size_t)(k * n / 2));
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < n; j++) {
            size_t w;
            int sh;
            mixed_gemm_marlin_pos(i, j, n, &w, &sh);
            out[w] |= (uint32_t)((q[(i * n + j) / 2] >> (4 * (j & 1))) & 0xf) << sh;
        }
}

void mixed_gemm_marlin_pack_scales_cpu(const uint16_t *s, int64_t groups, int64_t n, uint16_t *out)
{
    for (int64_t o = 0; o < groups * n; o++) {
        int64_t src;
        if (groups > 1) { /* _scale_perm: within 64 values, out[8 a + b] = s[a + 8 b] */
            int64_t base = o - o % 64, c = o % 64;
            src = base + c / 8 + 8 * (c % 8);
        } else { /* _scale_perm_single: within 32 values, out[8 a + b] = s[2 a + {0 1 8 9 16 17
                    24 25}[b]] */
            int64_t base = o - o % 32, c = o % 32, b = c % 8;
            src = base + 2 * (c / 8) + b % 2 + 8 * (b / 2);
        }
        out[o] = s[src];
    }
}
