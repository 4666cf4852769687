/* sweep_kernel_impl.h - what the files that parse a declared kernel's "kernel" section share
 * (sweep_kernel.c: the section, its kernels, checks and the family; sweep_kernel_args.c: its
 * arguments). Private to the sweep module. */
#ifndef TUNE_SWEEP_KERNEL_IMPL_H
#define TUNE_SWEEP_KERNEL_IMPL_H

#include "model/kernel_decl.h"
#include "model/sweep_impl.h"

/* The names expressions of the section may read: problem axes, and (tuned kernel) parameters. */
typedef struct {
    const sweep_ctx *cx;
    const sweep *sw;
    const family_axis *axes, *params;
    size_t n_axes, n_params;
} sweep_kd_scope;

/* 1 when s is an identifier [A-Za-z_][A-Za-z0-9_]*. */
int sweep_kd_ident_ok(const char *s);
/* An expression (a JSON string, or an integer constant) whose names are problem axes or (with
 * params) parameters; new, or NULL with the error recorded at path. */
expr *sweep_kd_expr(const sweep_kd_scope *sc, json_t *v, int with_params, const char *path);
/* A constant count or launch dimension x at path: an integer >= least, never a string; 0, or -1
 * after the error. Expressions that read names are checked per configuration. */
int sweep_kd_number(const sweep_kd_scope *sc, expr *x, long long least, const char *what,
                    const char *path);
/* A template "text {expr} text" into t; -1 with the error recorded at path. */
int sweep_kd_template(const sweep_kd_scope *sc, json_t *v, int with_params, const char *path,
                kdecl_template *t);
/* The "args" array (v, at path) into d->args; -1 with the error recorded. */
int sweep_kd_args(const sweep_kd_scope *sc, kernel_decl *d, json_t *v, const char *path);
/* The "constants" array (v, at path; NULL: none) into d->consts; -1 with the error recorded. */
int sweep_kd_constants(const sweep_kd_scope *sc, kernel_decl *d, json_t *v, const char *path);

#endif
