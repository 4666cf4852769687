/* test_space.c - enumeration order, counts and constraint pruning of sweep configurations. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "model/space.h"
#include "model/sweep.h"

/* A sweep over gather_inner_matrix_only_bmv: g x k_pre x k x n (problem), extra JSON members
 * appended (params, skip_if, ...). */
static sweep *make_sweep(const char *problem, const char *extra)
{
    char text[4096], buf[4096];
    snprintf(text, sizeof text,
             "{\"name\": \"t\", \"family\": \"gather_matmul\", "
             "\"op\": \"gather_inner_matrix_only_bmv\", \"problem\": %s, "
             "\"params\": {\"chunk\": {\"pow2\": [1, 128]}}, "
             "\"methods\": [\"custom\", \"gather\", \"slice\"]%s}",
             problem, extra);
    tune_error err = {0};
    sweep *sw = sweep_parse(text, "t.json", &err);
    cr_assert_not_null(sw, "%s", tune_error_text(&err, buf, sizeof buf));
    return sw;
}

static const char *const sparq_problem =
    "{\"g\": [256, 1024, 4096], \"k_pre\": [1024, 4096, 16384], \"k\": [64, 128, 256, 512], "
    "\"n\": [128], \"dtype\": [\"float16\"]}";

static space *build(const sweep *sw)
{
    tune_error err = {0};
    char buf[4096];
    space *sp = space_build(sw, &err);
    cr_assert_not_null(sp, "%s", tune_error_text(&err, buf, sizeof buf));
    return sp;
}

static int64_t shape_int(const space *sp, size_t shape, const char *name)
{
    return point_int(space_shape(sp, shape), name, -1);
}

Test(space, product_counts)
{
    sweep *sw = make_sweep(sparq_problem, "");
    space *sp = build(sw);
    cr_expect_eq(space_n_shapes(sp), 36);
    cr_expect_eq(space_n_params(sp), 8); /* chunk 1..128 x threads (default 256) */
    cr_expect_eq(space_n_configs(sp), 36 * (8 + 1 + 1));
    cr_expect_eq(space_n_pruned(sp), 0);
    space_free(sp);
    sweep_free(sw);
}

Test(space, last_axis_fastest)
{
    sweep *sw = make_sweep(sparq_problem, "");
    space *sp = build(sw);
    cr_expect_eq(shape_int(sp, 0, "k"), 64);
    cr_expect_eq(shape_int(sp, 1, "k"), 128);
    cr_expect_eq(shape_int(sp, 3, "k"), 512);
    cr_expect_eq(shape_int(sp, 4, "k_pre"), 4096);
    cr_expect_eq(shape_int(sp, 4, "k"), 64);
    cr_expect_eq(shape_int(sp, 11, "g"), 256);
    cr_expect_eq(shape_int(sp, 12, "g"), 1024);
    cr_expect_eq(shape_int(sp, 35, "g"), 4096);
    cr_expect_eq(shape_int(sp, 35, "k_pre"), 16384);
    cr_expect_eq(shape_int(sp, 35, "k"), 512);
    for (size_t j = 0; j < 8; j++)
        cr_expect_eq(point_int(space_param(sp, j), "chunk", -1), (int64_t)1 << j);
    cr_expect_null(space_shape(sp, 36));
    cr_expect_null(space_param(sp, 8));
    space_free(sp);
    sweep_free(sw);
}

Test(space, config_order_methods_then_params)
{
    sweep *sw = make_sweep(sparq_problem, "");
    space *sp = build(sw);
    for (size_t j = 0; j < 8; j++) {
        const space_config *c = space_config_at(sp, j);
        cr_expect_eq(c->shape, 0);
        cr_expect_eq(c->method, 0);
        cr_expect_eq(c->param, j);
    }
    const space_config *g = space_config_at(sp, 8), *s = space_config_at(sp, 9);
    cr_expect(g->shape == 0 && g->method == 1 && g->param == SPACE_NO_PARAM);
    cr_expect(s->shape == 0 && s->method == 2 && s->param == SPACE_NO_PARAM);
    const space_config *next = space_config_at(sp, 10);
    cr_expect(next->shape == 1 && next->method == 0 && next->param == 0);
    cr_expect_null(space_config_at(sp, space_n_configs(sp)));
    space_free(sp);
    sweep_free(sw);
}

