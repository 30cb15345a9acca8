/*
 * report.c -- summary table and CSV rows (see report.h).
 *
 * Units on screen are the ones a reader of training reports expects: seconds,
 * tokens/s, percentages, GB (1e9 bytes, as HBM capacities are quoted).  The
 * CSV keeps SI base units (seconds, bytes, ratios) so that plots need no
 * parsing.
 */
#include "report.h"

#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "np_file.h"
#include "report_moe.h"

const char report_csv_header[] =
    "platform,workload,planner,schedule,npus,tp,pp,dp,vpp,micro_batch_size,"
    "num_micro_batches,global_batch_size,recompute,iteration_s,pipeline_s,tokens_per_s,mfu,"
    "bubble_ratio,peak_bytes,capacity_bytes,peak_fraction,exposed_comm_s,recompute_s,"
    "predicted_iteration_s,planner_wall_s,sim_wall_s,activities,solver_status,solver_gap,overrides,"
    /* appended by the sweep issue; new columns go after these, never between */
    "run_id,dp_algorithm,dp_inter_algorithm,ep_alltoall_algorithm,dp_radix,fold_dp,dp_overlap,"
    "dp_bucket_bytes,shifted_recompute,plan_file,plan_sha256,cfg,simulator_version,status,"
    "exit_code,error,"
    /* appended by the memory breakdown (simrun --memory): the worst stage's */
    "mem_stage,mem_weights_bytes,mem_stashed_weights_bytes,mem_grads_bytes,mem_optimizer_bytes,"
    "mem_activations_bytes,mem_inflight,mem_transient_bytes,mem_workspace_bytes,"
    "mem_predicted_bytes,mem_simulated_bytes,"
    /* appended by the MoE replay (report_moe.c) */
    "moe_alltoall_s,moe_alltoall_mean_s,moe_max_over_mean,moe_assignments,moe_dropped_tokens,"
    "moe_padding_tokens,moe_padding_flops,"
    /* appended with --placement and --moe-trace: identity, as columns 32-43 */
    "placement,moe_trace,moe_trace_sha256,moe_trace_step,"
    /* appended by the MoE policies (--moe-policy) */
    "moe_policy,moe_copies,moe_copy_s,moe_copy_bytes,"
    /* appended with --moe-sample-mb (issue 9): identity, as columns 32-43 */
    "moe_sample_mb,"
    /* appended with combined 1F1B (report_moe.c) */
    "moe_alltoall_exposed_s,"
    /* appended with the exact TP fold (engine_symmetry.c) */
    "tp_fold,"
    /* appended with --ignore-memory: identity, as columns 32-43 */
    "ignore_memory,"
    /* the parallel sizes tp, pp and dp leave out (context, expert, expert-tensor) */
    "cp,ep,etp";

/* Whether layer l's recompute option is a decision the label reports: every
 * decoder and listed layer, and an embedding or LM head only when the plan
 * recomputes it (Megatron's options apply to the Transformer layers; the
 * embedding and the head keep their activations unless a planner says
 * otherwise).  Without a cost model every layer counts. */
static bool counts_layer(const plan *pl, const cm_model *cm, int l)
{
    if (!cm || l >= cm->num_layers)
        return true;
    cm_layer_kind k = cm->layers[l].kind;
    if (k == CM_DECODER || k == CM_CUSTOM)
        return true;
    return pl->recompute_units ? pl->recompute_units[l] != 0 : pl->recompute[l] != RECOMPUTE_NONE;
}

const char *report_recompute_summary(const plan *pl, const cm_model *cm, char *buf, int size)
{
    if (pl->recompute_units) { /* AdaPipe: units of some of the layers that have units */
        int layers = 0, with_units = 0;
        for (int l = 0; l < pl->num_layers; l++) {
            bool has_units = !cm || l >= cm->num_layers || cm->layers[l].num_units > 0;
            with_units += has_units || pl->recompute_units[l] != 0;
            layers += pl->recompute_units[l] != 0;
        }
        snprintf(buf, size, layers ? "units(%d/%d)" : "none", layers, with_units);
    } else {
        int count[RECOMPUTE_COUNT] = {0};
        for (int l = 0; l < pl->num_layers; l++)
            if (counts_layer(pl, cm, l))
                count[pl->recompute[l]]++;
        int kinds = 0, only = RECOMPUTE_NONE;
        for (int r = 0; r < RECOMPUTE_COUNT; r++)
            if (count[r])
                kinds++, only = r;
        /* One kind on every counted layer is that kind; anything else is
         * mixed, even 1 full layer among 81 without recompute. */
        if (kinds <= 1)
            snprintf(buf, size, "%s", wl_recompute_name((recompute_kind)only));
        else
            snprintf(buf, size, "mixed(%d/%d/%d)", count[RECOMPUTE_NONE],
                     count[RECOMPUTE_SELECTIVE], count[RECOMPUTE_FULL]);
    }
    if (pl->merak_shifted_recompute && size > 8)
        strncat(buf, "+shift", size - strlen(buf) - 1);
    return buf;
}

