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
#include "core/infile.h"
#include "core/interrupt.h"
#include "core/outfile.h"
#include "device/compile.h"
#include "device/gpu.h"
#include "families/families.h"
#include "run/run.h"
#include "model/shard.h"
#include "model/search.h"
#include "model/space.h"
#include "model/sweep.h"
#include "store/db.h"
#include "store/folder.h"
#include "store/results.h"

#include "cli.h"
#include "tune_git_rev.h"

enum { EXIT_USAGE = CLI_EXIT_USAGE, EXIT_NO_GPU = CLI_EXIT_NO_GPU };

/* Commands with their own option parsing (tools/cmd_*.c); argv[0] is the command's name. */
int tune_cmd_fit(int argc, char **argv);
int tune_cmd_dispatch(int argc, char **argv);
int tune_cmd_calibrate(int argc, char **argv);
int tune_cmd_roofline(int argc, char **argv);
void tune_report_fill(void *ctx, result_row *rows, size_t n);
int tune_cmd_compare(int argc, char **argv);
int tune_cmd_replay(int argc, char **argv);
int tune_cmd_ingest(int argc, char **argv);
int tune_cmd_history(int argc, char **argv);
int tune_cmd_dashboard(int argc, char **argv);

static const char usage[] =
    "usage: tune [run] SWEEP.json [options]   compile, validate and time a sweep; print the tables\n"
    "                                         [--search random --budget 10%]: a budgeted search\n"
    "       tune validate SWEEP.json...       check sweep files and count their configurations\n"
    "                                         (and what a searched run measures)\n"
    "       tune compile [SWEEP.json|DIR]...  compile every variant (default: sweeps/), no GPU needed\n"
    "       tune report RESULTS_DIR... [--out DIR]  print the best-config tables of raw.jsonl\n"
    "                                         (merged); --out DIR also gets best.md/.csv/.json\n"
    "       tune merge OUT SHARD_DIR...       merge the folders of a sharded run (--shard) into OUT\n"
    "       tune fit RESULTS_DIR... --param NAME [--target 0.98] [--rule EXPR]\n"
    "                                         fit (or evaluate) a heuristic for a parameter\n"
    "       tune dispatch RESULTS_DIR... [--out DIR] [--methods A,B] [--name FN]\n"
    "                                         a rule for the whole configuration of any shape\n"
    "       tune roofline RESULTS_DIR...      roofline model's prediction error over runs\n"
    "       tune compare BASE NEW [--threshold PCT] [--allow-mismatch] [--out DIR] [--param NAME]\n"
    "                                         compare two runs; exit 1 on a regression\n"
    "       tune replay RESULTS_DIR... [--strategy random,model] [--seeds 20] [--budgets 5,10,25]\n"
    "                                         replay search strategies against measured runs\n"
    "       tune ingest RUN_DIR... [--db FILE]  add finished runs to the results store\n"
    "       tune history [--db FILE] [--sweep NAME] [--since DATE] [--window N] [--json]\n"
    "                                         trends and verdicts of the store's newest runs\n"
    "       tune dashboard --out DIR [--db FILE] [--sweep NAME] [--since DATE]\n"
    "                                         the store's trends as a static site\n"
    "       tune calibrate [--device N]       measure the GPU's ceilings (bandwidths, GEMM rates)\n"
    "       tune devices                      list CUDA devices\n"
    "       tune help [COMMAND]               every command's options (or one command's)\n"
    "       tune --version                    the version and the git revision it was built from\n"
    "`tune COMMAND --help` lists a command's options.\n"
    "exit status (every command):\n"
    "  0  done; for run, the sweep ran to its end (a configuration's failure is a row's status)\n"
    "  1  failed: a sweep, file or folder refused or unreadable; compile and run --compile-only:\n"
    "     a kernel did not compile; compare: a regression beyond the threshold\n"
    "  2  usage: an unknown option, a missing, malformed or out-of-range value (compare: also\n"
    "     runs that cannot be compared)\n"
    "  3  no GPU (or no driver) for a command that needs one\n"
    "  130, 143, 129  stopped by SIGINT, SIGTERM, SIGHUP: child processes killed, no file left\n"
    "     half-written (kernel cache, results folder); a run continues with --resume\n";

