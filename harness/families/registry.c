/* registry.c - the registered families (model/family.h: family_all). A new family adds one line
 * here. Test-only families (fault injection) are registered only when TUNE_TEST_FAMILIES names
 * them (docs/fault-tolerance.md). */
#include <stdlib.h>
#include <string.h>

#include "model/family.h"

extern const tune_family gather_matmul_family;
extern const tune_family mixed_gemm_family;
extern const tune_family fault_test_family;
extern const tune_family declared_family;

/* declared_family ("kernel") is the GPU side of the families sweep files declare; a sweep copies
 * it with its own ops, parameters and methods (model/kernel_decl.h). */
static const tune_family *const families[] = {&gather_matmul_family, &mixed_gemm_family,
                                              &declared_family, NULL};
static const tune_family *const with_tests[] = {&gather_matmul_family, &mixed_gemm_family,
                                                &declared_family, &fault_test_family, NULL};

/* TUNE_TEST_FAMILIES: a comma-separated list of test families to register ("fault_test"). */
static int test_families_enabled(void)
{
    const char *v = getenv("TUNE_TEST_FAMILIES");
    if (!v)
        return 0;
    size_t n = strlen("fault_test");
    for (const char *p = strstr(v, "fault_test"); p; p = strstr(p + 1, "fault_test"))
        if ((p == v || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return 1;
    return 0;
}

const tune_family *const *family_all(void)
{
    return test_families_enabled() ? with_tests : families;
}
