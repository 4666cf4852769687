/* dashboard_impl.h - what the dashboard's files share; not for users of dashboard.h.
 *
 * dashboard.c checks the history tree and reshapes each group into its model, the object that
 * becomes data/<slug>.js and that the pages are written from (so a page never reads the
 * unchecked tree); it also owns the folder: the temporary sibling, the swap, the marker.
 * dashboard_html.c writes the pages. The model of a group (times in microseconds):
 *
 *   {"sweep", "device",
 *    "newest": {"run": id, "night", "counts": {"regression": n, ...}},
 *    "runs": [{"id", "night", "start", "host", "driver", "runtime", "tool_rev", "kernels_hash",
 *              "segment", "changes": [...], "best": "relative/href/best.md" or null}],
 *    "winners": ["chunk=64 threads=256", ...],          distinct winners, referred to by index
 *    "shapes": [{"shape", "series": [{"method", "status", "change_pct", "baseline", "reason",
 *        "x": [run index], "t": [us], "lo": [us|null], "hi": [us|null], "pct": [%|null],
 *        "v": "ssrs..." (one letter per point: r i s u n), "w": [winner index] (only when the
 *        method has parameters)}]}]}
 */
#ifndef TUNE_DASHBOARD_IMPL_H
#define TUNE_DASHBOARD_IMPL_H

#include <stdio.h>

#include <jansson.h>

#define DASH_SLUG_MAX 96

typedef struct {
    json_t *model; /* new; see above */
    char slug[DASH_SLUG_MAX];
} dash_group;

/* s with & < > " ' as character references. */
void dash_html_escape(FILE *f, const char *s);
/* The pages; site is {"generated", "store", "rule": {"window", "min_runs", "threshold_pct",
 * "k_mad", "consecutive", "segment_on"}}, checked. Write errors surface at the outfile's commit. */
void dash_write_index(FILE *f, const json_t *site, const dash_group *groups, size_t n);
void dash_write_group(FILE *f, const json_t *site, const dash_group *g);

/* The assets of web/, embedded at build time (generated tune_web_assets.c). */
extern const unsigned char tune_web_dashboard_js[], tune_web_dashboard_css[];
extern const size_t tune_web_dashboard_js_len, tune_web_dashboard_css_len;

#endif
