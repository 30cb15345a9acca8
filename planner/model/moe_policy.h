/*
 * moe_policy.h -- MoE load-balancing policies: what each one decides for one
 * MoE layer of one training step from a routing trace (docs/moe.md,
 * "Policies").  Decisions only; the engine applies them (engine_moe.c):
 * per-pair token volumes, rows each rank computes, padding and drops, and
 * the expert copies (weights in memory, parameter broadcasts and gradient
 * reductions on the fabric).
 *
 *   none          the workload's own capacity and padding (dropless when
 *                 moe_expert_capacity_factor is unset): what simrun did
 *                 before the policies.
 *   switch        Switch Transformer (Fedus, Zoph, Shazeer 2021, section 2.2):
 *                 expert capacity C = ⌈cf·T·k/E⌉ per expert and source
 *                 (cf 1.25 unless the workload sets one), tokens over C
 *                 dropped, every expert's input padded to C (static shapes):
 *                 the workload's keys moe_expert_capacity_factor cf and
 *                 moe_pad_expert_input_to_capacity true, which
 *                 moe_policy_apply() sets before the cost model is built, so
 *                 that its tokens, all-to-all bytes and activation memory
 *                 (the fit check, peak_bytes) count the padding.
 *   fastermoe     FasterMoE (He et al., PPoPP'22, section 4, dynamic
 *                 shadowing): the experts are taken from the most loaded
 *                 down; one more is shadowed (its weights broadcast to every
 *                 rank, its gradients reduced back, each rank computing its
 *                 own tokens for it) while the modelled latency drops:
 *                     lat(S) = max_k (3·comp·B_k + 4·feat·X_k) + |S|·shadow
 *                 B_k the rows rank k computes, X_k the tokens it exchanges
 *                 (the larger of sent and received; the paper writes B_k for
 *                 both), comp one row's forward time through one expert
 *                 (3×: forward and backward), feat one token's transfer (4×:
 *                 dispatch and combine, forward and backward), shadow one
 *                 expert's broadcast and gradient reduction.  Dropless, with
 *                 the pipelined pairwise all-to-all (smart scheduling: the
 *                 chunk from one peer is computed while the next travels).
 *                 The topology-aware gate is left out: it changes the
 *                 routing, which the trace fixes.
 *   efficientmoe  EfficientMoE (as docs/planners.md records it): a sampler
 *                 (the per-expert counts of the steps before, or at step 0 a
 *                 sample: source 0's row scaled by the sources), an EMA load
 *                 predictor L̂ ← θ·L̂ + (1−θ)·L (θ the history's weight), hot
 *                 experts replicated until the most loaded rank is within
 *                 (1+ε) of the mean, the replicas placed by LPT (largest
 *                 shard first, on the least loaded rank that may hold it),
 *                 per-replica capacity ⌈γ·L̂_e/r_e⌉ rounded up to one of a few
 *                 static sizes (moe_policy_sizes), tokens over it dropped and
 *                 each replica padded to it.  Each source splits its tokens
 *                 of an expert evenly over the expert's r_e holders.
 *
 * Copies (shadows and replicas) are refused beyond max_copies per rank:
 * the engine sets it from the free memory of the stage (capacity − the
 * memory model's peak) over the bytes of one copy (weights + gradients),
 * shared evenly by the MoE layers.
 */
#ifndef MOE_POLICY_H
#define MOE_POLICY_H

#include <stdbool.h>

#include "moe_trace.h"

typedef enum moe_policy_kind {
    MOE_POLICY_NONE = 0,
    MOE_POLICY_SWITCH,
    MOE_POLICY_FASTERMOE,
    MOE_POLICY_EFFICIENTMOE,
    MOE_POLICY_COUNT
} moe_policy_kind;

const char *moe_policy_name(moe_policy_kind k);
/* The policy of that name, any case; -1 when unknown. */
int moe_policy_find(const char *name);

/* Quantised capacity sizes of EfficientMoE: ⌈f·m⌉ for f in these factors
 * of the mean expert load m = sources·tokens/E. */
#define MOE_POLICY_NUM_SIZES 8
extern const double moe_policy_size_factors[MOE_POLICY_NUM_SIZES];

