/*
 * plan_json.h -- saving a plan and replaying a saved one (simrun --plan-out,
 * --plan).
 *
 * The file is a JSON object whose keys are the fields of `plan` (plan.h):
 *   {"planner": "bmpipe", "schedule": "1f1b", "num_stages": 16,
 *    "num_chunks": 1, "num_layers": 128, "chunk_start": [0, 9, ...],
 *    "recompute": ["none", "full", ...], "micro_batch_size": 1,
 *    "num_micro_batches": 16, "tensor_parallel": 8, "data_parallel": 128,
 *    "merak_shifted_recompute": false, "predicted_iteration_s": 41.2}
 * plus, when the plan has them, "recompute_units" (a bitmask per layer) and
 * "micro_batch_sizes".  Every key is checked as the workload loader does: an
 * unknown key, a wrong type, a missing key, or a plan whose layer count does
 * not match the model it is replayed on is an np_error naming file and key.
 */
#ifndef PLAN_JSON_H
#define PLAN_JSON_H

#include "np_error.h"
#include "np_sha256.h"
#include "plan.h"

/* Writes pl (and the workload's path, when not NULL) to path, whole or not
 * at all (np_file.h); 0 or NP_EXIT_INTERNAL with err naming path. */
int plan_write_json(const char *path, const plan *pl, const char *workload_path, np_error *err);

/* Reads path into out (plan_free() it); num_layers is the cost model's layer
 * count the plan must match. */
int plan_read_json(const char *path, int num_layers, plan *out, np_error *err);

/* SHA-256 of the plan's decisions (schedule, stages, chunks, split,
 * recompute, micro-batches, TP and DP: what the engine replays), which a
 * plan file with a prediction stores as decisions_sha256; a plan read back
 * with other decisions drops its prediction. */
void plan_decisions_sha256(const plan *pl, char hex[NP_SHA256_HEX_SIZE]);

#endif
