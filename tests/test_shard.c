/* test_shard.c - sharding (CPU only): --shard parsing and the plan (deterministic, every
 * configuration in exactly one shard, whole shapes, balanced by estimated cost on the shipped
 * sweeps). The merge of shard folders is test_merge.c's. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/compile.h"
#include "run/run.h"
#include "model/shard.h"
#include "model/space.h"
#include "model/sweep.h"
#include "util.h"

TestSuite(shard, .timeout = 600);

/* ---- parsing ---- */

typedef struct {
    char text[32];
    char expect[32]; /* part of the message; empty: valid */
    size_t index, count;
} parse_case;

/* Criterion copies the parameters into the test's process: arrays, not pointers */
static parse_case parse_cases[] = {
    {"0/1", "", 0, 1},
    {"3/4", "", 3, 4},
    {"0/4096", "", 0, 4096},
    {"4/4", "counted from 0", 0, 0},
    {"7/3", "the last of 3 is 2/3", 0, 0},
    {"1/0", "must be 1 to 4096", 0, 0},
    {"0/4097", "must be 1 to 4096", 0, 0},
    {"-1/3", "expected I/N", 0, 0},
    {"1", "expected I/N", 0, 0},
    {"1/", "expected I/N", 0, 0},
    {"/3", "expected I/N", 0, 0},
    {"a/b", "expected I/N", 0, 0},
    {"1/3x", "expected I/N", 0, 0},
    {"1 /3", "expected I/N", 0, 0},
    {"", "expected I/N", 0, 0},
    {"99999999999999999999/3", "expected I/N", 0, 0},
};

ParameterizedTestParameters(shard, parse)
{
    return cr_make_param_array(parse_case, parse_cases, sizeof parse_cases / sizeof parse_cases[0]);
}

ParameterizedTest(parse_case *c, shard, parse)
{
    shard_spec s = {99, 99};
    tune_error err = {0};
    tune_status st = shard_parse(c->text, &s, &err);
    if (!c->expect[0]) {
        cr_assert_eq(st, TUNE_OK, "%s: %s", c->text, err.message);
        cr_expect_eq(s.index, c->index);
        cr_expect_eq(s.count, c->count);
    } else {
        cr_assert_eq(st, TUNE_ERR_INVALID, "'%s' should be refused", c->text);
        cr_expect(strstr(err.message, c->expect) != NULL, "'%s': message '%s' lacks '%s'", c->text,
                  err.message, c->expect);
        cr_expect(strstr(err.message, c->text) != NULL, "the message names the value: %s",
                  err.message);
    }
}

/* ---- the plan ---- */

typedef struct {
    sweep *sw;
    space *sp;
} loaded;

static loaded load(const char *path)
{
    tune_error err = {0};
    char buf[4096];
    loaded l = {sweep_load(path, &err), NULL};
    cr_assert_not_null(l.sw, "%s", tune_error_text(&err, buf, sizeof buf));
    l.sp = space_build(l.sw, &err);
    cr_assert_not_null(l.sp, "%s", tune_error_text(&err, buf, sizeof buf));
    return l;
}

static void unload(loaded l)
{
    space_free(l.sp);
    sweep_free(l.sw);
}

static shard_plan *plan(loaded l, size_t n)
{
    tune_error err = {0};
    shard_plan *p = shard_plan_build(l.sw, l.sp, n, &err);
    cr_assert_not_null(p, "%s", err.message);
    return p;
}

/* the shipped sweeps, and the SparQ op declared in a sweep file (family "kernel", 36 shapes) */
static const char *const shipped[] = {"sweeps/sparq.json", "sweeps/sparq_step1.json",
                                      "sweeps/sparq_step2.json",
                                      "sweeps/examples/sparq/sparq.json"};
#define N_SHIPPED (sizeof shipped / sizeof shipped[0])

