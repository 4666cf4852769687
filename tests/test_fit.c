#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/fit.h"

/* The CLI is not part of the harness library: test it from its source. */
#include "../tools/cmd_fit.c"
#include "../tools/cli.c"

#define SPARQ_DIR "tests/data/fit/sparq"
#define OTHER_DIR "tests/data/fit/other"

/* ---- Synthetic results ---- */

static const char *const param_names[] = {"chunk", "threads"};

typedef struct {
    result_row *rows;
    size_t n, cap;
} table;

static void add_row(table *t, int64_t g, int64_t k_pre, int64_t k, int64_t chunk, int64_t threads,
                    double time, result_status status)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 256;
        t->rows = realloc(t->rows, t->cap * sizeof *t->rows);
        cr_assert_not_null(t->rows);
    }
    result_row *r = &t->rows[t->n++];
    result_row_init(r);
    r->sweep = "synthetic";
    r->method = "custom";
    point_set_int(&r->values, "g", g);
    point_set_int(&r->values, "k_pre", k_pre);
    point_set_int(&r->values, "k", k);
    r->n_axes = 3;
    point_set_int(&r->values, "chunk", chunk);
    point_set_int(&r->values, "threads", threads);
    r->param_names[0] = param_names[0];
    r->param_names[1] = param_names[1];
    r->n_params = 2;
    r->status = status;
    r->time.n = 10;
    r->time.median = time;
}

typedef int64_t (*opt_fn)(int64_t g, int64_t k_pre, int64_t k);

/* Every shape of gs x k_pres x ks and every chunk of 8..128; the time grows by 30 % per factor 2
 * away from opt(shape); threads=128 is 5 % slower than 256. */
static table synth(opt_fn opt, const int64_t *gs, size_t n_g, const int64_t *kps, size_t n_kp,
                   const int64_t *ks, size_t n_k)
{
    table t = {0};
    for (size_t a = 0; a < n_g; a++)
        for (size_t b = 0; b < n_kp; b++)
            for (size_t c = 0; c < n_k; c++) {
                int64_t o = opt(gs[a], kps[b], ks[c]);
                double base = 1e-6 * (double)(gs[a] * ks[c]) / 1024.0;
                for (int64_t chunk = 8; chunk <= 128; chunk *= 2) {
                    double off = fabs(log2((double)chunk / (double)o));
                    double time = base * (1.0 + 0.3 * off);
                    add_row(&t, gs[a], kps[b], ks[c], chunk, 256, time, RESULT_OK);
                    add_row(&t, gs[a], kps[b], ks[c], chunk, 128, time * 1.05, RESULT_OK);
                }
            }
    return t;
}

static const int64_t G[] = {256, 1024};
static const int64_t KP[] = {1024, 4096};
static const int64_t K[] = {64, 128, 256, 512};

static int64_t sparq_rule(int64_t g, int64_t k_pre, int64_t k)
{
    (void)g, (void)k_pre;
    return 8192 / k < 64 ? 8192 / k : 64;
}

static int64_t threshold_rule(int64_t g, int64_t k_pre, int64_t k)
{
    (void)g, (void)k_pre;
    return k >= 256 ? 32 : 64;
}

static int64_t constant_rule(int64_t g, int64_t k_pre, int64_t k)
{
    (void)g, (void)k_pre, (void)k;
    return 32;
}

/* Alternating over k: only a depth-2 tree fits it, by memorising the four shapes. */
static int64_t alternating_rule(int64_t g, int64_t k_pre, int64_t k)
{
    (void)g, (void)k_pre;
    return k == 64 || k == 256 ? 16 : 128;
}

static fit_data *build(const table *t, tune_error *err)
{
    fit_data *d = fit_data_build(t->rows, t->n, "chunk", "custom", OBJECTIVE_TIME, err);
    cr_assert_not_null(d, "%s", err->message);
    return d;
}

static void fit_or_fail(const fit_data *d, fit_result *r)
{
    tune_error err = {0};
    cr_assert_eq(fit_run(d, NULL, r, &err), TUNE_OK, "%s", err.message);
    cr_assert_neq(r->chosen, FIT_NONE);
}

static const fit_candidate *chosen(const fit_result *r)
{
    return &r->candidates[r->chosen];
}

