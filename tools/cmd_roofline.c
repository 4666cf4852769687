/* cmd_roofline.c - `tune calibrate` (measure a device's ceilings) and `tune roofline` (how far a
 * run's times are from the roofline model). docs/roofline.md. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "core/outfile.h"
#include "device/compile.h"
#include "device/gpu.h"
#include "model/family.h"
#include "store/meta.h"
#include "store/results.h"
#include "analysis/roofline_calibration.h"
#include "analysis/roofline_model.h"
#include "analysis/roofline_report.h"
#include "device/calibrate.h"
#include "cli.h"

int tune_cmd_calibrate(int argc, char **argv);
int tune_cmd_roofline(int argc, char **argv);
void tune_report_fill(void *ctx, result_row *rows, size_t n);

static const char calibrate_usage[] =
    "usage: tune calibrate [--device N] [--out FILE] [options]\n"
    "  measures the device's ceilings (read and copy bandwidth, cuBLAS GEMM rates, launch\n"
    "  overhead, DRAM latency) and writes them, with provenance, to\n"
    "  results/calibration/<device>.json\n"
    "  --device N      CUDA device ordinal (default 0)\n"
    "  --out FILE      calibration file to write (default ROOT/calibration/<device>.json)\n"
    "  --results ROOT  results root (default results)\n"
    "  --cache DIR     kernel cache folder (default $TUNE_CACHE_DIR or ~/.cache/tune)\n"
    "  --no-cache      compile everything, cache nothing\n"
    "  --kernels DIR   kernel sources (default: found beside the binary)\n"
    "  --specs FILE    GPU specs table to compare with (default data/gpus.json)\n"
    "  --quiet         print only the file written\n";

static const char roofline_usage[] =
    "usage: tune roofline RESULTS_DIR... [--calibration FILE] [options]\n"
    "  prints the roofline model's prediction error per method (geometric mean and worst of\n"
    "  max(roofline / measured, measured / roofline)); the folders read are never written\n"
    "  --out DIR           write roofline.json into DIR (created if missing)\n"
    "  --calibration FILE  measured ceilings (default ROOT/calibration/<device>.json when "
    "present)\n"
    "  --results ROOT      results root holding calibration/ (default results)\n"
    "  --specs FILE        GPU specs table (default data/gpus.json)\n"
    "  --quiet             no tables\n";

static int fail(const char *verb, const tune_error *err)
{
    char buf[4096];
    fprintf(stderr, "tune %s: %s\n", verb, tune_error_text(err, buf, sizeof buf));
    return err->code == TUNE_ERR_NO_GPU ? CLI_EXIT_NO_GPU : CLI_EXIT_FAILURE;
}

/* Value of option argv[*i] (advancing *i), or NULL after printing the usage. */
static const char *option_value(int argc, char **argv, int *i, const char *usage)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "tune %s: option %s needs a value\n%s", argv[0], argv[*i], usage);
        return NULL;
    }
    return argv[++*i];
}

static void print_comparison(const roofline_calibration *cal, const roofline_gpu *g)
{
    printf("\n| ceiling | measured | peak (%s) | measured / peak |\n|---|---|---|---|\n",
           g ? g->name : "not in data/gpus.json");
    const double peak_bw = g ? g->mem_bw : NAN;
    printf("| read bandwidth | %.0f GB/s | %.0f GB/s | %.3f |\n", cal->read_bw / 1e9, peak_bw / 1e9,
           cal->read_bw / peak_bw);
    printf("| copy bandwidth (read + written) | %.0f GB/s | %.0f GB/s | %.3f |\n",
           cal->copy_bw / 1e9, peak_bw / 1e9, cal->copy_bw / peak_bw);
    for (int p = 0; p < ROOFLINE_N_PRECISIONS; p++) {
        if (!isfinite(cal->gemm_rate[p]))
            continue;
        double peak = g ? g->flops[p] : NAN;
        printf("| GEMM %s (%d^3) | %.1f TFLOP/s | %.1f TFLOP/s | %.3f |\n",
               roofline_precision_str((roofline_precision)p), cal->gemm_n, cal->gemm_rate[p] / 1e12,
               peak / 1e12, cal->gemm_rate[p] / peak);
    }
    printf("| launch overhead | %.2f us | %.2f us (table) | |\n", cal->launch_s * 1e6,
           g ? g->launch_s * 1e6 : NAN);
    printf("| DRAM latency (dependent load) | %.3f us | | |\n", cal->latency_s * 1e6);
    printf("| grid floor (read probe, %u MiB, less its transfer) | %.2f us | | |\n",
           CALIBRATION_FLOOR_BYTES >> 20, cal->floor_s * 1e6);
}

