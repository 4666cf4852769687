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
