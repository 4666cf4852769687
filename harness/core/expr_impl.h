/* expr_impl.h - what the files of the expr module share (not for other modules): the token
 * types, the functions and the tree. expr.c parses, expr_eval.c prints and evaluates. */
#ifndef TUNE_EXPR_IMPL_H
#define TUNE_EXPR_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/expr.h"

/* Parentheses and unary operators nest at most this deep; any node of the tree is at most
 * EXPR_MAX_HEIGHT levels high (long chains like 1+1+...+1), which bounds every recursion. */
#define EXPR_MAX_NESTING 256
#define EXPR_MAX_HEIGHT 1024
#define EXPR_TOKEN_SHOWN 40 /* bytes of a token quoted in an error message */

typedef enum {
    TOK_END,
    TOK_INT,
    TOK_FLOAT,
    TOK_STR,
    TOK_NAME,
    TOK_LPAREN,
    TOK_RPAREN,
    TOK_COMMA,
    TOK_OR,
    TOK_AND,
    TOK_EQ,
    TOK_NE,
    TOK_LT,
    TOK_LE,
    TOK_GT,
    TOK_GE,
    TOK_ADD,
    TOK_SUB,
    TOK_MUL,
    TOK_DIV,
    TOK_MOD,
    TOK_NOT
} tok_type;

/* Binding strength, lowest first; what parse_level and the printer agree on. */
enum { LEVEL_OR = 1, LEVEL_AND, LEVEL_CMP, LEVEL_ADD, LEVEL_MUL, LEVEL_UNARY, LEVEL_PRIMARY };

typedef enum { FN_MIN, FN_MAX, FN_ABS, FN_FLOOR_POW2, FN_CEIL_POW2, FN_LOG2, FN_SECTORS, FN_DISTINCT, FN_COUNT } fn_id;

typedef enum {
    NODE_INT,
    NODE_FLOAT,
    NODE_STR,
    NODE_NAME,
    NODE_UNARY,
    NODE_BINARY,
    NODE_CALL
} node_kind;

typedef struct node {
    node_kind kind;
    int op;     /* tok_type of UNARY/BINARY, fn_id of CALL */
    size_t col; /* 1-based: the literal, the name, the operator or the function name */
    int height;
    int64_t i;
    double f;
    char *s; /* STR value or NAME, owned */
    struct node **kids;
    size_t n_kids;
} node;

struct expr {
    node *root;
    const char **names; /* distinct NAME strings in order of first use, borrowed from the tree */
    size_t n_names;
};

typedef struct {
    const char *name;
    size_t min_args, max_args;
} expr_fn_info;

/* The operators' text, by tok_type; the functions, by fn_id (defined in expr.c). */
extern const char *const expr_tok_op_text[];
extern const expr_fn_info expr_fns[FN_COUNT];
/* A growing string (to_string and messages); failed after an allocation failure. */
typedef struct {
    char *p;
    size_t len, cap;
    int failed;
} sbuf;
void expr_sbuf_add(sbuf *b, const char *s, size_t n);
void expr_sbuf_puts(sbuf *b, const char *s);

/* Binding strength of a binary operator (LEVEL_*). */
int expr_op_level(tok_type t);

#endif
