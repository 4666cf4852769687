/* half.c - 16-bit floats on the host (core/half.h). */
#include "core/half.h"

#include <math.h>
#include <string.h>

uint16_t half_from_f32(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, e = (x >> 23) & 0xff, m = x & 0x7fffff;
    if (e == 0xff)
        return (uint16_t)(sign | 0x7c00 | (m ? 0x200 : 0));
    int ex = (int)e - 127 + 15;
    if (ex >= 31)
        return (uint16_t)(sign | 0x7c00);
    if (ex <= 0) { /* subnormal or zero */
        if (ex < -10)
            return (uint16_t)sign;
        m |= 0x800000;
        uint32_t shift = (uint32_t)(14 - ex), half = m >> shift, rem = m & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        half += rem > mid || (rem == mid && (half & 1));
        return (uint16_t)(sign | half);
    }
    uint32_t h = sign | (uint32_t)ex << 10 | m >> 13, rem = m & 0x1fff;
    h += rem > 0x1000 || (rem == 0x1000 && (h & 1)); /* a carry into the exponent is right */
    return (uint16_t)h;
}

float half_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, x;
    if (e == 0) {
        float f = ldexpf((float)m, -24);
        return sign ? -f : f;
    }
    x = e == 31 ? sign | 0x7f800000 | m << 13 : sign | (e - 15 + 127) << 23 | m << 13;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

uint16_t bf16_from_f32(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

float bf16_to_f32(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}
