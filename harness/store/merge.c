#include "store/merge.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/hash.h"
#include "core/infile.h"
#include "core/outfile.h"
#include "model/shard.h"
#include "model/space.h"
#include "model/sweep.h"
#include "store/folder.h"

typedef struct {
    const char *dir;
    json_t *meta; /* new */
    meta_shard shard;
    results_rows rows;
    char rows_path[PATH_MAX + 16]; /* its raw.jsonl or raw.jsonl.gz (results_locate) */
} merge_part;

typedef struct {
    char text[2048];
    size_t n;
} merge_problems;

static void problem(merge_problems *pb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void problem(merge_problems *pb, const char *fmt, ...)
{
    size_t len = strlen(pb->text);
    if (pb->n++ == 8) {
        snprintf(pb->text + len, sizeof pb->text - len, "; ...");
        return;
    }
    if (pb->n > 8 || len + 4 >= sizeof pb->text)
        return;
    if (len)
        len += (size_t)snprintf(pb->text + len, sizeof pb->text - len, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pb->text + len, sizeof pb->text - len, fmt, ap);
    va_end(ap);
}

static void problem_text(void *ctx, const char *text)
{
    problem(ctx, "%s", text);
}

static void part_load(merge_part *pt, merge_problems *pb)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/meta.json", pt->dir);
    json_error_t je;
    pt->meta = meta_load(pt->dir, &je);
    if (!pt->meta) {
        problem(pb, "%s: not a results folder (%s)", pt->dir,
                access(path, F_OK) == 0 ? je.text : "no meta.json");
        return;
    }
    const char *why = NULL;
    if (meta_shard_read(pt->meta, &pt->shard, &why) != 0) {
        if (strcmp(why, "not a shard") == 0)
            problem(pb, "%s: not a shard (meta.json has no 'shard': run it with --shard I/N)",
                    pt->dir);
        else
            problem(pb, "%s: meta.json's 'shard' is incomplete", pt->dir);
        return;
    }
    tune_error e = {0};
    if (results_locate(pt->dir, pt->rows_path, sizeof pt->rows_path, &e) != TUNE_OK) {
        char buf[2600];
        problem(pb, "shard %zu/%zu: %s", pt->shard.index, pt->shard.count,
                tune_error_text(&e, buf, sizeof buf));
    } else if (access(pt->rows_path, F_OK) == 0 &&
               results_read(pt->rows_path, &pt->rows, &e) != TUNE_OK) {
        char buf[2600];
        problem(pb, "shard %zu/%zu: %s (resume it with --resume)", pt->shard.index, pt->shard.count,
                tune_error_text(&e, buf, sizeof buf));
    }
}

typedef struct {
    char *id;
    size_t part;
} merge_id;

static int id_cmp(const void *a, const void *b)
{
    return strcmp(((const merge_id *)a)->id, ((const merge_id *)b)->id);
}

static void check_rows(merge_part *parts, size_t n, merge_problems *pb)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += parts[i].rows.n;
    merge_id *ids = calloc(total ? total : 1, sizeof *ids);
    size_t k = 0;
    for (size_t i = 0; ids && i < n; i++)
        for (size_t r = 0; r < parts[i].rows.n; r++) {
            char buf[4096];
            const result_row *row = &parts[i].rows.rows[r];
            ids[k++] = (merge_id){strdup(results_row_identity(row, buf, sizeof buf)), i};
        }
    if (!ids) {
        problem(pb, "out of memory");
        return;
    }
    qsort(ids, k, sizeof *ids, id_cmp);
    size_t dups = 0;
    for (size_t j = 1; j < k; j++)
        if (ids[j].id && ids[j - 1].id && strcmp(ids[j].id, ids[j - 1].id) == 0 && dups++ < 3) {
            const merge_part *a = &parts[ids[j - 1].part], *b = &parts[ids[j].part];
            problem(pb, "configuration %s has two rows (shard %zu/%zu %s, shard %zu/%zu %s)",
                    ids[j].id, a->shard.index, a->shard.count, a->dir, b->shard.index,
                    b->shard.count, b->dir);
        }
    if (dups > 3)
        problem(pb, "%zu configurations have more than one row", dups);
    for (size_t j = 0; j < k; j++)
        free(ids[j].id);
    free(ids);
}