int tune_cmd_calibrate(int argc, char **argv)
{
    calibrate_options opt = {0};
    const char *out = NULL, *root = "results", *specs_path = NULL;
    char cache[PATH_MAX];
    int quiet = 0;
    opt.cache_dir = compile_default_cache_dir(cache, sizeof cache);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (strcmp(a, "--no-cache") == 0) {
            opt.cache_dir = NULL;
        } else if (strcmp(a, "--quiet") == 0) {
            quiet = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(calibrate_usage, stdout);
            return CLI_EXIT_OK;
        } else if (strcmp(a, "--device") == 0 || strcmp(a, "--out") == 0 ||
                   strcmp(a, "--results") == 0 || strcmp(a, "--cache") == 0 ||
                   strcmp(a, "--kernels") == 0 || strcmp(a, "--specs") == 0) {
            if (!(v = option_value(argc, argv, &i, calibrate_usage)))
                return CLI_EXIT_USAGE;
            long long d;
            if (strcmp(a, "--device") == 0 ? cli_int("calibrate", a, v, 0, CLI_MAX_DEVICE, &d) != 0
                                           : cli_path("calibrate", a, v) != 0)
                return CLI_EXIT_USAGE;
            if (strcmp(a, "--device") == 0) {
                opt.device = (int)d;
            } else if (strcmp(a, "--out") == 0) {
                out = v;
            } else if (strcmp(a, "--results") == 0) {
                root = v;
            } else if (strcmp(a, "--cache") == 0) {
                opt.cache_dir = v;
            } else if (strcmp(a, "--kernels") == 0) {
                opt.kernels_dir = v;
            } else {
                specs_path = v;
            }
        } else {
            fprintf(stderr, "tune calibrate: unknown %s %s\n%s", a[0] == '-' ? "option" : "argument",
                    a, calibrate_usage);
            return CLI_EXIT_USAGE;
        }
    }
    tune_error err = {0};
    gpu_info gi;
    if (gpu_query(opt.device, &gi, &err) != TUNE_OK)
        return fail("calibrate", &err);
    if (!quiet) {
        fprintf(stderr, "tune calibrate: %s (device %d, sm_%d%d, %d SMs)\n", gi.name, opt.device,
                gi.cc_major, gi.cc_minor, gi.sm_count);
        opt.log = stderr;
    }
    roofline_calibration cal;
    if (calibrate_device(&opt, &cal, &err) != TUNE_OK)
        return fail("calibrate", &err);
    char path[PATH_MAX];
    if (!out)
        out = roofline_calibration_path(root, cal.device, path, sizeof path);
    if (roofline_calibration_save(out, &cal, &err) != TUNE_OK)
        return fail("calibrate", &err);
    if (!quiet) {
        tune_error serr = {0};
        roofline_specs *specs = roofline_specs_load(specs_path, &serr);
        char buf[4096];
        if (!specs)
            fprintf(stderr, "tune calibrate: no comparison with the specs table: %s\n",
                    tune_error_text(&serr, buf, sizeof buf));
        print_comparison(&cal, roofline_specs_match(specs, cal.device));
        roofline_specs_free(specs);
    }
    printf("%swrote %s\n", quiet ? "" : "\n", out);
    return CLI_EXIT_OK;
}

/* ---- tune report: the time model's fields of older rows ---- */

/* tune_report_fill's context: the results root of the calibration files (ctx: a const char *). */
typedef struct {
    char device[256];
    int looked; /* device looked up */
    int have;   /* device has a calibration file: c holds its ceilings */
    roofline_ceilings c;
} fill_ceilings;

/* The ceilings of a device's calibration file (gaps from the specs table), looked up once per
 * device in a row; a device without a calibration file: 0. */
static int ceilings_for(const char *root, const char *device, fill_ceilings *fc)
{
    if (fc->looked && strcmp(fc->device, device) == 0)
        return fc->have;
    snprintf(fc->device, sizeof fc->device, "%s", device);
    fc->looked = 1;
    fc->have = roofline_ceilings_find(root, device, &fc->c, NULL, 0) &&
               fc->c.origin == ROOFLINE_FROM_CALIBRATION;
    return fc->have;
}

