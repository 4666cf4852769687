/* test_declared.c - kernels declared in sweep files (model/kernel_decl.h, families/declared.c):
 * the instantiations a configuration needs, every example compiled by NVRTC without a GPU, and
 * on a GPU the examples run, a wrong kernel an invalid row, an out-of-bounds one a crashed row,
 * a block beyond the device's limit a skipped row, an in-place kernel restored per rep, buffers
 * with "redraw" drawn again before every timed rep (the check sees the first draw), inputs and
 * a reference from .npy files, --resume of a run cut short, __constant__ symbols filled from the
 * host, methods of several launches (timed as one call, in graph mode too) and a reference that
 * reads parameters; the family a declaration builds, field by field. */
#include <criterion/criterion.h>
#include <glob.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "families/declared_impl.h"
#include "model/kernel_decl.h"
#include "model/space.h"
#include "model/sweep.h"
#include "run/run.h"
#include "store/results.h"
#include "util.h"

/* The kernels sw's family lists for p, into refs[FAMILY_MAX_KERNELS] (cleared first): their
 * number, or -1 with the reason in why[512]. */
static int kernels_at(const sweep *sw, const tune_point *p, family_kernel_ref *refs, char *why)
{
    memset(refs, 0, FAMILY_MAX_KERNELS * sizeof *refs);
    why[0] = '\0';
    return sw->family->kernels(sw->family, p, refs, FAMILY_MAX_KERNELS, why, 512);
}

Test(declared, kernels_render_entry_and_macros)
{
    sweep *sw = test_load_sweep("sweeps/examples/matmul/matmul.json");
    tune_point p = {0};
    point_set_str(&p, "method", "kernel");
    point_set_int(&p, "m", 512);
    point_set_int(&p, "n", 512);
    point_set_int(&p, "k", 1024);
    point_set_int(&p, "tile", 16);
    point_set_int(&p, "work", 4);
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[512];
    int n = kernels_at(sw, &p, refs, why);
    cr_assert_eq(n, 3, "%s", why);
    cr_expect_str_eq(refs[0].name, "matmul_tiled");
    cr_expect_str_eq(refs[0].options, "-DTILE=16\n-DWORK=4");
    cr_expect_eq(refs[0].row, 1);
    cr_expect(strstr(refs[0].source, "/sweeps/examples/matmul/matmul.cu") != NULL, "%s",
              refs[0].source);
    cr_expect_str_eq(refs[1].name, "matmul_naive"); /* the reference, for the check */
    cr_expect_str_eq(refs[1].options, "");
    cr_expect_str_eq(refs[2].name, "tune_fill_random<float>"); /* A and B, uniform */
    cr_expect_str_eq(refs[2].source, "common.cu");
    point_set_str(&p, "method", "naive");
    n = kernels_at(sw, &p, refs, why);
    cr_expect_eq(n, 3);
    cr_expect_str_eq(refs[0].name, "matmul_naive");
    /* the byte model is derived from the buffers when the sweep gives none */
    cr_expect_str_eq(sw->bytes_src, "4 * (m * k) + 4 * (k * n) + 4 * (m * n)");
    sweep_free(sw);
}

/* A declared kernel parsed from text (the source file is not read). */
static sweep *parse_declared(const char *text)
{
    tune_error err = {0};
    sweep *sw = sweep_parse(text, "tests/data/declared/inline.json", &err);
    cr_assert_not_null(sw, "%s: %s", err.where, err.message);
    return sw;
}

#define LIMITS_SWEEP                                                                              \
    "{\"name\": \"limits\", \"family\": \"kernel\", \"op\": \"fill\",\n"                             \
    " \"kernel\": {\"source\": \"faults.cu\", \"entry\": \"twice\",\n"                               \
    "  \"defines\": {\"BX\": \"{bx}\", \"BY\": \"{by}\", \"GY\": \"{gy}\"},\n"                       \
    "  \"args\": [{\"name\": \"y\", \"type\": \"float32\", \"count\": \"n\", \"role\": \"out\"}],\n"  \
    "  \"grid\": [\"n / bx\", \"gy\"], \"block\": [\"bx\", \"by\"],\n"                               \
    "  \"reference\": {\"entry\": \"twice_ref\", \"grid\": \"n / 256\", \"block\": 256}},\n"         \
    " \"problem\": {\"n\": [4096]},\n"                                                             \
    " \"params\": {\"bx\": [32, 64, 2048], \"by\": [16, 32], \"gy\": [1, 70000]},\n"               \
    " \"methods\": [\"kernel\", \"reference\"]}"

