#include "core/expr.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/expr_impl.h"

const char *const expr_tok_op_text[TOK_NOT + 1] = {
    [TOK_OR] = "||", [TOK_AND] = "&&", [TOK_EQ] = "==", [TOK_NE] = "!=", [TOK_LT] = "<",
    [TOK_LE] = "<=", [TOK_GT] = ">",   [TOK_GE] = ">=", [TOK_ADD] = "+", [TOK_SUB] = "-",
    [TOK_MUL] = "*", [TOK_DIV] = "/",  [TOK_MOD] = "%", [TOK_NOT] = "!",
};

const expr_fn_info expr_fns[FN_COUNT] = {
    [FN_MIN] = {"min", 2, SIZE_MAX},
    [FN_MAX] = {"max", 2, SIZE_MAX},
    [FN_ABS] = {"abs", 1, 1},
    [FN_FLOOR_POW2] = {"floor_pow2", 1, 1},
    [FN_CEIL_POW2] = {"ceil_pow2", 1, 1},
    [FN_LOG2] = {"log2", 1, 1},
    [FN_SECTORS] = {"sectors", 1, 2},
    [FN_DISTINCT] = {"distinct", 2, 2},
};

typedef struct {
    tok_type type;
    size_t start, len; /* byte span in the text */
} token;

typedef struct {
    const char *text;
    size_t pos; /* where the next token starts to be looked for */
    token tok;  /* current token */
    int nesting;
    tune_error *err;
} parser;

/* ---- Small text builder (to_string and messages) ---- */

void expr_sbuf_add(sbuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void expr_sbuf_puts(sbuf *b, const char *s)
{
    expr_sbuf_add(b, s, strlen(s));
}

/* ---- Errors ---- */

static int parse_fail(parser *ps, size_t col, tune_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int parse_fail(parser *ps, size_t col, tune_status code, const char *fmt, ...)
{
    if (!ps->err || ps->err->code != TUNE_OK)
        return -1;
    char where[32], msg[sizeof ps->err->message];
    snprintf(where, sizeof where, "col %zu", col);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tune_error_set(ps->err, code, where, "%s", msg);
    return -1;
}

static size_t tok_col(const token *t)
{
    return t->start + 1;
}

/* "'text'" of the current token, or "end of expression". */
static const char *tok_describe(const parser *ps, char *buf, size_t size)
{
    const token *t = &ps->tok;
    if (t->type == TOK_END)
        snprintf(buf, size, "end of expression");
    else if (t->len > EXPR_TOKEN_SHOWN)
        snprintf(buf, size, "'%.*s...'", EXPR_TOKEN_SHOWN, ps->text + t->start);
    else
        snprintf(buf, size, "'%.*s'", (int)t->len, ps->text + t->start);
    return buf;
}

/* ---- Tokenizer ---- */

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}
static int is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int is_alnum(char c)
{
    return is_alpha(c) || is_digit(c);
}

static size_t skip_digits(const char *s, size_t i)
{
    while (is_digit(s[i]))
        i++;
    return i;
}

static int lex_number(parser *ps, size_t start)
{
    const char *s = ps->text;
    size_t i = skip_digits(s, start);
    int is_float = 0;
    if (s[i] == '.') {
        is_float = 1;
        i = skip_digits(s, i + 1);
    }
    if (s[i] == 'e' || s[i] == 'E') {
        size_t e = i + 1;
        if (s[e] == '+' || s[e] == '-')
            e++;
        if (is_digit(s[e])) {
            is_float = 1;
            i = skip_digits(s, e);
        }
    }
    if (is_alnum(s[i]) || s[i] == '.')
        return parse_fail(ps, start + 1, TUNE_ERR_PARSE, "malformed number '%.*s'",
                          (int)(i - start + 1), s + start);
    ps->tok = (token){is_float ? TOK_FLOAT : TOK_INT, start, i - start};
    ps->pos = i;
    return 0;
}

static int lex_string(parser *ps, size_t start)
{
    const char *s = ps->text;
    size_t i = start + 1;
    while (s[i] != '"') {
        if (s[i] == '\0')
            return parse_fail(ps, start + 1, TUNE_ERR_PARSE, "unterminated string");
        if (s[i] == '\\') {
            char c = s[i + 1];
            if (c != '"' && c != '\\' && c != 'n' && c != 't')
                return parse_fail(ps, i + 1, TUNE_ERR_PARSE,
                                  "unknown escape in string (use \\\" \\\\ \\n \\t)");
            i++;
        }
        i++;
    }
    ps->tok = (token){TOK_STR, start, i + 1 - start};
    ps->pos = i + 1;
    return 0;
}

/* Operators of one or two characters; 0 when s does not start with one. */
static size_t lex_operator(const char *s, tok_type *type)
{
    static const struct {
        const char *text;
        tok_type type;
    } ops[] = {
        {"||", TOK_OR},    {"&&", TOK_AND},  {"==", TOK_EQ}, {"!=", TOK_NE}, {"<=", TOK_LE},
        {">=", TOK_GE},    {"<", TOK_LT},    {">", TOK_GT},  {"+", TOK_ADD}, {"-", TOK_SUB},
        {"*", TOK_MUL},    {"/", TOK_DIV},   {"%", TOK_MOD}, {"!", TOK_NOT}, {"(", TOK_LPAREN},
        {")", TOK_RPAREN}, {",", TOK_COMMA},
    };
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        size_t n = strlen(ops[k].text);
        if (strncmp(s, ops[k].text, n) == 0) {
            *type = ops[k].type;
            return n;
        }
    }
    return 0;
}

