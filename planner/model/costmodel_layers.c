/*
 * costmodel_layers.c -- layer-by-layer models in the cost model: the layers
 * a workload lists in model.layers (CNNs, heterogeneous Transformers), each
 * priced from its per-sample spec or from its profiled time table t(b).
 *
 * Layer-by-layer models (workload model.layers): the spec is the layer as one
 * NPU runs it (no TP split).  Without a time table, forward = roofline of
 * b·FLOPs against reading the weights and writing b·activation bytes; B = F;
 * W = F for layers with parameters, else 0.  With a table, forward and
 * backward are interpolated linearly in b (extrapolated from the end
 * segments), the backward split evenly into B and W when the layer has
 * parameters.  Selective recompute means nothing there (no attention core):
 * it keeps everything, like none; full keeps the layer input, i.e. the
 * previous layer's output (the first layer: its own output, a proxy for the
 * sample), never more than none keeps, and re-runs the forward.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "costmodel_internal.h"

/* Piecewise-linear interpolation of (xs, ys) at q, extrapolated from the end
 * segments; a single point scales proportionally.  Never negative. */
double cm_interpolate(const double *xs, const double *ys, int count, double q)
{
    if (count <= 0)
        return 0.0;
    if (count == 1)
        return xs[0] > 0 ? ys[0] * q / xs[0] : ys[0];
    int i = 0;
    while (i < count - 2 && q > xs[i + 1])
        i++;
    double dx = xs[i + 1] - xs[i];
    if (dx <= 0)
        return fmax(0.0, ys[i]);
    double slope = (ys[i + 1] - ys[i]) / dx;
    return fmax(0.0, ys[i] + slope * (q - xs[i]));
}

void cm_custom_layer(cm_layer *ly, const shape *x, const wl_layer_spec *sp, double input_bytes)
{
    snprintf(ly->name, sizeof ly->name, "%s", sp->name);
    ly->kind = CM_CUSTOM;
    bool weighted = sp->params > 0;
    if (sp->num_time_points > 0) {
        ly->forward_s =
            cm_interpolate(sp->time_batch, sp->time_forward_s, sp->num_time_points, x->b);
        double bwd = cm_interpolate(sp->time_batch, sp->time_backward_s, sp->num_time_points, x->b);
        ly->backward_s = weighted ? bwd / 2.0 : bwd;
        ly->weight_grad_s = weighted ? bwd / 2.0 : 0.0;
    } else {
        double bytes = sp->params * x->D + x->b * sp->activation_bytes;
        ly->forward_s =
            cm_roofline_s(x->c, x->b * sp->forward_flops, bytes, x->c->matmul_efficiency);
        ly->backward_s = ly->forward_s;
        ly->weight_grad_s = weighted ? ly->forward_s : 0.0;
    }
    ly->activation_bytes[RECOMPUTE_NONE] = x->b * sp->activation_bytes;
    ly->activation_bytes[RECOMPUTE_SELECTIVE] = x->b * sp->activation_bytes;
    ly->activation_bytes[RECOMPUTE_FULL] = fmin(x->b * input_bytes, x->b * sp->activation_bytes);
    ly->recompute_s[RECOMPUTE_FULL] = ly->forward_s;
    cm_set_state(ly, x, sp->params, 0.0);
    ly->forward_flops = x->b * sp->forward_flops;
    ly->output_bytes = x->b * sp->output_bytes;
}

int cm_build_custom(cm_model *m, const wl_workload *w, const shape *x)
{
    const wl_model *md = &w->model;
    m->num_layers = md->num_layer_specs;
    m->layers = calloc((size_t)m->num_layers, sizeof *m->layers);
    if (!m->layers)
        return -1;
    for (int l = 0; l < md->num_layer_specs; l++) {
        const wl_layer_spec *sp = &md->layer_specs[l];
        double input = l > 0 ? md->layer_specs[l - 1].output_bytes : sp->output_bytes;
        cm_custom_layer(&m->layers[l], x, sp, input);
    }
    return 0;
}