/* The count of configurations the launch limits left out for the reason that contains word. */
static size_t pruned_for(const space *sp, const char *word)
{
    for (size_t i = 0; i < space_n_family_rules(sp); i++) {
        size_t count = 0;
        const char *rule = space_family_rule(sp, i, &count);
        if (strstr(rule, word))
            return count;
    }
    return 0;
}

/* Launches no CUDA device can make are left out before compiling, each with its limit: a block
 * dimension (bx = 2048: 4), threads per block (64 x 32: 2), grid y (70000: the other 3); the
 * reference is not a tuned method. "family_rules": false leaves them to the run's check. */
Test(declared, launch_limits_are_pruned_before_compiling)
{
    sweep *sw = parse_declared(LIMITS_SWEEP);
    tune_error err = {0};
    space *sp = space_build(sw, &err);
    cr_assert_not_null(sp, "%s", err.message);
    cr_expect_eq(space_n_configs(sp), 3 + 1);
    cr_expect_eq(space_n_pruned_family(sp), 9);
    cr_expect_eq(pruned_for(sp, "a block dimension over its limit"), 4);
    cr_expect_eq(pruned_for(sp, "more than 1024 threads per block"), 2);
    cr_expect_eq(pruned_for(sp, "grid dimension y or z over its limit (65535)"), 3);
    space_free(sp);
    sw->family_rules = 0;
    cr_assert_not_null(sp = space_build(sw, &err), "%s", err.message);
    cr_expect_eq(space_n_configs(sp), 12 + 1);
    space_free(sp);
    sweep_free(sw);
}

/* A buffer of a CUDA vector type is count * lanes elements of its lane type: the fills, the check
 * and the byte model count lanes; a scalar argument cannot have one. */
Test(declared, vector_buffers_count_their_lanes)
{
    sweep *sw = parse_declared(
        "{\"name\": \"vec\", \"family\": \"kernel\", \"op\": \"v\",\n"
        " \"kernel\": {\"source\": \"faults.cu\", \"entry\": \"twice\",\n"
        "  \"args\": [{\"name\": \"x\", \"type\": \"float4\", \"count\": \"n + 1\",\n"
        "            \"init\": {\"normal\": [0, 1]}},\n"
        "           {\"name\": \"y\", \"type\": \"half2\", \"count\": \"n\", \"role\": \"out\"},\n"
        "           {\"name\": \"k\", \"type\": \"uint4\", \"count\": 3, \"role\": \"inout\",\n"
        "            \"init\": {\"integers\": [0, 9]}}],\n"
        "  \"grid\": 1, \"block\": 32,\n"
        "  \"reference\": {\"entry\": \"twice_ref\", \"grid\": 1, \"block\": 32}},\n"
        " \"problem\": {\"n\": [10]}, \"methods\": [\"kernel\"]}");
    const kernel_decl *d = &sw->declared->decl;
    tune_point p = {0};
    point_set_int(&p, "n", 10);
    expr_value v;
    cr_assert_eq(expr_eval(d->args[0].count, point_lookup, &p, &v, NULL), TUNE_OK);
    cr_expect_eq(v.i, 44);
    cr_expect_eq(d->args[0].type, KDECL_F32);
    cr_assert_eq(expr_eval(d->args[1].count, point_lookup, &p, &v, NULL), TUNE_OK);
    cr_expect_eq(v.i, 20);
    cr_expect_eq(d->args[1].type, KDECL_F16);
    cr_expect_eq(d->args[2].type, KDECL_U32);
    /* 4 * 44 (x) + 2 * 20 (y) + 2 * 4 * 12 (k, inout: read and written) */
    cr_assert_eq(expr_eval(sw->bytes, point_lookup, &p, &v, NULL), TUNE_OK);
    cr_expect_eq(expr_value_as_double(v), 4 * 44 + 2 * 20 + 2 * 4 * 12);
    sweep_free(sw);
}

