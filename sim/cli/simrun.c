/*
 * simrun.c -- the npusim command line: the job.
 *
 *   simrun [options] PLATFORM.xml WORKLOAD.json
 *
 * Loads the workload (cheap, so bad input fails before SimGrid starts), then
 * the platform, builds the cost model, checks the run's size against the
 * bound (cli_size.c), runs the planner, generates the schedule, replays it on
 * SimGrid and reports.  Every user error is one line on stderr naming the
 * file and key, with an exit code from np_exit_code.  The command line is
 * cli_args.c's, output files and standard output cli_output.c's (cli.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine.h"
#include "memory.h"
#include "np_version.h"
#include "placement.h"
#include "plan_json.h"
#include "planner.h"
#include "report.h"
#include "schedule.h"
#include "trace.h"

/* The plan's prediction is priced with cm from now on (its fingerprint goes
 * into --plan-out).  A saved plan priced with another cost model (another
 * model, platform or option: docs/csv-format.md, predicted_iteration_s)
 * keeps no prediction, and the reader is told why. */
static void check_plan_pricing(const cli *c, const cm_model *cm, plan *pl)
{
    char fp[sizeof pl->cost_model_sha256];
    cm_fingerprint(cm, fp);
    if (c->plan_in && pl->cost_model_sha256[0] && strcmp(fp, pl->cost_model_sha256) != 0 &&
        pl->predicted_iteration_s > 0) {
        if (!c->quiet)
            fprintf(stderr,
                    "simrun: %s: priced for another cost model (the model, the platform, an "
                    "option or the simrun build differs: cost_model_sha256); the replay "
                    "simulates this one, and the plan's prediction, %.3f s, is not shown\n",
                    c->plan_in, pl->predicted_iteration_s);
        pl->predicted_iteration_s = 0;
    }
    memcpy(pl->cost_model_sha256, fp, sizeof fp);
}