/* Appends the lines of path (plain or gzipped: folder_lines), each ending with '\n', to out. */
static tune_status copy_lines(FILE *out, const char *path, tune_error *err)
{
    folder_lines *in = folder_lines_open(path, INFILE_MAX_ROWS, INFILE_MAX_JSON, err);
    if (!in)
        return err ? err->code : TUNE_ERR_IO;
    char *line;
    size_t len = 0;
    tune_status st;
    while ((st = folder_lines_next(in, &line, &len, NULL, err)) == TUNE_OK && line)
        if (fwrite(line, 1, len, out) != len || fputc('\n', out) == EOF) {
            st = tune_error_set(err, TUNE_ERR_IO, path, "cannot copy");
            break;
        }
    folder_lines_close(in);
    return st;
}

/* Writes the concatenation of the parts' name files (each part's plain or gzipped one:
 * folder_locate) into out_dir/name, plain, replaced atomically; removes it when no part has
 * one. */
static tune_status merge_file(const char *out_dir, merge_part *parts, size_t n, const char *name,
                              tune_error *err)
{
    typedef char src_path[PATH_MAX + 64];
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", out_dir, name);
    src_path *src = calloc(n + 1, sizeof *src); /* each part's file, "" when it has none */
    if (!src)
        return tune_error_set(err, TUNE_ERR_NOMEM, "merge", "out of memory");
    int any = 0;
    tune_status st = TUNE_OK;
    for (size_t i = 0; i < n && st == TUNE_OK; i++)
        if ((st = folder_locate(parts[i].dir, name, src[i], sizeof src[i], err)) == TUNE_OK) {
            if (access(src[i], F_OK) != 0)
                src[i][0] = '\0';
            any |= src[i][0] != '\0';
        }
    if (st != TUNE_OK || !any) {
        if (st == TUNE_OK)
            unlink(path);
        free(src);
        return st;
    }
    outfile *o = outfile_open(path, err);
    for (size_t i = 0; o && i < n && st == TUNE_OK; i++)
        if (src[i][0])
            st = copy_lines(outfile_stream(o), src[i], err);
    free(src);
    if (!o)
        return TUNE_ERR_IO;
    if (st != TUNE_OK) {
        outfile_abort(o);
        return st;
    }
    return outfile_commit(o, err);
}

static int part_cmp(const void *a, const void *b)
{
    const merge_part *x = a, *y = b;
    return x->shard.index < y->shard.index ? -1 : x->shard.index > y->shard.index;
}

/* Every part against the first (sorted by index): the same sweep, plan, key and settings. */
static void check_same_run(const merge_part *parts, size_t n, merge_problems *pb)
{
    const merge_part *ref = &parts[0];
    const char *name = meta_sweep_name(ref->meta);
    name = name ? name : "";
    for (size_t i = 1; i < n; i++) {
        const merge_part *p = &parts[i];
        const char *pn = meta_sweep_name(p->meta);
        pn = pn ? pn : "";
        if (strcmp(pn, name) != 0) {
            problem(pb, "%s is a shard of sweep '%s', %s of '%s'", p->dir, pn, ref->dir, name);
        } else if (p->shard.count != ref->shard.count) {
            problem(pb, "%s is a shard of %zu, %s of %zu", p->dir, p->shard.count, ref->dir,
                    ref->shard.count);
        } else if (strcmp(p->shard.plan, ref->shard.plan) != 0 ||
                   p->shard.total_configs != ref->shard.total_configs) {
            problem(pb,
                    "%s and %s were planned differently (plan %s, %s): another version of "
                    "the sweep file or of tune",
                    p->dir, ref->dir, p->shard.plan, ref->shard.plan);
        } else {
            char a[PATH_MAX + 64], b[PATH_MAX + 64];
            snprintf(a, sizeof a, "shard %zu/%zu", ref->shard.index, ref->shard.count);
            snprintf(b, sizeof b, "shard %zu/%zu (%s)", p->shard.index, p->shard.count, p->dir);
            meta_compare_keys(ref->meta, p->meta, a, b, problem_text, pb);
        }
        if (!meta_same_settings(ref->meta, p->meta))
            problem(pb, "%s and %s were measured with other timing settings or byte/FLOP models",
                    p->dir, ref->dir);
        char sa[1024], sb[1024];
        meta_search_settings(ref->meta, sa, sizeof sa);
        meta_search_settings(p->meta, sb, sizeof sb);
        if (strcmp(sa, sb) != 0)
            problem(pb,
                    "%s and %s were searched differently (%s: %s; %s: %s): the shards of one run "
                    "share their search settings (run every shard with the same --search, "
                    "--budget, --search-seed and --warm-start)",
                    ref->dir, p->dir, ref->dir, sa, p->dir, sb);
    }
}

