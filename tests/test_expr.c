#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/expr.h"
#include "core/point.h"

/* Names every case may read. */
static tune_point ctx_point(void)
{
    tune_point p = {0};
    point_set_int(&p, "g", 2048);
    point_set_int(&p, "k", 256);
    point_set_int(&p, "k_pre", 16384);
    point_set_int(&p, "zero", 0);
    point_set_int(&p, "a", 3);
    point_set_int(&p, "b", 5);
    point_set_int(&p, "c", 7);
    point_set_int(&p, "d", 11);
    point_set_int(&p, "big", INT64_MAX);
    point_set_int(&p, "small", INT64_MIN);
    point_set(&p, "half", expr_float(0.5));
    point_set_str(&p, "dtype", "float16");
    return p;
}

/* Parses and evaluates text against ctx_point(); asserts both succeed. */
static expr_value eval_ok(const char *text)
{
    tune_error err = {0};
    expr *e = expr_parse(text, &err);
    cr_assert_not_null(e, "parse '%s': %s: %s", text, err.where, err.message);
    tune_point p = ctx_point();
    expr_value v = {0};
    tune_status st = expr_eval(e, point_lookup, &p, &v, &err);
    expr_free(e);
    cr_assert_eq(st, TUNE_OK, "eval '%s': %s: %s", text, err.where, err.message);
    return v;
}

/* Parameters are copied into the test processes: text lives in arrays, not pointers. */
typedef struct {
    char text[64];
    int64_t i;
} int_case;

static int_case int_cases[] = {
    {"1 + 2 * 3", 7},
    {"(1 + 2) * 3", 9},
    {"10 - 4 - 3", 3},
    {"64 / 4 / 2", 8},
    {"2 * 3 % 4", 2},
    {"7 / 2", 3},
    {"-7 / 2", -3},
    {"7 / -2", -3},
    {"7 % 3", 1},
    {"-7 % 3", -1},
    {"small % -1", 0},
    {"1 < 2", 1},
    {"2 <= 2", 1},
    {"3 > 4", 0},
    {"3 >= 4", 0},
    {"1 == 1.0", 1},
    {"1 != 2", 1},
    {"1.5 < 2", 1},
    {"1 + 1 == 2", 1},
    {"1 || 0 && 0", 1},
    {"(1 || 0) && 0", 0},
    {"2 && 3", 1},
    {"0.0 || 0", 0},
    {"!0", 1},
    {"!5", 0},
    {"!!7", 1},
    {"!dtype", 0},
    {"!\"\"", 1},
    {"-k", -256},
    {"- -3", 3},
    {"+4", 4},
    {"-2 * -3", 6},
    {"!1 + 1", 1},
    {"min(3, 1, 2)", 1},
    {"max(3, 1, 2)", 3},
    {"min(-5, 5)", -5},
    {"abs(-5)", 5},
    {"abs(5)", 5},
    {"floor_pow2(100)", 64},
    {"ceil_pow2(100)", 128},
    {"floor_pow2(1)", 1},
    {"ceil_pow2(1)", 1},
    {"floor_pow2(64)", 64},
    {"ceil_pow2(64)", 64},
    {"ceil_pow2(65)", 128},
    {"floor_pow2(big)", INT64_C(1) << 62},
    {"dtype == \"float16\"", 1},
    {"dtype != \"float16\"", 0},
    {"\"a\" == \"b\"", 0},
    {"\"a\\\"b\" == \"a\\\"b\"", 1},
    {"k == 0 || 8192 / k > 1", 1},
    {"zero == 0 || 8192 / zero > 1", 1},
    {"zero != 0 && 8192 / zero > 1", 0},
    {"g >= 2048 && k_pre >= 16384", 1},
    {"big - 1", INT64_MAX - 1},
    {"small + 1", INT64_MIN + 1},
    {"9223372036854775807", INT64_MAX},
    {"a\t+\nb", 8},
    {"sectors(0)", 0},
    {"sectors(1)", 32},
    {"sectors(32)", 32},
    {"sectors(33)", 64},
    {"sectors(4 * 64)", 256},
    /* a unit other than the 32-byte sector: the L2's DRAM fetch granularity */
    {"sectors(65, 64)", 128},
    {"sectors(64, 64)", 64},
    {"sectors(1, 64)", 64},
    {"sectors(0, 64)", 0},
    {"sectors(7, 1)", 7},
};

