/* objective.h - what "best" means when configurations are ranked: the time of a call, its energy,
 * or the energy-delay product (energy x time), each the lower the better (docs/timing.md#energy).
 *
 *   tune_objective obj;
 *   if (objective_parse("edp", &obj) != 0) ... usage error ...
 *   double cost = objective_cost(obj, median_s, energy_j);   // NAN: the row cannot be ranked
 *   printf("ranked by %s\n", objective_name(obj));
 *
 * Reports, rules, comparisons and the search take one option, --objective time|energy|edp.
 */
#ifndef TUNE_OBJECTIVE_H
#define TUNE_OBJECTIVE_H

typedef enum {
    OBJECTIVE_TIME = 0, /* seconds per call (the median) */
    OBJECTIVE_ENERGY,   /* joules per call */
    OBJECTIVE_EDP       /* joules x seconds per call */
} tune_objective;

/* "time", "energy" or "edp" into *out: 0, or -1 for any other text (out unchanged). */
int objective_parse(const char *s, tune_objective *out);
/* "time", "energy", "edp" (static). */
const char *objective_name(tune_objective obj);
/* The unit of objective_cost's value: "s", "J", "J*s" (static). */
const char *objective_unit(tune_objective obj);
/* How tables print a cost: the factor from objective_unit's to *unit's, "us", "uJ" or "uJ*us"
 * (static; unit may be NULL). */
double objective_print_scale(tune_objective obj, const char **unit);
/* The cost to minimise of a call that took time_s seconds and energy_j joules (NAN when not
 * measured): NAN when the objective needs what is missing, or either is not finite and > 0. */
double objective_cost(tune_objective obj, double time_s, double energy_j);
/* 1 when the objective needs a call's energy (energy, edp). */
int objective_needs_energy(tune_objective obj);

#endif
