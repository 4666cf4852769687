/* space.c - enumeration of a sweep's configurations, pruned by its skip_if constraints and by
 * the family's own tile rules (tune_family.prune), which see a shape's parameter points at once.
 *
 * Each constraint is classified once by the names it reads (expr_names):
 *   shape-level  - no parameter and not "method": evaluated once per shape (problem axes, op,
 *                  dsize); a true value removes the shape with every configuration in it;
 *   method-level - reads "method" but no parameter: evaluated per (shape, method), baselines
 *                  included;
 *   param-level  - reads a parameter: evaluated per (shape, tuned method, parameter point).
 *                  Baselines have no parameters, so param-level constraints never prune them.
 *                  Its value depends only on the method, the parameter point and the shape's
 *                  values of the names it reads, so it is kept per (method, those values) and
 *                  shapes that agree on them reuse it: a constraint that reads only m is
 *                  evaluated once per method and value of m, not once per shape.
 */
#include "model/space.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPACE_MAX_SHAPES 1000000
#define SPACE_MAX_PARAMS 1000000
#define SPACE_MAX_CONFIGS 10000000 /* over the shapes that shape-level constraints keep */

#define SPACE_MAX_RULES 64 /* distinct reasons of a family's prune that are counted apart */

typedef enum { SPACE_LEVEL_SHAPE, SPACE_LEVEL_METHOD, SPACE_LEVEL_PARAM } space_level;

/* The values of a param-level constraint for one method and one set of shape values (the names
 * it reads that are neither parameters nor "method"): per parameter point 0 not evaluated yet,
 * 1 false, 2 true. */
typedef struct {
    size_t method;
    expr_value key[TUNE_MAX_AXES]; /* per shape name, when present */
    unsigned char present[TUNE_MAX_AXES];
    unsigned char *verdict; /* n_params entries */
} space_verdicts;

typedef struct {
    const char *names[TUNE_MAX_AXES]; /* the shape names it reads (borrowed from the expr) */
    size_t n_names;
    space_verdicts *sets;
    size_t n_sets, cap_sets;
} space_memo;

struct space {
    const sweep *sw;    /* borrowed */
    tune_point *shapes; /* kept shapes, in cartesian order */
    size_t n_shapes;
    tune_point *params; /* every parameter point, in cartesian order */
    size_t n_params;
    space_config *configs;
    size_t n_configs, cap_configs;
    size_t n_pruned;
    space_level *levels;           /* one per sweep constraint */
    space_memo *memo;              /* one per sweep constraint (param-level ones used) */
    unsigned char **verdicts;      /* space_add_shape's: per param-level constraint, its values */
    size_t *memo_idx;              /* ... and its index */
    const family_method **methods; /* the sweep's methods, resolved */
    const char **why;              /* the family's prune: its verdict per parameter point */
    size_t n_pruned_family;        /* of n_pruned, by the family's rules */
    const char *rules[SPACE_MAX_RULES]; /* the family's rules that pruned, first seen first */
    size_t rule_counts[SPACE_MAX_RULES];
    size_t n_rules;
};

static space_level space_classify(const sweep *sw, const expr *e)
{
    const char *names[TUNE_MAX_AXES * 2];
    size_t n = expr_names(e, names, sizeof names / sizeof names[0]);
    space_level level = SPACE_LEVEL_SHAPE;
    if (n > sizeof names / sizeof names[0])
        n = sizeof names / sizeof names[0];
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < sw->n_params; j++)
            if (strcmp(names[i], sw->params[j].name) == 0)
                return SPACE_LEVEL_PARAM;
        if (strcmp(names[i], "method") == 0)
            level = SPACE_LEVEL_METHOD;
    }
    return level;
}

/* The names a param-level constraint reads that are neither parameters nor "method" (problem
 * axes, op, dsize, unknown names): what its value depends on besides the method and the
 * parameter point. */
static void space_memo_names(const sweep *sw, const expr *e, space_memo *mo)
{
    const char *names[TUNE_MAX_AXES * 2];
    size_t n = expr_names(e, names, sizeof names / sizeof names[0]);
    if (n > sizeof names / sizeof names[0])
        n = sizeof names / sizeof names[0];
    mo->n_names = 0;
    for (size_t i = 0; i < n && mo->n_names < TUNE_MAX_AXES; i++) {
        int param = strcmp(names[i], "method") == 0;
        for (size_t j = 0; j < sw->n_params && !param; j++)
            param = strcmp(names[i], sw->params[j].name) == 0;
        if (!param)
            mo->names[mo->n_names++] = names[i];
    }
}