ParameterizedTestParameters(expr, int_result)
{
    return cr_make_param_array(int_case, int_cases, sizeof int_cases / sizeof int_cases[0]);
}

ParameterizedTest(int_case *c, expr, int_result)
{
    expr_value v = eval_ok(c->text);
    cr_assert_eq(v.type, EXPR_INT, "'%s' should give an integer", c->text);
    cr_expect_eq(v.i, c->i, "'%s': got %lld, want %lld", c->text, (long long)v.i, (long long)c->i);
}

typedef struct {
    char text[64];
    double f;
} float_case;

static float_case float_cases[] = {
    {"7 / 2.0", 3.5},     {"7.0 / 2", 3.5},   {"7.5 % 2", 1.5},     {"-7.5 % 2", -1.5},
    {"2 * half", 1.0},    {"half + 1", 1.5},  {"-2.5", -2.5},       {"1e3", 1000.0},
    {".5 + 1", 1.5},      {"2.5E-1", 0.25},   {"min(2, 1.5)", 1.5}, {"max(1, 2.0)", 2.0},
    {"min(1, 2.0)", 1.0}, {"abs(-2.5)", 2.5}, {"log2(8)", 3.0},     {"log2(0.5)", -1.0},
    {"log2(k)", 8.0},
    /* distinct(n, d) = n (1 - (1 - 1/n)^d), hand-computed */
    {"distinct(4, 2)", 1.75}, {"distinct(2, 3)", 1.75}, {"distinct(1, 5)", 1.0},
    {"distinct(8, 0)", 0.0}, {"distinct(1024, 1)", 1.0}, {"sectors(33.5)", 64.0},
    {"sectors(64.5, 64)", 128.0},
};

ParameterizedTestParameters(expr, float_result)
{
    return cr_make_param_array(float_case, float_cases, sizeof float_cases / sizeof float_cases[0]);
}

ParameterizedTest(float_case *c, expr, float_result)
{
    expr_value v = eval_ok(c->text);
    cr_assert_eq(v.type, EXPR_FLOAT, "'%s' should give a float", c->text);
    cr_expect_float_eq(v.f, c->f, 1e-12, "'%s': got %g, want %g", c->text, v.f, c->f);
}

Test(expr, string_result_is_borrowed_from_expression)
{
    expr *e = expr_parse("\"tab\\there\"", NULL);
    cr_assert_not_null(e);
    expr_value v;
    cr_assert_eq(expr_eval(e, NULL, NULL, &v, NULL), TUNE_OK);
    cr_assert_eq(v.type, EXPR_STR);
    cr_expect_str_eq(v.s, "tab\there");
    expr_free(e);
}

typedef struct {
    int64_t k, want;
} minmax_case;

static minmax_case header_cases[] = {{64, 64}, {128, 64}, {256, 32}, {512, 16}};

ParameterizedTestParameters(expr, header_example)
{
    return cr_make_param_array(minmax_case, header_cases, 4);
}

ParameterizedTest(minmax_case *c, expr, header_example)
{
    tune_error err = {0};
    expr *e = expr_parse("min(64, 8192 / k)", &err);
    cr_assert_not_null(e);
    tune_point p = {0};
    point_set_int(&p, "k", c->k);
    expr_value v;
    cr_assert_eq(expr_eval(e, point_lookup, &p, &v, &err), TUNE_OK);
    cr_expect_eq(v.type, EXPR_INT);
    cr_expect_eq(v.i, c->want, "k=%lld: got %lld", (long long)c->k, (long long)v.i);
    expr_free(e);
}

typedef struct {
    char text[64];
    char where[16];
    char message[128];
} error_case;