/* A permutation is drawn on the host, but drawn again on the device when it has "redraw": the
 * configuration then needs the fill kernel of its type too. */
Test(declared, redraw_of_a_permutation_needs_the_device_fill)
{
    static const char *const paths[] = {"tests/data/declared/redraw_off.json",
                                        "tests/data/declared/redraw.json"};
    for (int on = 0; on < 2; on++) {
        sweep *sw = test_load_sweep(paths[on]);
        tune_point p = {0};
        point_set_str(&p, "method", "kernel");
        point_set_int(&p, "n", 1000);
        point_set_int(&p, "threads", 512);
        family_kernel_ref refs[FAMILY_MAX_KERNELS];
        char why[512];
        int n = kernels_at(sw, &p, refs, why);
        cr_assert_eq(n, 3 + on, "%s: %d kernels: %s", paths[on], n, why);
        cr_expect_str_eq(refs[2].name, "tune_fill_random<float>");
        if (on)
            cr_expect_str_eq(refs[3].name, "tune_fill_random<int>");
        sweep_free(sw);
    }
}

/* A declared sweep without "methods" runs every method its section declares; only the tuned
 * kernel when an argument reads a parameter (the reference and the baselines could not run). */
Test(declared, methods_default_to_what_the_section_declares)
{
    sweep *sw = test_load_sweep("tests/data/valid/declared_default_methods.json");
    cr_assert_eq(sw->n_methods, 3);
    cr_expect_str_eq(sw->methods[0], "kernel");
    cr_expect_str_eq(sw->methods[1], "reference");
    cr_expect_str_eq(sw->methods[2], "plain");
    sweep_free(sw);
    sw = test_load_sweep("tests/data/valid/declared_default_methods_param.json");
    cr_assert_eq(sw->n_methods, 1);
    cr_expect_str_eq(sw->methods[0], "kernel");
    sweep_free(sw);
    /* the shipped families still require it */
    tune_error err = {0};
    cr_expect_null(sweep_load("tests/data/invalid/missing_methods.json", &err));
    cr_expect(strstr(err.message, "missing required key 'methods'") != NULL, "%s", err.message);
}

/* A declared sweep's family: its description from the declaration (one op, its parameters and
 * methods, no dtype axis, no traffic model), its CPU side the declaration's, its GPU side the
 * registered "kernel" family's. */
Test(declared, family_is_built_from_the_declaration_and_the_gpu_side)
{
    sweep *sw = test_load_sweep("tests/data/valid/declared_default_methods.json");
    const tune_family *f = sw->family, *gpu = family_find(KDECL_FAMILY);
    cr_assert_not_null(gpu);
    cr_assert_neq(f, gpu);
    cr_expect_str_eq(f->name, KDECL_FAMILY);
    cr_expect_eq(f->help, gpu->help);
    cr_assert_eq(f->n_ops, 1);
    cr_expect_eq(f->ops, sw->fop);
    cr_expect_str_eq(f->ops[0].name, sw->op);
    cr_expect_eq(f->params, sw->declared->params);
    cr_expect_eq(f->n_params, sw->declared->n_params);
    cr_assert_eq(f->n_methods, 3);
    cr_expect_str_eq(f->methods[0].name, "kernel");
    cr_expect_eq(f->methods[0].role, FAMILY_ROLE_TUNED);
    cr_expect_eq(f->methods[1].role, FAMILY_ROLE_REFERENCE);
    cr_expect_eq(f->methods[2].role, FAMILY_ROLE_BASELINE);
    cr_expect_null(f->dtype_axis);
    cr_expect_eq(f->needs_cublas, 0);
    cr_expect_eq(f->restores_inputs, 1);
    cr_expect_eq(f->data, &sw->declared->decl);
    cr_expect(!f->traffic && !f->n_traffic && !f->traffic_patterns && !f->n_traffic_patterns);
    cr_expect(f->kernels == kdecl_family_kernels && f->prune == kdecl_family_prune);
    cr_expect(f->shape_init == gpu->shape_init && f->shape_free == gpu->shape_free &&
              f->prepare == gpu->prepare && f->before_rep == gpu->before_rep &&
              f->launch == gpu->launch && f->check == gpu->check);
    sweep_free(sw);
}

