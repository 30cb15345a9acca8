/*
 * cli_plan.c -- a saved plan (--plan) against the command line: the keys a
 * plan fixes (its planner, schedule, parallel sizes, split, recompute,
 * micro-batching and chunks) are replayed as saved, so a --planner,
 * --schedule or --set that disagrees with the plan is refused rather than
 * ignored; one that agrees, such as the command line the plan was made
 * with, is accepted.  And whether a plan fits the device by its own cost
 * model (cli_plan_fits), which simrun's check and --moe-policy all's share.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memory.h"
#include "planner.h"

/* The key of a --set KEY=VALUE, its last dotted part (training.planner:
 * planner), and its length. */
const char *cli_override_key(const char *set, size_t *n)
{
    const char *eq = strchr(set, '='), *key = set;
    size_t len = eq ? (size_t)(eq - set) : strlen(set);
    for (const char *p = set; p < set + len; p++)
        if (*p == '.')
            key = p + 1;
    *n = len - (size_t)(key - set);
    return key;
}

/* The value of the last --set of the bare key `name` in buf[size], without
 * the quotes of a JSON string; NULL when no --set gives it. */
static const char *set_value(const cli *c, const char *name, char *buf, size_t size)
{
    const char *value = NULL;
    for (int i = 0; i < c->num_overrides; i++) {
        size_t n;
        const char *key = cli_override_key(c->overrides[i], &n);
        if (n == strlen(name) && strncmp(key, name, n) == 0)
            value = key + n + (key[n] == '=');
    }
    if (!value)
        return NULL;
    size_t len = strlen(value);
    if (len >= 2 && value[0] == '"' && value[len - 1] == '"')
        value++, len -= 2;
    snprintf(buf, size, "%.*s", (int)len, value);
    return buf;
}

/* Whether a --set gave the bare key `name`. */
bool cli_set_on_command_line(const cli *c, const char *name)
{
    char value[2];
    return set_value(c, name, value, sizeof value) != NULL;
}

int cli_check_twin_keys(const cli *c, np_error *err)
{
    /* Two spellings of one key that disagree would leave the winner to the
     * order the loader applies them in, not to the order they were written. */
    char value[80];
    const char *set;
    if (c->schedule && (set = set_value(c, "schedule", value, sizeof value)) &&
        (wl_schedule_by_name(set) != wl_schedule_by_name(c->schedule) ||
         wl_schedule_by_name(set) < 0))
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--schedule", 0,
                            "--schedule %s and --set schedule=%s disagree on the workload's "
                            "\"schedule\": give one of them",
                            c->schedule, set);
    if (c->planner && (set = set_value(c, "planner", value, sizeof value)) &&
        (!cli_planner_name(set) || !cli_planner_name(c->planner) ||
         strcmp(cli_planner_name(set), cli_planner_name(c->planner)) != 0))
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--planner", 0,
                            "--planner %s and --set planner=%s disagree on the workload's "
                            "\"planner\": give one of them",
                            c->planner, set);
    return 0;
}

/* What a saved plan fixes: its schedule, chunks, split, parallel sizes,
 * recompute, micro-batching and planner are replayed as saved.  --schedule or a --set
 * of one of these keys that disagrees with the plan is refused (the replay
 * would ignore it while the CSV's overrides column named it); one that
 * agrees, such as the command line the plan was made with, is accepted. */
enum {
    FIX_SCHEDULE,
    FIX_RECOMPUTE,
    FIX_MICRO_BATCH,
    FIX_CHUNKS,
    FIX_SPLIT,
    FIX_TP,
    FIX_PP,
    FIX_DP,
    FIX_PLANNER,
};

static const struct {
    const char *key;
    int what;
} plan_fixed[] = {
    {"schedule", FIX_SCHEDULE},
    {"recompute_granularity", FIX_RECOMPUTE},
    {"micro_batch_size", FIX_MICRO_BATCH},
    {"virtual_pipeline_model_parallel_size", FIX_CHUNKS},
    {"decoder_first_pipeline_num_layers", FIX_SPLIT},
    {"decoder_last_pipeline_num_layers", FIX_SPLIT},
    {"account_for_embedding_in_pipeline_split", FIX_SPLIT},
    {"account_for_loss_in_pipeline_split", FIX_SPLIT},
    {"pipeline_model_parallel_layout", FIX_SPLIT},
    {"tensor_model_parallel_size", FIX_TP},
    {"pipeline_model_parallel_size", FIX_PP},
    {"data_parallel_size", FIX_DP},
    {"planner", FIX_PLANNER},
};

