/*
 * transport_symmetry.c -- the exact TP fold (transport_symmetry.h).
 *
 * Why it is exact.  Take the flows the engine posts as sets of tp, f(j, r)
 * for set j and TP rank r, the route of f(j, r) being C(j) + P(j, r): links
 * C(j) on every rank's route and links P(j, r) on rank r's alone.  Suppose
 * (what tp_symmetry_check verifies, pair by pair) that every link is either
 * shared (only ever in some C(j)) or rank r's own (only ever in some
 * P(j, r), for one r), and that for each r a one-to-one map φ_r from rank
 * 0's own links to rank r's, preserving bandwidth, latency and sharing,
 * sends P(j, 0) to P(j, r) position by position in every set.  Simulate only
 * f(j, 0), on shared links of capacity c/tp, and let x(j) be its max-min fair
 * rate.  Give every f(j, r) the rate x(j):
 *   - a shared link carries tp·Σ x(j) ≤ tp·c/tp = c, and a rank-r link
 *     φ_r(L) carries exactly what L carries for rank 0, so the rates fit;
 *   - f(j, 0)'s bottleneck in the folded system (saturated, no flow on it
 *     faster) is one in the full system too: a shared link is saturated at
 *     tp times the load, φ_r of an own link at the same load, and the flows
 *     on either are copies of the folded ones with the same rates.
 * Rates with a bottleneck for every flow are the max-min fair ones, and those
 * are unique: the full system's rates are x(j) for every r, at every instant
 * (the same argument holds after any flow ends), so every flow ends when its
 * rank-0 copy does.  Route latencies agree too (C(j) shared, φ_r keeps
 * latency).  FATPIPE links bound each flow alone: they are left at c.
 *
 * The engine checks the pairs it can name before the run (engine.c) and the
 * transport checks any other pair the first time it carries it; a pair that
 * fails during the run stops it (the rates already simulated would be wrong
 * from then on), naming the option that turns the fold off.
 */
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xbt/dynar.h>

#include "transport_scaleup.h"
#include "transport_symmetry.h"

enum { SHARED = -1 };

typedef struct sym_link {
    sg_link_t link;    /* NULL: an empty slot */
    int label;         /* SHARED, or the TP rank whose own link it is */
    sg_link_t origin;  /* an own link of rank r > 0: φ_r⁻¹ of it, rank 0's */
    sg_link_t *images; /* a rank-0 link: [tp], φ_r of it (NULL until met) */
    double bandwidth;  /* as loaded, to restore */
    bool scaled;
} sym_link;

struct tp_symmetry {
    int tp;
    bool applied;
    sym_link *links; /* open addressing on the link's address */
    size_t num_links, link_slots;
    uint64_t *pairs; /* checked pairs: (rank of from's rank 0, of to's) + 1 */
    size_t num_pairs, pair_slots;
    xbt_dynar_t *routes; /* [tp] scratch */
};

static size_t hash_ptr(const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15u;
    return (size_t)(h ^ h >> 29);
}

static size_t hash_u64(uint64_t k)
{
    k *= 0xBF58476D1CE4E5B9u;
    return (size_t)(k ^ k >> 31);
}

tp_symmetry *tp_symmetry_new(int tp)
{
    tp_symmetry *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->tp = tp;
    s->link_slots = 1024;
    s->pair_slots = 1024;
    s->links = calloc(s->link_slots, sizeof *s->links);
    s->pairs = calloc(s->pair_slots, sizeof *s->pairs);
    s->routes = calloc((size_t)tp, sizeof *s->routes);
    if (!s->links || !s->pairs || !s->routes) {
        tp_symmetry_free(s);
        return NULL;
    }
    for (int r = 0; r < tp; r++)
        s->routes[r] = xbt_dynar_new(sizeof(sg_link_t), NULL);
    return s;
}

static sym_link *slot_of(sym_link *links, size_t slots, sg_link_t l)
{
    size_t i = hash_ptr(l) & (slots - 1);
    while (links[i].link && links[i].link != l)
        i = (i + 1) & (slots - 1);
    return &links[i];
}