/* Every shard exactly once and complete, no configuration twice. */
static void check_complete(merge_part *parts, size_t n, merge_problems *pb)
{
    size_t count = parts[0].shard.count;
    char missing[1024] = "";
    size_t twice = 0;
    for (size_t s = 0, i = 0; s < count; s++) {
        size_t seen = 0;
        const char *first = NULL;
        for (; i < n && parts[i].shard.index == s; i++, seen++)
            if (seen == 0)
                first = parts[i].dir;
            else if (++twice)
                problem(pb, "shard %zu/%zu is given twice (%s, %s)", s, count, first, parts[i].dir);
        size_t len = strlen(missing);
        if (!seen && len + 16 < sizeof missing)
            snprintf(missing + len, sizeof missing - len, "%s%zu/%zu", len ? ", " : "", s, count);
    }
    if (missing[0])
        problem(pb, "missing shards: %s", missing);
    for (size_t i = 0; i < n; i++)
        if (meta_search_block(parts[i].meta)) { /* searched: only what it chose has a row */
            if (!meta_search_finished(parts[i].meta))
                problem(pb,
                        "searched shard %zu/%zu (%s) is not finished: resume it (--shard %zu/%zu "
                        "--out %s --resume, with its search options)",
                        parts[i].shard.index, count, parts[i].dir, parts[i].shard.index, count,
                        parts[i].dir);
        } else if (parts[i].rows.n != parts[i].shard.configs)
            problem(pb,
                    "shard %zu/%zu (%s) is incomplete: %zu of its %zu configurations have a row; "
                    "resume it (--shard %zu/%zu --out %s --resume)",
                    parts[i].shard.index, count, parts[i].dir, parts[i].rows.n,
                    parts[i].shard.configs, parts[i].shard.index, count, parts[i].dir);
    if (!twice) /* a shard given twice has every row twice: said once above */
        check_rows(parts, n, pb);
}

/* ---- every row in its shard's plan ---- */

/* A configuration of the plan: its identity's hash (core/hash.h over point_identity) and shard. */
typedef struct {
    uint64_t id;
    size_t shard;
} plan_entry;

static int plan_entry_cmp(const void *a, const void *b)
{
    uint64_t x = ((const plan_entry *)a)->id, y = ((const plan_entry *)b)->id;
    return (x > y) - (x < y);
}

/* The plan of ref's sweep (meta.json's sweep.source, the sweep file as it was run) over its shard
 * count, rebuilt as every shard computed it, checked against the plan's hash recorded in
 * meta.json; its configurations sorted by identity hash (new), or NULL with a problem added. */
