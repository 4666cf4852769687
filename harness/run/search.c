/* search.c - a searched run (docs/search.md): every tuned configuration the family can run is a
 * candidate of model/search.h; round by round, the proposals' kernels are compiled (in the
 * compile child, only those not compiled yet), the run's one worker measures the round as they
 * come (search_session.c; the baselines too in the first), and each row goes back to the search
 * as an observation. After the last round, each shape's fastest candidates are re-timed once
 * (run/retime.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/interrupt.h"
#include "run/internal.h"
#include "run/search_ctx.h"

#define RUN_SEARCH_MAX_ROUNDS 64 /* rounds whose figures meta.json keeps (the first ones) */

/* run_search_ctx.state: what only this file reads. */
typedef struct run_search_state {
    sweep_search set; /* the settings in force (warm_start borrowed) */
    search *s;
    char tmp_cache[64]; /* the private kernel cache under --no-cache ("" when none) */
    size_t rounds, prior_rows, kernels_compiled;
    int time_limit_hit, finished;
    /* where the time went (meta.json's search.timeline): per round, the re-timing pass */
    run_session_stats round_stats[RUN_SEARCH_MAX_ROUNDS];
    double search_s; /* the strategy's own time (search_next) */
    double retime_s; /* the re-timing pass after the last round */
} run_search_state;

/* dir's meta.json: a run of the sweep's family and op (the sweep's name alone is not enough: two
 * sweeps of one name may tune different kernels). */
static tune_status warm_check(const sweep *sw, const char *dir, tune_error *err)
{
    json_error_t je = {0};
    json_t *m = meta_load(dir, &je);
    if (!m)
        return tune_error_set(err, TUNE_ERR_INVALID, dir,
                              "cannot warm-start from it: not a results folder (meta.json: %s)",
                              je.text);
    const char *name = meta_sweep_name(m), *fam = meta_sweep_family(m), *op = meta_sweep_op(m);
    tune_status st = TUNE_OK;
    if (!(fam && op && strcmp(fam, sw->family_name) == 0 && strcmp(op, sw->op) == 0))
        st = tune_error_set(err, TUNE_ERR_INVALID, dir,
                            "cannot warm-start from it: a run of family %s, op %s (sweep '%s'); "
                            "this run is of family %s, op %s (sweep '%s'): a warm start needs "
                            "the same family and op",
                            fam ? fam : "?", op ? op : "?", name ? name : "?", sw->family_name,
                            sw->op, sw->name);
    json_decref(m);
    return st;
}

tune_status run_search_settings(const sweep *sw, const run_options *opt, sweep_search *out,
                                tune_error *err)
{
    *out = sw->search;
    if (opt->search && search_strategy_parse(opt->search, &out->opt.strategy) != 0)
        return tune_error_set(err, TUNE_ERR_INVALID, "--search",
                              "expected exhaustive, random or model, got '%s'", opt->search);
    if (opt->budget && search_budget_parse(opt->budget, &out->opt.budget_fraction,
                                           &out->opt.budget_count, &out->opt.scope) != 0)
        return tune_error_set(err, TUNE_ERR_INVALID, "--budget",
                              "expected a count (an integer >= 1) or a percentage in (0, 100] "
                              "such as 10%%, optionally with /shape (10%%/shape), got '%s'",
                              opt->budget);
    if (opt->time_limit_s > 0)
        out->time_limit_s = opt->time_limit_s;
    if (opt->search_seed_set)
        out->opt.seed = opt->search_seed;
    if (opt->n_warm_start) {
        out->warm_start = (char **)opt->warm_start;
        out->n_warm_start = opt->n_warm_start;
    }
    if (out->n_warm_start && !sweep_search_on(out))
        return tune_error_set(err, TUNE_ERR_INVALID, opt->n_warm_start ? "--warm-start" : sw->file,
                              "a warm start applies to a searched run: give a strategy other "
                              "than exhaustive (--search random), a budget or a time limit");
    for (size_t i = 0; i < out->n_warm_start; i++) {
        tune_status st = warm_check(sw, out->warm_start[i], err);
        if (st != TUNE_OK)
            return st;
    }
    out->given = out->given || sweep_search_on(out);
    return TUNE_OK;
}