static error_case eval_errors[] = {
    {"kk + 1", "col 1", "unknown name 'kk'"},
    {"2 * (1 + nope)", "col 10", "unknown name 'nope'"},
    {"8192 / zero", "col 6", "division by zero in '8192 / zero'"},
    {"8192 / (k - k)", "col 6", "division by zero in '8192 / (k - k)'"},
    {"8192 % zero", "col 6", "remainder by zero in '8192 % zero'"},
    {"1.0 / 0", "col 5", "division by zero in '1.0 / 0'"},
    {"1.5 % 0.0", "col 5", "remainder by zero in '1.5 % 0.0'"},
    {"big + 1", "col 5", "integer overflow in 'big + 1'"},
    {"small - 1", "col 7", "integer overflow in 'small - 1'"},
    {"big * 2", "col 5", "integer overflow in 'big * 2'"},
    {"small / -1", "col 7", "integer overflow in 'small / -1'"},
    {"-small", "col 1", "integer overflow in '-small'"},
    {"abs(small)", "col 1", "integer overflow in 'abs(small)'"},
    {"ceil_pow2(big)", "col 1", "integer overflow in 'ceil_pow2(big)'"},
    {"min(1)", "col 1", "min takes at least 2 arguments, got 1 in 'min(1)'"},
    {"max(k)", "col 1", "max takes at least 2 arguments, got 1 in 'max(k)'"},
    {"abs(1, 2)", "col 1", "abs takes 1 argument, got 2 in 'abs(1, 2)'"},
    {"1 + log2(2, 3)", "col 5", "log2 takes 1 argument, got 2 in 'log2(2, 3)'"},
    {"floor_pow2(0)", "col 1", "floor_pow2 needs an integer >= 1, got 0 in 'floor_pow2(0)'"},
    {"ceil_pow2(-3)", "col 1", "ceil_pow2 needs an integer >= 1, got -3 in 'ceil_pow2(-3)'"},
    {"ceil_pow2(2.5)", "col 1", "ceil_pow2 needs an integer >= 1, got 2.5 in 'ceil_pow2(2.5)'"},
    {"floor_pow2(dtype)", "col 1",
     "floor_pow2 needs an integer >= 1, got a string in 'floor_pow2(dtype)'"},
    {"log2(0)", "col 1", "log2 needs a positive number in 'log2(0)'"},
    {"log2(-1.5)", "col 1", "log2 needs a positive number in 'log2(-1.5)'"},
    {"log2(dtype)", "col 1", "log2 needs a number, got a string in 'log2(dtype)'"},
    {"sectors(-1)", "col 1", "sectors needs numbers >= 0 in 'sectors(-1)'"},
    {"sectors(dtype)", "col 1", "sectors needs numbers >= 0 in 'sectors(dtype)'"},
    {"sectors(1, 0)", "col 1",
     "sectors needs a unit of a whole number of bytes >= 1 in 'sectors(1, 0)'"},
    {"sectors(1, 2.5)", "col 1",
     "sectors needs a unit of a whole number of bytes >= 1 in 'sectors(1, 2.5)'"},
    {"sectors(1, 2, 3)", "col 1", "sectors takes 1 to 2 arguments, got 3 in 'sectors(1, 2, 3)'"},
    {"distinct(0, 3)", "col 1", "distinct needs a pool of at least 1 in 'distinct(0, 3)'"},
    {"distinct(4, -1)", "col 1", "distinct needs numbers >= 0 in 'distinct(4, -1)'"},
    {"distinct(4)", "col 1", "distinct takes 2 arguments, got 1 in 'distinct(4)'"},
    {"abs(dtype)", "col 1", "abs needs a number, got a string in 'abs(dtype)'"},
    {"dtype + 1", "col 7", "'+' needs numbers, got a string in 'dtype + 1'"},
    {"dtype < \"z\"", "col 7", "strings support only == and != in 'dtype < \"z\"'"},
    {"dtype == 1", "col 7", "cannot compare a string with a number in 'dtype == 1'"},
    {"-dtype", "col 1", "unary '-' needs a number, got a string in '-dtype'"},
    {"min(dtype, 1)", "col 1", "min needs numbers, got a string in 'min(dtype, 1)'"},
    {"k > 0 && 1 / zero", "col 12", "division by zero in '1 / zero'"},
};

