/*
 * test_adapipe.c -- AdaPipe's two-level search against an exhaustive search
 * of the same objective over every partition and every per-layer unit mask,
 * hand-computed knapsack cases, and the published speed-up bound.
 *
 * The objective (docs/planners.md "AdaPipe"; planner_adapipe.c) is the 1F1B
 * critical path Σ_s T_s + (m−1)·max_s T_s, T_s = Σ (f + b + recomputed units)
 * of stage s + 2·c (its boundary send, none after the last stage), over the
 * plans whose every stage fits memory:
 *   static + k_s·Σ kept + max per-layer dropped + workspace ≤ M,
 * k_s = min(p−s, m) for 1F1B, m for GPipe (the published in-flight counts).
 * The search below is written from that definition: it tries every mask of
 * every layer of a stage, knowing nothing of frontiers or bottlenecks.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "planner.h"
#include "testutil.h"

#define MAX_LAYERS 10

/* An embedding-like first layer and head-like last layer without units,
 * and between them decoder layers sharing one random table of units (the
 * layer input, 5 bytes, always kept) but with their own times and state.
 * Recompute is per unit only.  Memory is set to bind for some seeds. */
static void random_model(cm_model *cm, int L, int units, uint64_t seed)
{
    test_random_spec spec = {
        .stream = 7,
        .lm_head = true,
        .units = units,
        .edge_activation_bytes = {5, 20},
        .selective_kept = 1.0,
        .full_kept = 1.0,
        .state_bytes = {20, 60},
        .output_bytes = {1, 10},
        .workspace_bytes = 3,
        .memory_slack = {0.2, 1.0},
    };
    test_random_model(cm, L, seed, &spec);
}

/* ---- the exhaustive search ------------------------------------------------ */

typedef struct search {
    const cm_model *cm;
    const cl_cluster *c;
    schedule_kind sched;
    int p, m;
    double *stage_memo; /* least recompute time of (s, i, j), NAN = unknown */
    int cut[8];
    double best;
} search;

static int in_flight(const search *x, int s)
{
    if (x->sched == SCHED_GPIPE)
        return x->m;
    return x->p - s < x->m ? x->p - s : x->m;
}

/* Least recompute time of layers [i, j) as stage s over every mask of every
 * layer (INFINITY when none fits). */
static double stage_least_recompute(const search *x, int s, int i, int j)
{
    const cm_model *cm = x->cm;
    int unit_layer[MAX_LAYERS], n = 0, masks = 1;
    double fixed = cm->workspace_bytes, kept_other = 0;
    for (int l = i; l < j; l++) {
        fixed += cm->layers[l].state_bytes;
        if (cm->layers[l].num_units) {
            unit_layer[n++] = l;
            masks = 1 << cm->layers[l].num_units;
        } else {
            kept_other += cm->layers[l].activation_bytes[RECOMPUTE_NONE];
        }
    }
    long combos = 1;
    for (int k = 0; k < n; k++)
        combos *= masks;
    double best = INFINITY;
    for (long combo = 0; combo < combos; combo++) {
        long rest = combo;
        double kept = kept_other, dropped_max = 0, time = 0;
        for (int k = 0; k < n; k++) {
            const cm_layer *ly = &cm->layers[unit_layer[k]];
            int mask = (int)(rest % masks);
            rest /= masks;
            double dropped = 0;
            for (int u = 0; u < ly->num_units; u++) {
                if (mask & (1 << u)) {
                    dropped += ly->units[u].activation_bytes;
                    time += ly->units[u].forward_s;
                }
            }
            kept += ly->activation_bytes[RECOMPUTE_NONE] - dropped;
            dropped_max = fmax(dropped_max, dropped);
        }
        if (fixed + in_flight(x, s) * kept + dropped_max <= cm->hbm_bytes && time < best)
            best = time;
    }
    return best;
}