/* A new search of the settings over sw's features, or NULL with err set. */
static search *search_open(const sweep *sw, const sweep_search *set, tune_error *err)
{
    const char *features[SEARCH_MAX_FEATURES];
    size_t nf = sweep_search_features(sw, features);
    search *s = search_new(&set->opt, features, nf, err);
    for (size_t i = 0; s && i < set->n_features; i++)
        if (search_add_feature(s, set->feature_names[i], set->features[i]) != 0) {
            search_free(s);
            tune_error_set(err, TUNE_ERR_INVALID, sw->file, "search feature '%s' refused",
                           set->feature_names[i]);
            return NULL;
        }
    return s;
}

/* Whether configuration ci is a candidate: of a tuned method, and runnable (the family's
 * kernels() gave refs: nr >= 0). */
static int search_candidate(const space *sp, size_t ci, int nr)
{
    return nr >= 0 && space_config_at(sp, ci)->param != SPACE_NO_PARAM;
}

/* Adds candidate ci to s. 0, or -1 out of memory. */
static int search_add_config(search *s, const space *sp, size_t ci)
{
    tune_point p;
    space_config_point(sp, ci, &p);
    return search_add(s, space_config_at(sp, ci)->shape, ci, &p);
}

tune_status run_search_estimate(const sweep *sw, const space *sp, const sweep_search *set,
                                size_t *candidates, size_t *baselines, size_t *measured,
                                tune_error *err)
{
    *candidates = *baselines = *measured = 0;
    search *s = search_open(sw, set, err);
    if (!s)
        return err ? err->code : TUNE_ERR_INVALID;
    tune_status st = TUNE_OK;
    for (size_t ci = 0; ci < space_n_configs(sp) && st == TUNE_OK; ci++) {
        tune_point p;
        family_kernel_ref refs[FAMILY_MAX_KERNELS];
        char why[512];
        space_config_point(sp, ci, &p);
        memset(refs, 0, sizeof refs);
        int nr = sw->family->kernels(sw->family, &p, refs, FAMILY_MAX_KERNELS, why, sizeof why);
        if (space_config_at(sp, ci)->param == SPACE_NO_PARAM)
            (*baselines)++;
        if (!search_candidate(sp, ci, nr))
            continue;
        if (search_add_config(s, sp, ci) != 0)
            st = tune_error_set(err, TUNE_ERR_NOMEM, "search", "out of memory");
        (*candidates)++;
    }
    *measured = *baselines + search_budget_total(s);
    search_free(s);
    return st;
}

void run_search_observe(run_ctx *rc, size_t ci, result_status st, double median, double cost)
{
    double v = st == RESULT_OK && median > 0 ? median : NAN;
    if (space_config_at(rc->sp, ci)->param != SPACE_NO_PARAM)
        rc->search->medians[ci] = v;
    search_observe(rc->search->state->s, ci, st == RESULT_OK && cost > 0 ? cost : NAN);
}

