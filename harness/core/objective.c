#include "core/objective.h"

#include <math.h>
#include <string.h>

static const char *const objective_names[] = {"time", "energy", "edp"};
static const char *const objective_units[] = {"s", "J", "J*s"};

int objective_parse(const char *s, tune_objective *out)
{
    for (int i = 0; s && i < (int)(sizeof objective_names / sizeof *objective_names); i++) {
        if (strcmp(s, objective_names[i]) == 0) {
            *out = (tune_objective)i;
            return 0;
        }
    }
    return -1;
}

const char *objective_name(tune_objective obj)
{
    return (unsigned)obj <= OBJECTIVE_EDP ? objective_names[obj] : "unknown";
}

const char *objective_unit(tune_objective obj)
{
    return (unsigned)obj <= OBJECTIVE_EDP ? objective_units[obj] : "";
}

double objective_print_scale(tune_objective obj, const char **unit)
{
    static const char *const units[] = {"us", "uJ", "uJ*us"};
    int i = (unsigned)obj <= OBJECTIVE_EDP ? (int)obj : 0;
    if (unit)
        *unit = units[i];
    return obj == OBJECTIVE_EDP ? 1e12 : 1e6;
}

int objective_needs_energy(tune_objective obj)
{
    return obj == OBJECTIVE_ENERGY || obj == OBJECTIVE_EDP;
}

double objective_cost(tune_objective obj, double time_s, double energy_j)
{
    int t = isfinite(time_s) && time_s > 0, e = isfinite(energy_j) && energy_j > 0;
    switch (obj) {
    case OBJECTIVE_TIME:
        return t ? time_s : NAN;
    case OBJECTIVE_ENERGY:
        return e ? energy_j : NAN;
    case OBJECTIVE_EDP:
        return t && e ? time_s * energy_j : NAN;
    }
    return NAN;
}
