/* tune - autotuning benchmark harness for CUDA kernels. `tune help` lists the commands. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/report.h"
#include "device/compile.h"
#include "device/gpu.h"
#include "run/run.h"
#include "model/shard.h"
#include "model/space.h"
#include "model/sweep.h"
#include "store/folder.h"
#include "store/results.h"

enum { EXIT_USAGE = 2, EXIT_NO_GPU = 3 };

/* Commands with their own option parsing (tools/cmd_*.c); argv[0] is the command's name. */
int tune_cmd_fit(int argc, char **argv);
int tune_cmd_calibrate(int argc, char **argv);
int tune_cmd_roofline(int argc, char **argv);
int tune_cmd_compare(int argc, char **argv);

static const char usage[] =
    "usage: tune [run] SWEEP.json [options]   compile, validate and time a sweep; print the tables\n"
    "       tune validate SWEEP.json...       check sweep files and count their configurations\n"
    "       tune compile [SWEEP.json|DIR]...  compile every variant (default: sweeps/), no GPU needed\n"
    "       tune report RESULTS_DIR... [--out DIR]  print the best-config tables of raw.jsonl\n"
    "                                         (merged); --out DIR also gets best.md/.csv/.json\n"
    "       tune merge OUT SHARD_DIR...       merge the folders of a sharded run (--shard) into OUT\n"
    "       tune fit RESULTS_DIR... --param NAME [--target 0.98] [--rule EXPR]\n"
    "                                         fit (or evaluate) a heuristic for a parameter\n"
    "       tune roofline RESULTS_DIR...      roofline model's prediction error over runs\n"
    "       tune compare BASE NEW [--threshold PCT] [--allow-mismatch] [--out DIR] [--param NAME]\n"
    "                                         compare two runs; exit 1 on a regression\n"
    "       tune calibrate [--device N]       measure the GPU's ceilings (bandwidths, GEMM rates)\n"
    "       tune devices                      list CUDA devices\n"
    "options:\n"
    "  --results ROOT   results root (default results): ROOT/<sweep>/<UTC time>/\n"
    "  --out DIR        exact results folder\n"
    "  --device N       CUDA device ordinal (default 0)\n"
    "  --cache DIR      kernel cache folder (default $TUNE_CACHE_DIR or ~/.cache/tune)\n"
    "  --no-cache       compile everything, cache nothing\n"
    "  --arch sm_NN     architecture for `compile` (default sm_90)\n"
    "  --seed N         seed of the random inputs (default 24301)\n"
    "  --read-bw GBPS   the device's read bandwidth in GB/s instead of measuring it\n"
    "  --kernels DIR    kernel sources (default: found beside the binary)\n"
    "  --quiet          no progress line and no tables\n"
    "  --resume         continue the latest run of the sweep (or --out DIR): measure only the\n"
    "                   configurations without a row; refused if kernels, driver or device changed\n"
    "  --watchdog S     kill a configuration that makes no progress for S seconds (default 20)\n"
    "  --retake-throttled N  measure again (up to N times) when NVML saw the GPU throttled\n"
    "  --shard I/N      run only shard I of N (0-based: 0/4 .. 3/4), balanced by estimated cost\n"
    "  --gpus all|0,1   one coordinator per GPU, each on its shard, merged at the end\n"
    "  --compile-only   no GPU: compile, and write a row per configuration (compiled,\n"
    "                   compile_error, skipped) into a results folder\n"
    "  --rows A,B       report: problem axes down the pivots (default: the sweep's report.rows)\n"
    "  --cols C,D       report: problem axes across the pivots (default: the sweep's report.cols)\n"
    "exit status: 0 ok, 1 failure, 2 usage, 3 no GPU\n";

typedef struct {
    run_options run;
    const char *rows, *cols; /* report pivots */
    char cache[PATH_MAX];
    const char *files[256];
    size_t n_files;
} cli;

static int fail(const tune_error *err)
{
    char buf[4096];
    fprintf(stderr, "tune: %s\n", tune_error_text(err, buf, sizeof buf));
    return err->code == TUNE_ERR_NO_GPU ? EXIT_NO_GPU : EXIT_FAILURE;
}

