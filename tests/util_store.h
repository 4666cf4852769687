/* util_store.h - small finished runs written for the tests of the results store (test_db.c,
 * test_history.c): a meta.json and raw.jsonl as `tune run` writes them, shapes x configurations,
 * with the times the test chooses. */
#ifndef TUNE_TESTS_UTIL_STORE_H
#define TUNE_TESTS_UTIL_STORE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    const char *sweep;  /* "toy" */
    const char *device; /* "NVIDIA H200" */
    const char *driver; /* "580.1" */
    const char *kernels; /* the kernels' hash, "k1" */
    const char *start;  /* "2026-01-01T02:00:00Z" */
    int end;            /* meta.json has its end */
    int n_shapes;       /* shapes n = 128 * (1 + i) */
    int n_configs;      /* tuned configurations chunk = 16 << j, and one baseline */
    /* the tuned time of shape i, configuration j (seconds); NULL: 1e-5 * (1 + i) * (1 + j) */
    double (*time)(int i, int j, void *ctx);
    void *ctx;
    const char *extra_meta; /* more meta.json members, ", \"shard\": {...}" */
    int skip_shape;         /* a shape whose tuned rows fail (invalid); -1: none */
    /* the tuned energy of shape i, configuration j (joules per call, rows of format 2); NULL:
     * rows of format 1, without energy */
    double (*energy)(int i, int j, void *ctx);
} toy_run;

static inline toy_run toy_defaults(void)
{
    return (toy_run){"toy", "NVIDIA H200", "580.1", "k1", "2026-01-01T02:00:00Z", 1, 3, 3,
                     NULL, NULL, "", -1, NULL};
}

/* Writes run r into dir (created). */
static inline void toy_write(const char *dir, const toy_run *r)
{
    char path[1024];
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/meta.json", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "{\"schema_version\": 2, \"tool\": {\"name\": \"tune\", \"version\": \"0.1.0\", "
            "\"git_rev\": \"abc\"}, \"host\": {\"hostname\": \"node1\"}, \"sweep\": {\"file\": "
            "\"sweeps/%s.json\", \"name\": \"%s\", \"family\": \"fam\", \"op\": \"op\", "
            "\"hash\": \"h1\"}, \"report\": {\"rows\": [\"n\"], \"cols\": []}, \"device\": "
            "{\"name\": \"%s\", \"pci_bus_id\": \"0000:00:06.0\", \"uuid\": \"GPU-1\"}, "
            "\"versions\": {\"driver_cuda\": 13000, \"runtime\": 13000, \"nvrtc\": 13000, "
            "\"driver\": \"%s\"}, \"key\": {\"kernels_hash\": \"%s\", \"driver\": \"%s\"}, "
            "\"seed\": 1, \"start\": \"%s\"%s%s%s%s}\n",
            r->sweep, r->sweep, r->device, r->driver, r->kernels, r->driver, r->start,
            r->end ? ", \"end\": \"" : "", r->end ? r->start : "", r->end ? "\"" : "",
            r->extra_meta);
    fclose(f);
    snprintf(path, sizeof path, "%s/raw.jsonl", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < r->n_shapes; i++) {
        int n = 128 * (1 + i);
        for (int j = 0; j < r->n_configs; j++) {
            double t = r->time ? r->time(i, j, r->ctx) : 1e-5 * (1 + i) * (1 + j);
            int bad = i == r->skip_shape;
            char energy[64] = "";
            if (r->energy)
                snprintf(energy, sizeof energy, "\"energy_j\":%.9g,",
                         r->energy(i, j, r->ctx));
            fprintf(f,
                    "{\"sweep\":\"%s\",\"family\":\"fam\",\"op\":\"op\",\"method\":\"custom\","
                    "\"n\":%d,\"chunk\":%d,\"axes\":[\"n\"],\"params\":[\"chunk\"],\"status\":"
                    "\"%s\",\"reason\":%s,\"time_median\":%.9g,\"time_n\":%d,\"bytes\":1e6,"
                    "%s\"schema\":%d}\n",
                    r->sweep, n, 16 << j, bad ? "invalid" : "ok", bad ? "\"wrong\"" : "null",
                    t, bad ? 0 : 10, energy, r->energy ? 2 : 1);
        }
        fprintf(f,
                "{\"sweep\":\"%s\",\"family\":\"fam\",\"op\":\"op\",\"method\":\"base\",\"n\":%d,"
                "\"chunk\":null,\"axes\":[\"n\"],\"params\":[\"chunk\"],\"status\":\"ok\","
                "\"reason\":null,\"time_median\":%.9g,\"time_n\":10,\"schema\":1}\n",
                r->sweep, n, 5e-5 * (1 + i));
    }
    fclose(f);
}

#endif
