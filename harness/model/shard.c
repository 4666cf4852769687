#include "model/shard.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "core/expr.h"
#include "model/family.h"
#include "core/point.h"

/* ---- I/N ---- */

tune_status shard_parse(const char *text, shard_spec *out, tune_error *err)
{
    const char *p = text ? text : "";
    unsigned long long v[2] = {0, 0};
    for (int part = 0; part < 2; part++) {
        const char *start = p;
        while (*p >= '0' && *p <= '9' && p - start < 6)
            v[part] = v[part] * 10 + (unsigned long long)(*p++ - '0');
        if (p == start || (part == 0 && *p++ != '/') || (part == 1 && *p != '\0'))
            return tune_error_set(err, TUNE_ERR_INVALID, "--shard",
                                  "expected I/N, the shard I of N counted from 0 (0/4, 1/4, 2/4, "
                                  "3/4), got '%s'",
                                  text ? text : "");
    }
    if (v[1] < 1 || v[1] > SHARD_MAX)
        return tune_error_set(err, TUNE_ERR_INVALID, "--shard",
                              "the number of shards must be 1 to %d, got '%s'", SHARD_MAX, text);
    if (v[0] >= v[1])
        return tune_error_set(err, TUNE_ERR_INVALID, "--shard",
                              "shards are counted from 0: I/N needs 0 <= I < N (the last of %llu "
                              "is %llu/%llu), got '%s'",
                              v[1], v[1] - 1, v[1], text);
    out->index = (size_t)v[0];
    out->count = (size_t)v[1];
    return TUNE_OK;
}

/* ---- identities ---- */

typedef struct {
    const char *name;
    expr_value v;
} shard_pair;

static int pair_cmp(const void *a, const void *b)
{
    return strcmp(((const shard_pair *)a)->name, ((const shard_pair *)b)->name);
}

static const char *identity_format(const char *method, shard_pair *pairs, size_t n, char *buf,
                                   size_t size)
{
    qsort(pairs, n, sizeof *pairs, pair_cmp);
    size_t len = (size_t)snprintf(buf, size, "%s", method ? method : "");
    for (size_t i = 0; i < n && len < size; i++) {
        char v[256];
        len += (size_t)snprintf(buf + len, size - len, "|%s=%s", pairs[i].name,
                                expr_value_format(pairs[i].v, v, sizeof v));
    }
    return buf;
}

const char *shard_row_identity(const result_row *row, char *buf, size_t size)
{
    shard_pair pairs[TUNE_MAX_AXES];
    size_t n = row->values.n;
    for (size_t i = 0; i < n; i++)
        pairs[i] = (shard_pair){row->values.names[i], row->values.vals[i]};
    return identity_format(row->method, pairs, n, buf, size);
}

const char *shard_config_identity(const sweep *sw, const space *sp, size_t config, char *buf,
                                  size_t size)
{
    const space_config *c = space_config_at(sp, config);
    tune_point p;
    space_config_point(sp, config, &p);
    shard_pair pairs[TUNE_MAX_AXES];
    size_t n = 0;
    for (size_t a = 0; a < sw->n_problem && n < TUNE_MAX_AXES; a++)
        if (point_get(&p, sw->problem[a].name, &pairs[n].v) == 0)
            pairs[n++].name = sw->problem[a].name;
    for (size_t a = 0; c->param != SPACE_NO_PARAM && a < sw->n_params && n < TUNE_MAX_AXES; a++)
        if (point_get(&p, sw->params[a].name, &pairs[n].v) == 0)
            pairs[n++].name = sw->params[a].name;
    return identity_format(sw->methods[c->method], pairs, n, buf, size);
}

/* ---- the plan ---- */

/* The nominal GPU of the cost model (shard.h). Only ratios matter for the balance; the values are
 * close to what the SparQ sweeps cost on an H200 (docs/sharding.md). */