/* Simulates one plan and reports it (table row, CSV row, plan file, trace). */
static int simulate_and_report(const cli *c, job *j, plan *pl, np_error *err)
{
    if (j->moe_policy_all == 1) /* MoE hook: --moe-policy all, one row per policy */
        return cli_moe_each_policy(c, j, pl, simulate_and_report, err);
    char path[1024];
    const char *plan_out = output_path(c->plan_out, pl->planner, j->several, path, sizeof path);
    cm_model own = {0};
    const cm_model *cm;
    schedule sc = {0};
    engine_result res = {0};
    int rc = planner_cost_model_for(&j->w, &j->pf.cluster, &j->cm, pl, &own, &cm, err);
    if (!rc)
        check_plan_pricing(c, cm, pl);
    /* one plan: more trace replicas than it has is a mistake; under
     * --planner all each plan's trace keeps at most its own */
    if (!rc && c->trace_path && !j->several && c->trace_max_replicas > pl->data_parallel)
        rc = np_error_set(err, NP_EXIT_USAGE, "<command line>", "--trace-replicas", 0,
                          "%d: the plan has %d data-parallel replica%s per stage: expected 1 "
                          "to %d, or all",
                          c->trace_max_replicas, pl->data_parallel,
                          pl->data_parallel == 1 ? "" : "s", pl->data_parallel);
    if (!rc && c->trace_path && !j->several && c->fold_dp_replicas &&
        c->trace_max_replicas > c->fold_dp_replicas)
        rc = np_error_set(err, NP_EXIT_USAGE, "<command line>", "--trace-replicas", 0,
                          "%d: --fold-dp %d simulates %d data-parallel replica%s per stage, "
                          "the others have no timeline: expected 1 to %d, or all",
                          c->trace_max_replicas, c->fold_dp_replicas, c->fold_dp_replicas,
                          c->fold_dp_replicas == 1 ? "" : "s", c->fold_dp_replicas);
    if (!rc)
        rc = sched_build(pl, cm, &sc, err);
    static bool told_p2p; /* once per process, not once per planner */
    if (!rc && cm->overlap_p2p && !cm_async_p2p(cm, pl->num_chunks) && pl->num_stages > 1 &&
        !c->quiet && !told_p2p) {
        told_p2p = true;
        fprintf(stderr, "simrun: note: training.overlap_p2p_comm applies to the interleaved "
                        "schedule only (Megatron-LM turns it off for the others): the sends of "
                        "non-interleaved plans block\n");
    }
    engine_options eo = cli_engine_options(c, j);
    cli_moe_options(c, j, &eo); /* MoE hook */
    eo.check_only = j->check_only != 0;
    cli_progress progress;
    if (!rc && !j->check_only)
        cli_progress_attach(c, j, cm, pl, &progress, &eo);
    if (!rc)
        rc = engine_run(&j->pf, &j->w, cm, pl, &sc, &eo, &res, err);
    cli_progress_clear(c);
    bool report = !rc && !j->check_only; /* a check (--moe-policy all) reports nothing */
    /* the plan only once it has run: a plan the engine refuses (a MoE trace
     * it would not replay, PipeDream with m < p) leaves no file behind */
    if (report && plan_out)
        rc = plan_write_json(plan_out, pl, c->workload_path, err);
    report = !rc && report;
    if (report && c->trace_path) {
        trace_options to;
        trace_init_options(&to);
        to.max_replicas = c->trace_max_replicas;
        if (c->fold_dp_replicas && (to.max_replicas == 0 || to.max_replicas > c->fold_dp_replicas))
            to.max_replicas = c->fold_dp_replicas; /* folded-away replicas have no timeline */
        rc = trace_write_chrome(
            output_path(c->trace_path, pl->planner, j->several, path, sizeof path), &res, pl, &sc,
            &to, err);
    }
    if (!rc && report) {
        report_row row = {.platform = c->platform_path,
                          .workload = c->workload_path,
                          .w = &j->w,
                          .pl = pl,
                          .cm = cm,
                          .r = &res,
                          .capacity_bytes = j->pf.cluster.hbm_bytes,
                          .num_npus = j->pf.num_npus,
                          .overrides = j->overrides,
                          .run_id = j->run_id,
                          .eo = &eo,
                          .shifted_recompute = c->shifted_recompute,
                          .plan_file = c->plan_in,
                          .plan_sha256 = j->plan_sha256,
                          .cfg = j->cfg,
                          .simulator_version = np_version(),
                          .moe_trace = j->moe_trace_path,
                          .moe_trace_sha256 = j->moe_trace_path ? j->moe_trace_sha256 : NULL,
                          .moe_trace_step = j->moe_trace_step,
                          .ignore_memory = c->ignore_memory};
        if (c->csv_path)
            rc = report_csv_append(c->csv_path, &row, err);
        if (!j->baseline_iteration_s) {
            j->baseline_iteration_s = res.iteration_s;
            if (j->several && strcmp(pl->planner, "megatron") != 0 && !c->quiet)
                fprintf(stderr, "simrun: note: megatron has no row; speed-up is relative to %s's\n",
                        pl->planner);
        }
        if (!c->quiet) {
            if (j->rows++ == 0) {
                report_print_header(stdout, &row);
                report_print_table_head(stdout, &row);
            }
            report_print_table_row(stdout, &row, j->baseline_iteration_s);
            if (c->stages)
                report_print_stages(stdout, &row);
            if (c->memory)
                cli_print_memory(stdout, &row);
            flush_stdout();
        }
    }
    engine_result_free(&res);
    sched_free(&sc);
    if (cm == &own)
        cm_free(&own);
    return rc;
}

/* A "does not fit" error re-worded to name the workload: prefix text suffix. */
static void name_workload(const cli *c, np_error *err, const char *key, const char *prefix,
                          const char *suffix)
{
    char text[sizeof err->text];
    snprintf(text, sizeof text, "%s", err->text);
    np_error_set(err, NP_EXIT_NOFIT, c->workload_path, key, 0, "%s%s%s", prefix, text, suffix);
}

