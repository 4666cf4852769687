/* test_half.c - 16-bit floats on the host (core/half.h): exact values, rounding to nearest even,
 * subnormals, overflow, NaN, and every half read back exactly. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/half.h"

Test(half, known_values)
{
    cr_expect_eq(half_from_f32(1.0f), 0x3c00);
    cr_expect_eq(half_from_f32(-2.0f), 0xc000);
    cr_expect_eq(half_from_f32(65504.0f), 0x7bff);  /* the largest half */
    cr_expect_eq(half_from_f32(65520.0f), 0x7c00);  /* rounds to infinity */
    cr_expect_eq(half_from_f32(ldexpf(1, -24)), 0x0001); /* the smallest subnormal */
    cr_expect_eq(half_from_f32(ldexpf(1, -26)), 0x0000); /* below half of it: zero */
    cr_expect_eq(half_from_f32(1.0f + ldexpf(1, -11)), 0x3c00); /* a tie: to even */
    cr_expect_eq(half_from_f32(1.0f + 3 * ldexpf(1, -11)), 0x3c02); /* a tie: to even, up */
    cr_expect_eq(half_to_f32(0x3555), 0x1.554p-2f);
    cr_expect_eq(half_to_f32(0x0200), ldexpf(1, -15)); /* subnormal */
    cr_expect(isinf(half_to_f32(0xfc00)) && half_to_f32(0xfc00) < 0);
    cr_expect(isnan(half_to_f32(half_from_f32(NAN))));
    cr_expect_eq(bf16_from_f32(1.0f), 0x3f80);
    cr_expect_eq(bf16_from_f32(1.0f + ldexpf(1, -8)), 0x3f80); /* a tie: to even */
    cr_expect_eq(bf16_to_f32(0xc040), -3.0f);
    cr_expect(isnan(bf16_to_f32(bf16_from_f32(NAN))));
}

/* Every finite half and bfloat16 converts to float and back to itself. */
Test(half, every_value_round_trips)
{
    for (uint32_t h = 0; h < 65536; h++) {
        if ((h & 0x7c00) != 0x7c00 || (h & 0x3ff) == 0)
            cr_assert_eq(half_from_f32(half_to_f32((uint16_t)h)), h, "half 0x%04x", h);
        if ((h & 0x7f80) != 0x7f80 || (h & 0x7f) == 0)
            cr_assert_eq(bf16_from_f32(bf16_to_f32((uint16_t)h)), h, "bf16 0x%04x", h);
    }
}
