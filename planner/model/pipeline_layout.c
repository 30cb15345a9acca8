/*
 * pipeline_layout.c -- Megatron-Core's custom pipeline layout
 * (parallel.pipeline_model_parallel_layout, --pipeline-model-parallel-layout,
 * Megatron-Core 0.13 "Custom Pipeline Model Parallel Layout"): a string that
 * lists what every virtual pipeline stage holds.
 *
 * Grammar, as Megatron documents it: stages are separated by '|', listed in
 * the forward order (every pipeline stage of virtual chunk 0, then of chunk
 * 1, ...: model chunk k = j·p + s, plan.h's order); 'E' is the embedding,
 * 't' a decoder layer, 'm' a multi-token-prediction layer, 'L' the loss;
 * "x*N" repeats a symbol, "(pattern)*N" a pattern (parentheses nest); ','
 * and blanks are cosmetic.  Example, DeepSeek-V3's 61 layers over PP 16 and
 * VPP 2 (Megatron's own): "Et*3|(tt|)*29,m|L".
 *
 * What this simulator takes from it: the decoder layers of each model chunk.
 * Its cost model keeps the embedding on the first chunk and the LM head and
 * loss on the last (costmodel.h), and has no MTP layer, so 'E' must open the
 * first stage, 'L' must sit in the last, 'm' is refused, and a stage left
 * with nothing (Megatron allows "E||t|L") is refused too: a plan's chunks
 * are never empty.  The number of stages must be p·v.
 */
#include "pipeline_split.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The expanded layout, at most this many symbols (a 16K-stage layout of
 * 128 layers each is 2.1M). */
enum { LAYOUT_MAX_SYMBOLS = 1 << 24 };

typedef struct layout_parser {
    const char *text, *at;
    char *out;
    size_t len, cap;
    wl_split_error *e;
    bool whole; /* the error is about the whole string, not a character */
} layout_parser;