/* A method of several launches: its kernels listed in order (the first is the row's), then the
 * reference, then the fills; each launch receives the arguments it names; the reference
 * receives its own. The derived byte model leaves the scratch buffer out. */
Test(declared, launch_sequence_plan)
{
    sweep *sw = test_load_sweep("sweeps/examples/reduce2/reduce2.json");
    const kernel_decl *d = sw->family->data;
    tune_point p = {0};
    point_set_str(&p, "method", "kernel");
    point_set_int(&p, "n", 1000);
    point_set_int(&p, "threads", 256);
    point_set_int(&p, "blocks", 1056);
    point_set_int(&p, "final", 128);
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[512];
    cr_assert_eq(kernels_at(sw, &p, refs, why), 4, "%s", why);
    cr_expect_str_eq(refs[0].name, "partial_sums<256>");
    cr_expect_eq(refs[0].row, 1);
    cr_expect_str_eq(refs[1].name, "final_sum<128>");
    cr_expect_eq(refs[1].row, 0);
    cr_expect_str_eq(refs[2].name, "sum_ref");
    cr_expect_str_eq(refs[3].name, "tune_fill_random<float>");
    cr_expect_eq(kdecl_method_n_launches(d, "kernel"), 2);
    cr_expect_eq(kdecl_method_n_launches(d, "reference"), 1);
    cr_expect_eq(kdecl_method_n_launches(d, "nope"), 0);
    const kdecl_kernel *second = kdecl_method_launch(d, "kernel", 1);
    cr_assert_not_null(second);
    cr_expect_null(kdecl_method_launch(d, "kernel", 2));
    cr_assert_eq(second->argc, 3); /* partial, total, blocks */
    cr_expect_eq(second->argv[0], 1);
    cr_expect_eq(second->argv[1], 2);
    cr_expect_eq(second->argv[2], 4);
    cr_expect_eq(d->ref.argc, 3);
    cr_expect_eq(d->args[1].role, KDECL_SCRATCH);
    cr_expect_str_eq(sw->bytes_src, "4 * (n) + 4 * (1)");
    /* the reference receives no argument that reads a parameter, so it is a default method */
    cr_assert_eq(sw->n_methods, 2);
    cr_expect_str_eq(sw->methods[1], "reference");
    point_set_str(&p, "method", "reference");
    cr_assert_eq(kernels_at(sw, &p, refs, why), 3, "%s", why);
    cr_expect_str_eq(refs[0].name, "sum_ref");
    /* a later launch over a limit every device has prunes the configuration before compiling */
    tune_point shape = {0}, par = {0};
    point_set_str(&shape, "method", "kernel");
    point_set_int(&shape, "n", 1000);
    point_set_int(&par, "threads", 256);
    point_set_int(&par, "blocks", 264);
    point_set_int(&par, "final", 2048);
    const char *pruned[1] = {NULL};
    sw->family->prune(sw->family, &shape, &par, 1, pruned);
    cr_expect(pruned[0] && strstr(pruned[0], "a block dimension over its limit"), "%s",
              pruned[0] ? pruned[0] : "(kept)");
    point_set_int(&par, "final", 1024);
    sw->family->prune(sw->family, &shape, &par, 1, pruned);
    cr_expect_null(pruned[0], "%s", pruned[0]);
    sweep_free(sw);
}

/* A reference with "per_config" reads parameters (here its macro): rendered per configuration,
 * and never a default method. */
Test(declared, reference_per_config_reads_parameters)
{
    sweep *sw = test_load_sweep("sweeps/examples/reduce2/partials.json");
    const kernel_decl *d = sw->family->data;
    cr_expect_eq(d->ref_per_config, 1);
    tune_point p = {0};
    point_set_str(&p, "method", "kernel");
    point_set_int(&p, "n", 1000);
    point_set_int(&p, "threads", 512);
    point_set_int(&p, "blocks", 264);
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[512];
    cr_assert_geq(kernels_at(sw, &p, refs, why), 2, "%s", why);
    cr_expect_str_eq(refs[1].name, "partial_sums_ref");
    cr_expect_str_eq(refs[1].options, "-DREF_THREADS=512");
    sweep_free(sw);
}