static plan_entry *plan_entries(const merge_part *ref, size_t *n, merge_problems *pb)
{
    json_t *src = json_object_get(json_object_get(ref->meta, "sweep"), "source");
    if (!json_is_object(src)) {
        problem(pb,
                "%s/meta.json has no sweep.source (written before schema 2): its rows cannot be "
                "checked against the shard plan",
                ref->dir);
        return NULL;
    }
    char label[PATH_MAX + 64], buf[2600];
    snprintf(label, sizeof label, "%s/meta.json: $.sweep.source", ref->dir);
    char *text = json_dumps(src, JSON_PRESERVE_ORDER);
    tune_error e = {0};
    sweep *sw = text ? sweep_parse(text, label, &e) : NULL;
    space *sp = sw ? space_build(sw, &e) : NULL;
    shard_plan *plan = sp ? shard_plan_build(sw, sp, ref->shard.count, &e) : NULL;
    plan_entry *pe = NULL;
    *n = plan ? space_n_configs(sp) : 0;
    if (!plan)
        problem(pb, "%s", text ? tune_error_text(&e, buf, sizeof buf) : "out of memory");
    else if (strcmp(shard_plan_hash(plan), ref->shard.plan) != 0)
        problem(pb, "%s/meta.json: its sweep's plan is %s, not the recorded %s", ref->dir,
                shard_plan_hash(plan), ref->shard.plan);
    else if (!(pe = calloc(*n ? *n : 1, sizeof *pe)))
        problem(pb, "out of memory");
    for (size_t i = 0; pe && i < *n; i++) {
        char id[4096];
        space_config_identity(sw, sp, i, id, sizeof id);
        pe[i] = (plan_entry){hash_fnv1a_str(HASH_FNV_OFFSET, id), shard_plan_owner(plan, i)};
    }
    if (pe)
        qsort(pe, *n, sizeof *pe, plan_entry_cmp);
    shard_plan_free(plan);
    space_free(sp);
    sweep_free(sw);
    free(text);
    return pe;
}

/* The line of raw.jsonl (or raw.jsonl.gz) that holds row r (results_read skips blank lines). */
static size_t row_line(const char *path, size_t r)
{
    folder_lines *in = folder_lines_open(path, INFILE_MAX_ROWS, INFILE_MAX_JSON, NULL);
    char *line;
    size_t lineno = 0, seen = 0;
    while (in && folder_lines_next(in, &line, NULL, &lineno, NULL) == TUNE_OK && line)
        if (line[strspn(line, " \t\r")] != '\0' && seen++ == r)
            break;
    folder_lines_close(in);
    return lineno;
}

/* Every row of every shard is a configuration of the plan, and of its own shard. */
static void check_plan(merge_part *parts, size_t n, merge_problems *pb)
{
    size_t n_entries = 0;
    plan_entry *pe = plan_entries(&parts[0], &n_entries, pb);
    for (size_t i = 0; pe && i < n; i++) {
        const char *path = parts[i].rows_path;
        for (size_t r = 0; r < parts[i].rows.n; r++) {
            char id[4096];
            results_row_identity(&parts[i].rows.rows[r], id, sizeof id);
            plan_entry key = {hash_fnv1a_str(HASH_FNV_OFFSET, id), 0};
            const plan_entry *e = bsearch(&key, pe, n_entries, sizeof *pe, plan_entry_cmp);
            if (!e)
                problem(pb, "%s:%zu: configuration %s is not in the sweep's plan", path,
                        row_line(path, r), id);
            else if (e->shard != parts[i].shard.index)
                problem(pb, "%s:%zu: configuration %s is shard %zu/%zu's, not shard %zu/%zu's",
                        path, row_line(path, r), id, e->shard, parts[i].shard.count,
                        parts[i].shard.index, parts[i].shard.count);
        }
    }
    free(pe);
}

/* The merged folder may be new, empty, hold other files (a --gpus run's shards/, a log), or hold
 * an earlier merge of the same shards (the same plan and count: merged again after a shard was
 * resumed); a folder that holds anything else of a run (an ordinary run's rows or meta.json, a
 * merge of another plan) is refused, so a merge never replaces a measured run. */