ParameterizedTestParameters(expr, eval_error)
{
    return cr_make_param_array(error_case, eval_errors, sizeof eval_errors / sizeof eval_errors[0]);
}

ParameterizedTest(error_case *c, expr, eval_error)
{
    tune_error err = {0};
    expr *e = expr_parse(c->text, &err);
    cr_assert_not_null(e, "parse '%s': %s", c->text, err.message);
    tune_point p = ctx_point();
    expr_value v = expr_int(12345);
    cr_expect_eq(expr_eval(e, point_lookup, &p, &v, &err), TUNE_ERR_EVAL, "'%s'", c->text);
    cr_expect_eq(err.code, TUNE_ERR_EVAL);
    cr_expect_str_eq(err.message, c->message);
    cr_expect_str_eq(err.where, c->where, "'%s'", c->text);
    cr_expect_eq(v.i, 12345, "out must be left alone on error");
    expr_free(e);
}

static error_case parse_errors[] = {
    {"", "col 1", "unexpected end of expression"},
    {"   ", "col 4", "unexpected end of expression"},
    {"1 +", "col 4", "unexpected end of expression"},
    {"-", "col 2", "unexpected end of expression"},
    {"min(1, 2", "col 9", "expected ')' after arguments of min, got end of expression"},
    {"min(1 2)", "col 7", "expected ')' after arguments of min, got '2'"},
    {"max(1,)", "col 7", "expected a number, name, string or '(', got ')'"},
    {"min()", "col 5", "expected a number, name, string or '(', got ')'"},
    {"foo(1)", "col 1", "unknown function 'foo'"},
    {"1 + bar (2)", "col 5", "unknown function 'bar'"},
    {"(1 + 2", "col 7", "expected ')' to close '(' at col 1, got end of expression"},
    {"((1) + 2 3", "col 10", "expected ')' to close '(' at col 1, got '3'"},
    {"1 + 2)", "col 6", "unmatched ')'"},
    {"a b", "col 3", "expected an operator or end of expression, got 'b'"},
    {"2 * * 3", "col 5", "expected a number, name, string or '(', got '*'"},
    {"a = 1", "col 3", "unexpected character '=' (did you mean '=='?)"},
    {"a & b", "col 3", "unexpected character '&' (did you mean '&&'?)"},
    {"a | b", "col 3", "unexpected character '|' (did you mean '||'?)"},
    {"a > 1 and b < 2", "col 7",
     "expected an operator or end of expression, got 'and' (Python's 'and' is written && here)"},
    {"a or b", "col 3",
     "expected an operator or end of expression, got 'or' (Python's 'or' is written || here)"},
    {"not a", "col 5",
     "expected an operator or end of expression, got 'a' (Python's 'not' is written ! here)"},
    {"not(a)", "col 1", "unknown function 'not' (Python's 'not' is written ! here)"},
    {"android b", "col 9", "expected an operator or end of expression, got 'b'"},
    {"s == \"a or b\" c", "col 15", "expected an operator or end of expression, got 'c'"},
    {"a # b", "col 3", "unexpected character '#'"},
    {"a.b", "col 2", "unexpected character '.'"},
    {"1 \x01", "col 3", "unexpected byte 0x01"},
    {"1 < 2 < 3", "col 7", "comparisons do not chain; add parentheses"},
    {"(a == b != c)", "col 9", "comparisons do not chain; add parentheses"},
    {"x == \"abc", "col 6", "unterminated string"},
    {"\"a\\qb\"", "col 3", "unknown escape in string (use \\\" \\\\ \\n \\t)"},
    {"12abc", "col 1", "malformed number '12a'"},
    {"1.2.3", "col 1", "malformed number '1.2.'"},
    {"1e+", "col 1", "malformed number '1e'"},
    {"99999999999999999999", "col 1", "integer literal too large (max 9223372036854775807)"},
    {"-9223372036854775808", "col 2", "integer literal too large (max 9223372036854775807)"},
    {"1e999", "col 1", "float literal out of range"},
};

