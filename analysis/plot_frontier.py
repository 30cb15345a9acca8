#!/usr/bin/python3
"""plot_frontier.py -- the time-memory Pareto frontier of candidate plans.

    plot_frontier.py frontier.csv -o frontier.png [--title TEXT] [--group COLUMN]
        [--devices N] [--cut F] [--linear]

One point per candidate plan: peak device memory per NPU (GB) across,
iteration time up.  Plans that fit (and were simulated) are filled, the
others hollow.  The frontier is recomputed here from the rows given, as
TensorOpt's Frontier Tracking defines it (Cai et al., TPDS 2022): the plans
that no other plan beats on both time and memory (t' <= t and m' <= m, one
strictly); it is drawn as a staircase.  The fastest plan that fits is starred
and labelled "tp/pp/dp mbs recompute" (on a single panel the frontier's
points are labelled too, only its first when more than 14).  A CSV that
already holds only a frontier is its own frontier.

One panel per device count when the CSV has a devices column with several
values (simrun --frontier writes one frontier per count): small multiples,
each with its own time axis, titled with the count and its fastest plan that
fits.  --devices N draws one count.  The region beyond the capacity
(capacity_bytes) is shaded, and the memory axis ends at --cut times the
capacity (default 2; or at the largest plan that fits): plans that need
hundreds of times the memory would otherwise squash the ones that fit; how
many lie beyond is said in the panel's title.  A time axis whose values span
two decades is logarithmic (--linear keeps it linear).  With --group (e.g.
workload), one frontier per value of the column, in its own colour.  The
frontier CSV does not name the workload and platform: give them with --title.

Columns (analysis/README.md, "Frontier CSV"): required tp, pp, dp,
micro_batch_size, recompute, iteration_s, memory_bytes, feasible
(true/false or 1/0; an infeasible row may leave iteration_s empty or nan,
and is then counted in the title but not drawn); optional devices (one panel
per value), capacity_bytes (one value for the whole file, drawn as a vertical
line) and label (replaces the point label).
"""

import argparse
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
    table.positive(i, "iteration_s", "a positive time")
    return True


def memory_gb(table, i):
    return table.non_negative(i, "memory_bytes", "a non-negative byte count") * 1e-9


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
    """The capacity line in GB: one value of at least a byte for the whole file."""
    if "capacity_bytes" not in table.columns:
        return None
    values = set()
    for i in range(len(table.rows)):
        # 0, -1, 1e-320: no capacity (and a % axis of infinite size)
        values.add(table.number(i, "capacity_bytes", lambda c: c >= 1,
                                "a positive capacity in bytes (at least 1)"))
    if len(values) != 1:
        raise npcsv.InputError(f"{table.path}: column 'capacity_bytes' has {len(values)} "
                               "different values; the plot draws one capacity line")
    return values.pop() * 1e-9


def capacity_of(table):
    return capacity_gb(table)


def panels(table, args):
    """OrderedDict device count -> rows: one panel per count of the CSV's
    devices column (simrun --frontier), in increasing order; one panel of
    every row without that column, or with --devices N."""
    if "devices" not in table.columns:
        if args.devices is not None:  # it asks for a count the file cannot tell
            raise npcsv.InputError(f"{table.path}: --devices {args.devices:g}: the file has no "
                                   "devices column (simrun --frontier writes one), so its "
                                   "plans cannot be chosen by device count: leave --devices out")
        return OrderedDict([("", list(range(len(table.rows))))])
    out = OrderedDict()
    count = {i: table.count(i, "devices", "a positive whole number of devices")
             for i in range(len(table.rows))}
    for i in sorted(count, key=lambda i: count[i]):  # "8" and "8.0" are one panel
        if args.devices is None or count[i] == args.devices:
            out.setdefault(count[i], []).append(i)
    if not out:
        counts = sorted(set(count.values()))
        raise npcsv.InputError(f"{table.path}: no row with devices = {args.devices:g} "
                               f"(the file has {', '.join(str(c) for c in counts)})")
    return out