/* Product of the axis sizes, or SIZE_MAX when it exceeds limit. */
static size_t space_product(const sweep_axis *axes, size_t n, size_t limit)
{
    size_t total = 1;
    for (size_t i = 0; i < n; i++) {
        if (axes[i].n == 0 || total > limit / axes[i].n)
            return axes[i].n == 0 ? 0 : SIZE_MAX;
        total *= axes[i].n;
    }
    return total;
}

/* Point at mixed-radix index idx over axes (last axis fastest). Names and strings borrowed. */
static void space_axes_point(const sweep_axis *axes, size_t n, size_t idx, tune_point *p)
{
    size_t digit[TUNE_MAX_AXES];
    for (size_t i = n; i-- > 0;) {
        digit[i] = idx % axes[i].n;
        idx /= axes[i].n;
    }
    for (size_t i = 0; i < n; i++) {
        if (axes[i].is_str)
            point_set_str(p, axes[i].name, axes[i].strs[digit[i]]);
        else
            point_set_int(p, axes[i].name, axes[i].ints[digit[i]]);
    }
}

/* Evaluates constraint i on p: 1 true (prune), 0 false, -1 on an evaluation error. */
static int space_eval(const space *sp, size_t i, const tune_point *p, tune_error *err)
{
    const sweep *sw = sp->sw;
    expr_value v;
    /* no error record per evaluation: zeroing one (2.5 KB) for each of the tens of millions
     * of evaluations of a large sweep cost seconds; a failure is evaluated again for its
     * message (evaluation is deterministic) */
    if (expr_eval(sw->skip_if[i], point_lookup, (void *)p, &v, NULL) != TUNE_OK) {
        tune_error e = {0};
        /* its status is the first call's: only the message is wanted */
        tune_status_ignore(expr_eval(sw->skip_if[i], point_lookup, (void *)p, &v, &e));
        char where[sizeof e.where], at[512];
        snprintf(where, sizeof where, "%s: skip_if[%zu]", sw->file, i);
        tune_error_set(err, e.code ? e.code : TUNE_ERR_EVAL, where,
                       "cannot evaluate \"%s\" at %s: %s%s%s", sw->skip_if_src[i],
                       point_format(p, at, sizeof at), e.where, e.where[0] ? ": " : "", e.message);
        return -1;
    }
    return expr_value_truthy(v) ? 1 : 0;
}

/* Evaluates the constraints of one level on p: 1 when one is true (prune), 0 when none is,
 * -1 on an evaluation error. */
static int space_skip(const space *sp, space_level level, const tune_point *p, tune_error *err)
{
    for (size_t i = 0; i < sp->sw->n_skip_if; i++) {
        if (sp->levels[i] != level)
            continue;
        int r = space_eval(sp, i, p, err);
        if (r != 0)
            return r;
    }
    return 0;
}

/* The same value, type included (1 and 1.0 are not: an expression may treat them apart). */
static int space_value_same(const expr_value *a, const expr_value *b)
{
    if (a->type != b->type)
        return 0;
    switch (a->type) {
    case EXPR_INT:
        return a->i == b->i;
    case EXPR_FLOAT:
        return a->f == b->f || (isnan(a->f) && isnan(b->f));
    case EXPR_STR:
        return strcmp(a->s ? a->s : "", b->s ? b->s : "") == 0;
    default:
        return 1;
    }
}

/* The values of constraint i for method m on the shape point p (the memo's set whose shape values
 * equal p's), found or added; NULL when out of memory. */