/* A constant's bytes: count x element size, within the 64 KiB of constant memory. */
Test(declared, constant_bytes)
{
    sweep *sw = test_load_sweep("sweeps/examples/convolution/convolution.json");
    const kernel_decl *d = sw->family->data;
    cr_assert_eq(d->n_consts, 1);
    cr_expect_str_eq(d->consts[0].name, "d_filter");
    tune_point p = {0};
    point_set_int(&p, "fw", 7);
    tune_error err = {0};
    cr_expect_eq(kdecl_const_bytes(&d->consts[0], &p, &err), 7 * 7 * 4);
    point_set_int(&p, "fw", 129); /* 129^2 floats: 66564 bytes */
    cr_expect_eq(kdecl_const_bytes(&d->consts[0], &p, &err), -1);
    cr_expect(strstr(err.message, "has 16641 elements of float32; expected 1 to 16384") != NULL, "%s",
              err.message);
    sweep_free(sw);
}

/* A constant's values are made on the host: seeded (the same at the same seed, others at
 * another), within the init's bounds; a constant init gives its value. */
Test(declared, constant_values_on_the_host)
{
    sweep *sw = test_load_sweep("sweeps/examples/convolution/convolution.json");
    const kernel_decl *d = sw->family->data;
    tune_point p = {0};
    point_set_int(&p, "n", 1000);
    point_set_int(&p, "fw", 3);
    kd_consts a = {0}, b = {0}, c = {0};
    tune_error err = {0};
    cr_assert_eq(kd_consts_make(d, &p, 1, &a, &err), TUNE_OK, "%s", err.message);
    cr_assert_eq(kd_consts_make(d, &p, 1, &b, &err), TUNE_OK, "%s", err.message);
    cr_assert_eq(kd_consts_make(d, &p, 2, &c, &err), TUNE_OK, "%s", err.message);
    cr_assert_eq(a.bytes[0], 36);
    cr_expect_eq(memcmp(a.host[0], b.host[0], 36), 0);
    cr_expect_neq(memcmp(a.host[0], c.host[0], 36), 0);
    for (size_t i = 0; i < 9; i++) {
        double v = kd_load(KDECL_F32, a.host[0], i);
        cr_expect(v >= -1 && v < 1, "element %zu: %g", i, v);
    }
    kd_consts_clear(&a);
    kd_consts_clear(&b);
    kd_consts_clear(&c);
    sweep_free(sw);
    sw = test_load_sweep("tests/data/declared/constants.json");
    d = sw->family->data;
    point_set_int(&p, "k", 4);
    cr_assert_eq(kd_consts_make(d, &p, 1, &a, &err), TUNE_OK, "%s", err.message);
    for (size_t i = 0; i < 4; i++)
        cr_expect_eq(kd_load(KDECL_F32, a.host[0], i), 3.0);
    kd_consts_clear(&a);
    sweep_free(sw);
}

/* Every example and test sweep of declared kernels compiles (toolkit headers included). */
Test(declared, every_example_compiles_without_a_gpu)
{
    glob_t g;
    cr_assert_eq(glob("sweeps/examples/*/*.json", 0, NULL, &g), 0, "no examples");
    glob_t g2;
    cr_assert_eq(glob("tests/data/declared/*.json", 0, NULL, &g2), 0);
    char kernels[4096];
    cr_assert_not_null(compile_find_kernels_dir(kernels, sizeof kernels));
    for (size_t i = 0; i < g.gl_pathc + g2.gl_pathc; i++) {
        const char *path = i < g.gl_pathc ? g.gl_pathv[i] : g2.gl_pathv[i - g.gl_pathc];
        sweep *sw = test_load_sweep(path);
        run_options opt;
        run_options_init(&opt);
        opt.compile_only = 1;
        opt.quiet = 1;
        opt.cache_dir = "/tmp/tune-test-cache";
        opt.kernels_dir = kernels;
        run_summary sum;
        tune_error err = {0};
        char buf[4096];
        cr_assert_eq(run_sweep(sw, &opt, &sum, &err), TUNE_OK, "%s: %s", path,
                     tune_error_text(&err, buf, sizeof buf));
        cr_expect_gt(sum.n_kernels, 0, "%s", path);
        cr_expect_eq(sum.n_kernel_errors, 0, "%s: %zu kernels did not compile", path,
                     sum.n_kernel_errors);
        sweep_free(sw);
    }
    globfree(&g);
    globfree(&g2);
}