/* The context-parallel size, and the expert-parallel and expert-tensor-
 * parallel sizes of a MoE model (a dense one: 1, and the plan's TP, which
 * Megatron's --expert-tensor-parallel-size defaults to). */
static int row_cp(const report_row *row)
{
    int cp = row->w->parallel.context_parallel_size;
    return cp > 1 ? cp : 1;
}

static bool row_moe(const report_row *row) { return row->w->model.num_experts > 0; }

void report_print_header(FILE *out, const report_row *row)
{
    const wl_parallel *par = &row->w->parallel;
    char cp[24] = "", ep[48] = "";
    if (row_cp(row) > 1)
        snprintf(cp, sizeof cp, "  CP %d", row_cp(row));
    if (row_moe(row))
        snprintf(ep, sizeof ep, "  EP %d  ETP %d", par->expert_model_parallel_size,
                 par->expert_tensor_parallel_size);
    fprintf(out, "npusim: %s on %s (%d NPUs)\n", row->w->name, row->platform, row->num_npus);
    fprintf(out, "  workload: TP %d%s  PP %d  DP %d  VPP %d%s   global batch %ld, micro-batch %d\n",
            par->tensor_model_parallel_size, cp, par->pipeline_model_parallel_size,
            par->data_parallel_size, par->virtual_pipeline_model_parallel_size, ep,
            row->w->training.global_batch_size, row->w->training.micro_batch_size);
}

void report_print_table_head(FILE *out, const report_row *row)
{
    fprintf(out, "\n%-10s %-13s %-14s %-19s %10s %10s %8s %11s %6s %7s %9s %15s %7s %9s %9s %8s\n",
            "planner", "schedule", row_cp(row) > 1 ? "TPxCPxPPxDP m" : "TPxPPxDP m", "recompute",
            "iter (s)", "pred (s)", "speedup", "tokens/s", "MFU", "bubble", "recomp(s)",
            "peak mem (GB)", "mem", "comm (s)", "plan (s)", "sim (s)");
}

void report_print_table_row(FILE *out, const report_row *row, double baseline_iteration_s)
{
    const engine_result *r = row->r;
    char rc[48];
    double speedup = baseline_iteration_s > 0 ? baseline_iteration_s / r->iteration_s : 1.0;
    double bubble = r->bubble_ratio > 1e-12 ? r->bubble_ratio : 0.0; /* no "-0.0%" */
    char shape[32];
    if (row_cp(row) > 1)
        snprintf(shape, sizeof shape, "%dx%dx%dx%d %d", row->pl->tensor_parallel, row_cp(row),
                 row->pl->num_stages, row->pl->data_parallel, row->pl->num_micro_batches);
    else
        snprintf(shape, sizeof shape, "%dx%dx%d %d", row->pl->tensor_parallel, row->pl->num_stages,
                 row->pl->data_parallel, row->pl->num_micro_batches);
    double recompute_s = 0;
    for (int st = 0; st < r->num_stages; st++)
        recompute_s += r->stages[st].recompute_s;
    char predicted[16] = "-";
    if (row->pl->predicted_iteration_s > 0)
        snprintf(predicted, sizeof predicted, "%.3f", row->pl->predicted_iteration_s);
    fprintf(out,
            "%-10s %-13s %-14s %-19s %10.3f %10s %7.2fx %11.0f %5.1f%% %6.1f%% %9.3f %7.1f / %5.1f "
            "%6.1f%% %9.3f %9.3f %8.2f\n",
            row->pl->planner, wl_schedule_name(row->pl->schedule), shape,
            report_recompute_summary(row->pl, row->cm, rc, sizeof rc), r->iteration_s, predicted,
            speedup, r->tokens_per_s, 100 * r->mfu, 100 * bubble, recompute_s / r->num_stages,
            r->peak_bytes / 1e9, row->capacity_bytes / 1e9, 100 * r->peak_fraction,
            r->exposed_comm_s, row->pl->planner_wall_s, r->wall_s);
    if (row->pl->solver_status[0])
        fprintf(out, "%-10s   solver: %s, MIP gap %.2f%%\n", "", row->pl->solver_status,
                100 * row->pl->solver_gap);
    if (row->pl->note[0])
        fprintf(out, "%-10s   note: %s\n", "", row->pl->note);
    report_moe_print(out, r); /* MoE hook: report_moe.c */
}

