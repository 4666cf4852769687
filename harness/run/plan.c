/* plan.c - which kernels each configuration needs (the family's kernels()), planned on first
 * use: an exhaustive run plans every configuration, a searched run only those it measures, so
 * that a space of a million configurations costs the kernels of its budget, not of the space.
 * The kernel table and the plans are indexed by hash.
 *
 * Planning is deterministic: two processes with the same table that plan the same
 * configurations in the same order give the same kernels the same indices. The searched run's
 * session worker, forked before later rounds are planned, follows the coordinator so ("P"
 * lines, search_session.c), and checks that its table has the coordinator's size after each.
 *
 * A searched run's key (run_kernels_key_hash) cannot hash the cubins of kernels it never
 * compiles: it hashes, in one pass over the space, every configuration's kernels (source, name,
 * options, architecture) and, once per distinct (source, options that decide which files are
 * read), the compile cache key of its unit: the source's and headers' text, those options, the
 * NVRTC version and the architecture (device/compile.h: compile_options_files). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "run/internal.h"
#include "run/search_ctx.h"

typedef uint64_t (*index_hash_fn)(const run_ctx *rc, size_t item);
typedef int (*index_eq_fn)(const run_ctx *rc, size_t item, const void *key);

/* The slot of the item that eq finds equal to key (of hash h), or the empty slot where it goes
 * (ix has a free slot: index_reserve). */
static size_t *index_slot(const run_index *ix, uint64_t h, index_eq_fn eq, const run_ctx *rc,
                          const void *key)
{
    size_t mask = ix->cap - 1, j = (size_t)h & mask;
    while (ix->slots[j] && !eq(rc, ix->slots[j] - 1, key))
        j = (j + 1) & mask;
    return &ix->slots[j];
}

/* Room for an item beyond the n indexed (at most half the slots used): rebuilt twice as large
 * when needed. 0, or -1 out of memory (ix unchanged). */
static int index_reserve(run_index *ix, size_t n, index_hash_fn hash, const run_ctx *rc)
{
    if (2 * (n + 1) <= ix->cap)
        return 0;
    size_t cap = ix->cap ? 2 * ix->cap : 128;
    size_t *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < n; i++) {
        size_t j = (size_t)hash(rc, i) & (cap - 1);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = i + 1;
    }
    free(ix->slots);
    ix->slots = slots;
    ix->cap = cap;
    return 0;
}

/* ---- the kernel table ---- */

static uint64_t ref_hash(const char *source, const char *name, const char *options)
{
    return hash_fnv1a_str(hash_fnv1a_str(hash_fnv1a_str(HASH_FNV_OFFSET, source), name), options);
}

static uint64_t kernel_hash(const run_ctx *rc, size_t k)
{
    const compile_job *j = &rc->kernels[k].job;
    return ref_hash(j->source, j->name, j->options);
}

/* Whether kernel k is the instantiation ref names: source, name and options. */
static int kernel_is(const run_ctx *rc, size_t k, const void *key)
{
    const compile_job *j = &rc->kernels[k].job;
    const family_kernel_ref *ref = key;
    return strcmp(j->source, ref->source) == 0 && strcmp(j->name, ref->name) == 0 &&
           strcmp(j->options, ref->options) == 0;
}

size_t run_kernel_find(const run_ctx *rc, const family_kernel_ref *ref)
{
    if (!rc->kernel_index.cap)
        return SIZE_MAX;
    size_t *slot = index_slot(&rc->kernel_index, ref_hash(ref->source, ref->name, ref->options),
                              kernel_is, rc, ref);
    return *slot ? *slot - 1 : SIZE_MAX;
}

/* The table one larger: the kernels, and a searched run's compiled flags (zeroed). */
static int kernels_grow(run_ctx *rc)
{
    size_t cap = rc->cap_kernels ? 2 * rc->cap_kernels : 64;
    run_kernel *nk = realloc(rc->kernels, cap * sizeof *nk);
    if (!nk)
        return -1;
    rc->kernels = nk;
    if (rc->search && rc->search->compiled) {
        unsigned char *c = realloc(rc->search->compiled, cap);
        if (!c)
            return -1;
        memset(c + rc->cap_kernels, 0, cap - rc->cap_kernels);
        rc->search->compiled = c;
    }
    rc->cap_kernels = cap;
    return 0;
}

size_t run_kernel_index(run_ctx *rc, const family_kernel_ref *ref)
{
    if (index_reserve(&rc->kernel_index, rc->n_kernels, kernel_hash, rc) != 0)
        return SIZE_MAX;
    size_t *slot = index_slot(&rc->kernel_index, ref_hash(ref->source, ref->name, ref->options),
                              kernel_is, rc, ref);
    if (*slot)
        return *slot - 1;
    if (rc->n_kernels == rc->cap_kernels && kernels_grow(rc) != 0)
        return SIZE_MAX;
    run_kernel *k = &rc->kernels[rc->n_kernels];
    memset(k, 0, sizeof *k);
    snprintf(k->job.source, sizeof k->job.source, "%s", ref->source);
    snprintf(k->job.name, sizeof k->job.name, "%s", ref->name);
    snprintf(k->job.options, sizeof k->job.options, "%s", ref->options);
    k->job.arch_specific = ref->arch != 0;
    *slot = rc->n_kernels + 1;
    return rc->n_kernels++;
}

