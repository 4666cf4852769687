#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "core/point.h"

Test(point, set_and_get)
{
    tune_point p = {0};
    cr_assert_eq(point_set_int(&p, "g", 256), 0);
    cr_assert_eq(point_set_str(&p, "dtype", "float16"), 0);
    cr_assert_eq(point_set(&p, "alpha", expr_float(0.5)), 0);
    cr_expect_eq(p.n, 3);
    cr_expect_eq(point_int(&p, "g", -1), 256);
    cr_expect_str_eq(point_str(&p, "dtype", NULL), "float16");
    expr_value v;
    cr_assert_eq(point_get(&p, "alpha", &v), 0);
    cr_expect_eq(v.type, EXPR_FLOAT);
    cr_expect_float_eq(v.f, 0.5, 0);
}

Test(point, strings_are_borrowed)
{
    static const char value[] = "bfloat16";
    tune_point p = {0};
    point_set_str(&p, "dtype", value);
    cr_expect_eq(point_str(&p, "dtype", NULL), value);
}

Test(point, missing_and_wrong_type_give_default)
{
    tune_point p = {0};
    point_set_int(&p, "g", 1);
    point_set_str(&p, "s", "x");
    cr_expect_eq(point_int(&p, "nope", -7), -7);
    cr_expect_eq(point_int(&p, "s", -7), -7);
    cr_expect_str_eq(point_str(&p, "g", "dflt"), "dflt");
    cr_expect_null(point_str(&p, "nope", NULL));
    expr_value v = expr_int(99);
    cr_expect_eq(point_get(&p, "nope", &v), -1);
    cr_expect_eq(v.i, 99);
}

Test(point, set_replaces_existing_name)
{
    tune_point p = {0};
    point_set_int(&p, "g", 1);
    point_set_int(&p, "k", 2);
    point_set_str(&p, "g", "now a string");
    cr_expect_eq(p.n, 2);
    cr_expect_str_eq(point_str(&p, "g", NULL), "now a string");
    cr_expect_str_eq(p.names[0], "g", "replacing keeps the position");
}

Test(point, full_point_refuses_new_names)
{
    static char names[TUNE_MAX_AXES + 1][16];
    tune_point p = {0};
    for (int k = 0; k < TUNE_MAX_AXES; k++) {
        snprintf(names[k], sizeof names[k], "x%d", k);
        cr_assert_eq(point_set_int(&p, names[k], k), 0);
    }
    snprintf(names[TUNE_MAX_AXES], sizeof names[0], "extra");
    cr_expect_eq(point_set_int(&p, names[TUNE_MAX_AXES], 1), -1);
    cr_expect_eq(p.n, TUNE_MAX_AXES);
    cr_expect_eq(point_set_int(&p, "x3", 42), 0, "replacing still works when full");
    cr_expect_eq(point_int(&p, "x3", -1), 42);
}

Test(point, null_arguments)
{
    tune_point p = {0};
    cr_expect_eq(point_set_int(NULL, "g", 1), -1);
    cr_expect_eq(point_set_int(&p, NULL, 1), -1);
    cr_expect_eq(point_get(NULL, "g", NULL), -1);
    cr_expect_eq(point_merge(NULL, &p), -1);
    point_set_int(&p, "g", 1);
    cr_expect_eq(point_get(&p, "g", NULL), 0, "out may be NULL to test presence");
}

Test(point, lookup_adaptor_feeds_expressions)
{
    tune_point p = {0};
    point_set_int(&p, "k", 256);
    point_set_str(&p, "dtype", "float16");
    expr *e = expr_parse("dtype == \"float16\" && min(64, 8192 / k) == 32", NULL);
    cr_assert_not_null(e);
    expr_value v;
    cr_assert_eq(expr_eval(e, point_lookup, &p, &v, NULL), TUNE_OK);
    cr_expect_eq(v.i, 1);
    expr_free(e);
    expr_value out;
    cr_expect_eq(point_lookup(&p, "k", &out), 0);
    cr_expect_eq(out.i, 256);
    cr_expect_eq(point_lookup(&p, "kk", &out), -1);
}

Test(point, merge_appends_and_replaces)
{
    tune_point shape = {0}, params = {0};
    point_set_int(&shape, "g", 256);
    point_set_int(&shape, "k", 1);
    point_set_int(&params, "k", 64);
    point_set_str(&params, "method", "tuned");
    cr_assert_eq(point_merge(&shape, &params), 0);
    cr_expect_eq(shape.n, 3);
    cr_expect_eq(point_int(&shape, "k", -1), 64);
    cr_expect_str_eq(point_str(&shape, "method", NULL), "tuned");
    cr_expect_eq(params.n, 2, "src is unchanged");
}

Test(point, merge_fails_when_full)
{
    static char names[2 * TUNE_MAX_AXES][16];
    tune_point a = {0}, b = {0};
    for (int k = 0; k < TUNE_MAX_AXES; k++) {
        snprintf(names[k], sizeof names[k], "a%d", k);
        snprintf(names[TUNE_MAX_AXES + k], sizeof names[k], "b%d", k);
        point_set_int(&a, names[k], k);
        point_set_int(&b, names[TUNE_MAX_AXES + k], k);
    }
    cr_expect_eq(point_merge(&a, &b), -1);
}

Test(point, format)
{
    tune_point p = {0};
    point_set_int(&p, "g", 256);
    point_set_int(&p, "k_pre", 1024);
    point_set_str(&p, "dtype", "float16");
    point_set(&p, "alpha", expr_float(2.0));
    char buf[128];
    cr_expect_eq(point_format(&p, buf, sizeof buf), buf);
    cr_expect_str_eq(buf, "g=256 k_pre=1024 dtype=float16 alpha=2.0");
}

Test(point, format_empty_and_truncated)
{
    tune_point p = {0};
    char buf[8] = "garbage";
    cr_expect_str_eq(point_format(&p, buf, sizeof buf), "");
    point_set_int(&p, "g", 256);
    point_set_int(&p, "k_pre", 1024);
    point_format(&p, buf, sizeof buf);
    cr_expect_str_eq(buf, "g=256 k");
    cr_expect_eq(point_format(&p, buf, 0), buf, "size 0 writes nothing");
}

typedef struct {
    char name[16];
    size_t size;
} dtype_case;

static dtype_case dtype_cases[] = {
    {"float16", 2}, {"bfloat16", 2}, {"float32", 4}, {"int32", 4},   {"float64", 8},
    {"int8", 0},    {"half", 0},     {"", 0},        {"Float16", 0}, {"float16 ", 0},
};

ParameterizedTestParameters(point, dtype_size)
{
    return cr_make_param_array(dtype_case, dtype_cases, sizeof dtype_cases / sizeof dtype_cases[0]);
}

ParameterizedTest(dtype_case *c, point, dtype_size)
{
    cr_expect_eq(tune_dtype_size(c->name), c->size, "'%s'", c->name);
}

Test(point, dtype_size_null)
{
    cr_expect_eq(tune_dtype_size(NULL), 0);
}
