#include "core/jsonloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deeper documents are refused, as Jansson refuses them (JSON_PARSER_MAX_DEPTH). */
#define JSONLOC_MAX_DEPTH 2048

typedef struct {
    const char *p;
    int line, col;
} cursor;

/* Where decoded string bytes go: into out when set, else compared with key[0..key_len). */
typedef struct {
    char *out;
    const char *key;
    size_t key_len, n;
    int differs;
} str_sink;

static void cursor_advance(cursor *c)
{
    if (*c->p == '\n') {
        c->line++;
        c->col = 1;
    } else {
        c->col++;
    }
    c->p++;
}

static void cursor_skip(cursor *c, size_t n)
{
    while (n-- > 0 && *c->p)
        cursor_advance(c);
}

static void skip_ws(cursor *c)
{
    while (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')
        cursor_advance(c);
}

static int is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static void sink_put(str_sink *s, const char *bytes, size_t n)
{
    for (size_t k = 0; k < n; k++, s->n++) {
        if (s->out)
            s->out[s->n] = bytes[k];
        else if (s->n >= s->key_len || s->key[s->n] != bytes[k])
            s->differs = 1;
    }
}

static int sink_matches(const str_sink *s)
{
    return !s->differs && s->n == s->key_len;
}

/* Four hex digits after "\u"; -1 when malformed. */
static long read_hex4(cursor *c)
{
    long v = 0;
    for (int k = 0; k < 4; k++) {
        char ch = *c->p;
        int d = is_digit(ch)               ? ch - '0'
                : (ch >= 'a' && ch <= 'f') ? ch - 'a' + 10
                : (ch >= 'A' && ch <= 'F') ? ch - 'A' + 10
                                           : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
        cursor_advance(c);
    }
    return v;
}

static size_t utf8_encode(long cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* c after "\u": a code point, joining a surrogate pair; -1 when malformed. */
static long read_code_point(cursor *c)
{
    long hi = read_hex4(c);
    if (hi < 0xD800 || hi > 0xDFFF)
        return hi;
    if (hi > 0xDBFF || c->p[0] != '\\' || c->p[1] != 'u')
        return -1;
    cursor_skip(c, 2);
    long lo = read_hex4(c);
    if (lo < 0xDC00 || lo > 0xDFFF)
        return -1;
    return 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
}

static int read_escape(cursor *c, str_sink *sink)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    char ch = *c->p;
    const char *hit = ch ? strchr(from, ch) : NULL;
    cursor_advance(c);
    if (hit) {
        sink_put(sink, &to[hit - from], 1);
        return 0;
    }
    if (ch != 'u')
        return -1;
    long cp = read_code_point(c);
    if (cp < 0)
        return -1;
    char utf8[4];
    sink_put(sink, utf8, utf8_encode(cp, utf8));
    return 0;
}

/* A JSON string starting at its opening quote; decoded bytes go to sink. */
static int scan_string(cursor *c, str_sink *sink)
{
    if (*c->p != '"')
        return -1;
    cursor_advance(c);
    while (*c->p != '"') {
        unsigned char ch = (unsigned char)*c->p;
        if (ch < 0x20) /* also the terminating NUL */
            return -1;
        cursor_advance(c);
        if (ch == '\\') {
            if (read_escape(c, sink))
                return -1;
        } else {
            sink_put(sink, (const char *)&ch, 1);
        }
    }
    cursor_advance(c);
    return 0;
}

static int scan_digits(cursor *c)
{
    if (!is_digit(*c->p))
        return -1;
    while (is_digit(*c->p))
        cursor_advance(c);
    return 0;
}

static int scan_number(cursor *c)
{
    if (*c->p == '-')
        cursor_advance(c);
    if (*c->p == '0')
        cursor_advance(c);
    else if (scan_digits(c))
        return -1;
    if (*c->p == '.') {
        cursor_advance(c);
        if (scan_digits(c))
            return -1;
    }
    if (*c->p == 'e' || *c->p == 'E') {
        cursor_advance(c);
        if (*c->p == '+' || *c->p == '-')
            cursor_advance(c);
        if (scan_digits(c))
            return -1;
    }
    return 0;
}

static int scan_scalar(cursor *c)
{
    static const char *const words[] = {"true", "false", "null"};
    if (*c->p == '"') {
        str_sink skip = {0};
        return scan_string(c, &skip);
    }
    if (*c->p == '-' || is_digit(*c->p))
        return scan_number(c);
    for (size_t k = 0; k < 3; k++) {
        size_t n = strlen(words[k]);
        if (strncmp(c->p, words[k], n) == 0) { /* stops at a NUL in the text */
            cursor_skip(c, n);
            return 0;
        }
    }
    return -1;
}

/* A member's key and its colon; leaves c at the value. *key_at gets the key's position. */
static int scan_key(cursor *c, str_sink *sink, cursor *key_at)
{
    skip_ws(c);
    if (key_at)
        *key_at = *c;
    if (scan_string(c, sink))
        return -1;
    skip_ws(c);
    if (*c->p != ':')
        return -1;
    cursor_advance(c);
    skip_ws(c);
    return 0;
}

/* After a value inside containers: closes finished containers and consumes one comma (and the
 * next key in an object). 1: another value follows; 0: depth reached 0; -1: malformed. */
static int scan_after_value(cursor *c, const char *stack, size_t *depth)
{
    while (*depth > 0) {
        skip_ws(c);
        char open = stack[*depth - 1];
        if (*c->p == ',') {
            cursor_advance(c);
            str_sink skip = {0};
            return open == '{' && scan_key(c, &skip, NULL) ? -1 : 1;
        }
        if (*c->p != (open == '{' ? '}' : ']'))
            return -1;
        cursor_advance(c);
        (*depth)--;
    }
    return 0;
}

/* Skips one value (iteratively, so deep nesting cannot exhaust the stack). */
static int skip_value(cursor *c)
{
    char stack[JSONLOC_MAX_DEPTH];
    size_t depth = 0;
    for (;;) {
        skip_ws(c);
        char open = *c->p;
        if (open == '{' || open == '[') {
            cursor_advance(c);
            skip_ws(c);
            if (*c->p == (open == '{' ? '}' : ']')) {
                cursor_advance(c);
            } else {
                str_sink skip = {0};
                if (depth == JSONLOC_MAX_DEPTH || (open == '{' && scan_key(c, &skip, NULL)))
                    return -1;
                stack[depth++] = open;
                continue;
            }
        } else if (scan_scalar(c)) {
            return -1;
        }
        int next = scan_after_value(c, stack, &depth);
        if (next <= 0)
            return next;
    }
}

/* c at an object: moves c to the value of its last member named key. */
static int find_member(cursor *c, const char *key, size_t key_len, cursor *key_at)
{
    if (*c->p != '{')
        return -1;
    cursor_advance(c);
    skip_ws(c);
    if (*c->p == '}')
        return -1;
    cursor found = {0}, found_key = {0};
    for (;;) {
        str_sink cmp = {.key = key, .key_len = key_len};
        cursor at;
        if (scan_key(c, &cmp, &at))
            return -1;
        if (sink_matches(&cmp)) {
            found = *c;
            found_key = at;
        }
        if (skip_value(c))
            return -1;
        skip_ws(c);
        if (*c->p == '}')
            break;
        if (*c->p != ',')
            return -1;
        cursor_advance(c);
    }
    if (!found.p)
        return -1;
    *c = found;
    *key_at = found_key;
    return 0;
}

/* c at an array: moves c to element index. */
static int find_element(cursor *c, size_t index)
{
    if (*c->p != '[')
        return -1;
    cursor_advance(c);
    for (size_t k = 0;; k++) {
        skip_ws(c);
        if (k == index)
            return *c->p == ']' ? -1 : 0;
        if (skip_value(c))
            return -1;
        skip_ws(c);
        if (*c->p != ',')
            return -1;
        cursor_advance(c);
    }
}

typedef struct {
    int is_index;
    size_t index;
    const char *key;
    size_t key_len;
} path_seg;

static int is_ident_start(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}
static int is_ident_char(char ch)
{
    return is_ident_start(ch) || is_digit(ch);
}

/* Next segment of a path at *pp; a ["..."] key is decoded into keybuf. */
static int path_next(const char **pp, path_seg *seg, char *keybuf)
{
    const char *p = *pp;
    *seg = (path_seg){0};
    if (p[0] == '.' && is_ident_start(p[1])) {
        seg->key = ++p;
        while (is_ident_char(*p))
            p++;
        seg->key_len = (size_t)(p - seg->key);
    } else if (p[0] == '[' && p[1] == '"') {
        cursor c = {p + 1, 1, 1};
        str_sink sink = {.out = keybuf};
        if (scan_string(&c, &sink) || *c.p != ']')
            return -1;
        seg->key = keybuf;
        seg->key_len = sink.n;
        p = c.p + 1;
    } else if (p[0] == '[' && is_digit(p[1])) {
        seg->is_index = 1;
        for (p++; is_digit(*p); p++) {
            size_t d = (size_t)(*p - '0');
            if (seg->index > (SIZE_MAX - d) / 10)
                return -1;
            seg->index = seg->index * 10 + d;
        }
        if (*p++ != ']')
            return -1;
    } else {
        return -1;
    }
    *pp = p;
    return 0;
}

static int is_value_start(char ch)
{
    return ch == '{' || ch == '[' || ch == '"' || ch == '-' || is_digit(ch) || ch == 't' ||
           ch == 'f' || ch == 'n';
}

/* Follows the path from the root value at *c; *key_at follows the last member key. */
static int follow_path(cursor *c, const char *path, char *keybuf, cursor *key_at)
{
    for (const char *p = path + 1; *p;) {
        path_seg seg;
        if (path_next(&p, &seg, keybuf))
            return -1;
        if (seg.is_index ? find_element(c, seg.index)
                         : find_member(c, seg.key, seg.key_len, key_at))
            return -1;
        if (seg.is_index)
            *key_at = *c;
    }
    return is_value_start(*c->p) ? 0 : -1;
}

int jsonloc_find(const char *text, const char *path, jsonloc_which which, int *line, int *col)
{
    if (!text || !path || path[0] != '$')
        return -1;
    char *keybuf = malloc(strlen(path) + 1); /* decoded keys are never longer than the path */
    if (!keybuf)
        return -1;
    cursor c = {text, 1, 1};
    skip_ws(&c);
    cursor key_at = c;
    int rc = follow_path(&c, path, keybuf, &key_at);
    free(keybuf);
    if (rc)
        return -1;
    const cursor *at = which == JSONLOC_KEY ? &key_at : &c;
    if (line)
        *line = at->line;
    if (col)
        *col = at->col;
    return 0;
}

/* Appends bytes while they fit, keeping path NUL-terminated. */
typedef struct {
    char *buf;
    size_t size, len;
} appender;

static void append(appender *a, const char *s, size_t n)
{
    for (size_t k = 0; k < n && a->len + 1 < a->size; k++)
        a->buf[a->len++] = s[k];
    a->buf[a->len] = '\0';
}

static appender appender_open(char *path, size_t size)
{
    appender a = {path, size, strnlen(path, size)};
    if (a.len == size) /* not terminated: truncate */
        a.len = size - 1;
    path[a.len] = '\0';
    return a;
}

static int is_ident(const char *s)
{
    if (!is_ident_start(*s))
        return 0;
    while (is_ident_char(*s))
        s++;
    return *s == '\0';
}

static void append_escaped(appender *a, const char *key)
{
    for (const unsigned char *s = (const unsigned char *)key; *s; s++) {
        char esc[8];
        if (*s == '"' || *s == '\\')
            snprintf(esc, sizeof esc, "\\%c", *s);
        else if (*s < 0x20)
            snprintf(esc, sizeof esc, "\\u%04x", *s);
        else
            snprintf(esc, sizeof esc, "%c", *s);
        append(a, esc, strlen(esc));
    }
}

char *jsonloc_path_key(char *path, size_t size, const char *key)
{
    if (!path || size == 0 || !key)
        return path;
    appender a = appender_open(path, size);
    if (is_ident(key)) {
        append(&a, ".", 1);
        append(&a, key, strlen(key));
    } else {
        append(&a, "[\"", 2);
        append_escaped(&a, key);
        append(&a, "\"]", 2);
    }
    return path;
}

char *jsonloc_path_index(char *path, size_t size, size_t index)
{
    if (!path || size == 0)
        return path;
    appender a = appender_open(path, size);
    char seg[32];
    int n = snprintf(seg, sizeof seg, "[%zu]", index);
    append(&a, seg, (size_t)n);
    return path;
}

/* ---- duplicate keys ---- */

/* A key seen in an object: its hash, where its opening quote is, its position. */
typedef struct {
    uint64_t hash;
    const char *at;
    int line, col;
} dup_key;

/* One open container of the scan. Objects keep their keys in an open-addressing table (slots hold
 * index + 1; 0 is empty), so an object of n keys costs O(n), not O(n^2). */
typedef struct {
    char open;   /* '{' or '[' */
    size_t index; /* arrays: the current element */
    char *key;    /* objects: the current member's decoded key (new) */
    dup_key *keys;
    size_t n, cap;
    size_t *slots;
    size_t n_slots;
} dup_frame;

static void dup_frame_free(dup_frame *f)
{
    free(f->key);
    free(f->keys);
    free(f->slots);
    memset(f, 0, sizeof *f);
}

/* New decoded copy of the JSON string at `at` (its opening quote), its length in *len. */
static char *dup_decode(const char *at, size_t *len)
{
    cursor c = {at, 1, 1};
    str_sink count = {0};
    if (scan_string(&c, &count))
        return NULL;
    char *out = malloc(count.n + 1);
    if (!out)
        return NULL;
    c = (cursor){at, 1, 1};
    str_sink sink = {.out = out};
    scan_string(&c, &sink);
    out[sink.n] = '\0';
    *len = sink.n;
    return out;
}

static uint64_t dup_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

static int dup_grow(dup_frame *f)
{
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        dup_key *k = realloc(f->keys, cap * sizeof *k);
        if (!k)
            return -1;
        f->keys = k;
        f->cap = cap;
    }
    if (2 * (f->n + 1) <= f->n_slots)
        return 0;
    size_t n_slots = f->n_slots ? f->n_slots * 2 : 32;
    size_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < f->n; i++) {
        size_t s = (size_t)f->keys[i].hash & (n_slots - 1);
        while (slots[s])
            s = (s + 1) & (n_slots - 1);
        slots[s] = i + 1;
    }
    free(f->slots);
    f->slots = slots;
    f->n_slots = n_slots;
    return 0;
}