/* A finished plan against the device's memory (mem_check_fits() on the
 * plan's own cost model).  A plan whose recompute the user fixed
 * (`waivable`: Megatron's with the workload's recompute, or a shifted plan)
 * may be waived: with --ignore-memory its "does not fit" is a warning, the
 * plan is simulated, and its CSV row's ignore_memory and peak_fraction say
 * so; without, the error says how to simulate it anyway. */
static int check_memory(const cli *c, const job *j, const plan *pl, bool waivable, np_error *err)
{
    int rc = cli_plan_fits(j, pl, err);
    bool waive = waivable && c->ignore_memory;
    if (rc == NP_EXIT_NOFIT && !waive) {
        char prefix[sizeof pl->planner + 16];
        snprintf(prefix, sizeof prefix, "%s%s", pl->planner, pl->planner[0] ? "'s plan: " : "");
        name_workload(c, err, waivable ? "training.recompute_granularity" : "", prefix,
                      waivable ? " (--ignore-memory simulates it anyway)" : "");
        return rc;
    }
    if (rc != NP_EXIT_NOFIT)
        return rc;
    char buf[1400];
    if (!c->quiet)
        fprintf(stderr, "simrun: warning: %s; simulated anyway (--ignore-memory)\n",
                np_error_format(err, buf, sizeof buf));
    np_error_clear(err);
    return 0;
}

/* The memory check of a plan before --shifted-recompute's shift: none when
 * the check is waived and a shift follows (the shift checks the plan that
 * runs, so one warning, not two); else check_memory(). */
static int check_before_shift(const cli *c, const job *j, const plan *pl, bool waivable,
                              np_error *err)
{
    if (waivable && c->ignore_memory && c->shifted_recompute)
        return 0;
    return check_memory(c, j, pl, waivable, err);
}

/* --shifted-recompute (Merak, TPDS'23): the schedules skip recompute for the
 * last p−s micro-batches of stage s (sched_skips_recompute) and the last
 * stage keeps every activation.  The plan must still fit (a decision the
 * user made: --ignore-memory waives it). */
static int shift_recompute(const cli *c, const job *j, plan *pl, np_error *err)
{
    int p = pl->num_stages;
    pl->merak_shifted_recompute = true;
    pl->predicted_iteration_s = 0; /* the planner priced the plan unshifted */
    for (int l = 0; l < pl->num_layers; l++)
        if (plan_stage_of_layer(pl, l, NULL) == p - 1)
            pl->recompute[l] = RECOMPUTE_NONE;
    if (pl->recompute_units)
        for (int l = 0; l < pl->num_layers; l++)
            if (plan_stage_of_layer(pl, l, NULL) == p - 1)
                pl->recompute_units[l] = 0;
    return check_memory(c, j, pl, true, err);
}

static int run_planner(const cli *c, job *j, const planner_desc *pd, np_error *err)
{
    planner_options po;
    planner_init_options(&po, &j->w);
    /* In a comparison every planner picks its own recompute; the Megatron
     * baseline is then the fastest of none, selective and full that fits. */
    if (j->several)
        po.recompute = -1;
    plan pl = {0};
    /* --ignore-memory waives the check of a plan whose recompute the user
     * fixed: Megatron's with the workload's recompute.  Planners that choose
     * it (and the baseline of a comparison) keep to the device: their final
     * check is a safety net for their own search. */
    bool waivable = pd->run == planner_megatron && po.recompute >= 0;
    po.skip_memory_check = true; /* check_before_shift() below */
    int rc = planner_run(pd, &j->cm, &j->pf.cluster, &j->w, &po, &pl, err);
    if (rc == NP_EXIT_NOFIT && strcmp(err->source, c->workload_path) != 0) {
        /* a planner that found nothing that fits names itself, not the workload */
        char prefix[sizeof err->source + sizeof err->key + 4]; /* key: Merak's rule */
        snprintf(prefix, sizeof prefix, "%s: %s%s", err->source, err->key, err->key[0] ? ": " : "");
        name_workload(c, err, "", prefix, "");
    }
    if (!rc)
        rc = check_before_shift(c, j, &pl, waivable, err);
    if (!rc)
        rc = check_plan_size(c, j, &pl, err);
    if (!rc && c->shifted_recompute)
        rc = shift_recompute(c, j, &pl, err);
    if (!rc)
        rc = simulate_and_report(c, j, &pl, err);
    plan_free(&pl);
    return rc;
}

