// common.cuh - element types, conversions and vector loads shared by tune's kernel sources.
// Device code only, no system headers: it compiles with NVRTC and with nvcc unchanged.
// half_t and bf16_t are storage types (16 bits); arithmetic is done in fp32.
#pragma once

struct half_t {
    unsigned short x;
};
struct bf16_t {
    unsigned short x;
};

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(half_t v)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.x));
    return f;
}
__device__ __forceinline__ float to_f32(bf16_t v) { return __uint_as_float(((unsigned)v.x) << 16); }

template <typename T> __device__ __forceinline__ T from_f32(float f);
template <> __device__ __forceinline__ float from_f32<float>(float f) { return f; }
template <> __device__ __forceinline__ half_t from_f32<half_t>(float f)
{
    half_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.x) : "f"(f));
    return h;
}
template <> __device__ __forceinline__ bf16_t from_f32<bf16_t>(float f)
{
    bf16_t h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.x) : "f"(f));
    return h;
}

// Raw vector of BYTES bytes, loaded with one instruction through the read-only path.
template <int BYTES> struct raw_vec;
template <> struct raw_vec<2> {
    unsigned short w;
};
template <> struct raw_vec<4> {
    unsigned w;
};
template <> struct raw_vec<8> {
    unsigned w[2];
};
template <> struct raw_vec<16> {
    unsigned w[4];
};

__device__ __forceinline__ void ld_nc(raw_vec<2> &v, const void *p)
{
    asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(v.w) : "l"(p));
}
__device__ __forceinline__ void ld_nc(raw_vec<4> &v, const void *p)
{
    asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(v.w) : "l"(p));
}
__device__ __forceinline__ void ld_nc(raw_vec<8> &v, const void *p)
{
    asm volatile("ld.global.nc.v2.u32 {%0, %1}, [%2];" : "=r"(v.w[0]), "=r"(v.w[1]) : "l"(p));
}
__device__ __forceinline__ void ld_nc(raw_vec<16> &v, const void *p)
{
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3])
                 : "l"(p));
}

// Widens a raw vector of VEC elements of T to fp32.
template <typename T, int VEC>
__device__ __forceinline__ void widen_f32(const raw_vec<VEC * (int)sizeof(T)> &v, float (&out)[VEC])
{
    const T *e = reinterpret_cast<const T *>(&v);
#pragma unroll
    for (int i = 0; i < VEC; i++)
        out[i] = to_f32(e[i]);
}

// Loads VEC consecutive elements at p (aligned to VEC * sizeof(T)) and widens them to fp32.
template <typename T, int VEC> __device__ __forceinline__ void load_f32(const T *p, float (&out)[VEC])
{
    raw_vec<VEC * (int)sizeof(T)> v;
    ld_nc(v, p);
    const T *e = reinterpret_cast<const T *>(&v);
#pragma unroll
    for (int i = 0; i < VEC; i++)
        out[i] = to_f32(e[i]);
}

template <typename T> __device__ __forceinline__ float load1_f32(const T *p)
{
    float f[1];
    load_f32<T, 1>(p, f);
    return f[0];
}
