/*
 * fuzz_platform.c -- libFuzzer target: the platform reader's own reading of
 * the XML text, before SimGrid parses it (platform_file.c): the regular-file
 * and size checks, the <platform version> check, the workload-swapped hint,
 * the element and attribute scan that skips comments, the radical and
 * fat-tree parsers, the size estimate and the taper.
 *
 * What comes after, SimGrid's own parse and the reading of hosts and links,
 * cannot be fuzzed in one process: SimGrid holds one platform per process
 * and aborts on a bad one.  That half is covered by the bad-input platforms
 * of tests/bad_input, each run in a child process by test_platform.c.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_input.h"
#include "platform_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_input_open(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    platform_limits lim;
    platform_init_limits(&lim);
    np_error err;
    np_error_clear(&err);
    platform_scan scan;
    int rc = platform_precheck(path, &lim, &scan, &err);
    if (rc == 0 && !(scan.taper > 0 && scan.taper <= 1)) {
        fprintf(stderr, "fuzz_platform: accepted a platform with taper %g\n", scan.taper);
        abort();
    }
    if (rc != 0 && rc != NP_EXIT_INPUT) {
        fprintf(stderr, "fuzz_platform: exit code %d for a bad platform\n", rc);
        abort();
    }
    fuzz_input_close(fd);
    return 0;
}