/* --planner all: every planner on the same platform; one that fails (does
 * not fit, does not apply to this model) is reported and the others go on. */
static int run_all_planners(const cli *c, job *j, np_error *err)
{
    int n, first_rc = 0, successes = 0;
    const planner_desc *all = planner_all(&n);
    j->several = 1;
    for (int i = 0; i < n; i++) {
        np_error one;
        np_error_clear(&one);
        cli_progress_say(c, "simrun: planner %s…", all[i].name);
        int rc = run_planner(c, j, &all[i], &one);
        cli_progress_clear(c);
        if (rc == 0) {
            successes++;
            continue;
        }
        if (rc == NP_EXIT_INTERNAL) { /* SimGrid's state is lost: stop here */
            *err = one;
            return rc;
        }
        char buf[1400];
        if (!c->quiet) /* --quiet: errors only, and a planner that does not apply is not one */
            fprintf(stderr, "simrun: planner %s: %s\n", all[i].name,
                    np_error_format(&one, buf, sizeof buf));
        if (!first_rc) {
            first_rc = rc;
            *err = one;
        }
    }
    if (successes)
        return 0;
    return first_rc;
}

/* The channels of the engine's data-parallel ring at the run's own sizes
 * (cl_cluster.dp_ring_local): 1 for the step ring, else ring-flow's
 * replicas per server under the run's rank order (collective.h). */
static int dp_ring_local(const cli *c, const int sizes[PLACE_DIMS], int npus_per_node)
{
    if (c->engine.dp_algorithm == COLL_RING)
        return 1;
    return placement_dp_ring_local(&c->engine.placement, sizes, 0, npus_per_node);
}

