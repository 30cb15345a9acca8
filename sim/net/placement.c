/*
 * placement.c -- rank orders (placement.h).
 */
#include "placement.h"

#include "collective.h"

#include <stdio.h>
#include <string.h>

static const char *const dim_names[PLACE_DIMS] = {"tp", "cp", "dp", "pp"};

void placement_init(placement *p)
{
    for (int i = 0; i < PLACE_DIMS; i++)
        p->order[i] = (placement_dim)i;
}

static int usage(np_error *err, const char *option, const char *text, const char *why)
{
    return np_error_set(err, NP_EXIT_USAGE, "<command line>", option, 0,
                        "expected a rank order such as \"" PLACEMENT_DEFAULT
                        "\" (tp, cp, dp, pp each once, fastest first, \"ep\" allowed just "
                        "before \"dp\"): %s, got \"%s\"",
                        why, text);
}

int placement_parse(const char *text, const char *option, placement *p, np_error *err)
{
    int seen[PLACE_DIMS] = {0}, n = 0, ep_pending = 0;
    const char *s = text;
    char word[8];
    while (1) {
        size_t len = strcspn(s, "-");
        if (len == 0 || len >= sizeof word)
            return usage(err, option, text, "an empty or unknown name");
        memcpy(word, s, len);
        word[len] = '\0';
        if (ep_pending && strcmp(word, "dp") != 0)
            return usage(err, option, text,
                         "\"ep\" must come just before \"dp\" (an expert-parallel group is "
                         "consecutive data-parallel replicas)");
        if (strcmp(word, "ep") == 0) {
            ep_pending = 1;
        } else {
            int d = -1;
            for (int i = 0; i < PLACE_DIMS; i++)
                if (strcmp(word, dim_names[i]) == 0)
                    d = i;
            if (d < 0)
                return usage(err, option, text, "an unknown name");
            if (seen[d]++)
                return usage(err, option, text, "a name given twice");
            p->order[n++] = (placement_dim)d;
            ep_pending = 0;
        }
        s += len;
        if (*s == '\0')
            break;
        s++;
    }
    if (n != PLACE_DIMS)
        return usage(err, option, text, "a dimension missing");
    return 0;
}

void placement_name(const placement *p, char *buf, int size)
{
    snprintf(buf, (size_t)size, "%s-%s-%s-%s", dim_names[p->order[0]], dim_names[p->order[1]],
             dim_names[p->order[2]], dim_names[p->order[3]]);
}

int placement_rank(const placement *p, const int sizes[PLACE_DIMS], int tp_rank, int cp_rank,
                   int replica, int stage)
{
    int coord[PLACE_DIMS];
    coord[PLACE_TP] = tp_rank;
    coord[PLACE_CP] = cp_rank;
    coord[PLACE_DP] = replica;
    coord[PLACE_PP] = stage;
    int rank = 0;
    for (int i = PLACE_DIMS - 1; i >= 0; i--) /* slowest digit first (Horner) */
        rank = rank * sizes[p->order[i]] + coord[p->order[i]];
    return rank;
}

bool placement_tp_across_servers(const placement *p, const int sizes[PLACE_DIMS], int npus_per_node,
                                 placement_split *where)
{
    int tp = sizes[PLACE_TP];
    if (tp <= 1 || npus_per_node <= 0 || tp > npus_per_node)
        return false; /* nothing to split, or wider than a server: scale-out in any order */
    for (int s = 0; s < sizes[PLACE_PP]; s++)
        for (int d = 0; d < sizes[PLACE_DP]; d++)
            for (int c = 0; c < sizes[PLACE_CP]; c++) {
                int first = placement_rank(p, sizes, 0, c, d, s);
                for (int r = 1; r < tp; r++) {
                    int rank = placement_rank(p, sizes, r, c, d, s);
                    if (rank / npus_per_node == first / npus_per_node)
                        continue;
                    if (where)
                        *where = (placement_split){s, d, c, r, first, rank};
                    return true;
                }
            }
    return false;
}

typedef struct dp_members {
    const placement *order;
    const int *sizes;
    int stage, npus_per_node;
} dp_members;

static long dp_member_server(const void *ctx, int i)
{
    const dp_members *m = ctx;
    int cp = m->sizes[PLACE_CP];
    return placement_rank(m->order, m->sizes, 0, i % cp, i / cp, m->stage) / m->npus_per_node;
}

int placement_dp_ring_local(const placement *p, const int sizes[PLACE_DIMS], int stage,
                            int npus_per_node)
{
    int n = sizes[PLACE_CP] * sizes[PLACE_DP];
    if (npus_per_node <= 0 || n < 2)
        return 1;
    dp_members m = {p, sizes, stage, npus_per_node};
    return coll_ring_local(n, dp_member_server, &m);
}
