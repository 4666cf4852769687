/* search_ctx.h - what a searched run adds to the run's context (run/internal.h), and the
 * functions of the searched path: search.c (the rounds) and search_session.c (the session).
 *
 *   sweep_search set;
 *   if (run_search_settings(sw, opt, &set, err) == TUNE_OK && sweep_search_on(&set))
 *       st = run_search_prepare(rc, &set); // rc->search set up
 *   ...
 *   st = rc->search ? run_search(rc, sum) : run_coordinate(rc, sum);
 *   run_ctx_free(rc);                      // run_search_free
 */
#ifndef TUNE_RUN_SEARCH_CTX_H
#define TUNE_RUN_SEARCH_CTX_H

#include "run/internal.h"

/* A searched run's part of the context: made by run_search_prepare, freed by run_search_free, and
 * reached through rc->search, which is NULL in an exhaustive run.
 *
 * A pointer in run_ctx rather than an argument of the search functions: the code both kinds of
 * run share reads these fields in a searched run (run_coordinate, the workers, which are forked
 * with the run_ctx as their only context, the kernel table's growth in plan.c, the resume in
 * session.c). One pointer tested there says "a searched run" once, and the functions of an
 * exhaustive run keep their signatures. */
struct run_search_ctx {
    /* per configuration */
    unsigned char *todo;    /* measure it in this round */
    double *medians;        /* its ok row's median (s), NAN otherwise */
    unsigned char *resumed; /* its row came from the resumed folder */
    double *resumed_cost;   /* a resumed row's cost under the run's objective (results_row_cost),
                               what the search observes */
    /* per kernel (cap_kernels: grown with the table, plan.c) */
    unsigned char *compiled; /* compiled (or read from the cache) */
    /* per shape: the re-timing of its fastest candidates */
    unsigned char *retime_todo; /* re-time it after the rows (the last pass) */
    unsigned char *retimed;     /* re-timed (coordinator side, from "T s") */
    /* how the rounds are compiled and measured */
    double deadline;       /* > 0: workers stop between configurations once past it */
    const char *cache_dir; /* the run's kernel cache (private under --no-cache) */
    /* the session's worker (search_session.c); NULL: run_session_body. A test's stand-in that
     * speaks its protocol without a GPU */
    worker_duplex_fn session_body;
    /* the run's key, hashed by run_search_prepare (plan.c) */
    struct run_key_scan *key_scan;
    /* search.c's own: the settings, the strategy, the rounds, the timeline */
    struct run_search_state *state;
};

/* search_session.c: a searched run's measuring session (one worker for every round) */
typedef struct run_session run_session;
typedef struct {
    size_t configs, kernels;  /* the round's configurations, the kernels it compiled */
    double compile_s, wall_s; /* the compile child's seconds, the round's */
} run_session_stats;
run_session *run_session_new(run_ctx *rc); /* NULL: out of memory */
/* Measures the configurations of rc->search->todo (those without a row), compiling the kernels
 * they need meanwhile; last: each shape re-timed after its rows. stats (optional) filled. */
tune_status run_session_round(run_ctx *rc, run_summary *sum, run_session *s, int last,
                              run_session_stats *stats);
/* Re-times the shapes marked in shapes[] (their kernels compiled), one at a time. A worker that
 * the re-timing ends ends the pass: the winners stand on their first measurement. */
tune_status run_session_retime(run_ctx *rc, run_summary *sum, run_session *s,
                               const unsigned char *shapes);
/* Ends the worker (what it still says is read) and frees s. */
void run_session_free(run_ctx *rc, run_summary *sum, run_session *s);

/* search.c */
/* Whether the run is searched, and its search state set up (the settings merged, arrays). */
tune_status run_search_prepare(run_ctx *rc, sweep_search *settings);
/* A compile-only run of a searched sweep: what the search proposes before any measurement (the
 * whole budget for random and exhaustive, the first round for the model, whose later rounds
 * follow the measurements) marked in rc->search->todo with the baselines, and only their kernels
 * compiled. */
tune_status run_search_compile_first(run_ctx *rc, int arch, run_summary *sum);
/* The rounds of a searched run, then the re-timing of each shape's fastest candidates. */
tune_status run_search(run_ctx *rc, run_summary *sum);
/* The row of configuration ci observed by the search (its median in seconds and its cost under
 * the run's objective, NAN unless ok): each E line, each lost row. */
void run_search_observe(run_ctx *rc, size_t ci, result_status st, double median, double cost);
/* 1 when a searched run's time limit has passed (workers stop between configurations), else 0;
 * 0 in an exhaustive run. */
int run_search_past_deadline(const run_ctx *rc);
/* The key's text of the search settings ("random budget=10% seed=7 batch=4", then
 * " objective=energy" when the objective is not time), into buf. */
const char *run_search_key(const run_ctx *rc, char *buf, size_t size);
/* meta.json's "search" block of this run (new), NULL for an exhaustive run. */
json_t *run_search_meta(const run_ctx *rc);
void run_search_free(run_ctx *rc);

#endif
