/* history.c - series over the store's runs and the window rule (history.h). */
#include "analysis/history.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/db.h"
#include "core/outfile.h"

static const char *const verdict_names[HISTORY_N_VERDICTS] = {
    "same", "regression", "improvement", "unstable", "insufficient", "missing"};

const char *history_verdict_str(history_verdict v)
{
    return v < HISTORY_N_VERDICTS ? verdict_names[v] : "unknown";
}

void history_options_init(history_options *o)
{
    *o = (history_options){.window = 7,
                           .min_runs = 3,
                           .consecutive = 2,
                           .threshold_pct = 3.0,
                           .k_mad = 2.0,
                           .segment_on = HISTORY_SEG_DEFAULT};
}

static const struct {
    const char *name;
    unsigned bit;
} seg_keys[] = {{"sweep", HISTORY_SEG_SWEEP},
                {"driver", HISTORY_SEG_DRIVER},
                {"runtime", HISTORY_SEG_RUNTIME},
                {"tool", HISTORY_SEG_TOOL},
                {"kernels", HISTORY_SEG_KERNELS}};
#define N_SEG_KEYS (sizeof seg_keys / sizeof *seg_keys)

int history_parse_segment_on(const char *s, unsigned *out)
{
    *out = 0;
    if (strcmp(s, "none") == 0)
        return 0;
    while (*s) {
        size_t len = strcspn(s, ",");
        unsigned bit = 0;
        for (size_t i = 0; i < N_SEG_KEYS; i++)
            if (strlen(seg_keys[i].name) == len && strncmp(s, seg_keys[i].name, len) == 0)
                bit = seg_keys[i].bit;
        if (!bit)
            return -1;
        *out |= bit;
        s += len;
        if (*s == ',' && *++s == '\0')
            return -1;
    }
    return *out ? 0 : -1;
}

/* ---- the rule ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median and robust deviation (1.4826 x MAD) of x[0..n), n >= 1, n <= 64. */
static void robust(const double *x, size_t n, double *med, double *sigma)
{
    double v[64], dev[64];
    memcpy(v, x, n * sizeof *v);
    qsort(v, n, sizeof *v, cmp_double);
    *med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    for (size_t i = 0; i < n; i++)
        dev[i] = fabs(v[i] - *med);
    qsort(dev, n, sizeof *dev, cmp_double);
    *sigma = 1.4826 * (n % 2 ? dev[n / 2] : 0.5 * (dev[n / 2 - 1] + dev[n / 2]));
}

/* +1 / -1 / 0: x beyond the band of level b and deviation s. */
static int beyond(double x, double b, double s, const history_options *o)
{
    double margin = fmax(o->threshold_pct / 100.0 * b, o->k_mad * s);
    return x - b > margin ? 1 : b - x > margin ? -1 : 0;
}

/* Judges x[n - 1] against the values of its segment (from seg); prev_exceeds[0..consecutive - 1)
 * are the exceeds of the values before it, newest first (0 where there is none). */
static void judge_one(const double *x, size_t n, size_t seg, const history_options *o,
                      const int *prev_exceeds, history_judgement *out)
{
    size_t window = o->window > 64 ? 64 : o->window;
    *out = (history_judgement){.verdict = HISTORY_INSUFFICIENT,
                               .baseline = NAN,
                               .lo = NAN,
                               .hi = NAN,
                               .change_pct = NAN,
                               .drift_pct = NAN,
                               .spread_pct = NAN};
    if (n == 0 || seg >= n)
        return;
    size_t have = n - 1 - seg, w = have < window ? have : window;
    out->n_window = w;
    if (w < o->min_runs || w == 0)
        return;
    double v = x[n - 1], b, s, r, sr;
    robust(x + (n - 1 - w), w, &b, &s);
    robust(x + seg, w, &r, &sr); /* the segment's first values (the window itself early on) */
    double margin = fmax(o->threshold_pct / 100.0 * b, o->k_mad * s);
    out->baseline = b;
    out->lo = b - margin;
    out->hi = b + margin;
    out->change_pct = (v - b) / b * 100.0;
    out->drift_pct = (v - r) / r * 100.0;
    out->spread_pct = s / b * 100.0;
    int step = beyond(v, b, s, o), drift = beyond(v, r, sr, o);
    out->exceeds = step > 0 || drift > 0 ? 1 : step < 0 || drift < 0 ? -1 : 0;
    int run = out->exceeds != 0;
    for (size_t i = 0; run && i + 1 < o->consecutive; i++)
        run = prev_exceeds[i] == out->exceeds;
    if (run)
        out->verdict = out->exceeds > 0 ? HISTORY_REGRESSION : HISTORY_IMPROVEMENT;
    else if (2.0 * s > o->threshold_pct / 100.0 * b)
        out->verdict = HISTORY_UNSTABLE;
    else
        out->verdict = HISTORY_SAME;
}

