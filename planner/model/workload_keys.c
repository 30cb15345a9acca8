/*
 * workload_keys.c -- the key table of workload JSON: every key, its
 * Megatron-LM name, its type, whether it is required, its range, where it is
 * stored and its default; and the names of the enum values (schedules,
 * recompute options, dtypes).
 *
 * One table per JSON object (workload.c explains how the same tables drive
 * reading, error messages and overrides), so a new key is one row here.  The
 * defaults that depend on other keys are filled in workload_checks.c.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "workload_internal.h"

/* ---------------------------------------------------------------- names */

static const char *const schedule_names[SCHED_COUNT] = {
    "gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "pipedream", "pipedream-2bw",
};
static const char *const recompute_names[RECOMPUTE_COUNT] = {"none", "selective", "full"};
static const char *const dtype_names[] = {"bf16", "fp16", "fp32"};
#define DTYPE_COUNT 3
static const char *const state_dtype_names[WL_STATE_DTYPE_COUNT] = {"fp32", "bf16", "fp16", "fp8"};
const char *const wl_moe_dispatcher_names[WL_MOE_DISPATCHER_COUNT] = {"allgather", "alltoall"};
const char *const wl_moe_balancing_names[WL_MOE_BALANCING_COUNT] = {"aux_loss", "seq_aux_loss",
                                                                    "sinkhorn", "none"};
static const char *const fp8_names[WL_FP8_COUNT] = {"none", "e4m3", "hybrid"};
static const char *const sharding_names[WL_SHARD_COUNT] = {"no_shard", "optim", "optim_grads",
                                                           "optim_grads_params"};

/* Enum fields are stored through an int pointer by the generic reader. */
_Static_assert(sizeof(schedule_kind) == sizeof(int), "enum must be int-sized");
_Static_assert(sizeof(recompute_kind) == sizeof(int), "enum must be int-sized");
_Static_assert(sizeof(wl_dtype) == sizeof(int), "enum must be int-sized");
_Static_assert(sizeof(wl_dp_sharding) == sizeof(int), "enum must be int-sized");
_Static_assert(sizeof(wl_state_dtype) == sizeof(int), "enum must be int-sized");

/* Names match without regard to case ("1F1B", "ZB-H1", "Full"): the
 * index of the canonical name, which is what is stored and printed. */
int wl_name_index(const char *const *names, int count, const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < count; i++)
        if (strcasecmp(names[i], name) == 0)
            return i;
    return -1;
}

const char *wl_schedule_name(schedule_kind s)
{
    return (s >= 0 && s < SCHED_COUNT) ? schedule_names[s] : "unknown";
}

int wl_schedule_by_name(const char *name)
{
    return wl_name_index(schedule_names, SCHED_COUNT, name);
}

const char *wl_recompute_name(recompute_kind r)
{
    return (r >= 0 && r < RECOMPUTE_COUNT) ? recompute_names[r] : "unknown";
}

int wl_recompute_by_name(const char *name)
{
    return wl_name_index(recompute_names, RECOMPUTE_COUNT, name);
}

const char *wl_dtype_name(wl_dtype d)
{
    return (d >= 0 && d < DTYPE_COUNT) ? dtype_names[d] : "unknown";
}

const char *wl_state_dtype_name(wl_state_dtype d)
{
    return (d >= 0 && d < WL_STATE_DTYPE_COUNT) ? state_dtype_names[d] : "unknown";
}

double wl_state_dtype_bytes(wl_state_dtype d)
{
    static const double bytes[WL_STATE_DTYPE_COUNT] = {4.0, 2.0, 2.0, 1.0};
    return (d >= 0 && d < WL_STATE_DTYPE_COUNT) ? bytes[d] : 0.0;
}

const char *wl_sharding_name(wl_dp_sharding s)
{
    return (s >= 0 && s < WL_SHARD_COUNT) ? sharding_names[s] : "unknown";
}

double wl_dtype_bytes(wl_dtype d)
{
    switch (d) {
    case WL_BF16:
    case WL_FP16:
        return 2.0;
    case WL_FP32:
        return 4.0;
    }
    return 0.0;
}

/* ------------------------------------------------------------- defaults */

