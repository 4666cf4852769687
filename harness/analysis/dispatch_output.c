/* dispatch_output.c - the rule as JSON, Markdown and a C header (analysis/dispatch.h). */
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/dispatch_impl.h"
#include "store/meta.h"
#include "core/outfile.h"

#define T(d, s, c) ((d)->time[(s) * (d)->n_configs + (c)])

const char *dispatch_shape_text(const dispatch *d, const tune_point *p, int outer, char *buf,
                                size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t a = 0; a < d->n_axes && len < size; a++) {
        if (!d->varies[a] || (outer && a == d->bp))
            continue;
        char v[64];
        int w = snprintf(buf + len, size - len, "%s%s=%s", len ? " " : "", d->axes[a],
                         expr_value_format(p->vals[a], v, sizeof v));
        len += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

/* The configurations the rule uses, numbered in order of first use: num[c] (DISPATCH_NONE:
 * unused); the count. num is new. */
static size_t number_configs(const dispatch *d, size_t **num)
{
    size_t n = 0;
    *num = malloc((d->n_configs + 1) * sizeof **num);
    if (!*num)
        return 0;
    for (size_t c = 0; c < d->n_configs; c++)
        (*num)[c] = DISPATCH_NONE;
    for (size_t k = 0; k < d->rule.n_seg; k++)
        if ((*num)[d->rule.config[k]] == DISPATCH_NONE)
            (*num)[d->rule.config[k]] = n++;
    return n;
}

/* The configurations in order of their numbers (new). */
static size_t *configs_by_number(const dispatch *d, const size_t *num, size_t n)
{
    size_t *order = malloc((n + 1) * sizeof *order);
    for (size_t c = 0; order && c < d->n_configs; c++)
        if (num[c] != DISPATCH_NONE)
            order[num[c]] = c;
    return order;
}

/* The rule's configurations numbered (*num, new: number_configs) and in order of their numbers
 * (*order, new); their count, or 0 with both NULL when memory runs out. */
static size_t numbered_configs(const dispatch *d, size_t **num, size_t **order)
{
    size_t n_used = number_configs(d, num);
    *order = *num ? configs_by_number(d, *num, n_used) : NULL;
    if (!*num || !*order) {
        free(*num);
        free(*order);
        *num = *order = NULL;
        return 0;
    }
    return n_used;
}

/* "leave-one-m-out", "leave-one-(n, k)-out" into buf. */
static const char *loo_label(const dispatch *d, dispatch_eval w, char *buf, size_t size)
{
    if (w == DISPATCH_IN_SAMPLE)
        return "in-sample";
    if (w == DISPATCH_LOO_AXIS) {
        snprintf(buf, size, "leave-one-%s-out", d->axes[d->bp]);
        return buf;
    }
    const char *names[TUNE_MAX_AXES];
    size_t n = 0, len = 0;
    for (size_t a = 0; a < d->n_axes; a++)
        if (d->varies[a] && a != d->bp)
            names[n++] = d->axes[a];
    if (n == 1)
        snprintf(buf, size, "leave-one-%s-out", names[0]);
    else if (n == 0)
        snprintf(buf, size, "leave-one-outer-shape-out");
    else
        for (size_t i = 0; i < n && len < size; i++) {
            int w2 = snprintf(buf + len, size - len, "%s%s%s", i ? ", " : "leave-one-(", names[i],
                              i + 1 == n ? ")-out" : "");
            len += w2 > 0 ? (size_t)w2 : 0;
        }
    return buf;
}

/* ---- JSON ---- */

static json_t *point_json(const tune_point *p, const dispatch *d, int skip_bp)
{
    json_t *o = json_object();
    for (size_t i = 0; i < p->n; i++)
        if (!(skip_bp && d && strcmp(p->names[i], d->axes[d->bp]) == 0))
            json_object_set_new(o, p->names[i], outfile_json_value(p->vals[i]));
    return o;
}

static json_t *config_json(const dispatch *d, size_t c)
{
    json_t *o = json_object();
    json_object_set_new(o, "method", json_string(d->methods[d->configs[c].method]));
    json_object_set_new(o, "params", point_json(&d->configs[c].params, NULL, 0));
    return o;
}

static json_t *score_json(const dispatch_score *sc)
{
    json_t *o = json_object();
    json_object_set_new(o, "efficiency", outfile_json_number(sc->efficiency));
    json_object_set_new(o, "n", json_integer((json_int_t)sc->n));
    json_object_set_new(o, "misses", json_integer((json_int_t)sc->misses));
    if (sc->target > 0) {
        json_object_set_new(o, "target", json_real(sc->target));
        json_object_set_new(o, "meets_target", json_boolean(sc->meets_target));
    }
    return o;
}

/* A left-out choice at shape s: its configuration, time, efficiency, miss; null when not scored. */
static json_t *choice_json(const dispatch *d, size_t s, size_t c)
{
    if (c == DISPATCH_NONE)
        return json_null();
    json_t *o = config_json(d, c);
    double t = T(d, s, c);
    json_object_set_new(o, "time_us", outfile_json_number(t * 1e6));
    json_object_set_new(o, "efficiency", outfile_json_number(d->best[s] / t));
    json_object_set_new(o, "miss", json_boolean(!isfinite(t)));
    return o;
}

json_t *dispatch_to_json(const dispatch *d, const char *const *sources, size_t n_sources)
{
    size_t *num, *order, n_used = numbered_configs(d, &num, &order);
    json_t *j = num ? json_object() : NULL, *a;
    if (!j) {
        free(num);
        free(order);
        return NULL;
    }
    char fn[160];
    snprintf(fn, sizeof fn, "tune_dispatch_%s", d->name);
    json_object_set_new(j, "name", json_string(d->name));
    json_object_set_new(j, "function", json_string(fn));
    json_object_set_new(j, "sources", a = json_array());
    for (size_t i = 0; i < n_sources; i++)
        json_array_append_new(a, json_string(sources[i]));
    json_object_set_new(j, "sweep", d->sweep ? json_string(d->sweep) : json_null());
    json_object_set_new(j, "family", d->family ? json_string(d->family) : json_null());
    const char *dev = meta_device_name(d->meta);
    json_object_set_new(j, "device", dev ? json_string(dev) : json_null());
    json_object_set_new(j, "axes", a = json_array());
    for (size_t i = 0; i < d->n_axes; i++)
        json_array_append_new(a, json_string(d->axes[i]));
    json_object_set_new(j, "breakpoint_axis", json_string(d->axes[d->bp]));
    json_object_set_new(j, "arguments", a = json_array());
    for (size_t i = 0; i < d->n_axes; i++)
        if (d->varies[i] || i == d->bp)
            json_array_append_new(a, json_string(d->axes[i]));
    json_object_set_new(j, "params", a = json_array());
    for (size_t i = 0; i < d->n_params; i++)
        json_array_append_new(a, json_string(d->params[i]));
    json_object_set_new(j, "methods", a = json_object());
    for (size_t i = 0; i < d->n_methods; i++)
        json_object_set_new(a, d->methods[i], json_string(d->roles[i]));
    json_object_set_new(j, "tolerance", json_real(d->tolerance));
    json_object_set_new(j, "midpoint", json_string("geometric"));
    json_object_set_new(j, "n_shapes", json_integer((json_int_t)d->n_shapes));
    json_object_set_new(j, "n_unmeasured_shapes", json_integer((json_int_t)d->n_unmeasured));
    json_object_set_new(j, "n_configs_measured", json_integer((json_int_t)d->n_configs));
    json_object_set_new(j, "n_segments", json_integer((json_int_t)d->rule.n_seg));
    json_object_set_new(j, "configs", a = json_array());
    for (size_t i = 0; i < n_used; i++)
        json_array_append_new(a, config_json(d, order[i]));
    json_object_set_new(j, "tables", a = json_array());
    for (size_t o = 0; o < d->n_outers; o++) {
        json_t *t = json_object(), *segs = json_array();
        json_object_set_new(t, "outer", point_json(&d->shapes[d->outer_first[o]], d, 1));
        json_object_set_new(t, "segments", segs);
        for (size_t k = d->rule.first[o]; k < d->rule.first[o + 1]; k++) {
            json_t *g = json_object(), *m = json_array();
            int last = k + 1 == d->rule.first[o + 1];
            json_object_set_new(g, "from", k == d->rule.first[o]
                                               ? json_null()
                                               : json_integer((json_int_t)d->rule.from[k]));
            json_object_set_new(g, "to", last ? json_null()
                                              : json_integer((json_int_t)d->rule.from[k + 1]));
            json_object_set_new(g, "config", json_integer((json_int_t)num[d->rule.config[k]]));
            for (size_t s = d->rule.lo[k]; s != DISPATCH_NONE && s <= d->rule.hi[k]; s++)
                json_array_append_new(m, json_integer((json_int_t)d->bpv[s]));
            json_object_set_new(g, "measured", m);
            json_array_append_new(segs, g);
        }
        json_array_append_new(a, t);
    }
    json_t *ev = json_object();
    json_object_set_new(ev, "in_sample", score_json(&d->score[DISPATCH_IN_SAMPLE]));
    json_object_set_new(ev, "loo_axis", score_json(&d->score[DISPATCH_LOO_AXIS]));
    json_object_set_new(ev, "loo_outer", score_json(&d->score[DISPATCH_LOO_OUTER]));
    json_object_set_new(j, "evaluation", ev);
    json_object_set_new(j, "shapes", a = json_array());
    for (size_t s = 0; s < d->n_shapes; s++) {
        json_t *o = json_object();
        size_t c = d->choice[DISPATCH_IN_SAMPLE][s];
        json_object_set_new(o, "shape", point_json(&d->shapes[s], NULL, 0));
        json_object_set_new(o, "config", json_integer((json_int_t)num[c]));
        json_object_set_new(o, "best", config_json(d, d->best_config[s]));
        json_object_set_new(o, "best_time_us", json_real(d->best[s] * 1e6));
        json_object_set_new(o, "time_us", outfile_json_number(T(d, s, c) * 1e6));
        json_object_set_new(o, "efficiency", outfile_json_number(d->best[s] / T(d, s, c)));
        json_object_set_new(o, "loo_axis", choice_json(d, s, d->choice[DISPATCH_LOO_AXIS][s]));
        json_object_set_new(o, "loo_outer", choice_json(d, s, d->choice[DISPATCH_LOO_OUTER][s]));
        json_array_append_new(a, o);
    }
    free(num);
    free(order);
    return j;
}

/* ---- Markdown ---- */

static const char *pct(double x, char *buf, size_t size)
{
    if (isfinite(x))
        snprintf(buf, size, "%.1f %%", 100 * x);
    else
        snprintf(buf, size, "-");
    return buf;
}

/* A left-out choice at shape s as a table cell. */
static const char *choice_cell(const dispatch *d, size_t s, size_t c, char *buf, size_t size)
{
    if (c == DISPATCH_NONE)
        return "-";
    if (!isfinite(T(d, s, c)))
        snprintf(buf, size, "miss (%s)", d->methods[d->configs[c].method]);
    else
        pct(d->best[s] / T(d, s, c), buf, size);
    return buf;
}

void dispatch_write_markdown(const dispatch *d, const char *const *sources, size_t n_sources,
                             FILE *f)
{
    size_t *num, *order, n_used = numbered_configs(d, &num, &order);
    if (!num)
        return;
    char a[256], b[256], c[64];
    const char *bp = d->axes[d->bp], *dev = meta_device_name(d->meta);
    fprintf(f, "# Dispatch rule `tune_dispatch_%s`\n\nBuilt on ", d->name);
    for (size_t i = 0; i < n_sources; i++)
        fprintf(f, "%s%s", i ? ", " : "", sources[i]);
    fprintf(f, "%s(sweep %s%s%s). Methods the rule may pick: ", n_sources ? " " : "",
            d->sweep ? d->sweep : "?", dev ? ", " : "", dev ? dev : "");
    for (size_t i = 0; i < d->n_methods; i++)
        fprintf(f, "%s%s (%s)", i ? ", " : "", d->methods[i], d->roles[i]);
    fprintf(f, ". Breakpoints on %s at geometric midpoints, tolerance %g %%. %zu shapes",
            bp, 100 * d->tolerance, d->n_shapes);
    if (d->n_unmeasured)
        fprintf(f, " (and %zu without an ok row)", d->n_unmeasured);
    fprintf(f, ", %zu tables, %zu segments, %zu configurations.\n\n", d->n_outers, d->rule.n_seg,
            n_used);
    fprintf(f, "| evaluation | efficiency | shapes scored | misses | target |\n"
               "|---|--:|--:|--:|---|\n");
    for (int w = 0; w < 3; w++) {
        const dispatch_score *sc = &d->score[w];
        fprintf(f, "| %s | %s | %zu | %zu | ", loo_label(d, (dispatch_eval)w, a, sizeof a),
                pct(sc->efficiency, b, sizeof b), sc->n, sc->misses);
        if (sc->target > 0)
            fprintf(f, "%.0f %% without a miss: %s |\n", 100 * sc->target,
                    sc->meets_target ? "met" : "not met");
        else
            fprintf(f, "- |\n");
    }
    fprintf(f, "\nEfficiency: geometric mean over the scored shapes of best time / time of the "
               "rule's configuration. A miss is a choice never measured ok at the shape: not "
               "scored, and a target is met only without one.\n\n## Configurations\n\n| # | "
               "method |");
    for (size_t p = 0; p < d->n_params; p++)
        fprintf(f, " %s |", d->params[p]);
    fprintf(f, "\n|--:|---|");
    for (size_t p = 0; p < d->n_params; p++)
        fprintf(f, "--:|");
    for (size_t i = 0; i < n_used; i++) {
        const dispatch_cfg *cf = &d->configs[order[i]];
        fprintf(f, "\n| %zu | %s |", i, d->methods[cf->method]);
        for (size_t p = 0; p < d->n_params; p++) {
            expr_value v;
            fprintf(f, " %s |", point_get(&cf->params, d->params[p], &v) == 0
                                    ? expr_value_format(v, c, sizeof c) : "-");
        }
    }
    fprintf(f, "\n\n## Tables\n\n| outer shape | %s | configuration | measured %s |\n"
               "|---|---|---|---|\n", bp, bp);
    for (size_t o = 0; o < d->n_outers; o++)
        for (size_t k = d->rule.first[o]; k < d->rule.first[o + 1]; k++) {
            int first = k == d->rule.first[o], last = k + 1 == d->rule.first[o + 1];
            fprintf(f, "| %s | ", first ? dispatch_shape_text(d, &d->shapes[d->outer_first[o]],
                                                              1, a, sizeof a) : "");
            if (first && last)
                fprintf(f, "all");
            else if (first)
                fprintf(f, "< %" PRId64, d->rule.from[k + 1]);
            else if (last)
                fprintf(f, ">= %" PRId64, d->rule.from[k]);
            else
                fprintf(f, "[%" PRId64 ", %" PRId64 ")", d->rule.from[k], d->rule.from[k + 1]);
            fprintf(f, " | %zu (%s) | ", num[d->rule.config[k]],
                    d->methods[d->configs[d->rule.config[k]].method]);
            for (size_t s = d->rule.lo[k]; s != DISPATCH_NONE && s <= d->rule.hi[k]; s++)
                fprintf(f, "%s%" PRId64, s > d->rule.lo[k] ? ", " : "", d->bpv[s]);
            fprintf(f, "%s |\n", d->rule.lo[k] == DISPATCH_NONE ? "none" : "");
        }
    fprintf(f, "\n## Shapes\n\n| shape | best | best (us) | rule | rule (us) | efficiency | %s |",
            loo_label(d, DISPATCH_LOO_AXIS, a, sizeof a));
    fprintf(f, " %s |\n|---|---|--:|---|--:|--:|--:|--:|\n",
            loo_label(d, DISPATCH_LOO_OUTER, a, sizeof a));
    for (size_t s = 0; s < d->n_shapes; s++) {
        size_t ch = d->choice[DISPATCH_IN_SAMPLE][s];
        fprintf(f, "| %s | %s | %.2f | %zu (%s) | %.2f | %s |",
                dispatch_shape_text(d, &d->shapes[s], 0, a, sizeof a),
                d->methods[d->configs[d->best_config[s]].method], d->best[s] * 1e6, num[ch],
                d->methods[d->configs[ch].method], T(d, s, ch) * 1e6,
                pct(d->best[s] / T(d, s, ch), b, sizeof b));
        fprintf(f, " %s |", choice_cell(d, s, d->choice[DISPATCH_LOO_AXIS][s], b, sizeof b));
        fprintf(f, " %s |\n", choice_cell(d, s, d->choice[DISPATCH_LOO_OUTER][s], b, sizeof b));
    }
    free(num);
    free(order);
}

/* ---- the C header ---- */

/* name as a C identifier (other characters '_'), upper-cased when up. */
static const char *c_name(const char *name, int up, char *buf, size_t size)
{
    size_t len = 0;
    if (isdigit((unsigned char)name[0]) && len + 1 < size)
        buf[len++] = '_';
    for (; *name && len + 1 < size; name++) {
        int ch = isalnum((unsigned char)*name) ? (unsigned char)*name : '_';
        buf[len++] = (char)(up ? toupper(ch) : ch);
    }
    buf[len] = '\0';
    return buf;
}

static void write_c_value(FILE *f, expr_value v)
{
    if (v.type == EXPR_INT)
        fprintf(f, "%" PRId64, v.i);
    else if (v.type == EXPR_FLOAT)
        fprintf(f, "%.17g", v.f);
    else
        fprintf(f, "\"%s\"", v.s ? v.s : ""); /* names and values of a sweep: no quotes in them */
}

/* The per-axis code of the nearest-outer loop: the distance term and the exact-match test. */
static void write_distance_term(const dispatch *d, size_t a, FILE *f)
{
    char an[128];
    c_name(d->axes[a], 0, an, sizeof an);
    if (d->shapes[0].vals[a].type == EXPR_STR) {
        fprintf(f, "        if (strcmp(%s, td_%s[td_i]) != 0) {\n"
                   "            td_d += %g;\n            td_exact = 0;\n        }\n",
                an, an, DISPATCH_STRING_PENALTY);
        return;
    }
    const char *cast = d->shapes[0].vals[a].type == EXPR_INT ? "(double)" : "";
    fprintf(f, "        td_x = log2(%s > 1 ? %s%s : 1.0) - log2(td_%s[td_i] > 1 ? %std_%s[td_i] "
               ": 1.0);\n        td_d += td_x * td_x;\n        td_exact &= %s == td_%s[td_i];\n",
            an, cast, an, an, cast, an, an, an);
}

/* The header's opening comment: what it is, comment (the caller's provenance), the
 * efficiencies, how an outer shape finds its table. */
static void write_header_comment(const dispatch *d, const char *comment, FILE *f)
{
    char an[128], lab[256];
    fprintf(f, "/* tune_dispatch_%s: the configuration (method and parameters) for a problem shape,"
               "\n * from `tune dispatch`.\n", d->name);
    for (const char *p = comment; p && *p;) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        fprintf(f, " * %.*s\n", len, p);
        p = nl ? nl + 1 : p + len;
    }
    fprintf(f, " * Efficiency (geometric mean of best time / time of the rule's configuration): "
               "in-sample %s,\n", pct(d->score[0].efficiency, an, sizeof an));
    fprintf(f, " * %s %s (%zu misses), ", loo_label(d, DISPATCH_LOO_AXIS, lab, sizeof lab),
            pct(d->score[1].efficiency, an, sizeof an), d->score[1].misses);
    fprintf(f, "%s %s (%zu misses).\n", loo_label(d, DISPATCH_LOO_OUTER, lab, sizeof lab),
            pct(d->score[2].efficiency, an, sizeof an), d->score[2].misses);
    fprintf(f, " * Per measured outer shape, segments over %s; an outer shape never measured takes"
               " the\n * table of the nearest measured one (squared distance of log2 of each axis)."
               " Uses log2: link with -lm.\n */\n", d->axes[d->bp]);
}

