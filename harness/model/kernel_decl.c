/* kernel_decl.c - what a declared kernel family does on the CPU: element types, templates
 * rendered at a configuration, the instantiation a method needs, and the declaration freed. */
#include "model/kernel_decl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Everything tune knows of an element type, in one row. */
static const struct {
    const char *name, *alias; /* the name tune writes; the C type a kernel author may write */
    size_t size;
    int is_float;
    const char *fill; /* the device fill of its random inputs (kernels_src/common.cu) */
    const char *npy;  /* the .npy descr it accepts, after the byte-order character */
} kd_types[KDECL_N_TYPES] = {
    [KDECL_F32] = {"float32", "float", 4, 1, "tune_fill_random<float>", "f4"},
    [KDECL_F64] = {"float64", "double", 8, 1, "tune_fill_random<double>", "f8"},
    [KDECL_F16] = {"float16", "half", 2, 1, "tune_fill_random<half_t>", "f2"},
    [KDECL_BF16] = {"bfloat16", "bf16", 2, 1, "tune_fill_random<bf16_t>", "V2"},
    [KDECL_I8] = {"int8", "int8_t", 1, 0, "tune_fill_random<signed char>", "i1"},
    [KDECL_U8] = {"uint8", "uint8_t", 1, 0, "tune_fill_random<unsigned char>", "u1"},
    [KDECL_I16] = {"int16", "int16_t", 2, 0, "tune_fill_random<short>", "i2"},
    [KDECL_U16] = {"uint16", "uint16_t", 2, 0, "tune_fill_random<unsigned short>", "u2"},
    [KDECL_I32] = {"int32", "int", 4, 0, "tune_fill_random<int>", "i4"},
    [KDECL_U32] = {"uint32", "unsigned", 4, 0, "tune_fill_random<unsigned int>", "u4"},
    [KDECL_I64] = {"int64", "int64_t", 8, 0, "tune_fill_random<long long>", "i8"},
    [KDECL_U64] = {"uint64", "uint64_t", 8, 0, "tune_fill_random<unsigned long long>", "u8"},
};

size_t kdecl_type_size(kdecl_type t)
{
    return (unsigned)t < KDECL_N_TYPES ? kd_types[t].size : 0;
}

const char *kdecl_type_name(kdecl_type t)
{
    return (unsigned)t < KDECL_N_TYPES ? kd_types[t].name : "?";
}

int kdecl_type_is_float(kdecl_type t)
{
    return (unsigned)t < KDECL_N_TYPES && kd_types[t].is_float;
}

int kdecl_type_parse(const char *s)
{
    for (int i = 0; i < KDECL_N_TYPES; i++)
        if (strcmp(s, kd_types[i].name) == 0 || strcmp(s, kd_types[i].alias) == 0)
            return i;
    return -1;
}

const char *kdecl_type_list(void)
{
    return "float32, float64, float16, bfloat16, int8, uint8, int16, uint16, int32, uint32, "
           "int64, uint64, or a CUDA vector type of them (float2, float4, half2, int4, uint4...)";
}

/* CUDA's vector types (the CUDA C++ Programming Guide, "Built-in Vector Types"; cuda_fp16.h's
 * half2, cuda_bf16.h's nv_bfloat162): lanes of one element type, laid out one after another. */
static const struct {
    const char *name;
    kdecl_type lane;
    int lanes;
} kd_vectors[] = {
    {"float2", KDECL_F32, 2},     {"float3", KDECL_F32, 3},      {"float4", KDECL_F32, 4},
    {"double2", KDECL_F64, 2},    {"half2", KDECL_F16, 2},       {"bfloat162", KDECL_BF16, 2},
    {"nv_bfloat162", KDECL_BF16, 2}, {"char2", KDECL_I8, 2},     {"char4", KDECL_I8, 4},
    {"uchar2", KDECL_U8, 2},      {"uchar4", KDECL_U8, 4},       {"short2", KDECL_I16, 2},
    {"short4", KDECL_I16, 4},     {"ushort2", KDECL_U16, 2},     {"ushort4", KDECL_U16, 4},
    {"int2", KDECL_I32, 2},       {"int3", KDECL_I32, 3},        {"int4", KDECL_I32, 4},
    {"uint2", KDECL_U32, 2},      {"uint3", KDECL_U32, 3},       {"uint4", KDECL_U32, 4},
    {"longlong2", KDECL_I64, 2},  {"ulonglong2", KDECL_U64, 2},
};