Test(shard, deterministic)
{
    for (size_t f = 0; f < N_SHIPPED; f++) {
        for (size_t n = 1; n <= 8; n++) {
            /* two independent loads, as two hosts would do */
            loaded a = load(shipped[f]), b = load(shipped[f]);
            shard_plan *pa = plan(a, n), *pb = plan(b, n);
            cr_assert_str_eq(shard_plan_hash(pa), shard_plan_hash(pb));
            for (size_t i = 0; i < space_n_configs(a.sp); i++)
                cr_assert_eq(shard_plan_owner(pa, i), shard_plan_owner(pb, i),
                             "%s n=%zu config %zu", shipped[f], n, i);
            shard_plan_free(pa);
            shard_plan_free(pb);
            unload(a);
            unload(b);
        }
    }
}

Test(shard, every_config_in_exactly_one_shard_whole_shapes)
{
    for (size_t f = 0; f < N_SHIPPED; f++) {
        loaded l = load(shipped[f]);
        size_t n_configs = space_n_configs(l.sp), n_shapes = space_n_shapes(l.sp);
        size_t *shape_owner = malloc(n_shapes * sizeof *shape_owner);
        for (size_t n = 1; n <= 16; n++) {
            shard_plan *p = plan(l, n);
            cr_assert_eq(shard_plan_count(p), n);
            size_t *count = calloc(n, sizeof *count);
            for (size_t s = 0; s < n_shapes; s++)
                shape_owner[s] = SIZE_MAX;
            for (size_t i = 0; i < n_configs; i++) {
                size_t o = shard_plan_owner(p, i), s = space_config_at(l.sp, i)->shape;
                cr_assert_lt(o, n);
                count[o]++;
                if (shape_owner[s] == SIZE_MAX)
                    shape_owner[s] = o;
                cr_assert_eq(shape_owner[s], o, "%s: shape %zu split over shards", shipped[f], s);
            }
            size_t total = 0;
            double cost = 0;
            for (size_t k = 0; k < n; k++) {
                cr_expect_eq(count[k], shard_plan_n_configs(p, k));
                total += shard_plan_n_configs(p, k);
                cost += shard_plan_cost(p, k);
            }
            cr_expect_eq(total, n_configs);
            cr_expect_float_eq(cost, shard_plan_total_cost(p), 1e-6 * cost);
            cr_expect_eq(shard_plan_owner(p, n_configs), SIZE_MAX);
            free(count);
            shard_plan_free(p);
        }
        free(shape_owner);
        unload(l);
    }
}

/* The plan hash changes with the number of shards and with the sweep. */
Test(shard, hash_names_the_plan)
{
    loaded a = load("sweeps/sparq.json"), b = load("sweeps/sparq_step1.json");
    shard_plan *a2 = plan(a, 2), *a3 = plan(a, 3), *b2 = plan(b, 2);
    cr_expect_str_neq(shard_plan_hash(a2), shard_plan_hash(a3));
    cr_expect_str_neq(shard_plan_hash(a2), shard_plan_hash(b2));
    cr_expect_eq(strlen(shard_plan_hash(a2)), 16);
    shard_plan_free(a2);
    shard_plan_free(a3);
    shard_plan_free(b2);
    unload(a);
    unload(b);
}

/* LPT: no shard exceeds the mean by more than the largest shape; on the shipped sweeps (36-60
 * shapes) every shard is within 5 % of the mean for 2 to 4 shards and within 15 % for 8. */