static int layout_fail(layout_parser *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int layout_fail(layout_parser *p, const char *fmt, ...)
{
    if (!p->e)
        return -1;
    char why[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    p->e->key = WL_KEY_LAYOUT;
    if (p->whole)
        snprintf(p->e->text, sizeof p->e->text, "\"%.100s\" %s", p->text, why);
    else
        snprintf(p->e->text, sizeof p->e->text, "at character %ld of \"%.100s\": %s",
                 (long)(p->at - p->text) + 1, p->text, why);
    return -1;
}

/* Appends `times` copies of n symbols: from `symbols`, or (symbols NULL)
 * from p->out at offset `from` (a group repeated; the buffer may move). */
static int emit(layout_parser *p, const char *symbols, size_t from, size_t n, long times)
{
    if (times > 0 && n > 0 && (size_t)times > (LAYOUT_MAX_SYMBOLS - p->len) / n)
        return layout_fail(p, "expands to more than %d symbols", LAYOUT_MAX_SYMBOLS);
    size_t need = p->len + n * (size_t)times;
    if (need > p->cap) {
        size_t cap = p->cap ? p->cap : 64;
        while (cap < need)
            cap *= 2;
        char *grown = realloc(p->out, cap);
        if (!grown)
            return layout_fail(p, "out of memory");
        p->out = grown;
        p->cap = cap;
    }
    for (long k = 0; k < times; k++) {
        memcpy(p->out + p->len, symbols ? symbols : p->out + from, n);
        p->len += n;
    }
    return 0;
}

static void skip_cosmetic(layout_parser *p)
{
    while (*p->at == ',' || *p->at == ' ' || *p->at == '\t')
        p->at++;
}

/* An optional "*N" (N ≥ 1) after a symbol or a group; 1 without. */
static int read_times(layout_parser *p, long *times)
{
    skip_cosmetic(p);
    *times = 1;
    if (*p->at != '*')
        return 0;
    p->at++;
    skip_cosmetic(p);
    char *end;
    long n = strtol(p->at, &end, 10);
    if (end == p->at || n < 1 || n > LAYOUT_MAX_SYMBOLS)
        return layout_fail(p, "expected a repeat count from 1 to %d after '*'", LAYOUT_MAX_SYMBOLS);
    p->at = end;
    *times = n;
    return 0;
}

/* A sequence of symbols, separators and groups, up to ')' (nested) or the
 * end. */
static int parse_seq(layout_parser *p, int depth)
{
    for (;;) {
        skip_cosmetic(p);
        char c = *p->at;
        if (c == '\0' || c == ')')
            return c == ')' && depth == 0 ? layout_fail(p, "')' without its '('") : 0;
        if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
            p->at++;
            long times;
            if (read_times(p, &times) || emit(p, &c, 0, 1, times))
                return -1;
            continue;
        }
        if (c != '(')
            return layout_fail(p, "expected one of E t m L | ( ) * and a count, got '%c'", c);
        if (depth >= 32)
            return layout_fail(p, "parentheses nested deeper than 32");
        p->at++;
        size_t start = p->len;
        if (parse_seq(p, depth + 1))
            return -1;
        if (*p->at != ')')
            return layout_fail(p, "'(' without its ')'");
        p->at++;
        long times;
        if (read_times(p, &times))
            return -1;
        if (times > 1 && emit(p, NULL, start, p->len - start, times - 1))
            return -1;
    }
}

int wl_layout_counts(const char *layout, int p, int v, int num_layers, int *counts,
                     wl_split_error *e)
{
    layout_parser lp = {layout, layout, NULL, 0, 0, e, false};
    if (parse_seq(&lp, 0)) {
        free(lp.out);
        return -1;
    }
    int stages = 1, layers = 0, stage = 0, in_stage = 0;
    bool ok = true, has_e = false, has_l = false, empty = false;
    for (size_t i = 0; i < lp.len; i++)
        stages += lp.out[i] == '|';
    lp.whole = true; /* errors below are about the whole string */
    if (stages != p * v) {
        free(lp.out);
        return layout_fail(&lp,
                           "lists %d stages, expected pipeline_model_parallel_size x "
                           "virtual_pipeline_model_parallel_size = %d x %d = %d",
                           stages, p, v, p * v);
    }
    for (size_t i = 0; ok && i <= lp.len; i++) {
        char c = i < lp.len ? lp.out[i] : '|';
        if (c == '|') {
            empty = empty ||
                    (in_stage == 0 && !(stage == 0 && has_e) && !(stage == stages - 1 && has_l));
            if (counts)
                counts[stage] = in_stage;
            stage++;
            in_stage = 0;
        } else if (c == 't') {
            in_stage++;
            layers++;
        } else if (c == 'm') {
            ok = false;
            layout_fail(&lp, "holds 'm', a multi-token-prediction layer, which is not "
                             "modelled: expected none");
        } else if (c == 'E') {
            ok = !has_e && stage == 0 && in_stage == 0;
            has_e = true;
            if (!ok)
                layout_fail(&lp, "must open the first stage with 'E', once (the cost model "
                                 "keeps the embedding there)");
        } else { /* 'L' */
            ok = !has_l && stage == stages - 1;
            has_l = true;
            if (!ok)
                layout_fail(&lp, "must hold 'L' in the last stage, once (the cost model keeps "
                                 "the LM head and the loss there)");
        }
    }
    free(lp.out);
    if (!ok)
        return -1;
    if (!has_e || !has_l)
        return layout_fail(&lp, "must hold 'E' in the first stage and 'L' in the last");
    if (empty)
        return layout_fail(&lp, "leaves a stage empty, which this simulator's plans do not "
                                "allow (Megatron does)");
    if (layers != num_layers)
        return layout_fail(&lp, "places %d decoder layers 't', model.num_layers is %d", layers,
                           num_layers);
    return 0;
}