static unsigned char *space_verdicts_of(space *sp, size_t i, size_t m, const tune_point *p)
{
    space_memo *mo = &sp->memo[i];
    expr_value key[TUNE_MAX_AXES];
    unsigned char present[TUNE_MAX_AXES];
    for (size_t k = 0; k < mo->n_names; k++)
        present[k] = point_get(p, mo->names[k], &key[k]) == 0;
    for (size_t j = 0; j < mo->n_sets; j++) {
        space_verdicts *v = &mo->sets[j];
        size_t k = 0;
        while (v->method == m && k < mo->n_names && v->present[k] == present[k] &&
               (!present[k] || space_value_same(&v->key[k], &key[k])))
            k++;
        if (v->method == m && k == mo->n_names)
            return v->verdict;
    }
    if (mo->n_sets == mo->cap_sets) {
        size_t cap = mo->cap_sets ? 2 * mo->cap_sets : 8;
        space_verdicts *sets = realloc(mo->sets, cap * sizeof *sets);
        if (!sets)
            return NULL;
        mo->sets = sets;
        mo->cap_sets = cap;
    }
    space_verdicts *v = &mo->sets[mo->n_sets];
    if (!(v->verdict = calloc(sp->n_params ? sp->n_params : 1, 1)))
        return NULL;
    v->method = m;
    memcpy(v->key, key, sizeof key);
    memcpy(v->present, present, sizeof present);
    mo->n_sets++;
    return v->verdict;
}

static int space_push(space *sp, size_t shape, size_t method, size_t param, tune_error *err)
{
    if (sp->n_configs == sp->cap_configs) {
        size_t cap = sp->cap_configs ? sp->cap_configs * 2 : 64;
        space_config *c = realloc(sp->configs, cap * sizeof *c);
        if (!c) {
            tune_error_set(err, TUNE_ERR_NOMEM, sp->sw->file, "out of host memory");
            return -1;
        }
        sp->configs = c;
        sp->cap_configs = cap;
    }
    sp->configs[sp->n_configs++] = (space_config){shape, method, param};
    return 0;
}

/* 1 when no name of the parameter point pp is one of p's (and both fit one point): then a
 * configuration's point is p with pp appended, with no search by name (the enumeration of a
 * large sweep spent most of its time in point_merge's name comparisons). */
static int space_names_disjoint(const tune_point *p, const tune_point *pp)
{
    if (!pp || p->n + pp->n > TUNE_MAX_AXES)
        return 0;
    for (size_t i = 0; i < p->n; i++)
        for (size_t k = 0; k < pp->n; k++)
            if (strcmp(p->names[i], pp->names[k]) == 0)
                return 0;
    return 1;
}

/* out = p with the parameter point pp set (every parameter point has the same names). */
static void space_with_params(const tune_point *p, const tune_point *pp, int disjoint,
                              tune_point *out)
{
    if (!disjoint) {
        *out = *p;
        point_merge(out, pp);
        return;
    }
    out->n = p->n + pp->n;
    memcpy(out->names, p->names, p->n * sizeof *p->names);
    memcpy(out->vals, p->vals, p->n * sizeof *p->vals);
    memcpy(out->names + p->n, pp->names, pp->n * sizeof *pp->names);
    memcpy(out->vals + p->n, pp->vals, pp->n * sizeof *pp->vals);
}

/* Counts a configuration the family's rule `why` removed (past SPACE_MAX_RULES distinct
 * reasons, the last slot counts the rest). */
static void space_count_rule(space *sp, const char *why)
{
    sp->n_pruned++;
    sp->n_pruned_family++;
    for (size_t r = sp->n_rules; r-- > 0;)
        if (sp->rules[r] == why || strcmp(sp->rules[r], why) == 0) {
            sp->rule_counts[r]++;
            return;
        }
    if (sp->n_rules < SPACE_MAX_RULES) {
        sp->rules[sp->n_rules] = why;
        sp->rule_counts[sp->n_rules++] = 1;
        return;
    }
    sp->rules[SPACE_MAX_RULES - 1] = "other rules";
    sp->rule_counts[SPACE_MAX_RULES - 1]++;
}

