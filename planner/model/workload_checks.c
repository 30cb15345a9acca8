/*
 * workload_checks.c -- pass 4 of the loader and the cluster check: what a
 * workload means beyond its single keys.
 *
 * Defaults that depend on other keys are filled first (ffn_hidden_size from
 * hidden_size and swiglu, num_query_groups from the heads, ...); then the
 * impossible combinations are rejected as Megatron-LM's own argument checks
 * reject them: attention heads against groups and tensor parallelism, the
 * batch against micro-batch and data parallelism, the pipeline against the
 * layers and the schedule, experts against expert and data parallelism.
 * wl_check_cluster() holds the job against a platform (tp·cp·dp·pp).  A new
 * rule between keys is one more check_*() here.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "pipeline_split.h"
#include "workload_internal.h"

int wl_num_micro_batches(const wl_workload *w)
{
    long per_step = (long)w->training.micro_batch_size * w->parallel.data_parallel_size;
    if (per_step <= 0)
        return 0;
    return (int)(w->training.global_batch_size / per_step);
}

/* ------------------------------------------------- defaults and combinations */

/* Megatron's rules for the gradient and optimizer dtypes (arguments.py,
 * OptimizerConfig.__post_init__), and the one the simulator adds: the
 * precision-aware optimizer is modelled for bf16 training. */
static int check_precision(const load_ctx *c, const wl_training *t)
{
    if (t->fp8_format != WL_FP8_NONE && t->params_dtype == WL_FP32)
        return wl_fail(c, "training.fp8_format",
                       "needs training.params_dtype \"bf16\" or \"fp16\" (Megatron runs FP8 "
                       "GEMMs in bf16 or fp16 training), got \"fp32\"");
    if (t->fp8_param_gather && t->fp8_format == WL_FP8_NONE)
        return wl_fail(c, "training.fp8_param_gather",
                       "needs training.fp8_format (FP8 parameters "
                       "are FP8 training's)");
    if (t->fp8_param_gather && !t->use_distributed_optimizer)
        return wl_fail(c, "training.fp8_param_gather",
                       "needs training.use_distributed_optimizer (or a "
                       "training.data_parallel_sharding_strategy other than \"no_shard\"), as "
                       "Megatron asserts: its gather is the distributed optimizer's");
    if (t->grad_reduce_in_bf16 && t->params_dtype != WL_BF16)
        return wl_fail(c, "training.grad_reduce_in_bf16",
                       "needs training.params_dtype \"bf16\", got \"%s\" (fp16 gradients are "
                       "reduced in fp16 already, fp32 ones in fp32)",
                       wl_dtype_name(t->params_dtype));
    if (t->main_grads_dtype != WL_STATE_FP32 && t->main_grads_dtype != WL_STATE_BF16)
        return wl_fail(c, "training.main_grads_dtype",
                       "expected \"fp32\" or \"bf16\" (Megatron's choices), got \"%s\"",
                       wl_state_dtype_name(t->main_grads_dtype));
    if (t->main_params_dtype != WL_STATE_FP32 && t->main_params_dtype != WL_STATE_FP16)
        return wl_fail(c, "training.main_params_dtype",
                       "expected \"fp32\" or \"fp16\" (Megatron's choices), got \"%s\"",
                       wl_state_dtype_name(t->main_params_dtype));
    const struct {
        const char *key;
        wl_state_dtype d;
    } dtypes[] = {{"training.main_grads_dtype", t->main_grads_dtype},
                  {"training.main_params_dtype", t->main_params_dtype},
                  {"training.exp_avg_dtype", t->exp_avg_dtype},
                  {"training.exp_avg_sq_dtype", t->exp_avg_sq_dtype}};
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].d != WL_STATE_FP32 && !t->use_precision_aware_optimizer)
            return wl_fail(c, dtypes[i].key,
                           "\"%s\" needs training.use_precision_aware_optimizer (Megatron: "
                           "only \"fp32\" without it)",
                           wl_state_dtype_name(dtypes[i].d));
    if (!t->use_precision_aware_optimizer)
        return 0;
    if (!t->use_distributed_optimizer)
        return wl_fail(c, "training.use_precision_aware_optimizer",
                       "needs training.use_distributed_optimizer (or a "
                       "training.data_parallel_sharding_strategy other than \"no_shard\"), as "
                       "Megatron's OptimizerConfig asserts");
    if (t->params_dtype != WL_BF16)
        return wl_fail(c, "training.use_precision_aware_optimizer",
                       "is modelled for training.params_dtype \"bf16\" only, got \"%s\"",
                       wl_dtype_name(t->params_dtype));
    return 0;
}

