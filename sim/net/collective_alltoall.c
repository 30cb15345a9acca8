/*
 * collective_alltoall.c -- all-to-all: pairwise exchange and Bruck.
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
 */
#include "collective.h"
#include "collective_internal.h"

void coll_pairwise_alltoall(coll_ctx *c, const coll_view *v, double bytes)
{
    int n = v->n;
    int tag = coll_tags(c, n - 1);
    for (int k = 1; k < n; k++) {
        coll_send(c, v, (v->me + k) % n, tag + k - 1, bytes / n);
        coll_recv(c, v, (v->me + n - k) % n, tag + k - 1);
    }
}

/* c_k: how many of 0..n−1 have bit k set. */
static long bruck_blocks(int n, int k)
{
    long period = 2L << k, half = 1L << k;
    long rest = n % period - half;
    return n / period * half + (rest > 0 ? rest : 0);
}

void coll_bruck_alltoall(coll_ctx *c, const coll_view *v, double bytes)
{
    int n = v->n, steps = 0;
    while ((1L << steps) < n)
        steps++;
    int tag = coll_tags(c, steps);
    for (int k = 0; k < steps; k++) {
        int hop = 1 << k;
        coll_send(c, v, (v->me + hop) % n, tag + k, bruck_blocks(n, k) * bytes / n);
        coll_recv(c, v, (v->me + n - hop % n) % n, tag + k);
    }
}
