/*
 * workload_moe.c -- the Mixture-of-Experts keys of a workload: reading
 * model.moe_layer_freq, the MoE defaults that depend on other keys, the
 * layer map, and Megatron-LM's MoE argument checks (megatron/training/
 * arguments.py, validate_args, and megatron/core/parallel_state.py,
 * initialize_model_parallel).
 *
 * moe_layer_freq, as Megatron's --moe-layer-freq takes it:
 *   - an integer N: decoder layer i (0-based) is an MoE layer when i % N == 0
 *     (1, the default, makes every layer MoE);
 *   - a string holding a Python list expression of 0 and 1, e.g.
 *     "([0]*3+[1]*58)" for DeepSeek-V3's three dense layers first, or
 *     "([1]*3+[0]*1)*3"; the grammar read here is
 *         expr := term ('+' term)* ;  term := atom ('*' count)* ;
 *         atom := '[' [bit (',' bit)*] ']' | '(' expr ')'
 *     with spaces allowed between tokens;
 *   - a JSON array of 0 and 1.
 * A pattern must have exactly num_layers entries (Megatron asserts the
 * same).  It is expanded into the bit map model.moe_layer_freq.map, which
 * wl_moe_is_moe_layer() (moe.h) reads.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "moe.h"
#include "workload_internal.h"

/* ------------------------------------------------------ pattern parser */

typedef struct pattern_parser {
    const char *text, *at;
    unsigned char *bits; /* WL_MAX_LAYERS + 1 entries */
    int length;
    char why[160];
} pattern_parser;

static void skip_spaces(pattern_parser *p)
{
    while (isspace((unsigned char)*p->at))
        p->at++;
}

static int fail(pattern_parser *p, const char *what)
{
    if (!p->why[0])
        snprintf(p->why, sizeof p->why, "%s at character %d", what, (int)(p->at - p->text) + 1);
    return -1;
}

static int push_bit(pattern_parser *p, int bit)
{
    if (p->length >= WL_MAX_LAYERS)
        return fail(p, "more than 10000 layers");
    p->bits[p->length++] = (unsigned char)bit;
    return 0;
}

static int read_count(pattern_parser *p, long *out)
{
    skip_spaces(p);
    if (!isdigit((unsigned char)*p->at))
        return fail(p, "expected a repeat count");
    long n = 0;
    while (isdigit((unsigned char)*p->at)) {
        n = n * 10 + (*p->at++ - '0');
        if (n > WL_MAX_LAYERS)
            return fail(p, "repeat count above 10000");
    }
    *out = n;
    return 0;
}

static int parse_expr(pattern_parser *p);

static int parse_list(pattern_parser *p)
{
    p->at++; /* '[' */
    skip_spaces(p);
    if (*p->at == ']') {
        p->at++;
        return 0;
    }
    for (;;) {
        skip_spaces(p);
        if ((*p->at != '0' && *p->at != '1') || isdigit((unsigned char)p->at[1]))
            return fail(p, "expected 0 or 1");
        if (push_bit(p, *p->at++ - '0'))
            return -1;
        skip_spaces(p);
        if (*p->at == ']') {
            p->at++;
            return 0;
        }
        if (*p->at != ',')
            return fail(p, "expected ',' or ']'");
        p->at++;
    }
}

static int parse_atom(pattern_parser *p)
{
    skip_spaces(p);
    if (*p->at == '[')
        return parse_list(p);
    if (*p->at != '(')
        return fail(p, "expected '[' or '('");
    p->at++;
    if (parse_expr(p))
        return -1;
    skip_spaces(p);
    if (*p->at != ')')
        return fail(p, "expected ')'");
    p->at++;
    return 0;
}

static int parse_term(pattern_parser *p)
{
    int start = p->length;
    if (parse_atom(p))
        return -1;
    for (;;) {
        skip_spaces(p);
        if (*p->at != '*')
            return 0;
        p->at++;
        long n;
        if (read_count(p, &n))
            return -1;
        int seg = p->length - start;
        if (n == 0) {
            p->length = start;
            continue;
        }
        if ((long)start + (long)seg * n > WL_MAX_LAYERS)
            return fail(p, "more than 10000 layers");
        for (long r = 1; r < n; r++) {
            memcpy(p->bits + p->length, p->bits + start, (size_t)seg);
            p->length += seg;
        }
    }
}

