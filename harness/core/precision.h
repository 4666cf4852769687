/* precision.h - the numeric precisions of a compute ceiling (roofline_precision): what a GEMM rate
 * is measured in (store/calibration.h), what the specs table lists (analysis/roofline_specs.h) and
 * what a row's dtype axis names (analysis/roofline.h).
 *
 *   roofline_precision p;
 *   if (roofline_precision_parse("bfloat16", &p) == 0)
 *       printf("%s\n", roofline_precision_str(p));   // "bf16"
 */
#ifndef TUNE_PRECISION_H
#define TUNE_PRECISION_H

typedef enum {
    ROOFLINE_FP32 = 0, /* CUDA cores (cuBLAS SGEMM without TF32) */
    ROOFLINE_TF32,
    ROOFLINE_FP16, /* tensor cores; the fp16 and bf16 rates are with fp32 accumulation */
    ROOFLINE_BF16,
    ROOFLINE_FP8,
    ROOFLINE_INT8,
    ROOFLINE_N_PRECISIONS
} roofline_precision;

/* "fp32", "tf32", "fp16", "bf16", "fp8", "int8". */
const char *roofline_precision_str(roofline_precision p);
/* Those names and dtype names: "float32", "float16", "half", "bfloat16", "float8_e4m3fn", ...
 * 0 and *out, or -1 when unknown. */
int roofline_precision_parse(const char *s, roofline_precision *out);

#endif