ParameterizedTestParameters(expr, parse_error)
{
    return cr_make_param_array(error_case, parse_errors,
                               sizeof parse_errors / sizeof parse_errors[0]);
}

ParameterizedTest(error_case *c, expr, parse_error)
{
    tune_error err = {0};
    cr_expect_null(expr_parse(c->text, &err), "'%s' should not parse", c->text);
    cr_expect_eq(err.code, TUNE_ERR_PARSE);
    cr_expect_str_eq(err.where, c->where, "'%s'", c->text);
    cr_expect_str_eq(err.message, c->message, "'%s'", c->text);
    cr_expect_null(expr_parse(c->text, NULL), "NULL err is allowed");
}

Test(expr, first_error_wins)
{
    tune_error err = {0};
    tune_error_set(&err, TUNE_ERR_IO, "f", "earlier");
    cr_expect_null(expr_parse("1 +", &err));
    cr_expect_eq(err.code, TUNE_ERR_IO);
    cr_expect_str_eq(err.message, "earlier");
}

Test(expr, null_arguments)
{
    tune_error err = {0};
    cr_expect_null(expr_parse(NULL, &err));
    cr_expect_eq(err.code, TUNE_ERR_PARSE);
    expr_free(NULL);
    expr_value v;
    cr_expect_eq(expr_eval(NULL, NULL, NULL, &v, NULL), TUNE_ERR_EVAL);
    cr_expect_null(expr_to_string(NULL));
    cr_expect_eq(expr_names(NULL, NULL, 0), 0);
}

Test(expr, eval_without_lookup)
{
    expr *e = expr_parse("1 + k", NULL);
    cr_assert_not_null(e);
    tune_error err = {0};
    expr_value v;
    cr_expect_eq(expr_eval(e, NULL, NULL, &v, &err), TUNE_ERR_EVAL);
    cr_expect_str_eq(err.message, "unknown name 'k'");
    expr_free(e);
}

static char *repeat(const char *s, size_t n)
{
    size_t len = strlen(s);
    char *out = malloc(len * n + 1);
    for (size_t k = 0; k < n; k++)
        memcpy(out + k * len, s, len);
    out[len * n] = '\0';
    return out;
}

/* open^n core close^n */
static char *nest(const char *open, const char *core, const char *close, size_t n)
{
    char *o = repeat(open, n), *c = repeat(close, n);
    size_t size = strlen(o) + strlen(core) + strlen(c) + 1;
    char *out = malloc(size);
    snprintf(out, size, "%s%s%s", o, core, c);
    free(o);
    free(c);
    return out;
}

static void expect_too_deep(char *text)
{
    tune_error err = {0};
    cr_expect_null(expr_parse(text, &err));
    cr_expect_eq(err.code, TUNE_ERR_PARSE);
    cr_expect_str_eq(err.message, "expression nested too deeply");
    free(text);
}

static void expect_value(char *text, int64_t want)
{
    cr_expect_eq(eval_ok(text).i, want);
    free(text);
}

Test(expr, nesting_limit)
{
    expect_value(nest("(", "1", ")", 200), 1);
    expect_value(nest("-", "1", "", 201), -1);
    expect_value(nest("abs(", "-3", ")", 200), 3);
    expect_too_deep(nest("(", "1", ")", 300));
    expect_too_deep(nest("-", "1", "", 100000));
    expect_too_deep(nest("min(1, ", "1", ")", 300));
    expect_too_deep(nest("(", "", "", 1000000));
}

Test(expr, long_chains)
{
    char *sum = repeat("1 + ", 999);
    char *text = nest("", sum, "1", 1);
    expect_value(text, 1000);
    free(sum);
    sum = repeat("1 + ", 5000);
    expect_too_deep(nest("", sum, "1", 1));
    free(sum);
    /* Many arguments are flat: no depth. */
    char *args = repeat("1, ", 5000);
    expect_value(nest("min(", args, "0)", 1), 0);
    free(args);
}