static int parse_expr(pattern_parser *p)
{
    if (parse_term(p))
        return -1;
    for (;;) {
        skip_spaces(p);
        if (*p->at != '+')
            return 0;
        p->at++;
        if (parse_term(p))
            return -1;
    }
}

int wl_moe_pattern_expand(const char *text, unsigned char *bits, int *length, char *why,
                          size_t why_size)
{
    pattern_parser p = {.text = text, .at = text, .bits = bits};
    int rc = parse_expr(&p);
    if (!rc) {
        skip_spaces(&p);
        if (*p.at)
            rc = fail(&p, "unexpected text");
    }
    if (rc) {
        snprintf(why, why_size, "%s", p.why);
        return -1;
    }
    *length = p.length;
    return 0;
}

/* ------------------------------------------------------------- reading */

int wl_read_moe_layer_freq(const load_ctx *c, const json_t *v, wl_moe_layer_freq *field,
                           const char *key)
{
    if (json_is_integer(v)) {
        json_int_t n = json_integer_value(v);
        if (n < 1 || n > WL_MAX_LAYERS)
            return wl_fail(c, key,
                           "expected an integer in [1, 10000] (every N-th layer is MoE), "
                           "got %lld",
                           (long long)n);
        field->every = (int)n;
        field->pattern[0] = '\0';
        return 0;
    }
    if (json_is_string(v)) {
        if (json_string_length(v) >= sizeof field->pattern)
            return wl_fail(c, key, "expected a pattern of at most %zu characters, got %zu",
                           sizeof field->pattern - 1, json_string_length(v));
        field->every = 0;
        memcpy(field->pattern, json_string_value(v), json_string_length(v) + 1);
        return 0;
    }
    if (json_is_array(v) && json_array_size(v) > 0) {
        size_t n = json_array_size(v), used = 0;
        if (n > WL_MAX_LAYERS || 2 * n + 2 > sizeof field->pattern)
            return wl_fail(c, key, "expected an array of at most %zu entries, got %zu",
                           (sizeof field->pattern - 2) / 2, n);
        field->pattern[used++] = '[';
        for (size_t i = 0; i < n; i++) {
            const json_t *x = json_array_get(v, i);
            if (!json_is_integer(x) || (json_integer_value(x) != 0 && json_integer_value(x) != 1))
                return wl_fail(c, key, "expected 0 or 1 at index %zu", i);
            field->pattern[used++] = (char)('0' + json_integer_value(x));
            field->pattern[used++] = i + 1 < n ? ',' : ']';
        }
        field->pattern[used] = '\0';
        field->every = 0;
        return 0;
    }
    return wl_fail(c, key,
                   "expected a positive integer, a 0/1 list expression such as "
                   "\"([0]*3+[1]*58)\", or an array of 0 and 1");
}

/* ------------------------------------------------------------ defaults */

static void map_set(wl_moe_layer_freq *f, int layer, int bit)
{
    unsigned char mask = (unsigned char)(1u << (layer & 7));
    if (bit)
        f->map[layer >> 3] |= mask;
    else
        f->map[layer >> 3] &= (unsigned char)~mask;
}

int wl_moe_fill_defaults(const load_ctx *c, wl_workload *w)
{
    wl_model *m = &w->model;
    wl_moe_layer_freq *f = &m->moe_layer_freq;
    if (w->parallel.expert_tensor_parallel_size == 0)
        w->parallel.expert_tensor_parallel_size = w->parallel.tensor_model_parallel_size;
    memset(f->map, 0, sizeof f->map);
    if (m->num_experts == 0 || m->num_layer_specs > 0)
        return 0;
    int L = m->num_layers;
    if (f->every > 0) {
        for (int l = 0; l < L; l++)
            map_set(f, l, l % f->every == 0);
        return 0;
    }
    unsigned char *bits = malloc(WL_MAX_LAYERS + 1);
    if (!bits)
        return wl_fail_memory(c, "model.moe_layer_freq");
    int length = 0;
    char why[160];
    int rc = 0;
    if (wl_moe_pattern_expand(f->pattern, bits, &length, why, sizeof why))
        rc = wl_fail(c, "model.moe_layer_freq", "cannot read the pattern \"%s\": %s", f->pattern,
                     why);
    else if (length != L)
        rc = wl_fail(c, "model.moe_layer_freq",
                     "the pattern has %d entries, expected one per decoder layer "
                     "(model.num_layers = %d)",
                     length, L);
    for (int l = 0; !rc && l < L; l++)
        map_set(f, l, bits[l]);
    free(bits);
    return rc;
}