/* The defaults that do not depend on other keys: Megatron-LM's. */
void wl_set_defaults(wl_workload *w)
{
    w->training.micro_batch_size = 1;
    w->training.params_dtype = WL_BF16;
    w->training.recompute_granularity = RECOMPUTE_NONE;
    w->training.scatter_gather_tensors_in_pipeline = true;
    w->training.data_parallel_sharding_strategy = WL_SHARD_UNSET; /* workload_checks.c */
    w->training.store_param_remainders = true;                    /* Megatron's OptimizerConfig */
    w->model.attention_dropout = 0.1;
    w->model.hidden_dropout = 0.1;
    w->parallel.virtual_pipeline_model_parallel_size = 1;
    w->parallel.expert_model_parallel_size = 1;
    w->model.moe_layer_freq.every = 1; /* Megatron's default: every layer */
    w->parallel.context_parallel_size = 1;
    w->schedule = SCHED_1F1B;
    snprintf(w->planner, sizeof w->planner, "megatron");
}

/* --------------------------------------------------------------- schema */

#define W_OFF(f) offsetof(wl_workload, f)
#define W_SIZE(f) sizeof(((wl_workload *)0)->f)
#define L_OFF(f) offsetof(wl_layer_spec, f)
#define L_SIZE(f) sizeof(((wl_layer_spec *)0)->f)

/* Table entries: a scalar, a string of capacity sz, an enum, a nested object. */
// clang-format off
#define SCALAR(n, t, nd, off) {.name = n, .type = t, .need = nd, .offset = off}
#define STRING(n, t, nd, off, sz) {.name = n, .type = t, .need = nd, .offset = off, .size = sz}
#define ENUM(n, nd, off, list, count)                                              \
    {.name = n, .type = KEY_ENUM, .need = nd, .offset = off, .names = list, .num_names = count}
#define RANGED(n, t, nd, off, hi, u) {.name = n, .type = t, .need = nd, .offset = off, .max = hi, .unit = u}
#define NESTED(n, t, nd, table) {.name = n, .type = t, .need = nd, .children = table}
#define END {.name = NULL}
// clang-format on

const key_spec wl_time_table_keys[] = {
    RANGED("batch", KEY_NUMBER_LIST, REQUIRED, L_OFF(time_batch), 65536,
           "samples"), /* first: see read_time_table() */
    RANGED("forward_s", KEY_NUMBER_LIST, REQUIRED, L_OFF(time_forward_s), 1e5, "s"),
    RANGED("backward_s", KEY_NUMBER_LIST, REQUIRED, L_OFF(time_backward_s), 1e5, "s"),
    END,
};

const key_spec wl_layer_keys[] = {
    STRING("name", KEY_NAME, REQUIRED, L_OFF(name), L_SIZE(name)),
    RANGED("forward_flops", KEY_NONNEGATIVE_NUMBER, REQUIRED, L_OFF(forward_flops), 1e18,
           "FLOP per sample"),
    RANGED("params", KEY_NONNEGATIVE_NUMBER, REQUIRED, L_OFF(params), 1e13, "parameters"),
    RANGED("activation_bytes", KEY_NONNEGATIVE_NUMBER, REQUIRED, L_OFF(activation_bytes), 1e12,
           "bytes per sample"),
    RANGED("output_bytes", KEY_NONNEGATIVE_NUMBER, REQUIRED, L_OFF(output_bytes), 1e12,
           "bytes per sample"),
    NESTED("time_table", KEY_TIME_TABLE, OPTIONAL, wl_time_table_keys),
    END,
};

