/*
 * report_moe.c -- the MoE replay's figures in the table and the CSV
 * (docs/moe.md, "Metrics"; docs/csv-format.md's MoE block).  A run that
 * replays no MoE layer prints nothing more and leaves the CSV fields empty.
 */
#include "report_moe.h"

#include <stdbool.h>
#include <string.h>

void report_moe_print(FILE *out, const engine_result *r)
{
    if (r->moe_skipped_flows > 0)
        fprintf(out,
                "%-10s   moe: all-to-alls in closed form, not replayed: about %.2g flows "
                "(--allow-large replays them; --fold-dp and --moe-sample-mb reduce them, "
                "docs/moe.md)\n",
                "", r->moe_skipped_flows);
    if (!r->moe_replayed)
        return;
    double dropped = r->moe_assignments > 0 ? r->moe_dropped_tokens / r->moe_assignments : 0.0;
    bool pipelined = r->moe_policy && strcmp(r->moe_policy, "fastermoe") == 0;
    fprintf(out,
            "%-10s   moe[%s]: all-to-all %.3f s (slowest worker; mean %.3f s), exposed %.3f s%s, "
            "max/mean expert load %.2f, dropped %.0f of %.0f assignments (%.1f%%), padding "
            "%.0f rows (%.3g FLOPs)\n",
            "", r->moe_policy ? r->moe_policy : "none", r->moe_alltoall_s, r->moe_alltoall_mean_s,
            r->moe_alltoall_exposed_s,
            r->moe_overlap ? " (combined 1F1B)"
            : pipelined    ? " (pipelined with the experts)"
                           : "",
            r->moe_max_over_mean, r->moe_dropped_tokens, r->moe_assignments, 100 * dropped,
            r->moe_padding_tokens, r->moe_padding_flops);
    /* The memory model keeps every rank's expert activations at the cost
     * model's rows (balanced routing, or the static capacity): say so where
     * the replay's rows differ (docs/moe.md, "Memory of an MoE layer"). */
    bool efficient = r->moe_policy && strcmp(r->moe_policy, "efficientmoe") == 0;
    if (r->moe_max_over_mean > 1.0 + 1e-9 || efficient)
        fprintf(out,
                "%-10s   moe: peak mem prices each rank's expert activations at balanced rows%s; "
                "a rank that computes more here (max/mean expert load %.2f) holds more, not "
                "counted (docs/moe.md)\n",
                "", efficient ? " (not EfficientMoE's per-step padding)" : "",
                r->moe_max_over_mean);
    if (r->moe_sample_mb > 0)
        fprintf(out,
                "%-10s   moe: sampled (--moe-sample-mb %d): %.0f all-to-alls (counted per worker) "
                "replayed pair by pair "
                "(micro-batches below %d, and every one of the witness EP group, stage %d's "
                "first), %.0f waited their EP group's measured time\n",
                "", r->moe_sample_mb, r->moe_replayed_exchanges, r->moe_sample_mb,
                r->moe_witness_stage, r->moe_sampled_exchanges);
    if (r->moe_copies > 0)
        fprintf(out,
                "%-10s   moe: %.0f expert copies (weights + gradients %.2f GB on the fullest rank, "
                "in peak mem), their broadcasts and gradient reductions %.3f s\n",
                "", r->moe_copies, r->moe_copy_bytes / 1e9, r->moe_copy_s);
}

void report_moe_csv_fields(FILE *f, const engine_result *r)
{
    if (!r->moe_replayed) {
        fputs(",,,,,,,", f);
        return;
    }
    fprintf(f, ",%.9g,%.9g,%.6g,%.9g,%.9g,%.9g,%.9g", r->moe_alltoall_s, r->moe_alltoall_mean_s,
            r->moe_max_over_mean, r->moe_assignments, r->moe_dropped_tokens, r->moe_padding_tokens,
            r->moe_padding_flops);
}

void report_moe_policy_csv_fields(FILE *f, const engine_result *r)
{
    if (!r->moe_replayed) {
        fputs(",,,,", f);
        return;
    }
    fprintf(f, ",%s,%.0f,%.9g,%.9g", r->moe_policy ? r->moe_policy : "none", r->moe_copies,
            r->moe_copy_s, r->moe_copy_bytes);
}

void report_moe_exposed_csv_field(FILE *f, const engine_result *r)
{
    if (r->moe_replayed)
        fprintf(f, ",%.9g", r->moe_alltoall_exposed_s);
    else
        fputc(',', f);
}
