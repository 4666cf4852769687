/* half.h - 16-bit floats on the host: IEEE half (float16) and bfloat16 to and from float, with
 * round-to-nearest-even, subnormals, infinities and NaN, for the checks that read a kernel's
 * 16-bit outputs and the inputs written from the host.
 *
 *   uint16_t h = half_from_f32(0.1f);   float f = half_to_f32(h);
 */
#ifndef TUNE_HALF_H
#define TUNE_HALF_H

#include <stdint.h>

uint16_t half_from_f32(float f);
float half_to_f32(uint16_t h);
uint16_t bf16_from_f32(float f);
float bf16_to_f32(uint16_t h);

#endif
