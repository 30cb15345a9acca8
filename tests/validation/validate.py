#!/usr/bin/python3
"""validate.py -- npusim's iteration times, throughputs and memory against
published training runs (tests/validation/published.json).

Glue only: for every published entry that tests/validation/cases.json says to
simulate, it writes a workload JSON and picks a platform (the shipped
platforms/dgx_a100_*.xml where the size matches, otherwise
platforms/gen_platform.py --preset a100|h100 --npus N) into a temporary
folder, runs build/simrun --csv on it, converts the simulated iteration time
into the published figure with the source's own formula, and prints, per
published figure, published / simulated / error % against the bounds of the
validation issue (time and throughput 5%, memory 3%, GPT-3 175B
selective/full ratio 3%).  A figure outside its bound stays in the table with
the reason cases.json gives; an outside figure without a reason makes the
exit status 1.

Usage (from the source root; scripts/validate.sh is the usual entry):
  validate.py                         the whole table
  validate.py --write-docs            the same, and regenerate docs/validation.md
  validate.py --calibrate a100        bisection of the preset's matmul_efficiency
                                      on the device's ONE calibration point
                                      (cases.json "calibration"); prints it
  validate.py --only ID [--only ID]   a subset (ids of published.json)
  validate.py --keep DIR              keep the workloads, platforms and CSVs
Options: --build DIR (default build), --jobs N (default 2).

Python standard library only; run it with /usr/bin/python3.
"""

import argparse
import concurrent.futures
import copy
import csv
import datetime
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "validation")
sys.path.insert(0, os.path.join(ROOT, "platforms"))
import gen_platform  # noqa: E402  (the platforms' own generator and presets)

PYTHON = "/usr/bin/python3"


# ---- formulas of the sources ---------------------------------------------------
# Each converts a simulated run (its CSV row `r`, the entry `e`) into the
# published figure, with the formula the source itself used.

def _dims(e):
    m = e["model"]
    return (float(m["num_layers"]), float(m["hidden_size"]), float(m["seq_length"]))


def korthikanti_model_flops(e, V=51200.0):
    """Korthikanti et al. 2022, Appendix A, Eq. 7 (model FLOPs, no recompute)."""
    L, h, s = _dims(e)
    B = float(e["training"]["global_batch_size"])
    return 72 * B * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L))


def korthikanti_hardware_flops(e, V=51200.0):
    """Korthikanti et al. 2022, Eq. 8 (hardware FLOPs with selective recompute)."""
    L, h, s = _dims(e)
    B = float(e["training"]["global_batch_size"])
    return 72 * B * L * s * h * h * (1 + s / (3 * h) + V / (12 * h * L))


def narayanan_flops(e, V=None):
    """Narayanan et al. SC'21 Eq. 3: 96 B s l h^2 (1 + s/6h + V/16lh), which
    counts the recompute forward (4x the forward GEMMs).  BLOOM's
    Megatron-DeepSpeed throughput uses the same formula (factor 4 with
    checkpoint_activations)."""
    L, h, s = _dims(e)
    B = float(e["training"]["global_batch_size"])
    V = float(V if V is not None else e["model"]["vocab_size"])
    return 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))


def dgxc_gpt3_flops(e, V=51200.0):
    """DGX Cloud recipes README (GPT-3): per sequence s(72Lh^2 + 12Lhs + 6Vh),
    V = 51200, no recompute counted."""
    L, h, s = _dims(e)
    B = float(e["training"]["global_batch_size"])
    return B * s * (72 * L * h * h + 12 * L * h * s + 6 * V * h)


def dgxc_nemotron_flops(e):
    """DGX Cloud recipes README (Nemotron-4 340B): the GPT-3 count with the
    recipe's vocabulary, V = 256000: 1.009e16 per sequence, which the
    README rounds to 1.01e16 (its attention projections counted as
    multi-head)."""
    return dgxc_gpt3_flops(e, V=256000.0)


def _dgxc_gated_flops(e, attention, f, k):
    """The DGX Cloud READMEs' per-sequence count for gated-MLP decoders,
    s(12Lh^2(1 + g/a + attention) + 18L f h k + 6Vh), V = 128256, no
    recompute counted; L is the entry's (the proxy configurations' fewer
    layers)."""
    L, h, s = _dims(e)
    m = e["model"]
    g, a = float(m["num_query_groups"]), float(m["num_attention_heads"])
    B = float(e["training"]["global_batch_size"])
    return B * s * (12 * L * h * h * (1 + g / a + attention) + 18 * L * f * h * k + 6 * 128256.0 * h)


def dgxc_llama_flops(e):
    """DGX Cloud recipes README (Llama 3.1): the full attention term s/h,
    one dense MLP."""
    L, h, s = _dims(e)
    return _dgxc_gated_flops(e, s / h, float(e["model"]["ffn_hidden_size"]), 1.0)


def dgxc_grok_flops(e):
    """DGX Cloud recipes README (Grok 1): the model FLOPs it states, 4.27e15
    per sequence on the 64-layer model at 8,192 tokens, reproduced by the
    Llama count with causal attention (s/2h) and the gated expert MLP
    counted for the k = 2 experts a token runs, V = 128256 (the recipe's
    Llama 3 tokenizer).  It also gives every proxy's README MFU (45.4% at
    8 GPUs: 2 layers, 4,096 tokens, 24.03 s)."""
    L, h, s = _dims(e)
    m = e["model"]
    return _dgxc_gated_flops(e, s / (2 * h), float(m["moe_ffn_hidden_size"]),
                             float(m["moe_router_topk"]))


def palm_params(e):
    """All parameters of a Llama-style model from its dimensions: per layer
    the attention projections h^2 (2 + 2g/a) (Q and output h x h, K and V
    h x h g/a each), the SwiGLU MLP 3fh and two norms 2h; the untied input
    embedding and output layer 2Vh and the final norm h.  Llama 3 405B
    (Table 3, V = 128,000): 405.8e9."""
    L, h, s = _dims(e)
    m = e["model"]
    g, a, f = float(m["num_query_groups"]), float(m["num_attention_heads"]), float(m["ffn_hidden_size"])
    V = float(m["vocab_size"])
    return L * (h * h * (2 + 2 * g / a) + 3 * f * h + 2 * h) + 2 * V * h + h


def palm_flops(e):
    """Model FLOPs of one iteration as PaLM defines them (Chowdhery et al.
    2022, arXiv:2204.02311, Appendix B), the MFU definition the Llama 3
    paper cites for Table 4: 6N + 12 L H Q T per token, N every parameter
    (palm_params), H Q = the hidden size (query heads x head dimension),
    T the sequence length; the attention term is the full T x T product
    (no causal or document-mask discount) and no recompute is counted."""
    L, h, s = _dims(e)
    B = float(e["training"]["global_batch_size"])
    return B * s * (6 * palm_params(e) + 12 * L * h * s)


def _T(r):
    return float(r["iteration_s"])


