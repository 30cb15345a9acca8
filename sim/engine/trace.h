/*
 * trace.h -- the simulated timeline as a Chrome trace (--trace FILE).
 *
 * Writes the spans that engine_run() records when engine_options.record_spans
 * is set as a JSON file in the Trace Event Format, which Perfetto
 * (ui.perfetto.dev) and chrome://tracing open:
 *   - one process per pipeline worker, named "stage S replica D", whose one
 *     thread holds a complete event ("ph":"X") per op: F, B, W, recompute,
 *     send/recv, dp-allreduce, optimizer, all-to-all, named after the op and
 *     its micro-batch and chunk ("F mb3", "B mb0 c1"), with ts/dur in
 *     microseconds and args {micro_batch, chunk};
 *   - a counter ("ph":"C") "device memory" in GB (1e9 bytes) per worker,
 *     sampled at every op start and end, so that its maximum is the memory
 *     tracker's peak (allocations and transients are held while an op runs);
 *   - with the MoE replay, a counter "expert E load" per expert in replica
 *     0's process of each stage: the assignments routed to expert E by the
 *     MoE layer whose dispatch starts then (docs/moe.md).
 *
 * A 16K-NPU run has thousands of workers; by default only replica 0 of each
 * stage is written (all replicas of a stage replay the same list and, unless
 * the fabric breaks the symmetry, look alike).  Workers without spans
 * (replicas folded away by --fold-dp) are left out, and a worker whose spans
 * are not its whole op list gets no memory counter; "otherData" in the file
 * counts both.
 */
#ifndef SIM_TRACE_H
#define SIM_TRACE_H

#include "engine.h"

typedef struct trace_options {
    int max_replicas; /* write replicas 0 .. max_replicas−1 of each stage; 0 = all */
} trace_options;

/* Defaults: replica 0 of each stage only. */
void trace_init_options(trace_options *o);

/* Writes the timeline of r (a run of plan pl with schedule sc, recorded with
 * record_spans) to path, whole or not at all (np_file_begin/commit: a
 * temporary file renamed onto path once complete; a directory, a device or
 * a read-only file is refused, and path is never removed).  Returns 0, or an
 * np_exit_code with err naming path (cannot write it) or saying what is
 * missing (no spans recorded). */
int trace_write_chrome(const char *path, const engine_result *r, const plan *pl, const schedule *sc,
                       const trace_options *o, np_error *err);

#endif