int kdecl_vector_parse(const char *s, int *lanes)
{
    for (size_t i = 0; i < sizeof kd_vectors / sizeof kd_vectors[0]; i++)
        if (strcmp(s, kd_vectors[i].name) == 0) {
            *lanes = kd_vectors[i].lanes;
            return (int)kd_vectors[i].lane;
        }
    return -1;
}

/* Appends n bytes of s to buf (*used bytes of size, NUL-terminated): 0, or -1 when they do not
 * fit (buf unchanged). Rendering runs once per configuration of a searched run's space (a
 * million of them), so it copies instead of formatting. */
static int kd_append(char *buf, size_t size, size_t *used, const char *s, size_t n)
{
    if (n >= size - *used)
        return -1;
    memcpy(buf + *used, s, n);
    *used += n;
    buf[*used] = '\0';
    return 0;
}

/* v as a template writes it into val (size >= 24): an integer in decimal, a float as %.17g, a
 * string as it is. */
static const char *kd_value_text(expr_value v, char *val, size_t size)
{
    if (v.type == EXPR_INT) {
        char digits[24];
        size_t n = 0, k = 0;
        uint64_t u = v.i < 0 ? (uint64_t)0 - (uint64_t)v.i : (uint64_t)v.i;
        do {
            digits[n++] = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        if (v.i < 0)
            val[k++] = '-';
        while (n)
            val[k++] = digits[--n];
        val[k] = '\0';
    } else if (v.type == EXPR_FLOAT) {
        snprintf(val, size, "%.17g", v.f);
    } else {
        expr_value_format(v, val, size);
    }
    return val;
}

int kdecl_render(const kdecl_template *t, const tune_point *p, char *buf, size_t size,
                 tune_error *err)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < t->n; i++) {
        char val[128] = "";
        if (t->exprs[i]) {
            expr_value v;
            if (expr_eval(t->exprs[i], point_lookup, (void *)p, &v, err) != TUNE_OK)
                return -1;
            kd_value_text(v, val, sizeof val);
        }
        if (kd_append(buf, size, &used, t->text[i], strlen(t->text[i])) != 0 ||
            kd_append(buf, size, &used, val, strlen(val)) != 0) {
            tune_error_set(err, TUNE_ERR_INVALID, "kernel", "the text is longer than %zu bytes",
                           size - 1);
            return -1;
        }
    }
    return 0;
}

char *kdecl_path(const kernel_decl *d, const char *rel)
{
    size_t n = strlen(d->dir) + strlen(rel) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s%s%s", rel[0] == '/' ? "" : d->dir, rel[0] == '/' ? "" : "/", rel);
    return p;
}

const kdecl_kernel *kdecl_method_kernel(const kernel_decl *d, const char *method)
{
    if (strcmp(method, KDECL_TUNED) == 0)
        return &d->main;
    if (strcmp(method, KDECL_REFERENCE) == 0)
        return d->ref_is_kernel ? &d->ref : NULL;
    for (size_t i = 0; i < d->n_baselines; i++)
        if (strcmp(method, d->baseline_names[i]) == 0)
            return &d->baselines[i];
    return NULL;
}

const kdecl_kernel *kdecl_method_launch(const kernel_decl *d, const char *method, size_t i)
{
    const kdecl_kernel *k = kdecl_method_kernel(d, method);
    if (!k || i == 0)
        return k;
    return k == &d->main && i <= d->n_after ? &d->after[i - 1] : NULL;
}

size_t kdecl_method_n_launches(const kernel_decl *d, const char *method)
{
    const kdecl_kernel *k = kdecl_method_kernel(d, method);
    return !k ? 0 : k == &d->main ? 1 + d->n_after : 1;
}

int kdecl_method_receives(const kernel_decl *d, const char *method, size_t arg)
{
    for (size_t i = 0, n = kdecl_method_n_launches(d, method); i < n; i++) {
        const kdecl_kernel *k = kdecl_method_launch(d, method, i);
        if (!k->argv)
            return 1;
        for (size_t j = 0; j < k->argc; j++)
            if (k->argv[j] == arg)
                return 1;
    }
    return 0;
}