static int parse_args(int argc, char **argv, int first, cli *c)
{
    run_options_init(&c->run);
    c->run.argc = argc;
    c->run.argv = argv;
    c->run.cache_dir = compile_default_cache_dir(c->cache, sizeof c->cache);
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (strcmp(a, "--no-cache") == 0) {
            c->run.cache_dir = NULL;
            takes = 0;
        } else if (strcmp(a, "--quiet") == 0) {
            c->run.quiet = 1;
            takes = 0;
        } else if (strcmp(a, "--resume") == 0) {
            c->run.resume = 1;
            takes = 0;
        } else if (strcmp(a, "--compile-only") == 0) {
            c->run.compile_only = c->run.compile_rows = 1;
            takes = 0;
        } else if (a[0] != '-' || strcmp(a, "-") == 0) {
            if (c->n_files == sizeof c->files / sizeof c->files[0])
                return fprintf(stderr, "tune: too many files\n"), -1;
            c->files[c->n_files++] = a;
            takes = 0;
        } else if (!val) {
            return fprintf(stderr, "tune: option %s needs a value\n%s", a, usage), -1;
        } else if (strcmp(a, "--results") == 0) {
            c->run.out_root = val;
        } else if (strcmp(a, "--rows") == 0) {
            c->rows = val;
        } else if (strcmp(a, "--cols") == 0) {
            c->cols = val;
        } else if (strcmp(a, "--out") == 0) {
            c->run.out_dir = val;
        } else if (strcmp(a, "--cache") == 0) {
            c->run.cache_dir = val;
        } else if (strcmp(a, "--kernels") == 0) {
            c->run.kernels_dir = val;
        } else if (strcmp(a, "--device") == 0) {
            c->run.device = atoi(val);
        } else if (strcmp(a, "--seed") == 0) {
            c->run.seed = strtoull(val, NULL, 0);
        } else if (strcmp(a, "--watchdog") == 0) {
            c->run.watchdog_s = strtod(val, NULL);
            if (c->run.watchdog_s <= 0)
                return fprintf(stderr, "tune: --watchdog expects seconds > 0, got '%s'\n", val), -1;
        } else if (strcmp(a, "--retake-throttled") == 0) {
            c->run.retake_throttled = atoi(val);
        } else if (strcmp(a, "--shard") == 0) {
            shard_spec sh;
            tune_error err = {0};
            if (shard_parse(val, &sh, &err) != TUNE_OK)
                return fprintf(stderr, "tune: --shard: %s\n", err.message), -1;
            c->run.shard_index = sh.index;
            c->run.shard_count = sh.count;
        } else if (strcmp(a, "--gpus") == 0) {
            c->run.gpus = val;
        } else if (strcmp(a, "--read-bw") == 0) {
            c->run.read_bw = strtod(val, NULL) * 1e9;
        } else if (strcmp(a, "--arch") == 0) {
            if (sscanf(val, "sm_%d", &c->run.arch) != 1 || c->run.arch < 50)
                return fprintf(stderr, "tune: --arch expects sm_NN (e.g. sm_90), got '%s'\n", val), -1;
        } else {
            return fprintf(stderr, "tune: unknown option %s\n%s", a, usage), -1;
        }
        i += takes;
    }
    return 0;
}

static int is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sweep files named by the arguments (folders expand to their *.json, sorted); new strings. */
static size_t expand_sweeps(const cli *c, char **out, size_t max)
{
    size_t n = 0;
    const char *dflt[] = {"sweeps"};
    const char *const *args = c->n_files ? c->files : dflt;
    size_t n_args = c->n_files ? c->n_files : 1;
    for (size_t i = 0; i < n_args; i++) {
        if (!is_dir(args[i])) {
            if (n < max)
                out[n++] = strdup(args[i]);
            continue;
        }
        DIR *d = opendir(args[i]);
        size_t first = n;
        for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
            size_t len = strlen(e->d_name);
            if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0 && n < max) {
                char path[PATH_MAX];
                snprintf(path, sizeof path, "%s/%s", args[i], e->d_name);
                out[n++] = strdup(path);
            }
        }
        if (d)
            closedir(d);
        qsort(out + first, n - first, sizeof *out, cmp_str);
    }
    return n;
}

