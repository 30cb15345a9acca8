/*
 * cli_moe_policy.c -- simrun's --moe-policy NAME|all (planner/model/
 * moe_policy.h, docs/moe.md "Policies"): the policy the engine applies to
 * the MoE replay, or all of them, one table and CSV row each, on the same
 * plan.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "moe_policy.h"

int cli_moe_policy_load(const cli *c, job *j, np_error *err)
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
    j->moe_policy_all = 2;
    int rc = 0;
    j->check_only = 1; /* all or nothing: every policy must be able to run */
    for (int k = 0; !rc && k < MOE_POLICY_COUNT; k++) {
        j->moe_policy = k;
        /* a failure with no policy (none) is the run's own: as it is */
        if ((rc = one(c, j, pl, err)) && k != MOE_POLICY_NONE) {
            np_error was = *err; /* the check's own error, with where it is */
            np_error_set(err, rc, was.source, was.key, was.line,
                         "--moe-policy all: policy '%s' cannot run here, so no policy was run "
                         "(run the others one by one): %s",
                         moe_policy_name((moe_policy_kind)k), was.text);
        }
    }
    j->check_only = 0;
    for (int k = 0; !rc && k < MOE_POLICY_COUNT; k++) {
        j->moe_policy = k;
        cli_progress_say(c, "simrun: MoE policy %s…", moe_policy_name((moe_policy_kind)k));
        rc = one(c, j, pl, err);
        cli_progress_clear(c);
    }
    j->moe_policy_all = 1;
    return rc;
}
