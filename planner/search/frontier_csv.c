/*
 * frontier_csv.c -- the frontier written as CSV, one row per entry, in the
 * "Frontier CSV" format of analysis/README.md (frontier.h documents the
 * columns).  Kept apart from the search so that how the file is written can
 * change without touching how the frontier is computed.
 */

#include <stdio.h>

#include "frontier.h"

static void recompute_label(const frontier_entry *e, char *buf, int size)
{
    int layers = 0;
    for (int r = 0; r < RECOMPUTE_COUNT; r++)
        layers += e->recompute_layers[r];
    for (int r = 0; r < RECOMPUTE_COUNT; r++)
        if (e->recompute_layers[r] == layers) {
            snprintf(buf, size, "%s", wl_recompute_name((recompute_kind)r));
            return;
        }
    snprintf(buf, size, "mixed(%d/%d/%d)", e->recompute_layers[RECOMPUTE_NONE],
             e->recompute_layers[RECOMPUTE_SELECTIVE], e->recompute_layers[RECOMPUTE_FULL]);
}

int frontier_write_csv(const char *path, const frontier *f, np_error *err)
{
    FILE *out = fopen(path, "w");
    if (!out)
        return np_error_set(err, NP_EXIT_INTERNAL, path, "", 0,
                            "cannot open the frontier CSV for writing");
    fprintf(out, "devices,tp,pp,dp,micro_batch_size,recompute,iteration_s,memory_bytes,"
                 "feasible,capacity_bytes\n");
    for (int i = 0; i < f->count; i++) {
        const frontier_entry *e = &f->entries[i];
        char label[64];
        recompute_label(e, label, (int)sizeof label);
        fprintf(out, "%d,%d,%d,%d,%d,%s,%.9g,%.0f,%s,%.0f\n", e->devices, e->tensor_parallel,
                e->pipeline_parallel, e->data_parallel, e->micro_batch_size, label, e->iteration_s,
                e->memory_bytes, e->fits ? "true" : "false", f->capacity_bytes);
    }
    if (fclose(out) != 0)
        return np_error_set(err, NP_EXIT_INTERNAL, path, "", 0, "error writing the frontier CSV");
    return 0;
}
