/* meta_search.c - part of the meta module (store/meta.h): a searched run's "search" block of
 * meta.json, built, read, and merged over shards. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/meta.h"

static json_t *shape_json(const tune_point *p)
{
    json_t *o = json_object();
    for (size_t a = 0; o && a < p->n; a++) {
        expr_value v = p->vals[a];
        json_object_set_new(o, p->names[a],
                            v.type == EXPR_INT   ? json_integer((json_int_t)v.i)
                            : v.type == EXPR_STR ? json_string(v.s)
                                                 : json_real(v.f));
    }
    return o;
}

json_t *meta_search_json(const meta_search *ms)
{
    json_t *warm = json_array(), *shapes = json_array();
    for (size_t i = 0; warm && i < ms->n_warm_start; i++)
        json_array_append_new(warm, json_string(ms->warm_start[i]));
    for (size_t i = 0; shapes && i < ms->n_shapes; i++)
        json_array_append_new(shapes,
                              json_pack("{s:o, s:I, s:I, s:I}", "shape", shape_json(ms->shapes[i]),
                                        "candidates", (json_int_t)ms->shape_candidates[i], "budget",
                                        (json_int_t)ms->shape_budget[i], "evaluated",
                                        (json_int_t)ms->shape_evaluated[i]));
    json_t *configs = json_pack("{s:I, s:I, s:I, s:I, s:I}", "space", (json_int_t)ms->space,
                                "measured", (json_int_t)(ms->baselines + ms->evaluated),
                                "baselines", (json_int_t)ms->baselines, "candidates",
                                (json_int_t)ms->candidates, "evaluated", (json_int_t)ms->evaluated);
    json_t *kernels = json_pack("{s:I, s:I}", "space", (json_int_t)ms->kernels, "compiled",
                                (json_int_t)ms->kernels_compiled);
    /* the seed as text too: JSON readers may hold integers as doubles */
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)ms->seed);
    return json_pack("{s:s, s:s, s:s, s:I, s:s, s:I, s:f, s:b, s:b, s:I, s:o, s:I, s:o, s:o, "
                     "s:o}",
                     "strategy", ms->strategy, "budget", ms->budget, "scope",
                     ms->scope ? ms->scope : "shape", "budget_evaluations",
                     (json_int_t)ms->budget_evaluations, "seed", seed, "batch",
                     (json_int_t)ms->batch, "time_limit_s", ms->time_limit_s, "time_limit_hit",
                     ms->time_limit_hit, "finished", ms->finished, "rounds", (json_int_t)ms->rounds,
                     "warm_start", warm, "prior_rows", (json_int_t)ms->prior_rows, "configs",
                     configs, "kernels", kernels, "shapes", shapes);
}

const json_t *meta_search_block(const json_t *meta)
{
    const json_t *s = json_object_get(meta, "search");
    return json_is_object(s) ? s : NULL;
}

static const char *str_of(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "?";
}

static size_t size_of(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (size_t)json_integer_value(v) : 0;
}

int meta_search_settings(const json_t *meta, char *buf, size_t size)
{
    const json_t *s = meta_search_block(meta);
    if (!s) {
        snprintf(buf, size, "exhaustive (not searched)");
        return 0;
    }
    size_t batch = size_of(s, "batch"), len;
    len = (size_t)snprintf(buf, size, "%s, budget %s, seed %s, batch ", str_of(s, "strategy"),
                           str_of(s, "budget"), str_of(s, "seed"));
    if (len < size)
        len += batch ? (size_t)snprintf(buf + len, size - len, "%zu", batch)
                     : (size_t)snprintf(buf + len, size - len, "default");
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(s, "warm_start"), i, w) if (len < size) len +=
        (size_t)snprintf(buf + len, size - len, "%s%s", i ? "," : ", warm start ",
                         json_string_value(w) ? json_string_value(w) : "?");
    return 1;
}

