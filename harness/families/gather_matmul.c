/* gather_matmul.c - SparQ's gather-matmul ops (DESIGN.md 6.1): batched vector x gathered-matrix
 * products, tuned over `chunk` (columns of n per unit of work) and `threads` (block size). */
#include "family.h"

#include <stdio.h>
#include <string.h>

static const char *const dtypes[] = {"float16", "bfloat16", "float32", NULL};

#define GM_INT_AXIS(nm, lo, help) {nm, FAMILY_AXIS_INT, lo, 2147483647, NULL, NULL, help}
#define GM_COMMON_AXES                                                                             \
    {"dtype", FAMILY_AXIS_STR, 0, 0, dtypes, "\"float16\"", "element type of A, B and the output"}, \
    {"transpose_B", FAMILY_AXIS_BOOL, 0, 1, NULL, "false",                                         \
     "B stored transposed (the seed's transpose_B): (g, n, k_pre) for inner ops, (g, n_pre, k) for outer"}

static const family_axis inner_axes[] = {
    GM_INT_AXIS("g", 1, "batch x heads"),
    GM_INT_AXIS("k_pre", 1, "rows of B to gather from"),
    GM_INT_AXIS("k", 1, "gathered rows (indices per g)"),
    GM_INT_AXIS("n", 1, "columns of B and of the output"),
    GM_COMMON_AXES,
};

static const family_axis outer_axes[] = {
    GM_INT_AXIS("g", 1, "batch x heads"),
    GM_INT_AXIS("k", 1, "rows of B (reduction length)"),
    GM_INT_AXIS("n_pre", 1, "columns of B to gather from"),
    GM_INT_AXIS("n", 1, "gathered columns (indices per g) = output length"),
    GM_COMMON_AXES,
};

static const family_op gm_ops[] = {
    {"gather_inner_bmv", inner_axes, sizeof inner_axes / sizeof inner_axes[0],
     "g * (2 * k + k * n + n) * dsize", "2 * g * k * n",
     "out[g,j] = sum_t A[g,I[g,t]] * B[g,I[g,t],j] (SparQ step 1)"},
    {"gather_inner_matrix_only_bmv", inner_axes, sizeof inner_axes / sizeof inner_axes[0],
     "g * (2 * k + k * n + n) * dsize", "2 * g * k * n",
     "out[g,j] = sum_t A[g,t] * B[g,I[g,t],j] (SparQ step 3, the seed's sweep)"},
    {"gather_outer_bmv", outer_axes, sizeof outer_axes / sizeof outer_axes[0],
     "g * (k + k * n + 2 * n) * dsize", "2 * g * k * n",
     "out[g,j] = sum_t A[g,t] * B[g,t,I[g,j]] (SparQ step 2)"},
};

static const family_axis gm_params[] = {
    {"chunk", FAMILY_AXIS_INT, 1, 4096, NULL, "64", "columns of n per unit of work (block)"},
    {"threads", FAMILY_AXIS_INT, 32, 1024, NULL, "256", "threads per block"},
};

static const family_method gm_methods[] = {
    {"custom", 1, "tune's CUDA kernel"},
    {"gather", 0, "gather kernel + cuBLAS strided-batched GEMM (the torch reference's cost)"},
    {"slice", 0, "cuBLAS on the first k rows (or n columns), contiguous: the no-gather ideal"},
};

const tune_family gather_matmul_family = {
    .name = "gather_matmul",
    .help = "SparQ gather-matmul: batched vector x gathered matrix (DESIGN.md 6.1)",
    .ops = gm_ops,
    .n_ops = sizeof gm_ops / sizeof gm_ops[0],
    .params = gm_params,
    .n_params = sizeof gm_params / sizeof gm_params[0],
    .methods = gm_methods,
    .n_methods = sizeof gm_methods / sizeof gm_methods[0],
};