long long kdecl_const_bytes(const kdecl_arg *c, const tune_point *p, tune_error *err)
{
    expr_value v;
    if (expr_eval(c->count, point_lookup, (void *)p, &v, err) != TUNE_OK)
        return -1;
    long long size = (long long)kdecl_type_size(c->type);
    if (v.type != EXPR_INT) {
        tune_error_set(err, TUNE_ERR_UNSUPPORTED, c->name,
                       "constant '%s': its count is not an integer", c->name);
        return -1;
    }
    if (v.i < 1 || v.i > KDECL_CONSTANT_BYTES / size) {
        tune_error_set(err, TUNE_ERR_UNSUPPORTED, c->name,
                       "constant '%s' has %lld elements of %s; expected 1 to %lld (%d bytes of "
                       "constant memory)",
                       c->name, (long long)v.i, kdecl_type_name(c->type),
                       KDECL_CONSTANT_BYTES / size, KDECL_CONSTANT_BYTES);
        return -1;
    }
    return v.i * size;
}

int kdecl_kernel_ref(const kernel_decl *d, const kdecl_kernel *k, const tune_point *p,
                     family_kernel_ref *ref, char *why, size_t why_size)
{
    tune_error err = {0};
    ref->source = k->source;
    if (kdecl_render(&k->entry, p, ref->name, sizeof ref->name, &err) != 0)
        return family_fail(why, why_size, "entry: %s", err.message);
    size_t used = (size_t)snprintf(ref->options, sizeof ref->options, "%s",
                                   d->options ? d->options : "");
    for (size_t i = 0; i < k->n_defines; i++) {
        char val[512];
        if (kdecl_render(&k->define_values[i], p, val, sizeof val, &err) != 0)
            return family_fail(why, why_size, "define %s: %s", k->define_names[i], err.message);
        if (strchr(val, '\n'))
            return family_fail(why, why_size, "define %s: a newline in its value",
                               k->define_names[i]);
        /* "\n-DNAME=value" (no newline first), whole or not at all */
        const char *name = k->define_names[i];
        size_t n_name = strlen(name), n_val = strlen(val), start = used;
        if ((used ? 1 : 0) + 2 + n_name + 1 + n_val >= sizeof ref->options - used ||
            (used && kd_append(ref->options, sizeof ref->options, &used, "\n", 1) != 0) ||
            kd_append(ref->options, sizeof ref->options, &used, "-D", 2) != 0 ||
            kd_append(ref->options, sizeof ref->options, &used, name, n_name) != 0 ||
            kd_append(ref->options, sizeof ref->options, &used, "=", 1) != 0 ||
            kd_append(ref->options, sizeof ref->options, &used, val, n_val) != 0) {
            ref->options[start] = '\0';
            return family_fail(why, why_size, "the options are longer than %zu bytes",
                               sizeof ref->options - 1);
        }
    }
    return 0;
}

const char *kdecl_fill_kernel(kdecl_type t)
{
    return (unsigned)t < KDECL_N_TYPES ? kd_types[t].fill : NULL;
}

const char *kdecl_type_npy(kdecl_type t)
{
    return (unsigned)t < KDECL_N_TYPES ? kd_types[t].npy : "?";
}

int kdecl_init_on_device(const kdecl_init *in)
{
    return in->kind == KDECL_INIT_NORMAL || in->kind == KDECL_INIT_UNIFORM ||
           in->kind == KDECL_INIT_INTEGERS;
}

int kdecl_arg_uses_fill(const kdecl_arg *a)
{
    return a->is_buffer && (kdecl_init_on_device(&a->init) || a->redraw);
}

/* The device fill kernels of the buffers' random inputs, one per type, from refs[n] on. */
static int kd_fill_refs(const kernel_decl *d, family_kernel_ref *refs, int n, size_t max,
                        char *why, size_t why_size)
{
    for (size_t i = 0; i < d->n_args; i++) {
        if (!kdecl_arg_uses_fill(&d->args[i]))
            continue;
        const char *name = kdecl_fill_kernel(d->args[i].type);
        int seen = 0;
        for (int r = 0; r < n && !seen; r++)
            seen = strcmp(refs[r].name, name) == 0 && strcmp(refs[r].source, KDECL_FILL_SOURCE) == 0;
        if (seen)
            continue;
        if ((size_t)n >= max)
            return family_fail(why, why_size, "too few kernel slots");
        refs[n].source = KDECL_FILL_SOURCE;
        snprintf(refs[n].name, sizeof refs[n].name, "%s", name);
        refs[n].options[0] = '\0';
        n++;
    }
    return n;
}