Test(fit, recovers_sparq_rule_exactly)
{
    table t = synth(sparq_rule, G, 2, KP, 2, K, 4);
    tune_error err = {0};
    fit_data *d = build(&t, &err);
    cr_assert_eq(fit_data_n_shapes(d), 16);
    fit_result r;
    fit_or_fail(d, &r);
    cr_expect_str_eq(chosen(&r)->eval.rule, "min(64, 8192 / k)");
    cr_expect_eq(chosen(&r)->family, FIT_FAMILY_INVERSE);
    cr_expect_float_eq(chosen(&r)->eval.efficiency, 1.0, 1e-12);
    cr_expect_float_eq(chosen(&r)->loo, 1.0, 1e-12);
    cr_expect_eq(chosen(&r)->eval.n_infeasible, 0);
    /* the constant cannot: 64 loses 1/1.3 at k=256 and 1/1.6 at k=512 */
    const fit_candidate *c = &r.candidates[FIT_FAMILY_CONSTANT];
    cr_expect_str_eq(c->eval.rule, "64");
    cr_expect_float_eq(c->eval.efficiency, pow(1.0 / (1.3 * 1.6), 0.25), 1e-9);
    cr_expect_not(c->meets_target);
    fit_result_release(&r);
    fit_data_free(d);
    free(t.rows);
}

Test(fit, recovers_threshold_rule)
{
    table t = synth(threshold_rule, G, 2, KP, 2, K, 4);
    tune_error err = {0};
    fit_data *d = build(&t, &err);
    fit_result r;
    fit_or_fail(d, &r);
    cr_expect_str_eq(chosen(&r)->eval.rule, "(k >= 256) * 32 + (k < 256) * 64");
    cr_expect_eq(chosen(&r)->family, FIT_FAMILY_THRESHOLD);
    cr_expect_float_eq(chosen(&r)->eval.efficiency, 1.0, 1e-12);
    for (size_t f = 0; f < FIT_FAMILY_THRESHOLD; f++)
        cr_expect_not(r.candidates[f].meets_target, "%s", r.candidates[f].eval.rule);
    /* the tree needs no second split: printed in its simplest form */
    cr_expect_str_eq(r.candidates[FIT_FAMILY_TREE].eval.rule, "(k >= 256) * 32 + (k < 256) * 64");
    fit_result_release(&r);
    fit_data_free(d);
    free(t.rows);
}

Test(fit, constant_when_one_value_wins_everywhere)
{
    table t = synth(constant_rule, G, 2, KP, 2, K, 4);
    tune_error err = {0};
    fit_data *d = build(&t, &err);
    fit_result r;
    fit_or_fail(d, &r);
    cr_expect_str_eq(chosen(&r)->eval.rule, "32");
    cr_expect_eq(r.chosen, FIT_FAMILY_CONSTANT);
    cr_expect_float_eq(chosen(&r)->loo, 1.0, 1e-12);
    cr_expect_str_eq(r.candidates[FIT_FAMILY_THRESHOLD].eval.rule, "32");
    cr_expect_str_eq(r.candidates[FIT_FAMILY_TREE].eval.rule, "32");
    fit_result_release(&r);
    fit_data_free(d);
    free(t.rows);
}

Test(fit, target_picks_a_simpler_rule)
{
    /* With a 75 % target the constant 64 (0.7752) is enough. */
    table t = synth(sparq_rule, G, 2, KP, 2, K, 4);
    tune_error err = {0};
    fit_data *d = build(&t, &err);
    fit_options opt = {0.75, 1};
    fit_result r;
    cr_assert_eq(fit_run(d, &opt, &r, &err), TUNE_OK);
    cr_expect_eq(r.chosen, FIT_FAMILY_CONSTANT);
    cr_expect(isnan(chosen(&r)->loo)); /* no_loo */
    fit_result_release(&r);
    fit_data_free(d);
    free(t.rows);
}

Test(fit, loo_exposes_overfitting)
{
    static const int64_t g1[] = {256}, kp1[] = {1024};
    table t = synth(alternating_rule, g1, 1, kp1, 1, K, 4);
    tune_error err = {0};
    fit_data *d = build(&t, &err);
    cr_assert_eq(fit_data_n_shapes(d), 4);
    fit_result r;
    fit_or_fail(d, &r);
    const fit_candidate *tree = &r.candidates[FIT_FAMILY_TREE];
    cr_expect_float_eq(tree->eval.efficiency, 1.0, 1e-12, "%s", tree->eval.rule);
    cr_expect_eq(r.chosen, FIT_FAMILY_TREE);
    /* Left out, each shape falls into its neighbour's leaf: 3 factors of 2 off, 1 / 1.9. */
    cr_expect_eq(tree->loo_n, 4);
    cr_expect_float_eq(tree->loo, 1.0 / 1.9, 1e-9, "loo %g", tree->loo);
    cr_expect_lt(tree->loo, tree->eval.efficiency - 0.4);
    cr_expect_lt(r.candidates[FIT_FAMILY_THRESHOLD].eval.efficiency, 0.9);
    fit_result_release(&r);
    fit_data_free(d);
    free(t.rows);
}