static double stage_time(search *x, int s, int i, int j)
{
    double *memo = &x->stage_memo[(s * (MAX_LAYERS + 1) + i) * (MAX_LAYERS + 1) + j];
    if (isnan(*memo))
        *memo = stage_least_recompute(x, s, i, j);
    if (*memo == INFINITY)
        return INFINITY;
    double t = *memo;
    for (int l = i; l < j; l++)
        t += x->cm->layers[l].forward_s + x->cm->layers[l].backward_s +
             x->cm->layers[l].weight_grad_s;
    if (s < x->p - 1)
        t += 2.0 * (x->c->scaleout_latency_s +
                    x->cm->layers[j - 1].output_bytes / x->c->scaleout_bandwidth_Bps);
    return t;
}

/* Cuts in lexicographic order: stage s starts at cut[s]. */
static void search_visit(search *x, int s)
{
    int L = x->cm->num_layers;
    if (s == x->p) {
        double sum = 0, worst = 0;
        for (int k = 0; k < x->p; k++) {
            double t = stage_time(x, k, x->cut[k], k + 1 < x->p ? x->cut[k + 1] : L);
            sum += t;
            worst = fmax(worst, t);
        }
        double cost = sum + (x->m - 1) * worst;
        if (cost < x->best)
            x->best = cost;
        return;
    }
    for (int start = s == 0 ? 0 : x->cut[s - 1] + 1; start <= L - (x->p - s); start++) {
        if (s == 0 && start != 0)
            break;
        x->cut[s] = start;
        search_visit(x, s + 1);
    }
}

static double search_best(const cm_model *cm, const cl_cluster *c, schedule_kind sched, int p,
                          int m)
{
    size_t memo = (size_t)p * (MAX_LAYERS + 1) * (MAX_LAYERS + 1);
    search x = {cm, c, sched, p, m, malloc(memo * sizeof(double)), {0}, INFINITY};
    for (size_t k = 0; k < memo; k++)
        x.stage_memo[k] = NAN;
    search_visit(&x, 0);
    free(x.stage_memo);
    return x.best;
}

/* ---- the planner's plans -------------------------------------------------- */

/* Σ T_s + (m−1)·max T_s of a plan, priced by plan_layer_recompute(). */
static double plan_critical_path(const cm_model *cm, const cl_cluster *c, const plan *pl)
{
    double sum = 0, worst = 0;
    for (int s = 0; s < pl->num_stages; s++) {
        double t = 0;
        for (int l = pl->chunk_start[s]; l < pl->chunk_start[s + 1]; l++) {
            plan_layer_cost rc;
            plan_layer_recompute(pl, cm, l, false, &rc);
            t += cm_forward_total_s(&cm->layers[l]) +
                 cm_backward_total_s(&cm->layers[l], RECOMPUTE_NONE) + rc.recompute_s;
        }
        if (s < pl->num_stages - 1 && c)
            t += 2.0 * cl_p2p_time(c, cm->layers[pl->chunk_start[s + 1] - 1].output_bytes, 0);
        sum += t;
        worst = fmax(worst, t);
    }
    return sum + (pl->num_micro_batches - 1) * worst;
}

/* The planner's objective equals the exhaustive optimum; the plan it returns
 * fits (planner_run() checks with mem_check_fits()) and its own critical path,
 * recomputed from its masks, is that optimum. */
static void check_against_search(int units, int max_unit_layers, uint64_t first_seed)
{
    cl_cluster c = test_scaleout_cluster(20, 0.02);
    int planned = 0, refused = 0;
    for (uint64_t seed = first_seed; seed < first_seed + 24; seed++) {
        int p = 1 + (int)(seed % 4);
        int L =
            2 + p + (int)(seed % (uint64_t)(max_unit_layers - p + 1)); /* ≤ max_unit_layers + 2 */
        int m = 1 + (int)((seed * 5) % 7);
        schedule_kind sched = seed % 3 == 0 ? SCHED_GPIPE : SCHED_1F1B;
        cm_model cm;
        random_model(&cm, L, units, seed);
        wl_workload w;
        test_pipeline_workload(&w, p, m, sched);
        plan pl;
        int rc = test_run_planner("adapipe", &cm, &c, &w, &pl, NULL);
        double best = search_best(&cm, &c, sched, p, m);
        if (best == INFINITY) {
            CU_ASSERT_EQUAL(rc, NP_EXIT_NOFIT);
            refused++;
        } else {
            CU_ASSERT_EQUAL_FATAL(rc, 0);
            ASSERT_REL(pl.predicted_iteration_s, best, 1e-9);
            ASSERT_REL(plan_critical_path(&cm, &c, &pl), best, 1e-9);
            CU_ASSERT_EQUAL(mem_check_fits(&cm, &pl, NULL), 0);
            plan_free(&pl);
            planned++;
        }
        cm_free(&cm);
    }
    CU_ASSERT(planned >= 12);
    CU_ASSERT(refused >= 1);
}

