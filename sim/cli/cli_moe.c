/*
 * cli_moe.c -- simrun's MoE options: --moe-trace FILE (a routing trace,
 * docs/moe-trace-format.md, held against the workload) and
 * --moe-trace-step N (the step the engine replays, default 0) and
 * --moe-policy NAME|all (planner/model/moe_policy.h; all: one row per
 * policy).  Without --moe-trace the engine replays balanced routing
 * (docs/moe.md).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "moe_policy.h"

static int load_policy(const cli *c, job *j, np_error *err)
{
    j->moe_policy = MOE_POLICY_NONE;
    j->moe_policy_all = 0;
    if (!c->moe_policy)
        return 0;
    if (strcasecmp(c->moe_policy, "all") == 0) {
        const char *clash = c->planner && strcasecmp(c->planner, "all") == 0 ? "--planner all"
                            : c->trace_path                                  ? "--trace"
                            : c->plan_out                                    ? "--plan-out"
                            : c->run_id                                      ? "--run-id"
                                                                             : NULL;
        if (clash)
            return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--moe-policy", 0,
                                "all writes one row per policy and cannot be combined with %s: "
                                "run each policy on its own",
                                clash);
        j->moe_policy_all = 1;
        return 0;
    }
    int k = moe_policy_find(c->moe_policy);
    if (k < 0) {
        char names[128] = "";
        for (int i = 0; i < MOE_POLICY_COUNT; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s, ",
                     moe_policy_name((moe_policy_kind)i));
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--moe-policy", 0,
                            "unknown policy '%s', expected one of: %sall", c->moe_policy, names);
    }
    j->moe_policy = k;
    return 0;
}

int cli_moe_each_policy(const cli *c, job *j, plan *pl, cli_moe_run_fn one, np_error *err)
{
    (void)c;
    j->moe_policy_all = 2;
    int rc = 0;
    for (int k = 0; !rc && k < MOE_POLICY_COUNT; k++) {
        j->moe_policy = k;
        cli_progress_say(c, "simrun: MoE policy %s…", moe_policy_name((moe_policy_kind)k));
        rc = one(c, j, pl, err);
        cli_progress_clear(c);
    }
    j->moe_policy_all = 1;
    return rc;
}

int cli_moe_load(const cli *c, job *j, np_error *err)
{
    j->moe_trace = (moe_trace){0};
    j->moe_trace_step = 0;
    int prc = load_policy(c, j, err);
    if (prc)
        return prc;
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
    if (!c->moe_trace_path)
        return 0;
    int rc = moe_trace_read(c->moe_trace_path, &j->moe_trace, err);
    if (!rc)
        rc = moe_trace_check_workload(&j->moe_trace, &j->w, c->moe_trace_path, err);
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
}