Test(expr, names_distinct_in_order)
{
    expr *e = expr_parse("b + a * b + min(c, a) + max(x_1, 2) + b", NULL);
    cr_assert_not_null(e);
    const char *names[8];
    cr_assert_eq(expr_names(e, names, 8), 4);
    cr_expect_str_eq(names[0], "b");
    cr_expect_str_eq(names[1], "a");
    cr_expect_str_eq(names[2], "c");
    cr_expect_str_eq(names[3], "x_1");
    const char *two[2] = {0};
    cr_expect_eq(expr_names(e, two, 2), 4, "total count even when max is smaller");
    cr_expect_str_eq(two[0], "b");
    cr_expect_str_eq(two[1], "a");
    cr_expect_eq(expr_names(e, NULL, 0), 4);
    expr_free(e);
}

Test(expr, names_exclude_functions_and_strings)
{
    expr *e = expr_parse("min(1, floor_pow2(8)) == \"k\"", NULL);
    cr_assert_not_null(e);
    cr_expect_eq(expr_names(e, NULL, 0), 0);
    expr_free(e);
    e = expr_parse("min + 1", NULL); /* a function name without '(' is a plain name */
    cr_assert_not_null(e);
    const char *name = NULL;
    cr_expect_eq(expr_names(e, &name, 1), 1);
    cr_expect_str_eq(name, "min");
    expr_free(e);
}

typedef struct {
    char text[64];
    char canonical[64];
} print_case;

static print_case print_cases[] = {
    {"min(64,8192/k)", "min(64, 8192 / k)"},
    {"g>=2048&&k_pre>=16384", "g >= 2048 && k_pre >= 16384"},
    {"((a + b))", "a + b"},
    {"(a + b) * c", "(a + b) * c"},
    {"a + (b * c)", "a + b * c"},
    {"a - (b - c)", "a - (b - c)"},
    {"(a - b) - c", "a - b - c"},
    {"a / (b * c)", "a / (b * c)"},
    {"a * (b / c)", "a * (b / c)"},
    {"(a * b) % c", "a * b % c"},
    {"(a < b) == (c < d)", "(a < b) == (c < d)"},
    {"(a + 1) < b", "a + 1 < b"},
    {"a || (b && c)", "a || b && c"},
    {"(a || b) && c", "(a || b) && c"},
    {"a || (b || c)", "a || (b || c)"},
    {"-(a + b)", "-(a + b)"},
    {"-(-a)", "--a"},
    {"(-a) * b", "-a * b"},
    {"-(a * b)", "-(a * b)"},
    {"!(a == b)", "!(a == b)"},
    {"! a && b", "!a && b"},
    {"- 3", "-3"},
    {"+ a", "+a"},
    {"a - -1", "a - -1"},
    {"1e3", "1000.0"},
    {"2.50", "2.5"},
    {"0.1", "0.1"},
    {"1e20", "1e+20"},
    {"1.5e-7", "1.5e-07"},
    {"dtype == \"float16\"", "dtype == \"float16\""},
    {"\"q\\\"b\\\\c\\n\"", "\"q\\\"b\\\\c\\n\""},
    {"max(1, -2, (3))", "max(1, -2, 3)"},
    {"abs(  a-b )", "abs(a - b)"},
    {"log2(a) * 2.0", "log2(a) * 2.0"},
    {"(a)", "a"},
    {"ceil_pow2(floor_pow2(a + 1))", "ceil_pow2(floor_pow2(a + 1))"},
};

ParameterizedTestParameters(expr, to_string)
{
    return cr_make_param_array(print_case, print_cases, sizeof print_cases / sizeof print_cases[0]);
}

static void expect_same_value(const expr *x, const expr *y, const char *text)
{
    tune_point p = ctx_point();
    expr_value vx, vy;
    tune_status sx = expr_eval(x, point_lookup, &p, &vx, NULL);
    tune_status sy = expr_eval(y, point_lookup, &p, &vy, NULL);
    cr_expect_eq(sx, sy, "'%s'", text);
    if (sx == TUNE_OK && sy == TUNE_OK) {
        cr_expect_eq(vx.type, vy.type, "'%s'", text);
        int both_nan = vx.type == EXPR_FLOAT && isnan(vx.f) && isnan(vy.f);
        cr_expect(both_nan || expr_value_equal(vx, vy), "'%s' changed value", text);
    }
}