static int cmd_validate(cli *c)
{
    int rc = 0;
    if (!c->n_files)
        return fprintf(stderr, "tune validate: name at least one sweep file\n"), EXIT_USAGE;
    for (size_t i = 0; i < c->n_files; i++) {
        tune_error err = {0};
        sweep *sw = sweep_load(c->files[i], &err);
        space *sp = sw ? space_build(sw, &err) : NULL;
        if (!sp) {
            rc = fail(&err);
        } else {
            printf("%s: ok: %s/%s, %zu shapes, %zu configs (%zu pruned by skip_if)\n", c->files[i],
                   sw->family_name, sw->op, space_n_shapes(sp), space_n_configs(sp),
                   space_n_pruned(sp));
        }
        space_free(sp);
        sweep_free(sw);
    }
    return rc;
}

static int cmd_compile(cli *c)
{
    char *files[512];
    size_t n = expand_sweeps(c, files, 512);
    int rc = n ? 0 : (fprintf(stderr, "tune compile: no sweep files found\n"), EXIT_FAILURE);
    size_t kernels = 0, errors = 0;
    if (c->run.shard_count || c->run.gpus || c->run.compile_rows)
        return fprintf(stderr, "tune compile: --shard, --gpus and --compile-only are options of "
                               "`tune run` (tune SWEEP --compile-only --shard I/N)\n"),
               EXIT_USAGE;
    c->run.compile_only = 1;
    for (size_t i = 0; i < n; i++) {
        tune_error err = {0};
        run_summary sum;
        sweep *sw = sweep_load(files[i], &err);
        if (!sw || run_sweep(sw, &c->run, &sum, &err) != TUNE_OK) {
            rc = fail(&err);
        } else {
            kernels += sum.n_kernels;
            errors += sum.n_kernel_errors;
        }
        sweep_free(sw);
        free(files[i]);
    }
    printf("tune compile: %zu sweep files, %zu kernels, %zu compile errors\n", n, kernels, errors);
    return errors ? EXIT_FAILURE : rc;
}

static int cmd_run(cli *c)
{
    if (c->n_files != 1)
        return fprintf(stderr, "tune run: name exactly one sweep file\n%s", usage), EXIT_USAGE;
    if (c->run.gpus && c->run.shard_count)
        return fprintf(stderr, "tune run: --gpus runs every shard itself: give --gpus or --shard, "
                               "not both\n"),
               EXIT_USAGE;
    tune_error err = {0};
    run_summary sum;
    sweep *sw = sweep_load(c->files[0], &err);
    if (!sw)
        return fail(&err);
    tune_status st = run_sweep(sw, &c->run, &sum, &err);
    sweep_free(sw);
    if (st != TUNE_OK)
        return fail(&err);
    char compiled[64] = "";
    if (c->run.compile_only)
        snprintf(compiled, sizeof compiled, "%zu compiled, ", sum.n_compiled);
    fprintf(stderr,
            "tune: %zu configs: %s%zu ok, %zu invalid, %zu compile errors, %zu launch errors, %zu "
            "crashed, %zu timeouts, %zu skipped; %.1f s (compile %.1f s); results in %s\n",
            sum.n_configs, compiled, sum.n_ok, sum.n_invalid, sum.n_compile_error,
            sum.n_launch_error, sum.n_crashed, sum.n_timeout, sum.n_skipped, sum.wall_seconds,
            sum.compile_seconds, sum.out_dir);
    return EXIT_SUCCESS;
}

static int cmd_merge(cli *c)
{
    if (c->n_files < 2)
        return fprintf(stderr, "tune merge: name the merged folder and the shard folders\n"),
               EXIT_USAGE;
    tune_error err = {0};
    run_summary sum;
    merge_options mo = {c->run.quiet, c->run.argc, c->run.argv};
    /* OUT is locked like a run's folder while the merge writes it */
    int lock = results_mkdirs(c->files[0], &err) == TUNE_OK ? folder_lock(c->files[0], &err) : -1;
    if (lock < 0)
        return fail(&err);
    tune_status st = run_merge(c->files[0], c->files + 1, c->n_files - 1, &mo, &sum, &err);
    folder_unlock(c->files[0], lock);
    if (st != TUNE_OK)
        return fail(&err);
    fprintf(stderr,
            "tune merge: %zu shards, %zu configs: %zu ok, %zu compiled, %zu invalid, %zu compile "
            "errors, %zu launch errors, %zu crashed, %zu timeouts, %zu skipped; results in %s\n",
            c->n_files - 1, sum.n_configs, sum.n_ok, sum.n_compiled, sum.n_invalid,
            sum.n_compile_error, sum.n_launch_error, sum.n_crashed, sum.n_timeout, sum.n_skipped,
            sum.out_dir);
    return EXIT_SUCCESS;
}

