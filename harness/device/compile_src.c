/* compile_src.c - the sources, options and cache key of compile_run's jobs (compile_src.h). */
#include "device/compile_src.h"

#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hash.h"
#include "core/infile.h"
#include "device/compile.h"

/* Bounds of the key's header scan: include depth and headers per unit (a CUTLASS kernel reads a
 * few hundred). */
#define SCAN_MAX_DEPTH 64
#define SCAN_MAX_HEADERS 16384
/* The key's version: changed whenever what it covers changes (v2: the toolkit's include folders,
 * the source's name, the job's options, the headers found in include folders; v3: #include_next,
 * --pre-include files, and every file of the search folders when an #include names a macro). */
#define KEY_VERSION "tune-compile-v3"
/* Bounds of the files hashed when a header is included through a macro */
#define SCAN_MAX_FOLDER_FILES 16384
#define SCAN_MAX_FOLDER_BYTES ((size_t)512 << 20)

/* ---- the toolkit's headers ---- */

#ifndef TUNE_CUDA_INCLUDE_DIRS
#define TUNE_CUDA_INCLUDE_DIRS ""
#endif

/* 1 and buf = dir when dir holds cuda_fp16.h. */
static int toolkit_candidate(const char *dir, size_t len, char *buf, size_t size)
{
    char path[PATH_MAX];
    if (len == 0 || len >= sizeof path - 16)
        return 0;
    snprintf(path, sizeof path, "%.*s/cuda_fp16.h", (int)len, dir);
    if (!infile_is_file(path))
        return 0;
    snprintf(buf, size, "%.*s", (int)len, dir);
    return 1;
}

const char *compile_toolkit_include_dir(char *buf, size_t size)
{
    const char *envs[] = {"CUDA_HOME", "CUDA_PATH"};
    char dir[PATH_MAX];
    for (size_t i = 0; i < 2; i++) {
        const char *v = getenv(envs[i]);
        if (v && *v) {
            snprintf(dir, sizeof dir, "%s/include", v);
            if (toolkit_candidate(dir, strlen(dir), buf, size))
                return buf;
        }
    }
    /* CMake's CUDAToolkit_INCLUDE_DIRS at build time, separated by ':' */
    for (const char *p = TUNE_CUDA_INCLUDE_DIRS; *p;) {
        size_t len = strcspn(p, ":");
        if (toolkit_candidate(p, len, buf, size))
            return buf;
        p += len + (p[len] == ':');
    }
    const char *fixed = "/usr/local/cuda/include";
    return toolkit_candidate(fixed, strlen(fixed), buf, size) ? buf : NULL;
}

void compile_env_toolkit(compile_env *env)
{
    char dir[PATH_MAX], cccl[PATH_MAX + 8];
    env->toolkit[0][0] = env->toolkit[1][0] = '\0';
    if (!compile_toolkit_include_dir(dir, sizeof dir))
        return;
    snprintf(env->toolkit[0], sizeof env->toolkit[0], "-I%s", dir);
    /* CUDA 13 keeps CCCL (cub, thrust, cuda/std, cuda/pipeline) in include/cccl */
    snprintf(cccl, sizeof cccl, "%s/cccl", dir);
    if (infile_is_dir(cccl))
        snprintf(env->toolkit[1], sizeof env->toolkit[1], "-I%s", cccl);
}

/* The next `#include "name"` or `#include <name>` line (or #include_next) from *p on: 1 and name,
 * quoted; 0 at the end of text. Read for the shipped sources' headers and for the key's header
 * scan. An #include whose operand is no literal name (`#include HEADER`, a macro) counts in
 * *macro when macro is not NULL: NVRTC reads a file the scan cannot name. */
