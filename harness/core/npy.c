/* npy.c - NumPy .npy files: the header (magic, version, a Python dict literal with descr,
 * fortran_order and shape) parsed strictly enough to trust the data that follows. */
#include "core/npy.h"

#include "core/infile.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value after 'key': in the header dict, or NULL. */
static const char *npy_field(const char *hdr, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s':", key);
    const char *p = strstr(hdr, pat);
    if (!p)
        return NULL;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    return p;
}

static tune_status npy_header(const char *path, const char *hdr, char *descr, size_t descr_size,
                              size_t *count, tune_error *err)
{
    const char *d = npy_field(hdr, "descr"), *f = npy_field(hdr, "fortran_order");
    const char *s = npy_field(hdr, "shape");
    if (!d || *d != '\'' || !f || !s || *s != '(')
        return tune_error_set(err, TUNE_ERR_PARSE, path,
                              "not a .npy header (expected 'descr', 'fortran_order', 'shape')");
    const char *end = strchr(d + 1, '\'');
    if (!end || (size_t)(end - d - 1) >= descr_size)
        return tune_error_set(err, TUNE_ERR_PARSE, path, "a .npy descr that is not a plain type");
    snprintf(descr, descr_size, "%.*s", (int)(end - d - 1), d + 1);
    if (strncmp(f, "False", 5) != 0)
        return tune_error_set(err, TUNE_ERR_PARSE, path,
                              "a Fortran-order array; save it in C order (np.ascontiguousarray)");
    size_t n = 1;
    for (s++; *s && *s != ')';) {
        while (*s == ' ' || *s == ',')
            s++;
        if (*s == ')')
            break;
        char *e;
        errno = 0;
        unsigned long long v = strtoull(s, &e, 10);
        if (e == s || errno || (v && n > SIZE_MAX / v))
            return tune_error_set(err, TUNE_ERR_PARSE, path, "a .npy shape that is not a tuple of "
                                                             "integers");
        n *= (size_t)v;
        s = e;
    }
    if (*s != ')')
        return tune_error_set(err, TUNE_ERR_PARSE, path, "an unterminated .npy shape");
    *count = n;
    return TUNE_OK;
}

/* The element size a descr names ("<f4" -> 4), 0 when it is not a plain number type. */
static size_t npy_item_size(const char *descr)
{
    if (strlen(descr) < 3 || !strchr("<>|=", descr[0]) || !strchr("fiuV", descr[1]))
        return 0;
    int sz = atoi(descr + 2);
    return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? (size_t)sz : 0;
}

tune_status npy_read(const char *path, size_t max_bytes, char *descr, size_t descr_size,
                     size_t *count, void **data, tune_error *err)
{
    *data = NULL;
    /* a regular file of at most the data and the largest header: never a FIFO or a device */
    FILE *fp = infile_open(path, max_bytes + ((size_t)1 << 20) + 16, err);
    if (!fp)
        return err ? err->code : TUNE_ERR_IO;
    unsigned char pre[12];
    tune_status st = TUNE_OK;
    char *hdr = NULL;
    size_t hlen = 0, pre_len = 10;
    if (fread(pre, 1, 10, fp) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0 || pre[6] < 1 ||
        pre[6] > 3) {
        st = tune_error_set(err, TUNE_ERR_PARSE, path, "not a .npy file (magic \\x93NUMPY, "
                                                       "version 1 to 3)");
        goto done;
    }
    if (pre[6] == 1) {
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    } else if (fread(pre + 10, 1, 2, fp) == 2) {
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
               (size_t)pre[11] << 24;
        pre_len = 12;
    }
    if (hlen == 0 || hlen > 1 << 20 || !(hdr = malloc(hlen + 1)) || fread(hdr, 1, hlen, fp) != hlen) {
        st = tune_error_set(err, hdr || hlen == 0 || hlen > 1 << 20 ? TUNE_ERR_PARSE : TUNE_ERR_NOMEM,
                            path, "a truncated or oversized .npy header");
        goto done;
    }
    hdr[hlen] = '\0';
    if ((st = npy_header(path, hdr, descr, descr_size, count, err)) != TUNE_OK)
        goto done;
    size_t item = npy_item_size(descr);
    if (!item) {
        st = tune_error_set(err, TUNE_ERR_PARSE, path, "dtype '%s' is not a plain number type",
                            descr);
        goto done;
    }
    if (*count > max_bytes / item) {
        st = tune_error_set(err, TUNE_ERR_PARSE, path, "%zu elements of %zu bytes: more than %zu "
                            "bytes", *count, item, max_bytes);
        goto done;
    }
    size_t bytes = *count * item;
    if (!(*data = malloc(bytes ? bytes : 1))) {
        st = tune_error_set(err, TUNE_ERR_NOMEM, path, "out of host memory");
        goto done;
    }
    if (fread(*data, 1, bytes, fp) != bytes || fgetc(fp) != EOF) {
        st = tune_error_set(err, TUNE_ERR_PARSE, path,
                            "the data is not %zu elements of %zu bytes after a %zu-byte header",
                            *count, item, pre_len + hlen);
        free(*data);
        *data = NULL;
    }
done:
    free(hdr);
    fclose(fp);
    return st;
}
