/*
 * costmodel_efficiency.c -- how much of the hardware an operator gets: the
 * GEMM efficiency by shape, the fused-attention kernel's efficiency, and the
 * bus efficiency of ring collectives on the scale-up fabric.
 *
 * Each comes from an optional platform property (cluster.h) whose absence
 * gives the model as it was before the property existed: every GEMM at the
 * one matmul_efficiency, the attention kernel at matmul_efficiency too, TP
 * rings at the full scale-up link bandwidth.  A value of 0 in a cluster made
 * by hand means the same default.
 *
 * GEMM efficiency by shape.  A GEMM [m×k]·[k×n] whose smallest dimension is
 * small underuses the tensor cores: tile quantisation, and an arithmetic
 * intensity, 2mkn FLOPs over (mk + kn + mn)·D bytes, that is at most
 * 2·min(m, k, n)/D (since mk + kn + mn > kn when m is the smallest).  NVIDIA's Deep Learning
 * Performance Guide ("Matrix Multiplication Background") shows throughput rising with the
 * dimensions and saturating once each is a few thousand.  So the table maps the smallest dimension
 * d to an efficiency, piecewise-linear in log(d) (the dimensions a table lists are powers of two or
 * close), constant below its first and above its last point: "128:0.35,512:0.6,2048:0.75,8192:0.8"
 * gives 0.475 at d = 256, the log-midpoint of 128 and 512.  Batched GEMMs (the attention scores,
 * b·a/t products of s×d by d×s) are priced by one product's smallest dimension.
 */
#include <math.h>

#include "costmodel_internal.h"

double cm_gemm_table_efficiency(const cl_cluster *c, double min_dim)
{
    int n = c->gemm_table_points;
    const double *d = c->gemm_table_min_dim, *e = c->gemm_table_efficiency;
    if (n <= 0)
        return c->matmul_efficiency;
    if (min_dim <= d[0] || n == 1)
        return e[0];
    if (min_dim >= d[n - 1])
        return e[n - 1];
    int i = 0;
    while (i < n - 2 && min_dim > d[i + 1])
        i++;
    double f = (log(min_dim) - log(d[i])) / (log(d[i + 1]) - log(d[i]));
    return e[i] + f * (e[i + 1] - e[i]);
}

double cm_gemm_efficiency(const cl_cluster *c, double m, double k, double n)
{
    if (c->gemm_table_points <= 0)
        return c->matmul_efficiency;
    return cm_gemm_table_efficiency(c, fmin(m, fmin(k, n)));
}

double cm_attention_efficiency(const cl_cluster *c)
{
    return c->attention_efficiency > 0 ? c->attention_efficiency : c->matmul_efficiency;
}

double cm_hbm_bandwidth_Bps(const cl_cluster *c)
{
    return c->hbm_bandwidth_Bps * (c->hbm_efficiency > 0 ? c->hbm_efficiency : 1.0);
}

double cm_bus_efficiency(const cl_cluster *c)
{
    return c->collective_bus_efficiency > 0 ? c->collective_bus_efficiency : 1.0;
}