/* ---- plans ---- */

static uint64_t config_hash(size_t ci)
{
    uint64_t h = (uint64_t)ci * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static uint64_t plan_hash(const run_ctx *rc, size_t i)
{
    return config_hash(rc->plans[i].ci);
}

static int plan_is(const run_ctx *rc, size_t i, const void *key)
{
    return rc->plans[i].ci == *(const size_t *)key;
}

int run_config_refs(const run_ctx *rc, size_t ci, family_kernel_ref *refs, char *why,
                    size_t why_size)
{
    tune_point p;
    space_config_point(rc->sp, ci, &p);
    memset(refs, 0, FAMILY_MAX_KERNELS * sizeof *refs);
    why[0] = '\0';
    int nr = rc->sw->family->kernels(rc->sw->family, &p, refs, FAMILY_MAX_KERNELS, why, why_size);
    for (int r = 0; r < nr; r++)
        if (refs[r].arch && refs[r].arch != rc->arch) {
            snprintf(why, why_size, "architecture: %s needs sm_%da, the target is sm_%d",
                     refs[r].name, refs[r].arch, rc->arch);
            return -1;
        }
    return nr;
}

const run_plan *run_plan_find(const run_ctx *rc, size_t ci)
{
    if (!rc->plan_index.cap)
        return NULL;
    size_t *slot = index_slot(&rc->plan_index, config_hash(ci), plan_is, rc, &ci);
    return *slot ? &rc->plans[*slot - 1] : NULL;
}

const run_plan *run_plan_config(run_ctx *rc, size_t ci)
{
    if (index_reserve(&rc->plan_index, rc->n_plans, plan_hash, rc) != 0)
        return NULL;
    size_t *slot = index_slot(&rc->plan_index, config_hash(ci), plan_is, rc, &ci);
    if (*slot)
        return &rc->plans[*slot - 1];
    if (rc->n_plans == rc->cap_plans) {
        size_t cap = rc->cap_plans ? 2 * rc->cap_plans : 64;
        run_plan *np = realloc(rc->plans, cap * sizeof *np);
        if (!np)
            return NULL;
        rc->plans = np;
        rc->cap_plans = cap;
    }
    family_kernel_ref refs[FAMILY_MAX_KERNELS];
    char why[512];
    run_plan pl = {.ci = ci, .row_ref = -1};
    int nr = run_config_refs(rc, ci, refs, why, sizeof why);
    if (nr < 0 && !(pl.skip = strdup(why)))
        return NULL;
    for (int r = 0; r < nr; r++) {
        if (refs[r].row && pl.row_ref < 0)
            pl.row_ref = r;
        if ((pl.refs[r] = run_kernel_index(rc, &refs[r])) == SIZE_MAX)
            return NULL;
    }
    pl.n_refs = nr > 0 ? nr : 0;
    pl.kernels_after = rc->n_kernels;
    rc->plans[rc->n_plans] = pl;
    *slot = ++rc->n_plans;
    return &rc->plans[rc->n_plans - 1];
}

tune_status run_plan_configs(run_ctx *rc, const unsigned char *mask)
{
    for (size_t ci = 0; ci < space_n_configs(rc->sp); ci++)
        if ((!mask || mask[ci]) && !run_plan_config(rc, ci))
            return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    return TUNE_OK;
}

/* ---- a searched run's key ---- */

/* A distinct (source, options that decide the files read): one compile unit of the key. */
typedef struct {
    char *source, *options;
} key_unit;

struct run_key_scan {
    uint64_t refs;   /* every kernel's source, name, options, architecture, in order */
    key_unit *units; /* distinct (source, compile_options_files) */
    size_t n_units, cap_units;
    run_index unit_index;
    uint64_t *prints; /* the distinct kernels' fingerprints (64-bit), to count them */
    size_t n_prints, cap_prints;
};

static uint64_t unit_hash(const run_ctx *rc, size_t i)
{
    const key_unit *u = &rc->search->key_scan->units[i];
    return ref_hash(u->source, "", u->options);
}

static int unit_is(const run_ctx *rc, size_t i, const void *key)
{
    const key_unit *u = &rc->search->key_scan->units[i], *k = key;
    return strcmp(u->source, k->source) == 0 && strcmp(u->options, k->options) == 0;
}

/* Counts a kernel of fingerprint h once: an open-addressed set of the fingerprints (0 stands
 * for 1, so that an empty slot is 0). 0, or -1 out of memory. */
static int key_count(struct run_key_scan *ks, uint64_t h)
{
    h = h ? h : 1;
    if (2 * (ks->n_prints + 1) > ks->cap_prints) {
        size_t cap = ks->cap_prints ? 2 * ks->cap_prints : 1024;
        uint64_t *p = calloc(cap, sizeof *p);
        if (!p)
            return -1;
        for (size_t i = 0; i < ks->cap_prints; i++)
            if (ks->prints[i]) {
                size_t j = (size_t)ks->prints[i] & (cap - 1);
                while (p[j])
                    j = (j + 1) & (cap - 1);
                p[j] = ks->prints[i];
            }
        free(ks->prints);
        ks->prints = p;
        ks->cap_prints = cap;
    }
    size_t j = (size_t)h & (ks->cap_prints - 1);
    while (ks->prints[j] && ks->prints[j] != h)
        j = (j + 1) & (ks->cap_prints - 1);
    ks->n_prints += !ks->prints[j];
    ks->prints[j] = h;
    return 0;
}

/* The unit of ref (its source and the options that decide the files read) in the key's units. */
static int key_unit_add(run_ctx *rc, const family_kernel_ref *ref)
{
    struct run_key_scan *ks = rc->search->key_scan;
    char files[sizeof ref->options];
    key_unit k = {(char *)ref->source,
                  (char *)compile_options_files(ref->options, files, sizeof files)};
    if (index_reserve(&ks->unit_index, ks->n_units, unit_hash, rc) != 0)
        return -1;
    size_t *slot = index_slot(&ks->unit_index, ref_hash(k.source, "", k.options), unit_is, rc, &k);
    if (*slot)
        return 0;
    if (ks->n_units == ks->cap_units) {
        size_t cap = ks->cap_units ? 2 * ks->cap_units : 8;
        key_unit *nu = realloc(ks->units, cap * sizeof *nu);
        if (!nu)
            return -1;
        ks->units = nu;
        ks->cap_units = cap;
    }
    key_unit *u = &ks->units[ks->n_units];
    u->source = strdup(k.source);
    u->options = strdup(k.options);
    if (!u->source || !u->options) {
        free(u->source), free(u->options);
        return -1;
    }
    *slot = ++ks->n_units;
    return 0;
}

int run_key_add(run_ctx *rc, const family_kernel_ref *refs, int n)
{
    run_search_ctx *sx = rc->search;
    if (!sx->key_scan) {
        if (!(sx->key_scan = calloc(1, sizeof *sx->key_scan)))
            return -1;
        sx->key_scan->refs = HASH_FNV_OFFSET;
    }
    struct run_key_scan *ks = sx->key_scan;
    for (int r = 0; r < n; r++) {
        uint64_t h = ref_hash(refs[r].source, refs[r].name, refs[r].options);
        unsigned char arch = refs[r].arch != 0;
        ks->refs = hash_fnv1a(hash_fnv1a(ks->refs, &h, sizeof h), &arch, 1);
        if (key_count(ks, hash_fnv1a(h, &arch, 1)) != 0 || key_unit_add(rc, &refs[r]) != 0)
            return -1;
    }
    return 0;
}

size_t run_key_kernels(const run_ctx *rc)
{
    return rc->search && rc->search->key_scan ? rc->search->key_scan->n_prints : rc->n_kernels;
}

tune_status run_kernels_key_hash(run_ctx *rc, uint64_t *hash)
{
    char kdir[4096];
    const char *kernels_dir = rc->opt->kernels_dir;
    const struct run_key_scan *ks = rc->search ? rc->search->key_scan : NULL;
    if (!kernels_dir && !(kernels_dir = compile_find_kernels_dir(kdir, sizeof kdir)))
        return tune_error_set(rc->err, TUNE_ERR_IO, "kernels_src",
                              "cannot find the kernel sources (set TUNE_KERNELS_DIR)");
    size_t n = ks ? ks->n_units : 0;
    compile_job *jobs = calloc(n ? n : 1, sizeof *jobs);
    if (!jobs)
        return tune_error_set(rc->err, TUNE_ERR_NOMEM, "run", "out of memory");
    for (size_t i = 0; i < n; i++) { /* a unit's key: its name expression left empty */
        snprintf(jobs[i].source, sizeof jobs[i].source, "%s", ks->units[i].source);
        snprintf(jobs[i].options, sizeof jobs[i].options, "%s", ks->units[i].options);
    }
    compile_options copt = {.kernels_dir = kernels_dir, .arch = rc->arch};
    uint64_t units = 0;
    tune_status st = compile_hash_keys(jobs, n, &copt, &units, rc->err);
    free(jobs);
    uint64_t refs = ks ? ks->refs : HASH_FNV_OFFSET;
    *hash = hash_fnv1a(hash_fnv1a(HASH_FNV_OFFSET, &refs, sizeof refs), &units, sizeof units);
    return st;
}

void run_key_free(run_ctx *rc)
{
    struct run_key_scan *ks = rc->search->key_scan;
    for (size_t i = 0; ks && i < ks->n_units; i++)
        free(ks->units[i].source), free(ks->units[i].options);
    if (ks) {
        free(ks->units);
        free(ks->unit_index.slots);
        free(ks->prints);
        free(ks);
    }
    rc->search->key_scan = NULL;
}

void run_plans_free(run_ctx *rc)
{
    for (size_t i = 0; i < rc->n_plans; i++)
        free(rc->plans[i].skip);
    free(rc->plans);
    free(rc->plan_index.slots);
    free(rc->kernel_index.slots);
    rc->plans = NULL;
}
