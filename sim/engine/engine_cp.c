/*
 * engine_cp.c -- context parallelism: the ring exchange of K/V chunks
 * between the c workers that share a sequence (stage s, replica d, CP ranks
 * 0..c−1), as flows on the fabric.
 *
 * Megatron's ring attention (docs/design.md, cost model; costmodel_cp.c)
 * runs c − 1 steps per attention forward: each CP rank sends the K/V chunk it
 * holds to its ring successor while it computes one attention block, then
 * computes with the chunk it received.  Per step the exposed time is
 * max(0, α + S/B − t_block).  A forward op of a model chunk of n layers has
 * k = n(c − 1) such steps, all alike (identical layers), and replaying them
 * one by one would cost k flows per TP rank per op.  The engine replays them
 * as one message per op instead, which on an idle fabric takes exactly the
 * sum of the steps:
 *   - the op's overlapped compute (k blocks, cp_overlap_s) starts as an
 *     asynchronous execution on the worker's NPU;
 *   - the worker waits (k − 1)·α, then sends the k messages' bytes
 *     (cp_bytes) to the same TP ranks of its ring successor's NPUs as one
 *     transfer: one SimGrid flow per TP rank (a scale-up delay when both NPUs
 *     share a server), so it contends with every other flow of the fabric;
 *   - it waits for its compute and for its predecessor's transfer, then for
 *     the other ranks of its ring to have done the same (a barrier of the c
 *     workers); the op's compute then goes on (the caller runs the rest).
 * On a ring of equal edges the exchange thus ends at max(t + k·block, t +
 * (k−1)α + α + k·S/B), and the exposed time is max(0, k(α + S/B) − k·block)
 * = k·max(0, α + S/B − block): the per-step closed form, summed
 * (tests/test_context_parallel.c checks it on a flat platform).
 *
 * Why the barrier.  A rank forwards at step j the chunk it received at step
 * j − 1, and each step waits for its send and its receive (Megatron's
 * isend/irecv pairs).  Step j of rank r therefore ends no earlier than step
 * j − 1 of its neighbours plus their edge's d = α + S/B: a slow edge (one
 * that leaves the server while the others stay inside) holds back its two
 * ranks at once, and through them, one hop per step, the whole ring.  After
 * at most c/2 steps every rank goes at max(block, d_max) per step, the
 * slowest edge's pace (the cycle of largest mean in this max-plus
 * recurrence).  One message per op cannot carry that dependency: without the
 * barrier, a rank whose predecessor sits in its server took its K/V at
 * intra-server speed and ran micro-batches ahead of its slow neighbour,
 * whose transfer then hid behind the fast rank's later ops (a ring of 4
 * ranks per server, TP 2 × CP 8 on 8-GPU servers: 0.333 s simulated, 19%
 * under the planners' k·max(0, d_max − block) estimate).  With the barrier
 * every rank of the ring ends the op when its slowest transfer has arrived:
 * k·max(0, d_max − block) exposed, exact on equal edges and, on mixed ones,
 * up to the transient of at most c/2 steps of the k (it assumes the whole
 * ring at the slowest pace from the first step).  What the model leaves
 * out: the steps of different layers pipeline perfectly (a slow step is
 * paid once, not per layer), and the non-attention compute of the layers
 * does not overlap the exchange, as in Megatron, where the MLP waits for the
 * attention's output.  The backward sends K/V and their gradients (twice the
 * bytes) the same way.
 */
#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>

#include "engine_internal.h"

double cp_exchange(worker *w, const sched_op *op)
{
    engine *e = w->eng;
    worker *next = engine_cp_worker(e, w->stage, w->replica, (w->cp_rank + 1) % e->cp);
    double start_s = engine_now(e);
    sg_exec_t compute = NULL;
    if (op->cp_overlap_s > 0) {
        compute = sg_actor_exec_init(op->cp_overlap_s * sg_host_get_speed(w->ep.hosts[0]));
        sg_exec_start(compute);
        e->net.activities++;
    }
    if (op->cp_steps > 1)
        transport_sleep(&e->net,
                        (op->cp_steps - 1) * transport_latency_s(&e->net, &w->ep, &next->ep));
    channel_post(&next->chan[CH_CP], transport_start(&e->net, &w->ep, &next->ep, op->cp_bytes));
    if (compute)
        sg_exec_wait(compute);
    channel_take(e, w, CH_CP);
    sg_barrier_wait(engine_cp_worker(e, w->stage, w->replica, 0)->cp_ring);
    double exposed_s = engine_now(e) - (start_s + op->cp_overlap_s);
    return exposed_s > 0 ? exposed_s : 0.0;
}