/* The key at `at` into the object's table: 1 and *first when an earlier key has the same text,
 * 0 when it is new, -1 on malformed text or no memory. f->key becomes the decoded key. */
static int dup_add_key(dup_frame *f, const cursor *at, const dup_key **first)
{
    size_t len, other_len;
    free(f->key);
    if (!(f->key = dup_decode(at->p, &len)) || dup_grow(f))
        return -1;
    uint64_t h = dup_hash(f->key, len);
    size_t s = (size_t)h & (f->n_slots - 1);
    for (; f->slots[s]; s = (s + 1) & (f->n_slots - 1)) {
        const dup_key *k = &f->keys[f->slots[s] - 1];
        if (k->hash != h)
            continue;
        char *other = dup_decode(k->at, &other_len);
        int same = other && other_len == len && memcmp(other, f->key, len) == 0;
        free(other);
        if (same) {
            *first = k;
            return 1;
        }
    }
    f->keys[f->n] = (dup_key){h, at->p, at->line, at->col};
    f->slots[s] = ++f->n;
    return 0;
}

/* "$.a[2].b" of the innermost member from the open containers. */
static void dup_path(const dup_frame *frames, size_t depth, char *path, size_t size)
{
    snprintf(path, size, "$");
    for (size_t i = 0; i < depth; i++) {
        if (frames[i].open == '{')
            jsonloc_path_key(path, size, frames[i].key ? frames[i].key : "");
        else
            jsonloc_path_index(path, size, frames[i].index);
    }
}