static int lex_bad_char(parser *ps, size_t i)
{
    char c = ps->text[i];
    const char *hint = c == '='   ? " (did you mean '=='?)"
                       : c == '&' ? " (did you mean '&&'?)"
                       : c == '|' ? " (did you mean '||'?)"
                                  : "";
    if (c > ' ' && c < 127)
        return parse_fail(ps, i + 1, TUNE_ERR_PARSE, "unexpected character '%c'%s", c, hint);
    return parse_fail(ps, i + 1, TUNE_ERR_PARSE, "unexpected byte 0x%02x",
                      (unsigned)(unsigned char)c);
}

static int lex_next(parser *ps)
{
    const char *s = ps->text;
    size_t i = ps->pos;
    while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')
        i++;
    char c = s[i];
    if (c == '\0') {
        ps->tok = (token){TOK_END, i, 0};
        ps->pos = i;
        return 0;
    }
    if (is_digit(c) || (c == '.' && is_digit(s[i + 1])))
        return lex_number(ps, i);
    if (c == '"')
        return lex_string(ps, i);
    if (is_alpha(c)) {
        size_t j = i;
        while (is_alnum(s[j]))
            j++;
        ps->tok = (token){TOK_NAME, i, j - i};
        ps->pos = j;
        return 0;
    }
    tok_type type;
    size_t n = lex_operator(s + i, &type);
    if (n == 0)
        return lex_bad_char(ps, i);
    ps->tok = (token){type, i, n};
    ps->pos = i + n;
    return 0;
}

/* ---- Tree ---- */

static void node_free(node *n)
{
    if (!n)
        return;
    for (size_t k = 0; k < n->n_kids; k++)
        node_free(n->kids[k]);
    free(n->kids);
    free(n->s);
    free(n);
}

static node *node_new(parser *ps, node_kind kind, size_t col)
{
    node *n = calloc(1, sizeof *n);
    if (!n) {
        parse_fail(ps, col, TUNE_ERR_NOMEM, "out of memory parsing expression");
        return NULL;
    }
    n->kind = kind;
    n->col = col;
    n->height = 1;
    return n;
}