void history_judge_series(const double *x, const unsigned char *new_seg, size_t n,
                          const history_options *o, history_judgement *out)
{
    size_t seg = 0, cons = o->consecutive < 1 ? 1 : o->consecutive > 64 ? 64 : o->consecutive;
    for (size_t i = 0; i < n; i++) {
        if (new_seg && new_seg[i])
            seg = i;
        int prev[64] = {0}; /* the exceeds before value i in its segment, newest first */
        for (size_t k = 0; k + 1 < cons && i - k > seg; k++)
            prev[k] = out[i - 1 - k].verdict == HISTORY_INSUFFICIENT ? 0 : out[i - 1 - k].exceeds;
        judge_one(x, i + 1, seg, o, prev, &out[i]);
    }
}

/* ---- building the history ---- */

static const char *seg_value(const db_run *r, unsigned bit, char *buf, size_t size)
{
    switch (bit) {
    case HISTORY_SEG_SWEEP: return r->sweep_hash;
    case HISTORY_SEG_DRIVER: return r->driver;
    case HISTORY_SEG_RUNTIME: snprintf(buf, size, "%lld", r->runtime); return buf;
    case HISTORY_SEG_TOOL: return r->tool_rev;
    default: return r->kernels_hash;
    }
}

/* The changes from run a to run b in the segment keys (a JSON array of "driver X → Y"). */
static json_t *seg_changes(const db_run *a, const db_run *b, unsigned on)
{
    json_t *ch = json_array();
    for (size_t i = 0; a && i < N_SEG_KEYS; i++) {
        char x[32], y[32], text[512];
        if (!(on & seg_keys[i].bit))
            continue;
        const char *va = seg_value(a, seg_keys[i].bit, x, sizeof x);
        const char *vb = seg_value(b, seg_keys[i].bit, y, sizeof y);
        if (strcmp(va, vb) != 0) {
            snprintf(text, sizeof text, "%s %s \u2192 %s", seg_keys[i].name, *va ? va : "?",
                     *vb ? vb : "?");
            json_array_append_new(ch, json_string(text));
        }
    }
    return ch;
}

static int same_group(const db_run *a, const db_run *b)
{
    return strcmp(a->sweep, b->sweep) == 0 && strcmp(a->device, b->device) == 0;
}

typedef struct run_slot run_slot;
typedef struct {
    const history_options *o;
    const db_run *runs; /* the group's runs */
    size_t n_runs;
    const size_t *segment; /* each run's segment index */
    const size_t *seg_first; /* each segment's first run */
    run_slot *slots;          /* the runs by id */
    size_t counts[HISTORY_N_VERDICTS];
} group_ctx;

struct run_slot {
    long long id;
    size_t index;
};

static int slot_cmp(const void *a, const void *b)
{
    long long x = ((const run_slot *)a)->id, y = ((const run_slot *)b)->id;
    return (x > y) - (x < y);
}

/* run id -> index in the group; n_runs when the run is not the group's */
static size_t run_index(const group_ctx *g, long long id)
{
    run_slot key = {id, 0};
    const run_slot *s = bsearch(&key, g->slots, g->n_runs, sizeof key, slot_cmp);
    return s ? s->index : g->n_runs;
}

