/*
 * bmpipe_rows.c -- BMPipe's memory rows: for every stage, how many
 * micro-batches each of its chunks holds when a backward (and its recompute
 * transient) starts.  The flat schedules need one row per stage,
 * mem_inflight(); the interleaved schedule one per distinct held vector of
 * the order memory.c replays (sched_step_at()), dominated ones dropped.
 * This is the one place that must follow memory.c's replay step by step:
 * with uniform micro-batches the largest row is exactly its peak, which is
 * why a proven optimum of the ILP is the optimum among the plans
 * mem_check_fits() accepts.
 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bmpipe_internal.h"
#include "memory.h"
#include "step_order.h"

/* Appends row (s, j, held) unless a row of stage s for the same chunk j
 * holds at least as much of every chunk; drops the rows it dominates. */
static void memory_row_add(bmp_problem *pb, int *rows, int s, int j, const int *held)
{
    int v = pb->v;
    for (int i = pb->row_begin[s]; i < *rows; i++) {
        if (pb->row_chunk[i] != j)
            continue;
        bool covers = true, covered = true;
        for (int k = 0; k < v; k++) {
            covers = covers && pb->row_held[i * v + k] >= held[k];
            covered = covered && pb->row_held[i * v + k] <= held[k];
        }
        if (covers)
            return;
        if (covered) { /* replace it by the last row */
            (*rows)--;
            pb->row_chunk[i] = pb->row_chunk[*rows];
            memmove(&pb->row_held[i * v], &pb->row_held[*rows * v], (size_t)v * sizeof(double));
            i--;
        }
    }
    pb->row_chunk[*rows] = j;
    for (int k = 0; k < v; k++)
        pb->row_held[*rows * v + k] = held[k];
    (*rows)++;
}

/* The memory rows: for every stage, the micro-batches of each of its chunks
 * held when a backward (with its recompute transient) runs, walking the
 * order memory.c replays (warm-up forwards, then one forward and one
 * backward, then the drain; sched_step_at()), one row per distinct held
 * vector and backward chunk, dominated ones dropped.  The flat schedules
 * have one row per stage, mem_inflight().  With uniform micro-batches the
 * largest row is exactly mem_stage_bytes()'s peak: a forward's peak is
 * followed by a backward holding as much (or is the warm-up's last). */
int bmp_memory_rows_init(bmp_problem *pb, schedule_kind sched)
{
    int p = pb->p, v = pb->v, m = pb->m, K = pb->chunks, rows = 0;
    bool interleaved = sched == SCHED_INTERLEAVED && v > 1;
    int most = interleaved ? m * v : 1;
    int held[v];
    pb->own_held = calloc((size_t)K, sizeof(double));
    pb->row_begin = calloc((size_t)p + 1, sizeof(int));
    pb->row_chunk = calloc((size_t)p * most, sizeof(int));
    pb->row_held = calloc((size_t)p * most * v, sizeof(double));
    if (!pb->own_held || !pb->row_begin || !pb->row_chunk || !pb->row_held)
        return -1;
    for (int s = 0; s < p; s++) {
        pb->row_begin[s] = rows;
        if (!interleaved) {
            held[0] = (int)mem_inflight(sched, p, s, m, v, 0);
            memory_row_add(pb, &rows, s, 0, held);
        } else {
            int total = m * v, warmup = sched_interleaved_warmup(p, s, v), f = 0;
            memset(held, 0, sizeof held);
            for (; f < warmup && f < total; f++)
                held[sched_step_at(p, v, f, true).chunk]++;
            for (int b = 0; b < total; b++) {
                if (f < total)
                    held[sched_step_at(p, v, f++, true).chunk]++;
                int j = sched_step_at(p, v, b, false).chunk;
                memory_row_add(pb, &rows, s, j, held);
                held[j]--;
            }
        }
        for (int i = pb->row_begin[s]; i < rows; i++) {
            for (int j = 0; j < v; j++) {
                int k = j * p + s;
                pb->inflight[k] = fmax(pb->inflight[k], pb->row_held[i * v + j]);
                if (pb->row_chunk[i] == j)
                    pb->own_held[k] = fmax(pb->own_held[k], pb->row_held[i * v + j]);
            }
        }
    }
    pb->row_begin[p] = rows;
    return 0;
}
