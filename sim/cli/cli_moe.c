/*
 * cli_moe.c -- simrun's MoE options: --moe-trace FILE (a routing trace,
 * docs/moe-trace-format.md, held against the workload) and
 * --moe-trace-step N (the step the engine replays, default 0) and
 * --moe-sample-mb N (micro-batch sampling of the replay, engine_moe_sample.c).  Without
 * --moe-trace the engine replays balanced routing (docs/moe.md).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "np_sha256.h"

int cli_moe_load(const cli *c, job *j, np_error *err)
{
    j->moe_trace = (moe_trace){0};
    j->moe_trace_step = 0;
    int policy_rc = cli_moe_policy_load(c, j, err); /* --moe-policy: cli_moe_policy.c */
    if (policy_rc)
        return policy_rc;
    if (c->moe_trace_step) {
        char *end;
        long v = strtol(c->moe_trace_step, &end, 10);
        if (!c->moe_trace_path)
            return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--moe-trace-step", 0,
                                "needs --moe-trace FILE");
        if (*c->moe_trace_step == '\0' || *end != '\0' || v < 0 || v > 1000000)
            return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--moe-trace-step", 0,
                                "expected a non-negative integer, got '%s'", c->moe_trace_step);
        j->moe_trace_step = (int)v;
    }
    j->moe_sample_mb = 0;
    if (c->moe_sample_mb) {
        char *end;
        long v = strtol(c->moe_sample_mb, &end, 10);
        if (*c->moe_sample_mb == '\0' || *end != '\0' || v < 1 || v > 1000000)
            return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--moe-sample-mb", 0,
                                "expected a number of micro-batches, at least 1, got '%s'",
                                c->moe_sample_mb);
        j->moe_sample_mb = (int)v;
    }
    if (!c->moe_trace_path)
        return 0;
    int rc = moe_trace_read(c->moe_trace_path, &j->moe_trace, err);
    if (!rc)
        rc = moe_trace_check_workload(&j->moe_trace, &j->w, c->moe_trace_path, err);
    int e = rc ? 0 : np_sha256_file(c->moe_trace_path, j->moe_trace_sha256); /* its CSV column */
    if (e)
        rc = np_error_set(err, NP_EXIT_INPUT, c->moe_trace_path, "", 0, "cannot read: %s",
                          strerror(e));
    if (!rc && j->moe_trace_step >= j->moe_trace.steps)
        rc = np_error_set(err, NP_EXIT_USAGE, "<command line>", "--moe-trace-step", 0,
                          "the trace has steps 0 to %d, got %d", j->moe_trace.steps - 1,
                          j->moe_trace_step);
    return rc;
}

void cli_moe_options(const cli *c, const job *j, engine_options *eo)
{
    eo->moe_max_flows = c->allow_large ? INFINITY : 0.0;
    eo->moe_trace = j->moe_trace.counts ? &j->moe_trace : NULL;
    eo->moe_trace_step = j->moe_trace_step;
    eo->moe_policy = j->moe_policy;
    eo->moe_sample_mb = j->moe_sample_mb;
}
