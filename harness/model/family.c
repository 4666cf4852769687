#include "model/family.h"

#include <string.h>

const tune_family *family_find(const char *name)
{
    const tune_family *const *families = family_all();
    for (size_t i = 0; name && families[i]; i++)
        if (strcmp(families[i]->name, name) == 0)
            return families[i];
    return NULL;
}

const family_op *family_find_op(const tune_family *fam, const char *op)
{
    for (size_t i = 0; fam && op && i < fam->n_ops; i++)
        if (strcmp(fam->ops[i].name, op) == 0)
            return &fam->ops[i];
    return NULL;
}

const family_method *family_find_method(const tune_family *fam, const char *method)
{
    for (size_t i = 0; fam && method && i < fam->n_methods; i++)
        if (strcmp(fam->methods[i].name, method) == 0)
            return &fam->methods[i];
    return NULL;
}
