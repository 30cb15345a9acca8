#!/usr/bin/python3
"""plot_sweep.py -- one column against another, a line per group.

    plot_sweep.py sweep.csv --x num_micro_batches --y bubble_ratio \\
        [--group recompute] [--where workload=workloads/llama.json]... \\
        [--agg min|max|mean] [--logx] [--logy] [--title TEXT] -o sweep.png

Works on any CSV with a header, simrun's --csv rows in the first place
(docs/csv-format.md).  The x axis is numeric when every x value is a
number, else categorical in order of first appearance.  Columns whose name
ends in _bytes are plotted in GB (1e9 bytes, as HBM capacities are quoted).
--where keeps the rows whose COLUMN equals VALUE (repeatable).

Two rows with the same group and x value are an error unless --agg says how
to combine them: a sweep over one parameter that also varies another would
otherwise draw a zig-zag that looks like data.
"""

import argparse
from collections import OrderedDict

import npcsv

MAX_TICKS = 12


def is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def axis_label(column):
    return f"{column[:-len('_bytes')]} (GB)" if column.endswith("_bytes") else column


def scale(column):
    return 1e-9 if column.endswith("_bytes") else 1.0


def aggregate(values, how):
    if how == "min":
        return min(values)
    if how == "max":
        return max(values)
    return sum(values) / len(values)


def series(table, rows, args):
    """OrderedDict group -> OrderedDict x text -> list of y values."""
    out = OrderedDict()
    for i in rows:
        group = table.text(i, args.group) if args.group else ""
        x = table.text(i, args.x)
        if x == "":
            raise npcsv.InputError(f"{table.path}:{table.lines[i]}: column '{args.x}' is empty")
        y = table.number(i, args.y) * scale(args.y)
        out.setdefault(group, OrderedDict()).setdefault(x, []).append(y)
    if not args.agg:
        for group, points in out.items():
            for x, ys in points.items():
                if len(ys) > 1:
                    where = f"{args.group}={group}, " if args.group else ""
                    raise npcsv.InputError(
                        f"{table.path}: {len(ys)} rows with {where}{args.x}={x}: "
                        "pass --group to separate them, --where to select one, "
                        "or --agg min|max|mean to combine them")
    return out


def plot(table, rows, args):
    plt = npcsv.pyplot()
    data = series(table, rows, args)
    numeric = all(is_number(table.text(i, args.x)) for i in rows)
    categories = list(OrderedDict.fromkeys(table.text(i, args.x) for i in rows))
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for group, points in data.items():
        xs = list(points)
        if numeric:
            xs.sort(key=float)
            xv = [float(x) * scale(args.x) for x in xs]
        else:
            xs.sort(key=categories.index)
            xv = [categories.index(x) for x in xs]
        yv = [aggregate(points[x], args.agg) for x in xs]
        label = f"{args.group}={group}" if args.group else None
        ax.plot(xv, yv, marker="o", label=label)
    if args.logx:
        ax.set_xscale("log")
    if not numeric:
        ax.set_xticks(range(len(categories)), categories, rotation=20, ha="right")
    elif len(categories) <= MAX_TICKS:
        # A sweep's few x values as the ticks, in plain numbers (also on a log axis).
        ticks = sorted({float(x) * scale(args.x) for x in categories})
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.xaxis.set_minor_locator(plt.NullLocator())
    if args.logy:
        ax.set_yscale("log")
    ax.set_xlabel(axis_label(args.x))
    ylabel = axis_label(args.y)
    ax.set_ylabel(f"{ylabel} ({args.agg})" if args.agg else ylabel)
    title = args.title or f"{args.y} vs {args.x}"
    if args.where:
        title += "\n" + ", ".join(args.where)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    if args.group:
        ax.legend(fontsize=8)
    fig.tight_layout()
    npcsv.save(fig, args.output)


def run():
    ap = argparse.ArgumentParser(description="Line plot of one CSV column against another.")
    ap.add_argument("csv", help="CSV with a header (e.g. simrun --csv rows)")
    ap.add_argument("--x", required=True, help="column on the x axis")
    ap.add_argument("--y", required=True, help="numeric column on the y axis")
    ap.add_argument("--group", help="column whose values make separate lines")
    ap.add_argument("--where", action="append", metavar="COLUMN=VALUE",
                    help="keep only rows where COLUMN equals VALUE (repeatable)")
    ap.add_argument("--agg", choices=["min", "max", "mean"],
                    help="how to combine rows with the same group and x (else an error)")
    ap.add_argument("--logx", action="store_true", help="logarithmic x axis")
    ap.add_argument("--logy", action="store_true", help="logarithmic y axis")
    ap.add_argument("--title", help="figure title (default: 'Y vs X')")
    ap.add_argument("-o", "--output", required=True, help="PNG file to write")
    args = ap.parse_args()
    needed = [args.x, args.y] + ([args.group] if args.group else [])
    table = npcsv.read_table(args.csv, needed)
    rows = npcsv.parse_where(table, args.where)
    if args.logx and not all(is_number(table.text(i, args.x)) for i in rows):
        raise npcsv.InputError(f"{args.csv}: --logx needs numeric values in column '{args.x}'")
    plot(table, rows, args)


if __name__ == "__main__":
    npcsv.main("plot_sweep", run)
