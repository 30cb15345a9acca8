/*
 * fuzz_plan.c -- libFuzzer target: the saved-plan reader (simrun --plan) and
 * everything simrun does with a plan before it simulates.
 *
 * The plan is read against a fixed job, workloads/small_gpt.json priced on
 * a 910B-class cluster of tp·pp·dp NPUs, loaded once.  A plan that reads
 * is sized into its own cost model when its parallel sizes differ (as
 * simrun does), checked for memory, and turned into op lists, which
 * sched_check() must accept: a plan the reader lets through must never make
 * an inconsistent schedule.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "costmodel.h"
#include "fuzz_input.h"
#include "memory.h"
#include "plan_json.h"
#include "planner.h"
#include "schedule.h"
#include "workload.h"

#ifndef NPUSIM_SOURCE_DIR
#define NPUSIM_SOURCE_DIR "."
#endif

static wl_workload job_workload;
static cl_cluster job_cluster;
static cm_model job_cost;

static void job_load(void)
{
    np_error err;
    char buf[1024];
    np_error_clear(&err);
    if (wl_load(NPUSIM_SOURCE_DIR "/workloads/small_gpt.json", NULL, 0, &job_workload, &err)) {
        fprintf(stderr, "fuzz_plan: %s\n", np_error_format(&err, buf, sizeof buf));
        abort();
    }
    const wl_parallel *p = &job_workload.parallel;
    job_cluster = fuzz_cluster(p->tensor_model_parallel_size * p->pipeline_model_parallel_size *
                               p->data_parallel_size);
    if (cm_build(&job_workload, &job_cluster, job_workload.training.micro_batch_size, &job_cost,
                 &err)) {
        fprintf(stderr, "fuzz_plan: %s\n", np_error_format(&err, buf, sizeof buf));
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!job_cost.num_layers)
        job_load();
    char path[64];
    int fd = fuzz_input_open(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    plan pl;
    np_error err;
    np_error_clear(&err);
    if (plan_read_json(path, job_cost.num_layers, &pl, &err) == 0) {
        cm_model own;
        const cm_model *cm;
        if (planner_cost_model_for(&job_workload, &job_cluster, &job_cost, &pl, &own, &cm, &err) ==
            0) {
            if (mem_check_fits(cm, &pl, &err) == 0) {
                schedule sc;
                if (sched_build(&pl, cm, &sc, &err) == 0) {
                    char buf[1024];
                    if (sched_check(&sc, &err)) {
                        fprintf(stderr, "fuzz_plan: accepted plan, bad schedule: %s\n",
                                np_error_format(&err, buf, sizeof buf));
                        abort();
                    }
                    sched_free(&sc);
                }
            }
            if (cm == &own)
                cm_free(&own);
        }
        plan_free(&pl);
    }
    fuzz_input_close(fd);
    return 0;
}
