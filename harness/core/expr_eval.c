/* expr_eval.c - part of the expr module (core/expr.h): printing, evaluation and values. */
#include "core/expr.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/expr_impl.h"

/* ---- Printing ---- */

/* Shortest text that reads back as the same double, always marked as a float ("2.0"). */
static void format_double(double f, char *buf, size_t size)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, f);
        if (strtod(buf, NULL) == f)
            break;
    }
    if (isfinite(f) && !strpbrk(buf, ".e"))
        strncat(buf, ".0", size - strlen(buf) - 1);
}

static int node_level(const node *n)
{
    switch (n->kind) {
    case NODE_UNARY:
        return LEVEL_UNARY;
    case NODE_BINARY:
        return expr_op_level((tok_type)n->op);
    default:
        return LEVEL_PRIMARY;
    }
}

static void write_node(sbuf *b, const node *n);

static void write_operand(sbuf *b, const node *n, int parens)
{
    if (parens)
        expr_sbuf_puts(b, "(");
    write_node(b, n);
    if (parens)
        expr_sbuf_puts(b, ")");
}

static void write_string(sbuf *b, const char *s)
{
    expr_sbuf_puts(b, "\"");
    for (; *s; s++) {
        const char *esc = *s == '"'    ? "\\\""
                          : *s == '\\' ? "\\\\"
                          : *s == '\n' ? "\\n"
                          : *s == '\t' ? "\\t"
                                       : NULL;
        if (esc)
            expr_sbuf_puts(b, esc);
        else
            expr_sbuf_add(b, s, 1);
    }
    expr_sbuf_puts(b, "\"");
}

static void write_node(sbuf *b, const node *n)
{
    char num[64];
    int level = node_level(n);
    switch (n->kind) {
    case NODE_INT:
        snprintf(num, sizeof num, "%" PRId64, n->i);
        expr_sbuf_puts(b, num);
        break;
    case NODE_FLOAT:
        format_double(n->f, num, sizeof num);
        expr_sbuf_puts(b, num);
        break;
    case NODE_STR:
        write_string(b, n->s);
        break;
    case NODE_NAME:
        expr_sbuf_puts(b, n->s);
        break;
    case NODE_UNARY:
        expr_sbuf_puts(b, expr_tok_op_text[n->op]);
        write_operand(b, n->kids[0], node_level(n->kids[0]) < LEVEL_UNARY);
        break;
    case NODE_BINARY:
        /* Left-associative, and a comparison cannot take a bare comparison operand. */
        write_operand(b, n->kids[0], node_level(n->kids[0]) < level + (level == LEVEL_CMP));
        expr_sbuf_puts(b, " ");
        expr_sbuf_puts(b, expr_tok_op_text[n->op]);
        expr_sbuf_puts(b, " ");
        write_operand(b, n->kids[1], node_level(n->kids[1]) <= level);
        break;
    case NODE_CALL:
        expr_sbuf_puts(b, expr_fns[n->op].name);
        expr_sbuf_puts(b, "(");
        for (size_t k = 0; k < n->n_kids; k++) {
            if (k)
                expr_sbuf_puts(b, ", ");
            write_node(b, n->kids[k]);
        }
        expr_sbuf_puts(b, ")");
        break;
    }
}

