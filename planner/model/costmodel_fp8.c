/*
 * costmodel_fp8.c -- FP8 training (Megatron's --fp8-format, Transformer
 * Engine's FP8 linear layers): what changes in the time and the memory of
 * one decoder layer.
 *
 * Time.  The linear layers' GEMMs (QKV, the attention output projection,
 * FC1, FC2, multi-latent attention's projections and the MoE experts' GEMMs)
 * run on the FP8 Tensor Cores: FLOPs at the platform's fp8_flops times the
 * same matmul efficiency as every other GEMM (the device's one calibrated
 * constant: no FP8 figure was used to choose it), reading 1-byte operands
 * and writing a params_dtype output; in the forward (fprop), the input
 * gradient (dgrad) and the weight gradient (wgrad) alike.  The attention
 * core (FlashAttention or the unfused BMMs), the router and the LM head stay
 * in params_dtype, as in Megatron-Core (its output layer is not a Transformer
 * Engine module).  Each FP8 GEMM input is cast first, one memory pass that
 * reads the params_dtype tensor and writes its FP8 copy twice, row- and
 * column-wise (Transformer Engine's cast-transpose: Hopper's FP8 GEMMs take
 * both operands K-major, so the weight gradient needs the transposed copy):
 *   forward: the projection's input (the attention output) and FC2's input
 *            (the activation's output); the QKV and FC1 inputs come out of
 *            the fused LayerNorm/RMSNorm already in FP8 (LayerNormLinear),
 *            a pass the norm makes anyway;
 *   backward: every linear layer's output gradient.
 * The weights are cast once per iteration (Transformer Engine caches the FP8
 * weights from the first micro-batch): about 4 bytes of traffic per
 * parameter per iteration, under 0.2% of any run here, left out.  The
 * experts' casts are left out too (the dispatcher's permutation moves the
 * same tokens).
 *
 * Memory.  A linear layer keeps its input for the weight gradient in FP8,
 * 1 byte per element instead of D (the qkv_input, proj_input, fc1_input and
 * fc2_input units of costmodel_transformer.c); the norms' inputs and the
 * rest stay in params_dtype.  The cached FP8 weights and their transposes, 2
 * bytes per parameter of the FP8 layers, stay resident for the iteration and
 * count as weights.
 *
 * FP8 parameters (fp8_param_gather, Megatron's --fp8-param-gather): the
 * linear layers' weights are kept in FP8, the FP8 data and its transpose
 * taking the 2 bytes of the bf16 weight they replace, so there is no cache
 * beside them; the optimizer's fp32 master is whole (no bf16 half to be the
 * remainder's other part), and the distributed optimizer's (or ZeRO-3's)
 * parameter all-gather moves 1 byte per parameter (cm_precision.gather;
 * the norms' few parameters counted at 1 byte too).
 */

#include "costmodel_internal.h"

void cm_fp8_shape(shape *x, const wl_workload *w, const cl_cluster *c)
{
    x->fp8 = w->training.fp8_format != WL_FP8_NONE && c->fp8_peak_flops > 0;
    x->fp8_peak = c->fp8_peak_flops;
    x->fp8_params = x->fp8 && w->training.fp8_param_gather;
}

/* A linear layer's GEMM [m×k]·[k×n], `count` times (the experts'). */
double cm_linear_s(const shape *x, double m, double k, double n, double count)
{
    if (!x->fp8)
        return cm_gemm_s(x, m, k, n, count);
    double flops = 2.0 * m * k * n * count;
    double bytes = ((m * k + k * n) * FP8_BYTES + m * n * x->D) * count;
    return cm_roofline_at_peak_s(x->c, x->fp8_peak, flops, bytes,
                                 cm_gemm_efficiency(x->c, m, k, n));
}

double cm_fp8_cast_s(const shape *x, double elements)
{
    return x->fp8 ? cm_memop_s(x, elements * (x->D + 2.0 * FP8_BYTES)) : 0.0;
}

double cm_linear_input_bytes(const shape *x, double elements)
{
    return elements * (x->fp8 ? FP8_BYTES : x->D);
}

double cm_fp8_weight_cache_bytes(const shape *x, double linear_params)
{
    /* fp8_param_gather: the FP8 parameter and its transpose are the weight */
    return x->fp8 && !x->fp8_params ? 2.0 * FP8_BYTES * linear_params : 0.0;
}