/* Appends kid to n (taking it); on failure frees kid and returns -1, n keeps its other kids. */
static int node_add_kid(parser *ps, node *n, node *kid)
{
    node **kids = realloc(n->kids, (n->n_kids + 1) * sizeof *kids);
    if (!kids) {
        node_free(kid);
        return parse_fail(ps, n->col, TUNE_ERR_NOMEM, "out of memory parsing expression");
    }
    n->kids = kids;
    kids[n->n_kids++] = kid;
    if (kid->height + 1 > n->height)
        n->height = kid->height + 1;
    if (n->height > EXPR_MAX_HEIGHT)
        return parse_fail(ps, n->col, TUNE_ERR_PARSE, "expression nested too deeply");
    return 0;
}

/* New operator node taking a and b (b may be NULL for unary); frees them on failure. */
static node *node_op(parser *ps, node_kind kind, const token *op, node *a, node *b)
{
    node *n = node_new(ps, kind, tok_col(op));
    if (!n) {
        node_free(a);
        node_free(b);
        return NULL;
    }
    n->op = (int)op->type;
    int failed = node_add_kid(ps, n, a);
    if (b)
        failed = failed ? (node_free(b), -1) : node_add_kid(ps, n, b);
    if (failed) {
        node_free(n);
        return NULL;
    }
    return n;
}

/* ---- Parser ---- */

static node *parse_level(parser *ps, int level);

int expr_op_level(tok_type t)
{
    switch (t) {
    case TOK_OR:
        return LEVEL_OR;
    case TOK_AND:
        return LEVEL_AND;
    case TOK_EQ:
    case TOK_NE:
    case TOK_LT:
    case TOK_LE:
    case TOK_GT:
    case TOK_GE:
        return LEVEL_CMP;
    case TOK_ADD:
    case TOK_SUB:
        return LEVEL_ADD;
    case TOK_MUL:
    case TOK_DIV:
    case TOK_MOD:
        return LEVEL_MUL;
    default:
        return 0;
    }
}

static node *parse_int(parser *ps)
{
    const token *t = &ps->tok;
    int64_t v = 0;
    for (size_t k = 0; k < t->len; k++) {
        int64_t d = ps->text[t->start + k] - '0';
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, d, &v)) {
            parse_fail(ps, tok_col(t), TUNE_ERR_PARSE,
                       "integer literal too large (max %" PRId64 ")", INT64_MAX);
            return NULL;
        }
    }
    node *n = node_new(ps, NODE_INT, tok_col(t));
    if (n)
        n->i = v;
    return n;
}

static node *parse_float(parser *ps)
{
    const token *t = &ps->tok;
    const char *start = ps->text + t->start;
    char *end;
    errno = 0;
    double v = strtod(start, &end);
    if (end != start + t->len || !isfinite(v)) {
        parse_fail(ps, tok_col(t), TUNE_ERR_PARSE, "float literal out of range");
        return NULL;
    }
    node *n = node_new(ps, NODE_FLOAT, tok_col(t));
    if (n)
        n->f = v;
    return n;
}

/* Decodes the current string token (escapes validated by the lexer). */
static node *parse_string(parser *ps)
{
    const token *t = &ps->tok;
    node *n = node_new(ps, NODE_STR, tok_col(t));
    if (!n)
        return NULL;
    n->s = malloc(t->len);
    if (!n->s) {
        node_free(n);
        parse_fail(ps, tok_col(t), TUNE_ERR_NOMEM, "out of memory parsing expression");
        return NULL;
    }
    const char *src = ps->text + t->start + 1, *end = ps->text + t->start + t->len - 1;
    char *dst = n->s;
    while (src < end) {
        char c = *src++;
        if (c == '\\') {
            c = *src++;
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
        }
        *dst++ = c;
    }
    *dst = '\0';
    return n;
}

static node *parse_name(parser *ps, const token *name)
{
    node *n = node_new(ps, NODE_NAME, tok_col(name));
    if (!n)
        return NULL;
    n->s = strndup(ps->text + name->start, name->len);
    if (!n->s) {
        node_free(n);
        parse_fail(ps, tok_col(name), TUNE_ERR_NOMEM, "out of memory parsing expression");
        return NULL;
    }
    return n;
}

static int fn_lookup(const char *s, size_t len)
{
    for (int k = 0; k < FN_COUNT; k++)
        if (strlen(expr_fns[k].name) == len && strncmp(expr_fns[k].name, s, len) == 0)
            return k;
    return -1;
}

