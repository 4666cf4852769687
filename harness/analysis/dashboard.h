/* dashboard.h - `tune dashboard`: a static site of nightly trends from a history tree
 * (analysis/history.h, docs/dashboard.md), opened from the file system with no network.
 *
 *   json_t *h = NULL;
 *   if (history_build(&opt, &h, &err) == TUNE_OK &&
 *       dashboard_write(h, "results/dashboard", &err) == TUNE_OK)
 *       ... open results/dashboard/index.html ...
 *   json_decref(h);
 *
 * The site:
 *   index.html            one row per group (sweep x GPU): the newest run's night and verdict
 *                         counts, groups with regressions highlighted, a link to its page;
 *   <slug>.html           a group's page: per shape a trend chart (drawn by dashboard.js) and
 *                         the methods' verdicts, the winners per night, the runs with links to
 *                         their best.md; slug = sweep--device kept to [A-Za-z0-9_.-];
 *   data/<slug>.js        the group's series as `window.TUNE_DATA = {...};` (JSON, compact);
 *   dashboard.js, .css    the page code and style, embedded in the binary (web/);
 *   .tune-dashboard       the marker that lets a later dashboard_write replace the folder.
 *
 * The tree is checked whole before anything is written: a missing key, a wrong type, an
 * unknown verdict or a point of a run the group lacks is TUNE_ERR_INVALID with the JSON path
 * ("$.groups[0].series[2].points[5].time") in err->where. Every text of the tree is escaped
 * into the HTML, and the data file escapes "</".
 */
#ifndef TUNE_DASHBOARD_H
#define TUNE_DASHBOARD_H

#include <jansson.h>

#include "core/error.h"

/* The marker file of a dashboard folder. */
#define DASHBOARD_MARKER ".tune-dashboard"

/* Writes the site of history (borrowed; the tree of history_build) into out_dir. Everything is
 * written into a temporary sibling folder "<out_dir>.tmp.<8 hex digits>", which then takes
 * out_dir's place in one rename (an existing one is swapped out and removed). An existing out_dir
 * is replaced only when it is an empty folder or a dashboard (it holds DASHBOARD_MARKER); a
 * symbolic link, a file or another folder is refused (TUNE_ERR_IO, where = out_dir), and no
 * link is followed when removing the old site. On any failure the temporary folder is removed
 * and out_dir is as it was; I/O errors name the file. best.md links are relative from out_dir
 * to "<source_dir>/best.md" of each run whose file exists now. */
tune_status dashboard_write(const json_t *history, const char *out_dir, tune_error *err);

#endif