void report_print_stages(FILE *out, const report_row *row)
{
    const engine_result *r = row->r;
    fprintf(out, "\n%6s %8s %10s %10s %10s %10s %10s %12s\n", "stage", "layers", "busy (s)",
            "bubble", "recomp (s)", "p2p (s)", "dp (s)", "peak (GB)");
    for (int s = 0; s < r->num_stages; s++) {
        const engine_stage_metrics *m = &r->stages[s];
        int layers = 0;
        for (int j = 0; j < row->pl->num_chunks; j++) {
            int k = j * row->pl->num_stages + s;
            layers += row->pl->chunk_start[k + 1] - row->pl->chunk_start[k];
        }
        fprintf(out, "%6d %8d %10.3f %9.1f%% %10.3f %10.3f %10.3f %12.2f\n", s, layers, m->busy_s,
                100 * m->bubble_ratio, m->recompute_s, m->p2p_exposed_s, m->dp_comm_s,
                m->peak_bytes / 1e9);
    }
}

/* The mem_* columns, each after its comma: the worst stage's memory (mem_worst_stage(), the
 * breakdown of simrun --memory) beside the engine's peak of that stage;
 * empty without a cost model. */
static void csv_memory_fields(FILE *f, const report_row *row)
{
    mem_stage st;
    int s = row->cm ? mem_worst_stage(row->cm, row->pl, &st) : -1;
    if (s < 0) {
        fputs(",,,,,,,,,,,", f); /* 11 empty fields */
        return;
    }
    double simulated = s < row->r->num_stages ? row->r->stages[s].peak_bytes : 0.0;
    fprintf(f, ",%d,%.9g,%.9g,%.9g,%.9g,%.9g,%d,%.9g,%.9g,%.9g,%.9g", s, st.weight_bytes,
            st.stash_bytes, st.grad_bytes, st.optimizer_bytes, st.activation_bytes, st.inflight,
            st.transient_bytes, st.workspace_bytes, st.total_bytes, simulated);
}

/* The row, newline included, formatted into memory (free() it), so that it
 * reaches the file in one piece. */
static char *csv_format_row(const report_row *row, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f)
        return NULL;
    const engine_result *r = row->r;
    const plan *pl = row->pl;
    char rc[48];
    np_csv_field(f, row->platform);
    fputc(',', f);
    np_csv_field(f, row->workload);
    fputc(',', f);
    np_csv_field(f, pl->planner);
    fputc(',', f);
    np_csv_field(f, wl_schedule_name(pl->schedule));
    fprintf(f, ",%d,%d,%d,%d,%d,%d,%d,%ld,", row->num_npus, pl->tensor_parallel, pl->num_stages,
            pl->data_parallel, pl->num_chunks, pl->micro_batch_size, pl->num_micro_batches,
            row->w->training.global_batch_size);
    np_csv_field(f, report_recompute_summary(pl, row->cm, rc, sizeof rc));
    fputc(',', f);
    double recompute_s = 0;
    for (int s = 0; s < r->num_stages; s++)
        recompute_s += r->stages[s].recompute_s;
    fprintf(f, "%.9g,%.9g,%.9g,%.6g,%.6g,%.9g,%.9g,%.6g,%.9g,%.9g,%.9g,%.6g,%.6g,%ld,",
            r->iteration_s, r->pipeline_s, r->tokens_per_s, r->mfu, r->bubble_ratio, r->peak_bytes,
            row->capacity_bytes, r->peak_fraction, r->exposed_comm_s, recompute_s / r->num_stages,
            pl->predicted_iteration_s, pl->planner_wall_s, r->wall_s, r->activities);
    np_csv_field(f, pl->solver_status);
    fprintf(f, ",%.6g,", pl->solver_gap);
    np_csv_field(f, row->overrides);
    fputc(',', f);
    np_csv_field(f, row->run_id);
    engine_options defaults;
    const engine_options *eo = row->eo;
    if (!eo) {
        engine_init_options(&defaults);
        eo = &defaults;
    }
    fprintf(f, ",%s,%s,%s,%d,%d,%d,%.9g,%d,", coll_algorithm_name(eo->dp_algorithm),
            coll_algorithm_name(eo->dp_inter_algorithm),
            coll_algorithm_name(eo->ep_alltoall_algorithm), eo->dp_radix, eo->fold_dp,
            eo->dp_overlap ? 1 : 0, eo->dp_bucket_bytes, row->shifted_recompute ? 1 : 0);
    np_csv_field(f, row->plan_file);
    fputc(',', f);
    np_csv_field(f, row->plan_sha256);
    fputc(',', f);
    np_csv_field(f, row->cfg);
    fputc(',', f);
    np_csv_field(f, row->simulator_version);
    fputs(",ok,0,", f); /* status, exit_code, error (empty): simsweep writes failed points' rows */
    csv_memory_fields(f, row);
    report_moe_csv_fields(f, r); /* MoE hook: report_moe.c */
    char order[64];
    placement_name(&row->eo->placement, order, sizeof order);
    fprintf(f, ",%s,", order);
    np_csv_field(f, row->moe_trace);
    fputc(',', f);
    np_csv_field(f, row->moe_trace_sha256);
    fprintf(f, ",%d", row->moe_trace_step);
    report_moe_policy_csv_fields(f, r);   /* MoE policies */
    fprintf(f, ",%d", eo->moe_sample_mb); /* the option as given, 0 without */
    report_moe_exposed_csv_field(f, r);
    fprintf(f, ",%d,%d,%d,%d,%d\n", r->tp_fold, row->ignore_memory ? 1 : 0, row_cp(row),
            row_moe(row) ? row->w->parallel.expert_model_parallel_size : 1,
            row_moe(row) ? row->w->parallel.expert_tensor_parallel_size : row->pl->tensor_parallel);
    int failed = ferror(f);
    if (fclose(f) != 0 || failed) {
        free(buf);
        return NULL;
    }
    return buf;
}