/* Two shapes, hand-computed: k=64: chunk 1 -> 1 s, chunk 2 -> 2 s; k=128: 1 -> 4 s, 2 -> 1 s. */
static table hand_table(void)
{
    table t = {0};
    add_row(&t, 1, 1, 64, 1, 256, 1.0, RESULT_OK);
    add_row(&t, 1, 1, 64, 1, 128, 3.0, RESULT_OK);
    add_row(&t, 1, 1, 64, 2, 256, 2.5, RESULT_OK);
    add_row(&t, 1, 1, 64, 2, 128, 2.0, RESULT_OK);     /* best of chunk 2: threads 128 */
    add_row(&t, 1, 1, 64, 4, 256, 0.1, RESULT_INVALID); /* faster but wrong: never counts */
    add_row(&t, 1, 1, 128, 1, 256, 4.0, RESULT_OK);
    add_row(&t, 1, 1, 128, 2, 256, 1.0, RESULT_OK);
    add_row(&t, 1, 1, 128, 4, 256, 9.0, RESULT_TIMEOUT);
    add_row(&t, 1, 1, 256, 2, 256, 9.0, RESULT_CRASHED); /* no ok row: left out */
    return t;
}

Test(fit, efficiency_arithmetic)
{
    table t = hand_table();
    tune_error err = {0};
    fit_data *d = build(&t, &err);
    cr_assert_eq(fit_data_n_shapes(d), 2);
    cr_expect_eq(fit_data_n_unmeasured(d), 1);
    cr_expect_float_eq(fit_data_cost(d, 0, 2), 2.0, 0);
    cr_expect(isinf(fit_data_cost(d, 0, 4)));
    cr_expect_eq(fit_data_best_value(d, 1), 2);

    fit_eval ev;
    cr_assert_eq(fit_evaluate(d, "1", &ev, &err), TUNE_OK, "%s", err.message);
    cr_expect_float_eq(ev.efficiency, sqrt(1.0 * 0.25), 1e-12); /* 0.5 */
    cr_expect_eq(ev.worst, 1);
    cr_expect_float_eq(ev.worst_efficiency, 0.25, 1e-12);
    cr_expect_eq(ev.n_feasible, 2);
    fit_eval_release(&ev);

    cr_assert_eq(fit_evaluate(d, "2", &ev, &err), TUNE_OK);
    cr_expect_float_eq(ev.efficiency, sqrt(0.5), 1e-12);
    cr_expect_eq(ev.worst, 0);
    cr_expect_float_eq(ev.shapes[0].rule_cost, 2.0, 0);
    fit_eval_release(&ev);

    cr_assert_eq(fit_evaluate(d, "max(1, k / 64)", &ev, &err), TUNE_OK);
    cr_expect_float_eq(ev.efficiency, 1.0, 1e-12);
    cr_expect_str_eq(ev.rule, "max(1, k / 64)");
    fit_eval_release(&ev);
    fit_data_free(d);
    free(t.rows);
}