/* Defaults that depend on other keys; 0 marks a key the file did not give. */
int wl_fill_derived_defaults(const load_ctx *c, wl_workload *w)
{
    wl_model *m = &w->model;
    if (m->num_layer_specs > 0) {
        if (m->num_layers == 0)
            m->num_layers = m->num_layer_specs;
        else if (m->num_layers != m->num_layer_specs)
            return wl_fail(c, "model.num_layers",
                           "expected the number of entries of model.layers (%d), got %d",
                           m->num_layer_specs, m->num_layers);
        if (m->seq_length == 0)
            m->seq_length = 1;
    }
    if (m->ffn_hidden_size == 0 && m->hidden_size > 0)
        /* Megatron: int((4h·2/3) / 64)·64 for SwiGLU, which is (h/24)·64. */
        m->ffn_hidden_size = m->swiglu ? (m->hidden_size / 24) * 64 : 4 * m->hidden_size;
    if (m->num_query_groups == 0)
        m->num_query_groups = m->num_attention_heads;
    if (m->moe_router_topk == 0 && m->num_experts > 0)
        m->moe_router_topk = 2;
    if (m->moe_ffn_hidden_size == 0)
        m->moe_ffn_hidden_size = m->ffn_hidden_size;
    int moe_rc = wl_moe_fill_defaults(c, w); /* MoE hook: workload_moe.c */
    if (moe_rc)
        return moe_rc;
    if (w->parallel.tensor_model_parallel_size == 1)
        w->training.sequence_parallel = false; /* as Megatron does */
    wl_training *t = &w->training;
    if (t->tp_comm_overlap && !t->sequence_parallel)
        return wl_fail(c, "training.tp_comm_overlap",
                       "needs training.sequence_parallel, as in Megatron-Core (it overlaps the "
                       "sequence-parallel all-gathers and reduce-scatters; with "
                       "tensor_model_parallel_size 1 there is none)");
    if (t->data_parallel_sharding_strategy == WL_SHARD_UNSET)
        /* The distributed optimizer is ZeRO-1: it shards the optimizer state. */
        t->data_parallel_sharding_strategy =
            t->use_distributed_optimizer ? WL_SHARD_OPTIM : WL_SHARD_NO_SHARD;
    else if (t->use_distributed_optimizer &&
             t->data_parallel_sharding_strategy == WL_SHARD_NO_SHARD)
        return wl_fail(c, "training.data_parallel_sharding_strategy",
                       "\"no_shard\" contradicts training.use_distributed_optimizer, which "
                       "shards the optimizer state (\"optim\")");
    /* Every strategy but no_shard shards the optimizer state: the
     * distributed optimizer, which the rest of the model reads. */
    if (t->data_parallel_sharding_strategy >= WL_SHARD_OPTIM)
        t->use_distributed_optimizer = true;
    return check_precision(c, t);
}

static int check_attention(const load_ctx *c, const wl_workload *w)
{
    const wl_model *m = &w->model;
    int tp = w->parallel.tensor_model_parallel_size;
    if (m->num_attention_heads == 0)
        return 0; /* a layer-by-layer model without attention sizes */
    if (m->num_attention_heads % m->num_query_groups != 0)
        return wl_fail(c, "model.num_query_groups",
                       "expected a divisor of model.num_attention_heads (%d), got %d",
                       m->num_attention_heads, m->num_query_groups);
    if (m->hidden_size % m->num_attention_heads != 0)
        return wl_fail(c, "model.hidden_size",
                       "expected a multiple of model.num_attention_heads (%d), got %ld",
                       m->num_attention_heads, m->hidden_size);
    if (m->num_attention_heads % tp != 0)
        return wl_fail(c, "model.num_attention_heads",
                       "expected a multiple of parallel.tensor_model_parallel_size (%d), got %d",
                       tp, m->num_attention_heads);
    if (m->num_query_groups % tp != 0)
        return wl_fail(c, "model.num_query_groups",
                       "expected a multiple of parallel.tensor_model_parallel_size (%d), got %d",
                       tp, m->num_query_groups);
    return 0;
}

