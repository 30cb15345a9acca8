#!/usr/bin/python3
"""plot_frontier.py -- the time-memory Pareto frontier of candidate plans.

    plot_frontier.py frontier.csv -o frontier.png [--group COLUMN] [--title TEXT]

One point per candidate plan: peak device memory (GB) across, iteration time
up.  Feasible plans (they fit and were simulated) are filled, infeasible ones
hollow.  The frontier is recomputed here from the rows given, as TensorOpt's
Frontier Tracking defines it (Cai et al., TPDS 2022): the plans that no other
plan beats on both time and memory (t' <= t and m' <= m, one strictly); it is
drawn as a staircase and its points are labelled "tp/pp/dp mbs recompute".
A CSV that already holds only a frontier is its own frontier.  The fastest
feasible plan is starred.  With --group (e.g. workload), one frontier per
value of the column, in its own colour.

Columns (analysis/README.md, "Frontier CSV"): required tp, pp, dp,
micro_batch_size, recompute, iteration_s, memory_bytes, feasible
(true/false or 1/0; an infeasible row may leave iteration_s empty or nan,
and is then counted in the title but not drawn); optional capacity_bytes (one value for the whole file,
drawn as a vertical line) and label (replaces the point label).
"""

import argparse
import math
from collections import OrderedDict

import npcsv

COLUMNS = ["tp", "pp", "dp", "micro_batch_size", "recompute", "iteration_s", "memory_bytes",
           "feasible"]
TRUE = {"true", "1", "yes"}
FALSE = {"false", "0", "no"}
MAX_LABELLED = 14


def feasible(table, i):
    v = table.text(i, "feasible").lower()
    if v in TRUE:
        return True
    if v in FALSE:
        return False
    raise npcsv.InputError(f"{table.path}:{table.lines[i]}: column 'feasible': expected "
                           f"true/false or 1/0, got '{table.text(i, 'feasible')}'")


def has_time(table, i):
    """Feasible rows need a finite iteration_s; an infeasible one may leave it
    empty or nan (never simulated), and is then counted but not drawn."""
    text = table.text(i, "iteration_s")
    if not feasible(table, i) and text.lower() in ("", "nan"):
        return False
    t = table.number(i, "iteration_s")
    if not math.isfinite(t) or t <= 0:
        raise npcsv.InputError(f"{table.path}:{table.lines[i]}: column 'iteration_s': expected "
                               f"a positive time, got '{text}'")
    return True


def memory_gb(table, i):
    m = table.number(i, "memory_bytes")
    if not math.isfinite(m) or m < 0:
        raise npcsv.InputError(f"{table.path}:{table.lines[i]}: column 'memory_bytes': expected "
                               f"a non-negative byte count, got '{table.text(i, 'memory_bytes')}'")
    return m * 1e-9


def pareto(points):
    """Indices of the non-dominated points of [(time, memory)], by memory."""
    order = sorted(range(len(points)), key=lambda k: (points[k][1], points[k][0]))
    front, best_time = [], float("inf")
    for k in order:
        if points[k][0] < best_time:
            front.append(k)
            best_time = points[k][0]
    return front


def point_label(table, i):
    if "label" in table.columns and table.text(i, "label"):
        return table.text(i, "label")
    return (f"{table.text(i, 'tp')}/{table.text(i, 'pp')}/{table.text(i, 'dp')} "
            f"mbs {table.text(i, 'micro_batch_size')} {table.text(i, 'recompute')}")


def capacity_gb(table):
    if "capacity_bytes" not in table.columns:
        return None
    values = {table.number(i, "capacity_bytes") for i in range(len(table.rows))}
    if len(values) != 1:
        raise npcsv.InputError(f"{table.path}: column 'capacity_bytes' has {len(values)} "
                               "different values; the plot draws one capacity line")
    return values.pop() * 1e-9


def plot(table, args):
    plt = npcsv.pyplot()
    groups = OrderedDict()
    for i in range(len(table.rows)):
        key = table.text(i, args.group) if args.group else ""
        groups.setdefault(key, []).append(i)
    palette = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(8.5, 5.5))
    undrawn = 0
    for g, (key, rows) in enumerate(groups.items()):
        c = palette(g % 10)
        kept = [i for i in rows if has_time(table, i)]
        undrawn += len(rows) - len(kept)
        rows = kept
        if not rows:
            continue
        pts = [(table.number(i, "iteration_s"), memory_gb(table, i)) for i in rows]
        ok = [feasible(table, i) for i in rows]
        name = f"{args.group}={key}" if args.group else "plans"
        ax.scatter([m for (t, m), f in zip(pts, ok) if f], [t for (t, m), f in zip(pts, ok) if f],
                   color=c, s=22, label=f"{name}: feasible", zorder=3)
        if not all(ok):
            ax.scatter([m for (t, m), f in zip(pts, ok) if not f],
                       [t for (t, m), f in zip(pts, ok) if not f], facecolors="none",
                       edgecolors=c, s=22, label=f"{name}: infeasible", zorder=3)
        front = pareto(pts)
        fx, fy = [pts[k][1] for k in front], [pts[k][0] for k in front]
        ax.step(fx, fy, where="post", color=c, linewidth=1.2, alpha=0.8,
                label=f"{name}: Pareto frontier ({len(front)} plans)")
        labelled = front if len(front) <= MAX_LABELLED else [front[0], front[-1]]
        for k in labelled:
            ax.annotate(point_label(table, rows[k]), (pts[k][1], pts[k][0]), fontsize=7,
                        xytext=(4, 3), textcoords="offset points", color=c)
        fits = [k for k in range(len(rows)) if ok[k]]
        if fits:
            best = min(fits, key=lambda k: pts[k][0])
            ax.scatter([pts[best][1]], [pts[best][0]], marker="*", s=180, color=c,
                       edgecolors="black", zorder=4,
                       label=f"{name}: fastest feasible ({pts[best][0]:.3g} s)")
    cap = capacity_gb(table)
    if cap is not None:
        ax.axvline(cap, color="firebrick", linestyle="--", linewidth=1,
                   label=f"capacity {cap:.1f} GB")
    ax.set_xlabel("peak device memory (GB)")
    ax.set_ylabel("iteration time (s)")
    title = args.title or "time-memory Pareto frontier"
    if undrawn:
        title += f"\n({undrawn} infeasible plan{'s' if undrawn > 1 else ''} without a time "
        title += "not drawn)"
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    npcsv.save(fig, args.output)


def run():
    ap = argparse.ArgumentParser(description="Pareto frontier of plans, time vs memory.")
    ap.add_argument("csv", help="frontier CSV (columns in analysis/README.md)")
    ap.add_argument("-o", "--output", required=True, help="PNG file to write")
    ap.add_argument("--group", help="column whose values get separate frontiers")
    ap.add_argument("--title", help="figure title")
    args = ap.parse_args()
    table = npcsv.read_table(args.csv, COLUMNS + ([args.group] if args.group else []))
    plot(table, args)


if __name__ == "__main__":
    npcsv.main("plot_frontier", run)