static const key_spec model_keys[] = {
    RANGED("num_layers", KEY_POSITIVE_INT, REQUIRED_UNLESS_LAYERS, W_OFF(model.num_layers), 10000,
           "layers"),
    RANGED("hidden_size", KEY_POSITIVE_LONG, REQUIRED_UNLESS_LAYERS, W_OFF(model.hidden_size),
           1048576, ""),
    RANGED("ffn_hidden_size", KEY_POSITIVE_LONG, OPTIONAL, W_OFF(model.ffn_hidden_size), 4194304,
           ""),
    RANGED("num_attention_heads", KEY_POSITIVE_INT, REQUIRED_UNLESS_LAYERS,
           W_OFF(model.num_attention_heads), 65536, ""),
    RANGED("num_query_groups", KEY_POSITIVE_INT, OPTIONAL, W_OFF(model.num_query_groups), 65536,
           ""),
    RANGED("seq_length", KEY_POSITIVE_LONG, REQUIRED_UNLESS_LAYERS, W_OFF(model.seq_length),
           16777216, "tokens"),
    RANGED("vocab_size", KEY_POSITIVE_LONG, REQUIRED_UNLESS_LAYERS, W_OFF(model.vocab_size),
           16777216, "tokens"),
    SCALAR("swiglu", KEY_BOOL, OPTIONAL, W_OFF(model.swiglu)),
    SCALAR("untie_embeddings_and_output_weights", KEY_BOOL, OPTIONAL,
           W_OFF(model.untie_embeddings_and_output_weights)),
    RANGED("num_experts", KEY_NONNEGATIVE_INT, OPTIONAL, W_OFF(model.num_experts), 65536, ""),
    RANGED("moe_router_topk", KEY_POSITIVE_INT, OPTIONAL, W_OFF(model.moe_router_topk), 65536, ""),
    RANGED("moe_ffn_hidden_size", KEY_POSITIVE_LONG, OPTIONAL, W_OFF(model.moe_ffn_hidden_size),
           4194304, ""),
    RANGED("moe_expert_capacity_factor", KEY_NONNEGATIVE_NUMBER, OPTIONAL,
           W_OFF(model.moe_expert_capacity_factor), 1000, ""),
    STRING("moe_token_trace", KEY_STRING, OPTIONAL, W_OFF(model.moe_token_trace),
           W_SIZE(model.moe_token_trace)),
    RANGED("moe_shared_expert_intermediate_size", KEY_POSITIVE_LONG, OPTIONAL,
           W_OFF(model.moe_shared_expert_intermediate_size), 4194304, ""),
    SCALAR("moe_layer_freq", KEY_MOE_LAYER_FREQ, OPTIONAL, W_OFF(model.moe_layer_freq)),
    SCALAR("moe_pad_expert_input_to_capacity", KEY_BOOL, OPTIONAL,
           W_OFF(model.moe_pad_expert_input_to_capacity)),
    ENUM("moe_token_dispatcher_type", OPTIONAL, W_OFF(model.moe_token_dispatcher_type),
         wl_moe_dispatcher_names, WL_MOE_DISPATCHER_COUNT),
    ENUM("moe_router_load_balancing_type", OPTIONAL, W_OFF(model.moe_router_load_balancing_type),
         wl_moe_balancing_names, WL_MOE_BALANCING_COUNT),
    SCALAR("overlap_moe_expert_parallel_comm", KEY_BOOL, OPTIONAL,
           W_OFF(model.overlap_moe_expert_parallel_comm)),
    /* multi-head latent attention: workload_moe.c checks them, moe_params.c counts them */
    SCALAR("multi_latent_attention", KEY_BOOL, OPTIONAL, W_OFF(model.multi_latent_attention)),
    RANGED("q_lora_rank", KEY_NONNEGATIVE_INT, OPTIONAL, W_OFF(model.q_lora_rank), 1048576, ""),
    RANGED("kv_lora_rank", KEY_POSITIVE_INT, OPTIONAL, W_OFF(model.kv_lora_rank), 1048576, ""),
    RANGED("qk_head_dim", KEY_POSITIVE_INT, OPTIONAL, W_OFF(model.qk_head_dim), 65536, ""),
    RANGED("qk_pos_emb_head_dim", KEY_POSITIVE_INT, OPTIONAL, W_OFF(model.qk_pos_emb_head_dim),
           65536, ""),
    RANGED("v_head_dim", KEY_POSITIVE_INT, OPTIONAL, W_OFF(model.v_head_dim), 65536, ""),
    /* KEY_PROBABILITY carries its own range, [0, 1). */
    SCALAR("attention_dropout", KEY_PROBABILITY, OPTIONAL, W_OFF(model.attention_dropout)),
    SCALAR("hidden_dropout", KEY_PROBABILITY, OPTIONAL, W_OFF(model.hidden_dropout)),
    NESTED("layers", KEY_LAYERS, OPTIONAL, wl_layer_keys),
    END,
};