static void check_out_dir(const char *out_dir, const merge_part *ref, merge_problems *pb)
{
    static const char *const gzipped[] = {"raw.jsonl.gz", "retime.jsonl.gz"};
    static const char *const names[] = {"meta.json", "raw.jsonl", "retime.jsonl"};
    char path[PATH_MAX + 32];
    const char *found = NULL;
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", out_dir, gzipped[i]);
        if (access(path, F_OK) == 0) /* the merge would write a plain file beside it */
            problem(pb,
                    "%s holds %s, and a merge writes a plain %.*s: gunzip it first, or merge "
                    "into a new folder",
                    out_dir, gzipped[i], (int)(strlen(gzipped[i]) - 3), gzipped[i]);
    }
    for (size_t i = 0; i < 3 && !found; i++) {
        snprintf(path, sizeof path, "%s/%s", out_dir, names[i]);
        if (access(path, F_OK) == 0)
            found = names[i];
    }
    if (!found)
        return;
    json_t *meta = meta_load(out_dir, NULL);
    const char *plan = NULL;
    size_t count = 0;
    if (!meta || !meta_merged_plan(meta, &plan, &count))
        problem(pb,
                "%s already holds %s, which is not an earlier merge of these shards; merge into a "
                "new folder (a merge never replaces a run)",
                out_dir, meta ? "a run that is not a merge" : found);
    else if (count != ref->shard.count || strcmp(plan, ref->shard.plan) != 0)
        problem(pb,
                "%s already holds a merge of other shards (plan %s of %zu shards, these are plan "
                "%s of %zu); merge into a new folder",
                out_dir, plan, count, ref->shard.plan, ref->shard.count);
    json_decref(meta);
}

static tune_status write_merged(const char *out_dir, merge_part *parts, size_t n,
                                const merge_options *opt, run_summary *sum, tune_error *err)
{
    sum->n_configs = parts[0].shard.total_configs;
    sum->n_pruned = meta_pruned(parts[0].meta);
    for (size_t i = 0; i < n; i++)
        for (size_t r = 0; r < parts[i].rows.n; r++)
            meta_count_status(sum, parts[i].rows.rows[r].status);
    snprintf(sum->out_dir, sizeof sum->out_dir, "%s", out_dir);
    tune_status st;
    if ((st = outfile_mkdirs(out_dir, err)) != TUNE_OK ||
        (st = merge_file(out_dir, parts, n, "raw.jsonl", err)) != TUNE_OK ||
        (st = merge_file(out_dir, parts, n, "retime.jsonl", err)) != TUNE_OK)
        return st;
    meta_part *mp = calloc(n, sizeof *mp);
    for (size_t i = 0; mp && i < n; i++)
        mp[i] = (meta_part){parts[i].meta, parts[i].dir, parts[i].shard.index, parts[i].rows.n};
    json_t *meta = mp ? meta_merged(mp, n, opt ? opt->argc : 0, opt ? opt->argv : NULL, sum) : NULL;
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/meta.json", out_dir);
    st = folder_write_json(path, meta, err);
    json_decref(meta);
    free(mp);
    return st;
}

tune_status merge_shards(const char *out_dir, const char *const *dirs, size_t n_dirs,
                         const merge_options *opt, run_summary *sum, tune_error *err)
{
    run_summary local;
    if (!sum)
        sum = &local;
    memset(sum, 0, sizeof *sum);
    if (n_dirs == 0)
        return tune_error_set(err, TUNE_ERR_INVALID, "merge", "no shard folders to merge");
    merge_part *parts = calloc(n_dirs, sizeof *parts);
    if (!parts)
        return tune_error_set(err, TUNE_ERR_NOMEM, "merge", "out of memory");
    merge_problems pb = {"", 0};
    tune_status st = TUNE_OK;
    for (size_t i = 0; i < n_dirs; i++) {
        parts[i].dir = dirs[i];
        if (outfile_dir_within(out_dir, dirs[i]))
            problem(&pb, "the merged folder %s is the shard folder %s or inside it", out_dir,
                    dirs[i]);
        part_load(&parts[i], &pb);
    }
    if (!pb.n) {
        qsort(parts, n_dirs, sizeof *parts, part_cmp);
        check_same_run(parts, n_dirs, &pb);
    }
    if (!pb.n)
        check_complete(parts, n_dirs, &pb);
    if (!pb.n) /* every configuration once: each in its own shard's share of the plan */
        check_plan(parts, n_dirs, &pb);
    if (!pb.n)
        check_out_dir(out_dir, &parts[0], &pb);
    if (pb.n)
        st = tune_error_set(err, TUNE_ERR_INVALID, "merge", "cannot merge: %s", pb.text);
    else
        st = write_merged(out_dir, parts, n_dirs, opt, sum, err);
    for (size_t i = 0; i < n_dirs; i++) {
        json_decref(parts[i].meta);
        results_rows_free(&parts[i].rows);
    }
    free(parts);
    return st;
}