static int load_inputs(cli *c, job *j, np_error *err)
{
    /* --schedule X is the override schedule="X", applied with the others so
     * that the loader checks it together with them (e.g. interleaved and
     * --set virtual_pipeline_model_parallel_size=2). */
    const char *overrides[MAX_OVERRIDES + 1];
    char schedule_override[80];
    int n = 0;
    int rc = cli_check_twin_keys(c, err);
    if (rc)
        return rc;
    if (c->schedule) {
        if (wl_schedule_by_name(c->schedule) < 0) {
            char names[160] = "";
            for (int k = 0; k < SCHED_COUNT; k++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "",
                         wl_schedule_name((schedule_kind)k));
            return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--schedule", 0,
                                "unknown schedule '%s', expected one of: %s", c->schedule, names);
        }
        snprintf(schedule_override, sizeof schedule_override, "schedule=\"%s\"", c->schedule);
        overrides[n++] = schedule_override;
    }
    for (int i = 0; i < c->num_overrides; i++)
        overrides[n++] = c->overrides[i];
    rc = wl_load(c->workload_path, overrides, n, &j->w, err);
    if (!rc)
        rc = cli_moe_load(c, j, err); /* MoE hook: --moe-trace */
    if (rc)
        return rc;
    const char *name = c->planner ? c->planner : j->w.planner;
    j->planner = cli_planner_name(name); /* the canonical name, whatever its case */
    if (!c->plan_in && !j->planner) {
        char names[256];
        bool set = !c->planner && cli_set_on_command_line(c, "planner"); /* --set planner=... */
        return np_error_set(err, c->planner ? NP_EXIT_USAGE : NP_EXIT_INPUT,
                            c->planner || set ? "<command line>" : c->workload_path,
                            c->planner ? "--planner" : "planner", 0,
                            "unknown planner '%s', expected one of: %s, all", name,
                            cli_planner_list(names, sizeof names));
    }
    bool all = !c->plan_in && strcmp(j->planner, "all") == 0;
    if (c->run_id && all)
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--run-id", 0,
                            "--run-id names one row, --planner all writes one per planner: run "
                            "each planner with its own id");
    if ((rc = check_outputs(c, j->moe_trace_path, all, err)))
        return rc;
    if ((rc = engine_simgrid_init(&c->simgrid_argc, c->simgrid_argv, err)))
        return rc;
    platform_limits lim;
    platform_init_limits(&lim);
    if (c->allow_large)
        lim.max_elements = INFINITY;       /* --allow-large lifts the platform's bound too */
    lim.tune_solver = !c->cfg_sets_solver; /* the user's mode wins over the fabric's */
    if ((rc = platform_load_with(c->platform_path, &lim, &j->pf, err)))
        return rc;
    if (j->pf.selective_update[0] && !c->quiet)
        fprintf(stderr,
                "simrun: note: %s: SimGrid's selective max-min update on this %s (the full "
                "solve is many times slower at this size); it can differ from the full solve "
                "by a few percent (docs/design.md): --cfg=network/maxmin-selective-update:0 "
                "solves in full\n",
                c->platform_path, j->pf.selective_update);
    if ((rc = wl_check_cluster(&j->w, j->pf.num_npus, err)))
        return rc;
    if (!(j->overrides = join_overrides(c)) || !(j->cfg = cli_join(c->cfg, c->num_cfg)))
        return np_error_set(err, NP_EXIT_INTERNAL, "<command line>", "--set", 0, "out of memory");
    /* A rank order that spreads TP groups over servers: their collectives
     * on the scale-out route (placement.h); the engine checks the two agree. */
    const wl_parallel *wp = &j->w.parallel;
    int sizes[PLACE_DIMS] = {wp->tensor_model_parallel_size,
                             wp->context_parallel_size > 1 ? wp->context_parallel_size : 1,
                             wp->data_parallel_size, wp->pipeline_model_parallel_size};
    placement_split split;
    j->pf.cluster.tp_across_servers = placement_tp_across_servers(
        &c->engine.placement, sizes, j->pf.cluster.npus_per_node, &split);
    j->pf.cluster.dp_ring_local = dp_ring_local(c, sizes, j->pf.cluster.npus_per_node);
    j->pf.cluster.dp_ring_tp = sizes[PLACE_TP];
    coll_algorithm a2a = c->engine.ep_alltoall_algorithm; /* its closed form follows it */
    j->pf.cluster.ep_alltoall = a2a == COLL_PAIRWISE ? CL_A2A_PAIRWISE
                                : a2a == COLL_BRUCK  ? CL_A2A_BRUCK
                                                     : CL_A2A_CONCURRENT;
    if (j->pf.cluster.tp_across_servers && j->w.model.num_experts > 0)
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--placement", 0,
                            "puts the TP group of stage %d, replica %d across servers (NPUs %d "
                            "and %d); with experts that is not modelled (the expert-parallel "
                            "all-to-all assumes TP groups inside servers): give tp first",
                            split.stage, split.replica, split.first, split.rank);
    rc = cm_build(&j->w, &j->pf.cluster, 0, &j->cm, err);
    j->cm.zero_overlap = !rc && c->dp_overlap; /* ZeRO-2/3's collectives overlapped */
    j->cm.dp_bucket_bytes = c->engine.dp_bucket_bytes;
    return rc;
}

/* The cost model of a saved plan's sizes failed (err says why, naming the
 * workload key that refused them, e.g. model.num_attention_heads for a TP
 * that does not divide the heads): the plan file is what is wrong, so the
 * error names it and the plan key whose value the workload refuses.  That
 * key is the first of the plan's sizes that differ from the workload's own
 * which fails on its own (the workload's own sizes built j->cm), or the
 * first that differs when only their combination fails. */