#define SHARD_BW 2e12          /* B/s an average configuration moves */
#define SHARD_RATE 2e14        /* FLOP/s */
#define SHARD_KERNEL_MIN 5e-6  /* s: launch and the shortest kernel */
#define SHARD_REP_COLD 40e-6   /* s per rep: L2 flush, fresh indices, events */
#define SHARD_REP_HOT 10e-6    /* s per rep without the flush */
#define SHARD_CONFIG 5e-3      /* s per configuration: prepare, check, NVML, row */
#define SHARD_SHAPE 50e-3      /* s per shape: allocate and fill the inputs */
#define SHARD_RETIME_TOP 3     /* run.c re-times a shape's three fastest candidates ... */
#define SHARD_RETIME_ROUNDS 30 /* ... over 30 interleaved rounds */

struct shard_plan {
    size_t n_shards, n_configs;
    size_t *owner;         /* per configuration */
    uint64_t *config_us;   /* per configuration */
    uint64_t *shard_us;    /* per shard */
    size_t *shard_configs; /* per shard */
    uint64_t total_us;
    char hash[17];
};

typedef struct {
    uint64_t us;
    size_t index;
} shard_load;

static int load_cmp_desc(const void *a, const void *b)
{
    const shard_load *x = a, *y = b;
    if (x->us != y->us)
        return x->us > y->us ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Estimated seconds of one configuration; *rep gets the seconds of one of its reps. */
static double config_seconds(const sweep *sw, const tune_point *p, double *rep)
{
    expr_value v;
    double bytes = 0, flops = 0;
    if (expr_eval(sw->bytes, point_lookup, (void *)p, &v, NULL) == TUNE_OK)
        bytes = expr_value_as_double(v);
    if (expr_eval(sw->flops, point_lookup, (void *)p, &v, NULL) == TUNE_OK)
        flops = expr_value_as_double(v);
    double t = SHARD_KERNEL_MIN;
    if (isfinite(bytes) && bytes / SHARD_BW > t)
        t = bytes / SHARD_BW;
    if (isfinite(flops) && flops / SHARD_RATE > t)
        t = flops / SHARD_RATE;
    const sweep_timing *tt = &sw->timing;
    *rep = t + (tt->mode == SWEEP_TIMING_MODE_COLD ? SHARD_REP_COLD : SHARD_REP_HOT);
    double timed;
    if (tt->stop == SWEEP_TIMING_STOP_ADAPTIVE) {
        double n = fmax((double)tt->min_reps, ceil(tt->min_time_s / t));
        timed = fmin(fmin(n, (double)tt->max_reps) * *rep, tt->max_time_s);
    } else {
        timed = (double)tt->reps * *rep;
    }
    return (double)tt->warmup * *rep + timed + SHARD_CONFIG;
}

static uint64_t to_us(double s)
{
    return s > 0 ? (uint64_t)llround(s * 1e6) : 0;
}

static void hash_str(uint64_t *h, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        *h = (*h ^ *p) * 0x100000001b3ull;
    *h = (*h ^ 0xffu) * 0x100000001b3ull;
}

shard_plan *shard_plan_build(const sweep *sw, const space *sp, size_t n_shards, tune_error *err)
{
    if (n_shards < 1 || n_shards > SHARD_MAX) {
        tune_error_set(err, TUNE_ERR_INVALID, "shard", "the number of shards must be 1 to %d",
                       SHARD_MAX);
        return NULL;
    }
    size_t n = space_n_configs(sp), n_shapes = space_n_shapes(sp);
    shard_plan *p = calloc(1, sizeof *p);
    shard_load *shapes = calloc(n_shapes ? n_shapes : 1, sizeof *shapes);
    double *rep_sum = calloc(n_shapes ? n_shapes : 1, sizeof *rep_sum);
    size_t *n_tuned = calloc(n_shapes ? n_shapes : 1, sizeof *n_tuned);
    size_t *shape_owner = calloc(n_shapes ? n_shapes : 1, sizeof *shape_owner);
    if (p) {
        p->n_shards = n_shards;
        p->n_configs = n;
        p->owner = calloc(n ? n : 1, sizeof *p->owner);
        p->config_us = calloc(n ? n : 1, sizeof *p->config_us);
        p->shard_us = calloc(n_shards, sizeof *p->shard_us);
        p->shard_configs = calloc(n_shards, sizeof *p->shard_configs);
    }
    if (!p || !shapes || !rep_sum || !n_tuned || !shape_owner || !p->owner || !p->config_us ||
        !p->shard_us || !p->shard_configs) {
        tune_error_set(err, TUNE_ERR_NOMEM, "shard", "out of memory");
        shard_plan_free(p);
        p = NULL;
        goto done;
    }
    for (size_t s = 0; s < n_shapes; s++)
        shapes[s] = (shard_load){to_us(SHARD_SHAPE), s};
    for (size_t i = 0; i < n; i++) {
        const space_config *c = space_config_at(sp, i);
        tune_point pt;
        space_config_point(sp, i, &pt);
        family_kernel_ref refs[FAMILY_MAX_KERNELS];
        char why[512];
        double rep = 0;
        /* a configuration the family cannot run is a `skipped` row at once */
        if (sw->family->kernels(&pt, refs, FAMILY_MAX_KERNELS, why, sizeof why) >= 0)
            p->config_us[i] = to_us(config_seconds(sw, &pt, &rep));
        shapes[c->shape].us += p->config_us[i];
        if (c->param != SPACE_NO_PARAM && rep > 0) {
            rep_sum[c->shape] += rep;
            n_tuned[c->shape]++;
        }
    }
    for (size_t s = 0; s < n_shapes; s++)
        if (n_tuned[s] >= 2) {
            double k = n_tuned[s] < SHARD_RETIME_TOP ? (double)n_tuned[s] : SHARD_RETIME_TOP;
            shapes[s].us += to_us(k * SHARD_RETIME_ROUNDS * rep_sum[s] / (double)n_tuned[s]);
        }
    for (size_t s = 0; s < n_shapes; s++)
        p->total_us += shapes[s].us;
    /* LPT over a stable order: the largest shape first, each to the least loaded shard */
    qsort(shapes, n_shapes, sizeof *shapes, load_cmp_desc);
    for (size_t k = 0; k < n_shapes; k++) {
        size_t best = 0;
        for (size_t j = 1; j < n_shards; j++)
            if (p->shard_us[j] < p->shard_us[best])
                best = j;
        p->shard_us[best] += shapes[k].us;
        shape_owner[shapes[k].index] = best;
    }
    uint64_t h = 0xcbf29ce484222325ull;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s|%s|%s|%zu", sw->name, sw->family_name, sw->op, n_shards);
    hash_str(&h, buf);
    for (size_t i = 0; i < n; i++) {
        p->owner[i] = shape_owner[space_config_at(sp, i)->shape];
        p->shard_configs[p->owner[i]]++;
        hash_str(&h, shard_config_identity(sw, sp, i, buf, sizeof buf));
        snprintf(buf, sizeof buf, "%zu", p->owner[i]);
        hash_str(&h, buf);
    }
    snprintf(p->hash, sizeof p->hash, "%016llx", (unsigned long long)h);
done:
    free(shapes);
    free(rep_sum);
    free(n_tuned);
    free(shape_owner);
    return p;
}

void shard_plan_free(shard_plan *p)
{
    if (!p)
        return;
    free(p->owner);
    free(p->config_us);
    free(p->shard_us);
    free(p->shard_configs);
    free(p);
}

size_t shard_plan_count(const shard_plan *p)
{
    return p->n_shards;
}

size_t shard_plan_owner(const shard_plan *p, size_t config)
{
    return config < p->n_configs ? p->owner[config] : SIZE_MAX;
}

size_t shard_plan_n_configs(const shard_plan *p, size_t shard)
{
    return shard < p->n_shards ? p->shard_configs[shard] : 0;
}

double shard_plan_config_cost(const shard_plan *p, size_t config)
{
    return config < p->n_configs ? 1e-6 * (double)p->config_us[config] : 0;
}

double shard_plan_cost(const shard_plan *p, size_t shard)
{
    return shard < p->n_shards ? 1e-6 * (double)p->shard_us[shard] : 0;
}

double shard_plan_total_cost(const shard_plan *p)
{
    return 1e-6 * (double)p->total_us;
}

const char *shard_plan_hash(const shard_plan *p)
{
    return p->hash;
}

/* ---- merge ---- */

typedef struct {
    const char *dir;
    json_t *meta; /* new */
    size_t index, count, configs, total;
    const char *plan; /* borrowed from meta */
    result_row *rows;
    size_t n_rows;
    int readable; /* meta.json and raw.jsonl could be read */
} merge_part;

typedef struct {
    char text[2048];
    size_t n;
} merge_problems;

static void problem(merge_problems *pb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void problem(merge_problems *pb, const char *fmt, ...)
{
    size_t len = strlen(pb->text);
    if (pb->n++ == 8) {
        snprintf(pb->text + len, sizeof pb->text - len, "; ...");
        return;
    }
    if (pb->n > 8 || len + 4 >= sizeof pb->text)
        return;
    if (len)
        len += (size_t)snprintf(pb->text + len, sizeof pb->text - len, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pb->text + len, sizeof pb->text - len, fmt, ap);
    va_end(ap);
}

static size_t json_size(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (size_t)json_integer_value(v)
                                                            : SIZE_MAX;
}

static const char *json_str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static void part_load(merge_part *pt, merge_problems *pb)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/meta.json", pt->dir);
    json_error_t je;
    pt->meta = json_load_file(path, 0, &je);
    if (!pt->meta) {
        problem(pb, "%s: not a results folder (%s)", pt->dir,
                access(path, F_OK) == 0 ? je.text : "no meta.json");
        return;
    }
    json_t *sh = json_object_get(pt->meta, "shard");
    if (!json_is_object(sh) || json_is_true(json_object_get(sh, "merged"))) {
        problem(pb, "%s: not a shard (meta.json has no 'shard': run it with --shard I/N)", pt->dir);
        return;
    }
    pt->index = json_size(sh, "index");
    pt->count = json_size(sh, "count");
    pt->configs = json_size(sh, "configs");
    pt->total = json_size(sh, "total_configs");
    pt->plan = json_str(sh, "plan");
    if (pt->index == SIZE_MAX || pt->count == SIZE_MAX || pt->configs == SIZE_MAX ||
        pt->total == SIZE_MAX || pt->index >= pt->count) {
        problem(pb, "%s: meta.json's 'shard' is incomplete", pt->dir);
        return;
    }
    snprintf(path, sizeof path, "%s/raw.jsonl", pt->dir);
    tune_error e = {0};
    if (access(path, F_OK) == 0 && results_read(path, &pt->rows, &pt->n_rows, &e) != TUNE_OK) {
        char buf[2600];
        problem(pb, "shard %zu/%zu: %s (resume it with --resume)", pt->index, pt->count,
                tune_error_text(&e, buf, sizeof buf));
        return;
    }
    pt->readable = 1;
}

/* The key without what may differ between the shards of one run. */
static int key_ignored(const char *k)
{
    return strcmp(k, "shard") == 0 || strcmp(k, "pci_bus_id") == 0;
}

static void compare_keys(const merge_part *a, const merge_part *b, merge_problems *pb)
{
    json_t *ka = json_object_get(a->meta, "key"), *kb = json_object_get(b->meta, "key");
    const char *k;
    json_t *v;
    json_object_foreach(ka, k, v)
    {
        json_t *w = json_object_get(kb, k);
        if (key_ignored(k) || (w && json_equal(v, w)))
            continue;
        char *x = json_dumps(v, JSON_ENCODE_ANY), *y = w ? json_dumps(w, JSON_ENCODE_ANY) : NULL;
        problem(pb, "shard %zu/%zu (%s) was measured with key.%s %s, shard %zu/%zu with %s",
                b->index, b->count, b->dir, k, y ? y : "absent", a->index, a->count, x ? x : "?");
        free(x);
        free(y);
    }
    json_object_foreach(kb, k, v) if (!key_ignored(k) && !json_object_get(ka, k))
        problem(pb, "shard %zu/%zu (%s) has key.%s, shard %zu/%zu has not", b->index, b->count,
                b->dir, k, a->index, a->count);
}

/* Equal timing settings and models: the plan does not depend on them, the rows do. */
static int same_settings(const merge_part *a, const merge_part *b)
{
    const json_t *sa = json_object_get(a->meta, "sweep"), *sb = json_object_get(b->meta, "sweep");
    const char *keys[] = {"family", "op", "bytes", "flops"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(json_str(sa, keys[i]), json_str(sb, keys[i])) != 0)
            return 0;
    const json_t *ta = json_object_get(a->meta, "timing"), *tb = json_object_get(b->meta, "timing");
    return (!ta && !tb) || (ta && tb && json_equal((json_t *)ta, (json_t *)tb));
}

typedef struct {
    char *id;
    size_t part;
} merge_id;

static int id_cmp(const void *a, const void *b)
{
    return strcmp(((const merge_id *)a)->id, ((const merge_id *)b)->id);
}

static void check_rows(merge_part *parts, size_t n, merge_problems *pb)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += parts[i].n_rows;
    merge_id *ids = calloc(total ? total : 1, sizeof *ids);
    size_t k = 0;
    for (size_t i = 0; ids && i < n; i++)
        for (size_t r = 0; r < parts[i].n_rows; r++) {
            char buf[4096];
            ids[k++] =
                (merge_id){strdup(shard_row_identity(&parts[i].rows[r], buf, sizeof buf)), i};
        }
    if (!ids) {
        problem(pb, "out of memory");
        return;
    }
    qsort(ids, k, sizeof *ids, id_cmp);
    size_t dups = 0;
    for (size_t j = 1; j < k; j++)
        if (ids[j].id && ids[j - 1].id && strcmp(ids[j].id, ids[j - 1].id) == 0 && dups++ < 3) {
            const merge_part *a = &parts[ids[j - 1].part], *b = &parts[ids[j].part];
            problem(pb, "configuration %s has two rows (shard %zu/%zu %s, shard %zu/%zu %s)",
                    ids[j].id, a->index, a->count, a->dir, b->index, b->count, b->dir);
        }
    if (dups > 3)
        problem(pb, "%zu configurations have more than one row", dups);
    for (size_t j = 0; j < k; j++)
        free(ids[j].id);
    free(ids);
}

