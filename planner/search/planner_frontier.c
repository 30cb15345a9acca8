/*
 * planner_frontier.c -- TensorOpt frontier tracking and the planner "ft".
 *
 * Source.  Z. Cai et al., "TensorOpt: Exploring the Tradeoffs in Distributed
 * DNN Training With Auto-Parallelism", IEEE TPDS 33(8), 2022 [rec: from the
 * abstract and docs/planners.md].  Each operator has configurations, each with a
 * cost (time, memory); instead of one optimum, keep per configuration the
 * frontier of non-dominated (time, memory) pairs, combine operators with the
 * Pareto-sum F1 ⊕ F2 = Pareto{(t1 + t2, m1 + m2)} and alternatives with the
 * Pareto-union, and return the whole frontier, from which a user picks the
 * fastest plan that fits or the smallest memory for a device count.
 *
 * What is modelled for a training job (1F1B pipeline, Megatron layout):
 *   - Global choices, enumerated: TP degree t (t ≤ NPUs per node, t divides
 *     the heads, the query groups and the FFN width; t = 1 for a layer-listed
 *     model), pipeline depth p ≤ layers, data parallelism d = N/(t·p) dividing
 *     the global batch G, micro-batch size b a power of two dividing G/d, so
 *     m = G/(d·b).  Every tuple gets its own cost model (cm_build on the
 *     workload with these sizes) and Megatron's uniform partition (planner_
 *     megatron), embedding on the first stage, LM head on the last.
 *   - Operators: the layers of the cost model.  Configuration: the layer's
 *     recompute option; decoder layers none / selective / full, listed
 *     (CNN-style) layers none / full (selective means nothing there), the
 *     embedding and the LM head none, as Megatron does.  N_l(r) is the single
 *     point (F + B + W + TP collectives + recompute time, activation bytes
 *     kept per micro-batch) that plan_layer_recompute() gives.
 *   - Sharding: TensorOpt's configurations also carry a sharding with
 *     resharding edges.  Our plan type holds one TP degree for the whole
 *     model and the simulator runs one TP group per stage, so the sharding is
 *     a global choice, every edge joins two layers of identical sharding and
 *     costs 0.  The chain solver takes edge costs (tests exercise them); a
 *     per-layer TP would need a plan type that can express it.
 *   - A stage is one device (group): its layers' time and activation bytes
 *     add, which is exactly the Pareto-sum setting, so the chain DP over the
 *     stage's layers gives its (time, activation) frontier.  Stage memory is
 *     (memory.c's replay of 1F1B)
 *       M_s = static_s + k_s · A_s + τ_s + workspace,  k_s = min(p − s, m),
 *     with τ_s the largest recompute working set of a layer of the stage, a
 *     maximum rather than a sum.  It is handled by levels: for every distinct
 *     working-set value λ, the DP runs with the options whose working set is
 *     ≤ λ and charges λ; a configuration appears exactly at its own level
 *     and, over-charged and therefore dominated, at higher ones.
 *     Stage time S_s = Σ layer times + 2·c_s, c_s the send of the stage's
 *     output (alpha-beta on the scale-up fabric when both ends of every TP
 *     rank's transfer share a server under Megatron's tp-dp-pp rank order,
 *     else on the scale-out fabric).
 *   - Stages run concurrently, so they do not Pareto-sum: the iteration is
 *     the 1F1B critical path T = Σ_s S_s + (m − 1)·max_s S_s + tail (Narayanan
 *     et al. SC'21 §2.2; docs/planners.md, BMPipe's preparation time plus (m−1)τ),
 *     tail = max_s (DP gradient all-reduce + optimizer step), and memory per
 *     device is max_s M_s.  Both grow with every stage's S_s and M_s, so for
 *     a memory bound μ the fastest choice takes, in every stage, its fastest
 *     point with M_s ≤ μ; sweeping μ over the stages' memory values and
 *     pruning gives the exact frontier of the tuple (any configuration with
 *     memory M is matched or beaten by the sweep at μ = M).
 *   - DP all-reduce: ring (cm_ring_allreduce_s) of the stage's gradient bytes
 *     over d replicas, on the scale-out fabric once t·d exceeds a server (the
 *     replicas of a TP rank sit t ranks apart).  Optimizer:
 *     cm_optimizer_step_s over the stage's layers.
 *   - The job's frontier for N devices is the Pareto-union over the tuples.
 *     Across device counts, frontier_sweep() lists one frontier per N.
 *
 * Not modelled: interleaved or zero-bubble schedules, uneven partitions
 * (the partition is Megatron's; BMPipe and AdaPipe search it), per-unit
 * recompute, and communication overlap beyond what the critical path states.
 *
 * Files.  frontier_set.c the Pareto sets, frontier_chain.c the chain DP,
 * frontier_tuple.c one tuple's frontier, frontier_sweep.c the device
 * counts and the frontier container, frontier_csv.c the CSV writer;
 * frontier_internal.h declares what they share.  This file holds the
 * workloads and plans of an entry, the cost function and the planner "ft".
 */