def draw_panel(ax, table, rows, args, cap, palette, many):
    """One device count's plans; returns (drawn, not drawn, cut off) counts and
    the legend handles of the first group."""
    groups = OrderedDict()
    for i in rows:
        groups.setdefault(table.text(i, args.group) if args.group else "", []).append(i)
    kept_all = [i for i in rows if has_time(table, i)]
    undrawn = len(rows) - len(kept_all)
    mem_all = [memory_gb(table, i) for i in kept_all]
    # The axis ends at cut x capacity (and at the largest plan that fits), so
    # that infeasible plans of hundreds of times the memory do not squash the
    # feasible ones; what lies beyond is counted.
    right = max(mem_all) if mem_all else 1.0
    if cap is not None and args.cut > 0:
        fitting = [m for i, m in zip(kept_all, mem_all) if feasible(table, i)]
        right = min(right, max([args.cut * cap] + fitting))
    if not right > 0:  # every plan drawn needs 0 bytes: an axis up to the capacity (or 1 GB)
        right = cap if cap is not None else 1.0
    right *= 1.04
    cut_off = sum(1 for m in mem_all if m > right)
    times_in = [table.number(i, "iteration_s") for i, m in zip(kept_all, mem_all) if m <= right]
    for g, (key, grows) in enumerate(groups.items()):
        c = palette(g % 10)
        grows = [i for i in grows if has_time(table, i)]
        if not grows:
            continue
        pts = [(table.number(i, "iteration_s"), memory_gb(table, i)) for i in grows]
        ok = [feasible(table, i) for i in grows]
        name = f"{args.group}={key}: " if args.group else ""
        if any(ok):
            ax.scatter([m for (t, m), f in zip(pts, ok) if f],
                       [t for (t, m), f in zip(pts, ok) if f], color=c, s=14 if many else 22,
                       label=f"{name}plan that fits", zorder=3)
        if not all(ok):
            ax.scatter([m for (t, m), f in zip(pts, ok) if not f],
                       [t for (t, m), f in zip(pts, ok) if not f], facecolors="none",
                       edgecolors=c, s=14 if many else 22, label=f"{name}plan that does not fit",
                       zorder=3)
        front = pareto(pts)
        fx, fy = [pts[k][1] for k in front], [pts[k][0] for k in front]
        ax.step(fx, fy, where="post", color=c, linewidth=1.2, alpha=0.8,
                label=f"{name}Pareto frontier")
        fits = [k for k in range(len(grows)) if ok[k]]
        labelled = [] if many else (front if len(front) <= MAX_LABELLED else [front[0]])
        if fits:
            best = min(fits, key=lambda k: pts[k][0])
            ax.scatter([pts[best][1]], [pts[best][0]], marker="*", s=150 if many else 180,
                       color=c, edgecolors="black", zorder=4, label=f"{name}fastest plan that fits")
            labelled = [k for k in labelled if k != best] + [best]
        for k in labelled:
            ax.annotate(point_label(table, grows[k]), (pts[k][1], pts[k][0]), fontsize=7,
                        xytext=(4, 3), textcoords="offset points", color=c,
                        fontweight="bold" if fits and k == labelled[-1] else "normal")
    if cap is not None:
        ax.axvline(cap, color="firebrick", linestyle="--", linewidth=1,
                   label=f"capacity ({cap:.0f} GB)")
        if right > cap:
            ax.axvspan(cap, right, color="grey", alpha=0.12, linewidth=0,
                       label="does not fit in device memory")
    ax.set_xlim(0, right)
    if times_in:
        lo, hi = min(times_in), max(times_in)
        if not args.linear and lo > 0 and hi >= 100 * lo:
            ax.set_yscale("log")
        else:
            pad = 0.06 * (hi - lo) if hi > lo else 0.05 * hi
            ax.set_ylim(lo - pad, hi + pad)
    ax.grid(alpha=0.3)
    return undrawn, cut_off, right


def best_text(table, rows):
    fits = [i for i in rows if has_time(table, i) and feasible(table, i)]
    if not fits:
        return "no plan fits"
    best = min(fits, key=lambda i: table.number(i, "iteration_s"))
    t = table.number(best, "iteration_s")
    seconds = f"{t:.0f}" if t >= 100 else f"{t:.3g}"
    return f"fastest that fits: {seconds} s, {point_label(table, best)}"