/* Configurations of one kept shape: its methods in the sweep's order, then parameter points. */
static int space_add_shape(space *sp, size_t shape, tune_error *err)
{
    const sweep *sw = sp->sw;
    for (size_t m = 0; m < sw->n_methods; m++) {
        int tuned = sp->methods[m]->tuned;
        tune_point mp = sp->shapes[shape];
        point_set_str(&mp, "method", sw->methods[m]);
        int skip = space_skip(sp, SPACE_LEVEL_METHOD, &mp, err);
        if (skip < 0)
            return -1;
        if (skip) {
            sp->n_pruned += tuned ? sp->n_params : 1;
            continue;
        }
        if (!tuned) {
            if (space_push(sp, shape, m, SPACE_NO_PARAM, err) != 0)
                return -1;
            continue;
        }
        int disjoint = space_names_disjoint(&mp, sp->n_params ? &sp->params[0] : NULL);
        unsigned char **verdicts = sp->verdicts;
        size_t *idx = sp->memo_idx, nc = 0;
        for (size_t i = 0; i < sw->n_skip_if; i++) {
            if (sp->levels[i] != SPACE_LEVEL_PARAM)
                continue;
            if (!(verdicts[nc] = space_verdicts_of(sp, i, m, &mp))) {
                tune_error_set(err, TUNE_ERR_NOMEM, sw->file, "out of host memory");
                return -1;
            }
            idx[nc++] = i;
        }
        const char **why = NULL;
        if (sw->family_rules && sw->family->prune && sp->n_params) {
            why = sp->why;
            memset(why, 0, sp->n_params * sizeof *why);
            sw->family->prune(sw->family, &mp, sp->params, sp->n_params, why);
        }
        for (size_t j = 0; j < sp->n_params; j++) {
            tune_point cp;
            int built = 0;
            skip = 0;
            for (size_t c = 0; c < nc && !skip; c++) {
                if (!verdicts[c][j]) { /* not known for these shape values yet */
                    if (!built)
                        space_with_params(&mp, &sp->params[j], disjoint, &cp);
                    built = 1;
                    int r = space_eval(sp, idx[c], &cp, err);
                    if (r < 0)
                        return -1;
                    verdicts[c][j] = (unsigned char)(r ? 2 : 1);
                }
                skip = verdicts[c][j] == 2;
            }
            if (skip)
                sp->n_pruned++;
            else if (why && why[j])
                space_count_rule(sp, why[j]);
            else if (space_push(sp, shape, m, j, err) != 0)
                return -1;
        }
    }
    return 0;
}

/* The shape point at cartesian index idx: problem values, "op" and "dsize". */
static int space_shape_point(const space *sp, size_t idx, tune_point *p, tune_error *err)
{
    const sweep *sw = sp->sw;
    memset(p, 0, sizeof *p);
    space_axes_point(sw->problem, sw->n_problem, idx, p);
    point_set_str(p, "op", sw->op);
    if (family_set_dsize(sw->family, p) != 0) {
        tune_error_set(err, TUNE_ERR_INVALID, sw->file, "no element size known for dtype '%s'",
                       point_str(p, sw->family->dtype_axis, ""));
        return -1;
    }
    return 0;
}

/* The byte and FLOP models at a kept shape: a model that cannot be evaluated (a division by
 * zero, an integer overflow), or whose value is not a finite number >= 0, is an error of the
 * sweep, reported as skip_if's are: the file, the field, the expression and the shape. */
static int space_check_models(const space *sp, const tune_point *p, tune_error *err)
{
    const sweep *sw = sp->sw;
    const expr *models[2] = {sw->bytes, sw->flops};
    const char *names[2] = {"bytes", "flops"}, *srcs[2] = {sw->bytes_src, sw->flops_src};
    for (size_t i = 0; i < 2; i++) {
        if (!models[i])
            continue;
        expr_value v;
        tune_error e = {0};
        char where[sizeof e.where], at[512], val[64];
        snprintf(where, sizeof where, "%s: %s", sw->file, names[i]);
        if (expr_eval(models[i], point_lookup, (void *)p, &v, &e) != TUNE_OK) {
            tune_error_set(err, e.code ? e.code : TUNE_ERR_EVAL, where,
                           "cannot evaluate \"%s\" at %s: %s%s%s", srcs[i],
                           point_format(p, at, sizeof at), e.where, e.where[0] ? ": " : "",
                           e.message);
            return -1;
        }
        double x = expr_value_as_double(v);
        if (v.type == EXPR_STR || !isfinite(x) || x < 0) {
            tune_error_set(err, TUNE_ERR_EVAL, where,
                           "\"%s\" is %s at %s: a %s count must be a finite number >= 0", srcs[i],
                           expr_value_format(v, val, sizeof val), point_format(p, at, sizeof at),
                           i ? "FLOP" : "byte");
            return -1;
        }
    }
    return 0;
}