typedef struct {
    dup_frame *frames;
    size_t depth;
    char *path;
    size_t size;
    int *line, *col, *first_line, *first_col;
} dup_scan;

/* A member's key at c (after '{' or ','): 0 new, 1 a duplicate (outputs filled), -1 malformed. */
static int dup_member(dup_scan *d, cursor *c)
{
    str_sink skip = {0};
    cursor at;
    if (scan_key(c, &skip, &at))
        return -1;
    const dup_key *first = NULL;
    int rc = dup_add_key(&d->frames[d->depth - 1], &at, &first);
    if (rc == 1) {
        dup_path(d->frames, d->depth, d->path, d->size);
        *d->line = at.line;
        *d->col = at.col;
        *d->first_line = first->line;
        *d->first_col = first->col;
    }
    return rc;
}

/* After a value: closes finished containers, then moves to the next value (1), or reports the
 * end of the document (0), a duplicate (2) or malformed text (-1). */
static int dup_next(dup_scan *d, cursor *c)
{
    while (d->depth > 0) {
        dup_frame *f = &d->frames[d->depth - 1];
        skip_ws(c);
        if (*c->p == ',') {
            cursor_advance(c);
            if (f->open == '[') {
                f->index++;
                return 1;
            }
            int rc = dup_member(d, c);
            return rc == 0 ? 1 : rc == 1 ? 2 : -1;
        }
        if (*c->p != (f->open == '{' ? '}' : ']'))
            return -1;
        cursor_advance(c);
        dup_frame_free(f);
        d->depth--;
    }
    return 0;
}