/* One series: its points judged in run order, and the newest run's verdict. */
static json_t *series_json(group_ctx *g, const db_series *s, const db_best *b, size_t nb)
{
    double *x = malloc((nb ? nb : 1) * sizeof *x);
    unsigned char *new_seg = calloc(nb ? nb : 1, 1);
    history_judgement *js = malloc((nb ? nb : 1) * sizeof *js);
    size_t *idx = malloc((nb ? nb : 1) * sizeof *idx);
    json_t *points = json_array(), *out = NULL;
    if (!x || !new_seg || !js || !idx || !points)
        goto done;
    for (size_t i = 0; i < nb; i++) {
        idx[i] = run_index(g, b[i].run_id);
        x[i] = b[i].time;
        new_seg[i] = i > 0 && g->segment[idx[i]] != g->segment[idx[i - 1]];
    }
    history_judge_series(x, new_seg, nb, g->o, js);
    for (size_t i = 0; i < nb; i++) {
        json_t *p = json_pack("{s:I, s:f, s:s, s:s}", "run", (json_int_t)b[i].run_id, "time",
                              x[i], "winner", b[i].winner, "verdict",
                              history_verdict_str(js[i].verdict));
        json_object_set_new(p, "baseline", outfile_json_number(js[i].baseline));
        json_object_set_new(p, "lo", outfile_json_number(js[i].lo));
        json_object_set_new(p, "hi", outfile_json_number(js[i].hi));
        json_object_set_new(p, "change_pct", outfile_json_number(js[i].change_pct));
        json_array_append_new(points, p);
    }
    history_judgement j = nb ? js[nb - 1] : (history_judgement){.verdict = HISTORY_INSUFFICIENT};
    /* the newest run's verdict */
    size_t newest = g->n_runs - 1;
    char reason[512] = "";
    history_verdict v = j.verdict;
    double change = j.change_pct, base = j.baseline;
    if (nb == 0 || idx[nb - 1] != newest) {
        int seen_in_segment = nb > 0 && g->segment[idx[nb - 1]] == g->segment[newest];
        v = seen_in_segment ? HISTORY_MISSING : HISTORY_INSUFFICIENT;
        change = base = NAN;
        snprintf(reason, sizeof reason, "%s",
                 seen_in_segment ? "no ok row in the newest run (it ran before in this segment)"
                                 : "not measured in the newest run");
    } else if (v == HISTORY_INSUFFICIENT) {
        size_t seg = g->segment[newest];
        if (g->seg_first[seg] == newest && seg > 0 && nb >= 2) {
            /* the first run of a new segment: what changed, and by how much, said not judged */
            double prev_vals[64];
            size_t np = 0;
            for (size_t k = nb - 1; k > 0 && np < 7; k--)
                if (g->segment[idx[k - 1]] == seg - 1)
                    prev_vals[np++] = x[k - 1];
            double m = NAN, sd;
            if (np)
                robust(prev_vals, np, &m, &sd);
            snprintf(reason, sizeof reason,
                     "new segment: not judged across the change; %+.1f %% against the previous "
                     "segment's median",
                     np ? (x[nb - 1] - m) / m * 100.0 : NAN);
        } else
            snprintf(reason, sizeof reason, "%zu comparable runs before it, %zu needed",
                     j.n_window, g->o->min_runs);
    } else {
        const char *what = fabs(j.change_pct) >= fabs(j.drift_pct) || !isfinite(j.drift_pct)
                               ? "the window's median"
                               : "the segment's first runs";
        double c = fabs(j.change_pct) >= fabs(j.drift_pct) ? j.change_pct : j.drift_pct;
        snprintf(reason, sizeof reason,
                 "%+.1f %% against %s (window of %zu, robust spread %.1f %%)%s", c, what,
                 j.n_window, j.spread_pct,
                 v == HISTORY_UNSTABLE ? ": the window is too noisy to judge" : "");
        change = c;
    }
    g->counts[v]++;
    out = json_pack("{s:s, s:s, s:o, s:{s:s, s:o, s:o, s:s}}", "shape", s->shape, "method",
                    s->method, "points", points, "verdict", "status", history_verdict_str(v),
                    "change_pct", outfile_json_number(change), "baseline", outfile_json_number(base), "reason", reason);
    points = NULL;
done:
    json_decref(points);
    free(x);
    free(new_seg);
    free(js);
    free(idx);
    return out;
}