static int check_batch(const load_ctx *c, const wl_workload *w)
{
    long mbs = w->training.micro_batch_size, dp = w->parallel.data_parallel_size;
    long gbs = w->training.global_batch_size;
    if (gbs % (mbs * dp) != 0)
        return wl_fail(c, "training.global_batch_size",
                       "expected a multiple of training.micro_batch_size x "
                       "parallel.data_parallel_size = %ld x %ld = %ld, got %ld",
                       mbs, dp, mbs * dp, gbs);
    if (gbs / (mbs * dp) > INT_MAX)
        return wl_fail(c, "training.global_batch_size",
                       "expected at most %d micro-batches per pipeline, got %ld", INT_MAX,
                       gbs / (mbs * dp));
    return 0;
}

/* Megatron's explicit split (pipeline_split.h) over v chunks per stage. */
static int check_split(const load_ctx *c, const wl_workload *w, int v)
{
    wl_split_error e;
    if (!wl_split_is_set(w) ||
        !wl_pipeline_split(w, w->parallel.pipeline_model_parallel_size, v, NULL, &e))
        return 0;
    return wl_fail(c, e.key, "%s", e.text);
}

static int check_pipeline(const load_ctx *c, const wl_workload *w)
{
    int pp = w->parallel.pipeline_model_parallel_size;
    int vpp = w->parallel.virtual_pipeline_model_parallel_size;
    int layers = w->model.num_layers;
    const char *vpp_key = "parallel.virtual_pipeline_model_parallel_size";
    if (pp > layers)
        return wl_fail(c, "parallel.pipeline_model_parallel_size",
                       "expected at most model.num_layers (%d) stages, got %d", layers, pp);
    if (w->schedule != SCHED_INTERLEAVED) {
        if (vpp > 1)
            return wl_fail(c, vpp_key,
                           "expected 1 unless schedule is \"interleaved\" "
                           "(schedule is \"%s\"), got %d",
                           wl_schedule_name(w->schedule), vpp);
        return check_split(c, w, 1);
    }
    if (vpp < 2)
        return wl_fail(c, vpp_key, "schedule \"interleaved\" needs at least 2, got %d", vpp);
    if (pp < 2)
        return wl_fail(c, "parallel.pipeline_model_parallel_size",
                       "schedule \"interleaved\" needs at least 2 stages, got %d", pp);
    if (wl_split_is_set(w)) /* the keys replace the even split over the chunks */
        return check_split(c, w, vpp);
    long chunks = (long)pp * vpp;
    if (layers % chunks != 0)
        return wl_fail(c, "model.num_layers",
                       "schedule \"interleaved\" needs a multiple of "
                       "parallel.pipeline_model_parallel_size x %s = %d x %d = %ld, got %d",
                       vpp_key, pp, vpp, chunks, layers);
    return 0;
}

static int check_experts(const load_ctx *c, const wl_workload *w)
{
    const wl_model *m = &w->model;
    int ep = w->parallel.expert_model_parallel_size;
    const char *ep_key = "parallel.expert_model_parallel_size";
    int rc = wl_mla_check(c, w); /* MoE hook: multi-latent attention keys (workload_moe.c) */
    if (rc)
        return rc;
    if (m->num_experts == 0) {
        if (m->overlap_moe_expert_parallel_comm)
            return wl_fail(c, "model.overlap_moe_expert_parallel_comm",
                           "overlaps the experts' all-to-alls, and model.num_experts is 0 (a "
                           "dense model): expected false");
        if (ep != 1)
            return wl_fail(c, ep_key,
                           "expected 1 for a dense model (model.num_experts is 0), got %d", ep);
        return 0;
    }
    if (m->num_experts % ep != 0)
        return wl_fail(c, "model.num_experts", "expected a multiple of %s (%d), got %d", ep_key, ep,
                       m->num_experts);
    return wl_moe_check(c, w); /* MoE hook: the rest in workload_moe.c */
}

/* Context parallelism splits a Transformer's sequences into 2c chunks
 * (Megatron-LM get_batch_on_this_cp_rank: chunks r and 2c−1−r on rank r). */
static int check_context_parallel(const load_ctx *c, const wl_workload *w)
{
    int cp = w->parallel.context_parallel_size;
    if (cp <= 1)
        return 0;
    if (w->model.num_layer_specs > 0)
        return wl_fail(c, "parallel.context_parallel_size",
                       "model.layers lists its layers and has no sequence to split: expected 1, "
                       "got %d",
                       cp);
    if (w->model.seq_length % (2L * cp) != 0)
        return wl_fail(c, "parallel.context_parallel_size",
                       "splits every sequence into 2 x %d = %ld equal chunks, as Megatron-LM "
                       "does, but model.seq_length (%ld) is not a multiple of %ld",
                       cp, 2L * cp, w->model.seq_length, 2L * cp);
    return 0;
}

