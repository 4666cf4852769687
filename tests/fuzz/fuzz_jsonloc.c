/* fuzz_jsonloc.c - libFuzzer target for jsonloc (JSON path -> line:column in JSON text).
 *
 * Input: "<path>\n<JSON text>" (the text cut at the first NUL byte). The target calls jsonloc_find
 * with the path on the text for both JSONLOC_VALUE and JSONLOC_KEY, and builds paths with
 * jsonloc_path_key / jsonloc_path_index into small buffers (the first path byte picks the size).
 * It also looks for duplicate keys (jsonloc_find_duplicate) in every text Jansson parses.
 * Properties checked (a violation aborts, so libFuzzer saves the input):
 *   - a found position lies inside the text;
 *   - when Jansson accepts the text (as sweep_parse loads it): a value position is at the first
 *     character of a JSON value, a key position at a '"' (members) or at the value (elements and
 *     the root); and when the path is plain (".name", "[\"key\"]", "[N]" with N in canonical
 *     decimal), jsonloc finds it exactly when Jansson's tree holds it, with the value of the same
 *     JSON type;
 *   - the path builders always NUL-terminate inside their buffer.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonloc.h"

static void fail(const char *what, const char *path, int line, int col)
{
    fprintf(stderr, "fuzz_jsonloc: %s (path '%s', at %d:%d)\n", what, path, line, col);
    abort();
}

/* Byte offset of 1-based line:col in text, or -1 when outside it. */
static long offset_of(const char *text, int line, int col)
{
    if (line < 1 || col < 1)
        return -1;
    const char *p = text;
    for (int l = 1; l < line; l++) {
        p = strchr(p, '\n');
        if (!p)
            return -1;
        p++;
    }
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    if ((size_t)(col - 1) > len)
        return -1;
    return (long)(p - text) + col - 1;
}

static int starts_value(char ch)
{
    return ch == '{' || ch == '[' || ch == '"' || ch == '-' || (ch >= '0' && ch <= '9') ||
           ch == 't' || ch == 'f' || ch == 'n';
}

/* The type of value at ch (valid JSON), for comparison with Jansson's. */
static json_type type_at(char ch)
{
    switch (ch) {
    case '{': return JSON_OBJECT;
    case '[': return JSON_ARRAY;
    case '"': return JSON_STRING;
    case 't': return JSON_TRUE;
    case 'f': return JSON_FALSE;
    case 'n': return JSON_NULL;
    default: return JSON_INTEGER; /* or JSON_REAL: numbers compare as numbers */
    }
}

/* Resolves a plain path in Jansson's tree. 1: found (*out), 0: absent, -1: not a plain path. */
static int resolve(json_t *root, const char *path, json_t **out)
{
    if (path[0] != '$')
        return -1;
    const char *p = path + 1;
    json_t *v = root;
    while (*p) {
        if (*p == '.') {
            const char *s = ++p;
            if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_'))
                return -1;
            while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_' ||
                   (*p >= '0' && *p <= '9'))
                p++;
            if (!v || !json_is_object(v))
                v = NULL;
            else
                v = json_object_getn(v, s, (size_t)(p - s));
        } else if (p[0] == '[' && p[1] == '"') {
            /* the quoted key, decoded by Jansson itself */
            const char *q = p + 2;
            while (*q && *q != '"')
                q += (*q == '\\' && q[1]) ? 2 : 1;
            if (q[0] != '"' || q[1] != ']')
                return -1;
            json_error_t jerr;
            json_t *key = json_loadb(p + 1, (size_t)(q + 1 - (p + 1)), JSON_DECODE_ANY | JSON_ALLOW_NUL,
                                     &jerr);
            if (!key || !json_is_string(key)) {
                json_decref(key);
                return -1;
            }
            if (!v || !json_is_object(v))
                v = NULL;
            else
                v = json_object_getn(v, json_string_value(key), json_string_length(key));
            json_decref(key);
            p = q + 2;
        } else if (p[0] == '[' && p[1] >= '0' && p[1] <= '9') {
            const char *s = ++p;
            size_t idx = 0;
            while (*p >= '0' && *p <= '9' && p - s < 9)
                idx = idx * 10 + (size_t)(*p++ - '0');
            if (*p != ']' || (s[0] == '0' && p - s > 1))
                return -1; /* leading zeros or too long: not plain */
            p++;
            if (!v || !json_is_array(v))
                v = NULL;
            else
                v = json_array_get(v, idx);
        } else {
            return -1;
        }
    }
    *out = v;
    return v != NULL;
}