def check(table):
    """Every row's values (InputError), before matplotlib is imported (half a
    second): feasible, the time where there is one, the memory."""
    for i in range(len(table.rows)):
        if has_time(table, i):
            memory_gb(table, i)


def plot(table, args):
    cap = capacity_of(table)
    parts = panels(table, args)
    check(table)
    plt = npcsv.pyplot()
    palette = plt.get_cmap("tab10")
    n = len(parts)
    many = n > 1
    cols = min(n, 4 if n > 4 else n)
    rows_n = (n + cols - 1) // cols
    size = (8.5, 5.5) if not many else (4.3 * cols, 3.5 * rows_n + 0.8)
    fig, axes = plt.subplots(rows_n, cols, figsize=size, squeeze=False)
    handles = {}
    for ax, (count, rows) in zip(axes.flat, parts.items()):
        undrawn, cut_off, right = draw_panel(ax, table, rows, args, cap, palette, many)
        head = f"{count:,} NPUs" if count != "" else ""
        sub = best_text(table, rows)
        extra = []
        if cut_off:
            extra.append(f"{cut_off} plans beyond {right / 1.04:.0f} GB not shown")
        if undrawn:
            extra.append(f"{undrawn} infeasible plan{'s' if undrawn > 1 else ''} without a time "
                         "not drawn")
        ax.set_title("\n".join(x for x in [head, sub, "; ".join(extra)] if x),
                     fontsize=8 if many else 9)
        ax.set_xlabel("peak device memory per NPU (GB)", fontsize=8 if many else 10)
        ax.set_ylabel("iteration time (s)" + (", log scale" if ax.get_yscale() == "log" else ""),
                      fontsize=8 if many else 10)
        ax.tick_params(labelsize=7 if many else 9)
        if cap is not None and not many:
            top = ax.secondary_xaxis("top", functions=(lambda x: 100 * x / cap,
                                                       lambda p: p * cap / 100))
            top.set_xlabel("% of device memory capacity", fontsize=9)
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    title = args.title or "iteration time against peak device memory: the Pareto frontier"
    if many:
        title += "\none panel per device count; the star is the fastest plan that fits"
    fig.suptitle(title, fontsize=11)
    if many:
        fig.legend(list(handles.values()), list(handles.keys()), loc="lower center",
                   ncol=min(len(handles), 6), fontsize=8, frameon=False)
    else:
        axes[0][0].legend(list(handles.values()), list(handles.keys()), fontsize=7, loc="best")
    fig.tight_layout(rect=(0, 0.06 if many else 0, 1, 1))
    npcsv.save(fig, args.output)


def positive_count(text):
    """--devices: a whole number of 1 or more (argparse names the option)."""
    x = npcsv.parse_number(text)
    if x is None or not (npcsv.in_range(x) and x >= 1 and x == int(x)):
        raise argparse.ArgumentTypeError(f"expected a positive whole number of devices, "
                                         f"got '{text}'")
    return int(x)


def run():
    ap = npcsv.ArgumentParser(description="Pareto frontier of plans, time vs memory.")
    ap.add_argument("csv", help="frontier CSV (columns in analysis/README.md)")
    ap.add_argument("-o", "--output", required=True,
                    help="figure to write: a .png, .pdf or .svg file")
    ap.add_argument("--group", help="column whose values get separate frontiers")
    ap.add_argument("--title", help="figure title; name the workload and platform (the "
                    "frontier CSV does not record them)")
    ap.add_argument("--devices", type=positive_count, metavar="N",
                    help="only the plans of N devices (default: one panel per device count "
                    "of the devices column)")
    ap.add_argument("--cut", type=npcsv.finite_option(0, 1e6), default=2.0, metavar="F",
                    help="draw memory up to F x the capacity (or the largest plan that fits), "
                    "counting the plans beyond; 0 draws every plan (default: 2)")
    ap.add_argument("--linear", action="store_true",
                    help="a linear time axis even where times span two decades")
    args = ap.parse_args()
    npcsv.check_output(args.output, inputs=[args.csv])  # before reading: a bad -o writes nothing
    table = npcsv.read_table(args.csv, COLUMNS + ([args.group] if args.group else []))
    plot(table, args)


if __name__ == "__main__":
    npcsv.main("plot_frontier", run)
