/* dispatch_impl.h - what the files of the dispatch module share (not for other modules). */
#ifndef TUNE_DISPATCH_IMPL_H
#define TUNE_DISPATCH_IMPL_H

#include "analysis/dispatch.h"

#define DISPATCH_MAX_METHODS 64
#define DISPATCH_STRING_PENALTY 1e6 /* squared distance added per string axis that differs */

typedef struct {
    size_t method;     /* index into d->methods */
    tune_point params; /* names and strings borrowed from the rows */
    char *id;          /* point_identity; new */
} dispatch_cfg;

/* A rule: per outer shape, its segments first[o] .. first[o + 1] (none: the outer shape had no
 * shape to build from, so it takes the fallback). Segment i runs from from[i] (the first one of
 * an outer shape: from -infinity) to the next one's from. */
typedef struct {
    size_t *first; /* n_outers + 1 */
    int64_t *from;
    size_t *config;
    size_t *lo, *hi; /* the first and last measured shapes the segment covers */
    size_t n_seg;
} dispatch_rule;

typedef struct dispatch_legal dispatch_legal; /* dispatch_legal.c */

/* The median of configuration c at shape s (INFINITY when not measured ok there). */
#define T(d, s, c) ((d)->time[(s) * (d)->n_configs + (c)])

struct dispatch {
    char name[128];
    double tolerance;
    const json_t *meta;
    const char *sweep, *family;
    size_t n_axes, bp; /* bp: the breakpoint axis */
    const char *axes[TUNE_MAX_AXES];
    int varies[TUNE_MAX_AXES];
    size_t n_params;
    const char *params[TUNE_MAX_AXES];
    size_t n_methods; /* the methods the rule may pick, in the sweep's order */
    const char *methods[DISPATCH_MAX_METHODS], *roles[DISPATCH_MAX_METHODS];
    size_t n_configs;
    dispatch_cfg *configs; /* sorted by identity */
    size_t n_shapes, n_unmeasured;
    tune_point *shapes; /* sorted: outer shape, then the breakpoint axis */
    int64_t *bpv;       /* per shape: its breakpoint value */
    size_t n_outers;
    size_t *outer_first; /* shapes of outer o: outer_first[o] .. outer_first[o + 1] */
    size_t *outer_of;    /* per shape */
    double *time;        /* n_shapes x n_configs: median (s), INFINITY when not measured ok */
    double *best;        /* per shape */
    size_t *best_config;
    dispatch_rule rule;              /* built on every shape */
    size_t *choice[3];               /* per shape and dispatch_eval; DISPATCH_NONE: not scored */
    dispatch_score score[3];
    dispatch_legal *legal; /* the family's rules; NULL: none (every segment kept as built) */
};

/* The configuration of rule for shape point q (dispatch.c). */
size_t dispatch_rule_lookup(const dispatch *d, const dispatch_rule *r, const tune_point *q);
/* "n=4096 k=4096" for the axes that vary, but the breakpoint axis (outer 1) or including it. */
const char *dispatch_shape_text(const dispatch *d, const tune_point *p, int outer, char *buf,
                                size_t size);

/* The family's rules in the rule (dispatch_legal.c): init reads the family (none: d->legal stays
 * NULL); apply splits the segments of r's tables (of outer shape `only`; DISPATCH_NONE: of every
 * one) where a value between measured ones takes another configuration the family keeps there
 * (use: the shapes r was built on, NULL: all). */
tune_status dispatch_legal_init(dispatch *d, tune_error *err);
tune_status dispatch_legal_apply(const dispatch *d, const unsigned char *use, size_t only,
                                 dispatch_rule *r, tune_error *err);
void dispatch_legal_free(dispatch *d);

#endif