static int cmd_report(cli *c)
{
    if (!c->n_files)
        return fprintf(stderr, "tune report: name at least one results folder\n"), EXIT_USAGE;
    tune_error err = {0};
    /* a reader: the folders named are never written; the tables go to stdout and --out DIR */
    if (report_rebuild(c->files, c->n_files, c->rows, c->cols, c->run.out_dir, c->run.quiet,
                       &err) != TUNE_OK)
        return fail(&err);
    return EXIT_SUCCESS;
}

static int cmd_devices(void)
{
    tune_error err = {0};
    int n = 0;
    if (gpu_count(&n, &err) != TUNE_OK)
        return fail(&err);
    for (int i = 0; i < n; i++) {
        gpu_info gi;
        if (gpu_query(i, &gi, &err) != TUNE_OK)
            return fail(&err);
        printf("%d: %s, sm_%d%d, %d SMs, %.1f GiB, L2 %.0f MiB, driver %d, runtime %d\n", i, gi.name,
               gi.cc_major, gi.cc_minor, gi.sm_count, (double)gi.global_mem / (1 << 30),
               (double)gi.l2_bytes / (1 << 20), gi.driver_version, gi.runtime_version);
    }
    return EXIT_SUCCESS;
}

/* The command's status, after stdout is flushed: a reader that closed the pipe early (| head) is a
 * quiet stop, since every file was written before the printing; another write error (a full
 * disk under a redirection) is a failure. */
static int finish(int rc)
{
    if (fflush(stdout) == 0 && !ferror(stdout))
        return rc;
    int e = errno;
    struct stat sb; /* stdio keeps no errno: an error on a pipe or socket is its reader gone */
    if (e == EPIPE || (fstat(STDOUT_FILENO, &sb) == 0 && (S_ISFIFO(sb.st_mode) ||
                                                         S_ISSOCK(sb.st_mode))))
        return rc;
    errno = e;
    fprintf(stderr, "tune: cannot write to standard output: %s\n", strerror(errno));
    return rc ? rc : EXIT_FAILURE;
}

static int dispatch(int argc, char **argv);

int main(int argc, char **argv)
{
    /* a closed stdout is an EPIPE error on write, seen by finish(), not a death by SIGPIPE
     * before the files are written */
    signal(SIGPIPE, SIG_IGN);
    return finish(dispatch(argc, argv));
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : EXIT_SUCCESS;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "fit") == 0)
        return tune_cmd_fit(argc - 1, argv + 1);
    if (strcmp(cmd, "calibrate") == 0)
        return tune_cmd_calibrate(argc - 1, argv + 1);
    if (strcmp(cmd, "roofline") == 0)
        return tune_cmd_roofline(argc - 1, argv + 1);
    if (strcmp(cmd, "compare") == 0)
        return tune_cmd_compare(argc - 1, argv + 1);
    int known = strcmp(cmd, "run") == 0 || strcmp(cmd, "validate") == 0 ||
                strcmp(cmd, "compile") == 0 || strcmp(cmd, "report") == 0 ||
                strcmp(cmd, "devices") == 0 || strcmp(cmd, "merge") == 0;
    cli c;
    memset(&c, 0, sizeof c);
    if (parse_args(argc, argv, known ? 2 : 1, &c) != 0)
        return EXIT_USAGE;
    if (!known || strcmp(cmd, "run") == 0)
        return cmd_run(&c);
    if (strcmp(cmd, "validate") == 0)
        return cmd_validate(&c);
    if (strcmp(cmd, "compile") == 0)
        return cmd_compile(&c);
    if (strcmp(cmd, "report") == 0)
        return cmd_report(&c);
    if (strcmp(cmd, "merge") == 0)
        return cmd_merge(&c);
    return cmd_devices();
}
