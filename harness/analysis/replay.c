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

static void folder_release(replay_folder *F)
{
    free(F->dir), free(F->sweep), free(F->device), free(F->git_rev);
    results_rows_free(F->rows, F->n_rows);
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

/* meta.json (when the folder has one) checked; the sweep, device and revision kept. */
static tune_status folder_meta(replay_folder *F, tune_error *err)
{
    json_t *meta = NULL;
    const char *dirs[1] = {F->dir};
    tune_status st = meta_check_folders(dirs, 1, &meta, err);
    if (st == TUNE_OK && meta) {
        F->sweep = dup_or_null(meta_sweep_name(meta));
        F->device = dup_or_null(meta_device_name(meta));
        F->git_rev = dup_or_null(meta_tool_git_rev(meta));
    }
    json_decref(meta);
    return st;
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

static int is_candidate(const result_row *row)
{
    return row->values.n > row->n_axes && row->status != RESULT_SKIPPED;
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
    for (size_t i = 0; i < F->n_rows && !first; i++)
        if (is_candidate(&F->rows[i]))
            first = &F->rows[i];
    char path[PATH_MAX + 16];
    if (results_locate(F->dir, path, sizeof path, err) != TUNE_OK)
        return err ? err->code : TUNE_ERR_INVALID;
    if (!first)
        return tune_error_set(err, TUNE_ERR_INVALID, path,
                              "no row of a tuned method (a row with parameters) to replay");
    folder_features(F, first);
    size_t n = F->n_rows;
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
        const result_row *row = &F->rows[i];
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

static tune_status folder_load(replay_folder *F, const char *dir, tune_error *err)
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
    st = folder_meta(F, err);
    if (st == TUNE_OK)
        st = results_read(path, &F->rows, &F->n_rows, err);
    size_t dropped = 0;
    if (st == TUNE_OK)
        st = results_rows_dedup(F->rows, &F->n_rows, &dropped, err);
    return st == TUNE_OK ? folder_candidates(F, err) : st;
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
                              replay_track *t, tune_error *err)
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
    uint32_t rounds = 0;
    while ((n = search_next(s, ids, F->n_cands)) > 0) {
        for (size_t i = 0; i < n; i++) {
            search_observe(s, ids[i], F->values[ids[i]]);
            replay_record(r, F, j, t, ids[i], order);
        }
        rounds++;
    }
    size_t run = (j->strategy * r->opt.seeds + j->seed) * (r->opt.n_budgets + 1) + j->budget;
    F->rounds[run] = rounds;
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
    size_t *ids = malloc(F->n_cands * sizeof *ids);
    replay_track *t = malloc(F->n_shapes * sizeof *t);
    tune_status st = F->evals_1pct && F->evals_3pct && F->at_budget && F->order && F->offset &&
                             F->rounds && F->evaluated && ids && t
                         ? TUNE_OK
                         : tune_error_set(err, TUNE_ERR_NOMEM, "replay", "out of memory");
    for (size_t i = 0; st == TUNE_OK && i < F->n_shapes; i++)
        F->offset[i + 1] = F->offset[i] + F->shapes[i].n_cands;
    for (size_t k = 0; st == TUNE_OK && k < r->opt.n_strategies; k++)
        for (size_t seed = 0; st == TUNE_OK && seed < r->opt.seeds; seed++)
            for (size_t b = 0; st == TUNE_OK && b <= r->opt.n_budgets; b++) {
                replay_job j = {k, seed, b};
                st = replay_one(r, F, &j, ids, t, err);
            }
    free(ids);
    free(t);
    return st;
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
        st = folder_load(&r->priors[i], o->prior_dirs[i], err);
    }
    r->opt.prior_dirs = NULL; /* borrowed for the call only: the folders keep their names */
    r->opt.rules = NULL;
    for (size_t i = 0; st == TUNE_OK && i < n_dirs; i++) {
        r->n_folders++;
        st = folder_load(&r->folders[i], dirs[i], err);
        if (st == TUNE_OK)
            st = replay_folder_run(r, &r->folders[i], err);
    }
    if (st != TUNE_OK) {
        replay_free(r);
        return NULL;
    }
    return r;
}