static json_t *group_json(const history_options *o, const db_run *runs, size_t n_runs,
                          const db_series *series, size_t n_series, const db_best *bests,
                          size_t n_bests)
{
    size_t *segment = calloc(n_runs, sizeof *segment), *seg_first = calloc(n_runs, sizeof *seg_first);
    json_t *jruns = json_array(), *jseries = json_array(), *g = NULL;
    if (!segment || !seg_first || !jruns || !jseries)
        goto done;
    size_t n_seg = 0;
    for (size_t i = 0; i < n_runs; i++) {
        json_t *ch = seg_changes(i ? &runs[i - 1] : NULL, &runs[i], o->segment_on);
        if (i == 0 || json_array_size(ch) > 0)
            seg_first[n_seg++] = i;
        segment[i] = n_seg - 1;
        const db_run *r = &runs[i];
        json_array_append_new(
            jruns, json_pack("{s:I, s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:s, s:s, s:I, s:o}", "id",
                             (json_int_t)r->id, "night", r->night, "start", r->start, "host",
                             r->host, "driver", r->driver, "runtime", (json_int_t)r->runtime,
                             "tool_rev", r->tool_rev, "kernels_hash", r->kernels_hash,
                             "sweep_hash", r->sweep_hash, "source_dir", r->source_dir,
                             "segment", (json_int_t)segment[i], "changes", ch));
    }
    run_slot *slots = malloc(n_runs * sizeof *slots);
    db_best *mine = malloc((n_bests ? n_bests : 1) * sizeof *mine);
    if (!slots || !mine) {
        free(slots);
        free(mine);
        goto done;
    }
    for (size_t i = 0; i < n_runs; i++)
        slots[i] = (run_slot){runs[i].id, i};
    qsort(slots, n_runs, sizeof *slots, slot_cmp);
    group_ctx ctx = {o, runs, n_runs, segment, seg_first, slots, {0}};
    /* bests are ordered by series, then run id: each series' bests are one stretch; keep those
     * of this group's runs, in run order */
    size_t k = 0;
    for (size_t si = 0; si < n_series; si++) {
        size_t nb = 0;
        for (; k < n_bests && bests[k].series_id == series[si].id; k++)
            if (run_index(&ctx, bests[k].run_id) < n_runs)
                mine[nb++] = bests[k];
        if (nb == 0 || strcmp(series[si].sweep, runs[0].sweep) != 0)
            continue;
        /* run order within the group (ids follow ingestion, not nights) */
        for (size_t a = 1; a < nb; a++)
            for (size_t c = a; c > 0 && run_index(&ctx, mine[c - 1].run_id) >
                                            run_index(&ctx, mine[c].run_id);
                 c--) {
                db_best t = mine[c];
                mine[c] = mine[c - 1];
                mine[c - 1] = t;
            }
        json_t *sj = series_json(&ctx, &series[si], mine, nb);
        if (sj)
            json_array_append_new(jseries, sj);
    }
    free(slots);
    free(mine);
    json_t *counts = json_object();
    for (int v = 0; v < HISTORY_N_VERDICTS; v++)
        json_object_set_new(counts, history_verdict_str((history_verdict)v),
                            json_integer((json_int_t)ctx.counts[v]));
    g = json_pack("{s:s, s:s, s:o, s:{s:I, s:s, s:o}, s:o}", "sweep", runs[0].sweep, "device",
                  runs[0].device, "runs", jruns, "newest", "run",
                  (json_int_t)runs[n_runs - 1].id, "night", runs[n_runs - 1].night, "counts",
                  counts, "series", jseries);
    jruns = jseries = NULL;
done:
    json_decref(jruns);
    json_decref(jseries);
    free(segment);
    free(seg_first);
    return g;
}