/* n with a space between groups of three digits: "6 725". */
static const char *grouped(size_t n, char *buf, size_t size)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%zu", n), o = 0;
    for (int i = 0; i < len && (size_t)o + 2 < size; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            buf[o++] = ' ';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

int meta_search_line(const json_t *meta, char *buf, size_t size)
{
    const json_t *s = meta_search_block(meta);
    buf[0] = '\0';
    if (!s)
        return -1;
    const json_t *c = json_object_get(s, "configs");
    char budget[64], a[32], b[32];
    const char *bt = str_of(s, "budget"), *per = strstr(bt, "/shape");
    size_t bl = per ? (size_t)(per - bt) : strlen(bt);
    int run = json_object_get(s, "scope") && strcmp(str_of(s, "scope"), "run") == 0;
    const char *tail = per ? " per shape" : run ? " of the run" : "";
    if (bl > 1 && bt[bl - 1] == '%')
        snprintf(budget, sizeof budget, "%.*s %%%s", (int)(bl - 1), bt, tail);
    else
        snprintf(budget, sizeof budget, "%.*s%s", (int)bl, bt, tail);
    snprintf(buf, size, "searched: %s, budget %s: %s of %s configurations measured",
             str_of(s, "strategy"), budget, grouped(size_of(c, "measured"), a, sizeof a),
             grouped(size_of(c, "space"), b, sizeof b));
    return 0;
}

int meta_search_finished(const json_t *meta)
{
    const json_t *s = meta_search_block(meta);
    return s && json_is_string(json_object_get(meta, "end")) &&
           json_is_true(json_object_get(s, "finished"));
}

const char *meta_sweep_family(const json_t *meta)
{
    return json_string_value(json_object_get(json_object_get(meta, "sweep"), "family"));
}

const char *meta_sweep_op(const json_t *meta)
{
    return json_string_value(json_object_get(json_object_get(meta, "sweep"), "op"));
}

/* o[key] += v (integers). */
static void add_to(json_t *o, const char *key, const json_t *v)
{
    json_int_t x = json_integer_value(json_object_get(o, key)) + json_integer_value(v);
    json_object_set_new(o, key, json_integer(x));
}

void meta_search_merge(json_t *m, const meta_part *parts, size_t n)
{
    json_t *s = json_object_get(m, "search");
    if (!json_is_object(s))
        return;
    json_t *configs = json_object_get(s, "configs"), *kernels = json_object_get(s, "kernels");
    json_t *shapes = json_object_get(s, "shapes");
    int hit = 0, finished = 1;
    json_int_t rounds = 0, prior = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *ps = meta_search_block(parts[i].meta);
        hit |= json_is_true(json_object_get(ps, "time_limit_hit"));
        finished &= json_is_true(json_object_get(ps, "finished"));
        json_int_t r = json_integer_value(json_object_get(ps, "rounds"));
        rounds = r > rounds ? r : rounds;
        prior += json_integer_value(json_object_get(ps, "prior_rows"));
        if (i == 0)
            continue; /* m holds the first part's counts and shapes */
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(ps, "configs"), k, v) if (strcmp(k, "space") != 0)
            add_to(configs, k, v);
        add_to(kernels, "compiled", json_object_get(json_object_get(ps, "kernels"), "compiled"));
        add_to(s, "budget_evaluations", json_object_get(ps, "budget_evaluations"));
        json_array_extend(shapes, json_object_get(ps, "shapes"));
    }
    json_t *total = json_object_get(json_object_get(m, "shard"), "total_configs");
    if (total) /* the merged run's space is the sweep's */
        json_object_set(configs, "space", total);
    json_object_set_new(s, "time_limit_hit", json_boolean(hit));
    json_object_set_new(s, "finished", json_boolean(finished));
    json_object_set_new(s, "rounds", json_integer(rounds));
    json_object_set_new(s, "prior_rows", json_integer(prior));
}

const char *meta_object_text(const json_t *o, char *buf, size_t size)
{
    const char *k;
    json_t *v;
    size_t len = 0;
    buf[0] = '\0';
    json_object_foreach((json_t *)o, k, v)
    {
        char val[64];
        if (json_is_integer(v))
            snprintf(val, sizeof val, "%lld", (long long)json_integer_value(v));
        else if (json_is_string(v))
            snprintf(val, sizeof val, "%s", json_string_value(v));
        else
            snprintf(val, sizeof val, "%g", json_number_value(v));
        if (len < size)
            len += (size_t)snprintf(buf + len, size - len, "%s%s=%s", len ? " " : "", k, val);
    }
    return buf;
}