/* Whether the loaded workload (its file and the overrides) agrees with the
 * plan on what `what` fixes. */
static bool plan_agrees(const job *j, const plan *pl, int what)
{
    const wl_workload *w = &j->w;
    switch (what) {
    case FIX_SCHEDULE:
        return w->schedule == pl->schedule;
    case FIX_RECOMPUTE: /* Megatron's: the option on every decoder layer */
        if (pl->recompute_units)
            return false;
        for (int l = 0; l < pl->num_layers && l < j->cm.num_layers; l++)
            if (j->cm.layers[l].kind == CM_DECODER &&
                pl->recompute[l] != w->training.recompute_granularity)
                return false;
        return true;
    case FIX_MICRO_BATCH:
        return !pl->micro_batch_sizes && w->training.micro_batch_size == pl->micro_batch_size;
    case FIX_CHUNKS: {
        int v = w->parallel.virtual_pipeline_model_parallel_size;
        return (v > 1 ? v : 1) == pl->num_chunks;
    }
    case FIX_SPLIT: { /* Megatron's split of these keys is the plan's */
        plan split;
        np_error ignored;
        if (plan_init(&split, pl->num_stages, pl->num_chunks, pl->num_layers))
            return false;
        bool same = planner_split_partition(&j->cm, w, &split, &ignored) == 0;
        for (int k = 0; same && k <= pl->num_stages * pl->num_chunks; k++)
            same = split.chunk_start[k] == pl->chunk_start[k];
        plan_free(&split);
        return same;
    }
    case FIX_TP:
        return w->parallel.tensor_model_parallel_size == pl->tensor_parallel;
    case FIX_PP:
        return w->parallel.pipeline_model_parallel_size == pl->num_stages;
    case FIX_DP:
        return w->parallel.data_parallel_size == pl->data_parallel;
    default: { /* FIX_PLANNER */
        const char *a = cli_planner_name(w->planner), *b = cli_planner_name(pl->planner);
        return a && b && strcmp(a, b) == 0;
    }
    }
}

int cli_check_plan_overrides(const cli *c, const job *j, const plan *pl, np_error *err)
{
    if (c->schedule && wl_schedule_by_name(c->schedule) != (int)pl->schedule)
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--schedule", 0,
                            "%s: the plan %s is replayed with its own schedule, %s; drop "
                            "--schedule or plan again (--plan-out)",
                            c->schedule, c->plan_in, wl_schedule_name(pl->schedule));
    const char *planner = c->planner ? cli_planner_name(c->planner) : NULL;
    const char *made_by = cli_planner_name(pl->planner); /* NULL: check_saved_plan says */
    if (c->planner && made_by && (!planner || strcmp(planner, made_by) != 0))
        return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--planner", 0,
                            "%s: the plan %s was made by %s and is replayed as saved, no "
                            "planner runs; drop --planner, or plan again with it (--plan-out)",
                            c->planner, c->plan_in, pl->planner);
    for (int i = 0; i < c->num_overrides; i++) {
        const char *set = c->overrides[i];
        size_t n;
        const char *key = cli_override_key(set, &n);
        for (size_t k = 0; k < sizeof plan_fixed / sizeof plan_fixed[0]; k++)
            if (strlen(plan_fixed[k].key) == n && strncmp(key, plan_fixed[k].key, n) == 0 &&
                !plan_agrees(j, pl, plan_fixed[k].what))
                return np_error_set(err, NP_EXIT_USAGE, "<command line>", "--set", 0,
                                    "%s: the plan %s was made with another %s and is replayed "
                                    "as saved; drop the --set, or plan again with it "
                                    "(--plan-out)",
                                    set, c->plan_in, plan_fixed[k].key);
    }
    return 0;
}

int cli_plan_fits(const job *j, const plan *pl, np_error *err)
{
    cm_model own;
    const cm_model *cm;
    int rc = planner_cost_model_for(&j->w, &j->pf.cluster, &j->cm, pl, &own, &cm, err);
    if (!rc)
        rc = mem_check_fits(cm, pl, err);
    if (cm == &own)
        cm_free(&own);
    return rc;
}
