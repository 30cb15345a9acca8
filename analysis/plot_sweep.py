#!/usr/bin/python3
"""plot_sweep.py -- one column against another, a line per group.

    plot_sweep.py sweep.csv --x num_micro_batches --y bubble_ratio \\
        [--group recompute] [--where workload=workloads/llama.json]... \\
        [--agg min|max|mean] [--logx] [--logy] [--linear] [--ymin Y] [--title TEXT] -o sweep.png

Works on any CSV with a header, simrun's --csv rows in the first place
(docs/csv-format.md).  The x axis is numeric when every x value is a
number, else categorical in order of first appearance.  Axes are labelled in
words with units (npcsv.LABELS): ratios (bubble_ratio, mfu, peak_fraction)
in percent as simrun's table prints them, columns ending in _bytes in GB (1e9
bytes, as HBM capacities are quoted).  A numeric axis whose positive values
span two decades or more is logarithmic (--linear keeps it linear; --logx,
--logy force a log axis, and refuse a value of 0 or less in the rows drawn,
naming its line).  The title names the workloads and platforms of the
rows drawn (their CSV columns).  --where keeps the rows whose COLUMN equals
VALUE (repeatable).  --ymin must be a finite number below the largest value
drawn (above 0 with --logy).  Every value drawn is a finite number
(npcsv.Table.number): nan or inf in the y column, or in an x column of
numbers, is an error naming its row, not a point left out.

Two rows with the same group and x value are an error unless --agg says how
to combine them: a sweep over one parameter that also varies another would
otherwise draw a zig-zag that looks like data.
"""

from collections import OrderedDict

import npcsv

MAX_TICKS = 12


def is_number(text):
    """text reads as a number (nan and inf too: a numeric column holding one
    is an error naming its row, npcsv.Table.number, not a category)."""
    return npcsv.parse_number(text) is not None


def is_finite_number(text):
    x = npcsv.parse_number(text)
    return x is not None and npcsv.in_range(x)


DECADES = 100  # max / min at which an axis becomes logarithmic


def axis_label(column):
    return npcsv.label(column)


def scale(column):
    return npcsv.factor(column)


def spans_decades(values):
    values = [v for v in values]
    return bool(values) and min(values) > 0 and max(values) >= DECADES * min(values)


def aggregate(values, how):
    if how == "min":
        return min(values)
    if how == "max":
        return max(values)
    return sum(values) / len(values)


def series(table, rows, args):
    """OrderedDict group -> OrderedDict x text -> list of y values."""
    out = OrderedDict()
    numeric = all(is_number(table.text(i, args.x)) for i in rows)
    for i in rows:
        group = table.text(i, args.group) if args.group else ""
        x = table.text(i, args.x)
        if x == "":
            raise npcsv.InputError(f"{table.path}:{table.lines[i]}: column '{args.x}' is empty")
        if numeric:
            table.number(i, args.x)  # a numeric x axis: nan, inf are errors naming the row
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


def check_ymin(data, args):
    """--ymin below the largest value drawn, and above 0 with --logy."""
    if args.ymin is None:
        return
    top = max(aggregate(ys, args.agg) for points in data.values() for ys in points.values())
    if args.ymin >= top:
        raise npcsv.InputError(f"--ymin {npcsv.short(args.ymin)}: the y axis would start above "
                               f"every value drawn (the largest is {top:g} in the axis' unit)")
    if args.logy and args.ymin <= 0:
        raise npcsv.InputError(f"--ymin {npcsv.short(args.ymin)}: a logarithmic y axis (--logy) "
                               "cannot start at 0 or below")


