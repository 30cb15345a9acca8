/*
 * cli_moe_policy.c -- simrun's --moe-policy NAME|all (planner/model/
 * moe_policy.h, docs/moe.md "Policies"): the policy the engine applies to
 * the MoE replay, or all of them, one table and CSV row each, on the same
 * plan.
 *
 * A policy with a static capacity of its own (switch: its capacity factor
 * and padding, moe_policy_capacity_of) runs on a workload and cost model
 * built with it (moe_policy_apply), so that the capacity's padding is in
 * the activation memory, the fit check and peak_bytes as the workload's
 * own moe_pad_expert_input_to_capacity puts it there.  A single --moe-policy
 * sets the keys as the workload is loaded, before the cost model is built;
 * under all, each such policy's row gets a cost model of its own, and its
 * plan is checked against that model's memory before any row is written.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "memory.h"
#include "moe_policy.h"
#include "planner.h"

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
    moe_policy_apply((moe_policy_kind)k, &j->w.model); /* before cm_build (simrun.c) */
    return 0;
}

/* The plan of --moe-policy all against the memory of the policy's own cost
 * model (simrun's check_memory): does not fit is an error, or with
 * --ignore-memory a warning. */
static int check_fits(const cli *c, const job *j, const plan *pl, np_error *err)
{
    int rc = cli_plan_fits(j, pl, err);
    if (rc != NP_EXIT_NOFIT || !c->ignore_memory)
        return rc;
    char buf[1400];
    if (!c->quiet)
        fprintf(
            stderr, "simrun: warning: --moe-policy %s: %s; simulated anyway (--ignore-memory)\n",
            moe_policy_name((moe_policy_kind)j->moe_policy), np_error_format(err, buf, sizeof buf));
    np_error_clear(err);
    return 0;
}

/* `one` for policy j->moe_policy: on the workload and a cost model with the
 * policy's capacity when it has one of its own, restored afterwards. */
static int run_policy(const cli *c, job *j, plan *pl, cli_moe_run_fn one, np_error *err)
{
    wl_model *m = &j->w.model;
    double cf = m->moe_expert_capacity_factor;
    bool pad = m->moe_pad_expert_input_to_capacity;
    if (!moe_policy_apply((moe_policy_kind)j->moe_policy, m))
        return one(c, j, pl, err);
    cm_model base = j->cm, own = {0};
    int rc = cm_build(&j->w, &j->pf.cluster, 0, &own, err);
    if (!rc) {
        own.zero_overlap = base.zero_overlap; /* what simrun sets after cm_build */
        own.dp_bucket_bytes = base.dp_bucket_bytes;
        j->cm = own;
        /* the planner priced the plan with the workload's capacity: no
         * prediction for this row (as simrun does for a plan priced with
         * another cost model) */
        double pred = pl->predicted_iteration_s;
        pl->predicted_iteration_s = 0;
        if (j->check_only)
            rc = check_fits(c, j, pl, err);
        if (!rc)
            rc = one(c, j, pl, err);
        pl->predicted_iteration_s = pred;
        j->cm = base;
    }
    cm_free(&own);
    m->moe_expert_capacity_factor = cf;
    m->moe_pad_expert_input_to_capacity = pad;
    return rc;
}

int cli_moe_each_policy(const cli *c, job *j, plan *pl, cli_moe_run_fn one, np_error *err)
{
    j->moe_policy_all = 2;
    int rc = 0;
    j->check_only = 1; /* all or nothing: every policy must be able to run */
    for (int k = 0; !rc && k < MOE_POLICY_COUNT; k++) {
        j->moe_policy = k;
        /* a failure with no policy (none) is the run's own: as it is */
        if ((rc = run_policy(c, j, pl, one, err)) && k != MOE_POLICY_NONE) {
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
        rc = run_policy(c, j, pl, one, err);
        cli_progress_clear(c);
    }
    j->moe_policy_all = 1;
    return rc;
}
