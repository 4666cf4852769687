/* tune_pick_chunk: the chunk for a problem shape, from `tune fit`.
 * Rule: 128
 * Fitted on results/sparq/20261122T053942Z/ (method any tuned, 36 shapes), family constant.
 * Efficiency 99.5 % (geometric mean of best time / time of the rule's chunk), leave-one-shape-out 99.5 %, 0 infeasible shapes.
 */
#ifndef TUNE_PICK_CHUNK_H
#define TUNE_PICK_CHUNK_H

#include <stdint.h>

#ifndef TUNE_PICK_HELPERS_
#define TUNE_PICK_HELPERS_
static inline int64_t tune_pick_min_(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t tune_pick_max_(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t tune_pick_abs_(int64_t a) { return a < 0 ? -a : a; }
/* x >= 1 */
static inline int64_t tune_pick_floor_pow2_(int64_t x)
{
    int64_t p = 1;
    while (p <= x / 2)
        p *= 2;
    return p;
}
static inline int64_t tune_pick_ceil_pow2_(int64_t x)
{
    int64_t p = tune_pick_floor_pow2_(x);
    return p == x ? p : 2 * p;
}
#endif

static inline int tune_pick_chunk(void)
{
    return (int)(128);
}

#endif