/* Current token is the '(' after the function name. */
static node *parse_call(parser *ps, const token *name)
{
    int fn = fn_lookup(ps->text + name->start, name->len);
    if (fn < 0) {
        parse_fail(ps, tok_col(name), TUNE_ERR_PARSE, "unknown function '%.*s'",
                   name->len > EXPR_TOKEN_SHOWN ? EXPR_TOKEN_SHOWN : (int)name->len,
                   ps->text + name->start);
        return NULL;
    }
    node *n = node_new(ps, NODE_CALL, tok_col(name));
    if (!n)
        return NULL;
    n->op = fn;
    do {
        node *arg = lex_next(ps) ? NULL : parse_level(ps, LEVEL_OR);
        if (!arg || node_add_kid(ps, n, arg)) {
            node_free(n);
            return NULL;
        }
    } while (ps->tok.type == TOK_COMMA);
    if (ps->tok.type != TOK_RPAREN || lex_next(ps)) {
        char got[64];
        parse_fail(ps, tok_col(&ps->tok), TUNE_ERR_PARSE,
                   "expected ')' after arguments of %s, got %s", expr_fns[fn].name,
                   tok_describe(ps, got, sizeof got));
        node_free(n);
        return NULL;
    }
    return n;
}

static node *parse_group(parser *ps)
{
    size_t open = tok_col(&ps->tok);
    node *n = lex_next(ps) ? NULL : parse_level(ps, LEVEL_OR);
    if (!n)
        return NULL;
    if (ps->tok.type != TOK_RPAREN) {
        char got[64];
        parse_fail(ps, tok_col(&ps->tok), TUNE_ERR_PARSE,
                   "expected ')' to close '(' at col %zu, got %s", open,
                   tok_describe(ps, got, sizeof got));
        node_free(n);
        return NULL;
    }
    if (lex_next(ps)) {
        node_free(n);
        return NULL;
    }
    return n;
}

static node *parse_primary(parser *ps)
{
    token t = ps->tok;
    node *n = NULL;
    switch (t.type) {
    case TOK_INT:
        n = parse_int(ps);
        break;
    case TOK_FLOAT:
        n = parse_float(ps);
        break;
    case TOK_STR:
        n = parse_string(ps);
        break;
    case TOK_LPAREN:
        return parse_group(ps);
    case TOK_NAME:
        if (lex_next(ps))
            return NULL;
        return ps->tok.type == TOK_LPAREN ? parse_call(ps, &t) : parse_name(ps, &t);
    case TOK_END:
        parse_fail(ps, tok_col(&t), TUNE_ERR_PARSE, "unexpected end of expression");
        return NULL;
    default: {
        char got[64];
        parse_fail(ps, tok_col(&t), TUNE_ERR_PARSE,
                   "expected a number, name, string or '(', got %s",
                   tok_describe(ps, got, sizeof got));
        return NULL;
    }
    }
    if (n && lex_next(ps)) {
        node_free(n);
        return NULL;
    }
    return n;
}

static node *parse_unary(parser *ps)
{
    token op = ps->tok;
    if (++ps->nesting > EXPR_MAX_NESTING) {
        parse_fail(ps, tok_col(&op), TUNE_ERR_PARSE, "expression nested too deeply");
        return NULL;
    }
    node *n;
    if (op.type == TOK_SUB || op.type == TOK_ADD || op.type == TOK_NOT) {
        node *operand = lex_next(ps) ? NULL : parse_unary(ps);
        n = operand ? node_op(ps, NODE_UNARY, &op, operand, NULL) : NULL;
    } else {
        n = parse_primary(ps);
    }
    ps->nesting--;
    return n;
}