Test(shard, balanced_by_cost)
{
    for (size_t f = 0; f < N_SHIPPED; f++) {
        loaded l = load(shipped[f]);
        shard_plan *one = plan(l, 1);
        size_t n_shapes = space_n_shapes(l.sp);
        /* cost of each shape = the cost of the one shard it forms alone... bound it through the
         * configurations: the largest shape's cost is at least its configurations' */
        double *shape = calloc(n_shapes, sizeof *shape), largest = 0;
        for (size_t i = 0; i < space_n_configs(l.sp); i++)
            shape[space_config_at(l.sp, i)->shape] += shard_plan_config_cost(one, i);
        for (size_t s = 0; s < n_shapes; s++)
            largest = shape[s] > largest ? shape[s] : largest;
        double total = shard_plan_total_cost(one);
        cr_assert_gt(total, 0);
        for (size_t n = 2; n <= 8; n++) {
            shard_plan *p = plan(l, n);
            double mean = total / (double)n, max = 0, min = total;
            for (size_t k = 0; k < n; k++) {
                max = shard_plan_cost(p, k) > max ? shard_plan_cost(p, k) : max;
                min = shard_plan_cost(p, k) < min ? shard_plan_cost(p, k) : min;
            }
            /* a shape's setup and re-timing come on top of its configurations: 2x is ample */
            cr_expect_leq(max, mean + 2 * largest, "%s n=%zu", shipped[f], n);
            cr_expect_leq(max, mean * (n <= 4 ? 1.05 : 1.15), "%s n=%zu: max %.2f s, mean %.2f s",
                          shipped[f], n, max, mean);
            cr_expect_gt(min, 0, "%s n=%zu: an empty shard", shipped[f], n);
            shard_plan_free(p);
        }
        free(shape);
        shard_plan_free(one);
        unload(l);
    }
}

/* Balanced by cost, not by count: sparq.json's 36 shapes have 38 configurations each, so a split
 * by count (its first 18 shapes, g = 256 and half of g = 1024, against the other 18) gives one
 * shard every g = 4096 shape; the plan's shards are within 5 % of each other, the count split's
 * are not within 20 %. */
Test(shard, cost_not_count)
{
    loaded l = load("sweeps/sparq.json");
    shard_plan *p = plan(l, 2);
    double half[2] = {0, 0};
    size_t n_shapes = space_n_shapes(l.sp);
    for (size_t i = 0; i < space_n_configs(l.sp); i++)
        half[space_config_at(l.sp, i)->shape >= n_shapes / 2] += shard_plan_config_cost(p, i);
    double a = shard_plan_cost(p, 0), b = shard_plan_cost(p, 1);
    cr_expect_lt(fmax(a, b) / fmin(a, b), 1.05, "plan: %.3f s and %.3f s", a, b);
    cr_expect_gt(fmax(half[0], half[1]) / fmin(half[0], half[1]), 1.2,
                 "count split: %.3f s and %.3f s", half[0], half[1]);
    /* a big shape costs more than a small one */
    double small = 0, big = 0;
    for (size_t i = 0; i < space_n_configs(l.sp); i++) {
        const tune_point *s = space_shape(l.sp, space_config_at(l.sp, i)->shape);
        if (point_int(s, "g", 0) == 256 && point_int(s, "k", 0) == 64)
            small += shard_plan_config_cost(p, i);
        if (point_int(s, "g", 0) == 4096 && point_int(s, "k", 0) == 512)
            big += shard_plan_config_cost(p, i);
    }
    cr_expect_gt(big, 3 * small, "big %.3f s, small %.3f s", big, small);
    shard_plan_free(p);
    unload(l);
}

Test(shard, more_shards_than_shapes_leave_some_empty)
{
    loaded l = load("sweeps/testing/faults.json"); /* 2 shapes */
    shard_plan *p = plan(l, 3);
    cr_expect_eq(shard_plan_n_configs(p, 0) + shard_plan_n_configs(p, 1) +
                     shard_plan_n_configs(p, 2),
                 space_n_configs(l.sp));
    cr_expect_eq(shard_plan_n_configs(p, 2), 0);
    cr_expect_eq(shard_plan_cost(p, 2), 0);
    shard_plan_free(p);
    tune_error err = {0};
    cr_expect_null(shard_plan_build(l.sw, l.sp, 0, &err));
    cr_expect_eq(err.code, TUNE_ERR_INVALID);
    unload(l);
}
