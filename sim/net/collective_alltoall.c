/*
 * collective_alltoall.c -- all-to-all: pairwise exchange, Bruck and concurrent.
 *
 * Every member holds S bytes, S/N for each member (itself included); the
 * block for itself never moves.
 *
 * Pairwise exchange (Thakur, Rabenseifner & Gropp, IJHPCA 2005, section 3.4):
 * N−1 steps; in step k = 1..N−1 member i sends its block for i+k to i+k and
 * receives from i−k the block meant for it (indices mod N), then moves on.
 * Every step puts one flow out of and one into every NIC, so on an idle
 * fabric a step lasts α + S/(N·B) and the whole
 *   (N−1)(α + S/(N·B)),
 * with N−1 messages per member: the bandwidth-optimal choice for large
 * blocks (the MoE token exchange).
 *
 * Bruck (Bruck, Ho, Kipnis, Upfal & Weathersby, "Efficient algorithms for
 * all-to-all communications in multiport message-passing systems", IEEE TPDS
 * 1997): after a local rotation, block j (j = 0..N−1) is the one to travel j
 * positions forward.  In step k = 0..⌈log2 N⌉−1 every member sends to i + 2^k
 * (and receives from i − 2^k) all blocks whose index has bit k set, c_k of
 * them, c_k = #{j < N : bit k of j is 1} = ⌊N/2^(k+1)⌋·2^k +
 * max(0, N mod 2^(k+1) − 2^k); after the last step every block has travelled
 * its index.  One flow in and out of every NIC per step:
 *   Σ_k (α + c_k·S/(N·B)) = ⌈log2 N⌉·α + (Σ_k c_k)·S/(N·B),
 * which is ⌈log2 N⌉(α + S/(2B)) when N is a power of two: log N latencies
 * instead of N−1, for log2(N)/2 times the pairwise bandwidth term.  The local
 * rotations and repacking are memory copies, not timed.
 *
 * Concurrent: every member starts its N−1 blocks at once and then waits for
 * the N−1 it receives, with no step between them, as NCCL runs an
 * all-to-all (one ncclSend and one ncclRecv per peer in a group: PyTorch's
 * all_to_all_single, Megatron's MoE token dispatcher).  On an idle fabric the
 * N−1 flows share each NIC, and the whole takes
 *   α + (N−1)·S/(N·B),
 * N−2 latencies less than pairwise.  The difference that matters is off the
 * idle fabric: no member waits for a partner to reach a step, so members
 * that arrive at different times (a slow expert, a busy link) delay only
 * their own blocks, not every later step of the others.
 */
#include <stdbool.h>

#include "cluster.h"
#include "collective.h"
#include "collective_internal.h"

void coll_pairwise_exchange(coll_ctx *c, const coll_view *v, const double *to_bytes, double each)
{
    int n = v->n;
    int tag = coll_tags(c, n - 1);
    for (int k = 1; k < n; k++) {
        int to = (v->me + k) % n;
        coll_send(c, v, to, tag + k - 1, to_bytes ? to_bytes[to] : each);
        coll_recv(c, v, (v->me + n - k) % n, tag + k - 1);
    }
}

void coll_pairwise_alltoall(coll_ctx *c, const coll_view *v, double bytes)
{
    coll_pairwise_exchange(c, v, NULL, bytes / v->n);
}

void coll_concurrent_exchange(coll_ctx *c, const coll_view *v, const double *to_bytes, double each)
{
    int n = v->n;
    int tag = coll_tags(c, 1);
    bool closed[n]; /* closed[k]: the block for me+k is a closed-form delay */
    /* the blocks that are flows, all at once: they share the NIC (and a
     * simulated scale-up port) as flows do */
    for (int k = 1; k < n; k++) {
        int to = (v->me + k) % n;
        closed[k] = coll_closed_form_pair(c, v, to);
        if (!closed[k])
            coll_send(c, v, to, tag, to_bytes ? to_bytes[to] : each);
    }
    /* the blocks priced in closed form on the scale-up fabric, one after
     * the other in pairwise order: a closed-form delay shares nothing, and
     * the NPU's port sends one block at a time at its bandwidth */
    for (int k = 1; k < n; k++) {
        int to = (v->me + k) % n;
        if (closed[k]) /* an empty block arrives at once */
            coll_sleep(c, coll_send(c, v, to, tag, to_bytes ? to_bytes[to] : each) -
                              transport_now(c->t));
    }
    for (int k = 1; k < n; k++)
        coll_recv(c, v, (v->me + n - k) % n, tag);
}

void coll_concurrent_alltoall(coll_ctx *c, const coll_view *v, double bytes)
{
    coll_concurrent_exchange(c, v, NULL, bytes / v->n);
}

void coll_bruck_alltoall(coll_ctx *c, const coll_view *v, double bytes)
{
    int n = v->n, steps = 0;
    while ((1L << steps) < n)
        steps++;
    int tag = coll_tags(c, steps);
    for (int k = 0; k < steps; k++) {
        int hop = 1 << k;
        coll_send(c, v, (v->me + hop) % n, tag + k, cl_bruck_blocks(n, k) * bytes / n);
        coll_recv(c, v, (v->me + n - hop % n) % n, tag + k);
    }
}
