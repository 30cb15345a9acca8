/*
 * engine_moe_check.c -- whether a run replays its MoE layers, and what it
 * refuses when it does not (docs/moe.md, "When it applies").
 *
 * The replay needs experts with ep > 1 and the alltoall dispatcher, expert
 * TP equal to the plan's TP (an EP group is then ep consecutive replicas of
 * a stage), no context parallelism, uniform micro-batches, no --dp-overlap
 * with ZeRO-2/3 (engine_moe_dp.c has the overlap with expert buckets),
 * a cost model that can re-price its layers, and a plan whose data-parallel
 * size ep divides.  Without it the cost model's closed form, priced at
 * balanced routing, stays in the ops.  Whatever only the replay can do is
 * then refused, before anything is simulated, naming the condition: a
 * routing trace (which would be ignored), a --moe-policy other than none,
 * --moe-sample-mb, model.overlap_moe_expert_parallel_comm.  The same holds
 * when the replay would post more all-to-all flows than the bound.  A run
 * that replays is refused the bruck all-to-all (it has no volume per pair)
 * and a routing trace that does not match its plan, and a policy whose
 * capacity the workload and its cost model were not built with
 * (moe_policy_apply: without it the memory model would leave Switch's
 * padding out).
 */
#include <stdio.h>

#include "engine_moe.h"
#include "engine_moe_internal.h"
#include "moe.h"
#include "moe_policy.h"

bool engine_moe_applies(const engine *e, const wl_workload *w, const cm_model *cm, char *why,
                        size_t size)
{
    const wl_model *m = &w->model;
    const wl_parallel *p = &w->parallel;
    int ep = p->expert_model_parallel_size;
    int etp = p->expert_tensor_parallel_size > 0 ? p->expert_tensor_parallel_size : e->tp;
    if (m->num_experts <= 0 || wl_moe_num_layers(m) <= 0)
        snprintf(why, size, "the model has no MoE layers");
    else if (ep <= 1)
        snprintf(why, size,
                 "parallel.expert_model_parallel_size is %d: no expert-parallel all-to-all", ep);
    else if (m->moe_token_dispatcher_type != WL_MOE_ALLTOALL)
        snprintf(why, size,
                 "model.moe_token_dispatcher_type is not \"alltoall\", the only dispatcher "
                 "replayed");
    else if (etp != e->tp)
        snprintf(why, size,
                 "parallel.expert_tensor_parallel_size %d is not the plan's tensor_parallel %d: "
                 "the EP group lies inside a TP group, priced in closed form",
                 etp, e->tp);
    else if (e->cp != 1)
        snprintf(why, size, "context parallelism (parallel.context_parallel_size %d)", e->cp);
    else if (e->pl->micro_batch_sizes)
        snprintf(why, size, "planner %s's plan has micro-batches of different sizes",
                 e->pl->planner);
    else if (e->opt->dp_overlap && cm->sharding >= WL_SHARD_OPTIM_GRADS)
        snprintf(why, size,
                 "--dp-overlap with ZeRO-2/3 (data_parallel_sharding_strategy \"%s\"), whose "
                 "per-pass reduce-scatters and gathers run over the data-parallel group only, "
                 "with no expert-data-parallel form",
                 wl_sharding_name(cm->sharding));
    else if (!cm->has_source)
        snprintf(why, size, "the cost model cannot re-price its layers (a synthetic model)");
    else if (e->dp % ep != 0)
        snprintf(why, size,
                 "the plan's data_parallel %d is not a multiple of "
                 "parallel.expert_model_parallel_size %d",
                 e->dp, ep);
    else
        return true;
    return false;
}

/* A trace's file for messages. */
static const char *trace_file(const moe_trace *t)
{
    return t->path ? t->path : "the routing trace";
}