/* Rows measured before the time model existed (no dram_bytes and model_time) get them, and "% of
 * measured read bandwidth" on the modelled DRAM traffic, from the families' traffic models and the
 * device's calibration file under the results root ctx (docs/roofline.md); rows that have them,
 * and rows of a device without a calibration, are left as they are. */
void tune_report_fill(void *ctx, result_row *rows, size_t n)
{
    fill_ceilings fc = {.looked = 0};
    for (size_t i = 0; i < n; i++) {
        result_row *r = &rows[i];
        if (r->status != RESULT_OK || isfinite(r->model_time) || !r->device ||
            !ceilings_for((const char *)ctx, r->device, &fc))
            continue;
        roofline_model_fill_row(family_find(r->family), &fc.c, r);
    }
}

/* ---- tune roofline ---- */

/* Device name of a results folder: meta.json's device.name, else the first row's device. */
static void folder_device(const char *dir, const result_row *rows, size_t n, char *buf, size_t size)
{
    json_t *meta = meta_load(dir, NULL);
    const char *name = meta_device_name(meta);
    for (size_t i = 0; !name && i < n; i++)
        name = rows[i].device;
    snprintf(buf, size, "%s", name ? name : "");
    json_decref(meta);
}

/* The dtype axis of the rows' family (model/family.h); "dtype" for a family tune does not know. */
static const char *rows_dtype_axis(const result_row *rows, size_t n)
{
    const tune_family *f = n ? family_find(rows[0].family) : NULL;
    return f ? f->dtype_axis : "dtype";
}

/* 1 when path exists (opened by nothing: the loader refuses a FIFO or a device). */
static int file_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* The calibration file for a device: ROOT/calibration/<slug>.json, else the one beside the
 * folder's sweep folder (DIR/../../calibration/<slug>.json). */
static const char *find_calibration(const char *root, const char *dir, const char *device,
                                    char *buf, size_t size)
{
    roofline_calibration_path(root, device, buf, size);
    if (file_exists(buf))
        return buf;
    char alt[PATH_MAX + 16];
    snprintf(alt, sizeof alt, "%s/../..", dir);
    roofline_calibration_path(alt, device, buf, size);
    return file_exists(buf) ? buf : NULL;
}

static void print_ceilings(const char *label, const roofline_ceilings *c)
{
    printf("- %s: read %.0f GB/s, copy %.0f GB/s, GEMM fp16 %.0f / bf16 %.0f / tf32 %.0f / fp32 "
           "%.1f TFLOP/s, launch %.2f us",
           label, c->read_bw / 1e9, c->copy_bw / 1e9, c->rate[ROOFLINE_FP16] / 1e12,
           c->rate[ROOFLINE_BF16] / 1e12, c->rate[ROOFLINE_TF32] / 1e12,
           c->rate[ROOFLINE_FP32] / 1e12, c->launch_s * 1e6);
    if (isfinite(c->latency_s))
        printf(", DRAM latency %.3f us", c->latency_s * 1e6);
    if (isfinite(c->floor_s))
        printf(", grid floor %.2f us", c->floor_s * 1e6);
    if (isfinite(c->gather_elem_s))
        printf(", gather element %.3f ps", c->gather_elem_s * 1e12);
    if (isfinite(c->gather_elem_t_s) && isfinite(c->gather_elem_t_dram_s))
        printf(" (B transposed %.3f ps, %.3f ps from a B the L2 cannot hold)",
               c->gather_elem_t_s * 1e12, c->gather_elem_t_dram_s * 1e12);
    else if (isfinite(c->gather_elem_t_s))
        printf(" (B transposed %.3f ps)", c->gather_elem_t_s * 1e12);
    if (isfinite(c->sector_bw))
        printf(", random sectors %.0f GB/s", c->sector_bw / 1e9);
    if (c->sm_count > 0)
        printf(", %d SMs", c->sm_count);
    if (c->l2_bytes > 0)
        printf(", L2 %.0f MiB", c->l2_bytes / 1048576.0);
    if (isfinite(c->fetch_bytes))
        printf(", DRAM fetch %.0f B", c->fetch_bytes);
    printf("\n");
    /* a calibration from before these ceilings: the time model falls back, and says how */
    if (c->origin == ROOFLINE_FROM_CALIBRATION && !isfinite(c->sector_bw))
        printf("  - no random-sector rate in the calibration: the time model prices random "
               "re-fetched sectors at the read bandwidth\n");
    if (!isfinite(c->fetch_bytes))
        printf("  - no DRAM fetch granularity (dram_fetch) in the %s: the traffic models count "
               "gathered bytes in 32-byte sectors\n",
               c->origin == ROOFLINE_FROM_CALIBRATION ? "calibration" : "specs table");
    if (c->origin == ROOFLINE_FROM_CALIBRATION && isfinite(c->gather_elem_s) &&
        !isfinite(c->gather_elem_t_s))
        printf("  - no transposed gather probe in the calibration: the time model prices the "
               "transposed gather's elements at the gather element's time\n");
    if (c->origin == ROOFLINE_FROM_CALIBRATION && isfinite(c->gather_elem_t_s) &&
        !isfinite(c->gather_elem_t_dram_s))
        printf("  - no DRAM-resident transposed gather probe (gather_element_transposed_dram) in "
               "the calibration: the time model prices the transposed gather's elements at the "
               "L2-resident probe's time, whatever the size of B\n");
}