typedef struct moe_policy_env {
    double capacity; /* the workload's C per expert and source (0: none) */
    bool pad;        /* the workload's moe_pad_expert_input_to_capacity */
    double switch_cf;
    int max_copies; /* expert copies one rank may hold for this layer */
    /* FasterMoE's latency model, seconds */
    double comp_s, feat_s, shadow_s;
    /* EfficientMoE */
    double theta, epsilon, gamma;
} moe_policy_env;

/* The defaults: cf MOE_SWITCH_CF, θ 0.9, ε 0.1, γ 1.1, no copies allowed. */
void moe_policy_env_init(moe_policy_env *env);

/* Switch's capacity factor when the workload sets none. */
#define MOE_SWITCH_CF 1.25

/* The capacity factor (0: none) and padding the MoE layers of model m run
 * with under policy k: switch's are m's factor (MOE_SWITCH_CF when m sets
 * none) with padding; the others keep m's keys (none routes by them;
 * FasterMoE and EfficientMoE decide per layer from the trace).  The one
 * place a policy's static capacity is decided: the cost model is built
 * from it (moe_policy_apply) and the replay routes by it
 * (moe_policy_plan). */
void moe_policy_capacity_of(moe_policy_kind k, const wl_model *m, double *cf, bool *pad);
/* Sets m's moe_expert_capacity_factor and moe_pad_expert_input_to_capacity
 * to policy k's (moe_policy_capacity_of) before the cost model is built
 * from it, so that the cost model's tokens, all-to-all bytes, activation
 * units and so the memory model price what the policy routes.  A model
 * without experts, or with the allgather dispatcher (which has no capacity,
 * and which the policies' replay refuses), is left as it is.  True when a
 * key changed. */
bool moe_policy_apply(moe_policy_kind k, wl_model *m);
/* Whether model m already has policy k's keys: what the engine requires of
 * the workload and of its cost model's source before it replays a policy. */
bool moe_policy_applied(moe_policy_kind k, const wl_model *m);

/* One MoE layer of one step under a policy.  route: rows, padding, dropped
 * per rank and send[i·n + j], the tokens source i's rank j computes
 * (diagonal included: computed where they are).  copy[e·n + j] is 1 when
 * rank j holds a copy of expert e it does not own; copy_capacity[e] the
 * per-holder capacity (EfficientMoE), else 0. */
typedef struct moe_layer_plan {
    moe_route route;
    unsigned char *copy; /* [experts·sources] */
    double *copy_capacity;
    int experts, copies, shadowed;
    bool pipelined;
    double model_latency_s; /* FasterMoE: lat(S) of the chosen set */
} moe_layer_plan;

int moe_layer_plan_init(moe_layer_plan *p, int experts, int sources);
void moe_layer_plan_free(moe_layer_plan *p);
/* Decides (step, layer) of trace t under policy k: 0, or -1 on an unknown
 * policy. */
int moe_policy_plan(moe_policy_kind k, const moe_policy_env *env, const moe_trace *t, int step,
                    int layer, moe_layer_plan *out);

/* ---- the parts, for the tests -------------------------------------------- */

/* FasterMoE's lat(S): shadow[e] != 0 for e in S. */
double moe_fastermoe_latency(const moe_policy_env *env, const moe_trace *t, int step, int layer,
                             const unsigned char *shadow);
/* LPT: items in decreasing size (ties: lower index first), each on the
 * least loaded bin (ties: lower bin) that has a free slot (slots NULL: no
 * limit) and does not hold the item's group (group NULL: no groups; holds
 * [groups·bins] updated).  load[bins] holds the bins' starting loads and
 * gets the final ones.  Returns 0, or the number of items no bin could
 * take (bin_of −1). */
int moe_lpt(int n, const double *size, const int *group, int bins, double *load, int *slots,
            unsigned char *holds, int *bin_of);
/* The smallest size ⌈f·mean⌉ not below c (the largest when none is). */
double moe_quantise_capacity(double c, double mean);
/* EfficientMoE's predicted load of every expert at `step` (predicted[E]). */
void moe_predict_load(const moe_trace *t, int step, int layer, double theta, double *predicted);

#endif