def _per_gpu(flops, peak=None):
    """Model FLOPs per second per GPU of a run (a function of (row, entry)),
    as a fraction of `peak` when given, else in TFLOP/s."""
    if peak:
        return lambda r, e: flops(e) / (_T(r) * e["npus"] * peak)
    return lambda r, e: flops(e) / (_T(r) * e["npus"]) / 1e12


# method -> (function of (row, entry), unit, what the formula is)
METHODS = {
    "iteration_s": (lambda r, e: _T(r), "s", "simulated iteration time"),
    "tokens_per_s": (lambda r, e: float(e["training"]["global_batch_size"]) * float(e["model"]["seq_length"]) / _T(r),
                     "tokens/s", "global batch x sequence / simulated iteration"),
    "mfu_korthikanti": (_per_gpu(korthikanti_model_flops, 312e12), "",
                        "Korthikanti Eq. 7 / (T x GPUs x 312 TFLOP/s)"),
    "hfu_korthikanti": (_per_gpu(korthikanti_hardware_flops, 312e12), "",
                        "Korthikanti Eq. 8 / (T x GPUs x 312 TFLOP/s)"),
    "tflops_narayanan": (_per_gpu(lambda e: narayanan_flops(e, 51200)), "TFLOP/s",
                         "Narayanan Eq. 3 (recompute counted), V = 51200, / (T x GPUs)"),
    "fraction_of_peak_narayanan": (_per_gpu(lambda e: narayanan_flops(e, 51200), 312e12), "",
                                   "Narayanan Eq. 3 / (T x GPUs x 312 TFLOP/s)"),
    "pflops_narayanan": (lambda r, e: narayanan_flops(e, 51200) / _T(r) / 1e15, "PFLOP/s",
                         "Narayanan Eq. 3 / T, all GPUs"),
    "tflops_bloom": (_per_gpu(narayanan_flops), "TFLOP/s",
                     "Megatron-DeepSpeed's 24 x 4 B s l h^2 (1 + s/6h + V/16lh), V = 250880, / (T x GPUs)"),
    "mfu_dgxc_gpt3": (_per_gpu(dgxc_gpt3_flops, 989e12), "",
                      "README: B s (72Lh^2 + 12Lhs + 6Vh), V = 51200, / (T x GPUs x 989 TFLOP/s)"),
    "mfu_dgxc_gpt3_fp8": (_per_gpu(dgxc_gpt3_flops, 1979e12), "",
                          "README: B s (72Lh^2 + 12Lhs + 6Vh), V = 51200, / (T x GPUs x 1979 TFLOP/s, "
                          "the FP8 peak)"),
    "mfu_dgxc_nemotron": (_per_gpu(dgxc_nemotron_flops, 989e12), "",
                          "README: B s (72Lh^2 + 12Lhs + 6Vh), V = 256000, / (T x GPUs x 989 TFLOP/s)"),
    "mfu_dgxc_llama": (_per_gpu(dgxc_llama_flops, 989e12), "",
                       "README: B s (12Lh^2(1 + g/a + s/h) + 18Lfh + 6Vh), V = 128256, / (T x GPUs x 989 TFLOP/s)"),
    "mfu_dgxc_grok": (_per_gpu(dgxc_grok_flops, 989e12), "",
                      "README: B s (12Lh^2(1 + g/a + s/2h) + 18Lfhk + 6Vh), k = 2, V = 128256, "
                      "/ (T x GPUs x 989 TFLOP/s)"),
    "tflops_palm": (_per_gpu(palm_flops), "TFLOP/s",
                    "PaLM App. B: B s (6N + 12 L h s), N all parameters, / (T x GPUs)"),
    "mfu_palm": (_per_gpu(palm_flops, 989e12), "",
                 "PaLM App. B / (T x GPUs x 989 TFLOP/s)"),
    "peak_memory_gb": (lambda r, e: float(r["peak_bytes"]) / 1e9, "GB", "largest device-memory peak (1e9 B)"),
}
# Per-layer methods of Korthikanti's Table 4, from the difference of two runs
# of 1 and 2 decoder layers (trace durations).
LAYER_METHODS = {
    "layer_forward_ms": "forward ops (F), 2-layer run minus 1-layer run",
    "layer_backward_ms": "backward ops (B, W) and the recompute before them, 2-layer minus 1-layer run",
    "layer_combined_ms": "forward + backward of one layer",
    "overhead_vs_baseline": "combined / the no-recompute baseline's combined - 1",
}
KIND_OF = {  # bound class of each method
    "iteration_s": "time", "tokens_per_s": "throughput", "mfu_korthikanti": "throughput",
    "hfu_korthikanti": "throughput", "tflops_narayanan": "throughput",
    "fraction_of_peak_narayanan": "throughput", "pflops_narayanan": "throughput",
    "tflops_bloom": "throughput", "mfu_dgxc_gpt3": "throughput", "mfu_dgxc_gpt3_fp8": "throughput", "mfu_dgxc_llama": "throughput", "mfu_dgxc_grok": "throughput",
    "mfu_dgxc_nemotron": "throughput",
    "peak_memory_gb": "memory",
    "tflops_palm": "throughput", "mfu_palm": "throughput",
    "layer_forward_ms": "time", "layer_backward_ms": "time", "layer_combined_ms": "time",
    "overhead_vs_baseline": "derived",
}


# ---- inputs --------------------------------------------------------------------

def load_inputs():
    with open(os.path.join(HERE, "published.json")) as f:
        published = {e["id"]: e for e in json.load(f)}
    with open(os.path.join(HERE, "cases.json")) as f:
        cases = json.load(f)
    ids = [c["id"] for c in cases["cases"]]
    missing = [i for i in published if i not in ids]
    unknown = [i for i in ids if i not in published]
    if missing or unknown or len(set(ids)) != len(ids):
        sys.exit("validate.py: cases.json must list every published.json id once "
                 "(missing: %s; unknown: %s)" % (missing, unknown))
    return published, cases


def set_dotted(d, key, value):
    parts = key.split(".")
    for p in parts[:-1]:
        d = d.setdefault(p, {})
    d[parts[-1]] = value