Test(fit, infeasible_shapes_are_counted_and_listed)
{
    table t = hand_table();
    tune_error err = {0};
    fit_data *d = build(&t, &err);
    fit_eval ev;
    /* k=64 -> 4: only an invalid row had chunk 4; k=128 -> 2 */
    cr_assert_eq(fit_evaluate(d, "(k >= 128) * 2 + (k < 128) * 4", &ev, &err), TUNE_OK);
    cr_expect_eq(ev.n_infeasible, 1);
    cr_expect_eq(ev.n_feasible, 1);
    cr_expect_not(ev.shapes[0].feasible);
    cr_expect(ev.shapes[0].evaluated);
    cr_expect_eq(ev.shapes[0].rule_value, 4);
    cr_expect_float_eq(ev.efficiency, 1.0, 1e-12); /* over the feasible shape */
    char *md = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&md, &len);
    fit_eval_write_markdown(d, &ev, f);
    fclose(f);
    cr_expect_not_null(strstr(md, "1 infeasible shape (the rule's chunk was not measured there): "
                                  "k=64 (4)"),
                       "%s", md);
    cr_expect_not_null(strstr(md, "| k=64 | 1 | 4 | 1000000.00 | not measured | - |"), "%s", md);
    free(md);
    fit_eval_release(&ev);

    /* an expression error on a shape (floor_pow2(0) at k=128) makes it infeasible too */
    cr_assert_eq(fit_evaluate(d, "floor_pow2(64 / k)", &ev, &err), TUNE_OK);
    cr_expect_eq(ev.n_infeasible, 1);
    cr_expect_not(ev.shapes[1].evaluated);
    fit_eval_release(&ev);

    /* nothing feasible */
    cr_assert_eq(fit_evaluate(d, "3", &ev, &err), TUNE_OK);
    cr_expect_eq(ev.n_infeasible, 2);
    cr_expect(isnan(ev.efficiency));
    cr_expect_eq(ev.worst, FIT_NONE);
    fit_eval_release(&ev);
    fit_data_free(d);
    free(t.rows);
}

Test(fit, rule_errors)
{
    table t = hand_table();
    tune_error err = {0};
    fit_data *d = build(&t, &err);
    fit_eval ev;
    cr_expect_eq(fit_evaluate(d, "min(64, 8192 / kk)", &ev, &err), TUNE_ERR_INVALID);
    cr_expect_not_null(strstr(err.message, "'kk', which is not a problem axis (g, k_pre, k)"),
                       "%s", err.message);
    tune_error_clear(&err);
    cr_expect_eq(fit_evaluate(d, "min(64, ", &ev, &err), TUNE_ERR_PARSE);
    tune_error_clear(&err);
    cr_expect_eq(fit_evaluate(d, "\"64\"", &ev, &err), TUNE_ERR_INVALID);
    fit_data_free(d);

    tune_error_clear(&err);
    cr_expect_null(fit_data_build(t.rows, t.n, "nope", NULL, OBJECTIVE_TIME, &err));
    cr_expect_eq(err.code, TUNE_ERR_INVALID);
    cr_expect_str_eq(err.message, "no ok row has the parameter 'nope'");
    tune_error_clear(&err);
    cr_expect_null(fit_data_build(t.rows, t.n, "chunk", "gather", OBJECTIVE_TIME, &err));
    cr_expect_str_eq(err.message, "no ok row has the parameter 'chunk' (method gather)");
    point_set_str(&t.rows[0].values, "chunk", "big");
    tune_error_clear(&err);
    cr_expect_null(fit_data_build(t.rows, t.n, "chunk", NULL, OBJECTIVE_TIME, &err));
    cr_expect_str_eq(err.message, "parameter 'chunk' has a value that is not an integer");
    free(t.rows);
}

/* ---- The C header ---- */

static char tmpdir[] = "/tmp/test_fit_XXXXXX";

static void make_tmpdir(void)
{
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_expect_eq(system(cmd), 0);
}

/* Writes the rule's header, compiles a program that prints tune_pick_chunk on every shape, and
 * compares its output with expr_eval. */
