#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonloc.h"

static const char sample[] = "{\n"
                             "  \"name\": \"sparq\",\n"
                             "  \"params\": {\n"
                             "    \"chunk\": {\"pow2\": [16, 32, 64], \"min\": 8},\n"
                             "    \"odd key\": \"x\",\n"
                             "    \"esc\\\"aped\": {\"deep\": [[1, 2], [3, {\"z\": null}]]}\n"
                             "  },\n"
                             "  \"list\": [true, false, null, -1.5e3, \"s\\\\\\\"q}\"],\n"
                             "  \"dup\": 1,\n"
                             "  \"dup\": {\"inner\": 2},\n"
                             "  \"empty\": {},\n"
                             "  \"arr\": []\n"
                             "}\n";

/* Parameters are copied into the test processes: text lives in arrays, not pointers. */
typedef struct {
    char path[64];
    jsonloc_which which;
    int line, col;
} loc_case;

static loc_case found_cases[] = {
    {"$", JSONLOC_VALUE, 1, 1},
    {"$", JSONLOC_KEY, 1, 1},
    {"$.name", JSONLOC_VALUE, 2, 11},
    {"$.name", JSONLOC_KEY, 2, 3},
    {"$[\"name\"]", JSONLOC_VALUE, 2, 11},
    {"$.params", JSONLOC_VALUE, 3, 13},
    {"$.params.chunk", JSONLOC_VALUE, 4, 14},
    {"$.params.chunk", JSONLOC_KEY, 4, 5},
    {"$.params.chunk.pow2", JSONLOC_VALUE, 4, 23},
    {"$.params.chunk.pow2", JSONLOC_KEY, 4, 15},
    {"$.params.chunk.pow2[0]", JSONLOC_VALUE, 4, 24},
    {"$.params.chunk.pow2[1]", JSONLOC_VALUE, 4, 28},
    {"$.params.chunk.pow2[2]", JSONLOC_VALUE, 4, 32},
    {"$.params.chunk.pow2[2]", JSONLOC_KEY, 4, 32},
    {"$.params.chunk.min", JSONLOC_VALUE, 4, 44},
    {"$.params.chunk.min", JSONLOC_KEY, 4, 37},
    {"$.params[\"odd key\"]", JSONLOC_VALUE, 5, 16},
    {"$.params[\"odd key\"]", JSONLOC_KEY, 5, 5},
    {"$.params[\"esc\\\"aped\"]", JSONLOC_KEY, 6, 5},
    {"$.params[\"esc\\\"aped\"].deep", JSONLOC_VALUE, 6, 27},
    {"$.params[\"esc\\\"aped\"].deep[0][1]", JSONLOC_VALUE, 6, 32},
    {"$.params[\"esc\\\"aped\"].deep[1]", JSONLOC_VALUE, 6, 36},
    {"$.params[\"esc\\\"aped\"].deep[1][1].z", JSONLOC_VALUE, 6, 46},
    {"$.params[\"esc\\\"aped\"].deep[1][1].z", JSONLOC_KEY, 6, 41},
    {"$.list[0]", JSONLOC_VALUE, 8, 12},
    {"$.list[1]", JSONLOC_VALUE, 8, 18},
    {"$.list[2]", JSONLOC_VALUE, 8, 25},
    {"$.list[3]", JSONLOC_VALUE, 8, 31},
    {"$.list[4]", JSONLOC_VALUE, 8, 39},
    {"$.dup", JSONLOC_VALUE, 10, 10},
    {"$.dup", JSONLOC_KEY, 10, 3},
    {"$.dup.inner", JSONLOC_VALUE, 10, 20},
    {"$.empty", JSONLOC_VALUE, 11, 12},
    {"$.arr", JSONLOC_VALUE, 12, 10},
    {"$.arr", JSONLOC_KEY, 12, 3},
};

ParameterizedTestParameters(jsonloc, found)
{
    return cr_make_param_array(loc_case, found_cases, sizeof found_cases / sizeof found_cases[0]);
}

ParameterizedTest(loc_case *c, jsonloc, found)
{
    int line = -1, col = -1;
    cr_assert_eq(jsonloc_find(sample, c->path, c->which, &line, &col), 0, "%s", c->path);
    cr_expect_eq(line, c->line, "%s: line %d, want %d", c->path, line, c->line);
    cr_expect_eq(col, c->col, "%s: col %d, want %d", c->path, col, c->col);
}

