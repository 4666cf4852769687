/* sweep_search.c - part of the sweep module (model/sweep.h): the "search" object, which says
 * which configurations a run measures (docs/search.md). */
#include <math.h>

#include "model/sweep_impl.h"

static const char *const sweep_search_keys[] = {
    "strategy", "budget", "time_limit_s", "seed", "batch", "warm_start", "features", NULL};
static const char *const sweep_search_strategies[] = {"exhaustive", "random", "model", NULL};
#define SWEEP_SEARCH_MAX_BATCH 1000000
#define SWEEP_SEARCH_MAX_TIME_S (366.0 * 86400)
#define SWEEP_SEARCH_MAX_WARM 64

static int parse_strategy(const sweep_ctx *cx, json_t *obj, sweep_search *s)
{
    char p[SWEEP_PATH_SIZE], list[SWEEP_LIST_SIZE];
    json_t *v = json_object_get(obj, "strategy");
    if (!v)
        return 0;
    sweep_path_key(p, "$.search", "strategy");
    sweep_join_list(list, sizeof list, sweep_search_strategies);
    if (!json_is_string(v))
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected one of %s for search.strategy, got %s", list,
                          sweep_json_kind(v));
    if (search_strategy_parse(json_string_value(v), &s->opt.strategy) != 0)
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected one of %s for search.strategy, got '%s'", list,
                          json_string_value(v));
    return 0;
}

/* "10%" (a fraction of the run's candidates) or a count: an integer, or its text; "/shape" makes
 * it each shape's. */
static int parse_budget(const sweep_ctx *cx, json_t *obj, sweep_search *s)
{
    char p[SWEEP_PATH_SIZE], text[64];
    json_t *v = json_object_get(obj, "budget");
    if (!v)
        return 0;
    sweep_path_key(p, "$.search", "budget");
    const char *what = "expected a count (an integer >= 1) or a percentage of the run's "
                       "candidates in (0, 100] such as \"10%\", each shape's with /shape "
                       "(\"10%/shape\")";
    if (json_is_integer(v))
        snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_string(v))
        snprintf(text, sizeof text, "%s", json_string_value(v));
    else
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE, "%s, got %s", what,
                          sweep_json_kind(v));
    if (search_budget_parse(text, &s->opt.budget_fraction, &s->opt.budget_count,
                            &s->opt.scope) != 0)
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE, "%s, got '%.40s'", what,
                          json_is_string(v) ? json_string_value(v) : text);
    return 0;
}

static int parse_int(const sweep_ctx *cx, json_t *obj, const char *key, int64_t min,
                      int64_t max, int64_t *out)
{
    char p[SWEEP_PATH_SIZE];
    json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    sweep_path_key(p, "$.search", key);
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
        char got[64];
        if (json_is_integer(v))
            snprintf(got, sizeof got, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        else
            snprintf(got, sizeof got, "%s", sweep_json_kind(v));
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected an integer in [%" PRId64 ", %" PRId64 "] for search.%s, "
                          "got %s",
                          min, max, key, got);
    }
    *out = (int64_t)json_integer_value(v);
    return 0;
}

static int parse_time_limit(const sweep_ctx *cx, json_t *obj, sweep_search *s)
{
    char p[SWEEP_PATH_SIZE];
    json_t *v = json_object_get(obj, "time_limit_s");
    if (!v)
        return 0;
    sweep_path_key(p, "$.search", "time_limit_s");
    if (!json_is_number(v))
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected a number of seconds in (0, %.0f] for search.time_limit_s, "
                          "got %s",
                          SWEEP_SEARCH_MAX_TIME_S, sweep_json_kind(v));
    double x = json_number_value(v);
    if (!(x > 0 && x <= SWEEP_SEARCH_MAX_TIME_S))
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected a number of seconds in (0, %.0f] for search.time_limit_s, "
                          "got %g",
                          SWEEP_SEARCH_MAX_TIME_S, x);
    s->time_limit_s = x;
    return 0;
}

/* A folder or a list of distinct folders (earlier results of the sweep). */
static int parse_warm_start(const sweep_ctx *cx, json_t *obj, sweep_search *s)
{
    char p[SWEEP_PATH_SIZE], q[SWEEP_PATH_SIZE];
    json_t *v = json_object_get(obj, "warm_start");
    if (!v)
        return 0;
    sweep_path_key(p, "$.search", "warm_start");
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    if (!json_is_array(v) && !json_is_string(v))
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected a results folder or an array of them, got %s",
                          sweep_json_kind(v));
    if (n == 0 || n > SWEEP_SEARCH_MAX_WARM)
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected 1 to %d results folders, got %zu", SWEEP_SEARCH_MAX_WARM, n);
    if (!(s->warm_start = calloc(n, sizeof *s->warm_start)))
        return sweep_nomem(cx);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
        const char *at = json_is_array(v) ? sweep_path_index(q, p, i) : p;
        if (!json_is_string(e) || !json_string_value(e)[0])
            return sweep_fail(cx, TUNE_ERR_INVALID, at, JSONLOC_VALUE,
                              "expected a results folder (a non-empty string), got %s",
                              json_is_string(e) ? "an empty string" : sweep_json_kind(e));
        for (size_t j = 0; j < i; j++)
            if (strcmp(s->warm_start[j], json_string_value(e)) == 0)
                return sweep_fail(cx, TUNE_ERR_INVALID, at, JSONLOC_VALUE,
                                  "results folder '%s' is listed twice", json_string_value(e));
        if (!(s->warm_start[i] = sweep_strdup(cx, json_string_value(e))))
            return -1;
        s->n_warm_start++;
    }
    return 0;
}