/* Runs the tune binary on a sweep with more options (a process of its own, as a user runs it: a
 * test process's signal handling and forks stay out of the run's workers); its exit status. */
static int run_tune(const char *path, const char *options)
{
    char cmd[2048];
    const char *bin = getenv("TUNE_BIN"); /* the binary built beside this test, unless set */
    snprintf(cmd, sizeof cmd, "%s %s %s --quiet --cache /tmp/tune-test-cache >/dev/null",
             bin && *bin ? bin : TUNE_BIN, path, options);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Runs a sweep on the GPU with the tune binary into a new results root; the rows of its run
 * (new: results_rows_free). */
static results_rows run_gpu(const char *path)
{
    char root[256], opt[300], pattern[512];
    snprintf(root, sizeof root, "/tmp/tune-test-declared-%d", (int)getpid());
    snprintf(opt, sizeof opt, "--results %s", root);
    cr_assert_eq(run_tune(path, opt), 0, "tune %s %s failed", path, opt);
    sweep *sw = test_load_sweep(path);
    snprintf(pattern, sizeof pattern, "%s/%s/*/raw.jsonl", root, sw->name);
    sweep_free(sw);
    glob_t g;
    cr_assert_eq(glob(pattern, 0, NULL, &g), 0, "no rows at %s", pattern);
    tune_error err = {0};
    results_rows rows;
    cr_assert_eq(results_read(g.gl_pathv[g.gl_pathc - 1], &rows, &err), TUNE_OK, "%s",
                 err.message);
    globfree(&g);
    return rows;
}

/* faults.json says "family_rules": false, so its block of 2048 reaches the run's own check (a
 * skipped row) instead of being pruned before compiling. */
Test(declared, faults_are_rows_and_the_sweep_goes_on)
{
    require_gpu_in_child();
    results_rows read = run_gpu("tests/data/declared/faults.json");
    const result_row *rows = read.rows;
    size_t n = read.n;
    cr_assert_eq(n, 2 * (3 * 2 + 1), "%zu rows", n);
    size_t ok = 0, invalid = 0, crashed = 0, skipped = 0;
    for (size_t i = 0; i < n; i++) {
        const result_row *r = &rows[i];
        int64_t fault = point_int(&r->values, "fault", 0),
                block = point_int(&r->values, "block", 0);
        if (strcmp(r->method, "reference") == 0 || (fault == 0 && block == 128))
            cr_expect_eq(r->status, RESULT_OK, "%s: %s", r->method, r->reason ? r->reason : "");
        ok += r->status == RESULT_OK;
        invalid += r->status == RESULT_INVALID;
        crashed += r->status == RESULT_CRASHED || r->status == RESULT_LAUNCH_ERROR;
        skipped += r->status == RESULT_SKIPPED;
        if (block == 2048)
            cr_expect(r->status == RESULT_SKIPPED && strstr(r->reason, "block dimension 0 is 2048"),
                      "%s", r->reason ? r->reason : "");
        else if (fault == 2)
            cr_expect_eq(r->status, RESULT_INVALID);
        else if (fault == 1)
            cr_expect(r->status == RESULT_CRASHED || r->status == RESULT_LAUNCH_ERROR, "%s",
                      result_status_str(r->status));
    }
    cr_expect_eq(ok, 4);
    cr_expect_eq(invalid, 2);
    cr_expect_eq(crashed, 2);
    cr_expect_eq(skipped, 6);
    results_rows_free(&read);
}

/* Every example runs, and each of its shapes has a valid tuned configuration. */
Test(declared, every_example_runs)
{
    require_gpu_in_child();
    glob_t g;
    cr_assert_eq(glob("sweeps/examples/*/*.json", 0, NULL, &g), 0, "no examples");
    for (size_t i = 0; i < g.gl_pathc; i++) {
        results_rows read = run_gpu(g.gl_pathv[i]);
        const result_row *rows = read.rows;
        size_t n = read.n;
        size_t ok = 0;
        for (size_t r = 0; r < n; r++)
            ok += rows[r].status == RESULT_OK;
        cr_expect_gt(ok, 0, "%s: no ok row among %zu", g.gl_pathv[i], n);
        results_rows_free(&read);
    }
    globfree(&g);
}

/* The rows of a run of tests/data/declared/redraw*.json: both configurations ok (the second one's
 * check, after the first one's timed reps, sees the shape's first draw again); the median time of
 * each, which tells whether its timed reps saw fresh inputs (redraw.cu). */
static void run_redraw_probe(const char *path, double medians[2])
{
    results_rows read = run_gpu(path);
    const result_row *rows = read.rows;
    size_t n = read.n;
    cr_assert_eq(n, 2, "%s: %zu rows", path, n);
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(rows[i].status, RESULT_OK, "%s: %s", path,
                     rows[i].reason ? rows[i].reason : "");
        medians[i] = rows[i].time.median;
    }
    results_rows_free(&read);
}