#include <stdio.h>
#include <string.h>

#include "frontier_internal.h"
#include "planner.h"
#include "predict.h"

/* The 1F1B critical path of predict.c, sends placed by Megatron's rank order. */
double frontier_plan_time_s(const cm_model *cm, const cl_cluster *c, const plan *pl)
{
    return predict_1f1b_iteration_s(cm, c, pl, PREDICT_SENDS_RANK_ORDER);
}

void frontier_workload_for_entry(const wl_workload *w, const frontier_entry *e, wl_workload *out)
{
    *out = *w;
    out->parallel.tensor_model_parallel_size = e->tensor_parallel;
    out->parallel.pipeline_model_parallel_size = e->pipeline_parallel;
    out->parallel.data_parallel_size = e->data_parallel;
    out->parallel.virtual_pipeline_model_parallel_size = 1;
    out->training.micro_batch_size = e->micro_batch_size;
    out->schedule = SCHED_1F1B;
}

void frontier_workload_for_plan(const wl_workload *w, const plan *pl, wl_workload *out)
{
    *out = *w;
    out->parallel.tensor_model_parallel_size = pl->tensor_parallel;
    out->parallel.pipeline_model_parallel_size = pl->num_stages;
    out->parallel.data_parallel_size = pl->data_parallel;
    out->parallel.virtual_pipeline_model_parallel_size = pl->num_chunks;
    out->training.micro_batch_size = pl->micro_batch_size;
    out->schedule = pl->schedule;
}

/* Megatron's uniform 1F1B partition of cm for the workload wc, every layer
 * without recompute (the caller sets the options). */
int ft_uniform_plan(const cm_model *cm, const cl_cluster *c, const wl_workload *wc, plan *out,
                    np_error *err)
{
    planner_options o;
    planner_init_options(&o, wc);
    o.schedule = SCHED_1F1B;
    o.num_chunks = 1;
    o.recompute = RECOMPUTE_NONE;
    return planner_megatron(cm, c, wc, &o, out, err);
}

int frontier_entry_plan(const wl_workload *w, const cl_cluster *c, const frontier_entry *e,
                        plan *out, np_error *err)
{
    wl_workload wc;
    cm_model cm;
    frontier_workload_for_entry(w, e, &wc);
    int rc = cm_build(&wc, c, e->micro_batch_size, &cm, err);
    if (rc)
        return rc;
    rc = ft_uniform_plan(&cm, c, &wc, out, err);
    if (!rc && cm.num_layers != e->num_layers) {
        plan_free(out);
        rc = np_error_set(err, NP_EXIT_INTERNAL, FT_SOURCE, "", 0,
                          "frontier entry has %d layers, the cost model %d", e->num_layers,
                          cm.num_layers);
    }
    cm_free(&cm);
    if (rc)
        return rc;
    memcpy(out->recompute, e->recompute, (size_t)e->num_layers * sizeof *out->recompute);
    out->predicted_iteration_s = e->iteration_s;
    snprintf(out->planner, sizeof out->planner, "ft");
    return 0;
}

int planner_frontier(const cm_model *cm, const cl_cluster *c, const wl_workload *w,
                     const planner_options *o, plan *out, np_error *err)
{
    /* cm is built for the workload's sizes; every tuple gets its own, with
     * cm's ZeRO overlap (the caller's --dp-overlap) */
    int refused = planner_refuse_context_parallel("ft", w, err);
    if (refused)
        return refused;
    if (o->schedule != SCHED_1F1B)
        return wl_key_error(err, NP_EXIT_INPUT, w, "schedule",
                            "planner ft models the 1f1b schedule only, got %s",
                            wl_schedule_name(o->schedule));
    const wl_parallel *par = &w->parallel;
    int devices = par->tensor_model_parallel_size * par->pipeline_model_parallel_size *
                  par->data_parallel_size;
    frontier f;
    int rc = frontier_compute_with(w, c, devices, cm->zero_overlap, &f, err);
    if (rc)
        return rc;
    int best = frontier_fastest_fitting(&f, devices);
    if (best < 0) {
        int least = frontier_smallest_memory(&f, devices);
        rc = np_error_set(err, NP_EXIT_NOFIT, w->path, "", 0,
                          "planner ft: no configuration of %d NPUs fits %.2f GB per NPU; the "
                          "smallest needs %.2f GB",
                          devices, c->hbm_bytes / 1e9,
                          least >= 0 ? f.entries[least].memory_bytes / 1e9 : 0.0);
    } else {
        rc = frontier_entry_plan(w, c, &f.entries[best], out, err);
    }
    frontier_free(&f);
    return rc;
}