/* The commands parsed here, as bits of an option's `commands` mask. */
enum {
    CMD_RUN = 1,
    CMD_VALIDATE = 2,
    CMD_COMPILE = 4,
    CMD_REPORT = 8,
    CMD_MERGE = 16,
    CMD_DEVICES = 32
};

typedef struct {
    const char *name;
    int mask;
    const char *help; /* "" for a command */
} cmd_desc;

static const cmd_desc commands[] = {
    {"run", CMD_RUN,
     "usage: tune [run] SWEEP.json [options]\n"
     "Validates the sweep, compiles its kernels, checks every configuration against the\n"
     "reference, times it and prints the best-config tables; rows go to\n"
     "ROOT/<sweep>/<UTC time>/raw.jsonl. A searched run (--search, --budget, --time-limit, or\n"
     "the sweep's \"search\") measures the baselines and the candidates a strategy proposes\n"
     "within the budget, compiling only their kernels (docs/search.md).\n"},
    {"validate", CMD_VALIDATE,
     "usage: tune validate SWEEP.json... [--quiet] [--json] [search options]\n"
     "Checks sweep files (every error with file:line:column) and counts their configurations;\n"
     "for a searched run, how many the budget measures.\n"},
    {"compile", CMD_COMPILE,
     "usage: tune compile [SWEEP.json|DIR]... [options]\n"
     "Compiles every kernel of the sweeps (default: sweeps/) into the cache; no GPU needed.\n"
     "A searched sweep (--search, --budget, or the sweep's \"search\") compiles only what the\n"
     "search proposes before measuring: the budget (random), the first round (model).\n"
     "Exit 1 when a kernel does not compile.\n"},
    {"report", CMD_REPORT,
     "usage: tune report RESULTS_DIR... [--rows A,B] [--cols C,D] [--quiet]\n"
     "Rebuilds best.md, best.csv and best.json from the folders' raw.jsonl (merged).\n"},
    {"merge", CMD_MERGE,
     "usage: tune merge OUT SHARD_DIR... [--quiet]\n"
     "Merges the folders of a sharded run (tune SWEEP --shard I/N) into OUT.\n"},
    {"devices", CMD_DEVICES, "usage: tune devices\nLists the CUDA devices.\n"},
};

/* Every option of the commands parsed here; `commands` says which accept it; arg names the value
 * (NULL: a flag). */
typedef struct {
    const char *name, *arg;
    int commands;
    const char *help;
} opt_desc;

