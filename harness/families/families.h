/* families.h - the families this build offers, for a program's registry (model/family.h):
 *
 *   families_register_builtin();   // tune's main: gather_matmul, mixed_gemm, kernel (declared)
 *   families_register_testing();   // the tests: the built-in ones and fault_test
 *
 * fault_test injects faults (docs/fault-tolerance.md): only the tests and the test build of the
 * command line (tune_test) register it, so a normal `tune` neither lists nor runs it.
 */
#ifndef TUNE_FAMILIES_H
#define TUNE_FAMILIES_H

void families_register_builtin(void);
void families_register_testing(void);

#endif