/* "redraw": x (normal) and p (permutation, drawn again on the device) differ before every timed
 * rep and p stays a permutation: the probe never spins. Without it, every rep spins. */
Test(declared, redraw_gives_every_rep_fresh_inputs)
{
    require_gpu_in_child();
    double on[2], off[2];
    run_redraw_probe("tests/data/declared/redraw.json", on);
    run_redraw_probe("tests/data/declared/redraw_off.json", off);
    for (int i = 0; i < 2; i++) {
        cr_expect_lt(on[i], 50e-6, "redraw: configuration %d took %.1f us", i, on[i] * 1e6);
        cr_expect_gt(off[i], 80e-6, "no redraw: configuration %d took %.1f us", i, off[i] * 1e6);
    }
}

/* Inputs (float32, int32) and the reference from .npy files: the shape whose reference is right
 * has ok rows with no error, the one whose reference is wrong in one element invalid rows. */
Test(declared, npy_inputs_and_reference)
{
    require_gpu_in_child();
    results_rows read = run_gpu("tests/data/declared/npy.json");
    const result_row *rows = read.rows;
    size_t n = read.n;
    cr_assert_eq(n, 6, "%zu rows", n);
    for (size_t i = 0; i < n; i++) {
        int64_t size = point_int(&rows[i].values, "n", 0);
        if (size == 1000) {
            cr_expect_eq(rows[i].status, RESULT_OK, "%s", rows[i].reason ? rows[i].reason : "");
            cr_expect_eq(rows[i].error, 0.0);
        } else {
            cr_expect_eq(rows[i].status, RESULT_INVALID, "n = %lld: %s", (long long)size,
                         result_status_str(rows[i].status));
            cr_expect_gt(rows[i].error, 0.0);
        }
    }
    results_rows_free(&read);
}


/* --resume of a declared sweep: a run cut after two rows (and half a third) measures only the
 * missing configurations; the rows it kept are unchanged and none is written twice. */
Test(declared, resume_measures_only_the_missing_rows)
{
    require_gpu_in_child();
    const char *sw = "tests/data/declared/npy.json";
    char dir[256], opt[300], path[300];
    snprintf(dir, sizeof dir, "/tmp/tune-test-declared-resume-%d", (int)getpid());
    snprintf(opt, sizeof opt, "--out %s", dir);
    cr_assert_eq(run_tune(sw, opt), 0);
    size_t n_full = 0;
    char *full = test_row_identities(dir, &n_full);
    cr_assert_eq(n_full, 6);
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    char *text = tune_read_file(path, NULL, NULL);
    cr_assert_not_null(text);
    char *cut = strchr(strchr(text, '\n') + 1, '\n') + 1; /* after two rows */
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fwrite(text, 1, (size_t)(cut - text), f);
    fputs("{\"sweep\":\"declared_npy\",\"fam", f); /* a row cut by a crash */
    fclose(f);
    snprintf(opt, sizeof opt, "--out %s --resume", dir);
    cr_assert_eq(run_tune(sw, opt), 0);
    size_t n_resumed = 0;
    char *resumed = test_row_identities(dir, &n_resumed);
    cr_expect_eq(n_resumed, 6);
    cr_expect_str_eq(resumed, full);
    char *after = tune_read_file(path, NULL, NULL);
    cr_assert_not_null(after);
    cr_expect_eq(strncmp(after, text, (size_t)(cut - text)), 0, "the kept rows changed");
    free(after);
    free(text);
    free(full);
    free(resumed);
}