static const opt_desc options[] = {
    {"--results", "ROOT", CMD_RUN, "results root (default results): ROOT/<sweep>/<UTC time>/"},
    {"--out", "DIR", CMD_RUN | CMD_REPORT,
     "run: exact results folder (refused when it holds a run, unless --resume); report: the "
     "folder for the tables (nothing is written into the folders read)"},
    {"--device", "N", CMD_RUN, "CUDA device ordinal, 0 to 1023 (default 0)"},
    {"--cache", "DIR", CMD_RUN | CMD_COMPILE,
     "kernel cache folder (default $TUNE_CACHE_DIR or ~/.cache/tune)"},
    {"--no-cache", NULL, CMD_RUN | CMD_COMPILE, "compile everything, cache nothing"},
    {"--arch", "sm_NN", CMD_RUN | CMD_COMPILE,
     "architecture, sm_50 to sm_255, of compile and --compile-only (default sm_90)"},
    {"--seed", "N", CMD_RUN,
     "seed of the random inputs, an unsigned 64-bit integer (default 24301)"},
    {"--read-bw", "GBPS", CMD_RUN, "the device's read bandwidth in GB/s instead of measuring it"},
    {"--kernels", "DIR", CMD_RUN | CMD_COMPILE,
     "kernel sources (default: found beside the binary)"},
    {"--quiet", NULL, CMD_RUN | CMD_VALIDATE | CMD_COMPILE | CMD_REPORT | CMD_MERGE,
     "no progress, no tables"},
    {"--warnings", NULL, CMD_RUN | CMD_COMPILE,
     "print NVRTC's warnings of the kernels that compiled (errors are always printed)"},
    {"--json", NULL, CMD_VALIDATE,
     "one JSON object per sweep file and line, for scripts: name, file, ok, family, op,\n"
     "                        shapes, configs, pruned_skip_if, pruned_family, max_shards (the\n"
     "                        largest --shard N); a searched run's measured; ok false and error\n"
     "                        for a sweep refused (exit 1)"},
    {"--resume", NULL, CMD_RUN,
     "continue the latest run of the sweep (or --out DIR): measure only the configurations\n"
     "                        without a row; refused if kernels, driver or device changed"},
    {"--watchdog", "S", CMD_RUN,
     "kill a configuration that makes no progress for S seconds, 0 < S <= 86400 (default 20)"},
    {"--retake-throttled", "N", CMD_RUN,
     "measure again (up to N times, 0 to 100) when NVML saw the GPU throttled"},
    {"--energy", NULL, CMD_RUN,
     "also measure each configuration's energy per call through NVML's energy counter,\n"
     "                        apart from its timing (docs/timing.md#energy)"},
    {"--objective", "time|energy|edp", CMD_RUN | CMD_REPORT,
     "rank by time (default), energy per call or energy-delay product; a run measures\n"
     "                        energy for energy and edp"},
    {"--shard", "I/N", CMD_RUN,
     "run only shard I of N (0-based: 0/4 .. 3/4), balanced by estimated cost"},
    {"--gpus", "all|0,1", CMD_RUN, "one coordinator per GPU, each on its shard, merged at the end"},
    {"--search", "STRATEGY", CMD_RUN | CMD_VALIDATE | CMD_COMPILE,
     "exhaustive (every configuration), random or model: which configurations to measure\n"
     "                        (default: the sweep's \"search\", else exhaustive)"},
    {"--budget", "B", CMD_RUN | CMD_VALIDATE | CMD_COMPILE,
     "the candidates measured, a count (400) or a percentage (10%) of the run's in all,\n"
     "                        shared out by the strategy (a shard measures its share); with /shape\n"
     "                        (4/shape, 10%/shape) each shape's"},
    {"--time-limit", "S", CMD_RUN | CMD_VALIDATE,
     "a searched run starts no round (and stops between configurations) after S seconds"},
    {"--search-seed", "N", CMD_RUN | CMD_VALIDATE | CMD_COMPILE,
     "seed of the search's proposals, an unsigned 64-bit integer (default 1)"},
    {"--warm-start", "DIR", CMD_RUN | CMD_VALIDATE | CMD_COMPILE,
     "an earlier results folder of the sweep (or its family and op) whose rows inform the\n"
     "                        search; repeatable; read only"},
    {"--compile-only", NULL, CMD_RUN,
     "no GPU: compile, and write a row per configuration (compiled, compile_error,\n"
     "                        skipped) into a results folder; exit 1 when a kernel does not\n"
     "                        compile"},
    {"--db", "FILE", CMD_RUN | CMD_MERGE,
     "the results store the finished run is added to (default $TUNE_DB, else\n"
     "                        ROOT/history.sqlite); a shard is not added, its merge is"},
    {"--no-ingest", NULL, CMD_RUN | CMD_MERGE, "do not add the finished run to the results store"},
    {"--rows", "A,B", CMD_REPORT,
     "problem axes down the pivots (default: the sweep's report.rows)"},
    {"--cols", "C,D", CMD_REPORT,
     "problem axes across the pivots (default: the sweep's report.cols)"},
};

#define N_OPTIONS (sizeof options / sizeof options[0])
#define N_COMMANDS (sizeof commands / sizeof commands[0])

/* The help of one command parsed here: its text and the options it accepts. */
static void print_command_help(const cmd_desc *cd, FILE *f)
{
    fputs(cd->help, f);
    int any = 0;
    for (size_t i = 0; i < N_OPTIONS; i++) {
        if (!(options[i].commands & cd->mask))
            continue;
        if (!any++)
            fputs("options:\n", f);
        char head[64];
        snprintf(head, sizeof head, "%s%s%s", options[i].name, options[i].arg ? " " : "",
                 options[i].arg ? options[i].arg : "");
        fprintf(f, "  %-21s %s\n", head, options[i].help);
    }
}