static void check_header(const fit_data *d, const char *rule, const char *tag)
{
    tune_error err = {0};
    char hpath[512], cpath[512], bin[512], out[512], cmd[4096];
    snprintf(hpath, sizeof hpath, "%s/heuristic_%s.h", tmpdir, tag);
    snprintf(cpath, sizeof cpath, "%s/main_%s.c", tmpdir, tag);
    snprintf(bin, sizeof bin, "%s/main_%s", tmpdir, tag);
    snprintf(out, sizeof out, "%s/out_%s.txt", tmpdir, tag);
    FILE *f = fopen(hpath, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fit_write_header(d, rule, "test\nprovenance", f, &err), TUNE_OK, "%s",
                 err.message);
    fclose(f);

    expr *e = expr_parse(rule, &err);
    cr_assert_not_null(e);
    const char *names[TUNE_MAX_AXES];
    size_t n_names = expr_names(e, names, TUNE_MAX_AXES);
    f = fopen(cpath, "w");
    cr_assert_not_null(f);
    fprintf(f, "#include <stdio.h>\n#include \"heuristic_%s.h\"\nint main(void)\n{\n", tag);
    for (size_t s = 0; s < fit_data_n_shapes(d); s++) {
        fprintf(f, "    printf(\"%%d\\n\", tune_pick_chunk(");
        int any = 0;
        for (size_t a = 0; a < fit_data_n_axes(d); a++) {
            const char *ax = fit_data_axis(d, a);
            int used = 0;
            for (size_t i = 0; i < n_names; i++)
                used |= strcmp(names[i], ax) == 0;
            if (used)
                fprintf(f, "%s%lld", any++ ? ", " : "",
                        (long long)point_int(fit_data_shape(d, s), ax, -1));
        }
        fprintf(f, "));\n");
    }
    fprintf(f, "    return 0;\n}\n");
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "cc -std=c17 -Wall -Wextra -Wconversion -Wpedantic -Werror -o '%s' '%s' && '%s' > '%s'",
             bin, cpath, bin, out);
    cr_assert_eq(system(cmd), 0, "%s", cmd);

    f = fopen(out, "r");
    cr_assert_not_null(f);
    for (size_t s = 0; s < fit_data_n_shapes(d); s++) {
        long long got;
        cr_assert_eq(fscanf(f, "%lld", &got), 1);
        expr_value v;
        cr_assert_eq(expr_eval(e, point_lookup, (void *)fit_data_shape(d, s), &v, &err), TUNE_OK);
        cr_expect_eq(got, v.i, "%s on shape %zu: C %lld, expr %lld", rule, s, got,
                     (long long)v.i);
    }
    fclose(f);
    expr_free(e);
}

Test(fit, threshold_leaves_out_zero_terms, .init = make_tmpdir, .fini = remove_tmpdir)
{
    table t = {0};
    for (size_t i = 0; i < 4; i++) {
        int big = K[i] >= 256;
        add_row(&t, 1, 1, K[i], 0, 256, big ? 2.0 : 1.0, RESULT_OK);
        add_row(&t, 1, 1, K[i], 4, 256, big ? 1.0 : 2.0, RESULT_OK);
    }
    tune_error err = {0};
    fit_data *d = build(&t, &err);
    fit_result r;
    fit_or_fail(d, &r);
    cr_expect_str_eq(chosen(&r)->eval.rule, "(k >= 256) * 4");
    check_header(d, chosen(&r)->eval.rule, "zero");
    fit_result_release(&r);
    fit_data_free(d);
    free(t.rows);
}

Test(fit, header_compiles_and_agrees, .init = make_tmpdir, .fini = remove_tmpdir)
{
    table t = synth(sparq_rule, G, 2, KP, 2, K, 4);
    tune_error err = {0};
    fit_data *d = build(&t, &err);
    fit_result r;
    fit_or_fail(d, &r);
    for (size_t i = 0; i < FIT_N_FAMILIES; i++) {
        char tag[16];
        snprintf(tag, sizeof tag, "fam%zu", i);
        check_header(d, r.candidates[i].eval.rule, tag);
    }
    check_header(d, "(g >= 1024) * ((k >= 256) * 128 + (k < 256) * 64) + (g < 1024) * 32", "tree");
    check_header(d, "ceil_pow2(max(3, 9000 / k - k_pre / 1024))", "pow2");
    check_header(d, "(k > 100 && g != 256) * 16 + !(k > 100 && g != 256) * 8", "logic");
    check_header(d, "abs(64 - k) % 7 + 1", "abs");

    /* The header's signature takes only the axes the rule reads, in axis order. */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(fit_write_header(d, "min(k, 8192 / g)", "from results/x", f, &err), TUNE_OK);
    fclose(f);
    cr_expect_not_null(strstr(text, "static inline int tune_pick_chunk(int64_t g, int64_t k)\n"),
                       "%s", text);
    cr_expect_not_null(strstr(text, " * Rule: min(k, 8192 / g)\n * from results/x\n"), "%s", text);
    cr_expect_not_null(strstr(text, "return (int)(tune_pick_min_(k, 8192 / g));"), "%s", text);
    free(text);

    f = open_memstream(&text, &len);
    cr_expect_eq(fit_write_header(d, "min(1, 2, k)", NULL, f, &err), TUNE_ERR_INVALID);
    tune_error_clear(&err);
    cr_expect_eq(fit_write_header(d, "k * 1.5", NULL, f, &err), TUNE_ERR_INVALID);
    tune_error_clear(&err);
    cr_expect_eq(fit_write_header(d, "log2(k)", NULL, f, &err), TUNE_ERR_INVALID);
    fclose(f);
    free(text);
    fit_result_release(&r);
    fit_data_free(d);
    free(t.rows);
}