static int blame_plan_sizes(const cli *c, const job *j, const plan *pl, int rc, np_error *err)
{
    const wl_parallel *par = &j->w.parallel;
    struct {
        const char *key;
        int value, own;
    } sizes[] = {{"tensor_parallel", pl->tensor_parallel, par->tensor_model_parallel_size},
                 {"data_parallel", pl->data_parallel, par->data_parallel_size},
                 {"num_stages", pl->num_stages, par->pipeline_model_parallel_size},
                 {"micro_batch_size", pl->micro_batch_size, j->cm.micro_batch_size}};
    enum { NUM_SIZES = sizeof sizes / sizeof sizes[0] };
    int blamed = -1;
    for (int i = 0; i < NUM_SIZES && blamed < 0; i++) {
        if (sizes[i].value == sizes[i].own)
            continue;
        plan one = *pl; /* shallow: only its sizes are read */
        one.tensor_parallel = i == 0 ? pl->tensor_parallel : par->tensor_model_parallel_size;
        one.data_parallel = i == 1 ? pl->data_parallel : par->data_parallel_size;
        one.num_stages = i == 2 ? pl->num_stages : par->pipeline_model_parallel_size;
        one.micro_batch_size = i == 3 ? pl->micro_batch_size : j->cm.micro_batch_size;
        cm_model own;
        const cm_model *cm;
        np_error ignored;
        if (planner_cost_model_for(&j->w, &j->pf.cluster, &j->cm, &one, &own, &cm, &ignored))
            blamed = i;
        if (cm == &own)
            cm_free(&own);
    }
    for (int i = 0; i < NUM_SIZES && blamed < 0; i++)
        if (sizes[i].value != sizes[i].own)
            blamed = i;
    if (blamed < 0)
        return rc; /* the workload's own sizes: its error stands */
    char reason[1400];
    np_error_format(err, reason, sizeof reason);
    return np_error_set(err, rc, c->plan_in, sizes[blamed].key, 0,
                        "%d does not suit the workload (its own value is %d): %s",
                        sizes[blamed].value, sizes[blamed].own, reason);
}

/* A saved plan must train the workload's batch (tokens/s and the CSV come
 * from it), fill the platform, stay within the size bound, suit the workload
 * (blame_plan_sizes), name only recompute units its layers have, and fit in
 * memory under its own cost model. */
static int check_saved_plan(const cli *c, const job *j, plan *pl, np_error *err)
{
    const char *name = cli_planner_name(pl->planner); /* the table's and CSV's planner */
    if (!name || strcmp(name, "all") == 0)
        return np_error_set(err, NP_EXIT_INPUT, c->plan_in, "planner", 0,
                            "\"%s\" is not a planner's name (simrun --help lists them)",
                            pl->planner);
    snprintf(pl->planner, sizeof pl->planner, "%s", name); /* in its own case */
    long samples = (long)pl->num_micro_batches * pl->micro_batch_size;
    if (pl->micro_batch_sizes) {
        samples = 0;
        for (int i = 0; i < pl->num_micro_batches; i++)
            samples += pl->micro_batch_sizes[i];
    }
    if (samples * pl->data_parallel != j->w.training.global_batch_size)
        return np_error_set(err, NP_EXIT_INPUT, c->plan_in, "num_micro_batches", 0,
                            "the plan trains %ld samples per pipeline x %d replicas = %ld per "
                            "iteration, the workload's global_batch_size is %ld",
                            samples, pl->data_parallel, samples * pl->data_parallel,
                            j->w.training.global_batch_size);
    cm_model own;
    const cm_model *cm;
    int rc = planner_cost_model_for(&j->w, &j->pf.cluster, &j->cm, pl, &own, &cm, err);
    if (rc) {
        if (cm == &own)
            cm_free(&own);
        return blame_plan_sizes(c, j, pl, rc, err);
    }
    long npus = (long)pl->tensor_parallel * pl->num_stages * pl->data_parallel;
    if (npus != j->pf.num_npus) /* the workload's own sizes fill the platform */
        rc = np_error_set(
            err, NP_EXIT_INPUT, c->plan_in,
            pl->tensor_parallel != j->w.parallel.tensor_model_parallel_size ? "tensor_parallel"
            : pl->data_parallel != j->w.parallel.data_parallel_size         ? "data_parallel"
                                                                            : "num_stages",
            0,
            "the plan needs tensor_parallel x num_stages x data_parallel = %d x %d x %d = %ld "
            "NPUs, %s has %d",
            pl->tensor_parallel, pl->num_stages, pl->data_parallel, npus, c->platform_path,
            j->pf.num_npus);
    if (!rc)
        rc = check_plan_size(c, j, pl, err);
    for (int l = 0; !rc && pl->recompute_units && l < pl->num_layers; l++)
        if (pl->recompute_units[l] >> cm->layers[l].num_units)
            rc = np_error_set(err, NP_EXIT_INPUT, c->plan_in, "recompute_units", 0,
                              "layer %d (%s) has %d recomputable units, the mask 0x%x names "
                              "others",
                              l, cm->layers[l].name, cm->layers[l].num_units,
                              pl->recompute_units[l]);
    if (cm == &own)
        cm_free(&own);
    return rc ? rc : check_before_shift(c, j, pl, c->ignore_memory, err);
}