#define CLI_MAX_WARM 64

typedef struct {
    run_options run;
    const char *rows, *cols; /* report pivots */
    const char *warm[CLI_MAX_WARM]; /* --warm-start */
    char cache[PATH_MAX];
    const char *files[256];
    size_t n_files;
    const char *db; /* --db: the results store */
    int no_ingest;  /* --no-ingest */
    int json;       /* validate --json */
} cli;

static int fail(const tune_error *err)
{
    interrupt_wait_if_stopping(); /* a child killed by a stop is not a failure to report */
    char buf[4096];
    fprintf(stderr, "tune: %s\n", tune_error_text(err, buf, sizeof buf));
    return err->code == TUNE_ERR_NO_GPU ? EXIT_NO_GPU : EXIT_FAILURE;
}

static const opt_desc *find_option(const char *name)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (strcmp(options[i].name, name) == 0)
            return &options[i];
    return NULL;
}

/* "an option of tune run, tune compile" for an option this command does not take. */
static void option_owners(const opt_desc *o, char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (o->commands & commands[i].mask)
            snprintf(buf + strlen(buf), size - strlen(buf), "%stune %s", buf[0] ? ", " : "",
                     commands[i].name);
}

/* The search options (docs/search.md) into c; 0, or -1 after a message. */
static int apply_search_option(const char *cmd, const char *a, const char *val, cli *c)
{
    search_strategy strategy;
    double fraction;
    size_t count;
    search_scope scope;
    if (strcmp(a, "--search") == 0) {
        if (search_strategy_parse(val, &strategy) != 0)
            return fprintf(stderr, "tune %s: %s expects exhaustive, random or model, got '%s'\n",
                           cmd, a, val),
                   -1;
        c->run.search = val;
    } else if (strcmp(a, "--budget") == 0) {
        if (search_budget_parse(val, &fraction, &count, &scope) != 0)
            return fprintf(stderr,
                           "tune %s: %s expects a count (an integer >= 1) or a percentage in "
                           "(0, 100] such as 10%%, optionally with /shape (10%%/shape), "
                           "got '%s'\n",
                           cmd, a, val),
                   -1;
        c->run.budget = val;
    } else if (strcmp(a, "--time-limit") == 0) {
        return cli_double(cmd, a, val, 0, 366.0 * 86400, 1, "seconds", &c->run.time_limit_s);
    } else if (strcmp(a, "--search-seed") == 0) {
        c->run.search_seed_set = 1;
        return cli_u64(cmd, a, val, &c->run.search_seed);
    } else if (strcmp(a, "--warm-start") == 0) {
        if (cli_path(cmd, a, val) != 0)
            return -1;
        if (c->run.n_warm_start == CLI_MAX_WARM)
            return fprintf(stderr, "tune %s: at most %d --warm-start folders\n", cmd,
                           CLI_MAX_WARM),
                   -1;
        c->warm[c->run.n_warm_start++] = val;
        c->run.warm_start = c->warm;
    }
    return 0;
}