int engine_moe_refuse(const engine *e, const wl_workload *w, const char *why, np_error *err)
{
    const engine_options *o = e->opt;
    const char *policy = moe_policy_name((moe_policy_kind)o->moe_policy);
    if (w->model.overlap_moe_expert_parallel_comm)
        return wl_key_error(err, NP_EXIT_USAGE, w, "model.overlap_moe_expert_parallel_comm",
                            "overlaps the MoE replay's all-to-alls, which this run does not "
                            "have (%s; docs/moe.md, \"When it applies\"): expected false",
                            why);
    if (o->moe_sample_mb > 0)
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--moe-sample-mb", 0,
                            "samples the MoE replay, which this run does not have (%s; "
                            "docs/moe.md, \"When it applies\")",
                            why);
    if (o->moe_policy != MOE_POLICY_NONE)
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--moe-policy", 0,
                            "policy '%s' needs the MoE replay, which this run does not have "
                            "(%s; docs/moe.md, \"When it applies\")",
                            policy, why);
    const moe_trace *t = o->moe_trace;
    if (t)
        return np_error_set(err, NP_EXIT_USAGE, t->named_in ? t->named_in : "<command line>",
                            t->named_key ? t->named_key : "--moe-trace", 0,
                            "%s needs the MoE replay, which this run does not have (%s; "
                            "docs/moe.md, \"When it applies\"): its closed form would price "
                            "balanced routing and ignore the trace",
                            trace_file(t), why);
    return 0;
}

int engine_moe_refuse_over_bound(const engine *e, const wl_workload *w, double flows, np_error *err)
{
    const engine_options *o = e->opt;
    const moe_trace *t = o->moe_trace;
    char why[160];
    snprintf(why, sizeof why,
             "about %.2g flows are over the bound (--allow-large replays them, --fold-dp and "
             "--moe-sample-mb make fewer)",
             flows);
    if (w->model.overlap_moe_expert_parallel_comm)
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--allow-large", 0,
                            "model.overlap_moe_expert_parallel_comm needs the MoE replay: %s", why);
    if (o->moe_policy != MOE_POLICY_NONE)
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--moe-policy", 0,
                            "policy '%s' needs the MoE replay: %s",
                            moe_policy_name((moe_policy_kind)o->moe_policy), why);
    if (t)
        return np_error_set(err, NP_EXIT_USAGE, t->named_in ? t->named_in : "<command line>",
                            t->named_key ? t->named_key : "--moe-trace", 0,
                            "%s needs the MoE replay: %s; the closed form would ignore the trace",
                            trace_file(t), why);
    return 0;
}

int engine_moe_check_replay(const engine *e, const wl_workload *w, np_error *err)
{
    if (e->opt->ep_alltoall_algorithm == COLL_BRUCK) /* the replay has no Bruck */
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--ep-alltoall-algorithm", 0,
                            "bruck has no form with a volume per pair, which the MoE replay's "
                            "token exchange has: expected pairwise or concurrent");
    const moe_trace *t = e->opt->moe_trace;
    if (!t)
        return 0;
    int step = e->opt->moe_trace_step;
    if (step < 0 || step >= t->steps)
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--moe-trace-step", 0,
                            "expected a step of the trace, 0 to %d, got %d", t->steps - 1, step);
    return moe_trace_check_plan(t, w, e->pl->micro_batch_size, e->tp, e->pl->planner, trace_file(t),
                                err);
}

int engine_moe_check_policy(const engine *e, const wl_workload *w, const cm_model *cm,
                            np_error *err)
{
    moe_policy_kind k = (moe_policy_kind)e->opt->moe_policy;
    const wl_model *built = cm->has_source ? &cm->source.model : &w->model;
    if (moe_policy_applied(k, &w->model) && moe_policy_applied(k, built))
        return 0;
    double cf;
    bool pad;
    moe_policy_capacity_of(k, &w->model, &cf, &pad);
    return np_error_set(err, NP_EXIT_INTERNAL, "<engine>", "--moe-policy", 0,
                        "policy '%s' routes with moe_expert_capacity_factor %g %s padding, but "
                        "the workload has %g %s and its cost model was built with %g %s: the "
                        "cost and memory models would not count what it routes "
                        "(moe_policy_apply() before cm_build())",
                        moe_policy_name(k), cf, pad ? "with" : "without",
                        w->model.moe_expert_capacity_factor,
                        w->model.moe_pad_expert_input_to_capacity ? "with" : "without",
                        built->moe_expert_capacity_factor,
                        built->moe_pad_expert_input_to_capacity ? "with" : "without");
}
