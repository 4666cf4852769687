/* family_traffic.c - the traffic-model lookup, apart from family.c so that the CPU library's
 * users (the roofline model) need not link the family registry that family_find reads. */
#include "model/family.h"

#include <string.h>

const family_traffic *family_find_traffic(const tune_family *fam, const char *op,
                                          const char *method)
{
    const family_traffic *any = NULL;
    for (size_t i = 0; fam && op && i < fam->n_traffic; i++) {
        const family_traffic *t = &fam->traffic[i];
        if (t->op && strcmp(t->op, op) != 0)
            continue;
        if (!t->method)
            any = any ? any : t;
        else if (method && strcmp(t->method, method) == 0)
            return t;
    }
    return any;
}