ParameterizedTest(print_case *c, expr, to_string)
{
    expr *e = expr_parse(c->text, NULL);
    cr_assert_not_null(e, "'%s'", c->text);
    char *s = expr_to_string(e);
    cr_assert_not_null(s);
    cr_expect_str_eq(s, c->canonical);
    expr *again = expr_parse(s, NULL);
    cr_assert_not_null(again, "canonical '%s' must parse", s);
    char *s2 = expr_to_string(again);
    cr_expect_str_eq(s2, s, "canonical text is a fixed point");
    expect_same_value(e, again, c->text);
    free(s);
    free(s2);
    expr_free(again);
    expr_free(e);
}

static uint64_t rng_next(uint64_t *state)
{
    *state = *state * 6364136223846793005u + 1442695040888963407u;
    return *state >> 33;
}

static void text_add(char *text, size_t size, const char *piece)
{
    size_t len = strlen(text);
    snprintf(text + len, size - len, "%s", piece);
}

/* A random well-formed expression with random spacing and redundant parentheses. */
static void gen_expr(char *text, size_t size, uint64_t *rng, int depth)
{
    static const char *const leaves[] = {"a", "b",   "k",   "dtype", "1",
                                         "0", "2.5", "1e3", "\"s\"", "7"};
    static const char *const binops[] = {"+",  "-",  "*",  "/", "%", "&&",
                                         "||", "==", "!=", "<", ">="};
    static const char *const fns[] = {"min", "max", "abs", "floor_pow2", "ceil_pow2", "log2"};
    uint64_t pick = rng_next(rng) % (depth > 3 ? 1 : 6);
    if (rng_next(rng) % 4 == 0)
        text_add(text, size, " ");
    if (pick == 0) {
        text_add(text, size, leaves[rng_next(rng) % 10]);
    } else if (pick <= 2) {
        size_t op = rng_next(rng) % 11;
        int paren = op >= 7 || rng_next(rng) % 2; /* comparisons do not chain */
        text_add(text, size, paren ? "(" : "");
        gen_expr(text, size, rng, depth + 1);
        text_add(text, size, binops[op]);
        gen_expr(text, size, rng, depth + 1);
        text_add(text, size, paren ? ")" : "");
    } else if (pick == 3) {
        text_add(text, size, (const char *[]){"-", "!", "+"}[rng_next(rng) % 3]);
        gen_expr(text, size, rng, depth + 1);
    } else if (pick == 4) {
        text_add(text, size, "(");
        gen_expr(text, size, rng, depth + 1);
        text_add(text, size, ")");
    } else {
        text_add(text, size, fns[rng_next(rng) % 6]);
        text_add(text, size, "(");
        for (uint64_t n = 1 + rng_next(rng) % 3; n > 0; n--) {
            gen_expr(text, size, rng, depth + 1);
            text_add(text, size, n > 1 ? ", " : "");
        }
        text_add(text, size, ")");
    }
}

/* Random token soup. */
static void gen_soup(char *text, size_t size, uint64_t *rng, int n_tok)
{
    static const char *const pieces[] = {
        "a",
        "b",
        "k",
        "dtype",
        "1",
        "0",
        "2.5",
        "1e3",
        "\"s\"",
        "(",
        ")",
        "(",
        ")",
        ",",
        "+",
        "-",
        "*",
        "/",
        "%",
        "!",
        "&&",
        "||",
        "==",
        "!=",
        "<",
        "<=",
        ">",
        ">=",
        "min(",
        "max(",
        "abs(",
        "floor_pow2(",
        "ceil_pow2(",
        "log2(",
        " ",
        "foo(",
        "=",
        "\"",
        "#",
        ".",
        "9999999999999999999",
    };
    for (int t = 0; t < n_tok; t++)
        text_add(text, size, pieces[rng_next(rng) % (sizeof pieces / sizeof pieces[0])]);
}

/* Parsing random text must never crash; whatever parses must print and re-parse to the same
 * canonical text and value. */