def plot(table, rows, args):
    data = series(table, rows, args)
    check_ymin(data, args)
    npcsv.describe_runs(table, rows)  # its values checked before matplotlib's half second
    plt = npcsv.pyplot()
    numeric = all(is_number(table.text(i, args.x)) for i in rows)
    categories = list(OrderedDict.fromkeys(table.text(i, args.x) for i in rows))
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    all_x, all_y = [], []
    groups = list(data)
    if all(is_finite_number(g) for g in groups):  # numeric groups (pp = 4, 8, ...) in order
        groups.sort(key=float)
    for group in groups:
        points = data[group]
        xs = list(points)
        if numeric:
            xs.sort(key=float)
            xv = [float(x) * scale(args.x) for x in xs]
        else:
            xs.sort(key=categories.index)
            xv = [categories.index(x) for x in xs]
        yv = [aggregate(points[x], args.agg) for x in xs]
        ax.plot(xv, yv, marker="o", label=npcsv.value_name(args.group, group) if args.group
                else None)
        all_x += xv if numeric else []
        all_y += yv
    logx = args.logx or (numeric and not args.linear and spans_decades(all_x))
    logy = args.logy or (not args.linear and spans_decades(all_y))
    if logy and args.ymin is not None and args.ymin <= 0:
        logy = False  # --ymin 0 asks for a linear axis from 0: no automatic log axis
    if logx:
        ax.set_xscale("log")
    if not numeric:
        ax.set_xticks(range(len(categories)), categories, rotation=20, ha="right")
    elif len(categories) <= MAX_TICKS:
        # A sweep's few x values as the ticks, in plain numbers (also on a log axis).
        ticks = sorted({float(x) * scale(args.x) for x in categories})
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.xaxis.set_minor_locator(plt.NullLocator())
    if logy:
        # ticks at 1, 2, 5 x 10^k in plain numbers: 20, 50, 100 read better than 10^2
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    if args.ymin is not None:  # e.g. 0: a flat line is not zoomed into a cliff
        # autoscaling pads a flat line by a share of its own tiny range, so its points
        # would sit on the top frame: keep 5% of the drawn range free above them
        top = args.ymin + 1.05 * (max(all_y, default=args.ymin) - args.ymin)
        ax.set_ylim(bottom=args.ymin, top=max(ax.get_ylim()[1], top, args.ymin + 1e-12))
    ax.set_xlabel(axis_label(args.x) + (", log scale" if logx else ""))
    ylabel = axis_label(args.y)
    if args.agg:
        ylabel = f"{ylabel}, {args.agg} over runs"
    ax.set_ylabel(ylabel + (", log scale" if logy else ""))
    title = args.title or f"{axis_label(args.y)} vs {axis_label(args.x)}"
    runs = npcsv.describe_runs(table, rows)
    if runs:
        title += "\n" + runs
    if args.where:
        title += "\n" + ", ".join(args.where)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    if args.group:
        ax.legend(title=axis_label(args.group), fontsize=8, title_fontsize=8)
    fig.tight_layout()
    npcsv.save(fig, args.output)


def run():
    ap = npcsv.ArgumentParser(description="Line plot of one CSV column against another.")
    ap.add_argument("csv", help="CSV with a header (e.g. simrun --csv rows)")
    ap.add_argument("--x", required=True, help="column on the x axis")
    ap.add_argument("--y", required=True, help="numeric column on the y axis")
    ap.add_argument("--group", help="column whose values make separate lines")
    ap.add_argument("--where", action="append", metavar="COLUMN=VALUE",
                    help="keep only rows where COLUMN equals VALUE (repeatable)")
    ap.add_argument("--agg", choices=["min", "max", "mean"],
                    help="how to combine rows with the same group and x (else an error)")
    ap.add_argument("--logx", action="store_true",
                    help="logarithmic x axis (default: when x spans two decades)")
    ap.add_argument("--logy", action="store_true",
                    help="logarithmic y axis (default: when y spans two decades)")
    ap.add_argument("--linear", action="store_true",
                    help="no automatic log axis (--logx and --logy still apply)")
    ap.add_argument("--ymin", type=npcsv.finite_option(), metavar="Y",
                    help="start the y axis at Y in the axis' unit (e.g. 0), not at the data; "
                    "below the largest value drawn")
    ap.add_argument("--title", help="figure title (default: 'Y vs X' in words); the "
                    "workloads and platforms drawn are always named under it")
    ap.add_argument("-o", "--output", required=True,
                    help="figure to write: a .png, .pdf or .svg file")
    args = ap.parse_args()
    npcsv.check_output(args.output, inputs=[args.csv])  # before reading: a bad -o writes nothing
    needed = [args.x, args.y] + ([args.group] if args.group else [])
    table = npcsv.read_table(args.csv, needed)
    rows = npcsv.parse_where(table, args.where)
    if args.logx and not all(is_number(table.text(i, args.x)) for i in rows):
        raise npcsv.InputError(f"{args.csv}: --logx needs numeric values in column '{args.x}'")
    # a log axis cannot show 0 or less: matplotlib would only warn and drop the points
    for flag, on, column in (("--logx", args.logx, args.x), ("--logy", args.logy, args.y)):
        for i in rows if on else []:
            if not table.number(i, column) > 0:
                raise npcsv.InputError(
                    f"{table.path}:{table.lines[i]}: {flag} needs positive values in column "
                    f"'{column}', got '{table.text(i, column)}'")
    plot(table, rows, args)


if __name__ == "__main__":
    npcsv.main("plot_sweep", run)