/* The include guard and includes, the method enum, the configuration struct, and the function's
 * signature (up: the name upper-cased). */
static void write_header_declarations(const dispatch *d, const char *up, FILE *f)
{
    char an[128], mn[128];
    const char *nm = d->name;
    int strings = 0;
    for (size_t a = 0; a < d->n_axes; a++)
        if (d->varies[a] && a != d->bp)
            strings |= d->shapes[0].vals[a].type == EXPR_STR;
    fprintf(f, "#ifndef TUNE_DISPATCH_%s_H\n#define TUNE_DISPATCH_%s_H\n#include <math.h>\n", up,
            up);
    if (strings)
        fprintf(f, "#include <string.h>\n");
    fprintf(f, "\ntypedef enum {\n");
    for (size_t i = 0; i < d->n_methods; i++)
        fprintf(f, "    TUNE_DISPATCH_%s_%s = %zu,\n", up, c_name(d->methods[i], 1, mn, sizeof mn),
                i);
    fprintf(f, "} tune_dispatch_%s_method;\n\ntypedef struct {\n"
               "    tune_dispatch_%s_method method_id;\n    const char *method;\n", nm, nm);
    for (size_t p = 0; p < d->n_params; p++)
        fprintf(f, "    int %s;%s\n", c_name(d->params[p], 0, an, sizeof an),
                p == 0 ? " /* -1 where the method has no such parameter */" : "");
    fprintf(f, "} tune_dispatch_%s_config;\n\nstatic inline int tune_dispatch_%s(", nm, nm);
    int any = 0;
    for (size_t a = 0; a < d->n_axes; a++)
        if (d->varies[a] || a == d->bp)
            fprintf(f, "%s%s %s", any++ ? ", " : "",
                    d->shapes[0].vals[a].type == EXPR_INT     ? "long"
                    : d->shapes[0].vals[a].type == EXPR_FLOAT ? "double"
                                                              : "const char *",
                    c_name(d->axes[a], 0, an, sizeof an));
    fprintf(f, "%stune_dispatch_%s_config *td_out)\n{\n", any ? ", " : "", nm);
}

