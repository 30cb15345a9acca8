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

/* --moe-trace, else model.moe_token_trace (a path relative to the
 * workload file, docs/workload-format.md), else NULL. */
static const char *trace_path(const cli *c, job *j, np_error *err, int *rc)
{
    *rc = 0;
    if (c->moe_trace_path)
        return c->moe_trace_path;
    const char *key = j->w.model.moe_token_trace;
    if (!key[0])
        return NULL;
    const char *slash = strrchr(c->workload_path, '/');
    int dir = key[0] == '/' || !slash ? 0 : (int)(slash - c->workload_path + 1);
    int n = snprintf(j->moe_trace_path_buf, sizeof j->moe_trace_path_buf, "%.*s%s", dir,
                     c->workload_path, key);
    if (n < 0 || (size_t)n >= sizeof j->moe_trace_path_buf) {
        *rc = np_error_set(err, NP_EXIT_INPUT, c->workload_path, "model.moe_token_trace", 0,
                           "the trace's path is too long");
        return NULL;
    }
    return j->moe_trace_path_buf;
}

int cli_moe_load(const cli *c, job *j, np_error *err)
{
    j->moe_trace = (moe_trace){0};
    j->moe_trace_step = 0;
    int path_rc;
    j->moe_trace_path = trace_path(c, j, err, &path_rc);
    if (path_rc)
        return path_rc;
    int policy_rc = cli_moe_policy_load(c, j, err); /* --moe-policy: cli_moe_policy.c */
    if (policy_rc)
        return policy_rc;
    if (c->moe_trace_step) {
        char *end;
        long v = strtol(c->moe_trace_step, &end, 10);
        if (!j->moe_trace_path)
            return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--moe-trace-step", 0,
                                "needs --moe-trace FILE (or the workload's "
                                "model.moe_token_trace)");
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
    const char *path = j->moe_trace_path;
    if (!path)
        return 0;
    int rc = moe_trace_read(path, &j->moe_trace, err);
    /* where it was named, for the engine's refusals (engine_moe_check.c) */
    j->moe_trace.named_in = c->moe_trace_path ? "<command line>" : c->workload_path;
    j->moe_trace.named_key = c->moe_trace_path ? "--moe-trace" : "model.moe_token_trace";
    if (!rc) /* its tokens depend on the plan: checked against it in the engine */
        rc = moe_trace_check_workload(&j->moe_trace, &j->w, path, err);
    int e = rc ? 0 : np_sha256_file(path, j->moe_trace_sha256); /* its CSV column */
    if (e)
        rc = np_error_set(err, NP_EXIT_INPUT, path, "", 0, "cannot read: %s", strerror(e));
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