/* Configurations one shape expands to before pruning. */
static size_t space_per_shape(const space *sp)
{
    size_t n = 0;
    for (size_t m = 0; m < sp->sw->n_methods; m++)
        n += sp->methods[m]->tuned ? sp->n_params : 1;
    return n;
}

static int space_enumerate(space *sp, size_t total_shapes, tune_error *err)
{
    size_t per_shape = space_per_shape(sp);
    if (!(sp->shapes = calloc(total_shapes ? total_shapes : 1, sizeof *sp->shapes))) {
        tune_error_set(err, TUNE_ERR_NOMEM, sp->sw->file, "out of host memory");
        return -1;
    }
    for (size_t s = 0; s < total_shapes; s++) {
        tune_point *p = &sp->shapes[sp->n_shapes];
        if (space_shape_point(sp, s, p, err) != 0)
            return -1;
        int skip = space_skip(sp, SPACE_LEVEL_SHAPE, p, err);
        if (skip < 0)
            return -1;
        if (skip) {
            sp->n_pruned += per_shape;
            continue;
        }
        /* the bound counts the shapes a shape-level constraint keeps: the others cost nothing */
        if (per_shape && sp->n_shapes + 1 > SPACE_MAX_CONFIGS / per_shape) {
            tune_error_set(err, TUNE_ERR_INVALID, sp->sw->file,
                           "the sweep has more than %d configurations", SPACE_MAX_CONFIGS);
            return -1;
        }
        if (space_check_models(sp, p, err) != 0)
            return -1;
        if (space_add_shape(sp, sp->n_shapes++, err) != 0)
            return -1;
    }
    return 0;
}