static int next_include_any(const char **p, char *name, size_t size, int *quoted, int *macro,
                            int *is_next)
{
    for (const char *s = *p; *s; s += strcspn(s, "\n"), s += *s == '\n') {
        const char *t = s + strspn(s, " \t");
        if (*t != '#')
            continue;
        t += 1 + strspn(t + 1, " \t");
        if (strncmp(t, "include", 7) != 0)
            continue;
        int next = strncmp(t, "include_next", 12) == 0;
        t += next ? 12 : 7;
        if (*t != ' ' && *t != '\t' && *t != '"' && *t != '<')
            continue; /* #includes, #include_foo: another directive */
        t += strspn(t, " \t");
        if (*t != '"' && *t != '<') {
            if (macro && *t && *t != '\n' && *t != '\r')
                (*macro)++;
            continue;
        }
        *quoted = *t == '"';
        size_t len = strcspn(t + 1, *quoted ? "\"\n" : ">\n");
        if (t[1 + len] != (*quoted ? '"' : '>') || len == 0 || len >= size)
            continue;
        snprintf(name, size, "%.*s", (int)len, t + 1);
        *p = t + 1 + len;
        if (is_next)
            *is_next = next;
        return 1;
    }
    *p += strlen(*p);
    return 0;
}

static int next_include(const char **p, char *name, size_t size, int *quoted)
{
    return next_include_any(p, name, size, quoted, NULL, NULL);
}

/* ---- shipped sources: the headers of kernels_dir, handed to NVRTC by name ---- */

/* Adds the files named by `#include "x"` lines of text (and, recursively, of theirs). */
static tune_status add_includes(compile_unit *u, const char *dir, const char *text, tune_error *err)
{
    char name[128];
    int quoted;
    for (const char *p = text; next_include(&p, name, sizeof name, &quoted);) {
        if (!quoted)
            continue;
        int seen = 0;
        for (size_t i = 0; i < u->n_headers; i++)
            seen |= strcmp(u->header_names[i], name) == 0;
        if (seen)
            continue;
        if (u->n_headers == COMPILE_MAX_HEADERS)
            return tune_error_set(err, TUNE_ERR_IO, name, "more than %d headers",
                                  COMPILE_MAX_HEADERS);
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        char *h = NULL;
        if (infile_read_text(path, COMPILE_MAX_SOURCE, &h, NULL, err) != TUNE_OK)
            return err ? err->code : TUNE_ERR_IO;
        u->header_names[u->n_headers] = strdup(name);
        u->header_texts[u->n_headers] = h;
        u->n_headers++;
        if (!u->header_names[u->n_headers - 1])
            return tune_error_set(err, TUNE_ERR_NOMEM, name, "out of memory");
        tune_status st = add_includes(u, dir, h, err);
        if (st != TUNE_OK)
            return st;
    }
    return TUNE_OK;
}

/* The unit's status and log (a job's failure, not the run's); TUNE_ERR_NOMEM when even that
 * cannot be kept. */
__attribute__((format(printf, 3, 4))) static tune_status unit_fail(compile_unit *u,
                                                                   tune_status st,
                                                                   const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    u->status = st;
    u->reason = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!u->reason)
        return TUNE_ERR_NOMEM;
    va_start(ap, fmt);
    vsnprintf(u->reason, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return TUNE_OK;
}

/* The source's text (and a shipped source's headers). */
static tune_status load_text(compile_unit *u, const char *kernels_dir, tune_error *err)
{
    if (u->source[0] != '/') {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", kernels_dir, u->source);
        if (infile_read_text(path, COMPILE_MAX_SOURCE, &u->text, NULL, err) != TUNE_OK)
            return err ? err->code : TUNE_ERR_IO;
        return add_includes(u, kernels_dir, u->text, err);
    }
    tune_error e = {0};
    tune_status st = infile_read_text(u->source, COMPILE_MAX_SOURCE, &u->text, NULL, &e);
    if (st == TUNE_ERR_NOMEM)
        return tune_error_set(err, st, u->source, "out of memory");
    if (st != TUNE_OK) {
        /* infile's message is "cannot open: <strerror>" or a reason of its own */
        const char *why = strstr(e.message, ": ");
        why = why && strncmp(e.message, "cannot ", 7) == 0 ? why + 2 : e.message;
        return unit_fail(u, TUNE_ERR_IO, "cannot read %s: %s", u->source, why);
    }
    return TUNE_OK;
}

/* ---- the job's options ---- */