static const key_spec training_keys[] = {
    RANGED("global_batch_size", KEY_POSITIVE_LONG, REQUIRED, W_OFF(training.global_batch_size),
           1073741824, "sequences"),
    RANGED("micro_batch_size", KEY_POSITIVE_INT, OPTIONAL, W_OFF(training.micro_batch_size), 65536,
           "sequences"),
    ENUM("params_dtype", OPTIONAL, W_OFF(training.params_dtype), dtype_names, DTYPE_COUNT),
    SCALAR("use_distributed_optimizer", KEY_BOOL, OPTIONAL,
           W_OFF(training.use_distributed_optimizer)),
    SCALAR("sequence_parallel", KEY_BOOL, OPTIONAL, W_OFF(training.sequence_parallel)),
    ENUM("recompute_granularity", OPTIONAL, W_OFF(training.recompute_granularity), recompute_names,
         RECOMPUTE_COUNT),
    SCALAR("use_flash_attn", KEY_BOOL, OPTIONAL, W_OFF(training.use_flash_attn)),
    SCALAR("scatter_gather_tensors_in_pipeline", KEY_BOOL, OPTIONAL,
           W_OFF(training.scatter_gather_tensors_in_pipeline)),
    SCALAR("tp_comm_overlap", KEY_BOOL, OPTIONAL, W_OFF(training.tp_comm_overlap)),
    SCALAR("overlap_p2p_comm", KEY_BOOL, OPTIONAL, W_OFF(training.overlap_p2p_comm)),
    ENUM("data_parallel_sharding_strategy", OPTIONAL,
         W_OFF(training.data_parallel_sharding_strategy), sharding_names, WL_SHARD_COUNT),
    SCALAR("grad_reduce_in_bf16", KEY_BOOL, OPTIONAL, W_OFF(training.grad_reduce_in_bf16)),
    SCALAR("use_precision_aware_optimizer", KEY_BOOL, OPTIONAL,
           W_OFF(training.use_precision_aware_optimizer)),
    /* all four take every name; workload_checks.c narrows the first two as
     * Megatron's argparse choices do */
    ENUM("main_grads_dtype", OPTIONAL, W_OFF(training.main_grads_dtype), state_dtype_names,
         WL_STATE_DTYPE_COUNT),
    ENUM("main_params_dtype", OPTIONAL, W_OFF(training.main_params_dtype), state_dtype_names,
         WL_STATE_DTYPE_COUNT),
    ENUM("exp_avg_dtype", OPTIONAL, W_OFF(training.exp_avg_dtype), state_dtype_names,
         WL_STATE_DTYPE_COUNT),
    ENUM("exp_avg_sq_dtype", OPTIONAL, W_OFF(training.exp_avg_sq_dtype), state_dtype_names,
         WL_STATE_DTYPE_COUNT),
    SCALAR("store_param_remainders", KEY_BOOL, OPTIONAL, W_OFF(training.store_param_remainders)),
    ENUM("fp8_format", OPTIONAL, W_OFF(training.fp8_format), fp8_names, WL_FP8_COUNT),
    SCALAR("fp8_param_gather", KEY_BOOL, OPTIONAL, W_OFF(training.fp8_param_gather)),
    END,
};

static const key_spec parallel_keys[] = {
    RANGED("tensor_model_parallel_size", KEY_POSITIVE_INT, REQUIRED,
           W_OFF(parallel.tensor_model_parallel_size), 1048576, "NPUs"),
    RANGED("pipeline_model_parallel_size", KEY_POSITIVE_INT, REQUIRED,
           W_OFF(parallel.pipeline_model_parallel_size), 1048576, "stages"),
    RANGED("data_parallel_size", KEY_POSITIVE_INT, REQUIRED, W_OFF(parallel.data_parallel_size),
           1048576, "replicas"),
    RANGED("virtual_pipeline_model_parallel_size", KEY_POSITIVE_INT, OPTIONAL,
           W_OFF(parallel.virtual_pipeline_model_parallel_size), 1024, "chunks"),
    RANGED("expert_model_parallel_size", KEY_POSITIVE_INT, OPTIONAL,
           W_OFF(parallel.expert_model_parallel_size), 1048576, "NPUs"),
    RANGED("expert_tensor_parallel_size", KEY_POSITIVE_INT, OPTIONAL,
           W_OFF(parallel.expert_tensor_parallel_size), 1048576, "NPUs"),
    RANGED("context_parallel_size", KEY_POSITIVE_INT, OPTIONAL,
           W_OFF(parallel.context_parallel_size), 1048576, "NPUs"),
    RANGED("decoder_first_pipeline_num_layers", KEY_NONNEGATIVE_INT, OPTIONAL,
           W_OFF(parallel.decoder_first_pipeline_num_layers), 10000, "layers"),
    RANGED("decoder_last_pipeline_num_layers", KEY_NONNEGATIVE_INT, OPTIONAL,
           W_OFF(parallel.decoder_last_pipeline_num_layers), 10000, "layers"),
    SCALAR("account_for_embedding_in_pipeline_split", KEY_BOOL, OPTIONAL,
           W_OFF(parallel.account_for_embedding_in_pipeline_split)),
    SCALAR("account_for_loss_in_pipeline_split", KEY_BOOL, OPTIONAL,
           W_OFF(parallel.account_for_loss_in_pipeline_split)),
    STRING("pipeline_model_parallel_layout", KEY_STRING, OPTIONAL,
           W_OFF(parallel.pipeline_model_parallel_layout),
           W_SIZE(parallel.pipeline_model_parallel_layout)),
    END,
};