static void test_equals_exhaustive_search_one_unit(void) { check_against_search(1, 8, 1); }

static void test_equals_exhaustive_search_two_units(void) { check_against_search(2, 8, 101); }

static void test_equals_exhaustive_search_three_units(void) { check_against_search(3, 6, 201); }

/* One decoder layer, units u0 (1 s, 10 B), u1 (3 s, 10 B), u2 (2 s, 25 B),
 * input 5 B: 50 B kept without recompute.  GPipe, p = 1, m = 2 holds 2
 * micro-batches: 2·(50 − d) + d = 100 − d bytes for d dropped.  With 80 B
 * the layer must drop 20: {u0, u1} costs 4 s, {u2} 2 s, {u0, u2} 3 s: u2. */
static void test_picks_the_cheapest_units_that_free_enough_memory(void)
{
    cm_model cm;
    test_uniform_model(&cm, 1);
    cm_layer *ly = &cm.layers[0];
    ly->kind = CM_DECODER;
    ly->state_bytes = 0;
    ly->num_units = 3;
    ly->units[0] = (cm_unit){"u0", 1, 10};
    ly->units[1] = (cm_unit){"u1", 3, 10};
    ly->units[2] = (cm_unit){"u2", 2, 25};
    ly->activation_bytes[RECOMPUTE_NONE] = 50;
    cm.hbm_bytes = 80;
    wl_workload w;
    test_pipeline_workload(&w, 1, 2, SCHED_GPIPE);
    plan pl;
    CU_ASSERT_EQUAL_FATAL(test_run_planner("adapipe", &cm, NULL, &w, &pl, NULL), 0);
    CU_ASSERT_EQUAL(pl.recompute_units[0], 1u << 2);
    /* (m + p − 1)·(F + B + 2) = 2·(1 + 2 + 2) */
    ASSERT_REL(pl.predicted_iteration_s, 10.0, 1e-15);
    plan_free(&pl);
    cm_free(&cm);
}

/* Two identical layers of one unit (1 s, 10 B) and a 5 B input: 15 B each.
 * GPipe, p = 1, m = 2: recomputing in r of the layers needs
 * 2·(30 − 10r) + (r > 0 ? 10 : 0) = 60, 50, 30 bytes.  With 55 B exactly
 * one layer recomputes: no uniform choice is optimal. */
static void test_mixes_masks_across_identical_layers(void)
{
    cm_model cm;
    test_uniform_model(&cm, 2);
    for (int l = 0; l < 2; l++) {
        cm_layer *ly = &cm.layers[l];
        ly->kind = CM_DECODER;
        ly->state_bytes = 0;
        ly->num_units = 1;
        ly->units[0] = (cm_unit){"u", 1, 10};
        ly->activation_bytes[RECOMPUTE_NONE] = 15;
    }
    cm.hbm_bytes = 55;
    wl_workload w;
    test_pipeline_workload(&w, 1, 2, SCHED_GPIPE);
    plan pl;
    CU_ASSERT_EQUAL_FATAL(test_run_planner("adapipe", &cm, NULL, &w, &pl, NULL), 0);
    CU_ASSERT_EQUAL(pl.recompute_units[0] + pl.recompute_units[1], 1);
    /* 2 micro-batches · (2 layers · 3 s + 1 s of recompute) */
    ASSERT_REL(pl.predicted_iteration_s, 14.0, 1e-15);
    plan_free(&pl);
    cm_free(&cm);
}

/* Eight layers of F = 1, B = 2 after a first layer of F = 100, p = 2, m = 4,
 * no memory limit: the first layer alone bounds τ at 100, so the best plan
 * is {0 | 1..7}: 100 + 7·3 + 3·100 = 421.  Its second stage is longer than
 * the search's first length bound (1.25·L/p + 1 = 6 layers), so this
 * checks that the bound is widened when the optimum may need it. */