/* The additive time model of every row (analysis/roofline_model.h): pred[i] and terms[i]. A
 * traffic model that cannot be evaluated at a row is an error naming the row's line. */
static tune_status predict_model(const roofline_ceilings *c, const char *path,
                                 const result_row *rows, size_t n, double *pred,
                                 roofline_terms *terms, tune_error *err)
{
    for (size_t i = 0; i < n; i++) {
        const tune_family *f = family_find(rows[i].family);
        roofline_traffic t;
        tune_error e = {0};
        if (roofline_traffic_eval(f, &rows[i], c, &t, &e) != TUNE_OK) {
            char where[PATH_MAX + 64];
            snprintf(where, sizeof where, "%s:%zu", path, i + 1);
            return tune_error_set(err, e.code, where, "%s", e.message);
        }
        pred[i] = roofline_model_time(
            c, &t, roofline_row_precision(&rows[i], f ? f->dtype_axis : "dtype"), &terms[i]);
    }
    return TUNE_OK;
}

/* "family op" of a folder's rows. */
static void rows_op(const result_row *rows, size_t n, char *buf, size_t size)
{
    snprintf(buf, size, "%s %s", n && rows[0].family ? rows[0].family : "?",
             n && rows[0].op ? rows[0].op : "?");
}

typedef struct {
    const char *dirs[256];
    size_t n_dirs;
    const char *calibration, *root, *specs, *out;
    int quiet;
} roofline_cli;

/* One folder's rows and the buffers their predictions go to. */
typedef struct {
    const char *dir, *path, *device;
    const result_row *rows;
    size_t n;
    double *pred;
    roofline_bound *bound;
    roofline_terms *terms;
} folder_rows;

/* The calibrated roofline and the time model of one folder's rows, added to the report. */
static tune_status add_calibrated(const roofline_cli *c, const folder_rows *f,
                                  const roofline_calibration *cal, const char *cal_file,
                                  const roofline_gpu *g, roofline_report *rep, tune_error *err)
{
    roofline_ceilings ceil;
    roofline_ceilings_from_calibration(cal, g, &ceil);
    roofline_predict_rows(&ceil, f->rows, f->n, rows_dtype_axis(f->rows, f->n), f->pred, f->bound);
    tune_status st = roofline_report_add(rep, "calibrated", f->dir, f->device, &ceil, f->rows, f->n,
                                         f->pred, f->bound, err);
    if (!c->quiet) {
        char label[PATH_MAX + 128];
        snprintf(label, sizeof label, "calibrated (%s, %s)", cal_file, cal->date);
        print_ceilings(label, &ceil);
    }
    char op[512];
    rows_op(f->rows, f->n, op, sizeof op);
    if (st == TUNE_OK)
        st = predict_model(&ceil, f->path, f->rows, f->n, f->pred, f->terms, err);
    if (st == TUNE_OK)
        st = roofline_report_add_model(rep, "calibrated", f->dir, f->device, op, &ceil, f->rows,
                                       f->n, f->pred, f->terms, err);
    return st;
}

/* Predicts the rows of one folder with each model that applies; adds them to the report and a
 * description to inputs. */
