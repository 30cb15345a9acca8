/*
 * collective_butterfly.c -- radix-R butterfly: recursive halving / doubling.
 *
 * Number the N members in base R (mixed radix when N is not a power of R,
 * below).  Reduce-scatter runs one stage per digit, k = 0, 1, ...: a member
 * exchanges with the R−1 members whose index differs from its own in digit k
 * only, sending each the 1/R of its current vector that member will own and
 * reducing what it receives; after the stage it owns 1/R of what it had.  It
 * is the stage factorisation of a radix-R fast Fourier / Hadamard transform.
 * All-gather runs the stages backwards, sending the owned part to the same
 * partners.  R = 2 is recursive halving then recursive doubling, Rabenseifner's
 * all-reduce (Thakur, Rabenseifner & Gropp, "Optimization of collective
 * communication operations in MPICH", IJHPCA 2005, section 4.4).
 *
 * Cost on an idle fabric (latency α, bandwidth B, one NIC per NPU).  With
 * radices r_0, ..., r_{m−1} (Π r_j = N), stage j sends r_j − 1 messages of
 * S/(r_0·…·r_j) at once; they share the sender's NIC and the receivers' NICs
 * each take r_j − 1 flows too, so max-min sharing gives each flow B/(r_j − 1)
 * and the stage lasts α + (r_j − 1)·S/(r_0·…·r_j·B).  The bandwidth terms
 * telescope: (r_j − 1)/(r_0·…·r_j) = 1/(r_0·…·r_{j−1}) − 1/(r_0·…·r_j), so
 *   reduce-scatter = all-gather = m·α + (1 − 1/N)·S/B = m·α + (N−1)/N·S/B,
 *   all-reduce = 2·m·α + 2(N−1)/N·S/B,
 * with m = log_R(N) when N = R^m (log2 N for halving-doubling).  The bandwidth
 * term is the ring's and does not depend on R: a larger radix only cuts the
 * latency term, as long as the NIC, not the fabric behind it, is what the
 * R−1 concurrent flows share.  Messages: m·(R−1) per member per phase.
 *
 * N not a power of R: the radices are R while R divides what is left of N,
 * then the largest divisor of the rest that is at most R, and so on; a prime
 * factor p > R becomes one stage of radix p (p − 1 partners).  The formulas
 * above hold for any factorisation (m = number of radices).  Rabenseifner's
 * alternative for R = 2, folding the excess members into a power of two
 * first, costs two extra steps and is not modelled.
 */
#include "collective.h"
#include "collective_internal.h"

#define MAX_STAGES COLL_BUTTERFLY_MAX_STAGES

int coll_butterfly_radices(int n, int radix, int *radices)
{
    int m = 0;
    while (n > 1 && m < MAX_STAGES) {
        int r = radix <= n ? radix : n;
        while (n % r)
            r--;
        if (r == 1) { /* no divisor ≤ radix: the smallest prime factor */
            r = radix + 1;
            while (n % r)
                r++;
        }
        radices[m++] = r;
        n /= r;
    }
    return m;
}

/* One stage: exchange `bytes` with each member that differs in the digit of
 * weight `stride` and radix r. */
static void butterfly_stage(coll_ctx *c, const coll_view *v, int stride, int r, int tag,
                            double bytes)
{
    int digit = (v->me / stride) % r;
    for (int d = 0; d < r; d++)
        if (d != digit)
            coll_send(c, v, v->me + (d - digit) * stride, tag, bytes);
    for (int d = 0; d < r; d++)
        if (d != digit)
            coll_recv(c, v, v->me + (d - digit) * stride, tag);
}

void coll_butterfly_reduce_scatter(coll_ctx *c, const coll_view *v, int radix, double bytes)
{
    int radices[MAX_STAGES];
    int m = coll_butterfly_radices(v->n, radix, radices);
    int tag = coll_tags(c, m);
    int stride = 1;
    double part = bytes;
    for (int j = 0; j < m; j++) {
        part /= radices[j];
        butterfly_stage(c, v, stride, radices[j], tag + j, part);
        stride *= radices[j];
    }
}

void coll_butterfly_allgather(coll_ctx *c, const coll_view *v, int radix, double bytes)
{
    int radices[MAX_STAGES];
    int m = coll_butterfly_radices(v->n, radix, radices);
    int tag = coll_tags(c, m);
    int stride = v->n;
    double part = bytes / v->n;
    for (int j = m - 1; j >= 0; j--) {
        stride /= radices[j];
        butterfly_stage(c, v, stride, radices[j], tag + j, part);
        part *= radices[j];
    }
}