/* -------------------------------------------------------------- checks */

int wl_mla_check(const load_ctx *c, const wl_workload *w)
{
    const wl_model *m = &w->model;
    static const char *const keys[] = {"kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim",
                                       "v_head_dim"};
    const int values[] = {m->kv_lora_rank, m->qk_head_dim, m->qk_pos_emb_head_dim, m->v_head_dim};
    char key[64];
    for (int i = 0; i < 4; i++) {
        snprintf(key, sizeof key, "model.%s", keys[i]);
        if (m->multi_latent_attention && values[i] <= 0)
            return wl_fail(c, key,
                           "model.multi_latent_attention is true: expected a positive integer");
        if (!m->multi_latent_attention && values[i] > 0)
            return wl_fail(c, key,
                           "is for multi-latent attention: expected model.multi_latent_attention "
                           "true");
    }
    if (!m->multi_latent_attention && m->q_lora_rank > 0)
        return wl_fail(c, "model.q_lora_rank",
                       "is for multi-latent attention: expected model.multi_latent_attention "
                       "true");
    if (m->multi_latent_attention && m->num_layer_specs > 0)
        return wl_fail(c, "model.multi_latent_attention",
                       "model.layers lists its layers; multi-latent attention is a Transformer "
                       "decoder layer's: expected false");
    return 0;
}

int wl_moe_check(const load_ctx *c, const wl_workload *w)
{
    const wl_model *m = &w->model;
    const wl_parallel *p = &w->parallel;
    int ep = p->expert_model_parallel_size, etp = p->expert_tensor_parallel_size;
    int tp = p->tensor_model_parallel_size;
    int cp = p->context_parallel_size > 1 ? p->context_parallel_size : 1;
    if (m->num_layer_specs > 0)
        return wl_fail(c, "model.num_experts",
                       "model.layers lists its layers; experts replace the MLP of Transformer "
                       "decoder layers: expected 0, got %d",
                       m->num_experts);
    if (m->moe_router_topk > m->num_experts)
        return wl_fail(c, "model.moe_router_topk",
                       "expected at most model.num_experts (%d), got %d", m->num_experts,
                       m->moe_router_topk);
    /* parallel_state.initialize_model_parallel: the expert layers' own
     * layout etp x ep x edp x pp covers the same ranks as tp x cp x dp x pp. */
    long long dense = (long long)tp * cp * p->data_parallel_size;
    if (dense % ((long long)ep * etp) != 0)
        return wl_fail(c, "parallel.expert_model_parallel_size",
                       "expected expert_model_parallel_size x expert_tensor_parallel_size to "
                       "divide tensor_model_parallel_size (%d) x context_parallel_size (%d) x "
                       "data_parallel_size (%d), got %d x %d",
                       tp, cp, p->data_parallel_size, ep, etp);
    if (tp > 1 && !w->training.sequence_parallel)
        return wl_fail(c, "training.sequence_parallel",
                       "Megatron-LM requires sequence parallelism with experts and "
                       "tensor_model_parallel_size %d > 1: expected true",
                       tp);
    if (m->moe_pad_expert_input_to_capacity && m->moe_expert_capacity_factor <= 0)
        return wl_fail(c, "model.moe_pad_expert_input_to_capacity",
                       "pads to the capacity, which model.moe_expert_capacity_factor sets: "
                       "expected that factor > 0");
    if (m->moe_expert_capacity_factor > 0 && m->moe_token_dispatcher_type != WL_MOE_ALLTOALL)
        return wl_fail(c, "model.moe_expert_capacity_factor",
                       "token dropping works with the \"alltoall\" token dispatcher only "
                       "(Megatron-LM); model.moe_token_dispatcher_type is \"%s\"",
                       wl_moe_dispatcher_names[m->moe_token_dispatcher_type]);
    /* Megatron-Core's checks for combined 1F1B (TransformerConfig) */
    if (m->overlap_moe_expert_parallel_comm &&
        (ep < 2 || m->moe_token_dispatcher_type != WL_MOE_ALLTOALL))
        return wl_fail(c, "model.overlap_moe_expert_parallel_comm",
                       "overlaps expert-parallel all-to-alls: expected "
                       "parallel.expert_model_parallel_size > 1 (got %d) and "
                       "model.moe_token_dispatcher_type \"alltoall\" (got \"%s\")",
                       ep, wl_moe_dispatcher_names[m->moe_token_dispatcher_type]);
    return 0;
}