/* ---- Fixtures on disk and the CLI ---- */

Test(fit, sparq_rule_on_fixture)
{
    const char *dirs[] = {SPARQ_DIR};
    results_rows read;
    tune_error err = {0};
    cr_assert_eq(fit_read_results(dirs, 1, &read, &err), TUNE_OK, "%s", err.message);
    const result_row *rows = read.rows;
    size_t n = read.n;
    fit_data *d = fit_data_build(rows, n, "chunk", NULL, OBJECTIVE_TIME, &err);
    cr_assert_not_null(d, "%s", err.message);
    cr_assert_eq(fit_data_n_shapes(d), 4);
    fit_eval ev;
    cr_assert_eq(fit_evaluate(d, "min(64, 8192 / k)", &ev, &err), TUNE_OK, "%s", err.message);
    cr_expect_float_eq(ev.efficiency, pow(32.0 / 40.0, 0.25), 1e-9);
    cr_expect_float_eq(ev.worst_efficiency, 0.8, 1e-9);
    char name[64];
    cr_expect_str_eq(fit_data_shape_name(d, ev.worst, name, sizeof name), "k=512");
    cr_expect_eq(ev.shapes[3].rule_value, 16);
    cr_expect_eq(ev.shapes[3].best_value, 32);
    fit_eval_release(&ev);

    fit_result r;
    cr_assert_eq(fit_run(d, NULL, &r, &err), TUNE_OK);
    /* 64, 64, 32, 32: the fitter finds a rule that loses nothing */
    cr_expect_float_eq(r.candidates[r.chosen].eval.efficiency, 1.0, 1e-12, "%s",
                       r.candidates[r.chosen].eval.rule);
    fit_result_release(&r);
    fit_data_free(d);
    results_rows_free(&read);
}

Test(fit, merged_folders_and_infeasible_fixture)
{
    const char *dirs[] = {SPARQ_DIR, OTHER_DIR};
    results_rows read;
    tune_error err = {0};
    cr_assert_eq(fit_read_results(dirs, 2, &read, &err), TUNE_OK, "%s", err.message);
    const result_row *rows = read.rows;
    size_t n = read.n;
    cr_expect_eq(n, 45);
    fit_data *d = fit_data_build(rows, n, "chunk", "custom", OBJECTIVE_TIME, &err);
    cr_assert_not_null(d, "%s", err.message);
    cr_assert_eq(fit_data_n_shapes(d), 5);
    fit_eval ev;
    cr_assert_eq(fit_evaluate(d, "min(64, 8192 / k)", &ev, &err), TUNE_OK);
    cr_expect_eq(ev.n_infeasible, 1); /* k=1024 -> 8: only an invalid row had it */
    cr_expect_eq(ev.shapes[4].rule_value, 8);
    cr_expect_not(ev.shapes[4].feasible);
    cr_expect_float_eq(ev.efficiency, pow(0.8, 0.25), 1e-9);
    json_t *j = fit_eval_to_json(d, &ev, dirs, 2);
    cr_expect_eq(json_integer_value(json_object_get(j, "n_infeasible")), 1);
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(j, "infeasible_shapes"), 0)),
                     "k=1024");
    json_decref(j);
    fit_eval_release(&ev);
    fit_data_free(d);
    results_rows_free(&read);
}

static json_t *load_json(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    cr_assert_not_null(j, "%s: %s", path, je.text);
    return j;
}