def build_workload(e, case, group):
    """The workload JSON of entry e: its stated numbers, then the group's and
    the case's explicit settings (each a documented choice)."""
    m, t, p = e["model"], e["training"], e["parallel"]
    w = {"name": e["id"][:127], "description": e["source"][:2000], "model": {}, "training": {},
         "parallel": {}, "planner": "megatron"}
    for k in ("num_layers", "hidden_size", "num_attention_heads", "num_query_groups",
              "ffn_hidden_size", "seq_length", "vocab_size",
              "num_experts", "moe_router_topk", "moe_ffn_hidden_size"):
        if isinstance(m.get(k), int):
            w["model"][k] = m[k]
    for k in ("swiglu", "moe_pad_expert_input_to_capacity"):
        if isinstance(m.get(k), bool):
            w["model"][k] = m[k]
    if isinstance(m.get("moe_expert_capacity_factor"), (int, float)):
        w["model"]["moe_expert_capacity_factor"] = m["moe_expert_capacity_factor"]
    if m.get("moe_token_dispatcher_type") in ("alltoall", "allgather"):
        w["model"]["moe_token_dispatcher_type"] = m["moe_token_dispatcher_type"]
    for k in ("global_batch_size", "micro_batch_size"):
        if isinstance(t.get(k), int):
            w["training"][k] = t[k]
    if isinstance(t.get("sequence_parallel"), bool):
        w["training"]["sequence_parallel"] = t["sequence_parallel"]
    if isinstance(t.get("flash"), bool):
        w["training"]["use_flash_attn"] = t["flash"]
    rec = str(t.get("recompute", "")).split(" ")[0]
    if rec in ("none", "selective", "full"):
        w["training"]["recompute_granularity"] = rec
    for src, dst in (("tp", "tensor_model_parallel_size"), ("pp", "pipeline_model_parallel_size"),
                     ("dp", "data_parallel_size")):
        if isinstance(p.get(src), int):
            w["parallel"][dst] = p[src]
    if isinstance(p.get("ep"), int) and p["ep"] > 1:
        w["parallel"]["expert_model_parallel_size"] = p["ep"]
    if isinstance(p.get("cp"), int) and p["cp"] > 1:
        w["parallel"]["context_parallel_size"] = p["cp"]
    if isinstance(p.get("vpp"), int) and p["vpp"] > 1:
        w["parallel"]["virtual_pipeline_model_parallel_size"] = p["vpp"]
        w["schedule"] = "interleaved"
    for src in (group.get("workload", {}), case.get("workload", {})):
        for k, v in src.items():
            set_dotted(w, k, v)
    return w


# ---- platforms -----------------------------------------------------------------

# Shipped platforms that are exactly a preset at a size (gen_platform.py's
# own SHIPPED table writes them): used as they are.
SHIPPED = {("a100", 128): "dgx_a100_128.xml", ("a100", 1024): "dgx_a100_1024.xml",
           ("h100", 16384): "h100_16k.xml"}


def platform_for(spec, npus, tmp, overrides=None):
    """Path of the platform for `spec` ({"preset": ..., "nic_Bps": ...}):
    a shipped file when it is exactly that (SHIPPED), else written into tmp
    by gen_platform.py (its CLI; a preset changed in memory for a
    calibration trial or a fabric the entry states)."""
    preset = spec["preset"]
    changes = dict(spec.get("preset_changes", {}))
    changes.update(overrides or {})
    if not changes and (preset, npus) in SHIPPED:
        return os.path.join(ROOT, "platforms", SHIPPED[(preset, npus)])
    tag = "_".join("%s-%s" % (k, v) for k, v in sorted(changes.items()))
    path = os.path.join(tmp, "%s_%d%s.xml" % (preset, npus, ("_" + tag) if tag else ""))
    if os.path.exists(path):
        return path
    if not changes:
        subprocess.run([PYTHON, os.path.join(ROOT, "platforms", "gen_platform.py"), "--preset", preset,
                        "--npus", str(npus), "-o", path], check=True)
        return path
    name = "%s~%s" % (preset, tag)
    gen_platform.PRESETS[name] = dict(copy.deepcopy(gen_platform.PRESETS[preset]), **changes)
    for k in changes:  # say in the XML what was changed, and why
        src = {"matmul_efficiency": "eff_src", "nic_Bps": "nic_src", "hbm_bytes": "hbm_src"}.get(k)
        if src:
            gen_platform.PRESETS[name][src] = spec.get("why", "changed by validate.py") + \
                " (%s = %s)" % (k, changes[k])
    text = gen_platform.fat_tree_platform(name, npus)
    with open(path + ".part", "w") as f:
        f.write(text)
    os.replace(path + ".part", path)
    return path


# ---- running simrun ------------------------------------------------------------

class Run:
    def __init__(self, key, platform, workload, options, trace=False):
        self.key, self.platform, self.workload, self.options, self.trace = key, platform, workload, options, trace
        self.row, self.error, self.wall, self.trace_ops = None, None, 0.0, None


def run_simrun(build, tmp, run):
    wl_path = os.path.join(tmp, run.key + ".json")
    with open(wl_path, "w") as f:
        json.dump(run.workload, f, indent=1)
    csv_path = os.path.join(tmp, run.key + ".csv")
    if os.path.exists(csv_path):
        os.remove(csv_path)
    cmd = [os.path.join(build, "simrun"), "--quiet", "--csv", csv_path] + run.options
    trace_path = os.path.join(tmp, run.key + ".trace.json")
    if run.trace:
        cmd += ["--trace", trace_path]
    cmd += [run.platform, wl_path]
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run.wall = time.time() - t0
    if p.returncode != 0:
        run.error = "simrun exit %d: %s" % (p.returncode, (p.stderr.strip().splitlines() or ["?"])[0])
        return run
    with open(csv_path, newline="") as f:
        run.row = list(csv.DictReader(f))[0]
    if run.trace:
        with open(trace_path) as f:
            d = json.load(f)
        ops = {}
        for ev in (d["traceEvents"] if isinstance(d, dict) else d):
            if ev.get("ph") == "X":
                kind = ev["name"].split(" ")[0]
                ops[kind] = ops.get(kind, 0.0) + ev["dur"] * 1e-6
        run.trace_ops = ops
    return run


def run_all(build, tmp, runs, jobs):
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        # the longest first, so that the two workers finish together
        order = sorted(runs, key=lambda r: -r.workload.get("_cost", 0))
        for r in order:
            r.workload.pop("_cost", None)
        list(pool.map(lambda r: run_simrun(build, tmp, r), order))


def estimated_cost(w, options):
    """A rough weight for ordering runs: simulated workers x micro-batches."""
    p = w["parallel"]
    d = p.get("data_parallel_size", 1)
    if "--fold-dp" in options:
        d = int(options[options.index("--fold-dp") + 1])
    m = w["training"].get("global_batch_size", 1) / max(1, w["training"].get("micro_batch_size", 1) *
                                                       p.get("data_parallel_size", 1))
    return (p.get("pipeline_model_parallel_size", 1) * d * m * p.get("virtual_pipeline_model_parallel_size", 1)
            * p.get("context_parallel_size", 1))


# ---- the table ----------------------------------------------------------------

def prepare(published, cases, tmp, only, platform_overrides=None):
    """Runs to make, per case."""
    groups = cases["groups"]
    plans = []
    for c in cases["cases"]:
        if only and c["id"] not in only:
            continue
        e = published[c["id"]]
        g = groups.get(c.get("group", ""), {})
        if not c.get("simulate", g.get("simulate", True)):
            plans.append((c, e, g, []))
            continue
        w = build_workload(e, c, g)
        options = list(g.get("options", [])) + list(c.get("options", []))
        spec = dict(g.get("platform", {}), **c.get("platform", {}))
        npus = e["npus"]
        ov = (platform_overrides or {}).get(spec["preset"])
        pf = platform_for(spec, npus, tmp, ov)
        runs = []
        if c.get("layer_runs"):
            for L in c["layer_runs"]:
                wl = copy.deepcopy(w)
                wl["model"]["num_layers"] = L
                r = Run("%s.L%d" % (c["id"], L), pf, wl, options, trace=True)
                runs.append(r)
        else:
            w["_cost"] = estimated_cost(w, options)
            runs.append(Run(c["id"], pf, w, options))
        plans.append((c, e, g, runs))
    return plans