/* The entry of link l, made (unlabelled) when new; NULL when out of memory. */
static sym_link *link_entry(tp_symmetry *s, sg_link_t l)
{
    if (2 * (s->num_links + 1) > s->link_slots) {
        size_t slots = 2 * s->link_slots;
        sym_link *links = calloc(slots, sizeof *links);
        if (!links)
            return NULL;
        for (size_t i = 0; i < s->link_slots; i++)
            if (s->links[i].link)
                *slot_of(links, slots, s->links[i].link) = s->links[i];
        free(s->links);
        s->links = links;
        s->link_slots = slots;
    }
    sym_link *e = slot_of(s->links, s->link_slots, l);
    if (!e->link) {
        e->link = l;
        e->label = -2; /* not yet labelled */
        e->bandwidth = sg_link_get_bandwidth(l);
        s->num_links++;
    }
    return e;
}

static uint64_t *pair_slot(uint64_t *pairs, size_t slots, uint64_t key)
{
    size_t i = hash_u64(key) & (slots - 1);
    while (pairs[i] && pairs[i] != key)
        i = (i + 1) & (slots - 1);
    return &pairs[i];
}

static bool pair_add(tp_symmetry *s, uint64_t key)
{
    if (2 * (s->num_pairs + 1) > s->pair_slots) {
        size_t slots = 2 * s->pair_slots;
        uint64_t *pairs = calloc(slots, sizeof *pairs);
        if (!pairs)
            return false;
        for (size_t i = 0; i < s->pair_slots; i++)
            if (s->pairs[i])
                *pair_slot(pairs, slots, s->pairs[i]) = s->pairs[i];
        free(s->pairs);
        s->pairs = pairs;
        s->pair_slots = slots;
    }
    uint64_t *p = pair_slot(s->pairs, s->pair_slots, key);
    if (!*p) {
        *p = key;
        s->num_pairs++;
    }
    return true;
}

static void scale(tp_symmetry *s, sym_link *e)
{
    if (s->applied && e->label == SHARED && !e->scaled && sg_link_is_shared(e->link)) {
        sg_link_set_bandwidth(e->link, e->bandwidth / s->tp);
        e->scaled = true;
    }
}

static bool in_route(xbt_dynar_t route, sg_link_t l)
{
    for (unsigned long i = 0; i < xbt_dynar_length(route); i++)
        if (xbt_dynar_get_as(route, i, sg_link_t) == l)
            return true;
    return false;
}

static bool shared_by_all(const tp_symmetry *s, sg_link_t l)
{
    for (int r = 0; r < s->tp; r++)
        if (!in_route(s->routes[r], l))
            return false;
    return true;
}

static bool alike(sg_link_t a, sg_link_t b)
{
    return sg_link_get_bandwidth(a) == sg_link_get_bandwidth(b) &&
           sg_link_get_latency(a) == sg_link_get_latency(b) &&
           sg_link_is_shared(a) == sg_link_is_shared(b);
}

#define FAIL(...) (snprintf(why, why_size, __VA_ARGS__), false)

/* The k-th own link of rank r's route (the links not on every route). */
static sg_link_t own_link(const tp_symmetry *s, int r, int k)
{
    for (unsigned long i = 0; i < xbt_dynar_length(s->routes[r]); i++) {
        sg_link_t l = xbt_dynar_get_as(s->routes[r], i, sg_link_t);
        if (!shared_by_all(s, l) && k-- == 0)
            return l;
    }
    return NULL;
}