tune_status run_search_prepare(run_ctx *rc, sweep_search *settings)
{
    size_t n = space_n_configs(rc->sp), ns = space_n_shapes(rc->sp);
    run_search_ctx *sx = calloc(1, sizeof *sx);
    run_search_state *ss = sx ? calloc(1, sizeof *ss) : NULL;
    if (!ss) {
        free(sx);
        return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    }
    rc->search = sx;
    sx->state = ss;
    ss->set = *settings;
    if (!(ss->s = search_open(rc->sw, &ss->set, rc->err)))
        return rc->err ? rc->err->code : TUNE_ERR_INVALID;
    /* the read probe every worker measures with: the table's first kernel */
    family_kernel_ref probe = {.source = "common.cu", .name = "tune_read_probe"};
    if (run_kernel_index(rc, &probe) == SIZE_MAX || run_key_add(rc, &probe, 1) != 0)
        return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    sx->todo = calloc(n ? n : 1, 1);
    sx->medians = malloc((n ? n : 1) * sizeof *sx->medians);
    sx->resumed = calloc(n ? n : 1, 1);
    sx->resumed_cost = malloc((n ? n : 1) * sizeof *sx->resumed_cost);
    sx->compiled = calloc(rc->cap_kernels ? rc->cap_kernels : 1, 1);
    sx->retime_todo = calloc(ns ? ns : 1, 1);
    sx->retimed = calloc(ns ? ns : 1, 1);
    if (!sx->todo || !sx->medians || !sx->resumed || !sx->resumed_cost || !sx->compiled ||
        !sx->retime_todo || !sx->retimed)
        return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    /* one pass over the space: the candidates (the family's refusals are none), and the run key
     * of every configuration's kernels (other shards' too: the shards of a run share it); the
     * kernels themselves are planned when a round proposes them */
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[512];
    size_t shards = rc->plan ? rc->opt->shard_count : 1;
    size_t *n_of = calloc(shards ? shards : 1, sizeof *n_of); /* candidates per shard */
    if (!n_of)
        return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    for (size_t ci = 0; ci < n; ci++) {
        sx->medians[ci] = sx->resumed_cost[ci] = NAN;
        int nr = run_config_refs(rc, ci, refs, why, sizeof why);
        int candidate = search_candidate(rc->sp, ci, nr);
        size_t owner = rc->plan ? shard_plan_owner(rc->plan, ci) : 0;
        n_of[owner < shards ? owner : 0] += (size_t)candidate;
        int bad = run_key_add(rc, refs, nr) != 0;
        if (!bad && candidate && owner == (rc->plan ? rc->opt->shard_index : 0))
            bad = search_add_config(ss->s, rc->sp, ci) != 0; /* this shard's */
        if (bad) {
            free(n_of);
            return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
        }
    }
    /* a count is the run's in all: a shard measures its share of it (--gpus, --shard) */
    if (rc->plan)
        search_share_budget(ss->s, n_of, shards, rc->opt->shard_index);
    free(n_of);
    return TUNE_OK;
}

const char *run_search_key(const run_ctx *rc, char *buf, size_t size)
{
    char budget[64];
    const sweep_search *set = &rc->search->state->set;
    size_t len = (size_t)snprintf(buf, size, "%s budget=%s seed=%llu batch=%zu",
                                  search_strategy_name(set->opt.strategy),
                                  search_budget_format(&set->opt, budget, sizeof budget),
                                  (unsigned long long)set->opt.seed, set->opt.batch);
    for (size_t i = 0; i < set->n_warm_start && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s",
                                i ? "," : " warm_start=", set->warm_start[i]);
    /* the derived features in their canonical text: a resume with other features is refused */
    for (size_t i = 0; i < set->n_features && len < size; i++) {
        char *e = expr_to_string(set->features[i]);
        len += (size_t)snprintf(buf + len, size - len, "%s%s=%s",
                                i ? ";" : " features=", set->feature_names[i], e ? e : "?");
        free(e);
    }
    /* what the search observed (time, written only when not, as before objectives): a resume by
     * another objective is refused, its rows' costs would mean something else */
    if (rc->opt->objective != OBJECTIVE_TIME && len < size)
        snprintf(buf + len, size - len, " objective=%s", objective_name(rc->opt->objective));
    return buf;
}

int run_search_past_deadline(const run_ctx *rc)
{
    return rc->search && rc->search->deadline > 0 && clock_now() > rc->search->deadline;
}

void run_search_free(run_ctx *rc)
{
    run_search_ctx *sx = rc->search;
    if (!sx)
        return;
    if (sx->state) {
        search_free(sx->state->s);
        if (sx->state->tmp_cache[0]) {
            interrupt_cleanup_remove(run_remove_cache_dir, sx->state->tmp_cache);
            run_remove_cache_dir(sx->state->tmp_cache);
        }
    }
    free(sx->state);
    free(sx->todo);
    free(sx->medians);
    free(sx->resumed);
    free(sx->resumed_cost);
    free(sx->compiled);
    free(sx->retime_todo);
    free(sx->retimed);
    run_key_free(rc);
    free(sx);
    rc->search = NULL;
}

/* ---- warm starts ---- */

