/*
 * frontier_csv.c -- the frontier written as CSV, one row per entry, in the
 * "Frontier CSV" format of analysis/README.md (frontier.h documents the
 * columns).  Kept apart from the search so that how the file is written can
 * change without touching how the frontier is computed: it goes through
 * np_file, written whole to a temporary file and renamed into place.
 */

#include <stdio.h>

#include "frontier.h"
#include "np_file.h"

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
    np_file file; /* all or nothing: a failed write leaves an older file as it was */
    int rc = np_file_begin(&file, path, "--frontier", err);
    if (rc)
        return rc;
    FILE *out = file.f;
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
    return np_file_commit(&file, err);
}
