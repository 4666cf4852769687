// faults.cu - fault-injection kernels for testing tune's crash isolation: y = 2 x, with one
// injected fault chosen by FAULT. Device code only, no includes (compiles with NVRTC and nvcc).
//   0 none           the correct kernel
//   1 oob_write      writes far outside any allocation (illegal address: a sticky error)
//   2 trap           executes `trap` (a sticky error)
//   3 hang           never returns (the watchdog must kill it)
//   4 compile_error  does not compile (a static_assert fires at instantiation)
//   5 wrong_answer   one element is off by one (validation must reject it)
//   6 misaligned     a 4-byte store to an odd address (misaligned address: a sticky error)

template <int FAULT>
__global__ void fault_scale(const float *__restrict__ x, float *__restrict__ y, unsigned long long n)
{
    static_assert(FAULT != 4, "deliberate compile error (fault injection: compile_error)");
    const unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = 2.0f * x[i];
        if (FAULT == 5 && i == n / 2)
            v += 1.0f;
        y[i] = v;
    }
    if (i != 0)
        return;
    if (FAULT == 1)
        y[n + (1ull << 40)] = 1.0f;
    if (FAULT == 2)
        asm volatile("trap;");
    if (FAULT == 3)
        while (((volatile const float *)x)[0] != 12345.0f) // never: inputs are in [-2, 2)
            ;
    if (FAULT == 6)
        *(volatile float *)((char *)y + 1) = 1.0f;
}