/* The shape of this run whose problem axes equal the row's, or SIZE_MAX. */
static size_t shape_of_row(const run_ctx *rc, const result_row *row)
{
    for (size_t s = 0; s < space_n_shapes(rc->sp); s++) {
        const tune_point *sp = space_shape(rc->sp, s);
        size_t a = 0;
        for (; a < rc->sw->n_problem; a++) {
            expr_value x, y;
            const char *name = rc->sw->problem[a].name;
            if (point_get(sp, name, &x) != 0 || point_get(&row->values, name, &y) != 0 ||
                x.type != y.type ||
                (x.type == EXPR_STR   ? strcmp(x.s, y.s) != 0
                 : x.type == EXPR_INT ? x.i != y.i
                                      : x.f != y.f))
                break;
        }
        if (a == rc->sw->n_problem)
            return s;
    }
    return SIZE_MAX;
}

/* The ok rows of tuned methods of each warm-start folder (read only), as priors of the shapes
 * of this run that have candidates. */
static tune_status warm_start(run_ctx *rc)
{
    run_search_state *ss = rc->search->state;
    for (size_t d = 0; d < ss->set.n_warm_start; d++) {
        const char *dir = ss->set.warm_start[d];
        char path[PATH_MAX + 16];
        results_rows rows = {0};
        tune_status st = warm_check(rc->sw, dir, rc->err);
        if (st == TUNE_OK)
            st = results_locate(dir, path, sizeof path, rc->err);
        if (st == TUNE_OK)
            st = results_read(path, &rows, rc->err);
        for (size_t r = 0; st == TUNE_OK && r < rows.n; r++) {
            const result_row *row = &rows.rows[r];
            const family_method *m = family_find_method(rc->sw->family, row->method);
            double cost = results_row_cost(row, rc->opt->objective);
            if (!m || !m->tuned || !(cost > 0))
                continue;
            size_t shape = shape_of_row(rc, row);
            if (shape == SIZE_MAX || search_n_candidates(ss->s, shape) == 0)
                continue; /* not a shape of this run (or of this shard) */
            tune_point p = row->values;
            point_set_str(&p, "method", row->method);
            if (search_observe_prior(ss->s, shape, &p, cost) != 0)
                st = tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
            ss->prior_rows++;
        }
        results_rows_free(&rows);
        if (st != TUNE_OK)
            return st;
    }
    if (ss->set.n_warm_start && !rc->opt->quiet)
        fprintf(stderr, "tune: warm start: %zu rows of %zu folders observed\n", ss->prior_rows,
                ss->set.n_warm_start);
    return TUNE_OK;
}

/* ---- rounds ---- */

/* Marks the round's configurations (ids, and the baselines in the first round) in
 * rc->search->todo; returns how many have no row yet. */
static size_t round_mark(run_ctx *rc, const size_t *ids, size_t n, int first)
{
    size_t k = 0;
    memset(rc->search->todo, 0, space_n_configs(rc->sp));
    for (size_t i = 0; i < n; i++)
        rc->search->todo[ids[i]] = 1;
    for (size_t ci = 0; first && ci < space_n_configs(rc->sp); ci++)
        if (space_config_at(rc->sp, ci)->param == SPACE_NO_PARAM &&
            !(rc->plan && shard_plan_owner(rc->plan, ci) != rc->opt->shard_index))
            rc->search->todo[ci] = 1;
    for (size_t ci = 0; ci < space_n_configs(rc->sp); ci++)
        k += rc->search->todo[ci] && !(rc->done && rc->done[ci]); /* no done yet: compile-only */
    return k;
}

/* The kernels that the configurations of mask need (planned: run_plan_configs) and that are not
 * compiled yet, and the read probe's (every worker measures with it), into idx (rc->n_kernels
 * entries); their number. */
static size_t kernels_wanted(run_ctx *rc, const unsigned char *mask, size_t *idx)
{
    unsigned char *want = rc->search->compiled; /* 2: wanted now, reset below */
    size_t n = 0;
    family_kernel_ref probe = {.source = "common.cu", .name = "tune_read_probe"};
    size_t k = run_kernel_index(rc, &probe); /* listed by run_search_prepare: found, not added */
    if (k < rc->n_kernels && !want[k])
        want[k] = 2;
    for (size_t ci = 0; ci < space_n_configs(rc->sp); ci++) {
        const run_plan *pl = mask[ci] ? run_plan_find(rc, ci) : NULL;
        for (int r = 0; pl && r < pl->n_refs; r++)
            if (!want[pl->refs[r]])
                want[pl->refs[r]] = 2;
    }
    for (k = 0; k < rc->n_kernels; k++)
        if (want[k] == 2) {
            want[k] = 0;
            idx[n++] = k;
        }
    return n;
}

