/* declared_const.c - the __constant__ symbols of a declared kernel filled from the host
 * ("constants", model/kernel_decl.h; Kernel Tuner's cmem_args): values made once per shape on
 * the host, then copied into the module of every kernel that holds the symbol once that module is
 * loaded (each configuration is a module of its own), before the check and outside the timed
 * region. */
#include "families/declared_impl.h"

#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/hash.h"

void kd_consts_clear(kd_consts *cv)
{
    for (size_t c = 0; c < KDECL_MAX_CONSTANTS; c++) {
        free(cv->host[c]);
        cv->host[c] = NULL;
        cv->bytes[c] = 0;
    }
    cv->ready = 0;
}

tune_status kd_consts_make(const kernel_decl *d, const tune_point *p, uint64_t seed, kd_consts *cv,
                           tune_error *err)
{
    if (cv->ready)
        return TUNE_OK;
    for (size_t c = 0; c < d->n_consts; c++) {
        const kdecl_arg *k = &d->consts[c];
        long long bytes = kdecl_const_bytes(k, p, err);
        if (bytes < 0)
            return TUNE_ERR_UNSUPPORTED;
        if (!(cv->host[c] = malloc((size_t)bytes)))
            return tune_error_set(err, TUNE_ERR_NOMEM, k->name, "out of host memory");
        cv->bytes[c] = (size_t)bytes;
        size_t count = (size_t)bytes / kdecl_type_size(k->type);
        tune_status st = kd_fill_host_arg(d, k, p, count, hash_fnv1a_str(seed ^ 0xc0de, k->name),
                                          cv->host[c], err);
        if (st != TUNE_OK)
            return st == TUNE_ERR_IO || st == TUNE_ERR_INVALID ? TUNE_ERR_UNSUPPORTED : st;
    }
    cv->ready = 1;
    return TUNE_OK;
}

tune_status kd_consts_copy(const kernel_decl *d, const family_env *env, const tune_point *cfg,
                           size_t i, const kd_consts *cv, unsigned char *found, tune_error *err)
{
    cudaStream_t stream = (cudaStream_t)env->stream;
    for (size_t c = 0; c < d->n_consts; c++) {
        const kdecl_arg *k = &d->consts[c];
        void *ptr = NULL;
        size_t bytes = 0;
        int r = family_global_at(env->family, env, cfg, i, k->name, &ptr, &bytes, err);
        if (r < 0)
            return err ? err->code : TUNE_ERR_CUDA;
        if (r == 0)
            continue;
        if (cv->bytes[c] > bytes)
            return tune_error_set(err, TUNE_ERR_UNSUPPORTED, k->name,
                                  "constant '%s' is declared as %zu bytes (%zu of %s), but the "
                                  "kernel's __constant__ symbol '%s' holds %zu bytes",
                                  k->name, cv->bytes[c], cv->bytes[c] / kdecl_type_size(k->type),
                                  kdecl_type_name(k->type), k->name, bytes);
        if (cudaMemcpyAsync(ptr, cv->host[c], cv->bytes[c], cudaMemcpyHostToDevice, stream) !=
                cudaSuccess ||
            (bytes > cv->bytes[c] &&
             cudaMemsetAsync((char *)ptr + cv->bytes[c], 0, bytes - cv->bytes[c], stream) !=
                 cudaSuccess) ||
            cudaStreamSynchronize(stream) != cudaSuccess) {
            (void)cudaGetLastError();
            return tune_error_set(err, TUNE_ERR_CUDA, k->name, "cannot copy constant '%s'",
                                  k->name);
        }
        found[c] = 1;
    }
    return TUNE_OK;
}
