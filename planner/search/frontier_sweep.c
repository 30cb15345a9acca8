/*
 * frontier_sweep.c -- the job's frontier over device counts: every valid
 * (tp, pp, dp, micro-batch) tuple of N devices (tp within a server and
 * dividing the heads, query groups and FFN width; dp dividing the global
 * batch and a multiple of the expert-parallel size; b a power of two
 * dividing a replica's batch), priced by frontier_tuple.c and Pareto-united;
 * frontier_sweep() repeats it for N = 1, 2, 4, ... and the platform's own
 * count.  Also the frontier container (growth, free, append) and the
 * queries the planner and the CLI make of it.
 */

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frontier_internal.h"
#include "planner.h"

static void entry_free(frontier_entry *e)
{
    free(e->recompute);
    e->recompute = NULL;
}

void frontier_free(frontier *f)
{
    for (int i = 0; i < f->count; i++)
        entry_free(&f->entries[i]);
    free(f->entries);
    memset(f, 0, sizeof *f);
}

frontier_entry *ft_frontier_push(frontier *f)
{
    if (f->count == f->capacity) {
        int cap = f->capacity ? 2 * f->capacity : 16;
        frontier_entry *e = realloc(f->entries, (size_t)cap * sizeof *e);
        if (!e)
            return NULL;
        f->entries = e;
        f->capacity = cap;
    }
    frontier_entry *e = &f->entries[f->count++];
    memset(e, 0, sizeof *e);
    return e;
}

static bool tp_valid(const wl_workload *w, const cl_cluster *c, int tp)
{
    const wl_model *md = &w->model;
    if (c->npus_per_node > 0 && tp > c->npus_per_node)
        return false;
    if (md->num_layer_specs > 0)
        return tp == 1; /* listed layers are priced as one NPU runs them */
    int groups = md->num_query_groups > 0 ? md->num_query_groups : md->num_attention_heads;
    return md->num_attention_heads % tp == 0 && groups % tp == 0 && md->ffn_hidden_size % tp == 0;
}

static int pipeline_layers(const wl_workload *w)
{
    return w->model.num_layer_specs > 0 ? w->model.num_layer_specs : w->model.num_layers;
}

/* Every valid (tp, pp, dp, b) of n devices; returns how many were valid. */
static int device_count_evaluate(const wl_workload *w, const cl_cluster *c, int n, frontier *f,
                                 np_error *err)
{
    long long G = w->training.global_batch_size;
    int ep = w->model.num_experts > 0 && w->parallel.expert_model_parallel_size > 0
                 ? w->parallel.expert_model_parallel_size
                 : 1;
    int valid = 0;
    for (int tp = 1; tp <= n; tp++) {
        if (n % tp || !tp_valid(w, c, tp))
            continue;
        for (int pp = 1; pp <= n / tp && pp <= pipeline_layers(w); pp++) {
            if ((n / tp) % pp)
                continue;
            int dp = n / tp / pp;
            if (G % dp || dp % ep)
                continue;
            long long per_replica = G / dp;
            for (long long b = 1; b <= per_replica && per_replica % b == 0; b *= 2) {
                tuple t = {n, tp, pp, dp, (int)b, (int)(per_replica / b)};
                valid++;
                int rc = ft_tuple_evaluate(w, c, &t, f, err);
                if (rc)
                    return -rc;
            }
        }
    }
    return valid;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int frontier_compute(const wl_workload *w, const cl_cluster *c, int num_devices, frontier *out,
                     np_error *err)
{
    return frontier_compute_with(w, c, num_devices, false, out, err);
}

int frontier_compute_with(const wl_workload *w, const cl_cluster *c, int num_devices,
                          bool zero_overlap, frontier *out, np_error *err)
{
    memset(out, 0, sizeof *out);
    out->capacity_bytes = c->hbm_bytes;
    out->zero_overlap = zero_overlap;
    double t0 = now_s();
    if (num_devices <= 0)
        return wl_key_error(err, NP_EXIT_INPUT, w, "parallel",
                            "expected a positive device count, got %d", num_devices);
    int valid = device_count_evaluate(w, c, num_devices, out, err);
    out->wall_s = now_s() - t0;
    if (valid < 0) {
        frontier_free(out);
        return -valid;
    }
    if (valid == 0)
        return wl_key_error(err, NP_EXIT_INPUT, w, "parallel",
                            "no split of %d NPUs into tensor x pipeline x data parallel sizes "
                            "fits the model: tensor parallel must divide the heads (%d), query "
                            "groups and FFN width and stay within a server (%d NPUs), pipeline "
                            "at most %d stages, data parallel must divide the global batch (%ld)",
                            num_devices, w->model.num_attention_heads, c->npus_per_node,
                            pipeline_layers(w), w->training.global_batch_size);
    return 0;
}

static int frontier_append(frontier *dst, frontier *src)
{
    for (int i = 0; i < src->count; i++) {
        frontier_entry *e = ft_frontier_push(dst);
        if (!e)
            return -1;
        *e = src->entries[i];
        src->entries[i].recompute = NULL;
    }
    dst->configs_evaluated += src->configs_evaluated;
    return 0;
}

/* 1, 2, 4, ... then the platform's count itself when it is not a power of 2. */
static long long next_device_count(long long n, int num_npus)
{
    return n < num_npus && 2 * n > num_npus ? num_npus : 2 * n;
}

int frontier_sweep(const wl_workload *w, const cl_cluster *c, bool zero_overlap, frontier *out,
                   np_error *err)
{
    memset(out, 0, sizeof *out);
    out->capacity_bytes = c->hbm_bytes;
    out->zero_overlap = zero_overlap;
    int refused = planner_refuse_context_parallel("ft (--frontier)", w, err);
    if (refused)
        return refused;
    double t0 = now_s();
    bool started = false;
    for (long long n = 1; n <= c->num_npus; n = next_device_count(n, c->num_npus)) {
        frontier one;
        int rc = frontier_compute_with(w, c, (int)n, zero_overlap, &one, err);
        if (rc == NP_EXIT_INPUT) {
            np_error_clear(err);
            continue;
        }
        if (rc) {
            frontier_free(out);
            return rc;
        }
        started = started || frontier_fastest_fitting(&one, 0) >= 0;
        if (started && frontier_append(out, &one)) {
            frontier_free(&one);
            frontier_free(out);
            return np_error_set(err, NP_EXIT_INTERNAL, FT_SOURCE, "", 0, "out of memory");
        }
        frontier_free(&one);
    }
    out->wall_s = now_s() - t0;
    return 0;
}

int frontier_fastest_fitting(const frontier *f, int devices)
{
    int best = -1;
    for (int i = 0; i < f->count; i++) {
        const frontier_entry *e = &f->entries[i];
        if ((devices && e->devices != devices) || !e->fits)
            continue;
        if (best < 0 || e->iteration_s < f->entries[best].iteration_s)
            best = i;
    }
    return best;
}

int frontier_smallest_memory(const frontier *f, int devices)
{
    int best = -1;
    for (int i = 0; i < f->count; i++) {
        const frontier_entry *e = &f->entries[i];
        if (devices && e->devices != devices)
            continue;
        if (best < 0 || e->memory_bytes < f->entries[best].memory_bytes)
            best = i;
    }
    return best;
}