const key_spec wl_root_keys[] = {
    STRING("name", KEY_NAME, REQUIRED, W_OFF(name), W_SIZE(name)),
    STRING("description", KEY_STRING, OPTIONAL, 0, 0), /* checked, not stored */
    NESTED("model", KEY_SECTION, REQUIRED, model_keys),
    NESTED("training", KEY_SECTION, REQUIRED, training_keys),
    NESTED("parallel", KEY_SECTION, REQUIRED, parallel_keys),
    ENUM("schedule", OPTIONAL, W_OFF(schedule), schedule_names, SCHED_COUNT),
    STRING("planner", KEY_NAME, OPTIONAL, W_OFF(planner), W_SIZE(planner)),
    END,
};

const key_spec *wl_spec_find(const key_spec *table, const char *name)
{
    for (const key_spec *k = table; k && k->name; k++)
        if (strcmp(k->name, name) == 0)
            return k;
    return NULL;
}

/* "name, model, training, ..." for error messages; a list longer than buf
 * ends in "..." rather than in the middle of a name. */
void wl_spec_list_names(const key_spec *table, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (const key_spec *k = table; k->name; k++) {
        size_t need = strlen(k->name) + (n ? 2 : 0);
        if (n + need + 5 >= size) { /* room for ", ..." and the terminator */
            snprintf(buf + n, size - n, "%s...", n ? ", " : "");
            return;
        }
        n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "", k->name);
    }
}

/* Levenshtein distance of a and b (key names are short: at most 63 bytes
 * are compared). */
static int edit_distance(const char *a, const char *b)
{
    enum { MAX = 64 };
    int la = (int)strnlen(a, MAX - 1), lb = (int)strnlen(b, MAX - 1);
    int row[MAX];
    for (int j = 0; j <= lb; j++)
        row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diagonal = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int above = row[j];
            int best = diagonal + (a[i - 1] != b[j - 1]);
            if (above + 1 < best)
                best = above + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    return row[lb];
}

/* The key of table nearest to an unknown name when it is a likely misspelling
 * (at most 2 edits, or a third of the name's length), else NULL. */
static const char *spec_nearest(const key_spec *table, const char *name)
{
    const char *best = NULL;
    int best_d = 0, limit = (int)strlen(name) / 3;
    if (limit < 2)
        limit = 2;
    for (const key_spec *k = table; k && k->name; k++) {
        int d = edit_distance(name, k->name);
        if (d <= limit && (!best || d < best_d))
            best = k->name, best_d = d;
    }
    return best;
}

void wl_spec_unknown_hint(const key_spec *table, const char *name, const char *where, char *buf,
                          size_t size)
{
    const char *near = spec_nearest(table, name);
    if (near) {
        snprintf(buf, size, "did you mean \"%s\"?", near);
        return;
    }
    char known[640];
    wl_spec_list_names(table, known, sizeof known);
    snprintf(buf, size, "the keys of %s are: %s", where, known);
}

/* What a value of this key must look like, for "expected ..." messages. */
void wl_spec_expected(const key_spec *k, char *buf, size_t size)
{
    switch (k->type) {
    case KEY_POSITIVE_INT:
    case KEY_POSITIVE_LONG:
        snprintf(buf, size, "a positive integer");
        return;
    case KEY_NONNEGATIVE_INT:
        snprintf(buf, size, "a non-negative integer");
        return;
    case KEY_NONNEGATIVE_NUMBER:
        snprintf(buf, size, "a non-negative number");
        return;
    case KEY_PROBABILITY:
        snprintf(buf, size, "a number in [0, 1)");
        return;
    case KEY_BOOL:
        snprintf(buf, size, "true or false");
        return;
    case KEY_STRING:
        snprintf(buf, size, "a string");
        return;
    case KEY_NAME:
        snprintf(buf, size, "a non-empty string");
        return;
    case KEY_SECTION:
    case KEY_TIME_TABLE:
        snprintf(buf, size, "an object");
        return;
    case KEY_LAYERS:
        snprintf(buf, size, "a non-empty array of layer objects");
        return;
    case KEY_NUMBER_LIST:
        snprintf(buf, size, "a non-empty array of non-negative numbers");
        return;
    case KEY_MOE_LAYER_FREQ:
        snprintf(buf, size,
                 "a positive integer, a 0/1 list expression such as "
                 "\"([0]*3+[1]*58)\", or an array of 0 and 1");
        return;
    case KEY_ENUM:
        break;
    }
    size_t n = snprintf(buf, size, "one of");
    for (int i = 0; i < k->num_names && n < size; i++)
        n += snprintf(buf + n, size - n, "%s \"%s\"", i ? "," : "", k->names[i]);
}