def figure_specs(c, g, e):
    specs = dict(g.get("figures", {}))
    specs.update(c.get("figures", {}))
    out = []
    for key in e["measured"]:
        if key not in specs:
            continue
        s = specs[key]
        if isinstance(s, str):
            s = {"method": s}
        out.append((key, s))
    return out


def bound_of(kind, cases):
    return cases["bounds"].get(kind)


def evaluate(plans, cases, published):
    """Rows of the table: one per published figure."""
    rows = []
    layer_combined = {}
    for c, e, g, runs in plans:
        src = c.get("source_short", g.get("source_short", e["source"].split(",")[0]))
        assumptions = list(g.get("assumptions", [])) + list(c.get("assumptions", []))
        calib = [d for d, cal in cases["calibration"].items() if cal["id"] == c["id"]]
        if not runs:
            for key, val in e["measured"].items():
                rows.append(dict(id=c["id"], source=src, figure=key, published=val, simulated=None,
                                 error=None, kind=None, bound=None, verdict="not simulated",
                                 reason=c.get("reason", g.get("reason", "")), counted=False,
                                 assumptions=[], calibration=False, wall=0.0))
            continue
        failed = [r for r in runs if r.error]
        wall = sum(r.wall for r in runs)
        sim_vals = {}
        if not failed and c.get("layer_runs"):
            a, b = runs[0].trace_ops, runs[1].trace_ops
            diff = {k: b.get(k, 0.0) - a.get(k, 0.0) for k in set(a) | set(b)}
            fwd = diff.get("F", 0.0)
            bwd = diff.get("B", 0.0) + diff.get("W", 0.0) + diff.get("recompute", 0.0)
            sim_vals = {"layer_forward_ms": fwd * 1e3, "layer_backward_ms": bwd * 1e3,
                        "layer_combined_ms": (fwd + bwd) * 1e3}
            layer_combined[c["id"]] = sim_vals["layer_combined_ms"]
        past_memory = any("--ignore-memory" in r.options for r in runs)
        for key, s in figure_specs(c, g, e):
            method = s["method"]
            kind = s.get("kind", KIND_OF[method])
            pub = e["measured"][key]
            row = dict(id=c["id"], source=src, figure=key, published=pub, method=method, kind=kind,
                       bound=bound_of(kind, cases), counted=s.get("counted", True),
                       assumptions=assumptions, calibration=bool(calib) and key == cases["calibration"][calib[0]]["figure"],
                       wall=wall, reason=c.get("outside", {}).get(key, c.get("outside", {}).get("*", "")),
                       past_memory=past_memory)
            if failed:
                row.update(simulated=None, error=None, verdict="simulation failed",
                           reason=(row["reason"] + ". The simulator: " if row["reason"] else "") + failed[0].error)
                rows.append(row)
                continue
            if method in METHODS:
                sim = METHODS[method][0](runs[0].row, e)
            elif method == "overhead_vs_baseline":
                base = s["baseline"]
                sim = None
                if base in layer_combined:
                    sim = sim_vals["layer_combined_ms"] / layer_combined[base] - 1
            else:
                sim = sim_vals[method]
            row["simulated"] = sim
            row["run"] = runs[0].row
            rows.append(row)
    # derived rows (ratios of two simulated figures)
    ran = {c["id"] for c, e, g, runs in plans if runs}
    for d in cases.get("derived", []):
        if d["numerator"] not in ran or d["denominator"] not in ran:
            continue
        num = next((r for r in rows if r["id"] == d["numerator"] and r["figure"] == "iteration_s"), None)
        den = next((r for r in rows if r["id"] == d["denominator"] and r["figure"] == "iteration_s"), None)
        row = dict(id=d["id"], source=d["source_short"], figure=d["figure"], published=d["published"],
                   kind="ratio", bound=bound_of("ratio", cases), counted=True, assumptions=[],
                   calibration=False, wall=0.0, reason=d.get("outside", ""), method="ratio")
        if num and den and num.get("simulated") and den.get("simulated"):
            row["simulated"] = num["simulated"] / den["simulated"]
            row["num_den"] = (num["simulated"], den["simulated"])
        else:
            row.update(simulated=None, verdict="simulation failed")
        rows.append(row)
    for row in rows:
        if row.get("verdict"):
            continue
        sim, pub = row["simulated"], row["published"]
        if sim is None:
            row["verdict"] = "simulation failed"
            continue
        if row["kind"] == "derived":
            row["error"] = None
            row["verdict"] = "derived (no bound)"
            continue
        row["error"] = (sim - pub) / pub
        inside = abs(row["error"]) <= row["bound"] + 1e-12
        if row["calibration"]:
            row["verdict"] = "calibration point" if abs(row["error"]) < 0.005 else "CALIBRATION STALE"
        elif inside:
            row["verdict"] = "within"
        else:
            row["verdict"] = "outside (explained)" if row["reason"] else "OUTSIDE"
    return rows


