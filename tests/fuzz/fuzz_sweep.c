/* fuzz_sweep.c - libFuzzer target for the sweep parser and the configuration space.
 *
 * Input: the text of a sweep file (JSON; cut at the first NUL byte). The target parses it with
 * sweep_parse, and when it parses and the sweep would enumerate at most FUZZ_MAX_CONFIGS
 * configurations, builds its space (pruning with the skip_if constraints), walks a few of its
 * points and evaluates the byte and FLOP models on them, then frees everything. A parse failure must come with an error code and a
 * message; a success with none. Everything else (crashes, leaks, UB) is for the sanitizers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "families/families.h"
#include "model/space.h"
#include "model/sweep.h"

/* Enumeration cost cap: space_build on larger sweeps is correct but slow, not interesting. */
#define FUZZ_MAX_CONFIGS 100000u

/* Product of the axis sizes, or SIZE_MAX once it passes limit. */
static size_t axes_product(const sweep_axis *axes, size_t n, size_t limit)
{
    size_t total = 1;
    for (size_t i = 0; i < n; i++) {
        if (axes[i].n == 0)
            return 0;
        if (total > limit / axes[i].n)
            return SIZE_MAX;
        total *= axes[i].n;
    }
    return total;
}

/* Configurations space_build would enumerate before pruning, capped at SIZE_MAX. */
static size_t sweep_configs(const sweep *sw)
{
    size_t shapes = axes_product(sw->problem, sw->n_problem, FUZZ_MAX_CONFIGS);
    size_t params = axes_product(sw->params, sw->n_params, FUZZ_MAX_CONFIGS);
    if (shapes == SIZE_MAX || params == SIZE_MAX)
        return SIZE_MAX;
    size_t per_shape = 0;
    for (size_t m = 0; m < sw->n_methods; m++) {
        const family_method *fm = family_find_method(sw->family, sw->methods[m]);
        per_shape += fm && fm->tuned ? params : 1;
    }
    if (shapes && per_shape > FUZZ_MAX_CONFIGS / shapes)
        return SIZE_MAX;
    return shapes * per_shape;
}

/* the families a sweep may name, registered once as tune's main does */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    families_register_builtin();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    tune_error err = {0};
    sweep *sw = sweep_parse(text, "fuzz.json", &err);
    if (!sw) {
        if (err.code == TUNE_OK || err.message[0] == '\0')
            abort(); /* a failure must say why */
        free(text);
        return 0;
    }
    if (err.code != TUNE_OK)
        abort(); /* a success must leave the error record alone */

    if (sweep_configs(sw) <= FUZZ_MAX_CONFIGS) {
        tune_error serr = {0};
        space *sp = space_build(sw, &serr);
        if (sp) {
            size_t n = space_n_configs(sp);
            for (size_t i = 0; i < n && i < 64; i++) {
                tune_point p;
                space_config_point(sp, i, &p);
                char buf[1024];
                point_format(&p, buf, sizeof buf);
                /* what a run does with every config: the byte and FLOP models (their values do
                 * not matter here, only that evaluating them never crashes) */
                expr_value v;
                tune_error eerr = {0};
                tune_status_ignore(expr_eval(sw->bytes, point_lookup, &p, &v, &eerr));
                tune_status_ignore(expr_eval(sw->flops, point_lookup, &p, &v, &eerr));
            }
            for (size_t i = 0; i < space_n_shapes(sp) && i < 16; i++)
                (void)space_shape(sp, i);
            space_free(sp);
        } else if (serr.code == TUNE_OK || serr.message[0] == '\0') {
            abort();
        }
    }
    sweep_free(sw);
    free(text);
    return 0;
}
