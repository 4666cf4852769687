/* probe.c - the device queried and counted in child processes: the coordinator never initialises
 * CUDA (its workers could not use the GPU after a fork otherwise). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/internal.h"

static int probe_body(void *ctx, int fd)
{
    const run_options *opt = ctx;
    gpu_info gi;
    tune_error e = {0};
    if (gpu_query(opt->device, &gi, &e) != TUNE_OK) {
        worker_send(fd, "F %d %s", (int)e.code, e.message);
        return 1;
    }
    char hex[2 * sizeof gi + 1];
    const unsigned char *b = (const unsigned char *)&gi;
    for (size_t i = 0; i < sizeof gi; i++)
        snprintf(hex + 2 * i, 3, "%02x", b[i]);
    worker_send(fd, "G %s", hex);
    return 0;
}

/* The end of a probe child: st is TUNE_OK when its answer line (r == 1: line) was understood;
 * otherwise the line is its failure ("F <code> <message>", kept in err) or the child is killed.
 * Waits for the child. */
static tune_status probe_finish(worker *w, int r, const char *line, tune_status st,
                                const char *what, tune_error *err)
{
    char how[256];
    if (st != TUNE_OK && r == 1 && line[0] == 'F') {
        char *msg;
        st = (tune_status)strtol(line + 2, &msg, 10);
        tune_error_set(err, st, "", "%s", msg + (*msg == ' '));
    } else if (st != TUNE_OK) {
        worker_kill(w);
    }
    worker_wait(w, how, sizeof how);
    if (st != TUNE_OK && (!err || err->code == TUNE_OK))
        tune_error_set(err, TUNE_ERR_CUDA, what, "the device query ended: %s", how);
    return st;
}

tune_status run_probe_device(const run_options *opt, gpu_info *gi, tune_error *err)
{
    worker *w = worker_start(probe_body, (void *)opt, err);
    if (!w)
        return err ? err->code : TUNE_ERR_IO;
    char line[4096];
    tune_status st = TUNE_ERR_NO_GPU;
    int r = worker_read_line(w, line, sizeof line, 120);
    if (r == 1 && line[0] == 'G' && strlen(line + 2) == 2 * sizeof *gi) {
        unsigned char *b = (unsigned char *)gi;
        for (size_t i = 0; i < sizeof *gi; i++) {
            unsigned v;
            sscanf(line + 2 + 2 * i, "%2x", &v);
            b[i] = (unsigned char)v;
        }
        st = TUNE_OK;
    }
    return probe_finish(w, r, line, st, "device query", err);
}

static int count_body(void *ctx, int fd)
{
    (void)ctx;
    int n = 0;
    tune_error e = {0};
    if (gpu_count(&n, &e) != TUNE_OK) {
        worker_send(fd, "F %d %s", (int)e.code, e.message);
        return 1;
    }
    worker_send(fd, "N %d", n);
    return 0;
}

tune_status run_probe_count(int *n, tune_error *err)
{
    worker *w = worker_start(count_body, NULL, err);
    if (!w)
        return err ? err->code : TUNE_ERR_IO;
    char line[4096];
    int r = worker_read_line(w, line, sizeof line, 120);
    tune_status st = r == 1 && sscanf(line, "N %d", n) == 1 ? TUNE_OK : TUNE_ERR_NO_GPU;
    return probe_finish(w, r, line, st, "device count", err);
}

void run_driver_version(monitor *mon, char *buf, size_t size)
{
    buf[0] = '\0';
    if (monitor_driver_version(mon, buf, size))
        return;
    /* first line of /proc/driver/nvidia/version ("NVRM version: ... 580.159.04 ..."), if any */
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f)
        return;
    if (fgets(buf, (int)size, f))
        buf[strcspn(buf, "\n")] = '\0';
    else
        buf[0] = '\0';
    fclose(f);
}