typedef struct {
    char path[64];
} path_case;

static path_case missing_cases[] = {
    {"$.nope"},
    {"$.Name"},
    {"$.list[5]"},
    {"$.list[99999999999999999999999]"},
    {"$.name.x"},
    {"$.name[0]"},
    {"$.list.x"},
    {"$.params[0]"},
    {"$.empty.x"},
    {"$.arr[0]"},
    {"$.dup.inner.x"},
    {"$.params.chunk.pow2[3]"},
    {"$[\"nam\"]"},
    {"$[\"name \"]"},
    {"$.dup[0]"},
    /* malformed paths */
    {""},
    {"name"},
    {"$."},
    {"$.1a"},
    {"$["},
    {"$[1"},
    {"$[\"name\""},
    {"$[\"name\"x"},
    {"$x"},
    {"$.name."},
    {"$[-1]"},
    {"$[\"\\q\"]"},
    {"$[\"\\u12\"]"},
    {"$.name["},
    {" $"},
};

ParameterizedTestParameters(jsonloc, missing)
{
    return cr_make_param_array(path_case, missing_cases,
                               sizeof missing_cases / sizeof missing_cases[0]);
}

ParameterizedTest(path_case *c, jsonloc, missing)
{
    int line = 77, col = 77;
    cr_expect_eq(jsonloc_find(sample, c->path, JSONLOC_VALUE, &line, &col), -1, "'%s'", c->path);
    cr_expect_eq(line, 77, "outputs untouched on failure");
    cr_expect_eq(col, 77);
}

typedef struct {
    char text[64];
    char path[32];
} malformed_case;

static malformed_case malformed_cases[] = {
    {"", "$"},
    {"   \n ", "$"},
    {"{\"a\": 1, \"b\" 2}", "$.b"},
    {"{\"a\": [1, 2}, \"b\": 1}", "$.b"},
    {"{\"a\": 1,}", "$.a"},
    {"{\"a\": 1 \"b\": 2}", "$.b"},
    {"{\"a\": tru, \"z\": 1}", "$.z"},
    {"{\"a\": nul", "$.a"},
    {"{\"m\": 01, \"z\": 1}", "$.z"},
    {"{\"m\": 1., \"z\": 1}", "$.z"},
    {"{\"m\": -, \"z\": 1}", "$.z"},
    {"{\"m\": 1e, \"z\": 1}", "$.z"},
    {"{\"m\": \"a\nb\", \"z\": 1}", "$.z"},
    {"{\"m\": \"a\\x\", \"z\": 1}", "$.z"},
    {"{\"m\": \"\\u12g4\", \"z\": 1}", "$.z"},
    {"{\"m\": \"\\ud800\", \"z\": 1}", "$.z"},
    {"{\"m\": \"\\udc00\\ud800\", \"z\": 1}", "$.z"},
    {"{\"m\": \"unterminated, \"z\": 1}", "$.z"},
    {"{\"a\" 1}", "$.a"},
    {"{a: 1}", "$.a"},
    {"[1, 2,]", "$[2]"},
    {"[1 2]", "$[1]"},
    {"{\"a\": {\"b\": [}}, \"c\": 1}", "$.c"},
    {"{\"a\": [}", "$.a[0]"},
    {"{\"a\": ]}", "$.a"},
    {"{\"a\": 1}", "$.a.b"},
};

ParameterizedTestParameters(jsonloc, malformed)
{
    return cr_make_param_array(malformed_case, malformed_cases,
                               sizeof malformed_cases / sizeof malformed_cases[0]);
}

ParameterizedTest(malformed_case *c, jsonloc, malformed)
{
    int line, col;
    cr_expect_eq(jsonloc_find(c->text, c->path, JSONLOC_VALUE, &line, &col), -1, "'%s' in '%s'",
                 c->path, c->text);
}

typedef struct {
    char text[96];
    char path[48];
    int line, col;
} text_case;