static tune_status add_folder(const roofline_cli *c, const roofline_specs *specs, const char *dir,
                              roofline_report *rep, json_t *inputs, tune_error *err)
{
    char path[PATH_MAX + 16], device[256], calpath[PATH_MAX + 64];
    results_rows read = {0};
    /* meta.json checked as `tune report` does; each folder is predicted on its own */
    tune_status st = meta_check_folders(&dir, 1, NULL, err);
    if (st == TUNE_OK)
        st = results_locate(dir, path, sizeof path, err);
    if (st == TUNE_OK)
        st = results_read(path, &read, err);
    if (st != TUNE_OK)
        return st;
    const result_row *rows = read.rows;
    size_t n = read.n;
    folder_device(dir, rows, n, device, sizeof device);
    const roofline_gpu *g = roofline_specs_match(specs, device);
    const char *cal_file = c->calibration
                               ? c->calibration
                               : find_calibration(c->root, dir, device, calpath, sizeof calpath);
    roofline_calibration cal;
    int have_cal = 0;
    if (cal_file) {
        if ((st = roofline_calibration_load(cal_file, &cal, err)) != TUNE_OK)
            goto done;
        have_cal = 1;
        char a[256], b[256];
        if (strcmp(roofline_device_slug(cal.device, a, sizeof a),
                   roofline_device_slug(device, b, sizeof b)) != 0)
            fprintf(stderr,
                    "tune roofline: warning: %s is a calibration of %s, the results of %s are "
                    "from %s\n",
                    cal_file, cal.device, dir, device[0] ? device : "an unknown device");
    }
    if (!have_cal && !g) {
        st = tune_error_set(
            err, TUNE_ERR_INVALID, dir,
            "no ceilings for device '%s': it is not in the specs table "
            "(data/gpus.json) and has no calibration file (run tune calibrate on it)",
            device);
        goto done;
    }
    double *pred = malloc((n ? n : 1) * sizeof *pred);
    roofline_bound *bound = malloc((n ? n : 1) * sizeof *bound);
    roofline_terms *terms = malloc((n ? n : 1) * sizeof *terms);
    if (!pred || !bound || !terms) {
        free(pred);
        free(bound);
        free(terms);
        st = tune_error_set(err, TUNE_ERR_NOMEM, "roofline", "out of memory");
        goto done;
    }
    json_t *in =
        json_pack("{s:s, s:s, s:I, s:o, s:o}", "dir", dir, "device", device, "rows", (json_int_t)n,
                  "calibration", have_cal ? json_string(cal_file) : json_null(), "specs",
                  g ? json_string(g->name) : json_null());
    json_array_append_new(inputs, in);
    if (!c->quiet)
        printf("\n%s (%s), %zu rows:\n", dir, device, n);
    roofline_ceilings ceil;
    if (have_cal) {
        folder_rows fr = {dir, path, device, rows, n, pred, bound, terms};
        st = add_calibrated(c, &fr, &cal, cal_file, g, rep, err);
    }
    if (st == TUNE_OK && g) {
        roofline_ceilings_from_gpu(g, &ceil);
        roofline_predict_rows(&ceil, rows, n, rows_dtype_axis(rows, n), pred, bound);
        st = roofline_report_add(rep, "datasheet", dir, device, &ceil, rows, n, pred, bound, err);
        if (!c->quiet) {
            char label[512];
            snprintf(label, sizeof label, "datasheet (%s x achievable %.2f memory, %.2f matmul)",
                     g->name, g->frac_memory, g->frac_matmul);
            print_ceilings(label, &ceil);
        }
    }
    free(pred);
    free(bound);
    free(terms);
done:
    results_rows_free(&read);
    return st;
}

/* roofline.json into --out (argv, the definitions, the inputs: stolen; the report's groups) and,
 * unless --quiet, the report's tables. */
