/* compile_unroll.c - `#pragma unroll NAME` with NAME a -D macro of the job (compile_src.h).
 *
 * Whether macros expand inside a #pragma is left to the implementation by C++; CUDA asks for an
 * integral constant expression there. Kernel Tuner does not rely on expansion: a parameter named
 * loop_unroll_factor_* becomes a constexpr, and the value 0 removes the pragma, leaving the
 * choice to the compiler (https://github.com/KernelTuner/kernel_tuner, util.py:
 * prepare_kernel_string). NVRTC 13.0 does expand the macro, but warns on 0 and ignores the pragma.
 * Here the argument is replaced in the text handed to NVRTC by the macro's value when that value
 * is a decimal integer, so the code does not depend on either behaviour, and 0 removes the pragma
 * (a comment after it stays). The line count is kept, so NVRTC's line numbers stay the file's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/compile_src.h"

/* The value of macro name[0..len) in opts ("-DNAME=VALUE", "-D NAME=VALUE",
 * "--define-macro=NAME=VALUE"; "-DNAME" is 1): the last definition, or NULL. */
static const char *macro_value(char *const *opts, size_t n_opts, const char *name, size_t len)
{
    const char *found = NULL;
    for (size_t i = 0; i < n_opts; i++) {
        const char *o = opts[i];
        if (strncmp(o, "--define-macro=", 15) == 0)
            o += 15;
        else if (strncmp(o, "-D", 2) == 0)
            o += 2 + strspn(o + 2, " \t");
        else
            continue;
        if (strncmp(o, name, len) != 0)
            continue;
        if (o[len] == '\0')
            found = "1";
        else if (o[len] == '=')
            found = o + len + 1;
    }
    return found;
}

static int is_ident_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* The span of NAME in a line `#pragma unroll NAME` (or `(NAME)`, a comment after it allowed) that
 * starts at line: 1 with [*start, *end) the argument, parentheses included, and *name, *len the
 * name; 0 for any other line. */
static int unroll_arg(const char *line, const char **start, const char **end, const char **name,
                      size_t *len)
{
    const char *t = line + strspn(line, " \t");
    if (*t != '#')
        return 0;
    t += 1 + strspn(t + 1, " \t");
    if (strncmp(t, "pragma", 6) != 0 || (t[6] != ' ' && t[6] != '\t'))
        return 0;
    t += 6 + strspn(t + 6, " \t");
    if (strncmp(t, "unroll", 6) != 0 || (t[6] != ' ' && t[6] != '\t' && t[6] != '('))
        return 0;
    t += 6 + strspn(t + 6, " \t");
    *start = t;
    int paren = *t == '(';
    t += paren;
    t += strspn(t, " \t");
    *name = t;
    if (!(*t == '_' || (*t >= 'A' && *t <= 'Z') || (*t >= 'a' && *t <= 'z')))
        return 0;
    while (is_ident_char(*t))
        t++;
    *len = (size_t)(t - *name);
    t += strspn(t, " \t");
    if (paren && *t++ != ')')
        return 0;
    *end = t;
    t += strspn(t, " \t\r");
    return *t == '\n' || *t == '\0' || strncmp(t, "//", 2) == 0 || strncmp(t, "/*", 2) == 0;
}

/* 1 when v is a decimal integer (digits only). */
static int is_count(const char *v)
{
    return *v && strspn(v, "0123456789") == strlen(v);
}

tune_status compile_unroll_rewrite(char **text, char *const *opts, size_t n_opts)
{
    size_t cap = strlen(*text) + 1, used = 0;
    char *out = NULL;
    for (const char *line = *text; *line;) {
        const char *eol = line + strcspn(line, "\n"), *start, *end, *name, *value = NULL;
        size_t len;
        if (unroll_arg(line, &start, &end, &name, &len))
            value = macro_value(opts, n_opts, name, len);
        if (value && !is_count(value))
            value = NULL;    /* left as written: NVRTC says what it makes of it */
        if (value && !out) { /* the first rewrite: copy what came before */
            cap += 64;
            if (!(out = malloc(cap)))
                return TUNE_ERR_NOMEM;
            used = (size_t)(line - *text);
            memcpy(out, *text, used);
        }
        if (out) {
            int zero = value && strspn(value, "0") == strlen(value);
            size_t need = used + (size_t)(eol - line) + strlen(value ? value : "") + 2;
            char *grown = need > cap ? realloc(out, cap = 2 * need) : out;
            if (!grown) {
                free(out);
                return TUNE_ERR_NOMEM;
            }
            out = grown;
            if (!value) {
                memcpy(out + used, line, (size_t)(eol - line));
                used += (size_t)(eol - line);
            } else {
                if (!zero) {
                    memcpy(out + used, line, (size_t)(start - line));
                    used += (size_t)(start - line);
                    used += (size_t)sprintf(out + used, "%s", value);
                }
                memcpy(out + used, end, (size_t)(eol - end)); /* a comment after it stays */
                used += (size_t)(eol - end);
            }
            if (*eol == '\n')
                out[used++] = '\n';
        }
        line = eol + (*eol == '\n');
    }
    if (out) {
        out[used] = '\0';
        free(*text);
        *text = out;
    }
    return TUNE_OK;
}