/* One option with its value (val; NULL for a flag) into c; 0, or -1 after a message. */
static int apply_option(const char *cmd, const char *a, const char *val, cli *c)
{
    long long n;
    if (strcmp(a, "--no-cache") == 0) {
        c->run.cache_dir = NULL;
    } else if (strcmp(a, "--quiet") == 0) {
        c->run.quiet = 1;
    } else if (strcmp(a, "--warnings") == 0) {
        c->run.warnings = 1;
    } else if (strcmp(a, "--resume") == 0) {
        c->run.resume = 1;
    } else if (strcmp(a, "--energy") == 0) {
        c->run.energy = 1;
    } else if (strcmp(a, "--compile-only") == 0) {
        c->run.compile_only = c->run.compile_rows = 1;
    } else if (strcmp(a, "--no-ingest") == 0) {
        c->no_ingest = 1;
    } else if (strcmp(a, "--json") == 0) {
        c->json = 1;
    } else if (strcmp(a, "--db") == 0) {
        if (cli_path(cmd, a, val) != 0)
            return -1;
        c->db = val;
    } else if (strcmp(a, "--results") == 0 || strcmp(a, "--out") == 0 ||
               strcmp(a, "--cache") == 0 || strcmp(a, "--kernels") == 0) {
        if (cli_path(cmd, a, val) != 0)
            return -1;
        const char **dst = a[2] == 'r' ? &c->run.out_root
                           : a[2] == 'o' ? &c->run.out_dir
                           : a[2] == 'c' ? &c->run.cache_dir
                                         : &c->run.kernels_dir;
        *dst = val;
    } else if (strcmp(a, "--rows") == 0) {
        c->rows = val;
    } else if (strcmp(a, "--cols") == 0) {
        c->cols = val;
    } else if (strcmp(a, "--device") == 0) {
        if (cli_int(cmd, a, val, 0, CLI_MAX_DEVICE, &n) != 0)
            return -1;
        c->run.device = (int)n;
    } else if (strcmp(a, "--seed") == 0) {
        return cli_u64(cmd, a, val, &c->run.seed);
    } else if (strcmp(a, "--watchdog") == 0) {
        return cli_double(cmd, a, val, 0, 86400, 1, "seconds", &c->run.watchdog_s);
    } else if (strcmp(a, "--retake-throttled") == 0) {
        if (cli_int(cmd, a, val, 0, 100, &n) != 0)
            return -1;
        c->run.retake_throttled = (int)n;
    } else if (strcmp(a, "--objective") == 0) {
        if (objective_parse(val, &c->run.objective) != 0)
            return fprintf(stderr, "tune %s: --objective: expected time, energy or edp, got '%s'\n",
                           cmd, val),
                   -1;
    } else if (strcmp(a, "--shard") == 0) {
        shard_spec sh;
        tune_error err = {0};
        if (shard_parse(val, &sh, &err) != TUNE_OK)
            return fprintf(stderr, "tune %s: --shard: %s\n", cmd, err.message), -1;
        c->run.shard_index = sh.index;
        c->run.shard_count = sh.count;
    } else if (strcmp(a, "--gpus") == 0) {
        if (cli_gpus(cmd, a, val) != 0)
            return -1;
        c->run.gpus = val;
    } else if (strcmp(a, "--read-bw") == 0) {
        double gbps;
        if (cli_double(cmd, a, val, 0, 1e6, 1, "GB/s", &gbps) != 0)
            return -1;
        c->run.read_bw = gbps * 1e9;
    } else if (strcmp(a, "--arch") == 0) {
        return cli_arch(cmd, a, val, &c->run.arch);
    } else {
        return apply_search_option(cmd, a, val, c);
    }
    return 0;
}

/* The arguments after the command's name: files, and the options the command accepts (mask).
 * 0: parsed; 1: --help was printed; -1: a usage error was printed. */
