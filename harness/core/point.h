/* point.h - a named set of values: one point of a sweep (problem shape, parameters, method).
 *
 *   tune_point p = {0};
 *   point_set_int(&p, "g", 256);
 *   point_set_str(&p, "dtype", "float16");  // the string is borrowed, not copied
 *   int64_t g = point_int(&p, "g", -1);
 *
 * Names and string values are borrowed: they must outlive the point (the sweep owns them).
 * Setting an existing name replaces its value. At most TUNE_MAX_AXES entries.
 */
#ifndef TUNE_POINT_H
#define TUNE_POINT_H

#include <stddef.h>
#include <stdint.h>

#include "core/expr.h"

#define TUNE_MAX_AXES 32

typedef struct {
    size_t n;
    const char *names[TUNE_MAX_AXES];
    expr_value vals[TUNE_MAX_AXES];
} tune_point;

/* 0 on success, -1 when the point is full. */
int point_set(tune_point *p, const char *name, expr_value v);
int point_set_int(tune_point *p, const char *name, int64_t v);
int point_set_str(tune_point *p, const char *name, const char *s);
/* 0 and *out (when out is not NULL) when present, -1 otherwise. point_int and point_str give dflt
 * also when the value has another type. */
int point_get(const tune_point *p, const char *name, expr_value *out);
int64_t point_int(const tune_point *p, const char *name, int64_t dflt);
const char *point_str(const tune_point *p, const char *name, const char *dflt);
/* expr_lookup_fn adaptor: ctx is a const tune_point *. */
int point_lookup(void *ctx, const char *name, expr_value *out);
/* Appends every entry of src to dst (replacing equal names). */
int point_merge(tune_point *dst, const tune_point *src);
/* "g=256 k_pre=1024 dtype=float16" into buf; returns buf. */
const char *point_format(const tune_point *p, char *buf, size_t size);

/* The identity of a configuration: "method|name=value|..." over p's values sorted by name, into
 * buf; returns buf. The one definition that matches configurations: a resumed run's rows against
 * its space (space_config_identity, results_row_identity), the shard plan's hash, the merge's
 * duplicate check. */
const char *point_identity(const char *method, const tune_point *p, char *buf, size_t size);
/* What point_identity and `tune compare`'s matching keys are made of: "<sep>name=value" for p's
 * first n values sorted by name, appended at buf[len] (typed: the value's type letter, i, f or s,
 * before it); returns the new length (snprintf's, may exceed size). */
size_t point_append_sorted(const tune_point *p, size_t n, char sep, int typed, char *buf,
                           size_t size, size_t len);

/* Element size in bytes of a dtype name ("float16", "bfloat16", "float32", "int32", "float64"),
 * 0 if unknown. */
size_t tune_dtype_size(const char *dtype);

#endif