Test(space, shape_level_pruning)
{
    sweep *sw = make_sweep(sparq_problem, ", \"skip_if\": \"g >= 2048 && k_pre >= 16384\"");
    space *sp = build(sw);
    cr_expect_eq(space_n_shapes(sp), 32);
    cr_expect_eq(space_n_configs(sp), 32 * 10);
    cr_expect_eq(space_n_pruned(sp), 4 * 10);
    for (size_t i = 0; i < space_n_shapes(sp); i++)
        cr_expect_not(shape_int(sp, i, "g") >= 2048 && shape_int(sp, i, "k_pre") >= 16384,
                      "shape %zu should have been pruned", i);
    cr_expect_eq(shape_int(sp, 31, "k_pre"), 4096); /* the last kept: g=4096, k_pre=4096, k=512 */
    space_free(sp);
    sweep_free(sw);
}

Test(space, param_level_pruning_keeps_baselines)
{
    sweep *sw = make_sweep("{\"g\": [256], \"k_pre\": [1024], \"k\": [64], \"n\": [16, 128]}",
                           ", \"skip_if\": [\"chunk > n\"]");
    space *sp = build(sw);
    cr_expect_eq(space_n_shapes(sp), 2);
    /* n = 16: chunk 1..16 (5 points) + 2 baselines; n = 128: 8 + 2 */
    cr_expect_eq(space_n_configs(sp), 7 + 10);
    cr_expect_eq(space_n_pruned(sp), 3);
    for (size_t i = 0; i < space_n_configs(sp); i++) {
        tune_point p;
        space_config_point(sp, i, &p);
        int64_t chunk = point_int(&p, "chunk", -1);
        cr_expect(chunk <= point_int(&p, "n", -1), "config %zu: chunk %lld", i, (long long)chunk);
    }
    space_free(sp);
    sweep_free(sw);
}

Test(space, method_level_pruning)
{
    sweep *sw = make_sweep(sparq_problem, ", \"skip_if\": \"method == \\\"gather\\\" && k >= 256\"");
    space *sp = build(sw);
    cr_expect_eq(space_n_shapes(sp), 36);
    cr_expect_eq(space_n_configs(sp), 36 * 10 - 18);
    cr_expect_eq(space_n_pruned(sp), 18);
    for (size_t i = 0; i < space_n_configs(sp); i++) {
        tune_point p;
        space_config_point(sp, i, &p);
        cr_expect_not(strcmp(point_str(&p, "method", ""), "gather") == 0 &&
                      point_int(&p, "k", 0) >= 256);
    }
    space_free(sp);
    sweep_free(sw);
}

/* What a param-level constraint decides depends on the method, the parameter point and the shape
 * values it reads: space.c keeps the decisions per (method, those values) and reuses them on the
 * shapes that agree. The configurations are those of evaluating every constraint everywhere. */
Test(space, param_level_decisions_reused_across_shapes)
{
    sweep *sw = make_sweep(
        "{\"g\": [256, 1024], \"k_pre\": [1024, 4096], \"k\": [64, 128], \"n\": [16, 128], "
        "\"dtype\": [\"float16\", \"float32\"]}",
        ", \"skip_if\": [\"chunk > n\", \"chunk * dsize >= 128 && k == 128\", "
        "\"method == \\\"custom\\\" && chunk == 2 && g == 1024 && dtype == \\\"float32\\\"\"]");
    space *sp = build(sw);
    size_t c = 0, n_pruned = 0;
    for (size_t s = 0; s < space_n_shapes(sp); s++) {
        for (size_t j = 0; j < space_n_params(sp); j++) {
            tune_point p = *space_shape(sp, s);
            point_set_str(&p, "method", "custom");
            point_merge(&p, space_param(sp, j));
            int skip = 0;
            for (size_t i = 0; i < sw->n_skip_if && !skip; i++) {
                expr_value v;
                cr_assert_eq(expr_eval(sw->skip_if[i], point_lookup, &p, &v, NULL), TUNE_OK);
                skip = expr_value_truthy(v);
            }
            n_pruned += (size_t)skip;
            if (skip)
                continue;
            const space_config *cf = space_config_at(sp, c++);
            cr_assert_not_null(cf);
            cr_expect(cf->shape == s && cf->method == 0 && cf->param == j,
                      "shape %zu param %zu: config %zu is (%zu, %zu, %zu)", s, j, c - 1,
                      cf->shape, cf->method, cf->param);
        }
        c += 2; /* the baselines gather and slice */
    }
    cr_expect_eq(c, space_n_configs(sp));
    cr_expect_eq(space_n_pruned(sp), n_pruned);
    cr_expect_gt(n_pruned, 0);
    space_free(sp);
    sweep_free(sw);
}