/* Left-associative binary operators of one level; comparisons do not chain. */
static node *parse_level(parser *ps, int level)
{
    if (level == LEVEL_UNARY)
        return parse_unary(ps);
    node *lhs = parse_level(ps, level + 1);
    while (lhs && expr_op_level(ps->tok.type) == level) {
        token op = ps->tok;
        node *rhs = lex_next(ps) ? NULL : parse_level(ps, level + 1);
        if (!rhs) {
            node_free(lhs);
            return NULL;
        }
        lhs = node_op(ps, NODE_BINARY, &op, lhs, rhs);
        if (lhs && level == LEVEL_CMP && expr_op_level(ps->tok.type) == LEVEL_CMP) {
            parse_fail(ps, tok_col(&ps->tok), TUNE_ERR_PARSE,
                       "comparisons do not chain; add parentheses");
            node_free(lhs);
            return NULL;
        }
    }
    return lhs;
}

/* ---- Names ---- */

static int names_add(expr *e, const char *name)
{
    for (size_t k = 0; k < e->n_names; k++)
        if (strcmp(e->names[k], name) == 0)
            return 0;
    const char **names = realloc(e->names, (e->n_names + 1) * sizeof *names);
    if (!names)
        return -1;
    e->names = names;
    names[e->n_names++] = name;
    return 0;
}

static int names_collect(expr *e, const node *n)
{
    if (n->kind == NODE_NAME)
        return names_add(e, n->s);
    for (size_t k = 0; k < n->n_kids; k++)
        if (names_collect(e, n->kids[k]))
            return -1;
    return 0;
}

size_t expr_names(const expr *e, const char **names, size_t max)
{
    if (!e)
        return 0;
    for (size_t k = 0; k < e->n_names && k < max; k++)
        names[k] = e->names[k];
    return e->n_names;
}

/* ---- Parse entry point ---- */

void expr_free(expr *e)
{
    if (!e)
        return;
    node_free(e->root);
    free(e->names);
    free(e);
}

/* Python's `and`, `or` or `not` as a word of text (outside string literals), where a parse failed:
 * the hint that names the operator meant, appended to err's message. */
static void python_hint(const char *text, tune_error *err)
{
    static const char *const words[][2] = {{"and", "&&"}, {"or", "||"}, {"not", "!"}};
    char quote = 0;
    for (const char *s = text; err && *s; s++) {
        if (quote) {
            quote = *s == quote ? 0 : quote;
            continue;
        }
        if (*s == '"' || *s == '\'') {
            quote = *s;
            continue;
        }
        if (s > text && (is_alpha(s[-1]) || is_digit(s[-1])))
            continue;
        for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
            size_t n = strlen(words[w][0]);
            if (strncmp(s, words[w][0], n) == 0 && !is_alpha(s[n]) && !is_digit(s[n])) {
                size_t used = strlen(err->message);
                snprintf(err->message + used, sizeof err->message - used,
                         " (Python's '%s' is written %s here)", words[w][0], words[w][1]);
                return;
            }
        }
    }
}

expr *expr_parse(const char *text, tune_error *err)
{
    if (!text) {
        tune_error_set(err, TUNE_ERR_PARSE, "col 1", "no expression (NULL)");
        return NULL;
    }
    parser ps = {.text = text, .err = err};
    node *root = lex_next(&ps) ? NULL : parse_level(&ps, LEVEL_OR);
    if (root && ps.tok.type != TOK_END) {
        char got[64];
        if (ps.tok.type == TOK_RPAREN)
            parse_fail(&ps, tok_col(&ps.tok), TUNE_ERR_PARSE, "unmatched ')'");
        else
            parse_fail(&ps, tok_col(&ps.tok), TUNE_ERR_PARSE,
                       "expected an operator or end of expression, got %s",
                       tok_describe(&ps, got, sizeof got));
        node_free(root);
        python_hint(text, err);
        return NULL;
    }
    if (!root) {
        if (err && err->code == TUNE_ERR_PARSE)
            python_hint(text, err);
        return NULL;
    }
    expr *e = calloc(1, sizeof *e);
    if (e)
        e->root = root;
    if (!e || names_collect(e, root)) {
        node_free(root);
        expr_free(e);
        tune_error_set(err, TUNE_ERR_NOMEM, "", "out of memory parsing expression");
        return NULL;
    }
    return e;
}
