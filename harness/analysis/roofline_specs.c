#include "analysis/roofline_specs.h"

#include <ctype.h>
#include <fnmatch.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "core/jsonloc.h"


struct roofline_specs {
    json_t *root; /* owns every string the entries borrow */
    roofline_gpu *gpus;
    size_t n;
};

typedef struct {
    const char *file, *text;
    tune_error *err;
} specs_ctx;

static tune_status specs_fail(const specs_ctx *cx, const char *path, const char *fmt,
                              const char *what)
{
    int line = 0, col = 0;
    char where[512];
    if (jsonloc_find(cx->text, path, JSONLOC_VALUE, &line, &col) == 0 ||
        jsonloc_find(cx->text, path, JSONLOC_KEY, &line, &col) == 0)
        snprintf(where, sizeof where, "%s:%d:%d: %s", cx->file, line, col, path);
    else
        snprintf(where, sizeof where, "%s: %s", cx->file, path);
    return tune_error_set(cx->err, TUNE_ERR_INVALID, where, fmt, what);
}

/* A member that must be a positive number (or null when null_ok); NAN for null. */
static int get_positive(const specs_ctx *cx, json_t *obj, const char *base, const char *key,
                        int null_ok, double *out)
{
    char path[256];
    snprintf(path, sizeof path, "%s", base);
    jsonloc_path_key(path, sizeof path, key);
    json_t *v = json_object_get(obj, key);
    if (!v)
        return specs_fail(cx, base, "missing \"%s\"", key), -1;
    if (json_is_null(v) && null_ok) {
        *out = NAN;
        return 0;
    }
    if (!json_is_number(v) || !(json_number_value(v) > 0))
        return specs_fail(cx, path, "expected a positive number%s", null_ok ? " or null" : ""), -1;
    *out = json_number_value(v);
    return 0;
}

static int get_string(const specs_ctx *cx, json_t *obj, const char *base, const char *key,
                      const char **out)
{
    char path[256];
    snprintf(path, sizeof path, "%s", base);
    jsonloc_path_key(path, sizeof path, key);
    json_t *v = json_object_get(obj, key);
    if (!v)
        return specs_fail(cx, base, "missing \"%s\"", key), -1;
    if (!json_is_string(v) || !*json_string_value(v))
        return specs_fail(cx, path, "expected a non-empty string%s", ""), -1;
    *out = json_string_value(v);
    return 0;
}

static int parse_gpu(const specs_ctx *cx, json_t *e, const char *base, double launch_s,
                     roofline_gpu *g)
{
    char path[256];
    if (!json_is_object(e))
        return specs_fail(cx, base, "expected an object%s", ""), -1;
    g->launch_s = launch_s;
    if (get_string(cx, e, base, "name", &g->name) != 0)
        return -1;
    json_t *m = json_object_get(e, "match");
    snprintf(path, sizeof path, "%s.match", base);
    if (!json_is_array(m) || json_array_size(m) == 0 || json_array_size(m) > ROOFLINE_MAX_PATTERNS)
        return specs_fail(cx, m ? path : base,
                          "expected \"match\": an array of 1 to 8 name patterns%s", ""),
               -1;
    size_t i;
    json_t *v;
    json_array_foreach(m, i, v)
    {
        if (!json_is_string(v) || !*json_string_value(v)) {
            jsonloc_path_index(path, sizeof path, i);
            return specs_fail(cx, path, "expected a non-empty string%s", ""), -1;
        }
        g->match[g->n_match++] = json_string_value(v);
    }
    if (get_positive(cx, e, base, "mem_bw", 0, &g->mem_bw) != 0)
        return -1;
    json_t *f = json_object_get(e, "flops");
    snprintf(path, sizeof path, "%s.flops", base);
    if (!json_is_object(f))
        return specs_fail(cx, f ? path : base,
                          "expected \"flops\": an object of rates per precision%s", ""),
               -1;
    for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++)
        if (get_positive(cx, f, path, roofline_precision_str((roofline_precision)p), p != ROOFLINE_FP32, &g->flops[p]) != 0)
            return -1;
    double sm, l2;
    if (get_positive(cx, e, base, "sm_count", 0, &sm) != 0 ||
        get_positive(cx, e, base, "l2_bytes", 0, &l2) != 0)
        return -1;
    g->sm_count = (int)sm;
    g->l2_bytes = (size_t)l2;
    json_t *a = json_object_get(e, "achievable");
    snprintf(path, sizeof path, "%s.achievable", base);
    if (!json_is_object(a))
        return specs_fail(cx, a ? path : base,
                          "expected \"achievable\": {\"memory\", \"matmul\"}%s", ""),
               -1;
    if (get_positive(cx, a, path, "memory", 0, &g->frac_memory) != 0 ||
        get_positive(cx, a, path, "matmul", 0, &g->frac_matmul) != 0)
        return -1;
    if (g->frac_memory > 1 || g->frac_matmul > 1) {
        jsonloc_path_key(path, sizeof path, g->frac_memory > 1 ? "memory" : "matmul");
        return specs_fail(cx, path, "an achievable fraction is at most 1%s", ""), -1;
    }
    json_t *s = json_object_get(e, "source");
    snprintf(path, sizeof path, "%s.source", base);
    if (!json_is_object(s))
        return specs_fail(cx, s ? path : base,
                          "expected \"source\": an object citing each figure%s", ""),
               -1;
    if (get_string(cx, s, path, "mem_bw", &g->source_mem_bw) != 0 ||
        get_string(cx, s, path, "flops", &g->source_flops) != 0 ||
        get_string(cx, s, path, "sm_count", &g->source_sm_count) != 0 ||
        get_string(cx, s, path, "l2_bytes", &g->source_l2) != 0 ||
        get_string(cx, s, path, "achievable", &g->source_achievable) != 0)
        return -1;
    return 0;
}