static char *node_to_string(const node *n)
{
    sbuf b = {0};
    write_node(&b, n);
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

char *expr_to_string(const expr *e)
{
    return e ? node_to_string(e->root) : NULL;
}

/* ---- Evaluation ---- */

typedef struct {
    expr_lookup_fn lookup;
    void *ctx;
    tune_error *err;
} eval_env;

/* Records "<what> in '<text of n>'" at n's column. */
static tune_status eval_fail(const eval_env *env, const node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static tune_status eval_fail(const eval_env *env, const node *n, const char *fmt, ...)
{
    if (!env->err || env->err->code != TUNE_OK)
        return TUNE_ERR_EVAL;
    char where[32], what[512];
    snprintf(where, sizeof where, "col %zu", n->col);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char *text = node_to_string(n);
    tune_error_set(env->err, TUNE_ERR_EVAL, where, "%s in '%s'", what, text ? text : "?");
    free(text);
    return TUNE_ERR_EVAL;
}

static tune_status eval_node(const node *n, const eval_env *env, expr_value *out);

static tune_status eval_int_arith(const node *n, int64_t x, int64_t y, expr_value *out,
                                  const eval_env *env)
{
    int64_t r = 0;
    int overflow = 0;
    switch (n->op) {
    case TOK_ADD:
        overflow = __builtin_add_overflow(x, y, &r);
        break;
    case TOK_SUB:
        overflow = __builtin_sub_overflow(x, y, &r);
        break;
    case TOK_MUL:
        overflow = __builtin_mul_overflow(x, y, &r);
        break;
    case TOK_DIV:
        if (y == 0)
            return eval_fail(env, n, "division by zero");
        overflow = x == INT64_MIN && y == -1;
        r = overflow ? 0 : x / y;
        break;
    case TOK_MOD:
        if (y == 0)
            return eval_fail(env, n, "remainder by zero");
        r = y == -1 ? 0 : x % y; /* INT64_MIN % -1 traps on x86 */
        break;
    }
    if (overflow)
        return eval_fail(env, n, "integer overflow");
    *out = expr_int(r);
    return TUNE_OK;
}

static tune_status eval_arith(const node *n, expr_value a, expr_value b, expr_value *out,
                              const eval_env *env)
{
    if (a.type == EXPR_STR || b.type == EXPR_STR)
        return eval_fail(env, n, "'%s' needs numbers, got a string", expr_tok_op_text[n->op]);
    if (a.type == EXPR_INT && b.type == EXPR_INT)
        return eval_int_arith(n, a.i, b.i, out, env);
    double x = expr_value_as_double(a), y = expr_value_as_double(b);
    switch (n->op) {
    case TOK_ADD:
        *out = expr_float(x + y);
        break;
    case TOK_SUB:
        *out = expr_float(x - y);
        break;
    case TOK_MUL:
        *out = expr_float(x * y);
        break;
    case TOK_DIV:
        if (y == 0)
            return eval_fail(env, n, "division by zero");
        *out = expr_float(x / y);
        break;
    case TOK_MOD:
        if (y == 0)
            return eval_fail(env, n, "remainder by zero");
        *out = expr_float(fmod(x, y));
        break;
    }
    return TUNE_OK;
}

static const char *str_or_empty(const char *s)
{
    return s ? s : "";
}

/* -1, 0 or 1 as a <=> b; *unordered for NaN. */
static int compare_numbers(expr_value a, expr_value b, int *unordered)
{
    *unordered = 0;
    if (a.type == EXPR_INT && b.type == EXPR_INT)
        return (a.i > b.i) - (a.i < b.i);
    double x = expr_value_as_double(a), y = expr_value_as_double(b);
    *unordered = isnan(x) || isnan(y);
    return (x > y) - (x < y);
}

static tune_status eval_compare(const node *n, expr_value a, expr_value b, expr_value *out,
                                const eval_env *env)
{
    int c, unordered = 0;
    if (a.type == EXPR_STR || b.type == EXPR_STR) {
        if (a.type != b.type)
            return eval_fail(env, n, "cannot compare a string with a number");
        if (n->op != TOK_EQ && n->op != TOK_NE)
            return eval_fail(env, n, "strings support only == and !=");
        c = strcmp(str_or_empty(a.s), str_or_empty(b.s)) != 0;
    } else {
        c = compare_numbers(a, b, &unordered);
    }
    int r = 0;
    switch (n->op) {
    case TOK_EQ:
        r = !unordered && c == 0;
        break;
    case TOK_NE:
        r = unordered || c != 0;
        break;
    case TOK_LT:
        r = !unordered && c < 0;
        break;
    case TOK_LE:
        r = !unordered && c <= 0;
        break;
    case TOK_GT:
        r = !unordered && c > 0;
        break;
    case TOK_GE:
        r = !unordered && c >= 0;
        break;
    }
    *out = expr_int(r);
    return TUNE_OK;
}

static tune_status eval_binary(const node *n, const eval_env *env, expr_value *out)
{
    expr_value a, b;
    tune_status st = eval_node(n->kids[0], env, &a);
    if (st != TUNE_OK)
        return st;
    if (n->op == TOK_AND || n->op == TOK_OR) {
        int left = expr_value_truthy(a);
        if (left == (n->op == TOK_OR)) {
            *out = expr_int(left);
            return TUNE_OK;
        }
        if ((st = eval_node(n->kids[1], env, &b)) == TUNE_OK)
            *out = expr_int(expr_value_truthy(b));
        return st;
    }
    if ((st = eval_node(n->kids[1], env, &b)) != TUNE_OK)
        return st;
    if (expr_op_level((tok_type)n->op) == LEVEL_CMP)
        return eval_compare(n, a, b, out, env);
    return eval_arith(n, a, b, out, env);
}

static tune_status eval_unary(const node *n, const eval_env *env, expr_value *out)
{
    expr_value a;
    tune_status st = eval_node(n->kids[0], env, &a);
    if (st != TUNE_OK)
        return st;
    if (n->op == TOK_NOT) {
        *out = expr_int(!expr_value_truthy(a));
        return TUNE_OK;
    }
    if (a.type == EXPR_STR)
        return eval_fail(env, n, "unary '%s' needs a number, got a string", expr_tok_op_text[n->op]);
    if (n->op == TOK_ADD)
        *out = a;
    else if (a.type == EXPR_FLOAT)
        *out = expr_float(-a.f);
    else if (a.i == INT64_MIN)
        return eval_fail(env, n, "integer overflow");
    else
        *out = expr_int(-a.i);
    return TUNE_OK;
}

static tune_status eval_min_max(const node *n, const expr_value *args, expr_value *out,
                                const eval_env *env)
{
    expr_value best = args[0];
    int any_float = 0;
    for (size_t k = 0; k < n->n_kids; k++) {
        if (args[k].type == EXPR_STR)
            return eval_fail(env, n, "%s needs numbers, got a string", expr_fns[n->op].name);
        int unordered;
        int c = compare_numbers(args[k], best, &unordered);
        if (n->op == FN_MIN ? c < 0 : c > 0)
            best = args[k];
        any_float |= args[k].type == EXPR_FLOAT;
    }
    *out = any_float ? expr_float(expr_value_as_double(best)) : best;
    return TUNE_OK;
}

static tune_status eval_pow2(const node *n, expr_value x, expr_value *out, const eval_env *env)
{
    if (x.type != EXPR_INT || x.i < 1) {
        char buf[64];
        return eval_fail(env, n, "%s needs an integer >= 1, got %s", expr_fns[n->op].name,
                         x.type == EXPR_STR ? "a string" : expr_value_format(x, buf, sizeof buf));
    }
    int64_t floor = INT64_C(1) << (63 - __builtin_clzll((unsigned long long)x.i));
    if (n->op == FN_FLOOR_POW2 || floor == x.i)
        *out = expr_int(floor);
    else if (floor > INT64_MAX / 2)
        return eval_fail(env, n, "integer overflow");
    else
        *out = expr_int(floor * 2);
    return TUNE_OK;
}

static tune_status eval_fn1(const node *n, expr_value x, expr_value *out, const eval_env *env)
{
    if (n->op == FN_FLOOR_POW2 || n->op == FN_CEIL_POW2)
        return eval_pow2(n, x, out, env);
    if (x.type == EXPR_STR)
        return eval_fail(env, n, "%s needs a number, got a string", expr_fns[n->op].name);
    if (n->op == FN_LOG2) {
        double v = expr_value_as_double(x);
        if (!(v > 0))
            return eval_fail(env, n, "log2 needs a positive number");
        *out = expr_float(log2(v));
    } else if (x.type == EXPR_FLOAT) {
        *out = expr_float(fabs(x.f));
    } else if (x.i == INT64_MIN) {
        return eval_fail(env, n, "integer overflow");
    } else {
        *out = expr_int(x.i < 0 ? -x.i : x.i);
    }
    return TUNE_OK;
}

/* sectors(bytes[, unit]): bytes rounded up to whole 32-byte sectors (what the L1 and L2 move), or
 * to whole units of `unit` bytes (the L2's DRAM fetch granularity, 64 bytes by default on sm_90);
 * distinct(n, draws): the expected number of distinct values among draws uniform draws with
 * replacement from n, n * (1 - (1 - 1/n)^draws) (repeated rows are fetched once). */
static tune_status eval_traffic_fn(const node *n, const expr_value *args, expr_value *out,
                                   const eval_env *env)
{
    for (size_t k = 0; k < n->n_kids; k++)
        if (args[k].type == EXPR_STR || !(expr_value_as_double(args[k]) >= 0))
            return eval_fail(env, n, "%s needs numbers >= 0", expr_fns[n->op].name);
    if (n->op == FN_SECTORS) {
        /* the unit: 32 (a sector) or the second argument, a whole number of bytes >= 1 */
        int64_t u = 32;
        if (n->n_kids == 2) {
            if (args[1].type != EXPR_INT || args[1].i < 1)
                return eval_fail(env, n, "sectors needs a unit of a whole number of bytes >= 1");
            u = args[1].i;
        }
        if (args[0].type == EXPR_FLOAT)
            *out = expr_float(ceil(args[0].f / (double)u) * (double)u);
        else if (args[0].i > INT64_MAX - (u - 1))
            return eval_fail(env, n, "integer overflow");
        else
            *out = expr_int((args[0].i + u - 1) / u * u);
        return TUNE_OK;
    }
    double pool = expr_value_as_double(args[0]), draws = expr_value_as_double(args[1]);
    if (!(pool >= 1))
        return eval_fail(env, n, "distinct needs a pool of at least 1");
    /* log1p keeps (1 - 1/n)^draws accurate for large n */
    *out = expr_float(draws == 0 ? 0.0 : pool * -expm1(draws * log1p(-1.0 / pool)));
    return TUNE_OK;
}

static tune_status eval_call(const node *n, const eval_env *env, expr_value *out)
{
    const char *name = expr_fns[n->op].name;
    size_t lo = expr_fns[n->op].min_args, hi = expr_fns[n->op].max_args;
    if (n->n_kids < lo || n->n_kids > hi) {
        if (lo == hi)
            return eval_fail(env, n, "%s takes %zu argument%s, got %zu", name, lo,
                             lo == 1 ? "" : "s", n->n_kids);
        if (hi != SIZE_MAX)
            return eval_fail(env, n, "%s takes %zu to %zu arguments, got %zu", name, lo, hi,
                             n->n_kids);
        return eval_fail(env, n, "%s takes at least %zu arguments, got %zu", name, lo, n->n_kids);
    }
    expr_value *args = calloc(n->n_kids, sizeof *args);
    if (!args)
        return tune_error_set(env->err, TUNE_ERR_NOMEM, "", "out of memory evaluating %s", name);
    tune_status st = TUNE_OK;
    for (size_t k = 0; k < n->n_kids && st == TUNE_OK; k++)
        st = eval_node(n->kids[k], env, &args[k]);
    if (st == TUNE_OK)
        st = n->op == FN_MIN || n->op == FN_MAX           ? eval_min_max(n, args, out, env)
             : n->op == FN_SECTORS || n->op == FN_DISTINCT ? eval_traffic_fn(n, args, out, env)
                                                           : eval_fn1(n, args[0], out, env);
    free(args);
    return st;
}

static tune_status eval_name(const node *n, const eval_env *env, expr_value *out)
{
    if (env->lookup && env->lookup(env->ctx, n->s, out) == 0)
        return TUNE_OK;
    char where[32];
    snprintf(where, sizeof where, "col %zu", n->col);
    return tune_error_set(env->err, TUNE_ERR_EVAL, where, "unknown name '%s'", n->s);
}

static tune_status eval_node(const node *n, const eval_env *env, expr_value *out)
{
    switch (n->kind) {
    case NODE_INT:
        *out = expr_int(n->i);
        return TUNE_OK;
    case NODE_FLOAT:
        *out = expr_float(n->f);
        return TUNE_OK;
    case NODE_STR:
        *out = expr_str(n->s);
        return TUNE_OK;
    case NODE_NAME:
        return eval_name(n, env, out);
    case NODE_UNARY:
        return eval_unary(n, env, out);
    case NODE_BINARY:
        return eval_binary(n, env, out);
    case NODE_CALL:
        return eval_call(n, env, out);
    }
    return TUNE_ERR_EVAL;
}

tune_status expr_eval(const expr *e, expr_lookup_fn lookup, void *ctx, expr_value *out,
                      tune_error *err)
{
    if (!e || !out)
        return tune_error_set(err, TUNE_ERR_EVAL, "", "no expression to evaluate");
    eval_env env = {lookup, ctx, err};
    expr_value v;
    tune_status st = eval_node(e->root, &env, &v);
    if (st == TUNE_OK)
        *out = v;
    return st;
}

/* ---- Values ---- */

double expr_value_as_double(expr_value v)
{
    switch (v.type) {
    case EXPR_INT:
        return (double)v.i;
    case EXPR_FLOAT:
        return v.f;
    default:
        return NAN;
    }
}

int expr_value_truthy(expr_value v)
{
    switch (v.type) {
    case EXPR_INT:
        return v.i != 0;
    case EXPR_FLOAT:
        return v.f != 0;
    default:
        return v.s && v.s[0];
    }
}

int expr_value_equal(expr_value a, expr_value b)
{
    if (a.type == EXPR_STR || b.type == EXPR_STR)
        return a.type == b.type && strcmp(str_or_empty(a.s), str_or_empty(b.s)) == 0;
    int unordered;
    return compare_numbers(a, b, &unordered) == 0 && !unordered;
}

int expr_value_order(expr_value a, expr_value b)
{
    int as = a.type == EXPR_STR, bs = b.type == EXPR_STR;
    if (as || bs) {
        int c = as != bs ? as - bs : strcmp(str_or_empty(a.s), str_or_empty(b.s));
        return (c > 0) - (c < 0);
    }
    int unordered;
    return compare_numbers(a, b, &unordered);
}

const char *expr_value_format(expr_value v, char *buf, size_t size)
{
    if (!buf || size == 0)
        return buf;
    switch (v.type) {
    case EXPR_INT:
        snprintf(buf, size, "%" PRId64, v.i);
        break;
    case EXPR_FLOAT: {
        char tmp[64];
        format_double(v.f, tmp, sizeof tmp);
        snprintf(buf, size, "%s", tmp);
        break;
    }
    default:
        snprintf(buf, size, "%s", str_or_empty(v.s));
        break;
    }
    return buf;
}