tune_status history_build(const history_options *o, json_t **out, tune_error *err)
{
    *out = NULL;
    if (o->since && !db_valid_night(o->since))
        return tune_error_set(err, TUNE_ERR_INVALID, "--since", "expected a date YYYY-MM-DD, got '%s'",
                              o->since);
    db *d = db_open_readonly(o->db, err);
    if (!d)
        return err ? err->code : TUNE_ERR_IO;
    db_run *runs = NULL;
    db_best *bests = NULL;
    db_series *series = NULL;
    size_t n_runs = 0, n_bests = 0, n_series = 0;
    long long *ids = NULL;
    long long run_id = 0;
    tune_status st = o->run ? db_run_of_dir(d, o->run, &run_id, err) : TUNE_OK;
    if (st == TUNE_OK)
        st = db_runs(d, o->sweep, o->since, &runs, &n_runs, err);
    if (st == TUNE_OK && o->run) {
        /* keep the run's group up to the run itself, in order */
        size_t at = n_runs, k = 0;
        for (size_t i = 0; i < n_runs; i++)
            if (runs[i].id == run_id)
                at = i;
        if (at == n_runs)
            st = tune_error_set(err, TUNE_ERR_INVALID, o->run,
                                "the run is in the store but not among the runs selected "
                                "(--sweep, --since)");
        for (size_t i = 0; st == TUNE_OK && i < n_runs; i++) {
            if (i <= at && same_group(&runs[i], &runs[at]))
                runs[k++] = runs[i];
            else
                db_run_clear(&runs[i]);
        }
        if (st == TUNE_OK)
            n_runs = k;
    }
    if (st == TUNE_OK) {
        ids = malloc((n_runs ? n_runs : 1) * sizeof *ids);
        if (!ids)
            st = tune_error_set(err, TUNE_ERR_NOMEM, o->db, "out of memory");
        for (size_t i = 0; ids && i < n_runs; i++)
            ids[i] = runs[i].id;
    }
    if (st == TUNE_OK)
        st = db_bests(d, ids, n_runs, &bests, &n_bests, &series, &n_series, err);
    json_t *groups = json_array();
    for (size_t i = 0; st == TUNE_OK && i < n_runs;) {
        size_t j = i + 1;
        while (j < n_runs && same_group(&runs[i], &runs[j]))
            j++;
        json_t *g = group_json(o, &runs[i], j - i, series, n_series, bests, n_bests);
        if (!g)
            st = tune_error_set(err, TUNE_ERR_NOMEM, o->db, "out of memory");
        else
            json_array_append_new(groups, g);
        i = j;
    }
    if (st == TUNE_OK) {
        char now[32];
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
        json_t *seg = json_array();
        for (size_t i = 0; i < N_SEG_KEYS; i++)
            if (o->segment_on & seg_keys[i].bit)
                json_array_append_new(seg, json_string(seg_keys[i].name));
        *out = json_pack("{s:i, s:s, s:s, s:{s:I, s:I, s:f, s:f, s:I, s:o}, s:o}", "tune_history",
                         1, "store", o->db, "generated", now, "rule", "window",
                         (json_int_t)o->window, "min_runs", (json_int_t)o->min_runs,
                         "threshold_pct", o->threshold_pct, "k_mad", o->k_mad, "consecutive",
                         (json_int_t)o->consecutive, "segment_on", seg, "groups", groups);
        groups = NULL;
        if (!*out)
            st = tune_error_set(err, TUNE_ERR_NOMEM, o->db, "out of memory");
    }
    json_decref(groups);
    free(ids);
    db_runs_free(runs, n_runs);
    db_bests_free(bests, n_bests, series, n_series);
    db_close(d);
    return st;
}

/* ---- output ---- */

size_t history_n_flagged(const json_t *h)
{
    size_t n = 0, i;
    json_t *g;
    json_array_foreach(json_object_get(h, "groups"), i, g)
    {
        const json_t *c = json_object_get(json_object_get(g, "newest"), "counts");
        n += (size_t)json_integer_value(json_object_get(c, "regression")) +
             (size_t)json_integer_value(json_object_get(c, "missing"));
    }
    return n;
}

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

