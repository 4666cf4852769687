#include "core/precision.h"

#include <string.h>

static const char *const precision_names[ROOFLINE_N_PRECISIONS] = {"fp32", "tf32", "fp16",
                                                                   "bf16", "fp8",  "int8"};

const char *roofline_precision_str(roofline_precision p)
{
    return (unsigned)p < ROOFLINE_N_PRECISIONS ? precision_names[p] : "?";
}

int roofline_precision_parse(const char *s, roofline_precision *out)
{
    static const struct {
        const char *name;
        roofline_precision p;
    } aliases[] = {
        {"fp32", ROOFLINE_FP32},         {"float32", ROOFLINE_FP32},
        {"float", ROOFLINE_FP32},        {"tf32", ROOFLINE_TF32},
        {"fp16", ROOFLINE_FP16},         {"float16", ROOFLINE_FP16},
        {"half", ROOFLINE_FP16},         {"bf16", ROOFLINE_BF16},
        {"bfloat16", ROOFLINE_BF16},     {"fp8", ROOFLINE_FP8},
        {"float8_e4m3fn", ROOFLINE_FP8}, {"float8_e4m3", ROOFLINE_FP8},
        {"float8_e5m2", ROOFLINE_FP8},   {"e4m3", ROOFLINE_FP8},
        {"e5m2", ROOFLINE_FP8},          {"int8", ROOFLINE_INT8},
    };
    for (size_t i = 0; s && i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(s, aliases[i].name) == 0) {
            *out = aliases[i].p;
            return 0;
        }
    return -1;
}