static text_case text_cases[] = {
    /* an escaped quote and a brace inside a string do not end anything */
    {"{\"s\": \"a\\\"}b\", \"t\": 1}", "$.t", 1, 21},
    {"{\"s\": \"\\\\\", \"t\": 1}", "$.t", 1, 18},
    /* escapes in keys compare decoded */
    {"{\"caf\\u00e9\": 1, \"x\": 2}", "$[\"caf\xc3\xa9\"]", 1, 15},
    {"{\"caf\xc3\xa9\": 1, \"x\": 2}", "$[\"caf\\u00e9\"]", 1, 11},
    {"{\"\\ud83d\\ude00\": 5}", "$[\"\xf0\x9f\x98\x80\"]", 1, 18},
    {"{\"a\\/b\\n\": 5}", "$[\"a/b\\n\"]", 1, 12},
    {"{\"\": 3}", "$[\"\"]", 1, 6},
    /* lines and columns: \n starts a line, \r is an ordinary byte */
    {"\n\n  [1, 2]", "$", 3, 3},
    {"\n\n  [1, 2]", "$[1]", 3, 7},
    {"{\r\n  \"a\": 1}", "$.a", 2, 8},
    {"{\"a\":\n\n\t\"v\"}", "$.a", 3, 2},
    /* all scalar kinds are skipped correctly */
    {"[-0.5e+10, 0, 1E-2, true, false, null, \"x\", {}, [], 7]", "$[9]", 1, 53},
    /* duplicate keys: last wins, also when nested values differ in kind */
    {"{\"a\": [1], \"b\": 0, \"a\": {\"c\": 9}}", "$.a.c", 1, 31},
    {"{\"a\": 1, \"a\": 2, \"a\": 3}", "$.a", 1, 23},
    /* the text after the found value may be malformed */
    {"[0, 1, @@@", "$[1]", 1, 5},
};

ParameterizedTestParameters(jsonloc, texts)
{
    return cr_make_param_array(text_case, text_cases, sizeof text_cases / sizeof text_cases[0]);
}

ParameterizedTest(text_case *c, jsonloc, texts)
{
    int line = -1, col = -1;
    cr_assert_eq(jsonloc_find(c->text, c->path, JSONLOC_VALUE, &line, &col), 0, "'%s' in '%s'",
                 c->path, c->text);
    cr_expect_eq(line, c->line, "'%s': line %d, want %d", c->path, line, c->line);
    cr_expect_eq(col, c->col, "'%s': col %d, want %d", c->path, col, c->col);
}

Test(jsonloc, outputs_may_be_null)
{
    cr_expect_eq(jsonloc_find(sample, "$.name", JSONLOC_VALUE, NULL, NULL), 0);
    cr_expect_eq(jsonloc_find(NULL, "$", JSONLOC_VALUE, NULL, NULL), -1);
    cr_expect_eq(jsonloc_find(sample, NULL, JSONLOC_VALUE, NULL, NULL), -1);
}

/* Every proper prefix of the sample, in a buffer of exactly its size: the last member cannot be
 * known to be the last "arr" before the closing brace, and nothing may be read past the NUL. */
Test(jsonloc, truncated_text)
{
    size_t n = strlen(sample);
    size_t end = strrchr(sample, '}') - sample;
    for (size_t len = 0; len < n; len++) {
        char *prefix = malloc(len + 1);
        memcpy(prefix, sample, len);
        prefix[len] = '\0';
        int rc = jsonloc_find(prefix, "$.arr", JSONLOC_VALUE, NULL, NULL);
        cr_expect_eq(rc, len > end ? 0 : -1, "prefix of %zu bytes", len);
        jsonloc_find(prefix, "$.params[\"esc\\\"aped\"].deep[1][1].z", JSONLOC_KEY, NULL, NULL);
        free(prefix);
    }
}

/* Single-byte corruptions anywhere: no crash, no read past the end (run under ASan). */
Test(jsonloc, corrupted_text)
{
    static const char bytes[] = "{}[]\",:\\ 0-eu\n\x01\xff";
    size_t n = strlen(sample);
    char *text = malloc(n + 1);
    for (size_t at = 0; at < n; at++) {
        for (const char *b = bytes; *b; b++) {
            memcpy(text, sample, n + 1);
            text[at] = *b;
            jsonloc_find(text, "$.dup.inner", JSONLOC_VALUE, NULL, NULL);
            jsonloc_find(text, "$.params.chunk.pow2[2]", JSONLOC_KEY, NULL, NULL);
        }
    }
    free(text);
    cr_expect_eq(jsonloc_find(sample, "$.dup.inner", JSONLOC_VALUE, NULL, NULL), 0);
}