Test(fit, cli_fit_and_evaluate, .init = make_tmpdir, .fini = remove_tmpdir)
{
    char header[600];
    snprintf(header, sizeof header, "%s/pick.h", tmpdir);
    char *fit_argv[] = {"fit", SPARQ_DIR, "--param", "chunk", "--method", "custom", "--out", tmpdir,
                        "--target", "0.99", "--quiet", NULL};
    cr_assert_eq(tune_cmd_fit(11, fit_argv), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/heuristics.json", tmpdir);
    json_t *j = load_json(path);
    cr_expect_str_eq(json_string_value(json_object_get(j, "param")), "chunk");
    cr_expect_float_eq(json_real_value(json_object_get(j, "target")), 0.99, 1e-12);
    cr_expect_float_eq(json_real_value(json_object_get(j, "efficiency")), 1.0, 1e-12);
    cr_expect_not_null(json_string_value(json_object_get(j, "rule")));
    cr_expect_not_null(json_object_get(j, "loo"));
    cr_expect_eq(json_array_size(json_object_get(j, "candidates")), FIT_N_FAMILIES);
    cr_expect_eq(json_array_size(json_object_get(j, "shapes")), 4);
    json_t *s0 = json_array_get(json_object_get(j, "shapes"), 0);
    cr_expect_eq(json_integer_value(json_object_get(s0, "best_value")), 64);
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(s0, "axes"), "k")), 64);
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(j, "sources"), 0)), SPARQ_DIR);
    json_decref(j);
    snprintf(path, sizeof path, "%s/heuristic_chunk.h", tmpdir);
    cr_expect_eq(access(path, R_OK), 0);

    char *eval_argv[] = {"fit", SPARQ_DIR, "--param", "chunk", "--rule", "min(64, 8192 / k)",
                         "--out", tmpdir, "--header", header, "--quiet", NULL};
    cr_assert_eq(tune_cmd_fit(11, eval_argv), 0);
    snprintf(path, sizeof path, "%s/heuristic_eval_chunk.json", tmpdir);
    j = load_json(path);
    cr_expect_str_eq(json_string_value(json_object_get(j, "rule")), "min(64, 8192 / k)");
    cr_expect_float_eq(json_real_value(json_object_get(j, "efficiency")), pow(0.8, 0.25), 1e-9);
    cr_expect_str_eq(json_string_value(json_object_get(j, "worst_shape")), "k=512");
    json_decref(j);
    cr_expect_eq(access(header, R_OK), 0);

    char *bad_argv[] = {"fit", SPARQ_DIR, NULL};
    cr_expect_eq(tune_cmd_fit(2, bad_argv), 2);
    char *bad_rule[] = {"fit", SPARQ_DIR, "--param", "chunk", "--rule", "kk", "--quiet", NULL};
    cr_expect_eq(tune_cmd_fit(7, bad_rule), 1);
}

Test(fit, markdown_summary)
{
    table t = synth(sparq_rule, G, 1, KP, 1, K, 4);
    tune_error err = {0};
    fit_data *d = build(&t, &err);
    fit_result r;
    fit_or_fail(d, &r);
    char *md = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&md, &len);
    fit_write_markdown(d, &r, f);
    fclose(f);
    cr_expect_not_null(strstr(md, "## Heuristic for chunk (method custom, target 98.0 %)"), "%s",
                       md);
    cr_expect_not_null(strstr(md, "| min/max(c1, c2 / axis) (chosen) | `min(64, 8192 / k)` | "
                                  "100.0 % | 100.0 % | k=64 | 100.0 % | 0 |"),
                       "%s", md);
    cr_expect_not_null(strstr(md, "Chosen (min/max(c1, c2 / axis)): `min(64, 8192 / k)`"), "%s",
                       md);
    cr_expect_not_null(strstr(md, "| k=512 | 16 | 16 |"), "%s", md);
    free(md);
    fit_result_release(&r);
    fit_data_free(d);
    free(t.rows);
}

/* Energy per call of the synthetic rows: lowest at chunk=32 on every shape (while the time is
 * lowest at the sparq rule's value), 10 % more per factor 2 away from it. */
static void set_energy(table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        expr_value v;
        point_get(&t->rows[i].values, "chunk", &v);
        t->rows[i].energy_j = 1e-3 * (1.0 + 0.1 * fabs(log2((double)v.i / 32.0)));
    }
}

/* The best and the chosen rule follow the objective: time picks min(64, 8192 / k), energy the
 * constant 32; edp ranks by energy x time. */