def memory_rows(build, tmp, cases):
    """The Megatron-LM theoretical-memory comparison: the CUnit suite
    validation_memory computes the simulator's stage-0 figures with
    mem_stage_bytes() and writes them to a JSON file."""
    out = os.path.join(tmp, "memory.json")
    env = dict(os.environ, NPUSIM_VALIDATION_MEMORY_OUT=out)
    p = subprocess.run([os.path.join(build, "npusim_tests"), "validation_memory"], cwd=ROOT, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rows = []
    sim = {}
    if os.path.exists(out):
        with open(out) as f:
            sim = {x["config"]: x for x in json.load(f)}
    for m in cases["memory_formula"]:
        for comp, key in (("weights+optimizer", "weights_optimizer_gib"), ("activations", "activation_gib")):
            s = sim.get(m["config"], {}).get(key)
            row = dict(id="megatron-theoretical-memory-%s" % m["config"], source=m["source_short"],
                       figure="%s GiB (stage 0)" % comp, published=m[key], simulated=s, kind="memory",
                       bound=cases["bounds"]["memory"], counted=True, assumptions=[], calibration=False,
                       wall=0.0, reason=m.get("outside", {}).get(key, ""), method="mem_stage_bytes")
            if s is None:
                row.update(error=None, verdict="simulation failed",
                           reason="npusim_tests validation_memory wrote no figure (exit %d)" % p.returncode)
            else:
                row["error"] = (s - m[key]) / m[key]
                inside = abs(row["error"]) <= row["bound"] + 1e-12
                row["verdict"] = "within" if inside else ("outside (explained)" if row["reason"] else "OUTSIDE")
            rows.append(row)
    return rows, p.returncode, p.stdout


# ---- folding check --------------------------------------------------------------

def fold_runs(plans, ids):
    """Every id in `ids` once more without --fold-dp: the folded run must give
    the same iteration time (docs/design.md: exact on non-tapered trees).
    Returns (folded run, unfolded run) pairs, to be run with the others."""
    pairs = []
    for c, e, g, rs in plans:
        if c["id"] in ids and rs and "--fold-dp" in rs[0].options:
            opts = list(rs[0].options)
            i = opts.index("--fold-dp")
            del opts[i:i + 2]
            w = copy.deepcopy(rs[0].workload)
            w["_cost"] = estimated_cost(w, opts)
            pairs.append((rs[0], Run(c["id"] + ".nofold", rs[0].platform, w, opts)))
    return pairs


def fold_results(pairs):
    out = []
    for folded, full in pairs:
        out.append(dict(id=folded.key, folded=float(folded.row["iteration_s"]) if folded.row else None,
                        full=float(full.row["iteration_s"]) if full.row else None,
                        folded_wall=folded.wall, full_wall=full.wall,
                        fold=folded.options[folded.options.index("--fold-dp") + 1],
                        dp=folded.workload["parallel"].get("data_parallel_size"),
                        error=full.error or folded.error))
    return out


# ---- calibration ----------------------------------------------------------------

def calibrate(build, device, published, cases, tmp):
    cal = cases["calibration"][device]
    target = published[cal["id"]]["measured"][cal["figure"]]
    prop = cal["property"]
    lo, hi = cal.get("search", [0.3, 1.0])
    print("calibrating the %s preset's %s on %s (%s = %g)" % (device, prop, cal["id"], cal["figure"], target))

    def simulate(x):
        plans = prepare(published, cases, tmp, [cal["id"]], {device: {prop: round(x, 6)}})
        runs = plans[0][3]
        run_all(build, tmp, runs, 1)
        if runs[0].error:
            sys.exit("validate.py: " + runs[0].error)
        return float(runs[0].row[cal["figure"]])

    t_lo, t_hi = simulate(lo), simulate(hi)
    if not (t_hi <= target <= t_lo):
        sys.exit("validate.py: %s = %g at %g and %g at %g: the target %g is outside" % (
            cal["figure"], t_lo, lo, t_hi, hi, target))
    for _ in range(40):
        mid = (lo + hi) / 2
        t = simulate(mid)
        print("  %s %.6f -> %s %.5f" % (prop, mid, cal["figure"], t))
        if t > target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 5e-5:
            break
    x = round((lo + hi) / 2, 4)
    t = simulate(x)
    print("%s %s = %.4f reproduces %s %.4f (published %g, %+.3f%%)" % (
        device, prop, x, cal["figure"], t, target, 100 * (t - target) / target))
    return x


# ---- printing -------------------------------------------------------------------

def fmt_val(v):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if abs(v) >= 1000:
        return "%.0f" % v
    if abs(v) >= 100:
        return "%.1f" % v
    if abs(v) >= 1:
        return "%.3g" % v if abs(v) < 10 else "%.2f" % v
    return "%.4f" % v


def fmt_err(r):
    if r.get("error") is None:
        if r["kind"] == "derived" and r.get("simulated") is not None:
            return "%+.3f abs" % (r["simulated"] - r["published"])
        return "-"
    return "%+.1f%%" % (100 * r["error"])


def bound_and_verdict(r, dash, assumed):
    """A row's bound ("5%", or dash when it has none) and its verdict with the
    ", restates" and assumed marks of the table, and the mark of a run
    simulated past the memory check (simrun --ignore-memory)."""
    b = dash if r.get("bound") is None or r["kind"] == "derived" else "%d%%" % round(100 * r["bound"])
    v = r["verdict"]
    if not r["counted"] and v != "not simulated":
        v += ", restates"
    if r["assumptions"] and r.get("simulated") is not None:
        v += ", " + assumed
    if r.get("past_memory") and r.get("simulated") is not None:
        v += ", past the memory check"
    return b, v


def print_table(rows, out=sys.stdout):
    """One line per figure; an entry's reason (or assumptions) once, under
    its last figure that needs it."""
    w_id = max(len(r["id"]) for r in rows)
    w_fig = max(len(r["figure"]) for r in rows)
    out.write("%-*s  %-*s %12s %12s %9s %6s  %s\n" % (w_id, "id", w_fig, "figure", "published", "simulated",
                                                      "error", "bound", "verdict -- source"))
    for i, r in enumerate(rows):
        b, v = bound_and_verdict(r, "-", "assumed")
        out.write("%-*s  %-*s %12s %12s %9s %6s  %s -- %s\n" % (
            w_id, r["id"], w_fig, r["figure"], fmt_val(r["published"]), fmt_val(r.get("simulated")),
            fmt_err(r), b, v, r["source"]))
        last = i + 1 == len(rows) or rows[i + 1]["id"] != r["id"]
        if not last:
            continue
        mine = [x for x in rows if x["id"] == r["id"]]
        reasons = []
        for x in mine:
            if x["verdict"] not in ("within", "calibration point", "derived (no bound)") and x.get("reason") \
                    and x["reason"] not in reasons:
                reasons.append(x["reason"])
        for t in reasons:
            out.write("%-*s    reason: %s\n" % (w_id, "", t))
        if r["assumptions"] and r.get("simulated") is not None:
            out.write("%-*s    assumed: %s\n" % (w_id, "", "; ".join(r["assumptions"])))


def summarize(rows):
    bounded = [r for r in rows if r["counted"] and r["kind"] not in (None, "derived") and not r["calibration"]
               and r["verdict"] != "not simulated"]
    firm = [r for r in bounded if not r["assumptions"]]
    assumed = [r for r in bounded if r["assumptions"]]

    def within(rs):
        return len([r for r in rs if r["verdict"] == "within"])

    s = dict(
        figures=len(rows),
        not_simulated=len([r for r in rows if r["verdict"] == "not simulated"]),
        bounded=len(bounded),
        within=within(bounded),
        firm=len(firm), firm_within=within(firm),
        assumed=len(assumed), assumed_within=within(assumed),
        unexplained=[r for r in rows if r["verdict"] in ("OUTSIDE", "CALIBRATION STALE")
                     or (r["verdict"] == "simulation failed" and not r.get("reason"))],
        restated=len([r for r in rows if not r["counted"] and r["verdict"] != "not simulated"]),
    )
    # published measurements alone: not the 175B ratio (its denominator is the
    # calibration point) nor the memory-formula checks (Megatron's formula, not
    # a measurement)
    measured = [r for r in bounded if r["kind"] != "ratio"
                and not r["id"].startswith("megatron-theoretical-memory")]
    firm_m = [r for r in measured if not r["assumptions"]]
    s.update(measured=len(measured), measured_within=within(measured),
             firm_measured=len(firm_m), firm_measured_within=within(firm_m),
             past_memory_within=within([r for r in measured if r.get("past_memory")]))
    return s


# ---- same layer shapes in two papers ----------------------------------------------

SAME_SHAPES = [
    # (Korthikanti full-recompute entry, Narayanan entry of the same layer shape)
    ("korthikanti22-t5-175B-full-recompute", "narayanan21-t2-ptd-174.6B-384gpu"),
    ("korthikanti22-t5-530B-full-recompute", "narayanan21-t1-529.6B"),
    ("korthikanti22-t5-1T-full-recompute", "narayanan21-t1-1008.0B"),
]


def same_shapes(rows, published):
    """Korthikanti's full-recompute runs expressed in Narayanan's Eq. 3
    TFLOP/s per GPU (the same convention: full recompute counted), beside
    Narayanan's own figure for the same layer shape, and the simulator's
    Eq. 3 figure for both."""
    out = []
    for k, n in SAME_SHAPES:
        ek, en = published[k], published[n]
        rk = next((r for r in rows if r["id"] == k and r["figure"] == "iteration_s"), None)
        rn = next((r for r in rows if r["id"] == n and r["figure"] == "tflops_per_gpu"), None)
        eq3 = lambda t: narayanan_flops(ek, 51200) / (t * ek["npus"]) / 1e12
        out.append(dict(
            shape="h %d, %d layers" % (ek["model"]["hidden_size"], ek["model"]["num_layers"]),
            k=k, n=n, k_pub=eq3(ek["measured"]["iteration_s"]),
            k_sim=eq3(rk["simulated"]) if rk and rk.get("simulated") else None,
            n_pub=en["measured"]["tflops_per_gpu"],
            n_sim=rn.get("simulated") if rn else None))
    return out


# ---- docs -----------------------------------------------------------------------

def md_escape(t):
    return str(t).replace("|", "\\|")


def write_docs(path, rows, summary, cases, published, fold, wall, mem_rc, slowest=None):
    cal_a = cases["calibration"]["a100"]
    cal_h = cases["calibration"].get("h100")
    pa = gen_platform.PRESETS["a100"]
    ph = gen_platform.PRESETS["h100"]
    L = []
    w = L.append
    w("# Validation against published training runs")
    w("")
    w("<!-- Generated by `scripts/validate.sh --write-docs` (tests/validation/validate.py); "
      "edit validate.py or tests/validation/cases.json, not this file. -->")
    w("")
    w("npusim's simulated iteration times, throughputs and memory against the published "
      "measurements collected in `tests/validation/published.json` (sources and how they were "
      "read: `tests/validation/SOURCES.md`).  One command runs it and rewrites this page:")
    w("")
    w("```sh")
    w("scripts/validate.sh               # the table on stdout; exit 1 if a figure is outside its bound without a reason")
    w("scripts/validate.sh --write-docs  # the same, and this page")
    w("scripts/validate.sh --calibrate a100   # the bisection that gave the A100 constant below")
    w("```")
    w("")
    w("`tests/validation/validate.py` is glue: per published entry it writes a workload JSON and "
      "picks a platform into a temporary folder (the shipped `platforms/dgx_a100_128.xml`, "
      "`dgx_a100_1024.xml` and `h100_16k.xml` where the device and GPU count match, otherwise `platforms/gen_platform.py "
      "--preset a100|h100 --npus N`), runs `build/simrun --csv`, and turns the simulated "
      "iteration time into the published figure with the formula the source used.  What is "
      "simulated for each entry, every setting the source does not state, and the reason for "
      "every figure outside its bound are in `tests/validation/cases.json`.")
    w("")
    w("Bounds (the validation issue): every time or throughput within %d%%, every memory figure "
      "within %d%%, and the GPT-3 175B selective/full ratio within %d%% of 13.75/18.13 = %.3f." % (
          round(100 * cases["bounds"]["time"]), round(100 * cases["bounds"]["memory"]),
          round(100 * cases["bounds"]["ratio"]), 13.75 / 18.13))
    w("")
    w("## Calibration: one constant per device, from one named measurement")
    w("")
    ea = published[cal_a["id"]]
    w("- **A100**: `matmul_efficiency` of the `a100` preset in `platforms/presets.py` = "
      "**%s**, chosen by bisection (`validate.py --calibrate a100`) so that %s is reproduced: "
      "%s, GPT-3 175B, TP 8, PP 8 (interleaved, 3 chunks per stage), 64 GPUs, global batch 64, "
      "micro-batch 1, sequence 2048, full recompute without sequence parallelism: **%s s**." % (
          gen_platform.fmt(pa["matmul_efficiency"]), "`%s`" % cal_a["id"], cal_a["citation"],
          ea["measured"]["iteration_s"]))
    if cal_h:
        eh = published[cal_h["id"]]
        w("- **H100**: `matmul_efficiency` of the `h100` preset = **%s**, by the same bisection "
          "(`--calibrate h100`) on `%s`: %s, GPT-3 175B, TP 4, PP 8, VP 12, DP 4 (128 GPUs), global "
          "batch 256, micro-batch 1, no recompute, sequence parallelism, Transformer Engine's "
          "tensor-parallel overlap, overlap_p2p_comm, 220 MiB gradient buckets and the gradient "
          "sync in bf16 as the recipe states them: "
          "**%s s**.  The h100 preset "
          "gives no `attention_efficiency`, so its FlashAttention runs at this value too." % (
              gen_platform.fmt(ph["matmul_efficiency"]), cal_h["id"], cal_h["citation"],
              eh["measured"]["iteration_s"]))
    w("")
    w("Every other row is a prediction: no other figure was used to choose any number.  The "
      "other properties of the presets are published figures, not fitted: the A100's "
      "`attention_efficiency` %s (FlashAttention-2's forward, Dao 2023), `elementwise_fusion` %s "
      "(Megatron's bias-dropout-add fusion default) and `collective_bus_efficiency` %s (NCCL "
      "all-reduce bus bandwidth measured on 8 A100s over NVSwitch, about 200 and 208 GB/s of "
      "300: nccl-tests issues 149 and 178) and `hbm_efficiency` %s (a read kernel at 1.80 of "
      "2.04 TB/s, NVIDIA developer forum thread 339083); the H100's `elementwise_fusion` %s, "
      "`collective_bus_efficiency` %s (NCCL's maintainer's figure, nccl-tests issue 212) and "
      "`hbm_efficiency` %s (softmax at 3.01 of 3.35 TB/s: Guo, Zadouri and Dao 2025, 'Getting "
      "Memory-bound Kernels to Speed-of-Light'); "
      "peak FLOP/s, HBM, NVLink and NIC bandwidths from the "
      "datasheets; each with its citation in `platforms/presets.py` and as an XML comment in every "
      "platform.  Latencies and kernel launch overheads are the presets' stated assumptions.  "
      "The single constant absorbs everything the cost model leaves out (kernel-level effects, "
      "what Transformer Engine's tensor-parallel overlap costs the GEMMs it overlaps, data "
      "loading, logging), which is why "
      "it is lower than a large GEMM's efficiency on its own.  What the model does include of "
      "the overlaps these runs use: Megatron's backward tensor-parallel overlap (the "
      "column-parallel layers' input-gradient reduction behind their weight-gradient GEMM and, "
      "with SP, their input's all-gather behind the input-gradient GEMM), and with `--dp-overlap` "
      "the gradient reduce-scatter during the backward and the parameter all-gather of the "
      "distributed optimizer during the next forward (NeMo's overlap_grad_sync and "
      "overlap_param_sync)." % (
          gen_platform.fmt(pa["attention_efficiency"]), pa["elementwise_fusion"],
          gen_platform.fmt(pa["collective_bus_efficiency"]), gen_platform.fmt(pa["hbm_efficiency"]),
          ph["elementwise_fusion"], gen_platform.fmt(ph["collective_bus_efficiency"]),
          gen_platform.fmt(ph["hbm_efficiency"])))
    w("")
    w("## Summary")
    w("")
    w("- %d published figures in %d entries, plus the 175B selective/full ratio and %d "
      "Megatron-LM memory-formula figures; %d published figures not simulated (the reason is in "
      "the table); %d restate another figure of the same entry by a fixed formula (MFU from the "
      "time, fraction of peak from TFLOP/s, ...) and are shown but not counted." % (
          sum(len(e["measured"]) for e in published.values()), len(published), summary["memory_rows"],
          summary["not_simulated"], summary["restated"]))
    w("- **%d of %d** published measurements are within their bound (the calibration points, "
      "the 175B ratio and the memory-formula checks apart); **%d of %d** of those simulated with "
      "every setting as the source states.  With the ratio and the %d memory-formula checks, "
      "%d of %d counted figures are within: of the %d with every setting stated, %d; of the %d "
      "with a setting the source does not state (marked *assumed*, the assumption listed below "
      "the table), %d.%s" % (
          summary["measured_within"], summary["measured"], summary["firm_measured_within"],
          summary["firm_measured"], summary["memory_rows"], summary["within"], summary["bounded"],
          summary["firm"], summary["firm_within"], summary["assumed"], summary["assumed_within"],
          ("  %d of the measurements within %s simulated past the memory check (the source's "
           "configuration, which ran, over the device by the memory model)."
           % (summary["past_memory_within"], "was" if summary["past_memory_within"] == 1 else "were"))
          if summary["past_memory_within"] else ""))
    ratio = next((r for r in rows if r["kind"] == "ratio"), None)
    if ratio and ratio.get("simulated") is not None:
        w("- GPT-3 175B selective/full iteration-time ratio: simulated **%.3f** (%.3f s / %.3f s), "
          "published 13.75/18.13 = %.3f, error %+.1f%% (bound %d%%): %s." % (
              ratio["simulated"], ratio["num_den"][0], ratio["num_den"][1], ratio["published"],
              100 * ratio["error"], round(100 * ratio["bound"]), ratio["verdict"]))
    w("- The whole validation took %.0f s of wall time on this project's 2-core machine "
      "(`--fold-dp` where DP is large; see \"Folding\")." % wall)
    w("")
    w("## The table")
    w("")
    w("Error = (simulated − published) / published.  *Restates*: the figure is another figure "
      "of the same entry through a fixed formula.  *Assumed*: a setting the source does not "
      "state was chosen (listed under the table).  *Past the memory check*: the source's "
      "configuration, which ran, is simulated although the memory model puts it over the "
      "device (`simrun --ignore-memory`; the entry's assumptions give the figures).")
    w("")
    w("| id | source | figure | published | simulated | error | bound | verdict |")
    w("|---|---|---|---|---|---|---|---|")
    for r in rows:
        b, v = bound_and_verdict(r, "—", "*assumed*")
        w("| `%s` | %s | %s | %s | %s | %s | %s | %s |" % (
            r["id"], md_escape(r["source"]), md_escape(r["figure"]), fmt_val(r["published"]),
            fmt_val(r.get("simulated")), fmt_err(r).replace("%", "%"), b, v))
    w("")
    w("## Reasons: every figure outside its bound, and every entry not simulated")
    w("")
    groups = []  # (reason, [(id, figures, verdict)]), in table order
    for r in rows:
        if r["verdict"] in ("within", "calibration point", "derived (no bound)") or not r.get("reason"):
            continue
        g = next((g for g in groups if g[0] == r["reason"]), None)
        if g is None:
            g = (r["reason"], [])
            groups.append(g)
        ent = next((x for x in g[1] if x[0] == r["id"]), None)
        if ent is None:
            g[1].append((r["id"], [r["figure"]], r["verdict"]))
        else:
            ent[1].append(r["figure"])
    for reason, ents in groups:
        names = "; ".join("`%s` (%s)" % (i, ", ".join(f)) for i, f, _ in ents)
        w("- %s, %s: %s" % (names, ents[0][2], md_escape(reason)))
    w("")
    w("## Settings the sources do not state (assumed)")
    w("")
    seen = set()
    for r in rows:
        if r["assumptions"] and r.get("simulated") is not None and r["id"] not in seen:
            seen.add(r["id"])
            w("- `%s`: %s" % (r["id"], md_escape("; ".join(r["assumptions"]))))
    w("")
    w("## How each figure is computed from the simulation")
    w("")
    for name, (_, unit, what) in METHODS.items():
        w("- `%s`: %s" % (name, what))
    for name, what in LAYER_METHODS.items():
        w("- `%s`: %s (Korthikanti Table 4 is one layer; the simulator's per-layer time does not "
          "depend on the number of layers, and the 22B model's 48 layers without recompute do not "
          "fit in 80 GB)" % (name, what) if name == "layer_forward_ms" else "- `%s`: %s" % (name, what))
    w("")
    w("Narayanan's TFLOP/s and BLOOM's count the recompute forward (Eq. 3, 4× the forward "
      "GEMMs) and are compared with the simulated time through that same formula; Korthikanti's "
      "MFU (Eq. 7) does not count it and HFU (Eq. 8) counts the selective recompute only; the "
      "DGX Cloud MFU uses its README's formula and 989 TFLOP/s.  The Llama 3 rows (Table 4) use "
      "PaLM's model FLOPs, the MFU definition the Llama 3 paper cites (Chowdhery et al. 2022, "
      "Appendix B): 6N + 12 L H Q T per token, N every parameter (405.8e9 from Table 3's "
      "dimensions), H Q the hidden size, T the sequence, the full T x T attention counted and no "
      "recompute; its MFU divides by 989 TFLOP/s.  Published 430 / 400 / 380 TFLOP/s per GPU are "
      "then iterations of 12.56 s (8,192 GPUs), 6.75 s (16,384) and 15.31 s (131,072-token "
      "sequences).  In every case the simulated "
      "iteration time goes through the source's formula; the simulator's own MFU column is not "
      "used.")
    w("")
    w("## Same layer shapes, two code bases")
    w("")
    w("Korthikanti's full-recompute runs (2022 code) and Narayanan's runs (2021 code) both recompute "
      "every layer and use the same GPT layer shapes, so both can be put in Narayanan's Eq. 3 "
      "TFLOP/s per GPU.  The A100 constant is calibrated on the first row's Korthikanti run.")
    w("")
    w("| layer shape | Korthikanti 2022, full recompute (Eq. 3) | simulated | Narayanan 2021 | simulated |")
    w("|---|---|---|---|---|")
    for x in same_shapes(rows, published):
        w("| %s | %.1f (`%s`) | %s | %s (`%s`) | %s |" % (
            x["shape"], x["k_pub"], x["k"], "%.1f" % x["k_sim"] if x["k_sim"] else "—", x["n_pub"], x["n"],
            "%.1f" % x["n_sim"] if x["n_sim"] else "—"))
    w("")
    w("The measurements say two things one constant cannot: the larger layers run about 10% closer to "
      "peak than GPT-3's (162 → 180 TFLOP/s in 2022, 153 → 163 in 2021), and the 2021 code ran the "
      "same shapes 6–9% slower than the 2022 code.  The simulator, with one `matmul_efficiency`, "
      "changes only through bubbles, stage imbalance and communication.  This is the reason given "
      "for most A100 rows outside their bound.")
    w("")
    w("## Memory: Megatron-LM's theoretical formulas")
    w("")
    w("`megatron/training/theoretical_memory_usage.py` (SP + selective path, first pipeline "
      "stage, 18 bytes per parameter without the distributed optimizer) against the simulator's "
      "stage-0 figures from `mem_stage_bytes()` (`planner/schedule/memory.c`): static bytes "
      "(weights, gradients, Adam state) and the peak of kept activations, for the four "
      "configurations of Korthikanti Table 3.  The formula's numbers are the worked numbers of "
      "`SOURCES.md` §3 (derived by us from the published formula, not measurements).  The CUnit "
      "suite `validation_memory` (`tests/test_validation_memory.c`) computes the simulator's side "
      "and asserts the same bounds; `validate.py` reads its figures.  Not part of either: the "
      "simulator's %.2f GB workspace and the recompute transient, which the formula does not "
      "count." % 2.33)
    w("")
    w("## Folding")
    w("")
    w("Runs with large data parallelism use `--fold-dp 1` (`cases.json` says which).  "
      "docs/design.md says folding is exact on non-tapered fat trees, which every platform "
      "here is; checked on every folded entry of this run against the same run with every "
      "replica simulated:")
    w("")
    w("| entry | DP | folded (s) | every replica (s) | difference | wall folded / full (s) |")
    w("|---|---|---|---|---|---|")
    for f in fold:
        dp = f["dp"]
        if f["full"] is None:
            w("| `%s` | %s | %.4f | failed: %s | — | — |" % (f["id"], dp, f["folded"], md_escape(f["error"])))
        else:
            w("| `%s` | %s | %.6f | %.6f | %.2e | %.1f / %.1f |" % (
                f["id"], dp, f["folded"], f["full"], abs(f["folded"] - f["full"]) / f["full"],
                f["folded_wall"], f["full_wall"]))
    w("")
    if slowest:
        w("The slowest run of this validation: `%s`, %.0f s of wall time (%s)." % (
            slowest[0], slowest[1], "with `--dp-overlap`, which `--fold-dp` refuses"
            if "--dp-overlap" in slowest[2] else " ".join(slowest[2]) or "no options"))
        w("")
    w("## What is missing")
    w("")
    for item in cases.get("missing", []):
        w("- " + item)
    w("")
    text = "\n".join(L)
    with open(path + ".part", "w") as f:
        f.write(text)
    os.replace(path + ".part", path)


# ---- main -----------------------------------------------------------------------

def main(argv):
    ap = argparse.ArgumentParser(prog="validate.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="build folder (default build)")
    ap.add_argument("--jobs", type=int, default=2, help="simrun processes at a time (default 2)")
    ap.add_argument("--only", action="append", default=[], metavar="ID", help="only this published id")
    ap.add_argument("--keep", metavar="DIR", help="write the inputs and CSVs into DIR and keep them")
    ap.add_argument("--calibrate", metavar="DEVICE", help="bisection of DEVICE's calibration constant")
    ap.add_argument("--write-docs", nargs="?", const=os.path.join(ROOT, "docs", "validation.md"),
                    metavar="FILE", help="also write the page (default docs/validation.md)")
    ap.add_argument("--no-fold-check", action="store_true", help="skip re-running folded entries unfolded")
    a = ap.parse_args(argv)
    build = os.path.abspath(a.build)
    if not os.access(os.path.join(build, "simrun"), os.X_OK):
        sys.exit("validate.py: %s/simrun not found: build first (cmake --build %s -j2)" % (build, build))
    published, cases = load_inputs()
    unknown = [i for i in a.only if i not in published]
    if unknown:
        sys.exit("validate.py: --only %s: not an id of tests/validation/published.json "
                 "(e.g. %s)" % (unknown[0], sorted(published)[0]))
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        tmp = os.path.abspath(a.keep)
    else:
        tmp = tempfile.mkdtemp(prefix="npusim-validate-")
    t0 = time.time()
    try:
        if a.calibrate:
            if a.calibrate not in cases["calibration"]:
                sys.exit("validate.py: no calibration point for %r in cases.json" % a.calibrate)
            calibrate(build, a.calibrate, published, cases, tmp)
            return 0
        plans = prepare(published, cases, tmp, set(a.only))
        pairs = [] if a.no_fold_check else fold_runs(plans, set(cases.get("fold_check", [])))
        run_all(build, tmp, [r for p in plans for r in p[3]] + [f for _, f in pairs], a.jobs)
        rows = evaluate(plans, cases, published)
        mem_rc, mem_out = 0, ""
        if not a.only:
            mrows, mem_rc, mem_out = memory_rows(build, tmp, cases)
            rows += mrows
        fold = fold_results(pairs)
        wall = time.time() - t0
        print_table(rows)
        s = summarize(rows)
        s["memory_rows"] = len([r for r in rows if r["id"].startswith("megatron-theoretical-memory")])
        print()
        print("%d of %d published measurements within their bound (%d of %d with every setting "
              "stated); with the 175B ratio and the memory-formula checks %d of %d bounded figures "
              "(%d with every setting stated: %d within; %d with assumed settings: %d within); %d "
              "figures not simulated; %d restated; %.0f s" % (
                  s["measured_within"], s["measured"], s["firm_measured_within"], s["firm_measured"],
                  s["within"], s["bounded"], s["firm"], s["firm_within"], s["assumed"],
                  s["assumed_within"], s["not_simulated"], s["restated"], wall))
        for f in fold:
            if f["full"] is not None:
                print("fold check %s: folded %.6f s, every replica %.6f s (%.1f s / %.1f s wall)" % (
                    f["id"], f["folded"], f["full"], f["folded_wall"], f["full_wall"]))
        if mem_rc:
            print("npusim_tests validation_memory failed (exit %d):\n%s" % (mem_rc, mem_out))
        if a.write_docs:
            runs = [r for p in plans for r in p[3]]
            top = max(runs, key=lambda r: r.wall) if runs else None
            write_docs(a.write_docs, rows, s, cases, published, fold, wall, mem_rc,
                       (top.key, top.wall, top.options) if top else None)
            print("wrote %s" % os.path.relpath(a.write_docs, ROOT))
        bad = s["unexplained"]
        for r in bad:
            print("validate.py: %s %s: %s without a reason in cases.json" % (r["id"], r["figure"], r["verdict"]),
                  file=sys.stderr)
        return 1 if bad or mem_rc else 0
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