/* A decision kept from one shape is not another's error: a constraint that fails only where k is
 * 128 fails there, at the first such point in enumeration order, after shapes of k = 64 decided
 * the same parameter points. */
Test(space, param_level_error_on_a_later_shape)
{
    sweep *sw = make_sweep("{\"g\": [8], \"k_pre\": [64], \"k\": [64, 128], \"n\": [32]}",
                           ", \"skip_if\": [\"chunk > 4 && 64 / (k - 128) > 0\"]");
    tune_error err = {0};
    cr_expect_null(space_build(sw, &err));
    cr_expect_eq(err.code, TUNE_ERR_EVAL);
    cr_expect_str_eq(err.where, "t.json: skip_if[0]");
    cr_expect(strstr(err.message, "k=128") != NULL, "%s", err.message);
    cr_expect(strstr(err.message, "chunk=8") != NULL, "%s", err.message);
    sweep_free(sw);
}

Test(space, baselines_once_per_shape)
{
    sweep *sw = make_sweep(sparq_problem, ", \"skip_if\": \"chunk >= 64 && k >= 256\"");
    space *sp = build(sw);
    size_t per_method[36][3] = {{0}};
    for (size_t i = 0; i < space_n_configs(sp); i++) {
        const space_config *c = space_config_at(sp, i);
        per_method[c->shape][c->method]++;
        cr_expect_eq(c->param == SPACE_NO_PARAM, c->method != 0);
    }
    for (size_t s = 0; s < 36; s++) {
        cr_expect_eq(per_method[s][0], shape_int(sp, s, "k") >= 256 ? 6u : 8u);
        cr_expect_eq(per_method[s][1], 1);
        cr_expect_eq(per_method[s][2], 1);
    }
    space_free(sp);
    sweep_free(sw);
}

Test(space, points_carry_op_method_dsize)
{
    sweep *sw = make_sweep("{\"g\": [8], \"k_pre\": [64], \"k\": [16], \"n\": [32], "
                           "\"dtype\": [\"float16\", \"float32\"]}",
                           "");
    space *sp = build(sw);
    cr_assert_eq(space_n_shapes(sp), 2);
    cr_expect_str_eq(point_str(space_shape(sp, 0), "op", ""), "gather_inner_matrix_only_bmv");
    cr_expect_eq(point_int(space_shape(sp, 0), "dsize", 0), 2);
    cr_expect_eq(point_int(space_shape(sp, 1), "dsize", 0), 4);
    cr_expect_eq(point_int(space_shape(sp, 0), "transpose_B", -1), 0);
    cr_expect_eq(point_get(space_shape(sp, 0), "method", &(expr_value){0}), -1);

    tune_point p;
    space_config_point(sp, 3, &p); /* custom, chunk = 8 */
    cr_expect_str_eq(point_str(&p, "method", ""), "custom");
    cr_expect_str_eq(point_str(&p, "op", ""), "gather_inner_matrix_only_bmv");
    cr_expect_str_eq(point_str(&p, "dtype", ""), "float16");
    cr_expect_eq(point_int(&p, "chunk", -1), 8);
    cr_expect_eq(point_int(&p, "threads", -1), 256);
    cr_expect_eq(point_int(&p, "dsize", 0), 2);

    space_config_point(sp, 8, &p); /* gather: a baseline, no parameters */
    cr_expect_str_eq(point_str(&p, "method", ""), "gather");
    cr_expect_eq(point_int(&p, "chunk", -1), -1);
    cr_expect_eq(point_int(&p, "g", -1), 8);

    space_config_point(sp, 19, &p); /* slice of the float32 shape */
    cr_expect_str_eq(point_str(&p, "method", ""), "slice");
    cr_expect_eq(point_int(&p, "dsize", 0), 4);
    space_free(sp);
    sweep_free(sw);
}

Test(space, constraint_reading_dsize_and_op)
{
    sweep *sw = make_sweep("{\"g\": [8], \"k_pre\": [64], \"k\": [16], \"n\": [32], "
                           "\"dtype\": [\"float16\", \"float32\"]}",
                           ", \"skip_if\": [\"dsize == 4\", \"op != \\\"gather_inner_matrix_only_bmv\\\"\"]");
    space *sp = build(sw);
    cr_expect_eq(space_n_shapes(sp), 1);
    cr_expect_str_eq(point_str(space_shape(sp, 0), "dtype", ""), "float16");
    cr_expect_eq(space_n_pruned(sp), 10);
    space_free(sp);
    sweep_free(sw);
}

