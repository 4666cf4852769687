/* test_run.c - the run module's bookkeeping that needs no GPU: meta.json says which ceilings the
 * rows' roofline and model times use (the coordinator finds the same calibration file or specs
 * entry the workers load). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/roofline_calibration.h"
#include "run/internal.h"
#include "run/run.h"

static char tmpdir[256];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tune-test-run-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(run, .init = make_tmpdir, .fini = remove_tmpdir);

/* A calibration under the results root wins (its path and date are named), else the specs
 * table's entry, else none, with the reason. */
Test(run, meta_names_the_ceilings)
{
    run_options opt;
    memset(&opt, 0, sizeof opt);
    opt.out_root = tmpdir;
    run_ctx rc;
    memset(&rc, 0, sizeof rc);
    rc.opt = &opt;
    snprintf(rc.gi.name, sizeof rc.gi.name, "NVIDIA H200");
    run_note_ceilings(&rc);
    cr_expect(strncmp(rc.ceil_source, "specs table: NVIDIA H200", 24) == 0, "%s", rc.ceil_source);

    roofline_calibration cal;
    roofline_calibration_init(&cal);
    snprintf(cal.device, sizeof cal.device, "NVIDIA H200");
    snprintf(cal.date, sizeof cal.date, "2026-11-26T21:11:29Z");
    cal.read_bw = 4.57e12;
    cal.fetch_bytes = 64;
    char path[512];
    roofline_calibration_path(tmpdir, cal.device, path, sizeof path);
    tune_error err = {0};
    cr_assert_eq(roofline_calibration_save(path, &cal, &err), TUNE_OK, "%s", err.message);
    run_note_ceilings(&rc);
    cr_expect(strstr(rc.ceil_source, "calibration ") == rc.ceil_source, "%s", rc.ceil_source);
    cr_expect_not_null(strstr(rc.ceil_source, path), "%s", rc.ceil_source);
    cr_expect_not_null(strstr(rc.ceil_source, "2026-11-26T21:11:29Z"), "%s", rc.ceil_source);
    /* the workers' ceilings: the file's, with this run's read bandwidth */
    run_load_ceilings(&rc, 4.5e12);
    cr_expect(rc.have_ceil);
    cr_expect_eq(rc.ceil.read_bw, 4.5e12);
    cr_expect_eq(rc.ceil.fetch_bytes, 64);

    snprintf(rc.gi.name, sizeof rc.gi.name, "No Such GPU 9000");
    run_note_ceilings(&rc);
    cr_expect_str_eq(rc.ceil_source, "none: device not in the specs table");
}
