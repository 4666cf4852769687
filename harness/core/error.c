#include "core/error.h"
#include "core/infile.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *tune_status_str(tune_status s)
{
    switch (s) {
    case TUNE_OK: return "ok";
    case TUNE_ERR_IO: return "io";
    case TUNE_ERR_PARSE: return "parse";
    case TUNE_ERR_INVALID: return "invalid";
    case TUNE_ERR_NOMEM: return "out of host memory";
    case TUNE_ERR_NO_GPU: return "no gpu";
    case TUNE_ERR_CUDA: return "cuda";
    case TUNE_ERR_NVRTC: return "nvrtc";
    case TUNE_ERR_CUBLAS: return "cublas";
    case TUNE_ERR_OOM: return "out of device memory";
    case TUNE_ERR_UNSUPPORTED: return "unsupported";
    case TUNE_ERR_EVAL: return "eval";
    }
    return "unknown";
}

tune_status tune_error_set(tune_error *err, tune_status code, const char *where, const char *fmt, ...)
{
    if (!err || err->code != TUNE_OK)
        return code;
    err->code = code;
    snprintf(err->where, sizeof err->where, "%s", where ? where : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return code;
}

void tune_error_clear(tune_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

const char *tune_error_text(const tune_error *err, char *buf, size_t size)
{
    if (!err || err->code == TUNE_OK)
        snprintf(buf, size, "no error");
    else if (err->where[0])
        snprintf(buf, size, "%s: %s", err->where, err->message);
    else
        snprintf(buf, size, "%s", err->message);
    return buf;
}

char *tune_read_file(const char *path, size_t *size, tune_error *err)
{
    char *text = NULL;
    /* the bounded reader: a FIFO or a device is refused, never waited on */
    if (infile_read_text(path, INFILE_MAX_JSON, &text, size, err) != TUNE_OK)
        return NULL;
    return text;
}

const char *tune_find_dir(const char *env_name, const char *name, char *buf, size_t size)
{
    const char *env = getenv(env_name);
    if (env && infile_is_dir(env)) {
        snprintf(buf, size, "%s", env);
        return buf;
    }
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        const char *rel[] = {"..", "../.."};
        for (size_t i = 0; i < 2; i++) {
            snprintf(buf, size, "%s/%s/%s", exe, rel[i], name);
            if (infile_is_dir(buf))
                return buf;
        }
    }
    /* never ./<name>: a folder of that name where tune happens to run is not tune's */
    snprintf(buf, size, "%s/%s", TUNE_SOURCE_DIR, name);
    return infile_is_dir(buf) ? buf : NULL;
}