/* The walk of jsonloc_find_duplicate: iterative over the containers, like skip_value. */
static int dup_walk(dup_scan *d, cursor *c)
{
    for (;;) {
        skip_ws(c);
        char open = *c->p;
        if (open == '{' || open == '[') {
            if (d->depth == JSONLOC_MAX_DEPTH)
                return -1;
            cursor_advance(c);
            skip_ws(c);
            if (*c->p == (open == '{' ? '}' : ']')) {
                cursor_advance(c);
            } else {
                d->frames[d->depth++] = (dup_frame){.open = open};
                if (open == '{') {
                    int rc = dup_member(d, c);
                    if (rc != 0)
                        return rc;
                }
                continue;
            }
        } else if (scan_scalar(c)) {
            return -1;
        }
        int next = dup_next(d, c);
        if (next != 1)
            return next == 2 ? 1 : next;
    }
}

int jsonloc_find_duplicate(const char *text, char *path, size_t size, int *line, int *col,
                           int *first_line, int *first_col)
{
    if (!text || !path || size == 0)
        return -1;
    int l, cl, fl, fc;
    dup_scan d = {calloc(JSONLOC_MAX_DEPTH, sizeof(dup_frame)), 0, path, size,
                  line ? line : &l, col ? col : &cl, first_line ? first_line : &fl,
                  first_col ? first_col : &fc};
    if (!d.frames)
        return -1;
    cursor c = {text, 1, 1};
    int rc = dup_walk(&d, &c);
    for (size_t i = 0; i < d.depth; i++)
        dup_frame_free(&d.frames[i]);
    free(d.frames);
    return rc;
}