static char *nested_arrays(size_t depth, const char *after)
{
    size_t size = 2 * depth + strlen(after) + 16;
    char *text = malloc(size);
    size_t len = 0;
    len += (size_t)snprintf(text, size, "{\"a\": ");
    memset(text + len, '[', depth);
    len += depth;
    memset(text + len, ']', depth);
    len += depth;
    snprintf(text + len, size - len, "%s", after);
    return text;
}

Test(jsonloc, deep_nesting)
{
    char *ok = nested_arrays(1000, ", \"b\": 1}");
    int col = 0;
    cr_expect_eq(jsonloc_find(ok, "$.b", JSONLOC_VALUE, NULL, &col), 0);
    cr_expect_eq(col, (int)strlen(ok) - 1);
    free(ok);
    char *deep = nested_arrays(100000, ", \"b\": 1}");
    cr_expect_eq(jsonloc_find(deep, "$.b", JSONLOC_VALUE, NULL, NULL), -1,
                 "deeper than Jansson accepts");
    free(deep);
}

typedef struct {
    char start[32];
    char key[32];
    char want[48];
} key_case;

static key_case key_cases[] = {
    {"$", "params", "$.params"},
    {"$.params", "chunk", "$.params.chunk"},
    {"$", "_x9", "$._x9"},
    {"$", "odd key", "$[\"odd key\"]"},
    {"$", "1abc", "$[\"1abc\"]"},
    {"$", "", "$[\"\"]"},
    {"$", "a-b", "$[\"a-b\"]"},
    {"$", "a\"b\\c", "$[\"a\\\"b\\\\c\"]"},
    {"$", "tab\there", "$[\"tab\\u0009here\"]"},
    {"$", "caf\xc3\xa9", "$[\"caf\xc3\xa9\"]"},
    {"$[2]", "x", "$[2].x"},
};

ParameterizedTestParameters(jsonloc, path_key)
{
    return cr_make_param_array(key_case, key_cases, sizeof key_cases / sizeof key_cases[0]);
}

ParameterizedTest(key_case *c, jsonloc, path_key)
{
    char path[64];
    snprintf(path, sizeof path, "%s", c->start);
    cr_expect_eq(jsonloc_path_key(path, sizeof path, c->key), path);
    cr_expect_str_eq(path, c->want);
}

Test(jsonloc, path_index)
{
    char path[32] = "$.list";
    cr_expect_eq(jsonloc_path_index(path, sizeof path, 4), path);
    cr_expect_str_eq(path, "$.list[4]");
    jsonloc_path_index(path, sizeof path, SIZE_MAX);
    char want[64];
    snprintf(want, sizeof want, "$.list[4][%zu]", (size_t)SIZE_MAX);
    cr_expect_str_eq(path, want);
}

Test(jsonloc, path_append_truncates)
{
    char path[8] = "$";
    jsonloc_path_key(path, sizeof path, "params_long");
    cr_expect_str_eq(path, "$.param");
    jsonloc_path_index(path, sizeof path, 3);
    cr_expect_str_eq(path, "$.param", "full buffer stays unchanged");
    char unterminated[4] = {'$', '.', 'a', 'b'};
    jsonloc_path_key(unterminated, sizeof unterminated, "c");
    cr_expect_str_eq(unterminated, "$.a");
    char tiny[1] = {'x'};
    jsonloc_path_index(tiny, sizeof tiny, 1);
    cr_expect_eq(tiny[0], '\0');
    cr_expect_null(jsonloc_path_key(NULL, 8, "a"));
}

