/* sweep_impl.h - what the files of the sweep module share (not for other modules): the parse
 * context and the helpers that report errors at a JSON path. sweep.c parses the top level and
 * expressions, sweep_axes.c the axes; sweep_timing.c the "timing" and "report" objects, sweep_search.c the "search" object. */
#ifndef TUNE_SWEEP_IMPL_H
#define TUNE_SWEEP_IMPL_H

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonloc.h"
#include "model/sweep.h"

#define SWEEP_PATH_SIZE 256
#define SWEEP_LIST_SIZE 1024
#define SWEEP_MAX_AXIS_VALUES 1000000
#define SWEEP_MAX_EXPR_NAMES 64
/* a sweep file is a few kilobytes; 16 MiB leaves room for generated ones */
#define SWEEP_MAX_FILE_BYTES ((size_t)16 << 20)

typedef struct {
    const char *text;  /* the JSON text, for jsonloc_find */
    const char *label; /* file name used in errors */
    tune_error *err;   /* may be NULL */
    int check_files;   /* files the sweep names must exist (sweep_load; not for a meta.json copy) */
} sweep_ctx;

/* Helpers of sweep.c (errors at a JSON path, names, keys) and the parsers of sweep_timing.c. */
int sweep_check_keys(const sweep_ctx *cx, json_t *obj, const char *path,
                     const char *const *allowed);
int sweep_expect_object(const sweep_ctx *cx, json_t *v, const char *path);
/* Records an error located at path (its key or its value) and returns -1. */
int sweep_fail(const sweep_ctx *cx, tune_status code, const char *path, jsonloc_which which,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));
const family_axis *sweep_find_axis(const family_axis *axes, size_t n, const char *name);
const char *sweep_join_list(char *buf, size_t size, const char *const *names);
const char *sweep_join_names(char *buf, size_t size, const void *base, size_t stride, size_t n);
const char *sweep_json_kind(const json_t *v);
int sweep_in_list(const char *const *list, const char *s);
/* sweep_axes.c: the "problem" and "params" objects into sw->problem and sw->params. */
int sweep_parse_problem_params(const sweep_ctx *cx, json_t *root, sweep *sw);
int sweep_nomem(const sweep_ctx *cx);
const char *sweep_path_index(char *buf, const char *parent, size_t index);
const char *sweep_path_key(char *buf, const char *parent, const char *key);
char *sweep_strdup(const sweep_ctx *cx, const char *s);
int sweep_parse_report(const sweep_ctx *cx, json_t *root, sweep *sw);
int sweep_parse_timing(const sweep_ctx *cx, json_t *root, sweep *sw);
/* sweep.c: a new expression from src at path that reads only the names in scope (a parse error
 * or an unknown name located at path, NULL). what names the field in the message. */
expr *sweep_parse_expr_in(const sweep_ctx *cx, const char *src, const char *const *scope,
                          size_t n_scope, const char *what, const char *path);
/* sweep_search.c: the "search" object into sw->search (defaults when absent). */
int sweep_parse_search(const sweep_ctx *cx, json_t *root, sweep *sw);
/* sweep_kernel.c: "family": "kernel", the declared family from the "kernel" section, before the
 * axes are parsed; and the checks that need the methods, after them. */
int sweep_parse_declared(const sweep_ctx *cx, json_t *root, sweep *sw);
int sweep_check_declared(const sweep_ctx *cx, json_t *root, const sweep *sw);
/* sweep_kernel_params.c: after the whole sweep, every parameter of more than one value is read
 * by the tuned kernel or an expression; -1 with the error at $.params.NAME. */
int sweep_check_declared_params(const sweep_ctx *cx, const sweep *sw);
/* sweep_kernel.c: the methods of a declared sweep that gives none (sw->methods, new). */
int sweep_default_declared_methods(const sweep_ctx *cx, sweep *sw);

#endif