static tune_status write_report(const roofline_cli *c, int argc, char **argv,
                                const roofline_report *rep, json_t *inputs, tune_error *err)
{
    tune_status st = TUNE_OK;
    json_t *extra = json_object();
    json_t *av = json_array();
    for (int i = 0; i < argc; i++)
        json_array_append_new(av, json_string(argv[i]));
    json_object_set_new(extra, "schema_version", json_integer(1));
    json_object_set_new(extra, "tool",
                        json_pack("{s:s, s:s}", "name", "tune", "version", TUNE_VERSION));
    json_object_set_new(extra, "argv", av);
    json_object_set_new(extra, "definitions",
                        json_pack("{s:s, s:s, s:s, s:s}", "roofline_time",
                                  "max(bytes / max(read_bw, copy_bw), flops / rate[dtype], "
                                  "launch_overhead_s)",
                                  "model_time",
                                  "launches * launch_overhead_s + chain * dram_latency_s + "
                                  "max(dram / read_bw, flops / rate[precision]) (the op's "
                                  "traffic model for the row's method)",
                                  "error",
                                  "max(roofline_time / time_median, time_median / "
                                  "roofline_time); gmean and worst over the group's rows",
                                  "best", "the fastest ok row of each shape, per method"));
    json_object_set_new(extra, "inputs", inputs);
    char *text = json_dumps(extra, JSON_PRESERVE_ORDER);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/roofline.json", c->out ? c->out : "");
    /* the file first: a reader that closes stdout early (| head) costs no file */
    if (!text)
        st = tune_error_set(err, TUNE_ERR_NOMEM, "roofline", "out of memory");
    else if (c->out && (st = outfile_mkdirs(c->out, err)) == TUNE_OK)
        st = roofline_report_write_json(rep, path, text, err);
    free(text);
    if (st == TUNE_OK && !c->quiet) {
        printf("\n");
        roofline_report_write_markdown(rep, stdout);
        if (c->out)
            printf("\nwrote %s\n", path);
    }
    json_decref(extra);
    return st;
}

/* `tune roofline`: options, then every folder's rows against the model, then the report. */
int tune_cmd_roofline(int argc, char **argv)
{
    roofline_cli c = {.root = "results"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (strcmp(a, "--quiet") == 0) {
            c.quiet = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(roofline_usage, stdout);
            return CLI_EXIT_OK;
        } else if (strcmp(a, "--calibration") == 0 || strcmp(a, "--results") == 0 ||
                   strcmp(a, "--specs") == 0 || strcmp(a, "--out") == 0) {
            if (!(v = option_value(argc, argv, &i, roofline_usage)) ||
                cli_path("roofline", a, v) != 0)
                return CLI_EXIT_USAGE;
            if (strcmp(a, "--out") == 0)
                c.out = v;
            else if (strcmp(a, "--calibration") == 0)
                c.calibration = v;
            else if (strcmp(a, "--results") == 0)
                c.root = v;
            else
                c.specs = v;
        } else if (a[0] == '-') {
            fprintf(stderr, "tune roofline: unknown option %s\n%s", a, roofline_usage);
            return CLI_EXIT_USAGE;
        } else if (c.n_dirs == sizeof c.dirs / sizeof c.dirs[0]) {
            fprintf(stderr, "tune roofline: too many folders\n");
            return CLI_EXIT_USAGE;
        } else {
            c.dirs[c.n_dirs++] = a;
        }
    }
    if (!c.n_dirs) {
        fprintf(stderr, "tune roofline: name at least one results folder\n%s", roofline_usage);
        return CLI_EXIT_USAGE;
    }
    if (c.out && cli_out_apart("roofline", "--out", c.out, c.dirs, c.n_dirs, 0) != 0)
        return CLI_EXIT_USAGE;
    tune_error err = {0};
    roofline_specs *specs = roofline_specs_load(c.specs, &err);
    if (!specs)
        return fail("roofline", &err);
    roofline_report *rep = roofline_report_new();
    json_t *inputs = json_array();
    tune_status st =
        rep ? TUNE_OK : tune_error_set(&err, TUNE_ERR_NOMEM, "roofline", "out of memory");
    if (!c.quiet && st == TUNE_OK)
        printf("# Roofline prediction error\n\nroofline time = max(bytes / bandwidth, FLOPs / "
               "rate(dtype), launch overhead); time model = launches x grid floor (else launch "
               "overhead) + chain x DRAM latency + max(modelled DRAM bytes / read bandwidth, "
               "FLOPs / rate) + max(elements x seconds per gathered element, their bytes / read "
               "bandwidth) for an issue-bound step (calibrated ceilings; the op's traffic model "
               "over the problem axes and the device's SM count and L2 size); error = "
               "max(predicted / measured, measured / predicted); \"best\" = the fastest row of "
               "each shape.\n\nCeilings:\n");
    for (size_t d = 0; d < c.n_dirs && st == TUNE_OK; d++)
        st = add_folder(&c, specs, c.dirs[d], rep, inputs, &err);
    if (st == TUNE_OK) {
        st = write_report(&c, argc, argv, rep, inputs, &err);
        inputs = NULL;
    }
    json_decref(inputs);
    roofline_report_free(rep);
    roofline_specs_free(specs);
    return st == TUNE_OK ? CLI_EXIT_OK : fail("roofline", &err);
}
