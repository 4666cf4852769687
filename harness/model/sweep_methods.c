/* sweep_methods.c - the roles of a sweep's methods as JSON (sweep.h). A file of its own so that
 * meta.json's writer links it without the sweep parser and the family registry. */
#include <jansson.h>
#include <string.h>

#include "model/sweep.h"

json_t *sweep_methods_json(const sweep *sw)
{
    json_t *o = json_object();
    const tune_family *f = sw->family;
    for (size_t i = 0; o && f && i < sw->n_methods; i++)
        for (size_t j = 0; j < f->n_methods; j++)
            if (strcmp(f->methods[j].name, sw->methods[i]) == 0)
                json_object_set_new(o, f->methods[j].name,
                                    json_string(family_method_role_str(f->methods[j].role)));
    return o;
}