static tune_status copy_lines(FILE *out, const char *path, tune_error *err)
{
    if (access(path, F_OK) != 0)
        return TUNE_OK;
    size_t size = 0;
    char *text = tune_read_file(path, &size, err);
    if (!text)
        return TUNE_ERR_IO;
    int ok = fwrite(text, 1, size, out) == size &&
             (size == 0 || text[size - 1] == '\n' || fputc('\n', out) != EOF);
    free(text);
    return ok ? TUNE_OK : tune_error_set(err, TUNE_ERR_IO, path, "cannot copy");
}

/* Writes the concatenation of dirs' name files into out_dir/name (replaced atomically); removes
 * it when no part has one. */
static tune_status merge_file(const char *out_dir, merge_part *parts, size_t n, const char *name,
                              tune_error *err)
{
    char path[PATH_MAX + 64], tmp[PATH_MAX + 80], src[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", out_dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        snprintf(src, sizeof src, "%s/%s", parts[i].dir, name);
        any |= access(src, F_OK) == 0;
    }
    if (!any) {
        unlink(path);
        return TUNE_OK;
    }
    FILE *f = fopen(tmp, "w");
    if (!f)
        return tune_error_set(err, TUNE_ERR_IO, tmp, "cannot write: %s", strerror(errno));
    tune_status st = TUNE_OK;
    for (size_t i = 0; i < n && st == TUNE_OK; i++) {
        snprintf(src, sizeof src, "%s/%s", parts[i].dir, name);
        st = copy_lines(f, src, err);
    }
    if (fclose(f) != 0 && st == TUNE_OK)
        st = tune_error_set(err, TUNE_ERR_IO, tmp, "cannot write");
    if (st == TUNE_OK && rename(tmp, path) != 0)
        st = tune_error_set(err, TUNE_ERR_IO, path, "cannot write: %s", strerror(errno));
    if (st != TUNE_OK)
        unlink(tmp);
    return st;
}