/* Compiles (in the compile child) what kernels_wanted lists for mask, and waits for it. */
static tune_status compile_for(run_ctx *rc, run_summary *sum, const unsigned char *mask)
{
    size_t *idx = malloc((rc->n_kernels ? rc->n_kernels : 1) * sizeof *idx);
    if (!idx)
        return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    size_t n = kernels_wanted(rc, mask, idx);
    tune_status st = run_compile_subset(rc, idx, n, rc->search->cache_dir, sum);
    rc->search->state->kernels_compiled += n;
    free(idx);
    return st;
}

/* The rows of a resumed folder observed by their cost under the run's objective, as the run's
 * own rows are (run/session.c read them into resumed_cost; medians keeps their times for the
 * re-timing). */
static void observe_resumed(run_ctx *rc)
{
    const run_search_ctx *sx = rc->search;
    for (size_t ci = 0; ci < space_n_configs(rc->sp); ci++)
        if (sx->resumed[ci])
            search_observe(sx->state->s, ci, sx->resumed_cost[ci] > 0 ? sx->resumed_cost[ci] : NAN);
}

/* Marks in rc->search->retime_todo the shapes not re-timed yet with at least two ok candidates and
 * compiles their candidates' kernels (a resumed run may not have compiled them); *want: how many.
 */
static tune_status retime_prepare(run_ctx *rc, run_summary *sum, size_t *want)
{
    run_search_ctx *sx = rc->search;
    size_t ns = space_n_shapes(rc->sp);
    size_t *ok = calloc(ns ? ns : 1, sizeof *ok);
    *want = 0;
    if (!ok)
        return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    for (size_t ci = 0; ci < space_n_configs(rc->sp); ci++)
        if (sx->medians[ci] > 0)
            ok[space_config_at(rc->sp, ci)->shape]++;
    for (size_t s = 0; s < ns; s++)
        *want += sx->retime_todo[s] = !sx->retimed[s] && ok[s] >= 2;
    free(ok);
    if (!*want)
        return TUNE_OK;
    for (size_t ci = 0; ci < space_n_configs(rc->sp); ci++)
        sx->todo[ci] = sx->medians[ci] > 0 && sx->retime_todo[space_config_at(rc->sp, ci)->shape];
    tune_status st = run_plan_configs(rc, sx->todo); /* a resumed row's may not be yet */
    if (st == TUNE_OK)
        st = compile_for(rc, sum, sx->todo);
    memset(sx->todo, 0, space_n_configs(rc->sp));
    return st;
}

/* The re-timing pass: the shapes not re-timed yet with at least two ok candidates, re-timed by
 * the session's worker. */
static tune_status retime_session(run_ctx *rc, run_summary *sum, run_session *session)
{
    size_t ns = space_n_shapes(rc->sp), want;
    tune_status st = retime_prepare(rc, sum, &want);
    if (st == TUNE_OK && want)
        st = run_session_retime(rc, sum, session, rc->search->retime_todo);
    memset(rc->search->retime_todo, 0, ns);
    return st;
}

tune_status run_search_compile_first(run_ctx *rc, int arch, run_summary *sum)
{
    run_search_state *ss = rc->search->state;
    size_t nc = space_n_configs(rc->sp), *ids = malloc((nc ? nc : 1) * sizeof *ids), *idx = NULL;
    tune_status st =
        ids ? warm_start(rc) : tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    size_t n = 0, todo = 0;
    if (st == TUNE_OK) {
        n = search_next(ss->s, ids, nc);
        todo = round_mark(rc, ids, n, 1);
        st = run_plan_configs(rc, rc->search->todo);
    }
    if (st == TUNE_OK && !(idx = malloc((rc->n_kernels ? rc->n_kernels : 1) * sizeof *idx)))
        st = tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    if (st == TUNE_OK) {
        int all = search_round_is_last(ss->s);
        size_t nk = kernels_wanted(rc, rc->search->todo, idx);
        ss->rounds = n > 0;
        if (!rc->opt->quiet)
            fprintf(stderr,
                    "tune: %s: searched (%s): %zu configurations (baselines included) of %zu, "
                    "%zu of %zu candidates: %s; %zu kernels to compile\n",
                    rc->sw->name, search_strategy_name(ss->set.opt.strategy), todo, nc, n,
                    search_n_candidates_total(ss->s),
                    all ? "the whole budget"
                        : "the first round (the next rounds choose from its measurements)",
                    nk);
        st = run_compile_some(rc, arch, idx, nk, sum);
        ss->kernels_compiled = nk;
    }
    free(ids), free(idx);
    return st;
}