static int feature_name_ok(const char *s)
{
    if (!(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')))
        return 0;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
              (*s >= '0' && *s <= '9')))
            return 0;
    return 1;
}

/* {"name": "expr", ...}: derived features of the model over the problem axes, "method", the
 * parameters and the features before them (docs/search.md). */
static int parse_features(const sweep_ctx *cx, json_t *obj, sweep *sw)
{
    sweep_search *s = &sw->search;
    char p[SWEEP_PATH_SIZE], q[SWEEP_PATH_SIZE];
    json_t *v = json_object_get(obj, "features");
    if (!v)
        return 0;
    sweep_path_key(p, "$.search", "features");
    if (!json_is_object(v))
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected an object of derived features {\"name\": \"expression\"}, "
                          "got %s",
                          sweep_json_kind(v));
    size_t n = json_object_size(v);
    if (n == 0 || n > SEARCH_MAX_DERIVED)
        return sweep_fail(cx, TUNE_ERR_INVALID, p, JSONLOC_VALUE,
                          "expected 1 to %d derived features, got %zu", SEARCH_MAX_DERIVED, n);
    const char *scope[SEARCH_MAX_FEATURES];
    size_t n_scope = sweep_search_features(sw, scope), n_base = n_scope;
    s->feature_names = calloc(n, sizeof *s->feature_names);
    s->feature_src = calloc(n, sizeof *s->feature_src);
    s->features = calloc(n, sizeof *s->features);
    if (!s->feature_names || !s->feature_src || !s->features)
        return sweep_nomem(cx);
    const char *name;
    json_t *e;
    json_object_foreach(v, name, e) {
        sweep_path_key(q, p, name);
        if (!feature_name_ok(name))
            return sweep_fail(cx, TUNE_ERR_INVALID, q, JSONLOC_KEY,
                              "expected a feature name ([A-Za-z_][A-Za-z0-9_]*), got '%s'", name);
        for (size_t j = 0; j < n_scope; j++)
            if (strcmp(scope[j], name) == 0)
                return sweep_fail(cx, TUNE_ERR_INVALID, q, JSONLOC_KEY,
                                  "feature '%s' is already a %s: name a derived feature "
                                  "differently",
                                  name,
                                  j >= n_base ? "derived feature"
                                              : "problem axis, method or parameter");
        if (!json_is_string(e))
            return sweep_fail(cx, TUNE_ERR_INVALID, q, JSONLOC_VALUE,
                              "expected an expression (a string) over the problem axes, method, "
                              "the parameters and the features before it, got %s",
                              sweep_json_kind(e));
        char what[128];
        snprintf(what, sizeof what, "search feature '%s'", name);
        expr *x = sweep_parse_expr_in(cx, json_string_value(e), scope, n_scope, what, q);
        if (!x)
            return -1;
        s->features[s->n_features] = x;
        if (!(s->feature_names[s->n_features] = sweep_strdup(cx, name)) ||
            !(s->feature_src[s->n_features++] = sweep_strdup(cx, json_string_value(e))))
            return -1;
        if (n_scope < SEARCH_MAX_FEATURES)
            scope[n_scope++] = s->feature_names[s->n_features - 1];
    }
    return 0;
}

int sweep_parse_search(const sweep_ctx *cx, json_t *root, sweep *sw)
{
    sweep_search *s = &sw->search;
    memset(s, 0, sizeof *s);
    search_options_init(&s->opt);
    json_t *v = json_object_get(root, "search");
    if (!v)
        return 0;
    s->given = 1;
    int64_t seed = (int64_t)s->opt.seed, batch = 0;
    if (sweep_expect_object(cx, v, "$.search") != 0 ||
        sweep_check_keys(cx, v, "$.search", sweep_search_keys) != 0 ||
        parse_strategy(cx, v, s) != 0 || parse_budget(cx, v, s) != 0 ||
        parse_time_limit(cx, v, s) != 0 ||
        parse_int(cx, v, "seed", 0, INT64_MAX, &seed) != 0 ||
        parse_int(cx, v, "batch", 1, SWEEP_SEARCH_MAX_BATCH, &batch) != 0 ||
        parse_warm_start(cx, v, s) != 0 || parse_features(cx, v, sw) != 0)
        return -1;
    s->opt.seed = (uint64_t)seed;
    s->opt.batch = (size_t)batch;
    char p[SWEEP_PATH_SIZE];
    if (s->n_warm_start && !sweep_search_on(s))
        return sweep_fail(cx, TUNE_ERR_INVALID, sweep_path_key(p, "$.search", "warm_start"),
                          JSONLOC_KEY,
                          "search.warm_start applies to a searched run: give a strategy other "
                          "than 'exhaustive', a budget or a time limit");
    return 0;
}

int sweep_search_on(const sweep_search *s)
{
    return s->opt.strategy != SEARCH_EXHAUSTIVE || s->opt.budget_fraction > 0 ||
           s->opt.budget_count > 0 || s->time_limit_s > 0;
}

size_t sweep_search_features(const sweep *sw, const char **names)
{
    size_t n = 0;
    for (size_t a = 0; a < sw->n_problem && n < SEARCH_MAX_FEATURES; a++)
        names[n++] = sw->problem[a].name;
    if (n < SEARCH_MAX_FEATURES)
        names[n++] = "method";
    for (size_t a = 0; a < sw->n_params && n < SEARCH_MAX_FEATURES; a++)
        names[n++] = sw->params[a].name;
    return n;
}