static void count_row(run_summary *s, result_status st)
{
    switch (st) {
    case RESULT_OK:
        s->n_ok++;
        break;
    case RESULT_INVALID:
        s->n_invalid++;
        break;
    case RESULT_COMPILE_ERROR:
        s->n_compile_error++;
        break;
    case RESULT_LAUNCH_ERROR:
        s->n_launch_error++;
        break;
    case RESULT_CRASHED:
        s->n_crashed++;
        break;
    case RESULT_TIMEOUT:
        s->n_timeout++;
        break;
    case RESULT_SKIPPED:
        s->n_skipped++;
        break;
    case RESULT_COMPILED:
        s->n_compiled++;
        break;
    }
}

static int part_cmp(const void *a, const void *b)
{
    const merge_part *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* meta.json of the merged run: the first shard's, with the merged rows' summary and every
 * shard's provenance. New. */
static json_t *merged_meta(const merge_part *parts, size_t n, const shard_merge_options *opt,
                           run_summary *sum)
{
    json_t *m = json_deep_copy(parts[0].meta);
    if (!m)
        return NULL;
    json_t *argv = json_array();
    for (int i = 0; opt && i < opt->argc; i++)
        json_array_append_new(argv, json_string(opt->argv[i]));
    json_object_set_new(m, "argv", argv);
    json_object_set_new(m, "shard",
                        json_pack("{s:b, s:I, s:s, s:I}", "merged", 1, "count",
                                  (json_int_t)parts[0].count, "plan", parts[0].plan,
                                  "total_configs", (json_int_t)parts[0].total));
    json_t *key = json_object_get(m, "key");
    json_object_del(key, "shard");
    char buses[1024] = "";
    json_t *list = json_array();
    const char *start = NULL, *end = NULL;
    int all_ended = 1;
    double wall = 0, shard_seconds = 0, compile = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *pm = parts[i].meta;
        const json_t *dev = json_object_get(pm, "device");
        const json_t *ps = json_object_get(pm, "summary");
        const char *bus = json_str(json_object_get(pm, "key"), "pci_bus_id");
        if (bus[0] && !strstr(buses, bus)) {
            size_t len = strlen(buses);
            snprintf(buses + len, sizeof buses - len, "%s%s", len ? "," : "", bus);
        }
        const char *s0 = json_str(pm, "start"), *s1 = json_str(pm, "end");
        if (s0[0] && (!start || strcmp(s0, start) < 0))
            start = s0;
        if (!s1[0])
            all_ended = 0;
        else if (!end || strcmp(s1, end) > 0)
            end = s1;
        double w = json_number_value(json_object_get(ps, "wall_seconds"));
        double c = json_number_value(json_object_get(ps, "compile_seconds"));
        wall = w > wall ? w : wall;
        compile = c > compile ? c : compile;
        shard_seconds += w;
        json_t *e = json_pack("{s:I, s:s, s:I, s:O?, s:O?, s:s, s:s, s:O?, s:O?, s:O?, s:O?}",
                              "index", (json_int_t)parts[i].index, "dir", parts[i].dir, "rows",
                              (json_int_t)parts[i].n_rows, "host", json_object_get(pm, "host"),
                              "device", dev, "start", s0, "end", s1, "read_bw",
                              json_object_get(pm, "read_bw"), "estimated_seconds",
                              json_object_get(json_object_get(pm, "shard"), "estimated_seconds"),
                              "summary", ps, "argv", json_object_get(pm, "argv"));
        json_array_append_new(list, e);
    }
    if (key && buses[0])
        json_object_set_new(key, "pci_bus_id", json_string(buses));
    json_object_set_new(m, "shards", list);
    if (start)
        json_object_set_new(m, "start", json_string(start));
    if (all_ended && end)
        json_object_set_new(m, "end", json_string(end));
    else
        json_object_del(m, "end");
    json_t *s = json_object_get(m, "summary");
    if (!json_is_object(s)) {
        s = json_object();
        json_object_set_new(m, "summary", s);
    }
    json_object_update_new(
        s,
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "configs", (json_int_t)sum->n_configs,
                  "ok", (json_int_t)sum->n_ok, "invalid", (json_int_t)sum->n_invalid,
                  "compile_error", (json_int_t)sum->n_compile_error, "launch_error",
                  (json_int_t)sum->n_launch_error, "crashed", (json_int_t)sum->n_crashed, "timeout",
                  (json_int_t)sum->n_timeout, "skipped", (json_int_t)sum->n_skipped));
    if (sum->n_compiled)
        json_object_set_new(s, "compiled", json_integer((json_int_t)sum->n_compiled));
    json_object_set_new(s, "compile_seconds", json_real(compile));
    json_object_set_new(s, "wall_seconds", json_real(wall));
    json_object_set_new(s, "shard_seconds", json_real(shard_seconds));
    sum->wall_seconds = wall;
    sum->compile_seconds = compile;
    return m;
}

