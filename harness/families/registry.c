/* registry.c - the families this build offers (families.h). A new family adds one line to
 * families_register_builtin. */
#include "families/families.h"

#include "model/family.h"

extern const tune_family gather_matmul_family;
extern const tune_family mixed_gemm_family;
extern const tune_family fault_test_family;
extern const tune_family declared_family;

/* declared_family ("kernel") is the GPU side of the families sweep files declare; a sweep builds
 * its family from it and its own ops, parameters and methods (model/kernel_decl.h). The registry holds
 * FAMILY_MAX families and these have distinct names, so registering cannot fail. */
void families_register_builtin(void)
{
    family_register(&gather_matmul_family);
    family_register(&mixed_gemm_family);
    family_register(&declared_family);
}

void families_register_testing(void)
{
    families_register_builtin();
    family_register(&fault_test_family);
}