void history_write_markdown(const json_t *h, int all, FILE *f)
{
    const json_t *rule = json_object_get(h, "rule");
    fprintf(f, "# History of %s\n\n", str(h, "store"));
    fprintf(f,
            "Each run's best time per shape and method against the median of the previous %lld "
            "comparable runs (same sweep and GPU model, same segment): flagged beyond %.1f %% and "
            "%.1f robust deviations, %lld runs in a row.\n",
            (long long)json_integer_value(json_object_get(rule, "window")),
            json_real_value(json_object_get(rule, "threshold_pct")),
            json_real_value(json_object_get(rule, "k_mad")),
            (long long)json_integer_value(json_object_get(rule, "consecutive")));
    size_t gi, si;
    json_t *g, *s;
    if (json_array_size(json_object_get(h, "groups")) == 0)
        fputs("\nThe store holds no run.\n", f);
    json_array_foreach(json_object_get(h, "groups"), gi, g)
    {
        const json_t *runs = json_object_get(g, "runs"), *nw = json_object_get(g, "newest");
        const json_t *last = json_array_get(runs, json_array_size(runs) - 1);
        const json_t *c = json_object_get(nw, "counts");
        fprintf(f, "\n## %s on %s\n\nNewest run: night %s (run %lld, %zu runs in the store)",
                str(g, "sweep"), str(g, "device"), str(last, "night"),
                (long long)json_integer_value(json_object_get(last, "id")),
                json_array_size(runs));
        const json_t *ch = json_object_get(last, "changes");
        if (json_array_size(ch) > 0) {
            fprintf(f, "; a new segment:");
            size_t k;
            json_t *v;
            json_array_foreach(ch, k, v) fprintf(f, "%s %s", k ? "," : "", json_string_value(v));
        }
        fprintf(f, ".\n\n");
        for (int v = 0; v < HISTORY_N_VERDICTS; v++)
            fprintf(f, "%s%s %lld", v ? ", " : "", history_verdict_str((history_verdict)v),
                    (long long)json_integer_value(
                        json_object_get(c, history_verdict_str((history_verdict)v))));
        fprintf(f, "\n");
        int header = 0;
        /* regressions and missing first, then the rest that is not the same */
        for (int pass = 0; pass < 2; pass++)
            json_array_foreach(json_object_get(g, "series"), si, s)
            {
                const json_t *vj = json_object_get(s, "verdict");
                const char *st = str(vj, "status");
                int flagged = !strcmp(st, "regression") || !strcmp(st, "missing");
                if ((pass == 0) != flagged ||
                    (!all && (!strcmp(st, "same") || !strcmp(st, "insufficient"))))
                    continue;
                if (!header) {
                    fprintf(f, "\n| shape | method | verdict | newest | baseline | change | "
                               "winner | reason |\n|:--|:--|:--|--:|--:|--:|:--|:--|\n");
                    header = 1;
                }
                const json_t *pts = json_object_get(s, "points");
                const json_t *p = json_array_get(pts, json_array_size(pts) - 1);
                double t = json_number_value(json_object_get(p, "time"));
                const json_t *b = json_object_get(vj, "baseline"), *ch2 = json_object_get(vj, "change_pct");
                fprintf(f, "| %s | %s | %s | %.2f µs | ", str(s, "shape"), str(s, "method"), st,
                        t * 1e6);
                if (json_is_number(b))
                    fprintf(f, "%.2f µs | ", json_number_value(b) * 1e6);
                else
                    fprintf(f, "- | ");
                if (json_is_number(ch2))
                    fprintf(f, "%+.1f %% | ", json_number_value(ch2));
                else
                    fprintf(f, "- | ");
                fprintf(f, "%s | %s |\n", *str(p, "winner") ? str(p, "winner") : "-",
                        str(vj, "reason"));
            }
    }
}