roofline_specs *roofline_specs_load(const char *path, tune_error *err)
{
    char dir[PATH_MAX], dflt[PATH_MAX + 16];
    if (!path) {
        if (!roofline_find_data_dir(dir, sizeof dir)) {
            tune_error_set(err, TUNE_ERR_IO, "data/gpus.json",
                           "cannot find the data folder (set TUNE_DATA_DIR)");
            return NULL;
        }
        snprintf(dflt, sizeof dflt, "%s/gpus.json", dir);
        path = dflt;
    }
    char *text = tune_read_file(path, NULL, NULL);
    if (!text) {
        tune_error_set(err, TUNE_ERR_IO, path, "cannot read");
        return NULL;
    }
    roofline_specs *s = calloc(1, sizeof *s);
    json_error_t je;
    specs_ctx cx = {path, text, err};
    if (!s) {
        tune_error_set(err, TUNE_ERR_NOMEM, path, "out of memory");
        goto fail;
    }
    if (!(s->root = json_loads(text, JSON_REJECT_DUPLICATES, &je))) {
        char where[PATH_MAX + 32];
        snprintf(where, sizeof where, "%s:%d:%d", path, je.line, je.column);
        tune_error_set(err, TUNE_ERR_PARSE, where, "%s", je.text);
        goto fail;
    }
    double launch_s = 0;
    if (!json_is_object(s->root)) {
        specs_fail(&cx, "$", "expected an object%s", "");
        goto fail;
    }
    if (get_positive(&cx, s->root, "$", "launch_overhead_s", 0, &launch_s) != 0)
        goto fail;
    json_t *gpus = json_object_get(s->root, "gpus");
    if (!json_is_array(gpus) || json_array_size(gpus) == 0) {
        specs_fail(&cx, gpus ? "$.gpus" : "$", "expected \"gpus\": a non-empty array%s", "");
        goto fail;
    }
    s->gpus = calloc(json_array_size(gpus), sizeof *s->gpus);
    if (!s->gpus) {
        tune_error_set(err, TUNE_ERR_NOMEM, path, "out of memory");
        goto fail;
    }
    size_t i;
    json_t *e;
    json_array_foreach(gpus, i, e)
    {
        char base[64];
        snprintf(base, sizeof base, "$.gpus[%zu]", i);
        if (parse_gpu(&cx, e, base, launch_s, &s->gpus[i]) != 0)
            goto fail;
        s->n++;
    }
    free(text);
    return s;
fail:
    free(text);
    roofline_specs_free(s);
    return NULL;
}

void roofline_specs_free(roofline_specs *s)
{
    if (!s)
        return;
    json_decref(s->root);
    free(s->gpus);
    free(s);
}

size_t roofline_specs_count(const roofline_specs *s)
{
    return s ? s->n : 0;
}

const roofline_gpu *roofline_specs_at(const roofline_specs *s, size_t i)
{
    return s && i < s->n ? &s->gpus[i] : NULL;
}

static void lower_copy(char *dst, size_t size, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < size; i++)
        dst[i] = (char)tolower((unsigned char)src[i]);
    dst[i] = '\0';
    while (i > 0 && isspace((unsigned char)dst[i - 1]))
        dst[--i] = '\0';
}

const roofline_gpu *roofline_specs_match(const roofline_specs *s, const char *device_name)
{
    if (!s || !device_name)
        return NULL;
    char name[256], pat[256];
    lower_copy(name, sizeof name, device_name);
    for (size_t i = 0; i < s->n; i++)
        for (size_t k = 0; k < s->gpus[i].n_match; k++) {
            lower_copy(pat, sizeof pat, s->gpus[i].match[k]);
            if (fnmatch(pat, name, 0) == 0)
                return &s->gpus[i];
        }
    return NULL;
}

const char *roofline_find_data_dir(char *buf, size_t size)
{
    return tune_find_dir("TUNE_DATA_DIR", "data", buf, size);
}

void roofline_ceilings_from_gpu(const roofline_gpu *g, roofline_ceilings *c)
{
    c->read_bw = c->copy_bw = g->mem_bw * g->frac_memory;
    for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++)
        c->rate[p] = g->flops[p] * g->frac_matmul;
    c->launch_s = g->launch_s;
    /* no datasheet gives them: measured by tune calibrate */
    c->latency_s = c->floor_s = c->gather_elem_s = c->gather_elem_t_s = c->sector_bw = NAN;
    c->gather_elem_t_dram_s = c->fetch_bytes = NAN;
    c->sm_count = g->sm_count;
    c->l2_bytes = (double)g->l2_bytes;
    c->origin = ROOFLINE_FROM_SPECS;
}