/* The folder an include option names ("-Idir", "-I dir", "-I=dir", "--include-path=dir"), NULL
 * for another option; a bare "-I" takes the next line, which *next then names. */
static const char *include_dir_of(const char *opt, const char *next, int *takes_next)
{
    size_t len = strncmp(opt, "--include-path", 14) == 0 ? 14 : strncmp(opt, "-I", 2) == 0 ? 2 : 0;
    const char *rest = opt + len;
    *takes_next = 0;
    if (len == 0)
        return NULL;
    if (*rest == '\0') {
        *takes_next = next != NULL;
        return next;
    }
    if (*rest == '=' || *rest == ' ' || *rest == '\t')
        return rest + 1 + strspn(rest + 1, " \t");
    return len == 2 ? rest : NULL; /* "-Idir"; "--include-pathX" is another option */
}

/* 1 when line (one option) is a macro definition with its name attached. */
static int defines_macro(const char *line, size_t len)
{
    return (len > 2 && strncmp(line, "-D", 2) == 0) ||
           (len > 15 && strncmp(line, "--define-macro=", 15) == 0);
}

/* 1 when line (one option) is a bare option whose argument is the next line. */
static int takes_next_line(const char *line, size_t len)
{
    static const char *const bare[] = {"-I", "--include-path", "-include", "--pre-include",
                                       "-D", "--define-macro"};
    for (size_t i = 0; i < sizeof bare / sizeof bare[0]; i++)
        if (len == strlen(bare[i]) && strncmp(line, bare[i], len) == 0)
            return 1;
    return 0;
}

const char *compile_options_files(const char *options, char *out, size_t size)
{
    size_t used = 0;
    int argument = 0; /* this line is the previous one's argument */
    out[0] = '\0';
    for (const char *p = options; *p;) {
        size_t len = strcspn(p, "\n");
        const char *s = p + strspn(p, " \t\r");
        size_t n = s < p + len ? (size_t)(p + len - s) : 0;
        while (n > 0 && strchr(" \t\r", s[n - 1]))
            n--;
        if (n > 0 && (argument || !defines_macro(s, n))) {
            int w = snprintf(out + used, size - used, "%s%.*s", used ? "\n" : "", (int)n, s);
            used = w < 0 || (size_t)w >= size - used ? size - 1 : used + (size_t)w;
        }
        argument = n > 0 && !argument && takes_next_line(s, n);
        p += len + (p[len] == '\n');
    }
    return out;
}

/* 1 when opt sets the target architecture, which is the harness's to choose. */
static int sets_architecture(const char *opt)
{
    static const char *const names[] = {"-arch", "--arch", "--gpu-architecture",
                                        "-gpu-architecture"};
    size_t len = strcspn(opt, "= \t");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (len == strlen(names[i]) && strncmp(opt, names[i], len) == 0)
            return 1;
    return 0;
}

static tune_status push(char ***list, size_t *n, const char *s, size_t len)
{
    char **grown = realloc(*list, (*n + 2) * sizeof **list);
    if (!grown)
        return TUNE_ERR_NOMEM;
    *list = grown;
    if (!(grown[*n] = strndup(s, len)))
        return TUNE_ERR_NOMEM;
    grown[++*n] = NULL;
    return TUNE_OK;
}

/* u->opts: the source's folder (an absolute source), the job's options one per non-empty line
 * (white space around each trimmed), the toolkit's folders; dirs: the folders the key's scan
 * searches. A refused option is the unit's status. */