Test(space, evaluation_error_names_constraint_and_point)
{
    sweep *sw = make_sweep("{\"g\": [8], \"k_pre\": [64], \"k\": [16], \"n\": [32]}",
                           ", \"skip_if\": [\"k > 1000\", \"g / (n - 32) > 1\"]");
    tune_error err = {0};
    cr_expect_null(space_build(sw, &err));
    cr_expect_eq(err.code, TUNE_ERR_EVAL);
    cr_expect_str_eq(err.where, "t.json: skip_if[1]");
    cr_expect(strstr(err.message, "g / (n - 32) > 1") != NULL, "%s", err.message);
    cr_expect(strstr(err.message, "g=8") != NULL, "%s", err.message);
    space_free(NULL);
    sweep_free(sw);
}

/* The complete example of docs/sweep-format.md: all three constraint levels at once. */
Test(space, documented_example_counts)
{
    tune_error err = {0};
    char buf[4096];
    sweep *sw = sweep_load("tests/data/valid/doc_example.json", &err);
    cr_assert_not_null(sw, "%s", tune_error_text(&err, buf, sizeof buf));
    space *sp = build(sw);
    cr_expect_eq(space_n_shapes(sp), 216 - 12); /* g = 1024 with n_pre = 32768 is over 4 GiB */
    cr_expect_eq(space_n_params(sp), 7 * 4);
    /* 68 (g, n_pre, dtype, transpose_B) groups, each over n = 16, 32, 64: custom keeps
     * (5 + 6 + 7) x 4 points, slice runs 3 times, gather 3 times in the 34 untransposed groups */
    cr_expect_eq(space_n_configs(sp), 68 * 72 + 68 * 3 + 34 * 3);
    cr_expect_eq(space_n_configs(sp) + space_n_pruned(sp), 216 * (28 + 2));
    space_free(sp);
    sweep_free(sw);
}

/* The byte and FLOP models are checked at every kept shape as skip_if is: a division by zero, an
 * integer overflow, a negative or non-finite value is an error naming the file, the field, the
 * expression and the shape (they became null in the rows before). A pruned shape is not checked. */
typedef struct {
    const char *extra, *where, *needle;
} model_case;

Test(space, model_errors_name_field_and_shape)
{
    static const model_case cases[] = {
        {", \"bytes\": \"g / (n - 32)\"", "t.json: bytes", "division by zero"},
        {", \"flops\": \"g % (k - k)\"", "t.json: flops", "remainder by zero"},
        {", \"bytes\": \"g * 4611686018427387904\"", "t.json: bytes", "integer overflow"},
        {", \"flops\": \"0 - g\"", "t.json: flops", "is -8 at"},
        {", \"bytes\": \"g - 9.5\"", "t.json: bytes", "is -1.5 at"},
        {", \"bytes\": \"log2(g - 8)\"", "t.json: bytes", "log2 needs a positive number"},
        {", \"flops\": \"1e308 * 1e308 * g\"", "t.json: flops", "finite number >= 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sweep *sw = make_sweep("{\"g\": [8], \"k_pre\": [64], \"k\": [16], \"n\": [32]}",
                               cases[i].extra);
        tune_error err = {0};
        cr_expect_null(space_build(sw, &err), "%s built", cases[i].extra);
        cr_expect_eq(err.code, TUNE_ERR_EVAL, "%s", cases[i].extra);
        cr_expect_str_eq(err.where, cases[i].where, "%s", cases[i].extra);
        cr_expect(strstr(err.message, cases[i].needle) != NULL, "%s: %s", cases[i].extra,
                  err.message);
        cr_expect(strstr(err.message, "g=8") != NULL, "%s: %s", cases[i].extra, err.message);
        sweep_free(sw);
    }
    /* the shape where the model divides by zero is pruned: no error */
    sweep *sw = make_sweep("{\"g\": [8, 16], \"k_pre\": [64], \"k\": [16], \"n\": [32]}",
                           ", \"bytes\": \"n / (g - 8)\", \"skip_if\": \"g == 8\"");
    space *sp = build(sw);
    cr_expect_eq(space_n_shapes(sp), 1);
    space_free(sp);
    sweep_free(sw);
}
