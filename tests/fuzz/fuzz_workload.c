/*
 * fuzz_workload.c -- libFuzzer target: the workload loader, its cross-key
 * checks, the cost model and the memory check on whatever bytes come in.
 *
 * An input may start with override lines, "#set KEY=VALUE\n" each, applied
 * as simrun's --set; the rest is the workload JSON.  A workload that loads
 * is checked against a cluster of exactly tp·pp·dp NPUs (so the checks after
 * the NPU count run too), priced by the cost model at its micro-batch size,
 * and its Megatron plan is checked for memory: the path simrun takes before
 * any simulation.  Every failure must be an np_error; a crash, a sanitizer
 * report, a leak or a hang is a finding.
 */
#include <stdint.h>
#include <string.h>

#include "costmodel.h"
#include "fuzz_input.h"
#include "planner.h"
#include "workload.h"

enum { MAX_OVERRIDES = 8, MAX_OVERRIDE_BYTES = 512 };

/* Splits the leading "#set ..." lines off data; returns the JSON's offset. */
static size_t read_overrides(const uint8_t *data, size_t size, char text[][MAX_OVERRIDE_BYTES],
                             int *count)
{
    size_t at = 0;
    *count = 0;
    while (*count < MAX_OVERRIDES && size - at > 5 && memcmp(data + at, "#set ", 5) == 0) {
        const uint8_t *end = memchr(data + at, '\n', size - at);
        if (!end)
            break;
        size_t length = (size_t)(end - (data + at)) - 5;
        if (length >= MAX_OVERRIDE_BYTES)
            length = MAX_OVERRIDE_BYTES - 1;
        memcpy(text[*count], data + at + 5, length);
        text[*count][length] = '\0';
        (*count)++;
        at = (size_t)(end - data) + 1;
    }
    return at;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char text[MAX_OVERRIDES][MAX_OVERRIDE_BYTES];
    const char *overrides[MAX_OVERRIDES];
    int num_overrides;
    size_t json_at = read_overrides(data, size, text, &num_overrides);
    for (int i = 0; i < num_overrides; i++)
        overrides[i] = text[i];

    char path[64];
    int fd = fuzz_input_open(data + json_at, size - json_at, path, sizeof path);
    if (fd < 0)
        return 0;
    wl_workload w;
    np_error err;
    np_error_clear(&err);
    if (wl_load(path, overrides, num_overrides, &w, &err) == 0) {
        long npus = (long)w.parallel.tensor_model_parallel_size *
                    w.parallel.pipeline_model_parallel_size * w.parallel.data_parallel_size;
        cl_cluster c = fuzz_cluster(npus > 1L << 30 ? 1 << 30 : (int)npus);
        cm_model cm;
        if (wl_check_cluster(&w, c.num_npus, &err) == 0 &&
            cm_build(&w, &c, w.training.micro_batch_size, &cm, &err) == 0) {
            planner_options o;
            planner_init_options(&o, &w);
            plan pl;
            planner_run(planner_find("megatron"), &cm, &c, &w, &o, &pl, &err); /* + memory */
            plan_free(&pl);
            cm_free(&cm);
        }
        wl_free(&w);
    }
    fuzz_input_close(fd);
    return 0;
}