static tune_status parse_options(compile_unit *u, const compile_env *env, char ***dirs,
                                 size_t *n_dirs)
{
    tune_status st = TUNE_OK;
    if (u->source[0] == '/') {
        const char *slash = strrchr(u->source, '/');
        size_t len = slash == u->source ? 1 : (size_t)(slash - u->source);
        st = push(dirs, n_dirs, u->source, len);
        char opt[PATH_MAX + 4];
        snprintf(opt, sizeof opt, "-I%s", (*dirs)[0]);
        if (st == TUNE_OK)
            st = push(&u->opts, &u->n_opts, opt, strlen(opt));
    }
    size_t first = u->n_opts;
    for (const char *p = u->options; st == TUNE_OK && *p;) {
        size_t len = strcspn(p, "\n");
        const char *s = p + strspn(p, " \t\r");
        size_t n = s < p + len ? (size_t)(p + len - s) : 0;
        while (n > 0 && strchr(" \t\r", s[n - 1]))
            n--;
        p += len + (p[len] == '\n');
        if (n > 0)
            st = push(&u->opts, &u->n_opts, s, n);
        if (st == TUNE_OK && n > 0 && sets_architecture(u->opts[u->n_opts - 1]))
            return unit_fail(u, TUNE_ERR_INVALID,
                             "option \"%s\" refused: the target architecture is the harness's "
                             "(the device's, or --arch; arch_specific for sm_XXa), and it is part "
                             "of the cache key",
                             u->opts[u->n_opts - 1]);
    }
    for (size_t i = first; st == TUNE_OK && i < u->n_opts; i++) {
        int takes_next;
        const char *d = include_dir_of(u->opts[i], u->opts[i + 1], &takes_next);
        if (d && *d)
            st = push(dirs, n_dirs, d, strlen(d));
        i += (size_t)takes_next;
    }
    for (size_t i = 0; st == TUNE_OK && i < 2; i++)
        if (env->toolkit[i][0])
            st = push(&u->opts, &u->n_opts, env->toolkit[i], strlen(env->toolkit[i]));
    return st;
}

/* ---- the key's header scan ---- */

typedef struct {
    char *const *dirs;
    size_t n_dirs;
    char **seen; /* canonical paths of the headers hashed */
    uint64_t *seen_hash;
    size_t n_seen;
    hash128 *h;
    int macro;              /* #include lines that name a macro, not a file */
    char special[PATH_MAX]; /* a header candidate that is no regular file (a FIFO) */
    const char *special_kind;
    size_t n_files, n_bytes; /* files and bytes hashed by scan_folder */
} scan_ctx;

/* 1 when canonical path was hashed already; else records it (0); -1: too many, -2: no memory. */
static int scan_seen(scan_ctx *c, const char *canon)
{
    uint64_t hv = hash_fnv1a_str(HASH_FNV_OFFSET, canon);
    for (size_t i = 0; i < c->n_seen; i++)
        if (c->seen_hash[i] == hv && strcmp(c->seen[i], canon) == 0)
            return 1;
    if (c->n_seen == SCAN_MAX_HEADERS)
        return -1;
    if (c->n_seen % 64 == 0) {
        char **s = realloc(c->seen, (c->n_seen + 64) * sizeof *s);
        if (s)
            c->seen = s;
        uint64_t *hs = s ? realloc(c->seen_hash, (c->n_seen + 64) * sizeof *hs) : NULL;
        if (!hs)
            return -2;
        c->seen_hash = hs;
    }
    if (!(c->seen[c->n_seen] = strdup(canon)))
        return -2;
    c->seen_hash[c->n_seen++] = hv;
    return 0;
}

/* 1 when path is a regular file; 0 when it is absent or a folder; -1 (recorded in c) when it is
 * something NVRTC's open would wait on or misread (a FIFO, a device). */
static int scan_candidate(scan_ctx *c, const char *path)
{
    const char *kind = infile_special(path);
    if (kind && !c->special_kind) {
        snprintf(c->special, sizeof c->special, "%s", path);
        c->special_kind = kind;
    }
    return kind ? -1 : infile_is_file(path);
}

/* path of the header `name` names from a file in folder dir: a quoted name is looked for beside
 * the including file first, then in the include folders; 0 when it is in none (the toolkit's),
 * -1 when the first candidate that exists is no regular file. */
static int scan_resolve(scan_ctx *c, const char *dir, const char *name, int quoted, char *path,
                        size_t size)
{
    if (name[0] == '/') {
        snprintf(path, size, "%s", name);
        return scan_candidate(c, path);
    }
    int k;
    if (quoted && snprintf(path, size, "%s/%s", dir, name) < (int)size &&
        (k = scan_candidate(c, path)) != 0)
        return k;
    for (size_t i = 0; i < c->n_dirs; i++)
        if (snprintf(path, size, "%s/%s", c->dirs[i], name) < (int)size &&
            (k = scan_candidate(c, path)) != 0)
            return k;
    return 0;
}