Test(expr, random_inputs_round_trip)
{
    uint64_t rng = 0x9E3779B97F4A7C15u;
    size_t parsed = 0;
    for (int iter = 0; iter < 20000; iter++) {
        char text[512] = "";
        if (iter % 2)
            gen_soup(text, sizeof text, &rng, 1 + iter % 12);
        else
            gen_expr(text, sizeof text, &rng, 0);
        tune_error err = {0};
        expr *e = expr_parse(text, &err);
        if (!e) {
            cr_assert_eq(err.code, TUNE_ERR_PARSE, "'%s': %s", text, err.message);
            cr_assert(strncmp(err.where, "col ", 4) == 0, "'%s'", text);
            cr_assert(iter % 2 || strlen(text) == sizeof text - 1, "generated '%s' must parse: %s",
                      text, err.message);
            continue;
        }
        parsed++;
        char *s = expr_to_string(e);
        expr *again = expr_parse(s, NULL);
        cr_assert_not_null(again, "'%s' printed as '%s' which does not parse", text, s);
        char *s2 = expr_to_string(again);
        cr_assert_str_eq(s2, s, "from '%s'", text);
        expect_same_value(e, again, text);
        free(s);
        free(s2);
        expr_free(again);
        expr_free(e);
    }
    cr_expect_gt(parsed, 10000, "the generator should produce valid expressions too");
}

typedef struct {
    expr_type type;
    int64_t i;
    double f;
    char s[16];
    char text[32];
} format_case;

static format_case format_cases[] = {
    {EXPR_INT, 42, 0, "", "42"},
    {EXPR_INT, INT64_MIN, 0, "", "-9223372036854775808"},
    {EXPR_FLOAT, 0, 0.5, "", "0.5"},
    {EXPR_FLOAT, 0, 2.0, "", "2.0"},
    {EXPR_FLOAT, 0, 0.1, "", "0.1"},
    {EXPR_FLOAT, 0, 1.0 / 3.0, "", "0.3333333333333333"},
    {EXPR_FLOAT, 0, -1e300, "", "-1e+300"},
    {EXPR_STR, 0, 0, "float16", "float16"},
};

ParameterizedTestParameters(expr, value_format)
{
    return cr_make_param_array(format_case, format_cases,
                               sizeof format_cases / sizeof format_cases[0]);
}

ParameterizedTest(format_case *c, expr, value_format)
{
    expr_value v = {c->type, c->i, c->f, c->s};
    char buf[64];
    cr_expect_eq(expr_value_format(v, buf, sizeof buf), buf);
    cr_expect_str_eq(buf, c->text);
}

Test(expr, value_format_truncates)
{
    char buf[4] = "zzz";
    expr_value_format(expr_int(123456), buf, sizeof buf);
    cr_expect_str_eq(buf, "123");
    expr_value_format(expr_str("float16"), buf, 1);
    cr_expect_str_eq(buf, "");
}

Test(expr, value_helpers)
{
    cr_expect_float_eq(expr_value_as_double(expr_int(-3)), -3.0, 0);
    cr_expect_float_eq(expr_value_as_double(expr_float(0.25)), 0.25, 0);
    cr_expect(isnan(expr_value_as_double(expr_str("x"))));

    cr_expect(expr_value_truthy(expr_int(-1)));
    cr_expect_not(expr_value_truthy(expr_int(0)));
    cr_expect(expr_value_truthy(expr_float(0.1)));
    cr_expect_not(expr_value_truthy(expr_float(0.0)));
    cr_expect(expr_value_truthy(expr_str("x")));
    cr_expect_not(expr_value_truthy(expr_str("")));
    cr_expect_not(expr_value_truthy(expr_str(NULL)));

    cr_expect(expr_value_equal(expr_int(2), expr_float(2.0)));
    cr_expect_not(expr_value_equal(expr_int(2), expr_int(3)));
    cr_expect(expr_value_equal(expr_str("ab"), expr_str("ab")));
    cr_expect_not(expr_value_equal(expr_str("ab"), expr_str("ac")));
    cr_expect_not(expr_value_equal(expr_str("2"), expr_int(2)));
    cr_expect_not(expr_value_equal(expr_float(NAN), expr_float(NAN)));
}