static int parse_args(int argc, char **argv, int first, const cmd_desc *cd, cli *c)
{
    run_options_init(&c->run);
    c->run.argc = argc;
    c->run.argv = argv;
    c->run.cache_dir = compile_default_cache_dir(c->cache, sizeof c->cache);
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            print_command_help(cd, stdout);
            return 1;
        }
        if (a[0] != '-' || strcmp(a, "-") == 0) {
            if (c->n_files == sizeof c->files / sizeof c->files[0])
                return fprintf(stderr, "tune %s: too many files\n", cd->name), -1;
            if (!a[0])
                return fprintf(stderr, "tune %s: an empty argument is not a file name\n",
                               cd->name),
                       -1;
            c->files[c->n_files++] = a;
            continue;
        }
        const opt_desc *o = find_option(a);
        if (!o || !(o->commands & cd->mask)) {
            char owners[256] = "";
            if (o)
                option_owners(o, owners, sizeof owners);
            fprintf(stderr, "tune %s: unknown option %s%s%s%s (tune %s --help lists the options)\n",
                    cd->name, a, o ? " (an option of " : "", owners, o ? ")" : "", cd->name);
            return -1;
        }
        const char *val = NULL;
        if (o->arg) {
            if (i + 1 >= argc)
                return fprintf(stderr, "tune %s: option %s needs a value (tune %s --help)\n",
                               cd->name, a, cd->name),
                       -1;
            val = argv[++i];
        }
        if (apply_option(cd->name, a, val, c) != 0)
            return -1;
    }
    return 0;
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
        if (!infile_is_dir(args[i])) {
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

/* The warning of an unusually large sweep (SPACE_LARGE_CONFIGS), unless a budget bounds what the
 * run compiles and measures. */
static void warn_if_large(const cli *c, const sweep *sw, const space *sp)
{
    size_t n = space_n_configs(sp);
    sweep_search set;
    tune_error err = {0};
    if (n <= SPACE_LARGE_CONFIGS ||
        (run_search_settings(sw, &c->run, &set, &err) == TUNE_OK &&
         (set.opt.budget_count > 0 || set.opt.budget_fraction > 0)))
        return;
    fprintf(stderr,
            "tune: warning: %s enumerates %zu configurations (more than %d): at 0.1 to 1 s each "
            "that is hours; search it under a budget (--search model --budget 2000), narrow the "
            "axes or add skip_if, or split it (--shard)\n",
            sw->file, n, SPACE_LARGE_CONFIGS);
}

/* `tune validate`: what a searched run of the sweep measures (into o under --json, else printed;
 * 0 when the run is not searched). 0, or -1 after a message. */
static int validate_search(const cli *c, const sweep *sw, const space *sp, json_t *o)
{
    tune_error err = {0};
    sweep_search set;
    size_t cands, base, measured;
    if (run_search_settings(sw, &c->run, &set, &err) != TUNE_OK)
        return fail(&err), -1;
    if (!sweep_search_on(&set))
        return 0;
    if (run_search_estimate(sw, sp, &set, &cands, &base, &measured, &err) != TUNE_OK)
        return fail(&err), -1;
    char budget[64];
    search_budget_format(&set.opt, budget, sizeof budget);
    if (o) {
        json_object_set_new(o, "search", json_string(search_strategy_name(set.opt.strategy)));
        json_object_set_new(o, "budget", json_string(budget));
        json_object_set_new(o, "measured", json_integer((json_int_t)measured));
        return 0;
    }
    printf("%s: searched: %s, budget %s: %zu of %zu configurations measured (%zu baselines, %zu "
           "of %zu candidates)\n",
           sw->file, search_strategy_name(set.opt.strategy), budget, measured, space_n_configs(sp),
           base, measured - base, cands);
    return 0;
}

/* One line of `tune validate --json`: o (stolen) printed compactly, keys in their order. */
static void print_json_line(json_t *o)
{
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
    if (text)
        printf("%s\n", text);
    free(text);
    json_decref(o);
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
            if (c->json) {
                char buf[4096];
                json_t *o = json_object();
                json_object_set_new(o, "file", json_string(c->files[i]));
                json_object_set_new(o, "ok", json_false());
                json_object_set_new(o, "error",
                                    json_string(tune_error_text(&err, buf, sizeof buf)));
                print_json_line(o);
            }
        } else if (c->json) {
            size_t by_family = space_n_pruned_family(sp);
            json_t *o = json_object();
            /* the name first: what a script reads (scripts/slurm/submit.sh) */
            json_object_set_new(o, "name", json_string(sw->name));
            json_object_set_new(o, "file", json_string(c->files[i]));
            json_object_set_new(o, "ok", json_true());
            json_object_set_new(o, "family", json_string(sw->family_name));
            json_object_set_new(o, "op", json_string(sw->op));
            json_object_set_new(o, "shapes", json_integer((json_int_t)space_n_shapes(sp)));
            json_object_set_new(o, "configs", json_integer((json_int_t)space_n_configs(sp)));
            json_object_set_new(o, "pruned_skip_if",
                                json_integer((json_int_t)(space_n_pruned(sp) - by_family)));
            json_object_set_new(o, "pruned_family", json_integer((json_int_t)by_family));
            json_object_set_new(o, "max_shards", json_integer(SHARD_MAX));
            if (validate_search(c, sw, sp, o) != 0) {
                rc = EXIT_FAILURE;
                json_object_set_new(o, "ok", json_false());
            }
            print_json_line(o);
        } else {
            warn_if_large(c, sw, sp);
            size_t by_family = space_n_pruned_family(sp);
            printf("%s: ok: %s/%s, %zu shapes, %zu configs (%zu pruned by skip_if", c->files[i],
                   sw->family_name, sw->op, space_n_shapes(sp), space_n_configs(sp),
                   space_n_pruned(sp) - by_family);
            if (sw->family_rules && sw->family->prune)
                printf(", %zu by %s", by_family,
                       sw->declared ? "CUDA's launch limits" : "the family's tile rules");
            printf(")\n");
            for (size_t r = 0; !c->run.quiet && r < space_n_family_rules(sp); r++) {
                size_t count = 0;
                const char *rule = space_family_rule(sp, r, &count);
                printf("  %10zu  %s\n", count, rule);
            }
            if (validate_search(c, sw, sp, NULL) != 0)
                rc = EXIT_FAILURE;
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

/* Adds the finished run of dir to the results store (docs/history.md). A store that refuses it
 * does not fail the command: the run is whole in its folder, and the message says how to add it
 * later. */
static void ingest_finished(const cli *c, const char *cmd, const char *dir)
{
    if (c->no_ingest)
        return;
    char path[PATH_MAX];
    db_default_path(c->db, c->run.out_root, path, sizeof path);
    tune_error err = {0};
    db_ingest_result r;
    db *d = db_open(path, &err);
    if (d && db_ingest(d, dir, NULL, &r, &err) == TUNE_OK) {
        if (!c->run.quiet)
            fprintf(stderr, "tune %s: run %s in the store %s (night %s)\n", cmd,
                    r.added ? "added" : "already", path, r.night);
    } else {
        char buf[4096];
        fprintf(stderr,
                "tune %s: warning: the run is whole in %s but was not added to the store: %s "
                "(`tune ingest %s --db %s` adds it)\n",
                cmd, dir, tune_error_text(&err, buf, sizeof buf), dir, path);
    }
    db_close(d);
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
    /* Everything `tune validate` checks (the enumeration's expressions included) comes before the
     * GPU is looked for, so that a broken sweep is named as such on a machine without one. */
    space *sp = space_build(sw, &err);
    if (!sp) {
        sweep_free(sw);
        return fail(&err);
    }
    if (!c->run.quiet)
        warn_if_large(c, sw, sp);
    c->run.space = sp; /* enumerated once */
    tune_status st = run_sweep(sw, &c->run, &sum, &err);
    space_free(sp);
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
    /* a shard's merge is the run the store keeps; a compile-only run has no timings */
    if (!c->run.compile_only && !c->run.shard_count)
        ingest_finished(c, "run", sum.out_dir);
    /* as `tune compile`: compiling is what --compile-only is for */
    return c->run.compile_only && sum.n_kernel_errors ? EXIT_FAILURE : EXIT_SUCCESS;
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
    int lock = outfile_mkdirs(c->files[0], &err) == TUNE_OK ? folder_lock(c->files[0], &err) : -1;
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
    if (sum.n_ok > 0) /* a merged compile-only run has nothing timed */
        ingest_finished(c, "merge", c->files[0]);
    return EXIT_SUCCESS;
}

static int cmd_report(cli *c)
{
    if (!c->n_files)
        return fprintf(stderr, "tune report: name at least one results folder\n"), EXIT_USAGE;
    /* a reader: the folders named are never written; the tables go to stdout and --out DIR */
    if (c->run.out_dir &&
        cli_out_apart("report", "--out", c->run.out_dir, c->files, c->n_files, 0) != 0)
        return EXIT_USAGE;
    tune_error err = {0};
    /* rows measured before the time model get its fields from the calibration (cmd_roofline.c) */
    if (report_rebuild_filled(c->files, c->n_files, c->rows, c->cols, c->run.out_dir,
                              c->run.quiet, c->run.objective, tune_report_fill,
                              (void *)(c->run.out_root ? c->run.out_root : "results"),
                              &err) != TUNE_OK)
        return fail(&err);
    return EXIT_SUCCESS;
}

static int cmd_devices(const cli *c)
{
    if (c->n_files)
        return fprintf(stderr, "tune devices: takes no arguments, got '%s'\n", c->files[0]),
               EXIT_USAGE;
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
    /* the families a sweep may name (tune_test, the tests' build, adds the fault-injection one) */
#ifdef TUNE_TEST_BUILD
    families_register_testing();
#else
    families_register_builtin();
#endif
    /* SIGINT, SIGTERM, SIGHUP: a clean stop with 128 + the signal (core/interrupt.h); first,
     * before any thread or child exists */
    if (interrupt_install() != 0)
        fprintf(stderr, "tune: warning: cannot handle SIGINT and SIGTERM: %s\n", strerror(errno));
    /* a closed stdout is an EPIPE error on write, seen by finish(), not a death by SIGPIPE
     * before the files are written */
    signal(SIGPIPE, SIG_IGN);
    return finish(dispatch(argc, argv));
}

/* The commands with their own parsing (tools/cmd_*.c). */
typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
} cmd_external;

static const cmd_external externals[] = {
    {"fit", tune_cmd_fit},
    {"dispatch", tune_cmd_dispatch},
    {"calibrate", tune_cmd_calibrate},
    {"roofline", tune_cmd_roofline},
    {"compare", tune_cmd_compare},
    {"replay", tune_cmd_replay},
    {"ingest", tune_cmd_ingest},
    {"history", tune_cmd_history},
    {"dashboard", tune_cmd_dashboard},
};

/* `tune help [COMMAND]`: the overview and every command's options, or one command's. */
static int cmd_help(int argc, char **argv)
{
    const char *only = argc > 2 ? argv[2] : NULL;
    int found = !only;
    if (!only)
        fputs(usage, stdout);
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (only && strcmp(only, commands[i].name) != 0)
            continue;
        found = 1;
        printf("%s", only ? "" : "\n");
        print_command_help(&commands[i], stdout);
    }
    for (size_t i = 0; i < sizeof externals / sizeof externals[0]; i++) {
        if (only && strcmp(only, externals[i].name) != 0)
            continue;
        found = 1;
        char *args[] = {(char *)externals[i].name, (char *)"--help", NULL};
        printf("%s", only ? "" : "\n");
        fflush(stdout);
        externals[i].fn(2, args);
    }
    if (!found)
        return fprintf(stderr, "tune help: unknown command '%s' (tune help lists them)\n", only),
               EXIT_USAGE;
    return EXIT_SUCCESS;
}

