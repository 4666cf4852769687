// ptx.cuh - the inline PTX that moves data into shared memory and orders it, for every kernel of
// tune: cp.async (sm_80: 4, 8 or 16 bytes, with zero fill, commit, wait), mbarriers (sm_90: init
// and its fence, arrive, arrive with an expected transaction count, wait on a phase parity), bulk
// copies and tensor-map boxes that complete on an mbarrier, and the tensor-map prefetch.
// Device code only, no system headers: it compiles with NVRTC and with nvcc unchanged.
//
//   ptx_cp_async<16>(smem, gmem);         // a ring stage's loads ...
//   ptx_cp_async_commit();                // ... as one group
//   ptx_cp_async_wait<STAGES - 2>();      // all but the newest STAGES - 2 groups have landed
//
//   ptx_mbar_init(full, 1); ptx_fence_mbar_init();           // one thread, before __syncthreads
//   ptx_mbar_expect_tx(full, bytes); ptx_bulk_g2s(dst, src, bytes, full); // the producer
//   ptx_mbar_wait(full, phase & 1);                          // the consumers
#pragma once

// The shared-memory address of a generic pointer into shared memory.
__device__ __forceinline__ unsigned ptx_smem_addr(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

// Asynchronous global -> shared copy of BYTES (4, 8 or 16) bytes; 16 bytes bypass L1 (.cg).
template <int BYTES> __device__ __forceinline__ void ptx_cp_async(void *smem, const void *gmem)
{
    const unsigned s = ptx_smem_addr(smem);
    if (BYTES == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(s), "l"(gmem), "n"(BYTES));
}

// The 16-byte copy that writes zeros instead when !valid (gmem must still be a valid address).
__device__ __forceinline__ void ptx_cp_async_zfill(void *smem, const void *gmem, bool valid)
{
    const int n = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(ptx_smem_addr(smem)),
                 "l"(gmem), "r"(n));
}

// The copies issued since the last commit, made one group.
__device__ __forceinline__ void ptx_cp_async_commit() { asm volatile("cp.async.commit_group;"); }

// Waits until at most N of the committed groups are still in flight.
template <int N> __device__ __forceinline__ void ptx_cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

// Waits until every committed group (and the copies not committed yet) has landed.
__device__ __forceinline__ void ptx_cp_async_wait_all() { asm volatile("cp.async.wait_all;"); }

// mbarriers: init (count arrivals per phase), then, once per block before any other thread uses
// them, the fence that makes the inits visible to the cluster and to the async proxy.
__device__ __forceinline__ void ptx_mbar_init(unsigned long long *bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(ptx_smem_addr(bar)), "r"(count)
                 : "memory");
}

__device__ __forceinline__ void ptx_fence_mbar_init()
{
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// An arrival that also expects `bytes` more of transactions (the copies that complete on bar).
__device__ __forceinline__ void ptx_mbar_expect_tx(unsigned long long *bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                     ptx_smem_addr(bar)),
                 "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void ptx_mbar_arrive(unsigned long long *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(ptx_smem_addr(bar)) : "memory");
}

// Waits until the phase of the given parity has completed.
__device__ __forceinline__ void ptx_mbar_wait(unsigned long long *bar, unsigned parity)
{
    unsigned done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done)
                     : "r"(ptx_smem_addr(bar)), "r"(parity)
                     : "memory");
    } while (!done);
}

// Bulk copy of `bytes` (a multiple of 16, both addresses 16-byte aligned) from global to shared
// memory, completing on bar's transaction count.
__device__ __forceinline__ void ptx_bulk_g2s(void *dst, const void *src, unsigned bytes,
                                             unsigned long long *bar)
{
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
            "r"(ptx_smem_addr(dst)),
        "l"(src), "r"(bytes), "r"(ptx_smem_addr(bar))
        : "memory");
}

// A 2-D box of the tensor map at map (a CUtensorMap: a __grid_constant__ kernel parameter) at
// coordinates (c0, c1), innermost first, into shared memory, completing on bar.
__device__ __forceinline__ void ptx_tma_2d(void *dst, const void *map, int c0, int c1,
                                           unsigned long long *bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" ::"r"(ptx_smem_addr(dst)),
                 "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1),
                 "r"(ptx_smem_addr(bar))
                 : "memory");
}

// The same for a 3-D box at (c0, c1, c2).
__device__ __forceinline__ void ptx_tma_3d(void *dst, const void *map, int c0, int c1, int c2,
                                           unsigned long long *bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(ptx_smem_addr(dst)),
                 "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2),
                 "r"(ptx_smem_addr(bar))
                 : "memory");
}

// Fetches the tensor map at map (a __grid_constant__ parameter) ahead of its first use.
__device__ __forceinline__ void ptx_prefetch_tmap(const void *map)
{
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(map))
                 : "memory");
}