int kdecl_family_kernels(const tune_family *fam, const tune_point *cfg, family_kernel_ref *refs,
                         size_t max, char *why, size_t why_size)
{
    const kernel_decl *d = fam->data;
    const char *method = point_str(cfg, "method", "");
    size_t n = kdecl_method_n_launches(d, method);
    if (n == 0)
        return family_fail(why, why_size, "unknown method '%s'", method);
    if (max < n + 1)
        return family_fail(why, why_size, "too few kernel slots");
    for (size_t i = 0; i < n; i++)
        if (kdecl_kernel_ref(d, kdecl_method_launch(d, method, i), cfg, &refs[i], why,
                             why_size) != 0)
            return -1;
    refs[0].row = 1;
    if (!d->ref_is_kernel)
        return kd_fill_refs(d, refs, (int)n, max, why, why_size);
    if (kdecl_kernel_ref(d, &d->ref, cfg, &refs[n], why, why_size) != 0)
        return -1;
    return kd_fill_refs(d, refs, (int)n + 1, max, why, why_size);
}

static void kd_template_free(kdecl_template *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->text[i]);
        expr_free(t->exprs[i]);
    }
    free(t->text);
    free(t->exprs);
}

static void kd_kernel_free(kdecl_kernel *k)
{
    free(k->source);
    kd_template_free(&k->entry);
    for (size_t i = 0; i < k->n_defines; i++) {
        free(k->define_names[i]);
        kd_template_free(&k->define_values[i]);
    }
    free(k->define_names);
    free(k->define_values);
    for (int i = 0; i < 3; i++) {
        expr_free(k->grid[i]);
        expr_free(k->block[i]);
    }
    expr_free(k->shared);
    free(k->argv);
}

static void kd_arg_free(kdecl_arg *a)
{
    free(a->name);
    expr_free(a->count);
    expr_free(a->value);
    expr_free(a->init.lo);
    expr_free(a->init.hi);
    kd_template_free(&a->init.npy);
}

static void kd_decl_free(kernel_decl *d)
{
    free(d->dir);
    free(d->options);
    kd_kernel_free(&d->main);
    for (size_t i = 0; i < d->n_after; i++)
        kd_kernel_free(&d->after[i]);
    free(d->after);
    kd_kernel_free(&d->ref);
    for (size_t i = 0; i < d->n_args; i++)
        kd_arg_free(&d->args[i]);
    free(d->args);
    for (size_t i = 0; i < d->n_consts; i++)
        kd_arg_free(&d->consts[i]);
    free(d->consts);
    for (size_t j = 0; d->ref_npy && j < d->n_outputs; j++)
        kd_template_free(&d->ref_npy[j]);
    free(d->ref_npy);
    free(d->outputs);
    for (size_t i = 0; i < d->n_baselines; i++) {
        free(d->baseline_names[i]);
        kd_kernel_free(&d->baselines[i]);
    }
    free(d->baseline_names);
    free(d->baselines);
}

tune_family kdecl_family_make(const kdecl_family *kf, const tune_family *gpu)
{
    return (tune_family){
        .name = gpu->name,
        .help = gpu->help,
        .ops = &kf->op,
        .n_ops = 1,
        .params = kf->params,
        .n_params = kf->n_params,
        .methods = kf->methods,
        .n_methods = kf->n_methods,
        .dtype_axis = NULL, /* each buffer declares its own type */
        .needs_cublas = gpu->needs_cublas,
        .restores_inputs = gpu->restores_inputs,
        .data = &kf->decl,
        .traffic = NULL,
        .n_traffic = 0,
        .traffic_patterns = NULL,
        .n_traffic_patterns = 0,
        .kernels = kdecl_family_kernels,
        .prune = kdecl_family_prune,
        .shape_init = gpu->shape_init,
        .shape_free = gpu->shape_free,
        .prepare = gpu->prepare,
        .before_rep = gpu->before_rep,
        .launch = gpu->launch,
        .check = gpu->check,
    };
}

void kdecl_family_free(kdecl_family *kf)
{
    if (!kf)
        return;
    kd_decl_free(&kf->decl);
    for (size_t i = 0; kf->axes && i < kf->n_axes; i++)
        free((char *)kf->axes[i].name);
    for (size_t i = 0; kf->params && i < kf->n_params; i++)
        free((char *)kf->params[i].name);
    free(kf->axes);
    free(kf->params);
    free(kf->methods);
    free(kf->bytes);
    free(kf);
}