/* The function's tables: the configurations in use (n_used, numbered by num in the order
 * order), the measured outer shapes, each one's segments and their configurations. */
static void write_header_tables(const dispatch *d, const char *up, const size_t *num,
                                const size_t *order, size_t n_used, FILE *f)
{
    char an[128], mn[128];
    fprintf(f, "    static const tune_dispatch_%s_config td_configs[%zu] = {\n", d->name, n_used);
    for (size_t i = 0; i < n_used; i++) {
        const dispatch_cfg *cf = &d->configs[order[i]];
        const char *m = d->methods[cf->method];
        fprintf(f, "        {TUNE_DISPATCH_%s_%s, \"%s\"", up, c_name(m, 1, mn, sizeof mn), m);
        for (size_t p = 0; p < d->n_params; p++)
            fprintf(f, ", %" PRId64, point_int(&cf->params, d->params[p], -1));
        fprintf(f, "},\n");
    }
    fprintf(f, "    };\n    /* the measured outer shapes */\n");
    for (size_t a = 0; a < d->n_axes; a++) {
        if (!d->varies[a] || a == d->bp)
            continue;
        expr_type t = d->shapes[0].vals[a].type;
        fprintf(f, "    static const %s td_%s[%zu] = {",
                t == EXPR_INT ? "long" : t == EXPR_FLOAT ? "double" : "char *const",
                c_name(d->axes[a], 0, an, sizeof an), d->n_outers);
        for (size_t o = 0; o < d->n_outers; o++) {
            fprintf(f, "%s", o ? ", " : "");
            write_c_value(f, d->shapes[d->outer_first[o]].vals[a]);
        }
        fprintf(f, "};\n");
    }
    fprintf(f, "    /* outer shape o's segments: td_first[o] .. td_first[o + 1]; segment i from "
               "%s >= td_from[i] */\n    static const int td_first[%zu] = {", d->axes[d->bp],
            d->n_outers + 1);
    for (size_t o = 0; o <= d->n_outers; o++)
        fprintf(f, "%s%zu", o ? ", " : "", d->rule.first[o]);
    fprintf(f, "};\n    static const long td_from[%zu] = {", d->rule.n_seg);
    for (size_t k = 0; k < d->rule.n_seg; k++)
        fprintf(f, "%s%" PRId64, k ? ", " : "", d->rule.from[k]);
    fprintf(f, "};\n    static const int td_config[%zu] = {", d->rule.n_seg);
    for (size_t k = 0; k < d->rule.n_seg; k++)
        fprintf(f, "%s%zu", k ? ", " : "", num[d->rule.config[k]]);
    fprintf(f, "};\n");
}

