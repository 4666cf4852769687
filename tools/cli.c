/* cli.c - option values parsed whole and range-checked (cli.h). */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outfile.h"

static int cli_bad(const char *cmd, const char *opt, const char *what, const char *val)
{
    fprintf(stderr, "tune %s: %s expects %s, got '%s'\n", cmd, opt, what, val);
    return -1;
}

/* Digits only after an optional sign: strtoll alone would take " 12", "12abc" (with end) and
 * "0x1f". */
static int cli_is_decimal(const char *s, int sign_ok)
{
    if (sign_ok && (*s == '-' || *s == '+'))
        s++;
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

int cli_int(const char *cmd, const char *opt, const char *val, long long lo, long long hi,
            long long *out)
{
    char what[96];
    snprintf(what, sizeof what, "an integer in [%lld, %lld]", lo, hi);
    if (!val || !cli_is_decimal(val, 1))
        return cli_bad(cmd, opt, what, val ? val : "");
    errno = 0;
    long long x = strtoll(val, NULL, 10);
    if (errno == ERANGE || x < lo || x > hi)
        return cli_bad(cmd, opt, what, val);
    *out = x;
    return 0;
}

int cli_u64(const char *cmd, const char *opt, const char *val, uint64_t *out)
{
    const char *what = "an unsigned 64-bit integer (decimal or 0x hexadecimal)";
    int hex = val && val[0] == '0' && (val[1] == 'x' || val[1] == 'X');
    const char *digits = val ? val + (hex ? 2 : 0) : "";
    if (!*digits)
        return cli_bad(cmd, opt, what, val ? val : "");
    for (const char *p = digits; *p; p++) {
        int ok = (*p >= '0' && *p <= '9') ||
                 (hex && ((*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')));
        if (!ok)
            return cli_bad(cmd, opt, what, val);
    }
    errno = 0;
    unsigned long long x = strtoull(val, NULL, hex ? 16 : 10);
    if (errno == ERANGE)
        return cli_bad(cmd, opt, what, val);
    *out = (uint64_t)x;
    return 0;
}

int cli_double(const char *cmd, const char *opt, const char *val, double lo, double hi,
               int lo_open, const char *what, double *out)
{
    char desc[160];
    snprintf(desc, sizeof desc, "a number in %c%g, %g]%s%s%s", lo_open ? '(' : '[', lo, hi,
             what ? " (" : "", what ? what : "", what ? ")" : "");
    if (!val || !*val || strchr(" \t\n\r\f\v", val[0]))
        return cli_bad(cmd, opt, desc, val ? val : "");
    char *end;
    errno = 0;
    double x = strtod(val, &end);
    if (end == val || *end || errno == ERANGE || !isfinite(x) || x < lo || x > hi ||
        (lo_open && x == lo))
        return cli_bad(cmd, opt, desc, val);
    *out = x;
    return 0;
}

int cli_percent(const char *cmd, const char *opt, const char *val, double *out)
{
    char pct[64]; /* the number without its sign */
    size_t len = strlen(val);
    len -= len && val[len - 1] == '%';
    if (len >= sizeof pct) {
        fprintf(stderr, "tune %s: %s expects a percentage, got '%s'\n", cmd, opt, val);
        return -1;
    }
    snprintf(pct, sizeof pct, "%.*s", (int)len, val);
    return cli_double(cmd, opt, pct, 0, 1e6, 0, "percent", out);
}

int cli_path(const char *cmd, const char *opt, const char *val)
{
    if (val && *val)
        return 0;
    fprintf(stderr, "tune %s: %s expects a path, got an empty one\n", cmd, opt);
    return -1;
}

int cli_out_apart(const char *cmd, const char *opt, const char *out, const char *const *dirs,
                  size_t n, int is_file)
{
    char parent[PATH_MAX];
    const char *folder = out;
    if (is_file) { /* the file's folder */
        snprintf(parent, sizeof parent, "%s", out);
        char *slash = strrchr(parent, '/');
        if (!slash)
            snprintf(parent, sizeof parent, ".");
        else
            slash[slash == parent] = '\0';
        folder = parent;
    }
    for (size_t i = 0; i < n; i++)
        if (outfile_dir_within(folder, dirs[i])) {
            fprintf(stderr,
                    "tune %s: %s %s %s %s or a folder inside it, a folder read (the folders read "
                    "are never written): choose another %s\n",
                    cmd, opt, out, is_file ? "would be written in" : "is", dirs[i], opt);
            return -1;
        }
    return 0;
}

int cli_arch(const char *cmd, const char *opt, const char *val, int *out)
{
    const char *what = "sm_NN with NN in [50, 255] (e.g. sm_90)";
    if (!val || strncmp(val, "sm_", 3) != 0 || !cli_is_decimal(val + 3, 0) || strlen(val) > 6)
        return cli_bad(cmd, opt, what, val ? val : "");
    long n = strtol(val + 3, NULL, 10);
    if (n < 50 || n > 255)
        return cli_bad(cmd, opt, what, val);
    *out = (int)n;
    return 0;
}

int cli_gpus(const char *cmd, const char *opt, const char *val)
{
    char what[96];
    snprintf(what, sizeof what, "'all' or a list of distinct device ordinals in [0, %d] (0,1,3)",
             CLI_MAX_DEVICE);
    if (val && strcmp(val, "all") == 0)
        return 0;
    unsigned char seen[CLI_MAX_DEVICE + 1] = {0};
    const char *p = val ? val : "";
    do {
        long n = 0;
        const char *start = p;
        while (*p >= '0' && *p <= '9' && p - start < 5)
            n = n * 10 + (*p++ - '0');
        if (p == start || (*p && *p != ',') || n > CLI_MAX_DEVICE || seen[n])
            return cli_bad(cmd, opt, what, val ? val : "");
        seen[n] = 1;
    } while (*p++ == ',');
    return 0;
}
