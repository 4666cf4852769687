/* space.h - enumeration of a sweep's configurations: problem axes x parameter axes x methods,
 * pruned by the sweep's skip_if constraints and the family's own tile rules (model/family.h:
 * prune; a sweep with "family_rules": false has only skip_if).
 *
 *   space *sp = space_build(sw, &err);
 *   for (size_t i = 0; i < space_n_configs(sp); i++) {
 *       tune_point p;
 *       space_config_point(sp, i, &p);   // problem values, params (tuned methods), op, method, dsize
 *   }
 *   space_free(sp);
 *
 * Order: shapes in the cartesian order of the problem axes (last axis fastest); within a shape the
 * methods in the sweep's order; within a tuned method the parameter points (last axis fastest).
 * A constraint that reads only problem axes (and dsize/op) prunes whole shapes; one that reads a
 * parameter prunes (shape, parameter) pairs of tuned methods. A constraint whose evaluation fails
 * is an error naming the constraint and the point.
 */
#ifndef TUNE_SPACE_H
#define TUNE_SPACE_H

#include <stddef.h>

#include "core/error.h"
#include "core/point.h"
#include "model/sweep.h"

#define SPACE_NO_PARAM ((size_t)-1)
/* More configurations than this and `tune validate` and `tune run` warn: at 0.1 to 1 s per
 * configuration (compile, check, measure) such a sweep runs for hours (docs/sweep-format.md). */
#define SPACE_LARGE_CONFIGS 50000

typedef struct {
    size_t shape;  /* index of the shape */
    size_t method; /* index into sweep->methods */
    size_t param;  /* index of the parameter point; SPACE_NO_PARAM for baselines */
} space_config;

typedef struct space space;

/* New space; the sweep must outlive it (points borrow its names and strings). */
TUNE_MUST_CHECK space *space_build(const sweep *sw, tune_error *err);
void space_free(space *sp);

size_t space_n_shapes(const space *sp);
/* Problem values of shape i plus "op" and "dsize" (when the op has a dtype). Borrowed. */
const tune_point *space_shape(const space *sp, size_t i);
size_t space_n_params(const space *sp);
const tune_point *space_param(const space *sp, size_t i); /* borrowed */
size_t space_n_configs(const space *sp);
const space_config *space_config_at(const space *sp, size_t i);
/* Full point of config i: shape values, "op", "dsize", "method", and the parameters of tuned
 * methods. */
void space_config_point(const space *sp, size_t i, tune_point *out);
/* Configurations removed by constraints and by the family's rules (counted as if they had been
 * enumerated). */
size_t space_n_pruned(const space *sp);
/* Of those, the configurations the family's rules (tune_family.prune) removed. */
size_t space_n_pruned_family(const space *sp);
/* The family's rules that removed configurations, in the order first met: rule i's reason
 * (borrowed from the family, static) and in *count how many it removed; NULL past the end. */
size_t space_n_family_rules(const space *sp);
const char *space_family_rule(const space *sp, size_t i, size_t *count);

/* The identity (core/point.h: point_identity) of configuration `config` of the space built from
 * sw: its method, problem axes and (tuned methods) parameters. Returns buf. */
const char *space_config_identity(const sweep *sw, const space *sp, size_t config, char *buf,
                                  size_t size);

#endif