static void check_builders(const char *key, size_t size)
{
    char buf[64];
    if (size > sizeof buf)
        size = sizeof buf;
    if (size == 0)
        return;
    memset(buf, 'x', sizeof buf);
    buf[0] = '$';
    if (size > 1)
        buf[1] = '\0';
    else
        buf[0] = '\0';
    jsonloc_path_key(buf, size, key);
    if (!memchr(buf, '\0', size))
        fail("jsonloc_path_key left no NUL in its buffer", key, 0, 0);
    jsonloc_path_index(buf, size, (size_t)size * 977u);
    if (!memchr(buf, '\0', size))
        fail("jsonloc_path_index left no NUL in its buffer", key, 0, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t path_len = nl ? (size_t)(nl - data) : size;
    char *path = malloc(path_len + 1);
    size_t text_len = nl ? size - path_len - 1 : 0;
    char *text = malloc(text_len + 1);
    if (!path || !text) {
        free(path);
        free(text);
        return 0;
    }
    memcpy(path, data, path_len);
    path[path_len] = '\0';
    if (nl)
        memcpy(text, nl + 1, text_len);
    text[text_len] = '\0';

    check_builders(path, path_len ? (unsigned char)path[0] % 48 : 1);

    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    int found[2] = {0, 0};
    char first[2] = {0, 0};
    for (int which = 0; which < 2; which++) {
        int line = 0, col = 0;
        if (jsonloc_find(text, path, which ? JSONLOC_KEY : JSONLOC_VALUE, &line, &col) != 0)
            continue;
        long off = offset_of(text, line, col);
        if (off < 0 || (size_t)off >= strlen(text))
            fail("position outside the text", path, line, col);
        found[which] = 1;
        first[which] = text[off];
        if (root && which == 0 && !starts_value(text[off]))
            fail("value position not at a JSON value", path, line, col);
        if (root && which == 1 && text[off] != '"' && !starts_value(text[off]))
            fail("key position neither at a key nor at a value", path, line, col);
    }
    if (found[0] != found[1])
        fail("found as a value but not as a key, or the other way round", path, 0, 0);
    if (root) {
        /* duplicates: found exactly when Jansson refuses them, at a key */
        char dpath[64];
        int dl = 0, dc = 0, fl = 0, fc = 0;
        int dup = jsonloc_find_duplicate(text, dpath, sizeof dpath, &dl, &dc, &fl, &fc);
        json_t *strict = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
        if (dup < 0 || (dup == 1) != (strict == NULL))
            fail("jsonloc_find_duplicate disagrees with JSON_REJECT_DUPLICATES", dpath, dl, dc);
        json_decref(strict);
        if (dup == 1) {
            long off = offset_of(text, dl, dc), first_off = offset_of(text, fl, fc);
            if (off < 0 || first_off < 0 || first_off >= off || text[off] != '"' ||
                text[first_off] != '"')
                fail("duplicate positions not at two keys in order", dpath, dl, dc);
        }
        json_t *v = NULL;
        int r = resolve(root, path, &v);
        if (r >= 0 && r != found[0])
            fail(r ? "Jansson has the path, jsonloc does not find it"
                   : "jsonloc finds a path Jansson does not have",
                 path, 0, 0);
        if (r == 1) {
            json_type want = json_typeof(v) == JSON_REAL ? JSON_INTEGER : json_typeof(v);
            if (type_at(first[0]) != want)
                fail("jsonloc's value has another type than Jansson's", path, 0, 0);
        }
        json_decref(root);
    }
    free(path);
    free(text);
    return 0;
}
