/* util_families.c - linked into every test program that links the device library: registers the
 * built-in families and the fault-injection one (families/families.h) before main, so that every
 * test, and every process a test forks, finds them as tune's main registers its own. */
#include "families/families.h"

__attribute__((constructor)) static void register_test_families(void)
{
    families_register_testing();
}
