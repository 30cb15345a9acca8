/*
 * runner.c -- the CUnit runner of npusim.
 *
 *   npusim_tests            run every suite
 *   npusim_tests SUITE...   run the named suites only
 * Exit status is non-zero when any assertion failed.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

void npusim_register_all_tests(void);

int main(int argc, char **argv)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    npusim_register_all_tests();
    CU_basic_set_mode(CU_BRM_NORMAL);
    if (argc == 1) {
        CU_basic_run_tests();
    } else {
        for (int i = 1; i < argc; i++) {
            CU_pSuite s = CU_get_suite(argv[i]);
            if (!s) {
                fprintf(stderr, "npusim_tests: no suite named '%s'\n", argv[i]);
                CU_cleanup_registry();
                return 2;
            }
            CU_basic_run_suite(s);
        }
    }
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}