static int count_columns(const char *line, size_t len)
{
    int n = 1;
    for (size_t i = 0; i < len; i++)
        n += line[i] == ',';
    return n;
}

/* 0 when the open file f ends with a line end, else the number of its last
 * line (the one cut short). */
static long cut_last_line(FILE *f)
{
    if (fseek(f, -1, SEEK_END) != 0 || fgetc(f) == '\n')
        return 0;
    rewind(f);
    long lines = 1;
    for (int ch; (ch = fgetc(f)) != EOF;)
        lines += ch == '\n';
    return lines;
}

int report_csv_check_header(const char *path, np_error *err)
{
    FILE *f = np_file_open_shared(path); /* no row half-written by a concurrent simrun */
    if (!f)
        return 0;    /* a new file (np_file_check_target() says why one cannot be made) */
    char line[8192]; /* the header is about 1 KB: a longer first line is not it */
    size_t n = fread(line, 1, sizeof line - 1, f);
    if (n == 0) {
        fclose(f);
        return 0;
    }
    line[n] = '\0';
    size_t len = strcspn(line, "\r\n"), want = strlen(report_csv_header);
    if (len == want && memcmp(line, report_csv_header, want) == 0) {
        long cut = cut_last_line(f);
        fclose(f);
        if (cut)
            return np_error_set(err, NP_EXIT_INTERNAL, path, "--csv", (int)cut, "%s",
                                NP_CUT_ROW_TEXT);
        return 0;
    }
    fclose(f);
    if (len >= 3 && memcmp(line, "\xef\xbb\xbf", 3) == 0)
        return np_error_set(err, NP_EXIT_INTERNAL, path, "--csv", 1,
                            "the file starts with a UTF-8 byte-order mark (EF BB BF), as a "
                            "spreadsheet saves it: nothing is appended to it; write to a new "
                            "file (simsweep --merge rewrites it without the mark)");
    int have = count_columns(line, len), ours = count_columns(report_csv_header, want);
    if (len < want && memcmp(line, report_csv_header, len) == 0 && report_csv_header[len] == ',')
        return np_error_set(err, NP_EXIT_INTERNAL, path, "--csv", 1,
                            "written by an older simrun: its %d columns are the first %d of "
                            "this simrun's %d (--csv-header, docs/csv-format.md); a row of "
                            "%d fields would not match its header: write to a new file",
                            have, have, ours, ours);
    return np_error_set(err, NP_EXIT_INTERNAL, path, "--csv", 1,
                        "the header (%d columns) is not this simrun's (%d columns, "
                        "--csv-header): write to a new file",
                        have, ours);
}

int report_csv_append(const char *path, const report_row *row, np_error *err)
{
    int rc = report_csv_check_header(path, err);
    if (rc)
        return rc;
    size_t len = 0;
    char *line = csv_format_row(row, &len);
    if (!line)
        return np_error_set(err, NP_EXIT_INTERNAL, path, "--csv", 0,
                            "cannot format the CSV row: out of memory");
    rc = np_file_append(path, "--csv", report_csv_header, line, len, err);
    free(line);
    return rc;
}