static int same_dir(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    return realpath(a, ra) && realpath(b, rb) && strcmp(ra, rb) == 0;
}

tune_status shard_merge(const char *out_dir, const char *const *dirs, size_t n_dirs,
                        const shard_merge_options *opt, run_summary *sum, tune_error *err)
{
    run_summary local;
    if (!sum)
        sum = &local;
    memset(sum, 0, sizeof *sum);
    if (n_dirs == 0)
        return tune_error_set(err, TUNE_ERR_INVALID, "merge", "no shard folders to merge");
    merge_part *parts = calloc(n_dirs, sizeof *parts);
    if (!parts)
        return tune_error_set(err, TUNE_ERR_NOMEM, "merge", "out of memory");
    merge_problems pb = {"", 0};
    tune_status st = TUNE_OK;
    for (size_t i = 0; i < n_dirs; i++) {
        parts[i].dir = dirs[i];
        if (same_dir(out_dir, dirs[i]))
            problem(&pb, "the merged folder %s is also a shard folder", out_dir);
        part_load(&parts[i], &pb);
    }
    if (pb.n)
        goto refuse;
    qsort(parts, n_dirs, sizeof *parts, part_cmp);
    const merge_part *ref = &parts[0];
    const char *name = json_str(json_object_get(ref->meta, "sweep"), "name");
    for (size_t i = 1; i < n_dirs; i++) {
        const merge_part *p = &parts[i];
        const char *pn = json_str(json_object_get(p->meta, "sweep"), "name");
        if (strcmp(pn, name) != 0)
            problem(&pb, "%s is a shard of sweep '%s', %s of '%s'", p->dir, pn, ref->dir, name);
        else if (p->count != ref->count)
            problem(&pb, "%s is a shard of %zu, %s of %zu", p->dir, p->count, ref->dir, ref->count);
        else if (strcmp(p->plan, ref->plan) != 0 || p->total != ref->total)
            problem(&pb,
                    "%s and %s were planned differently (plan %s, %s): another version of "
                    "the sweep file or of tune",
                    p->dir, ref->dir, p->plan, ref->plan);
        else
            compare_keys(ref, p, &pb);
        if (!same_settings(ref, p))
            problem(&pb, "%s and %s were measured with other timing settings or byte/FLOP models",
                    p->dir, ref->dir);
    }
    if (pb.n)
        goto refuse;
    size_t count = ref->count;
    char missing[1024] = "";
    size_t twice = 0;
    for (size_t s = 0, i = 0; s < count; s++) {
        size_t seen = 0;
        const char *first = NULL;
        for (; i < n_dirs && parts[i].index == s; i++, seen++)
            if (seen == 0)
                first = parts[i].dir;
            else if (++twice)
                problem(&pb, "shard %zu/%zu is given twice (%s, %s)", s, count, first,
                        parts[i].dir);
        size_t len = strlen(missing);
        if (!seen && len + 16 < sizeof missing)
            snprintf(missing + len, sizeof missing - len, "%s%zu/%zu", len ? ", " : "", s, count);
    }
    if (missing[0])
        problem(&pb, "missing shards: %s", missing);
    for (size_t i = 0; i < n_dirs; i++)
        if (parts[i].n_rows != parts[i].configs)
            problem(&pb,
                    "shard %zu/%zu (%s) is incomplete: %zu of its %zu configurations have a row; "
                    "resume it (--shard %zu/%zu --out %s --resume)",
                    parts[i].index, count, parts[i].dir, parts[i].n_rows, parts[i].configs,
                    parts[i].index, count, parts[i].dir);
    if (!twice) /* a shard given twice has every row twice: said once above */
        check_rows(parts, n_dirs, &pb);
    if (pb.n)
        goto refuse;

    sum->n_configs = ref->total;
    sum->n_pruned = json_size(json_object_get(ref->meta, "summary"), "pruned");
    if (sum->n_pruned == SIZE_MAX)
        sum->n_pruned = 0;
    for (size_t i = 0; i < n_dirs; i++)
        for (size_t r = 0; r < parts[i].n_rows; r++)
            count_row(sum, parts[i].rows[r].status);
    snprintf(sum->out_dir, sizeof sum->out_dir, "%s", out_dir);
    json_t *meta = NULL;
    if ((st = results_mkdirs(out_dir, err)) == TUNE_OK &&
        (st = merge_file(out_dir, parts, n_dirs, "raw.jsonl", err)) == TUNE_OK &&
        (st = merge_file(out_dir, parts, n_dirs, "retime.jsonl", err)) == TUNE_OK) {
        char path[PATH_MAX + 16], tmp[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/meta.json", out_dir);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        meta = merged_meta(parts, n_dirs, opt, sum);
        if (!meta || json_dump_file(meta, tmp, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0 ||
            rename(tmp, path) != 0)
            st = tune_error_set(err, TUNE_ERR_IO, path, "cannot write");
    }
    json_decref(meta);
    /* a compile-only run's tables hold only the status counts: written, not printed */
    if (st == TUNE_OK)
        st = run_report(&out_dir, 1, NULL, NULL, (opt ? opt->quiet : 0) || sum->n_ok == 0, err);
    goto done;
refuse:
    st = tune_error_set(err, TUNE_ERR_INVALID, "merge", "cannot merge: %s", pb.text);
done:
    for (size_t i = 0; i < n_dirs; i++) {
        json_decref(parts[i].meta);
        results_rows_free(parts[i].rows, parts[i].n_rows);
    }
    free(parts);
    return st;
}