tune_status run_search(run_ctx *rc, run_summary *sum)
{
    run_search_state *ss = rc->search->state;
    const run_options *opt = rc->opt;
    run_session *session = NULL;
    size_t cap = space_n_configs(rc->sp);
    size_t *ids = malloc((cap ? cap : 1) * sizeof *ids);
    rc->search->cache_dir = opt->cache_dir;
    if (!opt->cache_dir) { /* the compile child hands its cubins over through a cache */
        snprintf(ss->tmp_cache, sizeof ss->tmp_cache, "/tmp/tune-kcache-XXXXXX");
        if (!mkdtemp(ss->tmp_cache))
            ss->tmp_cache[0] = '\0';
        else /* removed at a stop (SIGTERM) too */
            interrupt_cleanup_push(run_remove_cache_dir, ss->tmp_cache);
        rc->search->cache_dir = ss->tmp_cache[0] ? ss->tmp_cache : NULL;
    }
    if (!ids || !rc->search->cache_dir) {
        free(ids);
        return tune_error_set(rc->err, ids ? TUNE_ERR_IO : TUNE_ERR_NOMEM, "run",
                              ids ? "cannot create a kernel cache folder" : "out of memory");
    }
    observe_resumed(rc);
    tune_status st = warm_start(rc);
    if (st == TUNE_OK && !(session = run_session_new(rc)))
        st = tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    if (ss->set.time_limit_s > 0)
        rc->search->deadline = rc->t0 + ss->set.time_limit_s;
    for (int first = 1; st == TUNE_OK; first = 0) {
        if (run_search_past_deadline(rc)) {
            ss->time_limit_hit = 1;
            break;
        }
        double t0 = clock_now();
        size_t n = search_next(ss->s, ids, cap);
        ss->search_s += clock_now() - t0;
        size_t todo = round_mark(rc, ids, n, first);
        if (n == 0 && todo == 0) {
            ss->finished = 1;
            break;
        }
        if ((st = run_plan_configs(rc, rc->search->todo)) != TUNE_OK) /* its kernels listed */
            break;
        ss->rounds++;
        int last = search_round_is_last(ss->s);
        run_session_stats rs = {0};
        st = run_session_round(rc, sum, session, last, &rs);
        ss->kernels_compiled += rs.kernels;
        if (ss->rounds <= RUN_SEARCH_MAX_ROUNDS)
            ss->round_stats[ss->rounds - 1] = rs;
        if (!opt->quiet)
            fprintf(stderr,
                    "tune: search round %zu: %zu configurations%s, %zu kernels compiled (%.1f s "
                    "of compile), %.1f s\n",
                    ss->rounds, todo, first ? " (baselines included)" : "", rs.kernels,
                    rs.compile_s, clock_now() - t0);
        if (run_search_past_deadline(rc) && st == TUNE_OK)
            ss->time_limit_hit = 1; /* a worker may have stopped between configurations */
    }
    memset(rc->search->todo, 0, space_n_configs(rc->sp));
    double t_retime = clock_now();
    if (st == TUNE_OK)
        st = retime_session(rc, sum, session);
    ss->retime_s = clock_now() - t_retime;
    run_session_free(rc, sum, session);
    sum->n_kernels = ss->kernels_compiled;
    free(ids);
    return st;
}

/* ---- meta.json ---- */

