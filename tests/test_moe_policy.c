/*
 * test_moe_policy.c -- the MoE policies' decisions (planner/model/
 * moe_policy.c) against hand-computed values and brute force.
 *
 * FasterMoE on a hand-made trace: 4 sources, 4 experts (one per rank),
 * every source sends 50, 30, 10, 10 assignments to experts 0..3 (loads 200,
 * 120, 40, 40).  Its latency model lat(S) = max_k (3·comp·B_k + 4·feat·X_k)
 * + |S|·shadow, with comp = feat = 1 ms, by hand:
 *   S = {}:       rank 0 computes 200 rows, receives 150, sends 50:
 *                 3·0.2 + 4·0.15 = 1.2 s (the largest; rank 1: 0.72)
 *   S = {0}:      rank 1 computes 120 + 50, receives 90, sends 20:
 *                 0.51 + 0.36 = 0.87 s, + shadow
 *   S = {0,1}:    rank 2 computes 40 + 50 + 30, receives 30, sends 10:
 *                 0.36 + 0.12 = 0.48 s, + 2·shadow
 *   S = {0,1,2}:  rank 3 computes 40 + 90, receives 30: 0.39 + 0.12 =
 *                 0.51 s, + 3·shadow
 * so with shadow = 0.1 s the greedy shadows 0 (0.97 < 1.2), 1 (0.68 <
 * 0.97) and stops at 2 (0.81 ≥ 0.68); with shadow = 0.35 s nothing
 * (1.22 ≥ 1.2).
 *
 * LPT (Graham 1969): on identical machines its makespan is at most
 * (4/3 − 1/(3m)) of the optimum; the bound is reached by 2 machines and
 * jobs 3, 3, 2, 2, 2 (LPT 7, optimum 6).  Both are checked against a brute
 * force over every assignment.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "moe_policy.h"
#include "moe_testutil.h"
#include "testutil.h"

static void hand_trace(moe_trace *t)
{
    static const uint32_t row[4] = {50, 30, 10, 10};
    CU_ASSERT_EQUAL_FATAL(moe_trace_alloc(t, 4, 4, 1, 1, 2, 100), 0);
    for (int i = 0; i < 4; i++)
        for (int e = 0; e < 4; e++)
            *moe_trace_at(t, 0, 0, i, e) = row[e];
}

static void fastermoe_env(moe_policy_env *env, double shadow_s, int max_copies)
{
    moe_policy_env_init(env);
    env->comp_s = env->feat_s = 1e-3;
    env->shadow_s = shadow_s;
    env->max_copies = max_copies;
}

static void test_fastermoe_latency_model_by_hand(void)
{
    moe_trace t;
    hand_trace(&t);
    moe_policy_env env;
    fastermoe_env(&env, 0.1, 100);
    unsigned char s[4] = {0};
    CU_ASSERT_DOUBLE_EQUAL(moe_fastermoe_latency(&env, &t, 0, 0, s), 1.2, 1e-12);
    s[0] = 1;
    CU_ASSERT_DOUBLE_EQUAL(moe_fastermoe_latency(&env, &t, 0, 0, s), 0.87 + 0.1, 1e-12);
    s[1] = 1;
    CU_ASSERT_DOUBLE_EQUAL(moe_fastermoe_latency(&env, &t, 0, 0, s), 0.48 + 0.2, 1e-12);
    s[2] = 1;
    CU_ASSERT_DOUBLE_EQUAL(moe_fastermoe_latency(&env, &t, 0, 0, s), 0.51 + 0.3, 1e-12);
    moe_trace_free(&t);
}

static void test_fastermoe_shadows_what_the_inequality_says(void)
{
    moe_trace t;
    hand_trace(&t);
    moe_layer_plan p;
    CU_ASSERT_EQUAL_FATAL(moe_layer_plan_init(&p, 4, 4), 0);
    moe_policy_env env;
    fastermoe_env(&env, 0.1, 100);
    CU_ASSERT_EQUAL(moe_policy_plan(MOE_POLICY_FASTERMOE, &env, &t, 0, 0, &p), 0);
    CU_ASSERT_EQUAL(p.shadowed, 2);
    CU_ASSERT_EQUAL(p.copies, 6); /* experts 0 and 1 on the 3 ranks that do not own them */
    for (int e = 0; e < 4; e++)
        for (int j = 0; j < 4; j++)
            CU_ASSERT_EQUAL(p.copy[e * 4 + j], e < 2 && j != e);
    CU_ASSERT_DOUBLE_EQUAL(p.model_latency_s, 0.68, 1e-12);
    CU_ASSERT(p.pipelined);
    /* shadowed tokens stay home: source 2 computes its 50 + 30 and its own
     * expert's 10, and sends 10 to expert 3 */
    CU_ASSERT_DOUBLE_EQUAL(p.route.send[2 * 4 + 2], 90.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(p.route.send[2 * 4 + 3], 10.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(p.route.send[2 * 4 + 0], 0.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(p.route.rows[3], 10.0 * 4 + 80.0, 0.0);
    /* too dear: nothing shadowed */
    fastermoe_env(&env, 0.35, 100);
    moe_policy_plan(MOE_POLICY_FASTERMOE, &env, &t, 0, 0, &p);
    CU_ASSERT_EQUAL(p.shadowed, 0);
    CU_ASSERT_EQUAL(p.copies, 0);
    CU_ASSERT_DOUBLE_EQUAL(p.route.rows[0], 200.0, 0.0);
    /* memory for one copy per rank: expert 0 only */
    fastermoe_env(&env, 0.1, 1);
    moe_policy_plan(MOE_POLICY_FASTERMOE, &env, &t, 0, 0, &p);
    CU_ASSERT_EQUAL(p.shadowed, 1);
    CU_ASSERT_EQUAL(p.copies, 3);
    moe_layer_plan_free(&p);
    moe_trace_free(&t);
}

/* The optimum makespan over every assignment of n jobs to m machines. */
static double brute_makespan(int n, const double *size, int m)
{
    long total = 1;
    for (int i = 0; i < n; i++)
        total *= m;
    double best = INFINITY;
    for (long code = 0; code < total; code++) {
        double load[8] = {0};
        long c = code;
        for (int i = 0; i < n; i++, c /= m)
            load[c % m] += size[i];
        double worst = 0;
        for (int j = 0; j < m; j++)
            worst = load[j] > worst ? load[j] : worst;
        best = worst < best ? worst : best;
    }
    return best;
}

static double lpt_makespan(int n, const double *size, int m)
{
    double load[8] = {0};
    int bin[16];
    CU_ASSERT_EQUAL(moe_lpt(n, size, NULL, m, load, NULL, NULL, bin), 0);
    double worst = 0;
    for (int j = 0; j < m; j++)
        worst = load[j] > worst ? load[j] : worst;
    return worst;
}

static void test_lpt_against_brute_force(void)
{
    const double tight[5] = {3, 3, 2, 2, 2};
    CU_ASSERT_DOUBLE_EQUAL(lpt_makespan(5, tight, 2), 7.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(brute_makespan(5, tight, 2), 6.0, 0.0);
    const double exact[6] = {8, 7, 6, 5, 4, 3}; /* LPT: 8+3, 7+4, 6+5 = 11 each */
    CU_ASSERT_DOUBLE_EQUAL(lpt_makespan(6, exact, 3), brute_makespan(6, exact, 3), 0.0);
    CU_ASSERT_DOUBLE_EQUAL(lpt_makespan(6, exact, 3), 11.0, 0.0);
    unsigned seed = 12345;
    for (int trial = 0; trial < 200; trial++) {
        int m = 2 + trial % 3, n = 4 + trial % 5;
        double size[16];
        for (int i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            size[i] = 1 + (seed >> 16) % 20;
        }
        double lpt = lpt_makespan(n, size, m), opt = brute_makespan(n, size, m);
        CU_ASSERT(lpt >= opt);
        CU_ASSERT(lpt <= (4.0 / 3.0 - 1.0 / (3.0 * m)) * opt + 1e-9);
    }
}

/* Slots and groups: a bin without a free slot, or holding the item's group,
 * takes nothing; what no bin can take is counted. */
static void test_lpt_respects_slots_and_groups(void)
{
    const double size[4] = {5, 4, 3, 2};
    const int group[4] = {0, 0, 1, 1};
    double load[3] = {0, 0, 10};
    int slots[3] = {1, 2, 0}, bin[4];
    unsigned char holds[2 * 3] = {0};
    holds[0 * 3 + 1] = 1; /* bin 1 holds group 0 already */
    int unplaced = moe_lpt(4, size, group, 3, load, slots, holds, bin);
    /* 5 (group 0) → bin 0 (bin 1 holds the group, bin 2 is full); 4 (group
     * 0): bin 0 is out of slots, bin 1 holds the group → unplaced; 3 and 2
     * (group 1) → bin 1, then nowhere (bin 1 holds group 1 now) */
    CU_ASSERT_EQUAL(bin[0], 0);
    CU_ASSERT_EQUAL(bin[1], -1);
    CU_ASSERT_EQUAL(bin[2], 1);
    CU_ASSERT_EQUAL(bin[3], -1);
    CU_ASSERT_EQUAL(unplaced, 2);
    CU_ASSERT_DOUBLE_EQUAL(load[0], 5.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(load[1], 3.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(load[2], 10.0, 0.0);
}

static bool allowed_size(double c, double mean)
{
    for (int q = 0; q < MOE_POLICY_NUM_SIZES; q++)
        if (c == ceil(moe_policy_size_factors[q] * mean))
            return true;
    return false;
}

static void test_quantised_capacities_are_from_the_allowed_set(void)
{
    CU_ASSERT_DOUBLE_EQUAL(moe_quantise_capacity(1, 100), 25.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(moe_quantise_capacity(101, 100), 125.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(moe_quantise_capacity(1e9, 100), 400.0, 0.0);
    moe_trace_params tp = {.experts = 16,
                           .sources = 8,
                           .layers = 2,
                           .steps = 3,
                           .topk = 2,
                           .tokens = 512,
                           .top2_share = 0.6,
                           .drift = 0.2,
                           .seed = 3};
    moe_trace t;
    moe_test_generate(&tp, &t);
    moe_layer_plan p;
    CU_ASSERT_EQUAL_FATAL(moe_layer_plan_init(&p, 16, 8), 0);
    moe_policy_env env;
    moe_policy_env_init(&env);
    env.max_copies = 4;
    double mean = 8.0 * 512 / 16;
    for (int step = 0; step < 3; step++)
        for (int l = 0; l < 2; l++) {
            moe_policy_plan(MOE_POLICY_EFFICIENTMOE, &env, &t, step, l, &p);
            for (int e = 0; e < 16; e++)
                CU_ASSERT(allowed_size(p.copy_capacity[e], mean));
            CU_ASSERT(p.copies > 0);
        }
    moe_layer_plan_free(&p);
    moe_trace_free(&t);
}

/* Copies per rank never exceed max_copies, whatever the skew. */
static void test_replicas_within_the_memory_bound(void)
{
    moe_trace t;
    CU_ASSERT_EQUAL_FATAL(moe_trace_alloc(&t, 8, 8, 1, 1, 2, 64), 0);
    for (int i = 0; i < 8; i++) /* every token to experts 0 and 1 */
        *moe_trace_at(&t, 0, 0, i, 0) = *moe_trace_at(&t, 0, 0, i, 1) = 32;
    moe_layer_plan p;
    CU_ASSERT_EQUAL_FATAL(moe_layer_plan_init(&p, 8, 8), 0);
    for (int bound = 0; bound <= 3; bound++)
        for (int k = MOE_POLICY_FASTERMOE; k <= MOE_POLICY_EFFICIENTMOE; k++) {
            moe_policy_env env;
            moe_policy_env_init(&env);
            env.max_copies = bound;
            env.comp_s = env.feat_s = 1e-3;
            env.shadow_s = 1e-6;
            moe_policy_plan((moe_policy_kind)k, &env, &t, 0, 0, &p);
            int most = 0;
            for (int j = 0; j < 8; j++) {
                int held = 0;
                for (int e = 0; e < 8; e++)
                    held += p.copy[e * 8 + j];
                most = held > most ? held : most;
                CU_ASSERT(!p.copy[j / 1 * 8 + j]); /* an owner holds no copy of its expert */
            }
            CU_ASSERT(most <= bound);
            /* EfficientMoE replicates the two hot experts when memory allows;
             * FasterMoE's greedy does not shadow here: shadowing expert 0
             * alone adds its local tokens to rank 1, already the slowest */
            if (bound > 0 && k == MOE_POLICY_EFFICIENTMOE)
                CU_ASSERT(p.copies > 0);
            if (k == MOE_POLICY_FASTERMOE)
                CU_ASSERT_EQUAL(p.copies, 0);
        }
    moe_layer_plan_free(&p);
    moe_trace_free(&t);
}

/* Σ_j (rows − padding + dropped) = sources · tokens under every policy. */
static void test_every_assignment_computed_or_dropped(void)
{
    moe_trace_params tp = {.experts = 32,
                           .sources = 8,
                           .layers = 2,
                           .steps = 4,
                           .topk = 2,
                           .tokens = 1024,
                           .top2_share = 0.7,
                           .drift = 0.3,
                           .seed = 9};
    moe_trace t;
    moe_test_generate(&tp, &t);
    moe_layer_plan p;
    CU_ASSERT_EQUAL_FATAL(moe_layer_plan_init(&p, 32, 8), 0);
    for (int k = 0; k < MOE_POLICY_COUNT; k++)
        for (int step = 0; step < 4; step++)
            for (int l = 0; l < 2; l++) {
                moe_policy_env env;
                moe_policy_env_init(&env);
                env.max_copies = 3;
                env.comp_s = env.feat_s = 1e-3;
                env.shadow_s = 1e-3;
                env.capacity = l == 1 ? 40 : 0; /* none: dropless, then capped */
                CU_ASSERT_EQUAL(moe_policy_plan((moe_policy_kind)k, &env, &t, step, l, &p), 0);
                double sum = 0;
                for (int j = 0; j < 8; j++) {
                    CU_ASSERT(p.route.padding[j] >= -1e-9 && p.route.dropped[j] >= -1e-9);
                    CU_ASSERT(p.route.rows[j] - p.route.padding[j] >= -1e-9);
                    sum += p.route.rows[j] - p.route.padding[j] + p.route.dropped[j];
                }
                CU_ASSERT_DOUBLE_EQUAL(sum, 8.0 * 1024, 1e-6);
            }
    moe_layer_plan_free(&p);
    moe_trace_free(&t);
}

static void test_policy_names(void)
{
    CU_ASSERT_EQUAL(moe_policy_find("FasterMoE"), MOE_POLICY_FASTERMOE);
    CU_ASSERT_EQUAL(moe_policy_find("efficientmoe"), MOE_POLICY_EFFICIENTMOE);
    CU_ASSERT_EQUAL(moe_policy_find("Switch"), MOE_POLICY_SWITCH);
    CU_ASSERT_EQUAL(moe_policy_find("none"), MOE_POLICY_NONE);
    CU_ASSERT_EQUAL(moe_policy_find("gshard"), -1);
}

void register_moe_policy_tests(void)
{
    TEST_SUITE("moe_policy",
               {"FasterMoE latency model by hand", test_fastermoe_latency_model_by_hand},
               {"FasterMoE shadows what the inequality says",
                test_fastermoe_shadows_what_the_inequality_says},
               {"LPT against brute force", test_lpt_against_brute_force},
               {"LPT respects slots and groups", test_lpt_respects_slots_and_groups},
               {"quantised capacities are from the allowed set",
                test_quantised_capacities_are_from_the_allowed_set},
               {"replicas within the memory bound", test_replicas_within_the_memory_bound},
               {"every assignment computed or dropped", test_every_assignment_computed_or_dropped},
               {"policy names", test_policy_names});
}