/* The function's lookup: the measured outer shape equal to the call's, else the nearest; its
 * segment that holds the breakpoint axis's value; that segment's configuration. */
static void write_header_lookup(const dispatch *d, FILE *f)
{
    char an[128];
    int numeric = 0;
    for (size_t a = 0; a < d->n_axes; a++)
        if (d->varies[a] && a != d->bp)
            numeric |= d->shapes[0].vals[a].type != EXPR_STR;
    fprintf(f, "    int td_o = 0, td_s;\n    double td_best = HUGE_VAL;\n"
               "    for (int td_i = 0; td_i < %zu; td_i++) {\n        double td_d = 0;\n"
               "        int td_exact = 1;\n", d->n_outers);
    if (numeric)
        fprintf(f, "        double td_x;\n");
    for (size_t a = 0; a < d->n_axes; a++)
        if (d->varies[a] && a != d->bp)
            write_distance_term(d, a, f);
    fprintf(f, "        if (td_exact) {\n            td_o = td_i;\n            break;\n        }\n"
               "        if (td_d < td_best) {\n            td_best = td_d;\n"
               "            td_o = td_i;\n        }\n    }\n");
    fprintf(f, "    td_s = td_first[td_o];\n"
               "    while (td_s + 1 < td_first[td_o + 1] && %s >= td_from[td_s + 1])\n"
               "        td_s++;\n    *td_out = td_configs[td_config[td_s]];\n"
               "    return (int)td_out->method_id;\n}\n\n#endif\n",
            c_name(d->axes[d->bp], 0, an, sizeof an));
}

tune_status dispatch_write_header(const dispatch *d, const char *comment, FILE *f,
                                  tune_error *err)
{
    size_t *num, *order, n_used = numbered_configs(d, &num, &order);
    if (!num)
        return tune_error_set(err, TUNE_ERR_NOMEM, "dispatch", "out of memory");
    for (size_t i = 0; i < n_used; i++)
        for (size_t p = 0; p < d->configs[order[i]].params.n; p++) {
            int64_t v = d->configs[order[i]].params.vals[p].i;
            if (v < INT_MIN || v > INT_MAX) {
                free(num);
                free(order);
                return tune_error_set(err, TUNE_ERR_INVALID, "dispatch",
                                      "parameter '%s' = %" PRId64 " does not fit an int",
                                      d->configs[order[i]].params.names[p], v);
            }
        }
    char up[160];
    c_name(d->name, 1, up, sizeof up);
    write_header_comment(d, comment, f);
    write_header_declarations(d, up, f);
    write_header_tables(d, up, num, order, n_used, f);
    write_header_lookup(d, f);
    free(num);
    free(order);
    return TUNE_OK;
}