json_t *run_search_meta(const run_ctx *rc)
{
    if (!rc->search)
        return NULL;
    const run_search_state *ss = rc->search->state;
    size_t ns = space_n_shapes(rc->sp), k = 0, baselines = 0, space = 0;
    const tune_point **shapes = calloc(ns ? ns : 1, sizeof *shapes);
    tune_point *axes = calloc(ns ? ns : 1, sizeof *axes); /* the sweep's problem axes only */
    size_t *counts = calloc(3 * (ns ? ns : 1), sizeof *counts);
    meta_search ms = {0};
    char budget[64];
    for (size_t ci = 0; ci < space_n_configs(rc->sp); ci++) {
        if (rc->plan && shard_plan_owner(rc->plan, ci) != rc->opt->shard_index)
            continue;
        space++;
        baselines += space_config_at(rc->sp, ci)->param == SPACE_NO_PARAM;
    }
    for (size_t s = 0; shapes && counts && axes && s < ns; s++) {
        if (!search_n_candidates(ss->s, s))
            continue;
        for (size_t a = 0; a < rc->sw->n_problem; a++) {
            expr_value v;
            if (point_get(space_shape(rc->sp, s), rc->sw->problem[a].name, &v) == 0)
                point_set(&axes[k], rc->sw->problem[a].name, v);
        }
        shapes[k] = &axes[k];
        counts[k] = search_n_candidates(ss->s, s);
        counts[ns + k] = search_budget(ss->s, s);
        counts[2 * ns + k] = search_n_evaluated(ss->s, s);
        ms.candidates += counts[k];
        ms.evaluated += counts[2 * ns + k];
        k++;
    }
    ms.strategy = search_strategy_name(ss->set.opt.strategy);
    ms.budget = search_budget_format(&ss->set.opt, budget, sizeof budget);
    ms.scope = ss->set.opt.scope == SEARCH_SCOPE_RUN ? "run" : "shape";
    ms.budget_evaluations = search_budget_total(ss->s);
    ms.seed = ss->set.opt.seed;
    ms.batch = ss->set.opt.batch;
    ms.time_limit_s = ss->set.time_limit_s;
    ms.time_limit_hit = ss->time_limit_hit;
    ms.finished = ss->finished || ss->time_limit_hit;
    ms.rounds = ss->rounds;
    ms.warm_start = (const char *const *)ss->set.warm_start;
    ms.n_warm_start = ss->set.n_warm_start;
    ms.prior_rows = ss->prior_rows;
    ms.space = space;
    ms.baselines = baselines;
    ms.kernels = run_key_kernels(rc);
    ms.kernels_compiled = ss->kernels_compiled;
    ms.n_shapes = shapes && counts && axes ? k : 0;
    ms.shapes = shapes;
    ms.shape_candidates = counts;
    ms.shape_budget = counts ? counts + ns : NULL;
    ms.shape_evaluated = counts ? counts + 2 * ns : NULL;
    json_t *j = meta_search_json(&ms);
    /* the derived features the model searched with ({name: canonical expression}, in order),
     * which tune replay reads back */
    json_t *feats = j ? json_object() : NULL;
    for (size_t i = 0; feats && i < ss->set.n_features; i++) {
        char *e = expr_to_string(ss->set.features[i]);
        json_object_set_new(feats, ss->set.feature_names[i], e ? json_string(e) : json_null());
        free(e);
    }
    if (feats)
        json_object_set_new(j, "features", feats);
    /* where the time went: per round its configurations, the kernels it compiled, the compile
     * child's seconds and the round's; the strategy's own seconds, the re-timing pass's, the
     * measuring workers started (docs/search.md, "Cost on the H200") */
    json_t *rounds = j ? json_array() : NULL;
    for (size_t r = 0; rounds && r < ss->rounds && r < RUN_SEARCH_MAX_ROUNDS; r++) {
        const run_session_stats *rs = &ss->round_stats[r];
        json_array_append_new(rounds,
                              json_pack("{s:I, s:I, s:f, s:f}", "configurations",
                                        (json_int_t)rs->configs, "kernels", (json_int_t)rs->kernels,
                                        "compile_s", rs->compile_s, "wall_s", rs->wall_s));
    }
    if (rounds)
        json_object_set_new(j, "timeline",
                            json_pack("{s:I, s:f, s:f, s:o}", "workers",
                                      (json_int_t)rc->worker_starts, "search_s", ss->search_s,
                                      "retime_s", ss->retime_s, "rounds", rounds));
    free(axes);
    free(shapes);
    free(counts);
    return j;
}