/* "constants": the symbol filled in the kernel's and the baseline's modules (ok rows, error 0:
 * the reference multiplies by the literal 3), and a declaration larger than the symbol skipped
 * naming both sizes; a symbol no kernel of the method holds skipped with the reason. */
Test(declared, constants_fill_the_symbol_and_check_its_size)
{
    require_gpu_in_child();
    results_rows read = run_gpu("tests/data/declared/constants.json");
    const result_row *rows = read.rows;
    size_t n = read.n;
    cr_assert_eq(n, 6, "%zu rows", n);
    for (size_t i = 0; i < n; i++) {
        const char *why = rows[i].reason ? rows[i].reason : "";
        if (point_int(&rows[i].values, "k", 0) == 4) {
            cr_expect_eq(rows[i].status, RESULT_OK, "%s: %s", rows[i].method, why);
            cr_expect_eq(rows[i].error, 0.0);
        } else {
            cr_expect_eq(rows[i].status, RESULT_SKIPPED, "%s", result_status_str(rows[i].status));
            cr_expect(strstr(why, "constant 'coef' is declared as 32 bytes (8 of float32), but "
                                  "the kernel's __constant__ symbol 'coef' holds 16 bytes"),
                      "%s", why);
        }
    }
    results_rows_free(&read);
    read = run_gpu("tests/data/declared/constants_missing.json");
    rows = read.rows;
    n = read.n;
    cr_assert_eq(n, 1, "%zu rows", n);
    cr_expect_eq(rows[0].status, RESULT_SKIPPED);
    cr_expect(rows[0].reason && strstr(rows[0].reason, "constant 'coeff': no kernel of the method "
                                                       "holds a __constant__ symbol"),
              "%s", rows[0].reason ? rows[0].reason : "");
    results_rows_free(&read);
}

/* "launches": both launches run in order for the check (ok rows) and are timed as one call, in
 * cold and graph modes: the kernel's rows take the second launch's spin, the reference's do
 * not. */
Test(declared, launches_are_checked_and_timed_as_one_call)
{
    require_gpu_in_child();
    static const char *const paths[] = {"tests/data/declared/sequence.json",
                                        "tests/data/declared/sequence_graph.json"};
    for (int i = 0; i < 2; i++) {
        results_rows read = run_gpu(paths[i]);
        const result_row *rows = read.rows;
        size_t n = read.n;
        cr_assert_eq(n, 3, "%s: %zu rows", paths[i], n);
        for (size_t r = 0; r < n; r++) {
            cr_expect_eq(rows[r].status, RESULT_OK, "%s %s: %s", paths[i], rows[r].method,
                         rows[r].reason ? rows[r].reason : "");
            double t = rows[r].time.median;
            if (strcmp(rows[r].method, "kernel") == 0)
                cr_expect_gt(t, 80e-6, "%s: the kernel took %.1f us", paths[i], t * 1e6);
            else
                cr_expect_lt(t, 50e-6, "%s: the reference took %.1f us", paths[i], t * 1e6);
        }
        results_rows_free(&read);
    }
}

/* The examples of constants, launches and a per-configuration reference: every row is ok (each
 * reference is right for every configuration it checks; no launch exceeds a limit). */
Test(declared, examples_of_constants_launches_and_per_config_references)
{
    require_gpu_in_child();
    static const char *const paths[] = {"sweeps/examples/convolution/convolution.json",
                                        "sweeps/examples/reduce2/reduce2.json",
                                        "sweeps/examples/reduce2/partials.json"};
    for (int i = 0; i < 3; i++) {
        results_rows read = run_gpu(paths[i]);
        const result_row *rows = read.rows;
        size_t n = read.n;
        cr_expect_gt(n, 0, "%s: no rows", paths[i]);
        for (size_t r = 0; r < n; r++)
            cr_expect_eq(rows[r].status, RESULT_OK, "%s: %s %s: %s", paths[i], rows[r].method,
                         result_status_str(rows[r].status), rows[r].reason ? rows[r].reason : "");
        results_rows_free(&read);
    }
}
