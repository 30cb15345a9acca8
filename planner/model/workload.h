/*
 * workload.h -- a training job as the user describes it in workload JSON.
 *
 * Keys follow Megatron-LM's argument names (see docs/workload-format.md) so
 * that a user can copy them from a launch script.  The loader checks every key:
 * an unknown key, a wrong type, a missing required key or an impossible
 * combination is an np_error naming the file and the dotted key.
 *
 * Command-line overrides (`simrun --set key=value`) are applied to the JSON tree
 * before it is checked, so an override is held to exactly the same rules as the
 * file.  A key may be given dotted ("parallel.data_parallel_size") or bare
 * ("data_parallel_size") when the bare name is unique.
 */
#ifndef WORKLOAD_H
#define WORKLOAD_H

#include <stdbool.h>

#include "np_error.h"

typedef enum wl_dtype { WL_BF16 = 0, WL_FP16, WL_FP32 } wl_dtype;

/* A dtype of the optimizer's tensors under Megatron's precision-aware
 * optimizer (--main-grads-dtype, --main-params-dtype, --exp-avg-dtype,
 * --exp-avg-sq-dtype): fp32 (the default, 4 bytes), bf16 or fp16 (2), fp8
 * (1 byte: Megatron maps it to uint8). */
typedef enum wl_state_dtype {
    WL_STATE_FP32 = 0,
    WL_STATE_BF16,
    WL_STATE_FP16,
    WL_STATE_FP8,
    WL_STATE_DTYPE_COUNT
} wl_state_dtype;

/* Megatron's --fp8-format (Transformer Engine's FP8 GEMMs in the linear
 * layers): e4m3 everywhere, or hybrid (e4m3 forward, e5m2 gradients); none
 * (absent) runs every GEMM in params_dtype.  costmodel_fp8.c prices it. */
typedef enum wl_fp8_format {
    WL_FP8_NONE = 0,
    WL_FP8_E4M3,
    WL_FP8_HYBRID,
    WL_FP8_COUNT
} wl_fp8_format;

/* Recompute (activation checkpointing) option of one layer. */
typedef enum recompute_kind {
    RECOMPUTE_NONE = 0,
    RECOMPUTE_SELECTIVE = 1, /* attention core only (Korthikanti et al. 2022) */
    RECOMPUTE_FULL = 2,      /* keep the layer input, recompute the layer */
    RECOMPUTE_COUNT
} recompute_kind;

/* How data parallelism shards the training state (Megatron-LM's
 * --data-parallel-sharding-strategy): no_shard replicates everything,
 * optim shards the optimizer state (the distributed optimizer, ZeRO-1),
 * optim_grads also the gradients (ZeRO-2), optim_grads_params also the
 * parameters (ZeRO-3, FSDP).  WL_SHARD_UNSET only lives inside the loader:
 * after loading it is "optim" with use_distributed_optimizer, else
 * "no_shard"; any strategy but no_shard turns use_distributed_optimizer on
 * (costmodel_sharding.c, schedule_parallel.c give them their behaviour). */
typedef enum wl_dp_sharding {
    WL_SHARD_UNSET = -1,
    WL_SHARD_NO_SHARD = 0,
    WL_SHARD_OPTIM,
    WL_SHARD_OPTIM_GRADS,
    WL_SHARD_OPTIM_GRADS_PARAMS,
    WL_SHARD_COUNT
} wl_dp_sharding;

typedef enum schedule_kind {
    SCHED_GPIPE = 0,
    SCHED_1F1B,
    SCHED_INTERLEAVED, /* Megatron interleaved 1F1B, v virtual chunks */
    SCHED_ZB_H1,
    SCHED_ZB_H2,
    SCHED_PIPEDREAM,     /* asynchronous, weight stashing */
    SCHED_PIPEDREAM_2BW, /* double-buffered weights */
    SCHED_COUNT
} schedule_kind;

/* One layer of a model described layer by layer (CNNs, heterogeneous
 * Transformers).  Quantities are per sample unless a table is given. */
typedef struct wl_layer_spec {
    char name[48];
    double forward_flops;    /* per sample */
    double params;           /* parameter count */
    double activation_bytes; /* kept for backward, per sample */
    double output_bytes;     /* sent to the next layer, per sample */
    /* Optional profiled time table t(b) over micro-batch sizes b. */
    int num_time_points;
    double *time_batch;      /* b values, increasing */
    double *time_forward_s;  /* forward time at each b */
    double *time_backward_s; /* backward (input + weight grad) time at each b */
} wl_layer_spec;

/* Megatron-LM's --moe-layer-freq: an integer N (layer i is MoE when
 * i % N == 0) or a pattern, one 0/1 per decoder layer, given as a Python
 * list expression ("([0]*3+[1]*58)") or a JSON array; expanded into map[]
 * by the loader (workload_moe.c). */
