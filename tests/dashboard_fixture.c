/* dashboard_fixture HISTORY.json OUT_DIR - the site of a history tree read from a file: the
 * test-only path of tests/test_dashboard_browser.sh to dashboard_write, for fixtures and for
 * synthetic histories (scripts/dashboard_synth.py). Exit 0, or 1 with the error on stderr. */
#include <stdio.h>

#include "analysis/dashboard.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: dashboard_fixture HISTORY.json OUT_DIR\n");
        return 2;
    }
    json_error_t je;
    json_t *h = json_load_file(argv[1], 0, &je);
    if (!h) {
        fprintf(stderr, "%s:%d:%d: %s\n", argv[1], je.line, je.column, je.text);
        return 1;
    }
    tune_error err = {0};
    char buf[4096];
    tune_status st = dashboard_write(h, argv[2], &err);
    json_decref(h);
    if (st != TUNE_OK)
        fprintf(stderr, "dashboard_fixture: %s\n", tune_error_text(&err, buf, sizeof buf));
    return st == TUNE_OK ? 0 : 1;
}