/* A first argument that names neither a command nor a sweep file: a mistyped command. */
static int looks_like_command(const char *a)
{
    struct stat sb;
    if (!a[0] || a[0] == '-' || strchr(a, '/') || strchr(a, '.') || stat(a, &sb) == 0)
        return 0;
    return 1;
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
        return cmd_help(argc, argv);
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        if (argc > 2)
            return fprintf(stderr, "tune %s: takes no arguments, got '%s'\n", cmd, argv[2]),
                   EXIT_USAGE;
        printf("tune %s (git %s)\n", TUNE_VERSION, TUNE_GIT_REV);
        return EXIT_SUCCESS;
    }
    for (size_t i = 0; i < sizeof externals / sizeof externals[0]; i++)
        if (strcmp(cmd, externals[i].name) == 0)
            return externals[i].fn(argc - 1, argv + 1);
    const cmd_desc *cd = NULL;
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            cd = &commands[i];
    if (!cd && looks_like_command(cmd))
        return fprintf(stderr, "tune: unknown command '%s' (tune help lists the commands)\n", cmd),
               EXIT_USAGE;
    cli c;
    memset(&c, 0, sizeof c);
    int rc = parse_args(argc, argv, cd ? 2 : 1, cd ? cd : &commands[0], &c);
    if (rc != 0)
        return rc > 0 ? EXIT_SUCCESS : EXIT_USAGE;
    switch (cd ? cd->mask : CMD_RUN) {
    case CMD_VALIDATE: return cmd_validate(&c);
    case CMD_COMPILE: return cmd_compile(&c);
    case CMD_REPORT: return cmd_report(&c);
    case CMD_MERGE: return cmd_merge(&c);
    case CMD_DEVICES: return cmd_devices(&c);
    default: return cmd_run(&c);
    }
}