#define WL_MAX_LAYERS 10000
/* Largest workload file read: far above any layer-by-layer model. */
#define WL_MAX_FILE_BYTES ((size_t)64 << 20)
/* Most overrides one wl_load() applies (simrun: 64 --set and --schedule). */
#define WL_MAX_OVERRIDES 80
typedef struct wl_moe_layer_freq {
    int every;                                  /* N, or 0 when a pattern is given */
    char pattern[256];                          /* the pattern as given, or "" */
    unsigned char map[(WL_MAX_LAYERS + 7) / 8]; /* bit l: decoder layer l is MoE */
} wl_moe_layer_freq;

typedef enum wl_moe_dispatcher {
    WL_MOE_ALLGATHER = 0,
    WL_MOE_ALLTOALL,
    WL_MOE_DISPATCHER_COUNT
} wl_moe_dispatcher;
typedef enum wl_moe_balancing {
    WL_MOE_AUX_LOSS = 0,
    WL_MOE_SEQ_AUX_LOSS,
    WL_MOE_SINKHORN,
    WL_MOE_BALANCING_NONE,
    WL_MOE_BALANCING_COUNT
} wl_moe_balancing;

typedef struct wl_model {
    int num_layers;
    long hidden_size;
    long ffn_hidden_size;
    int num_attention_heads;
    int num_query_groups; /* GQA groups; == heads for MHA */
    long seq_length;
    long vocab_size;
    bool swiglu;
    bool untie_embeddings_and_output_weights;
    /* Mixture of experts: num_experts == 0 means dense. */
    int num_experts;
    int moe_router_topk;
    long moe_ffn_hidden_size;
    double moe_expert_capacity_factor; /* 0 = no capacity limit */
    char moe_token_trace[512];         /* path relative to the workload, or "" */
    /* The rest of the MoE keys and the layer map: moe.h explains them. */
    long moe_shared_expert_intermediate_size; /* 0: no shared expert */
    wl_moe_layer_freq moe_layer_freq;         /* which decoder layers are MoE */
    bool moe_pad_expert_input_to_capacity;
    int moe_token_dispatcher_type;      /* a wl_moe_dispatcher */
    int moe_router_load_balancing_type; /* a wl_moe_balancing */
    /* Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm):
     * one micro-batch's all-to-alls overlap another's compute in the steady
     * state (sim/engine/engine_moe_overlap.c, docs/moe.md) */
    bool overlap_moe_expert_parallel_comm;
    /* Multi-head latent attention (DeepSeek-V2/V3, Megatron's
     * MLATransformerConfig): counted in the parameters only (moe.h) */
    bool multi_latent_attention;
    int q_lora_rank; /* 0: queries projected directly */
    int kv_lora_rank, qk_head_dim, qk_pos_emb_head_dim, v_head_dim;
    /* Dropout probabilities in [0, 1) (Megatron's defaults 0.1); 0 means no
     * dropout: no masks kept, no dropout passes. */
    double attention_dropout; /* on the attention probabilities */
    double hidden_dropout;    /* after the attention projection and FC2 */
    /* Layer-by-layer models: num_layer_specs > 0 replaces the Transformer. */
    int num_layer_specs;
    wl_layer_spec *layer_specs;
} wl_model;

typedef struct wl_training {
    long global_batch_size; /* sequences (samples) per iteration */
    int micro_batch_size;
    wl_dtype params_dtype;
    bool use_distributed_optimizer;
    bool sequence_parallel;
    recompute_kind recompute_granularity; /* used by the Megatron planner */
    bool use_flash_attn;                  /* fused attention (FlashAttention-2) */
    /* Megatron's p2p scatter/gather: without SP each TP rank sends 1/t of the
     * boundary tensor and the receiver all-gathers it (default true; Megatron's
     * --no-scatter-gather-tensors-in-pipeline turns it off). */
    bool scatter_gather_tensors_in_pipeline;
    /* Megatron-Core's --tp-comm-overlap (Transformer Engine's userbuffers):
     * the sequence-parallel all-gathers and reduce-scatters pipelined with the
     * GEMMs next to them, chunk by chunk (costmodel_transformer.c); needs SP. */
    bool tp_comm_overlap;
    /* Megatron's --overlap-p2p-communication (config.overlap_p2p_comm):
     * under the interleaved schedule (v > 1, the only one Megatron applies it
     * to) the steady state's stage-to-stage sends are posted asynchronously
     * and overlap the compute that follows (the warm-up's and cool-down's
     * block: schedule_1f1b.c); without it every send holds the stage until
     * its data has arrived (sim/engine/engine_worker.c). */
    bool overlap_p2p_comm;
    wl_dp_sharding data_parallel_sharding_strategy;
    /* Megatron's --grad-reduce-in-bf16 (bf16 training): the gradient buffer
     * and its data-parallel reduction in bf16, 2 bytes per parameter instead
     * of fp32's 4 (arguments.py turns accumulate_allreduce_grads_in_fp32
     * off; DDP's grad_reduce_in_fp32). */
    bool grad_reduce_in_bf16;
    /* Megatron's --use-precision-aware-optimizer (Transformer Engine's
     * FusedAdam; needs the distributed optimizer) and the dtypes it allows
     * below fp32; store_param_remainders (default true, as Megatron's
     * OptimizerConfig) keeps an fp32 master weight of a bf16 parameter as its
     * 16-bit remainder.  costmodel.c (cm_precision_of) turns them into bytes. */
    bool use_precision_aware_optimizer;
    wl_state_dtype main_grads_dtype, main_params_dtype, exp_avg_dtype, exp_avg_sq_dtype;
    bool store_param_remainders;
    wl_fp8_format fp8_format;
    /* Megatron's --fp8-param-gather: the linear layers' parameters kept in
     * FP8 (no bf16 copy, so no fp32 master as remainders) and gathered by
     * the distributed optimizer in FP8 (costmodel_fp8.c). */
    bool fp8_param_gather;
} wl_training;

