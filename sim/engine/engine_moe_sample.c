/*
 * engine_moe_sample.c -- the MoE replay's micro-batch sampling
 * (--moe-sample-mb N, docs/moe.md "At 16K").
 *
 * Every step's routing is the same for all micro-batches, so the all-to-alls
 * of one MoE layer in one pass carry the same per-pair bytes in every
 * micro-batch.  With sampling, an EP group replays pair by pair (flows on the
 * fabric, coll_run_alltoallv) the all-to-alls of its first N micro-batches
 * only.  Each of those gives every member the time from the group's last
 * arrival to its own end.  A later micro-batch's all-to-all of the same
 * layer and kind then waits for the group's last member (a barrier: no
 * member can finish a real all-to-all before every member has started it)
 * and lasts that member's mean measured time.  One EP group, the first one
 * of the first stage with MoE layers (the witness), replays every
 * micro-batch pair by pair.  What this leaves out: the later all-to-alls'
 * flows, so their contention with other traffic is the one the sampled
 * micro-batches met.
 *
 * An instance of an exchange is the k-th exchange a member runs in its EP
 * group; members run them in the same order, and no member can be two
 * instances ahead of another (each needs the other's data), so the arrivals
 * are kept for the last few instances only.
 */
#include <stdlib.h>
#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <xbt/asserts.h>

#include "engine_moe_internal.h"

enum { RING = 4 }; /* arrivals kept per member: instances in flight, with room */

struct engine_moe_sample {
    int mb;                   /* micro-batches replayed pair by pair */
    int groups;               /* simulated EP groups: p · fold/ep */
    int witness;              /* the simulated EP group that replays everything */
    sg_bar_t *barrier;        /* [groups] */
    double *arrive;           /* [p·fold · RING] */
    long *instance;           /* [p·fold]: exchanges begun */
    double *sum;              /* [p·fold · num_moe · SLOTS]: measured end − last arrival */
    int *count;               /* same shape */
    double replayed, sampled; /* exchanges, over the simulated workers */
};

static int sim_index(const engine *e, const worker *w) { return w->stage * e->fold + w->replica; }

int engine_moe_sample_init(engine *e, int mb)
{
    engine_moe *m = e->moe;
    m->sample = NULL;
    if (mb <= 0 || mb >= e->pl->num_micro_batches)
        return 0;
    engine_moe_sample *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    m->sample = s;
    int n = e->p * e->fold;
    s->mb = mb;
    s->groups = n / m->ep;
    s->witness = engine_moe_first_stage(e, m->cm) * (e->fold / m->ep);
    s->barrier = calloc((size_t)s->groups, sizeof *s->barrier);
    s->arrive = calloc((size_t)n * RING, sizeof *s->arrive);
    s->instance = calloc((size_t)n, sizeof *s->instance);
    s->sum = calloc((size_t)n * m->num_moe * ENGINE_MOE_SLOTS, sizeof *s->sum);
    s->count = calloc((size_t)n * m->num_moe * ENGINE_MOE_SLOTS, sizeof *s->count);
    if (!s->barrier || !s->arrive || !s->instance || !s->sum || !s->count)
        return -1;
    for (int g = 0; g < s->groups; g++)
        s->barrier[g] = sg_barrier_init((unsigned)m->ep);
    return 0;
}

int engine_moe_first_stage(const engine *e, const cm_model *cm)
{
    for (int l = 0; l < cm->num_layers; l++)
        if (cm->layers[l].moe.is_moe)
            return plan_stage_of_layer(e->pl, l, NULL);
    return 0;
}

void engine_moe_sample_free(engine *e)
{
    engine_moe_sample *s = e->moe ? e->moe->sample : NULL;
    if (!s)
        return;
    for (int g = 0; s->barrier && g < s->groups; g++)
        if (s->barrier[g])
            sg_barrier_destroy(s->barrier[g]);
    free(s->barrier);
    free(s->arrive);
    free(s->instance);
    free(s->sum);
    free(s->count);
    free(s);
    e->moe->sample = NULL;
}

static size_t slot_of(const engine *e, int idx, int k, int slot)
{
    return ((size_t)idx * e->moe->num_moe + k) * ENGINE_MOE_SLOTS + slot;
}

bool engine_moe_sample_begin(engine *e, worker *w, int k, int slot, int micro_batch)
{
    engine_moe_sample *s = e->moe->sample;
    if (!s)
        return true;
    int idx = sim_index(e, w), group = idx / e->moe->ep;
    long inst = s->instance[idx]++;
    s->arrive[(size_t)idx * RING + inst % RING] = engine_now(e);
    size_t at = slot_of(e, idx, k, slot);
    if (micro_batch < s->mb || group == s->witness || s->count[at] == 0) {
        s->replayed++;
        return true;
    }
    s->sampled++;
    sg_barrier_wait(s->barrier[group]);            /* the group's last member has arrived */
    sg_actor_sleep_for(s->sum[at] / s->count[at]); /* a wait on the fabric, not compute */
    e->net.activities++;
    return false;
}

void engine_moe_sample_end(engine *e, worker *w, int k, int slot)
{
    engine_moe_sample *s = e->moe->sample;
    if (!s)
        return;
    int idx = sim_index(e, w), first = idx - idx % e->moe->ep;
    long inst = s->instance[idx] - 1;
    double last = 0.0;
    for (int j = first; j < first + e->moe->ep; j++) {
        xbt_assert(s->instance[j] - 1 >= inst && s->instance[j] - 1 - inst < RING,
                   "npusim: EP group members more than %d exchanges apart", RING);
        double a = s->arrive[(size_t)j * RING + inst % RING];
        last = a > last ? a : last;
    }
    size_t at = slot_of(e, idx, k, slot);
    s->sum[at] += engine_now(e) - last;
    s->count[at]++;
}

void engine_moe_sample_collect(const engine *e, engine_result *out)
{
    const engine_moe_sample *s = e->moe ? e->moe->sample : NULL;
    if (!s)
        return;
    out->moe_sample_mb = s->mb;
    out->moe_witness_stage = s->witness / (e->fold / e->moe->ep);
    out->moe_replayed_exchanges = s->replayed;
    out->moe_sampled_exchanges = s->sampled;
}