Test(fit, objective_ranks_by_energy_and_edp)
{
    table t = synth(sparq_rule, G, 1, KP, 1, K, 4);
    set_energy(&t);
    tune_error err = {0};
    fit_data *d = fit_data_build(t.rows, t.n, "chunk", "custom", OBJECTIVE_ENERGY, &err);
    cr_assert_not_null(d, "%s", err.message);
    cr_expect_eq(fit_data_objective(d), OBJECTIVE_ENERGY);
    for (size_t s = 0; s < fit_data_n_shapes(d); s++) {
        cr_expect_eq(fit_data_best_value(d, s), 32, "shape %zu", s);
        cr_expect_float_eq(fit_data_best_cost(d, s), 1e-3, 1e-15);
    }
    fit_result r;
    fit_or_fail(d, &r);
    cr_expect_str_eq(chosen(&r)->eval.rule, "32");
    cr_expect_float_eq(chosen(&r)->eval.efficiency, 1.0, 1e-12);
    fit_eval ev; /* the time's rule loses energy: 64 costs 1.1x at k=64 and k=128 */
    cr_assert_eq(fit_evaluate(d, "min(64, 8192 / k)", &ev, &err), TUNE_OK, "%s", err.message);
    cr_expect_float_eq(ev.shapes[0].rule_cost, 1.1e-3, 1e-15);
    cr_expect_lt(ev.efficiency, 0.97);
    fit_eval_release(&ev);
    fit_result_release(&r);
    fit_data_free(d);

    d = fit_data_build(t.rows, t.n, "chunk", "custom", OBJECTIVE_EDP, &err);
    cr_assert_not_null(d, "%s", err.message);
    double want = INFINITY; /* shape 0 (k=64): the least energy x time over its rows */
    for (size_t i = 0; i < t.n; i++) {
        expr_value k;
        point_get(&t.rows[i].values, "k", &k);
        if (k.i == 64)
            want = fmin(want, t.rows[i].energy_j * t.rows[i].time.median);
    }
    cr_expect_float_eq(fit_data_best_cost(d, 0), want, want * 1e-12);
    fit_data_free(d);
    free(t.rows);
}

/* Rows without energy are left out and counted under energy, never ranked by their time; none
 * with energy: refused with a message that says so. */
Test(fit, objective_energy_needs_energy)
{
    table t = synth(sparq_rule, G, 1, KP, 1, K, 4);
    tune_error err = {0};
    cr_expect_null(fit_data_build(t.rows, t.n, "chunk", "custom", OBJECTIVE_EDP, &err));
    cr_expect_not_null(strstr(err.message, "no energy per call"), "%s", err.message);
    cr_expect_not_null(strstr(err.message, "ranked by edp"), "%s", err.message);
    set_energy(&t);
    size_t dropped = 0;
    for (size_t i = 0; i < t.n; i++) {
        expr_value v;
        point_get(&t.rows[i].values, "chunk", &v);
        if (v.i == 32) { /* energy's best, gone: 16 and 64 tie at 1.1 mJ, 16 first */
            t.rows[i].energy_j = NAN;
            dropped++;
        }
    }
    fit_data *d = fit_data_build(t.rows, t.n, "chunk", "custom", OBJECTIVE_ENERGY, &err);
    cr_assert_not_null(d, "%s", err.message);
    cr_expect_eq(fit_data_n_unranked(d), dropped);
    cr_expect_eq(fit_data_best_value(d, 0), 16);
    cr_expect(isinf(fit_data_cost(d, 0, 32)));
    char *md = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&md, &len);
    fit_result r;
    fit_or_fail(d, &r);
    fit_write_markdown(d, &r, f);
    fclose(f);
    cr_expect_not_null(strstr(md, "Ranked by energy (J per call)"), "%s", md);
    cr_expect_not_null(strstr(md, "| best (uJ) | rule (uJ) |"), "%s", md);
    cr_expect_not_null(strstr(md, "8 ok rows without energy left out"), "%s", md);
    json_t *j = fit_result_to_json(d, &r, NULL, 0);
    cr_expect_str_eq(json_string_value(json_object_get(j, "objective")), "energy");
    json_t *s0 = json_array_get(json_object_get(j, "shapes"), 0);
    cr_expect_float_eq(json_real_value(json_object_get(s0, "best_energy_uj")), 1100.0, 1e-9);
    cr_expect_null(json_object_get(s0, "best_time_us"));
    json_decref(j);
    free(md);
    fit_result_release(&r);
    fit_data_free(d);
    free(t.rows);
}

Test(fit, cli_objective, .init = make_tmpdir, .fini = remove_tmpdir)
{
    fit_cli c;
    char *argv[] = {"fit", SPARQ_DIR, "--param", "chunk", "--objective", "edp", NULL};
    cr_assert_eq(fit_parse(6, argv, &c), 0);
    cr_expect_eq(c.objective, OBJECTIVE_EDP);
    char *bad[] = {"fit", SPARQ_DIR, "--param", "chunk", "--objective", "power", NULL};
    cr_expect_eq(tune_cmd_fit(6, bad), 2);
    /* the fixture has no energy: refused rather than fitted by time */
    char *energy[] = {"fit", SPARQ_DIR, "--param", "chunk", "--objective", "energy", "--quiet",
                      NULL};
    cr_expect_eq(tune_cmd_fit(7, energy), 1);
}