static int run_saved_plan(cli *c, job *j, np_error *err)
{
    plan pl;
    int rc = plan_read_json(c->plan_in, j->cm.num_layers, &pl, err);
    if (rc)
        return rc;
    int e = np_sha256_file(c->plan_in, j->plan_sha256); /* the CSV's plan_sha256 */
    if (e) {
        plan_free(&pl);
        return np_error_set(err, NP_EXIT_INPUT, c->plan_in, "", 0, "cannot read: %s", strerror(e));
    }
    if (!(rc = cli_check_plan_overrides(c, j, &pl, err)) &&
        !(rc = check_saved_plan(c, j, &pl, err)) &&
        !(rc = c->shifted_recompute ? shift_recompute(c, j, &pl, err) : 0))
        rc = simulate_and_report(c, j, &pl, err);
    plan_free(&pl);
    return rc;
}

static int run_job(cli *c, job *j, np_error *err)
{
    int rc = load_inputs(c, j, err);
    if (rc)
        return rc;
    /* Before the planners: their memory replay alone is proportional to the
     * micro-batches (a saved plan is checked on its own sizes instead). */
    if (!c->plan_in && (rc = check_workload_size(c, j, err)))
        return rc;
    frontier fr;
    if (c->frontier_path && (rc = cli_frontier(c, j, &fr, err)))
        return rc;
    if (c->plan_in)
        rc = run_saved_plan(c, j, err);
    else if (strcmp(j->planner, "all") == 0)
        rc = run_all_planners(c, j, err);
    else
        rc = run_planner(c, j, planner_find(j->planner), err);
    if (c->frontier_path) {
        if (!rc)
            rc = frontier_write_csv(c->frontier_path, &fr, err);
        frontier_free(&fr);
    }
    return rc;
}

#ifdef NPUSIM_SANITIZE
/* Sanitizer builds: a finding ends in SIGABRT (exit 134), which the tests
 * treat as a crash, not in exit 1, the code of a bad command line.
 * detect_leaks is left to ASAN_OPTIONS, which the environment may set (its
 * options override these defaults). */
__attribute__((used, visibility("default"))) const char *__asan_default_options(void)
{
    return "abort_on_error=1:halt_on_error=1";
}

__attribute__((used, visibility("default"))) const char *__ubsan_default_options(void)
{
    return "abort_on_error=1:halt_on_error=1:print_stacktrace=1";
}
#endif

int main(int argc, char **argv)
{
    cli c = {0};
    int rc = parse_args(argc, argv, &c);
    if (rc >= 0) {
        int out = finish_stdout(); /* --help > /dev/full */
        return rc ? rc : out;
    }
    cli_progress_init(&c);
    job j;
    memset(&j, 0, sizeof j);
    if (c.run_id)
        snprintf(j.run_id, sizeof j.run_id, "%s", c.run_id);
    else
        cli_fresh_run_id(j.run_id, sizeof j.run_id);
    np_error err;
    np_error_clear(&err);
    rc = run_job(&c, &j, &err);
    cm_free(&j.cm);
    platform_free(&j.pf);
    wl_free(&j.w);
    moe_trace_free(&j.moe_trace);
    free(j.overrides);
    free(j.cfg);
    rc = rc ? fail(&err) : 0;
    int out = finish_stdout();
    return rc ? rc : out;
}