/* One leg: the tp flows src[r] → dst[r]. */
static bool check_leg(tp_symmetry *s, const sg_host_t *src, const sg_host_t *dst, char *why,
                      size_t why_size)
{
    for (int r = 0; r < s->tp; r++) {
        xbt_dynar_reset(s->routes[r]);
        sg_host_get_route(src[r], dst[r], s->routes[r]);
    }
    /* Shared links: on every rank's route, and never anyone's own. */
    int own = -1;
    for (int r = 0; r < s->tp; r++) {
        int count = 0;
        for (unsigned long i = 0; i < xbt_dynar_length(s->routes[r]); i++) {
            sg_link_t l = xbt_dynar_get_as(s->routes[r], i, sg_link_t);
            bool shared = shared_by_all(s, l);
            sym_link *e = link_entry(s, l);
            if (!e)
                return FAIL("out of memory");
            int label = shared ? SHARED : r;
            if (e->label != -2 && e->label != label)
                return FAIL("link %s is on the routes of %s of a TP group's ranks here and of %s "
                            "elsewhere",
                            sg_link_get_name(l), shared ? "all" : "some",
                            e->label == SHARED ? "all" : "one");
            e->label = label;
            scale(s, e);
            count += !shared;
        }
        if (own >= 0 && count != own)
            return FAIL("TP ranks 0 and %d have %d and %d links of their own from %s to %s", r, own,
                        count, sg_host_get_name(src[0]), sg_host_get_name(dst[0]));
        own = count;
    }
    /* Own links: rank r's k-th is φ_r of rank 0's k-th, in every pair. */
    for (int k = 0; k < own; k++) {
        sg_link_t l0 = own_link(s, 0, k);
        sym_link *e0 = link_entry(s, l0);
        if (!e0)
            return FAIL("out of memory");
        if (!e0->images && !(e0->images = calloc((size_t)s->tp, sizeof *e0->images)))
            return FAIL("out of memory");
        for (int r = 1; r < s->tp; r++) {
            sg_link_t lr = own_link(s, r, k);
            sym_link *er = link_entry(s, lr);
            e0 = link_entry(s, l0); /* the table may have moved */
            if (!er || !e0)
                return FAIL("out of memory");
            if (!alike(l0, lr))
                return FAIL("links %s and %s of TP ranks 0 and %d differ in bandwidth, latency "
                            "or sharing",
                            sg_link_get_name(l0), sg_link_get_name(lr), r);
            if ((e0->images[r] && e0->images[r] != lr) || (er->origin && er->origin != l0))
                return FAIL("link %s of TP rank %d matches link %s of rank 0 here and another "
                            "elsewhere",
                            sg_link_get_name(lr), r, sg_link_get_name(l0));
            e0->images[r] = lr;
            er->origin = l0;
        }
    }
    return true;
}

bool tp_symmetry_check(tp_symmetry *s, transport *t, const endpoint *from, const endpoint *to,
                       char *why, size_t why_size)
{
    uint64_t key = ((uint64_t)(uint32_t)from->ranks[0] << 32 | (uint32_t)to->ranks[0]) + 1;
    if (*pair_slot(s->pairs, s->pair_slots, key))
        return true;
    /* Every rank's legs, as transport_start would post them. */
    int tp = s->tp;
    transport_legs *legs = calloc((size_t)tp, sizeof *legs);
    sg_host_t *src = calloc((size_t)tp, sizeof *src), *dst = calloc((size_t)tp, sizeof *dst);
    bool ok = legs && src && dst;
    if (!ok)
        snprintf(why, why_size, "out of memory");
    for (int r = 0; ok && r < tp; r++) {
        transport_rank_legs(t, from, to, r, &legs[r]);
        if (legs[r].count != legs[0].count || legs[r].waits != legs[0].waits)
            ok = FAIL("TP ranks 0 and %d of the transfer from NPU %d to NPU %d take different "
                      "paths (%d and %d flows%s)",
                      r, from->ranks[0], to->ranks[0], legs[0].count, legs[r].count,
                      legs[r].waits != legs[0].waits ? ", one inside a server" : "");
    }
    for (int i = 0; ok && i < legs[0].count; i++) {
        for (int r = 0; r < tp; r++) {
            src[r] = legs[r].src[i];
            dst[r] = legs[r].dst[i];
        }
        ok = check_leg(s, src, dst, why, why_size);
    }
    if (ok && !pair_add(s, key))
        ok = FAIL("out of memory");
    free(legs);
    free(src);
    free(dst);
    return ok;
}

void tp_symmetry_apply(tp_symmetry *s)
{
    s->applied = true;
    for (size_t i = 0; i < s->link_slots; i++)
        if (s->links[i].link)
            scale(s, &s->links[i]);
}

void tp_symmetry_free(tp_symmetry *s)
{
    if (!s)
        return;
    for (size_t i = 0; s->links && i < s->link_slots; i++) {
        if (s->links[i].scaled)
            sg_link_set_bandwidth(s->links[i].link, s->links[i].bandwidth);
        free(s->links[i].images);
    }
    for (int r = 0; s->routes && r < s->tp; r++)
        if (s->routes[r])
            xbt_dynar_free(&s->routes[r]);
    free(s->routes);
    free(s->links);
    free(s->pairs);
    free(s);
}