static void test_finds_stages_longer_than_the_first_length_bound(void)
{
    cm_model cm;
    test_uniform_model(&cm, 8);
    cm.layers[0].forward_s = 100;
    cm.layers[0].backward_s = 0;
    wl_workload w;
    test_pipeline_workload(&w, 2, 4, SCHED_1F1B);
    plan pl;
    CU_ASSERT_EQUAL_FATAL(test_run_planner("adapipe", &cm, NULL, &w, &pl, NULL), 0);
    CU_ASSERT_EQUAL(pl.chunk_start[1], 1);
    ASSERT_REL(pl.predicted_iteration_s, 421.0, 1e-15);
    plan_free(&pl);
    cm_free(&cm);
}

static void test_refuses_layers_with_different_units(void)
{
    cm_model cm;
    random_model(&cm, 5, 2, 3);
    cm.layers[2].units[1].activation_bytes += 1;
    wl_workload w;
    test_pipeline_workload(&w, 2, 4, SCHED_1F1B);
    plan pl;
    cl_cluster c = test_scaleout_cluster(20, 0.02);
    CU_ASSERT_EQUAL(test_run_planner("adapipe", &cm, &c, &w, &pl, NULL), NP_EXIT_INPUT);
    cm_free(&cm);
}

/* ---- published speed-up ---------------------------------------------------- */

/* Sun et al. (ASPLOS'24, abstract): AdaPipe is up to 1.32× faster than
 * Megatron-LM on GPUs and 1.22× on Ascend NPUs, on GPT-3 175B and Llama-2
 * 70B.  In the critical-path model AdaPipe's space holds Megatron's uniform
 * plan with none or selective recompute (selective = the core-attention
 * unit), and recomputing every unit keeps full recompute's bytes in less
 * time, so its speed-up is at least 1; it should not exceed the paper's
 * largest, 1.32. */
static void test_speedup_over_megatron_is_within_published_range(void)
{
    const char *files[] = {"workloads/llama2_70b.json", "workloads/gpt3_175b.json"};
    for (int k = 0; k < 2; k++) {
        wl_workload w;
        np_error err;
        CU_ASSERT_EQUAL_FATAL(wl_load(test_path(files[k]), NULL, 0, &w, &err), 0);
        cl_cluster c = test_npu_cluster(16384, 8); /* platforms/16k_npu.xml */
        cm_model cm;
        CU_ASSERT_EQUAL_FATAL(cm_build(&w, &c, 0, &cm, &err), 0);
        plan mega, ada;
        CU_ASSERT_EQUAL_FATAL(test_run_planner("megatron", &cm, &c, &w, &mega, &err), 0);
        CU_ASSERT_EQUAL_FATAL(test_run_planner("adapipe", &cm, &c, &w, &ada, &err), 0);
        double speedup = plan_critical_path(&cm, &c, &mega) / plan_critical_path(&cm, &c, &ada);
        CU_ASSERT(speedup >= 1.0 - 1e-12);
        CU_ASSERT(speedup <= 1.32);
        plan_free(&mega);
        plan_free(&ada);
        cm_free(&cm);
        wl_free(&w);
    }
}

void register_adapipe_tests(void)
{
    TEST_SUITE("adapipe",
               {"equals_exhaustive_search_one_unit", test_equals_exhaustive_search_one_unit},
               {"equals_exhaustive_search_two_units", test_equals_exhaustive_search_two_units},
               {"equals_exhaustive_search_three_units", test_equals_exhaustive_search_three_units},
               {"picks_the_cheapest_units_that_free_enough_memory",
                test_picks_the_cheapest_units_that_free_enough_memory},
               {"mixes_masks_across_identical_layers", test_mixes_masks_across_identical_layers},
               {"finds_stages_longer_than_the_first_length_bound",
                test_finds_stages_longer_than_the_first_length_bound},
               {"refuses_layers_with_different_units", test_refuses_layers_with_different_units},
               {"speedup_over_megatron_is_within_published_range",
                test_speedup_over_megatron_is_within_published_range});
}