/* Paths built from odd keys find those keys in JSON that spells them with escapes. */
Test(jsonloc, built_paths_find_odd_keys)
{
    static const char text[] =
        "{\"a\\\"b\\\\c\": {\"odd key\": [0, {\"\\u0001x\": 7, \"caf\\u00e9\": 8}]}}";
    char path[128] = "$";
    jsonloc_path_key(path, sizeof path, "a\"b\\c");
    jsonloc_path_key(path, sizeof path, "odd key");
    jsonloc_path_index(path, sizeof path, 1);
    size_t len = strlen(path);
    jsonloc_path_key(path, sizeof path, "\x01x");
    int line = 0, col = 0;
    cr_assert_eq(jsonloc_find(text, path, JSONLOC_VALUE, &line, &col), 0, "%s", path);
    cr_expect_eq(line, 1);
    cr_expect_eq(col, (int)(strchr(text, '7') - text) + 1);
    path[len] = '\0';
    jsonloc_path_key(path, sizeof path, "caf\xc3\xa9");
    cr_assert_eq(jsonloc_find(text, path, JSONLOC_KEY, &line, &col), 0, "%s", path);
    cr_expect_eq(col, (int)(strstr(text, "\"caf") - text) + 1);
}

/* Duplicate keys: the first repeat in text order, with its path and both positions; escapes are
 * decoded before comparing; keys of different objects never collide. */
typedef struct {
    const char *text, *path;
    int rc, line, col, first_line, first_col;
} dup_case;

Test(jsonloc, find_duplicate)
{
    static const dup_case cases[] = {
        {"{\"a\": 1, \"b\": 2}", "", 0, 0, 0, 0, 0},
        {"{\"a\": 1, \"a\": 2}", "$.a", 1, 1, 10, 1, 2},
        {"{\"a\": {\"x\": 1}, \"b\": {\"x\": 2}}", "", 0, 0, 0, 0, 0},
        {"{\"a\": [1, {\"k\": 1,\n \"k\": 2}]}", "$.a[1].k", 1, 2, 2, 1, 12},
        {"{\"n\": 1, \"\\u006e\": 2}", "$.n", 1, 1, 10, 1, 2},
        {"{\"a b\": 1, \"a b\": 2}", "$[\"a b\"]", 1, 1, 12, 1, 2},
        {"{\"z\": {\"y\": 1, \"y\": 2}, \"z\": 3}", "$.z.y", 1, 1, 16, 1, 8},
        {"[1, 2, {}]", "", 0, 0, 0, 0, 0},
        {"\"scalar\"", "", 0, 0, 0, 0, 0},
        {"{\"a\": 1, \"a\"", "", -1, 0, 0, 0, 0}, /* malformed before the repeat ends */
        {"{\"a\": 1,, \"a\": 1}", "", -1, 0, 0, 0, 0},
        {"{\"a\":", "", -1, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const dup_case *c = &cases[i];
        char path[64] = "";
        int line = 0, col = 0, fl = 0, fc = 0;
        int rc = jsonloc_find_duplicate(c->text, path, sizeof path, &line, &col, &fl, &fc);
        cr_expect_eq(rc, c->rc, "%s: rc %d", c->text, rc);
        if (rc != 1 || c->rc != 1)
            continue;
        cr_expect_str_eq(path, c->path, "%s", c->text);
        cr_expect_eq(line, c->line, "%s: line %d", c->text, line);
        cr_expect_eq(col, c->col, "%s: col %d", c->text, col);
        cr_expect_eq(fl, c->first_line, "%s: first line %d", c->text, fl);
        cr_expect_eq(fc, c->first_col, "%s: first col %d", c->text, fc);
    }
}

/* Many keys in one object: linear, and a repeat far from the first is still found. */
Test(jsonloc, find_duplicate_many_keys, .timeout = 20)
{
    const size_t n = 200000;
    char *text = malloc(n * 16 + 64);
    cr_assert_not_null(text);
    size_t len = 0;
    text[len++] = '{';
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(text + len, "\"k%zu\": 0, ", i);
    len += (size_t)sprintf(text + len, "\"k7\": 1}");
    char path[64];
    int line, col, fl, fc;
    cr_expect_eq(jsonloc_find_duplicate(text, path, sizeof path, &line, &col, &fl, &fc), 1);
    cr_expect_str_eq(path, "$.k7");
    cr_expect_eq(fc, 1 + 7 * 9 + 1);
    free(text);
}

Test(jsonloc, find_duplicate_deep_nesting)
{
    size_t depth = 3000;
    char *text = malloc(2 * depth + 1);
    memset(text, '[', depth);
    memset(text + depth, ']', depth);
    text[2 * depth] = '\0';
    char path[64];
    cr_expect_eq(jsonloc_find_duplicate(text, path, sizeof path, NULL, NULL, NULL, NULL), -1);
    free(text);
}
