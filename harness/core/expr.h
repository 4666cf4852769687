/* expr.h - the small expression language of sweep constraints, byte/FLOP models and fitted
 * heuristics.
 *
 *   tune_error err = {0};
 *   expr *e = expr_parse("min(64, 8192 / k)", &err);
 *   tune_point p = {0};
 *   point_set_int(&p, "k", 256);
 *   expr_value v;
 *   if (expr_eval(e, point_lookup, &p, &v, &err) == TUNE_OK) printf("%lld\n", (long long)v.i); // 32
 *   expr_free(e);
 *
 * Grammar (lowest to highest precedence):
 *   expr    := or
 *   or      := and ( "||" and )*
 *   and     := cmp ( "&&" cmp )*
 *   cmp     := add ( ("==" | "!=" | "<" | "<=" | ">" | ">=") add )?
 *   add     := mul ( ("+" | "-") mul )*
 *   mul     := unary ( ("*" | "/" | "%") unary )*
 *   unary   := ("-" | "!" | "+") unary | primary
 *   primary := INT | FLOAT | STRING | NAME | NAME "(" expr ("," expr)* ")" | "(" expr ")"
 * Values are 64-bit integers, doubles or strings (double-quoted literals). Integer op integer is
 * an integer (C semantics: `/` truncates, `%` is the C remainder); with a float operand the result
 * is a float. Comparisons, `&&`, `||` and `!` give the integer 0 or 1; `&&`/`||` short-circuit.
 * Strings support only `==` and `!=` (with strings). Booleans are the integers 0 and 1.
 * Functions: min(a, b, ...), max(a, b, ...) (two or more arguments), abs(x), floor_pow2(x),
 * ceil_pow2(x) (integers >= 1), log2(x) (float); for traffic models, sectors(bytes[, unit])
 * (rounded up to whole 32-byte sectors, or to whole units of `unit` bytes) and distinct(n, draws)
 * (expected distinct values among `draws` uniform draws with replacement from n values: n (1 - (1 -
 * 1/n)^draws), a float). Errors: parse errors give the 1-based column in err->where as "col N";
 * evaluation errors (unknown name, division or remainder by zero, wrong type, wrong arity) are
 * TUNE_ERR_EVAL.
 */
#ifndef TUNE_EXPR_H
#define TUNE_EXPR_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef enum { EXPR_INT, EXPR_FLOAT, EXPR_STR } expr_type;

typedef struct {
    expr_type type;
    int64_t i;     /* EXPR_INT */
    double f;      /* EXPR_FLOAT */
    const char *s; /* EXPR_STR: borrowed (from the expression or the lookup's owner) */
} expr_value;

typedef struct expr expr;

/* Returns 0 and fills *out when name is known, -1 otherwise. */
typedef int (*expr_lookup_fn)(void *ctx, const char *name, expr_value *out);

/* New expression, or NULL with err set (TUNE_ERR_PARSE, where = "col N"). */
TUNE_MUST_CHECK expr *expr_parse(const char *text, tune_error *err);
void expr_free(expr *e);

/* Evaluates e. lookup may be NULL when the expression has no names. */
TUNE_MUST_CHECK tune_status expr_eval(const expr *e, expr_lookup_fn lookup, void *ctx,
                                      expr_value *out, tune_error *err);

/* Distinct identifiers the expression reads (not function names), in order of first use.
 * Fills up to max borrowed pointers (valid while e lives); returns the total count. */
size_t expr_names(const expr *e, const char **names, size_t max);

/* Canonical text of the expression, minimal parentheses: "min(64, 8192 / k)". New string. */
TUNE_MUST_CHECK char *expr_to_string(const expr *e);

/* Helpers on values. */
static inline expr_value expr_int(int64_t i) { expr_value v = {EXPR_INT, i, 0.0, NULL}; return v; }
static inline expr_value expr_float(double f) { expr_value v = {EXPR_FLOAT, 0, f, NULL}; return v; }
static inline expr_value expr_str(const char *s) { expr_value v = {EXPR_STR, 0, 0.0, s}; return v; }
double expr_value_as_double(expr_value v); /* strings give NAN */
int expr_value_truthy(expr_value v);       /* non-zero number; non-empty string */
/* Equality of two values (ints and floats compare numerically; strings by content). */
int expr_value_equal(expr_value a, expr_value b);
/* A total order for sorting: numbers by value (ints and floats compared numerically), before
 * strings by content. -1, 0 or 1. */
int expr_value_order(expr_value a, expr_value b);
/* Writes the value as text ("42", "0.5", "float16") into buf; returns buf. */
const char *expr_value_format(expr_value v, char *buf, size_t size);

#endif