/* Hashes the name and text of every header text includes that is found (recursively); a header
 * that cannot be read is left to NVRTC to report. TUNE_ERR_INVALID past SCAN_MAX_HEADERS. */
static tune_status scan_text(scan_ctx *c, const char *text, const char *dir, int depth)
{
    char name[1024], path[PATH_MAX], canon[PATH_MAX];
    int quoted, is_next = 0;
    for (const char *p = text; depth < SCAN_MAX_DEPTH &&
                               next_include_any(&p, name, sizeof name, &quoted, &c->macro,
                                                &is_next);) {
        if (is_next && name[0] != '/') {
            /* #include_next: the same name further down the folders; every one found is
             * hashed (which of them NVRTC reads depends on where the including file was) */
            for (size_t i = 0; i < c->n_dirs; i++) {
                char line[1100];
                snprintf(line, sizeof line, "#include \"%s\"\n", name);
                scan_ctx one = *c;
                one.dirs = c->dirs + i;
                one.n_dirs = 1;
                tune_status st = scan_text(&one, line, c->dirs[i], depth + 1);
                c->seen = one.seen;
                c->seen_hash = one.seen_hash;
                c->n_seen = one.n_seen;
                c->macro = one.macro;
                if (one.special_kind && !c->special_kind) {
                    snprintf(c->special, sizeof c->special, "%s", one.special);
                    c->special_kind = one.special_kind;
                }
                if (st != TUNE_OK)
                    return st;
            }
            continue;
        }
        int found = scan_resolve(c, dir, name, quoted, path, sizeof path);
        if (found < 0)
            return TUNE_ERR_IO; /* c->special */
        if (!found || !realpath(path, canon))
            continue;
        int seen = scan_seen(c, canon);
        if (seen < 0)
            return seen == -1 ? TUNE_ERR_INVALID : TUNE_ERR_NOMEM;
        char *h = NULL;
        if (seen || infile_read_text(path, COMPILE_MAX_SOURCE, &h, NULL, NULL) != TUNE_OK)
            continue;
        hash128_str(c->h, name);
        hash128_str(c->h, h);
        char *slash = strrchr(path, '/');
        *slash = '\0'; /* path's folder: scan_resolve's paths have a '/' */
        tune_status st = scan_text(c, h, path[0] ? path : "/", depth + 1);
        free(h);
        if (st != TUNE_OK)
            return st;
    }
    return TUNE_OK;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Hashes the relative name and text of every regular file under folder dir (rel: its name below
 * the search folder), recursively, in name order; folders that are links are not entered.
 * TUNE_ERR_INVALID past the bounds. */
static tune_status scan_folder(scan_ctx *c, const char *dir, const char *rel, int depth)
{
    DIR *d = opendir(dir);
    if (!d)
        return TUNE_OK;
    char **names = NULL;
    size_t n = 0, cap = 0;
    tune_status st = TUNE_OK;
    for (struct dirent *e; st == TUNE_OK && (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n == cap) {
            char **grown = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
            if (!grown)
                st = TUNE_ERR_NOMEM;
            else
                names = grown;
        }
        if (st == TUNE_OK && !(names[n++] = strdup(e->d_name)))
            st = TUNE_ERR_NOMEM;
    }
    closedir(d);
    if (st == TUNE_OK)
        qsort(names, n, sizeof *names, cmp_name);
    for (size_t i = 0; st == TUNE_OK && i < n; i++) {
        char path[PATH_MAX], sub[PATH_MAX];
        struct stat sb;
        if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= (int)sizeof path ||
            snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", names[i]) >=
                (int)sizeof sub || lstat(path, &sb) != 0)
            continue;
        if (S_ISDIR(sb.st_mode)) {
            if (depth < SCAN_MAX_DEPTH)
                st = scan_folder(c, path, sub, depth + 1);
            continue;
        }
        if (scan_candidate(c, path) < 0) { /* a macro could name it: NVRTC would wait on it */
            st = TUNE_ERR_IO;
            break;
        }
        char *text = NULL;
        size_t len = 0;
        if ((!S_ISREG(sb.st_mode) && !S_ISLNK(sb.st_mode)) ||
            infile_read(path, COMPILE_MAX_SOURCE, &text, &len, NULL) != TUNE_OK)
            continue; /* not a file NVRTC can include */
        c->n_files++;
        c->n_bytes += len;
        if (c->n_files > SCAN_MAX_FOLDER_FILES || c->n_bytes > SCAN_MAX_FOLDER_BYTES)
            st = TUNE_ERR_INVALID;
        hash128_str(c->h, sub);
        hash128_bytes(c->h, text, len);
        free(text);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return st;
}

/* The --pre-include files of the options (-include=X, --pre-include=X, or the name on the next
 * line), scanned as if the source's first lines included them. */
static tune_status scan_pre_includes(scan_ctx *c, const compile_unit *u, const char *dir)
{
    tune_status st = TUNE_OK;
    for (size_t i = 0; st == TUNE_OK && i < u->n_opts; i++) {
        const char *o = u->opts[i], *name = NULL;
        static const char *const forms[] = {"-include", "--pre-include"};
        for (size_t f = 0; f < 2 && !name; f++) {
            size_t len = strlen(forms[f]);
            if (strncmp(o, forms[f], len) != 0)
                continue;
            if (o[len] == '=')
                name = o + len + 1;
            else if (!o[len] && i + 1 < u->n_opts)
                name = u->opts[++i];
        }
        if (!name || !*name)
            continue;
        char *line = malloc(strlen(name) + 16);
        if (!line)
            return TUNE_ERR_NOMEM;
        sprintf(line, "#include \"%s\"\n", name);
        st = scan_text(c, line, dir, 0);
        free(line);
    }
    return st;
}

static tune_status scan_headers(compile_unit *u, const compile_env *env, char *const *dirs,
                                size_t n_dirs)
{
    scan_ctx c = {dirs, n_dirs, NULL, NULL, 0, &u->tree, 0, "", NULL, 0, 0};
    u->tree = (hash128)HASH128_INIT;
    const char *dir = u->source[0] == '/' ? dirs[0] : env->kernels_dir;
    tune_status st = scan_text(&c, u->text, dir, 0);
    if (st == TUNE_OK)
        st = scan_pre_includes(&c, u, dir);
    /* A header named by a macro is one the scan cannot find: the key then covers every file of
     * the folders NVRTC searches (the source's and the -I ones; the toolkit's stand as its
     * version and path), or the unit is refused when they are too many to read. */
    if (st == TUNE_OK && c.macro) {
        hash128_str(c.h, "search folders");
        st = scan_folder(&c, dir, "", 0);
        for (size_t i = 0; st == TUNE_OK && i < n_dirs; i++)
            if (strcmp(dirs[i], dir) != 0) {
                hash128_str(c.h, dirs[i]);
                st = scan_folder(&c, dirs[i], "", 0);
            }
        if (st == TUNE_ERR_INVALID && !c.special_kind) {
            for (size_t i = 0; i < c.n_seen; i++)
                free(c.seen[i]);
            free(c.seen);
            free(c.seen_hash);
            return unit_fail(u, st,
                             "%s: a header is included through a macro (#include NAME), so the "
                             "cache key must cover every file of the include folders, and they "
                             "hold more than %d files or %zu MiB: name the header in the "
                             "#include, or narrow the -I folders",
                             u->source, SCAN_MAX_FOLDER_FILES, SCAN_MAX_FOLDER_BYTES >> 20);
        }
    }
    for (size_t i = 0; i < c.n_seen; i++)
        free(c.seen[i]);
    free(c.seen);
    free(c.seen_hash);
    if (st == TUNE_ERR_IO && c.special_kind)
        return unit_fail(u, st,
                         "%s: a header NVRTC would open, %s, is not a regular file (%s): refused "
                         "(a FIFO or a device would hang or feed the compile)",
                         u->source, c.special, c.special_kind);
    if (st == TUNE_ERR_INVALID)
        return unit_fail(u, st, "%s: more than %d headers to hash for the cache key", u->source,
                         SCAN_MAX_HEADERS);
    return st;
}

/* ---- the unit ---- */

static void unit_key(compile_unit *u, const compile_env *env)
{
    hash128 h = HASH128_INIT;
    hash128_str(&h, KEY_VERSION);
    hash128_str(&h, u->source);
    hash128_str(&h, u->text);
    for (size_t k = 0; k < u->n_headers; k++) {
        hash128_str(&h, u->header_names[k]);
        hash128_str(&h, u->header_texts[k]);
    }
    for (size_t k = 0; k < env->n_base; k++)
        hash128_str(&h, env->base_opts[k]);
    for (size_t k = 0; k < u->n_opts; k++) /* the job's options and every include folder */
        hash128_str(&h, u->opts[k]);
    hash128_bytes(&h, &u->tree, sizeof u->tree);
    hash128_bytes(&h, &env->nvrtc_version, sizeof env->nvrtc_version);
    u->key = h;
}

/* dirs joined by newlines into u->inc_dirs. */
static tune_status join_dirs(compile_unit *u, char *const *dirs, size_t n_dirs)
{
    size_t len = 1;
    for (size_t i = 0; i < n_dirs; i++)
        len += strlen(dirs[i]) + 1;
    if (!(u->inc_dirs = calloc(len, 1)))
        return TUNE_ERR_NOMEM;
    for (size_t i = 0; i < n_dirs; i++)
        strcat(strcat(u->inc_dirs, dirs[i]), "\n");
    return TUNE_OK;
}

static tune_status unit_load(compile_unit *u, const compile_unit *prev, size_t n_prev,
                             const compile_env *env, char ***dirs, size_t *n_dirs, tune_error *err)
{
    tune_status st = parse_options(u, env, dirs, n_dirs);
    if (st == TUNE_OK && u->status == TUNE_OK)
        st = load_text(u, env->kernels_dir, err);
    if (st == TUNE_OK && u->status == TUNE_OK) /* before the key: it hashes the text NVRTC gets */
        st = compile_unroll_rewrite(&u->text, u->opts, u->n_opts);
    if (st != TUNE_OK || u->status != TUNE_OK)
        return st;
    if ((st = join_dirs(u, *dirs, *n_dirs)) != TUNE_OK)
        return st;
    size_t i = 0;
    /* options that include files (--pre-include) make the tree the unit's own */
    int own = strstr(u->options, "include") != NULL;
    while (!own && i < n_prev && (prev[i].status != TUNE_OK || !prev[i].inc_dirs ||
                          strstr(prev[i].options, "include") != NULL ||
                          strcmp(prev[i].source, u->source) != 0 ||
                          strcmp(prev[i].inc_dirs, u->inc_dirs) != 0))
        i++;
    if (i < n_prev)
        u->tree = prev[i].tree; /* the same files, read an instant ago */
    else if ((st = scan_headers(u, env, *dirs, *n_dirs)) != TUNE_OK || u->status != TUNE_OK)
        return st;
    unit_key(u, env);
    return TUNE_OK;
}

tune_status compile_unit_load(compile_unit *u, const compile_unit *prev, size_t n_prev,
                              const compile_env *env, tune_error *err)
{
    char **dirs = NULL;
    size_t n_dirs = 0;
    tune_status st = unit_load(u, prev, n_prev, env, &dirs, &n_dirs, err);
    for (size_t i = 0; i < n_dirs; i++)
        free(dirs[i]);
    free(dirs);
    if (st == TUNE_ERR_NOMEM && !(err && err->code != TUNE_OK))
        tune_error_set(err, st, u->source, "out of memory");
    return st;
}

void compile_unit_free(compile_unit *u)
{
    free(u->text);
    for (size_t i = 0; i < u->n_headers; i++) {
        free(u->header_names[i]);
        free(u->header_texts[i]);
    }
    for (size_t i = 0; i < u->n_opts; i++)
        free(u->opts[i]);
    free(u->opts);
    free(u->inc_dirs);
    free(u->reason);
    memset(u, 0, sizeof *u);
}
