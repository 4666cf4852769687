/* replay.c - a search replayed against a measured run: the folders read, the searches driven
 * through model/search.h as a run drives them, the figures of each run kept. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/replay_impl.h"
#include "core/hash.h"
#include "store/meta.h"

void replay_options_init(replay_options *o)
{
    memset(o, 0, sizeof *o);
    o->strategies[0] = SEARCH_RANDOM;
    o->strategies[1] = SEARCH_MODEL;
    o->scopes[0] = o->scopes[1] = SEARCH_SCOPE_RUN;
    o->n_strategies = 2;
    o->seeds = 20;
    o->budgets[0] = 0.05;
    o->budgets[1] = 0.10;
    o->budgets[2] = 0.25;
    o->n_budgets = 3;
}

int replay_parse_strategies(const char *text, replay_options *o)
{
    size_t n = 0;
    const char *p = text;
    while (p && *p) {
        char name[32];
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof name || n == REPLAY_MAX_STRATEGIES)
            return -1;
        memcpy(name, p, len);
        name[len] = '\0';
        search_strategy st;
        search_scope sc = SEARCH_SCOPE_RUN;
        char *slash = strchr(name, '/');
        if (slash && strcmp(slash, "/shape") != 0)
            return -1;
        if (slash) {
            *slash = '\0';
            sc = SEARCH_SCOPE_SHAPE;
        }
        if (search_strategy_parse(name, &st) != 0)
            return -1;
        for (size_t i = 0; i < n; i++)
            if (o->strategies[i] == st && o->scopes[i] == sc)
                return -1;
        o->scopes[n] = sc;
        o->strategies[n++] = st;
        p += len;
        if (*p == ',' && !*++p)
            return -1;
    }
    if (n == 0)
        return -1;
    o->n_strategies = n;
    return 0;
}

int replay_parse_budgets(const char *text, replay_options *o)
{
    size_t n = 0;
    const char *p = text;
    while (p && *p) {
        char num[32], *end;
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof num - 1 || n == REPLAY_MAX_BUDGETS)
            return -1;
        memcpy(num, p, len);
        num[len] = '\0';
        double v = strtod(num, &end);
        if (end == num || *end || !(v > 0 && v <= 100) || num[0] == '+' || num[0] == ' ')
            return -1;
        for (size_t i = 0; i < n; i++)
            if (o->budgets[i] == v / 100)
                return -1;
        o->budgets[n++] = v / 100;
        p += len;
        if (*p == ',' && !*++p)
            return -1;
    }
    if (n == 0)
        return -1;
    o->n_budgets = n;
    return 0;
}

static void features_release(replay_folder *F)
{
    for (size_t i = 0; i < F->n_derived; i++) {
        free(F->derived[i].text), free(F->derived[i].name);
        expr_free(F->derived[i].e);
    }
    free(F->derived);
    F->derived = NULL;
    F->n_derived = 0;
}

static void folder_release(replay_folder *F)
{
    free(F->dir), free(F->sweep), free(F->device), free(F->git_rev);
    features_release(F);
    free(F->cost), free(F->kernel_of), free(F->run_cost), free(F->run_kernels);
    results_rows_free(&F->rows);
    free(F->points), free(F->values), free(F->shape_of);
    for (size_t i = 0; i < F->n_shapes; i++)
        free(F->shapes[i].cands), free(F->shapes[i].key);
    free(F->shapes);
    free(F->evals_1pct), free(F->evals_3pct), free(F->at_budget);
    free(F->order), free(F->offset), free(F->rounds), free(F->evaluated);
}

const char *replay_strategy_name(const replay_options *o, size_t k, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s", search_strategy_name(o->strategies[k]),
             o->scopes[k] == SEARCH_SCOPE_SHAPE ? "/shape" : "");
    return buf;
}

void replay_free(replay *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_folders; i++)
        folder_release(&r->folders[i]);
    for (size_t i = 0; i < r->n_priors; i++)
        folder_release(&r->priors[i]);
    for (size_t i = 0; i < r->n_rules; i++) {
        free(r->rules[i].text), free(r->rules[i].param);
        expr_free(r->rules[i].rule);
    }
    free(r->folders), free(r->priors), free(r->rules);
    free(r);
}

/* "param=expr" parsed into r->rules[r->n_rules++]. */
static tune_status replay_add_rule(replay *r, const char *text, tune_error *err)
{
    const char *eq = strchr(text, '=');
    if (!eq || eq == text || eq[1] == '=')
        return tune_error_set(err, TUNE_ERR_INVALID, "replay",
                              "rule '%s': expected PARAM=EXPR (bn=min(256, n / 16))", text);
    replay_rule *ru = &r->rules[r->n_rules];
    memset(ru, 0, sizeof *ru);
    ru->text = strdup(text);
    ru->param = strndup(text, (size_t)(eq - text));
    if (!ru->text || !ru->param) {
        free(ru->text), free(ru->param);
        return tune_error_set(err, TUNE_ERR_NOMEM, "replay", "out of memory");
    }
    r->n_rules++;
    tune_error pe = {0};
    if (!(ru->rule = expr_parse(eq + 1, &pe)))
        return tune_error_set(err, TUNE_ERR_PARSE, "replay", "rule '%s': %s: %s", text, pe.where,
                              pe.message);
    return TUNE_OK;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static int is_candidate(const result_row *row)
{
    return row->values.n > row->n_axes && row->status != RESULT_SKIPPED;
}

/* "name=expr" parsed into F->derived[F->n_derived++]; where names the source in errors. */
static tune_status feature_add(replay_folder *F, const char *text, const char *where,
                               tune_error *err)
{
    const char *eq = strchr(text, '=');
    if (!eq || eq == text || eq[1] == '=')
        return tune_error_set(err, TUNE_ERR_INVALID, where,
                              "feature '%s': expected NAME=EXPR (tiles_n=(n + bn - 1) / bn)", text);
    if (F->n_derived == SEARCH_MAX_DERIVED)
        return tune_error_set(err, TUNE_ERR_INVALID, where, "at most %d derived features",
                              SEARCH_MAX_DERIVED);
    replay_feature *nf = realloc(F->derived, (F->n_derived + 1) * sizeof *nf);
    if (!nf)
        return tune_error_set(err, TUNE_ERR_NOMEM, "replay", "out of memory");
    F->derived = nf;
    replay_feature *f = &F->derived[F->n_derived];
    memset(f, 0, sizeof *f);
    f->text = strdup(text);
    f->name = strndup(text, (size_t)(eq - text));
    if (!f->text || !f->name) {
        free(f->text), free(f->name);
        return tune_error_set(err, TUNE_ERR_NOMEM, "replay", "out of memory");
    }
    F->n_derived++;
    tune_error pe = {0};
    if (!(f->e = expr_parse(eq + 1, &pe)))
        return tune_error_set(err, TUNE_ERR_PARSE, where, "feature '%s': %s: %s", text, pe.where,
                              pe.message);
    return TUNE_OK;
}

/* The derived features a run of the folder searched with: meta.json's search block's
 * "features", else its sweep's search.features ({name: expr}, in order). */
static tune_status folder_meta_features(replay_folder *F, const json_t *meta, tune_error *err)
{
    const json_t *feats = json_object_get(meta_search_block(meta), "features");
    if (!feats)
        feats = json_object_get(
            json_object_get(json_object_get(json_object_get(meta, "sweep"), "source"), "search"),
            "features");
    if (!json_is_object(feats))
        return TUNE_OK;
    char path[PATH_MAX], text[4096];
    snprintf(path, sizeof path, "%s/meta.json", F->dir);
    const char *name;
    const json_t *v;
    tune_status st = TUNE_OK;
    json_object_foreach((json_t *)feats, name, v) {
        if (st != TUNE_OK)
            break;
        if (!json_is_string(v))
            return tune_error_set(err, TUNE_ERR_INVALID, path,
                                  "search feature '%s': expected an expression (a string)", name);
        snprintf(text, sizeof text, "%s=%s", name, json_string_value(v));
        st = feature_add(F, text, path, err);
    }
    return st;
}

/* meta.json (when the folder has one) checked; the sweep, device, revision, the warmup and (unless
 * the options give them) the derived features kept. */
static tune_status folder_meta(replay_folder *F, const replay_options *o, tune_error *err)
{
    json_t *meta = NULL;
    const char *dirs[1] = {F->dir};
    tune_status st = meta_check_folders(dirs, 1, &meta, err);
    if (st == TUNE_OK && meta) {
        F->sweep = dup_or_null(meta_sweep_name(meta));
        F->device = dup_or_null(meta_device_name(meta));
        F->git_rev = dup_or_null(meta_tool_git_rev(meta));
        json_t *w = json_object_get(json_object_get(meta, "timing"), "warmup");
        F->warmup = json_is_integer(w) ? (int)json_integer_value(w) : 0;
        if (!o->features_set)
            st = folder_meta_features(F, meta, err);
    }
    for (size_t i = 0; st == TUNE_OK && o->features_set && i < o->n_features; i++)
        st = feature_add(F, o->features[i], "--feature", err);
    json_decref(meta);
    return st;
}

/* 1 when name is one of the folder's features or one of its first n derived ones. */
static int feature_known(const replay_folder *F, size_t n, const char *name)
{
    for (size_t f = 0; f < F->n_features; f++)
        if (strcmp(F->features[f], name) == 0)
            return 1;
    for (size_t d = 0; d < n; d++)
        if (strcmp(F->derived[d].name, name) == 0)
            return 1;
    return 0;
}

/* Each derived feature reads the folder's features (problem axes, "method", parameters) and the
 * derived features before it, and is not one of them. */
static tune_status folder_check_features(replay_folder *F, tune_error *err)
{
    for (size_t i = 0; i < F->n_derived; i++) {
        const replay_feature *d = &F->derived[i];
        const char *used[64];
        size_t n = expr_names(d->e, used, 64);
        for (size_t k = 0; k < n && k < 64; k++)
            if (!feature_known(F, i, used[k]))
                return tune_error_set(err, TUNE_ERR_INVALID, "replay",
                                      "feature '%s' of %s: unknown name '%s' (a problem axis, "
                                      "method, a parameter or a feature before it)",
                                      d->text, F->dir, used[k]);
        if (feature_known(F, i, d->name))
            return tune_error_set(err, TUNE_ERR_INVALID, "replay",
                                  "feature '%s' of %s: '%s' is a feature already", d->text, F->dir,
                                  d->name);
    }
    return TUNE_OK;
}

/* Per candidate its GPU time and kernel; the baselines' time, every row's. */
static tune_status folder_costs(replay_folder *F, tune_error *err)
{
    F->cost = calloc(F->n_cands + 1, sizeof *F->cost);
    F->kernel_of = calloc(F->n_cands + 1, sizeof *F->kernel_of);
    const char **kernels = calloc(F->n_cands + 1, sizeof *kernels);
    uint64_t *hashes = calloc(F->n_cands + 1, sizeof *hashes);
    if (!F->cost || !F->kernel_of || !kernels || !hashes) {
        free(kernels), free(hashes);
        return tune_error_set(err, TUNE_ERR_NOMEM, "replay", "out of memory");
    }
    for (size_t i = 0, c = 0; i < F->rows.n; i++) {
        const result_row *row = &F->rows.rows[i];
        double t = row->time.n > 0 && row->time.median > 0
                       ? (double)((size_t)F->warmup + row->time.n) * row->time.median *
                             (row->batch > 0 ? row->batch : 1)
                       : 0;
        if (row->status == RESULT_SKIPPED)
            continue;
        F->all_cost += t;
        F->n_measured++;
        if (!is_candidate(row)) {
            F->base_cost += t, F->n_base++;
            continue;
        }
        F->cost[c] = t;
        const char *k = row->kernel ? row->kernel : "";
        uint64_t h = hash_fnv1a_str(0xcbf29ce484222325ull, k);
        size_t j = 0;
        while (j < F->n_kernels && !(hashes[j] == h && strcmp(kernels[j], k) == 0))
            j++;
        if (j == F->n_kernels)
            kernels[F->n_kernels] = k, hashes[F->n_kernels++] = h;
        F->kernel_of[c++] = (uint32_t)j;
    }
    free(kernels), free(hashes);
    return TUNE_OK;
}

/* The features: the first tuned row's problem axes, "method", its parameters. */
static void folder_features(replay_folder *F, const result_row *row)
{
    F->n_features = 0;
    F->n_axes = row->n_axes;
    for (size_t a = 0; a < row->n_axes && F->n_features < SEARCH_MAX_FEATURES; a++)
        F->features[F->n_features++] = row->values.names[a];
    if (F->n_features < SEARCH_MAX_FEATURES)
        F->features[F->n_features++] = "method";
    for (size_t p = 0; p < row->n_params && F->n_features < SEARCH_MAX_FEATURES; p++)
        F->features[F->n_features++] = row->param_names[p];
}

/* The shape of row (its problem-axis values), found or added; SIZE_MAX when out of memory. */
static size_t folder_shape(replay_folder *F, const result_row *row, uint64_t *hashes)
{
    char key[4096];
    tune_point axes = row->values;
    axes.n = row->n_axes;
    point_format(&axes, key, sizeof key);
    uint64_t h = hash_fnv1a_str(0xcbf29ce484222325ull, key);
    for (size_t i = 0; i < F->n_shapes; i++)
        if (hashes[i] == h && strcmp(F->shapes[i].key, key) == 0)
            return i;
    replay_shape *sh = &F->shapes[F->n_shapes];
    memset(sh, 0, sizeof *sh);
    if (!(sh->key = strdup(key)))
        return SIZE_MAX;
    sh->best = NAN;
    hashes[F->n_shapes] = h;
    return F->n_shapes++;
}

/* "m=1 k=4096": the axes whose values differ between shapes (every axis when none does). */
static void folder_shape_names(replay_folder *F)
{
    if (F->n_shapes == 0)
        return;
    const tune_point *p0 = &F->points[F->shapes[0].cands[0]];
    size_t n_axes = F->n_axes, vary[TUNE_MAX_AXES], nv = 0;
    for (size_t a = 0; a < n_axes; a++)
        for (size_t s = 1; s < F->n_shapes; s++)
            if (!expr_value_equal(p0->vals[a], F->points[F->shapes[s].cands[0]].vals[a])) {
                vary[nv++] = a;
                break;
            }
    for (size_t s = 0; s < F->n_shapes; s++) {
        tune_point p = {0};
        const tune_point *src = &F->points[F->shapes[s].cands[0]];
        for (size_t k = 0; k < (nv ? nv : n_axes); k++)
            point_set(&p, src->names[nv ? vary[k] : k], src->vals[nv ? vary[k] : k]);
        point_format(&p, F->shapes[s].name, sizeof F->shapes[s].name);
    }
}

static tune_status folder_candidates(replay_folder *F, tune_error *err)
{
    const result_row *first = NULL;
    for (size_t i = 0; i < F->rows.n && !first; i++)
        if (is_candidate(&F->rows.rows[i]))
            first = &F->rows.rows[i];
    char path[PATH_MAX + 16];
    if (results_locate(F->dir, path, sizeof path, err) != TUNE_OK)
        return err ? err->code : TUNE_ERR_INVALID;
    if (!first)
        return tune_error_set(err, TUNE_ERR_INVALID, path,
                              "no row of a tuned method (a row with parameters) to replay");
    folder_features(F, first);
    size_t n = F->rows.n;
    F->points = calloc(n, sizeof *F->points);
    F->values = calloc(n, sizeof *F->values);
    F->shape_of = calloc(n, sizeof *F->shape_of);
    F->shapes = calloc(n, sizeof *F->shapes);
    uint64_t *hashes = calloc(n, sizeof *hashes);
    if (!F->points || !F->values || !F->shape_of || !F->shapes || !hashes) {
        free(hashes);
        return tune_error_set(err, TUNE_ERR_NOMEM, "replay", "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const result_row *row = &F->rows.rows[i];
        if (!is_candidate(row))
            continue;
        if (row->n_axes != first->n_axes) {
            free(hashes);
            return tune_error_set(err, TUNE_ERR_INVALID, path,
                                  "row %zu (method %s) has other problem axes than the first", i,
                                  row->method ? row->method : "?");
        }
        size_t c = F->n_cands++, s = folder_shape(F, row, hashes);
        if (s == SIZE_MAX) {
            free(hashes);
            return tune_error_set(err, TUNE_ERR_NOMEM, "replay", "out of memory");
        }
        F->points[c] = row->values;
        point_set_str(&F->points[c], "method", row->method ? row->method : "?");
        F->values[c] = row->status == RESULT_OK && row->time.n > 0 && row->time.median > 0
                           ? row->time.median
                           : NAN;
        F->shape_of[c] = s;
        replay_shape *sh = &F->shapes[s];
        size_t *nc = realloc(sh->cands, (sh->n_cands + 1) * sizeof *nc);
        if (!nc) {
            free(hashes);
            return tune_error_set(err, TUNE_ERR_NOMEM, "replay", "out of memory");
        }
        sh->cands = nc;
        sh->cands[sh->n_cands++] = c;
        if (!isnan(F->values[c]) && !(F->values[c] >= sh->best))
            sh->best = F->values[c];
    }
    free(hashes);
    for (size_t s = 0; s < F->n_shapes; s++)
        F->n_counted += !isnan(F->shapes[s].best);
    folder_shape_names(F);
    return TUNE_OK;
}

static tune_status folder_load(replay_folder *F, const char *dir, const replay_options *o,
                               tune_error *err)
{
    char path[PATH_MAX + 16];
    struct stat st_buf;
    if (!(F->dir = strdup(dir)))
        return tune_error_set(err, TUNE_ERR_NOMEM, "replay", "out of memory");
    tune_status st = results_locate(dir, path, sizeof path, err);
    if (st != TUNE_OK)
        return st;
    if (stat(path, &st_buf) != 0)
        return tune_error_set(err, TUNE_ERR_IO, path,
                              "cannot read: no raw.jsonl or raw.jsonl.gz (a results folder of a "
                              "measured run)");
    st = folder_meta(F, o, err);
    if (st == TUNE_OK)
        st = results_read(path, &F->rows, err);
    size_t dropped = 0;
    if (st == TUNE_OK)
        st = results_rows_dedup(&F->rows, &dropped, err);
    if (st == TUNE_OK)
        st = folder_candidates(F, err);
    if (st == TUNE_OK)
        st = folder_check_features(F, err);
    return st == TUNE_OK ? folder_costs(F, err) : st;
}

/* Where one run's figures go: the full run's order and evaluations to 1 % / 3 % (budget NAN),
 * or a budget's fraction of the best. */
typedef struct {
    size_t strategy, seed, budget; /* budget: an index into the options' budgets, or n_budgets */
} replay_job;

/* What one run observed of shape s so far. */
typedef struct {
    double best;
    size_t n;
} replay_track;

static void replay_record(replay *r, replay_folder *F, const replay_job *j, replay_track *t,
                          size_t c, uint32_t *order)
{
    size_t s = F->shape_of[c], slot = replay_slot(r, s, j->strategy, j->seed);
    replay_track *tr = &t[s];
    double v = F->values[c], best = F->shapes[s].best;
    if (order)
        order[F->offset[s] + tr->n] = (uint32_t)c;
    tr->n++;
    if (!isnan(v) && !(v >= tr->best))
        tr->best = v;
    if (j->budget < r->opt.n_budgets || isnan(best))
        return;
    if (!F->evals_1pct[slot] && tr->best <= best * 1.01)
        F->evals_1pct[slot] = (uint32_t)tr->n;
    if (!F->evals_3pct[slot] && tr->best <= best * 1.03)
        F->evals_3pct[slot] = (uint32_t)tr->n;
}

/* One search over the folder's candidates, driven as a run drives it. */
static tune_status replay_one(replay *r, replay_folder *F, const replay_job *j, size_t *ids,
                              replay_track *t, uint8_t *seen, tune_error *err)
{
    search_options o;
    search_options_init(&o);
    o.strategy = r->opt.strategies[j->strategy];
    o.scope = r->opt.scopes[j->strategy];
    o.seed = (uint64_t)j->seed + 1;
    if (j->budget < r->opt.n_budgets)
        o.budget_fraction = r->opt.budgets[j->budget];
    search *s = search_new(&o, F->features, F->n_features, err);
    if (!s)
        return err ? err->code : TUNE_ERR_INVALID;
    for (size_t d = 0; d < F->n_derived; d++)
        if (search_add_feature(s, F->derived[d].name, F->derived[d].e) != 0) {
            search_free(s);
            return tune_error_set(err, TUNE_ERR_INVALID, "replay", "feature '%s' refused",
                                  F->derived[d].text);
        }
    int rc = 0;
    for (size_t c = 0; rc == 0 && c < F->n_cands; c++)
        rc = search_add(s, F->shape_of[c], c, &F->points[c]);
    for (size_t p = 0, base = F->n_shapes; rc == 0 && p < r->n_priors; p++) {
        const replay_folder *P = &r->priors[p];
        for (size_t c = 0; rc == 0 && c < P->n_cands; c++)
            rc = search_observe_prior(s, base + P->shape_of[c], &P->points[c], P->values[c]);
        base += P->n_shapes;
    }
    if (rc != 0) {
        search_free(s);
        return tune_error_set(err, TUNE_ERR_NOMEM, "replay", "out of memory");
    }
    for (size_t k = 0; k < r->n_rules; k++)
        if (search_add_rule(s, r->rules[k].param, r->rules[k].rule) != 0) {
            search_free(s);
            return tune_error_set(err, TUNE_ERR_INVALID, "replay",
                                  "rule '%s': %s is not a parameter of %s", r->rules[k].text,
                                  r->rules[k].param, F->dir);
        }
    for (size_t i = 0; i < F->n_shapes; i++)
        t[i] = (replay_track){INFINITY, 0};
    uint32_t *order = j->budget < r->opt.n_budgets
                          ? NULL
                          : F->order + (j->strategy * r->opt.seeds + j->seed) * F->n_cands;
    size_t n;
    uint32_t rounds = 0, kernels = 0;
    double cost = F->base_cost;
    memset(seen, 0, F->n_kernels + 1);
    while ((n = search_next(s, ids, F->n_cands)) > 0) {
        for (size_t i = 0; i < n; i++) {
            search_observe(s, ids[i], F->values[ids[i]]);
            replay_record(r, F, j, t, ids[i], order);
            cost += F->cost[ids[i]];
            kernels += !seen[F->kernel_of[ids[i]]];
            seen[F->kernel_of[ids[i]]] = 1;
        }
        rounds++;
    }
    size_t run = (j->strategy * r->opt.seeds + j->seed) * (r->opt.n_budgets + 1) + j->budget;
    F->rounds[run] = rounds;
    F->run_cost[run] = cost;
    F->run_kernels[run] = kernels;
    F->evaluated[run] = (uint32_t)search_n_evaluated_total(s);
    for (size_t i = 0; j->budget < r->opt.n_budgets && i < F->n_shapes; i++) {
        double best = F->shapes[i].best;
        F->at_budget[replay_slot(r, i, j->strategy, j->seed) * r->opt.n_budgets + j->budget] =
            isnan(best) ? NAN : isfinite(t[i].best) ? best / t[i].best : 0;
    }
    search_free(s);
    return TUNE_OK;
}

static tune_status replay_folder_run(replay *r, replay_folder *F, tune_error *err)
{
    size_t slots = F->n_shapes * r->opt.n_strategies * r->opt.seeds;
    F->evals_1pct = calloc(slots ? slots : 1, sizeof *F->evals_1pct);
    F->evals_3pct = calloc(slots ? slots : 1, sizeof *F->evals_3pct);
    F->at_budget = calloc((slots ? slots : 1) * r->opt.n_budgets, sizeof *F->at_budget);
    F->order = calloc(r->opt.n_strategies * r->opt.seeds * F->n_cands, sizeof *F->order);
    F->offset = calloc(F->n_shapes + 1, sizeof *F->offset);
    F->rounds = calloc(r->opt.n_strategies * r->opt.seeds * (r->opt.n_budgets + 1),
                       sizeof *F->rounds);
    F->evaluated = calloc(r->opt.n_strategies * r->opt.seeds * (r->opt.n_budgets + 1),
                          sizeof *F->evaluated);
    F->run_cost = calloc(r->opt.n_strategies * r->opt.seeds * (r->opt.n_budgets + 1),
                         sizeof *F->run_cost);
    F->run_kernels = calloc(r->opt.n_strategies * r->opt.seeds * (r->opt.n_budgets + 1),
                            sizeof *F->run_kernels);
    size_t *ids = malloc(F->n_cands * sizeof *ids);
    replay_track *t = malloc(F->n_shapes * sizeof *t);
    uint8_t *seen = malloc(F->n_kernels + 1);
    tune_status st = F->evals_1pct && F->evals_3pct && F->at_budget && F->order && F->offset &&
                             F->rounds && F->evaluated && F->run_cost && F->run_kernels && ids &&
                             t && seen
                         ? TUNE_OK
                         : tune_error_set(err, TUNE_ERR_NOMEM, "replay", "out of memory");
    for (size_t i = 0; st == TUNE_OK && i < F->n_shapes; i++)
        F->offset[i + 1] = F->offset[i] + F->shapes[i].n_cands;
    for (size_t k = 0; st == TUNE_OK && k < r->opt.n_strategies; k++)
        for (size_t seed = 0; st == TUNE_OK && seed < r->opt.seeds; seed++)
            for (size_t b = 0; st == TUNE_OK && b <= r->opt.n_budgets; b++) {
                replay_job j = {k, seed, b};
                st = replay_one(r, F, &j, ids, t, seen, err);
            }
    free(ids);
    free(t);
    free(seen);
    return st;
}

/* "family/op" of the folder's first row into buf ("" when it has none). */
static const char *folder_kind(const replay_folder *F, char *buf, size_t size)
{
    const result_row *r = F->rows.n ? &F->rows.rows[0] : NULL;
    snprintf(buf, size, "%s/%s", r && r->family ? r->family : "?", r && r->op ? r->op : "?");
    return buf;
}

/* A folder replayed has measured rows, and its priors are runs of its family and op. */
static tune_status folder_check_replayable(const replay *r, const replay_folder *F,
                                           tune_error *err)
{
    if (F->n_counted == 0)
        return tune_error_set(err, TUNE_ERR_INVALID, F->dir,
                              "no shape with a measured row (no tuned configuration ran ok): "
                              "nothing to replay against");
    char a[512], b[512];
    folder_kind(F, a, sizeof a);
    for (size_t p = 0; p < r->n_priors; p++)
        if (strcmp(folder_kind(&r->priors[p], b, sizeof b), a) != 0)
            return tune_error_set(err, TUNE_ERR_INVALID, r->priors[p].dir,
                                  "--prior: a run of %s, and %s is a run of %s: a prior's rows "
                                  "inform a search of its own family and op only",
                                  b, F->dir, a);
    return TUNE_OK;
}

replay *replay_run(const char *const *dirs, size_t n_dirs, const replay_options *o,
                   tune_error *err)
{
    replay *r = calloc(1, sizeof *r);
    if (!r || !(r->folders = calloc(n_dirs ? n_dirs : 1, sizeof *r->folders))) {
        free(r);
        tune_error_set(err, TUNE_ERR_NOMEM, "replay", "out of memory");
        return NULL;
    }
    r->opt = *o;
    r->priors = calloc(o->n_prior_dirs + 1, sizeof *r->priors);
    r->rules = calloc(o->n_rules + 1, sizeof *r->rules);
    tune_status st = r->priors && r->rules
                         ? TUNE_OK
                         : tune_error_set(err, TUNE_ERR_NOMEM, "replay", "out of memory");
    if (o->seeds == 0 || o->n_strategies == 0 || o->n_budgets == 0)
        st = tune_error_set(err, TUNE_ERR_INVALID, "replay",
                            "at least one strategy, one seed and one budget");
    for (size_t i = 0; st == TUNE_OK && i < o->n_rules; i++)
        st = replay_add_rule(r, o->rules[i], err);
    for (size_t i = 0; st == TUNE_OK && i < o->n_prior_dirs; i++) {
        r->n_priors++;
        st = folder_load(&r->priors[i], o->prior_dirs[i], o, err);
    }
    r->opt.prior_dirs = NULL; /* borrowed for the call only: the folders keep their names */
    r->opt.rules = NULL;
    r->opt.features = NULL;
    for (size_t i = 0; st == TUNE_OK && i < n_dirs; i++) {
        r->n_folders++;
        st = folder_load(&r->folders[i], dirs[i], o, err);
        if (st == TUNE_OK)
            st = folder_check_replayable(r, &r->folders[i], err);
        if (st == TUNE_OK)
            st = replay_folder_run(r, &r->folders[i], err);
    }
    if (st != TUNE_OK) {
        replay_free(r);
        return NULL;
    }
    return r;
}