/* ZeRO-2/3 shard what PipeDream's weight stashing keeps whole. */
static int check_sharding(const load_ctx *c, const wl_workload *w)
{
    wl_dp_sharding s = w->training.data_parallel_sharding_strategy;
    bool stashing = w->schedule == SCHED_PIPEDREAM || w->schedule == SCHED_PIPEDREAM_2BW;
    if (s < WL_SHARD_OPTIM_GRADS || !stashing)
        return 0;
    return wl_fail(c, "training.data_parallel_sharding_strategy",
                   "\"%s\" shards gradients per micro-batch, which schedule \"%s\" (asynchronous "
                   "updates, stashed weights) does not model: expected \"no_shard\" or "
                   "\"optim\"",
                   wl_sharding_name(s), wl_schedule_name(w->schedule));
}

int wl_check_combinations(const load_ctx *c, const wl_workload *w)
{
    int rc = check_attention(c, w);
    if (!rc)
        rc = check_batch(c, w);
    if (!rc)
        rc = check_pipeline(c, w);
    if (!rc)
        rc = check_experts(c, w);
    if (!rc)
        rc = check_context_parallel(c, w);
    if (!rc)
        rc = check_sharding(c, w);
    return rc;
}

/* --------------------------------------------------------------- cluster */

static int check_cluster(const wl_workload *w, int num_npus, np_error *err)
{
    if (num_npus <= 0)
        return np_error_set(err, NP_EXIT_INPUT, w->path, "parallel", 0,
                            "expected a platform with at least one NPU, got %d", num_npus);
    const wl_parallel *p = &w->parallel;
    long long tp = p->tensor_model_parallel_size, pp = p->pipeline_model_parallel_size;
    long long dp = p->data_parallel_size;
    long long cp = p->context_parallel_size > 1 ? p->context_parallel_size : 1;
    long long needed = tp * cp * pp * dp;
    if (needed != num_npus && cp == 1)
        return np_error_set(err, NP_EXIT_INPUT, w->path, "parallel", 0,
                            "tensor_model_parallel_size x pipeline_model_parallel_size x "
                            "data_parallel_size = %lld x %lld x %lld = %lld NPUs, but the "
                            "platform has %d",
                            tp, pp, dp, needed, num_npus);
    if (needed != num_npus) /* Megatron's rank order: TP, CP, DP, PP */
        return np_error_set(err, NP_EXIT_INPUT, w->path, "parallel", 0,
                            "tensor_model_parallel_size x context_parallel_size x "
                            "data_parallel_size x pipeline_model_parallel_size = %lld x %lld x "
                            "%lld x %lld = %lld NPUs, but the platform has %d",
                            tp, cp, dp, pp, needed, num_npus);
    int m = wl_num_micro_batches(w);
    if (w->schedule == SCHED_INTERLEAVED && m % pp != 0)
        /* Megatron's interleaved schedule runs micro-batches in groups of p. */
        return np_error_set(err, NP_EXIT_INPUT, w->path, "training.global_batch_size", 0,
                            "schedule \"interleaved\" needs the number of micro-batches, "
                            "global_batch_size / (micro_batch_size x data_parallel_size) = "
                            "%ld / (%d x %d) = %d, to be a multiple of "
                            "parallel.pipeline_model_parallel_size (%lld)",
                            w->training.global_batch_size, w->training.micro_batch_size,
                            p->data_parallel_size, m, pp);
    np_error_clear(err);
    return 0;
}

/* A rule the file's own sizes pass but the --set values break names the
 * command line, as a bad --set value does (docs/workload-format.md). */
int wl_check_cluster(const wl_workload *w, int num_npus, np_error *err)
{
    np_error scratch;
    np_error *e = err ? err : &scratch;
    int rc = check_cluster(w, num_npus, e);
    if (rc == NP_EXIT_INPUT && strcmp(e->source, w->path) == 0) {
        wl_workload alone;
        if (wl_load(w->path, NULL, 0, &alone, NULL) == 0) {
            np_error again;
            if (check_cluster(&alone, num_npus, &again) == 0)
                snprintf(e->source, sizeof e->source, "<command line>");
            wl_free(&alone);
        }
    }
    return rc;
}