static int space_build_params(space *sp, tune_error *err)
{
    const sweep *sw = sp->sw;
    size_t n = space_product(sw->params, sw->n_params, SPACE_MAX_PARAMS);
    if (n == SIZE_MAX) {
        tune_error_set(err, TUNE_ERR_INVALID, sw->file,
                       "the parameter axes have more than %d points", SPACE_MAX_PARAMS);
        return -1;
    }
    if (!(sp->params = calloc(n ? n : 1, sizeof *sp->params))) {
        tune_error_set(err, TUNE_ERR_NOMEM, sw->file, "out of host memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        space_axes_point(sw->params, sw->n_params, i, &sp->params[i]);
    sp->n_params = n;
    if (!(sp->why = calloc(n ? n : 1, sizeof *sp->why))) {
        tune_error_set(err, TUNE_ERR_NOMEM, sw->file, "out of host memory");
        return -1;
    }
    return 0;
}

/* Resolves methods and classifies constraints; checks that a full point fits a tune_point. */
static int space_prepare(space *sp, tune_error *err)
{
    const sweep *sw = sp->sw;
    if (sw->n_problem + sw->n_params + 3 > TUNE_MAX_AXES) {
        tune_error_set(err, TUNE_ERR_INVALID, sw->file,
                       "%zu problem axes and %zu parameters do not fit a point (at most %d names)",
                       sw->n_problem, sw->n_params, TUNE_MAX_AXES);
        return -1;
    }
    sp->methods = calloc(sw->n_methods ? sw->n_methods : 1, sizeof *sp->methods);
    sp->levels = calloc(sw->n_skip_if ? sw->n_skip_if : 1, sizeof *sp->levels);
    if (!sp->methods || !sp->levels) {
        tune_error_set(err, TUNE_ERR_NOMEM, sw->file, "out of host memory");
        return -1;
    }
    for (size_t m = 0; m < sw->n_methods; m++) {
        if (!(sp->methods[m] = family_find_method(sw->family, sw->methods[m]))) {
            tune_error_set(err, TUNE_ERR_INVALID, sw->file, "unknown method '%s' for family %s",
                           sw->methods[m], sw->family->name);
            return -1;
        }
    }
    size_t nk = sw->n_skip_if ? sw->n_skip_if : 1;
    sp->memo = calloc(nk, sizeof *sp->memo);
    sp->verdicts = calloc(nk, sizeof *sp->verdicts);
    sp->memo_idx = calloc(nk, sizeof *sp->memo_idx);
    if (!sp->memo || !sp->verdicts || !sp->memo_idx) {
        tune_error_set(err, TUNE_ERR_NOMEM, sw->file, "out of host memory");
        return -1;
    }
    for (size_t i = 0; i < sw->n_skip_if; i++) {
        sp->levels[i] = space_classify(sw, sw->skip_if[i]);
        if (sp->levels[i] == SPACE_LEVEL_PARAM)
            space_memo_names(sw, sw->skip_if[i], &sp->memo[i]);
    }
    return 0;
}

space *space_build(const sweep *sw, tune_error *err)
{
    space *sp = calloc(1, sizeof *sp);
    if (!sp) {
        tune_error_set(err, TUNE_ERR_NOMEM, sw->file, "out of host memory");
        return NULL;
    }
    sp->sw = sw;
    size_t total_shapes = space_product(sw->problem, sw->n_problem, SPACE_MAX_SHAPES);
    if (total_shapes == SIZE_MAX) {
        tune_error_set(err, TUNE_ERR_INVALID, sw->file, "the problem axes have more than %d shapes",
                       SPACE_MAX_SHAPES);
        space_free(sp);
        return NULL;
    }
    if (space_prepare(sp, err) != 0 || space_build_params(sp, err) != 0 ||
        space_enumerate(sp, total_shapes, err) != 0) {
        space_free(sp);
        return NULL;
    }
    return sp;
}

void space_free(space *sp)
{
    if (!sp)
        return;
    free(sp->shapes);
    free(sp->params);
    free(sp->configs);
    for (size_t i = 0; sp->memo && i < sp->sw->n_skip_if; i++) {
        for (size_t j = 0; j < sp->memo[i].n_sets; j++)
            free(sp->memo[i].sets[j].verdict);
        free(sp->memo[i].sets);
    }
    free(sp->memo);
    free(sp->verdicts);
    free(sp->memo_idx);
    free(sp->levels);
    free(sp->methods);
    free(sp->why);
    free(sp);
}

size_t space_n_shapes(const space *sp)
{
    return sp->n_shapes;
}

const tune_point *space_shape(const space *sp, size_t i)
{
    return i < sp->n_shapes ? &sp->shapes[i] : NULL;
}

size_t space_n_params(const space *sp)
{
    return sp->n_params;
}

const tune_point *space_param(const space *sp, size_t i)
{
    return i < sp->n_params ? &sp->params[i] : NULL;
}

size_t space_n_configs(const space *sp)
{
    return sp->n_configs;
}

const space_config *space_config_at(const space *sp, size_t i)
{
    return i < sp->n_configs ? &sp->configs[i] : NULL;
}

void space_config_point(const space *sp, size_t i, tune_point *out)
{
    const space_config *c = space_config_at(sp, i);
    memset(out, 0, sizeof *out);
    if (!c)
        return;
    *out = sp->shapes[c->shape];
    point_set_str(out, "method", sp->sw->methods[c->method]);
    if (c->param != SPACE_NO_PARAM)
        point_merge(out, &sp->params[c->param]);
}

size_t space_n_pruned(const space *sp)
{
    return sp->n_pruned;
}

size_t space_n_pruned_family(const space *sp)
{
    return sp->n_pruned_family;
}

size_t space_n_family_rules(const space *sp)
{
    return sp->n_rules;
}

const char *space_family_rule(const space *sp, size_t i, size_t *count)
{
    if (i >= sp->n_rules)
        return NULL;
    if (count)
        *count = sp->rule_counts[i];
    return sp->rules[i];
}

const char *space_config_identity(const sweep *sw, const space *sp, size_t config, char *buf,
                                  size_t size)
{
    const space_config *c = space_config_at(sp, config);
    tune_point p, id = {0};
    space_config_point(sp, config, &p);
    expr_value v;
    for (size_t a = 0; a < sw->n_problem; a++)
        if (point_get(&p, sw->problem[a].name, &v) == 0)
            point_set(&id, sw->problem[a].name, v);
    for (size_t a = 0; c->param != SPACE_NO_PARAM && a < sw->n_params; a++)
        if (point_get(&p, sw->params[a].name, &v) == 0)
            point_set(&id, sw->params[a].name, v);
    return point_identity(sw->methods[c->method], &id, buf, size);
}
