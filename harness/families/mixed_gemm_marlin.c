/* mixed_gemm_marlin.c - the mixed_gemm family's peer baseline `marlin` (docs/mixed_gemm.md,
 * "Baselines"), its CPU side: Marlin's weight and scale formats (our implementation of what
 * IST-DASLab/marlin's Layer.pack and _get_perms define), the shapes Marlin runs, and its library
 * (built by scripts/peers/marlin.sh, named by TUNE_MARLIN_LIB, loaded with dlopen). No CUDA: the
 * family's GPU side (mixed_gemm.c) uploads what this packs and calls the library's entry point.
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
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mixed_gemm.h"
#include "mixed_gemm_impl.h"

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
    mg_pack_nibbles(q, k, n, out, mixed_gemm_marlin_pos);
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

int mg_marlin_shape(const mg_desc *d, char *why, size_t why_size)
{
    if (d->bf16)
        return family_fail(why, why_size, "marlin: dtype bfloat16 (Marlin multiplies float16)");
    if (d->zp)
        return family_fail(why, why_size,
                           "marlin: zero points (Marlin's weights are symmetric, z = 8)");
    if (d->k % 128 != 0)
        return family_fail(why, why_size, "marlin: k = %lld is not a multiple of 128",
                           (long long)d->k);
    if (d->n % 256 != 0)
        return family_fail(why, why_size, "marlin: n = %lld is not a multiple of 256",
                           (long long)d->n);
    if (d->g_eff != 128 && d->g_eff != d->k)
        return family_fail(why, why_size,
                           "marlin: group %lld (Marlin takes 128 or one group per column)",
                           (long long)d->group);
    return 0;
}

mg_marlin_fn mg_marlin_open(char *why, size_t why_size)
{
    const char *path = getenv(MG_MARLIN_ENV);
    if (!path || !*path) {
        family_fail(why, why_size,
                    "marlin: " MG_MARLIN_ENV " is not set (a library built by "
                    "scripts/peers/marlin.sh)");
        return NULL;
    }
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) { /* a folder, a FIFO, a device */
        family_fail(why, why_size, "marlin: " MG_MARLIN_ENV "=%s is not a regular file", path);
        return NULL;
    }
    /* RTLD_NODELETE: the handle's count drops, the library stays (kernels() asks per
     * configuration; its kernels may still be queued when a shape's state is freed) */
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib) {
        const char *e = dlerror();
        family_fail(why, why_size, "marlin: cannot load " MG_MARLIN_ENV "=%s: %s", path,
                    e ? e : "unknown error");
        return NULL;
    }
    dlerror();
    mg_marlin_fn fn = (mg_marlin_fn)dlsym(lib, MG_MARLIN_SYMBOL);
    const char *e = dlerror();
    if (!fn || e) /* the message before dlclose, which may reuse its buffer */
        family_fail(why, why_size,
                    "marlin: " MG_MARLIN_ENV "=%s has no " MG_MARLIN_SYMBOL
                    " (%s); build it with scripts/peers/marlin.sh",
                    path, e ? e : "a null symbol");
    dlclose(lib);
    return fn && !e ? fn : NULL;
}
