/* mixed_gemm.h - the mixed-input GEMM family's CPU packing (the reference the GPU packing and the
 * tests are checked against). Layouts: kernels_src/mixed_gemm.cuh.
 *
 *   uint32_t *packed = malloc(k * n / 2);
 *   mixed_gemm_pack_cpu(q, k, n, packed);     // q: k x n nibbles, two per byte along n
 */
#ifndef TUNE_MIXED_GEMM_H
#define TUNE_MIXED_GEMM_H

#include <stddef.h>
#include <stdint.h>

/* Word index and bit offset of raw q[i][j] in the packed weight (n a multiple of 64). */
void mixed_gemm_packed_pos(int64_t i, int64_t j, int64_t n, size_t *word, int *shift);
/* Packs raw q (k x n nibbles; k % 16 == 0, n % 64 == 0) into out (k * n / 8 words). */
void mixed_gemm_pack_cpu(const uint8_t *q, int64_t k, int64_t n, uint32_t *out);
/* The inverse: raw q (k * n / 2 bytes) from the packed words. */
void mixed_gemm_unpack_cpu(const uint32_t *packed, int64_t k, int64_t n, uint8_t *q);
/* Permuted scales: within every 64 columns packed column 8g + t holds raw column 8t + g. */
void mixed_gemm_pack_scales_cpu(const uint16_t *s, int64_t groups, int64_t n, uint16_t *out);

/* Marlin's formats (IST-DASLab/marlin, Layer.pack; mixed_gemm_marlin.c), for the `marlin`
 * baseline: word index and bit offset of raw q[i][j] (n a multiple of 64); raw q (k x n nibbles,
 * k % 16 == 0) packed into out (k / 16 rows of 2 n words); scales ((groups x n) row-major)
 * permuted into out as Marlin reads them: within 64 values when groups > 1 (grouped), within 32
 * when groups == 1 (one group per column). */
void mixed_gemm_marlin_pos(int64_t i, int64_t j, int64_t n, size_t *word, int *shift);
void mixed_gemm_marlin_pack_cpu(const uint8_t *q, int64_t k, int64_t n, uint32_t *out);
void mixed_gemm_marlin_pack_scales_cpu(const uint16_t *s, int64_t groups, int64_t n, uint16_t *out);

#endif