typedef struct wl_parallel {
    int tensor_model_parallel_size;
    int pipeline_model_parallel_size;
    int data_parallel_size;
    int virtual_pipeline_model_parallel_size;
    int expert_model_parallel_size;
    /* Tensor parallelism of the expert layers (Megatron's
     * --expert-tensor-parallel-size); 0 in the file means tensor_model_parallel_size. */
    int expert_tensor_parallel_size;
    /* Ranks splitting every sequence (ring attention, costmodel_cp.c);
     * NPUs = tp·cp·dp·pp in Megatron's rank order tp-cp-dp-pp. */
    int context_parallel_size;
    /* Decoder layers of the first / last pipeline stage when set (0: not set,
     * an even split); Megatron's fixed split, pipeline_split.h. */
    int decoder_first_pipeline_num_layers;
    int decoder_last_pipeline_num_layers;
    /* Count the embedding / the loss as one layer when splitting the pipeline
     * (Megatron's --account-for-*-in-pipeline-split; pipeline_split.h). */
    bool account_for_embedding_in_pipeline_split;
    bool account_for_loss_in_pipeline_split;
    /* Megatron-Core's custom layout ("Et*3|(tt|)*29,m|L"; pipeline_layout.c),
     * "" when not set */
    char pipeline_model_parallel_layout[1024];
} wl_parallel;

typedef struct wl_workload {
    char name[128];
    char path[512]; /* file it was loaded from */
    wl_model model;
    wl_training training;
    wl_parallel parallel;
    schedule_kind schedule;
    char planner[32];
    /* The canonical keys ("schedule", "training.micro_batch_size") whose
     * values came from wl_load()'s overrides, for wl_key_source(). */
    int num_command_line_keys;
    char command_line_keys[WL_MAX_OVERRIDES][128];
} wl_workload;

/* Loads and checks path, applying num_overrides "key=value" strings first
 * (at most WL_MAX_OVERRIDES).  Returns 0, or an np_exit_code with err filled.
 * wl_free() releases it. */
int wl_load(const char *path, const char *const *overrides, int num_overrides, wl_workload *out,
            np_error *err);
void wl_free(wl_workload *w);

/* Where the value of key came from, as an error on it names it: "<command
 * line>" when an override set the key or an object holding it (simrun's
 * --set, or --schedule, which is the override schedule="X"), else the
 * workload file.  Planners that refuse a loaded value name it so. */
const char *wl_key_source(const wl_workload *w, const char *key);
/* np_error_set() for a value of key that the loader accepted and a later
 * check (a planner, the cost model, the engine) refuses: the source is
 * wl_key_source()'s.  Returns code. */
int wl_key_error(np_error *err, int code, const wl_workload *w, const char *key, const char *fmt,
                 ...) __attribute__((format(printf, 5, 6)));

/* Checks the job against a cluster of num_npus devices:
 * tp·cp·dp·pp == num_npus, divisibility the schedule needs, etc. */
int wl_check_cluster(const wl_workload *w, int num_npus, np_error *err);

/* Number of micro-batches per pipeline per iteration:
 * global_batch_size / (micro_batch_size · data_parallel_size). */
int wl_num_micro_batches(const wl_workload *w);

const char *wl_schedule_name(schedule_kind s);
int wl_schedule_by_name(const char *name); /* -1 when unknown */
const char *wl_recompute_name(recompute_kind r);
int wl_recompute_by_name(const char *name); /* -1 when unknown */
double wl_dtype_bytes(wl_dtype d);
const char *wl_dtype_name(wl_dtype d);             /* "bf16", "fp16", "fp32" */
const char *wl_state_dtype_name(wl_state_dtype d); /* "fp32", "bf16", "fp16", "fp8" */
double wl_state_dtype_bytes(wl_state_dtype d);
/* "no_shard", "optim", "optim_grads", "optim_grads_params". */
const char *wl_sharding_name(wl_dp_sharding s);

#endif
