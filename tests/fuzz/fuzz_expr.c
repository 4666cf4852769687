/* fuzz_expr.c - libFuzzer target for the expression language.
 *
 * Input: an expression (cut at the first NUL byte). The target parses it; when it parses, it
 * evaluates it with a lookup that knows k, g, n, chunk (integers) and dtype (a string), prints it
 * with expr_to_string and checks the round trip:
 *   - the printed text parses again;
 *   - it evaluates to the same value (same type; same integer, the same double bit for bit or
 *     both NaN, the same string), or fails with the same status;
 *   - printing the re-parsed expression gives the same text (the canonical form is a fixed point);
 *   - both read the same names.
 * A parse failure must be TUNE_ERR_PARSE (or TUNE_ERR_NOMEM) with "col N" in where. A violated
 * property aborts, so libFuzzer saves the input.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/expr.h"

static int lookup(void *ctx, const char *name, expr_value *out)
{
    (void)ctx;
    static const struct {
        const char *name;
        int64_t v;
    } ints[] = {{"k", 256}, {"g", 1024}, {"n", 128}, {"chunk", 64}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (strcmp(name, ints[i].name) == 0) {
            *out = expr_int(ints[i].v);
            return 0;
        }
    if (strcmp(name, "dtype") == 0) {
        *out = expr_str("float16");
        return 0;
    }
    return -1;
}

static int same_value(expr_value a, expr_value b)
{
    if (a.type != b.type)
        return 0;
    switch (a.type) {
    case EXPR_INT:
        return a.i == b.i;
    case EXPR_FLOAT:
        return (isnan(a.f) && isnan(b.f)) || memcmp(&a.f, &b.f, sizeof a.f) == 0;
    case EXPR_STR:
        return a.s && b.s && strcmp(a.s, b.s) == 0;
    }
    return 0;
}

static void fail(const char *what, const char *input, const char *printed, const tune_error *err)
{
    fprintf(stderr, "fuzz_expr: %s\n  input:   %s\n  printed: %s\n", what, input,
            printed ? printed : "(null)");
    if (err && err->code != TUNE_OK)
        fprintf(stderr, "  error:   %s: %s: %s\n", tune_status_str(err->code), err->where,
                err->message);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    tune_error err = {0};
    expr *e = expr_parse(text, &err);
    if (!e) {
        if (err.code == TUNE_ERR_NOMEM) {
            free(text);
            return 0;
        }
        if (err.code != TUNE_ERR_PARSE || strncmp(err.where, "col ", 4) != 0)
            fail("parse failure without TUNE_ERR_PARSE and a column", text, NULL, &err);
        free(text);
        return 0;
    }

    expr_value v1 = {0};
    tune_error err1 = {0};
    tune_status st1 = expr_eval(e, lookup, NULL, &v1, &err1);
    char buf[128];
    if (st1 == TUNE_OK)
        (void)expr_value_format(v1, buf, sizeof buf);
    else if (err1.code != st1 || err1.message[0] == '\0')
        fail("evaluation failed without an error record", text, NULL, &err1);

    char *s1 = expr_to_string(e);
    if (!s1) /* only on allocation failure */
        goto done;
    tune_error err2 = {0};
    expr *e2 = expr_parse(s1, &err2);
    if (!e2) {
        if (err2.code == TUNE_ERR_NOMEM) {
            free(s1);
            goto done;
        }
        fail("the printed expression does not parse", text, s1, &err2);
    }

    expr_value v2 = {0};
    tune_error err3 = {0};
    tune_status st2 = expr_eval(e2, lookup, NULL, &v2, &err3);
    if (st1 != st2)
        fail("the printed expression evaluates with another status", text, s1,
             st2 != TUNE_OK ? &err3 : &err1);
    if (st1 == TUNE_OK && !same_value(v1, v2))
        fail("the printed expression evaluates to another value", text, s1, NULL);

    char *s2 = expr_to_string(e2);
    if (s2 && strcmp(s1, s2) != 0)
        fail("printing is not a fixed point", s1, s2, NULL);

    const char *n1[64], *n2[64];
    size_t c1 = expr_names(e, n1, 64), c2 = expr_names(e2, n2, 64);
    if (c1 != c2)
        fail("the printed expression reads other names", text, s1, NULL);
    for (size_t i = 0; i < c1 && i < 64; i++)
        if (strcmp(n1[i], n2[i]) != 0)
            fail("the printed expression reads other names", text, s1, NULL);

    free(s2);
    expr_free(e2);
    free(s1);
done:
    expr_free(e);
    free(text);
    return 0;
}
