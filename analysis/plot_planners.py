#!/usr/bin/python3
"""plot_planners.py -- planners side by side, from simrun's --csv rows.

    plot_planners.py results.csv -o planners.png [--baseline megatron]

One row of three panels per configuration (workload, platform and --set
overrides of a run): iteration time per planner with its speed-up over the
baseline planner written at the end of each bar, the pipeline bubble
(bubble_ratio, as a percentage of busy time: it exceeds 100% when the pipeline
idles longer than it computes) and peak device-memory utilisation
(peak_fraction, with the capacity at 100%).  Rows of one configuration are the
bars, labelled "planner (recompute)"; where a planner appears more than once
(another schedule or recompute choice given on the command line) or the
configuration mixes schedules, "planner (schedule, recompute)".  --where
COLUMN=VALUE keeps the matching rows (repeatable).  Times under a second are shown in ms.  Each
row's title names the workload and platform (and NPUs) of its runs.
Each bar's speed-up is against the baseline planner's run of the same
schedule and options (--dp-algorithm and the other option columns) in its
configuration, else against the baseline planner's first run there (in the
order above), and the panel title says which; a configuration without a
baseline run is an error.  Options that differ within a configuration are
written in the labels.  The order of the rows in the file (the order a
sweep's points finished in) changes nothing.

Columns read (docs/csv-format.md): platform, workload, overrides,
planner, schedule, recompute, iteration_s, bubble_ratio, peak_fraction.
"""

from collections import OrderedDict

import npcsv

COLUMNS = ["platform", "workload", "overrides", "planner", "schedule", "recompute",
           "iteration_s", "bubble_ratio", "peak_fraction"]


# Bars in the order of simrun's planner registry (--planner all's order), so
# that a sweep whose points finished in any order draws the same figure.
PLANNER_ORDER = ["megatron", "pipedream", "adapipe", "merak", "ft", "bmpipe", "csimd", "mbpp-r",
                 "mbpp-e"]


def planner_rank(table, i):
    p = table.text(i, "planner")
    return PLANNER_ORDER.index(p) if p in PLANNER_ORDER else len(PLANNER_ORDER)


# simrun's options that change a run without being a workload override
# (docs/csv-format.md): where they differ within a configuration, the bars say
# so, and each bar's speed-up is against the baseline run with the same ones.
OPTION_COLUMNS = ["dp_algorithm", "dp_inter_algorithm", "ep_alltoall_algorithm", "fold_dp",
                  "dp_overlap", "dp_bucket_bytes", "shifted_recompute", "placement", "moe_policy"]


def options_of(table, i):
    """Row i's values of the option columns the file has."""
    return tuple(table.text(i, c) for c in OPTION_COLUMNS if c in table.columns)


def configurations(table, rows):
    """OrderedDict (workload, platform, overrides) -> row indices: configurations
    of one workload together, workloads in file order, rows by planner in the
    registry's order, then by schedule, recompute, options and time, so that
    the order the rows finished in (a sweep's) changes nothing."""
    groups = OrderedDict()
    for i in sorted(rows, key=lambda i: (planner_rank(table, i), table.text(i, "planner"),
                                         table.text(i, "schedule"), table.text(i, "recompute"),
                                         options_of(table, i), table.text(i, "iteration_s"))):
        key = (table.text(i, "workload"), table.text(i, "platform"), table.text(i, "overrides"))
        groups.setdefault(key, []).append(i)
    workloads = list(OrderedDict.fromkeys(table.text(i, "workload") for i in rows))
    return OrderedDict(sorted(groups.items(), key=lambda kv: workloads.index(kv[0][0])))


def varying_options(table, rows):
    """The option columns whose values differ among rows."""
    return [c for c in OPTION_COLUMNS
            if c in table.columns and len({table.text(i, c) for i in rows}) > 1]


def baselines(table, rows, baseline):
    """For each of rows, the row it is compared with: the first baseline row
    of the same schedule and options, else the first baseline row."""
    base = [i for i in rows if table.text(i, "planner") == baseline]
    out = []
    for i in rows:
        same = [b for b in base if table.text(b, "schedule") == table.text(i, "schedule")
                and options_of(table, b) == options_of(table, i)]
        out.append((same or base)[0])
    return out


def bar_labels(table, rows):
    """Planner names with their recompute, the schedule where a planner
    repeats or the configuration mixes schedules, the options that differ
    among the rows, and #1, #2, ... on exact repeats."""
    planners = [table.text(i, "planner") for i in rows]
    several_schedules = len({table.text(i, "schedule") for i in rows}) > 1
    varying = varying_options(table, rows)
    labels = []
    for i, p in zip(rows, planners):
        parts = [table.text(i, "recompute")]
        if planners.count(p) > 1 or several_schedules:
            parts.insert(0, table.text(i, "schedule"))
        parts += [f"{c}={table.text(i, c)}" for c in varying]
        labels.append(f"{p} ({', '.join(parts)})")
    counts = {label: labels.count(label) for label in labels}
    seen = {}
    for k, label in enumerate(labels):
        seen[label] = seen.get(label, 0) + 1
        if counts[label] > 1:
            labels[k] = f"{label} #{seen[label]}"
    return labels


# Workload keys of the overrides column, shortened for a panel title.
SHORT_KEYS = {"tensor_model_parallel_size": "TP", "pipeline_model_parallel_size": "PP",
              "data_parallel_size": "DP", "global_batch_size": "global batch",
              "micro_batch_size": "micro-batch", "recompute_granularity": "recompute",
              "virtual_pipeline_model_parallel_size": "VPP"}


def short_overrides(overrides):
    """'data_parallel_size=256;global_batch_size=4096' -> 'DP 256, global batch 4096'."""
    parts = []
    for a in overrides.split(";"):
        key, _, value = a.partition("=")
        name = SHORT_KEYS.get(key.split(".")[-1])
        parts.append(f"{name} {value}" if name else a)
    return ", ".join(parts)


def group_title(key, npus=None):
    """'llama on 16k_npu (16,384 NPUs)', and the --set overrides on a line of their own."""
    workload, platform, overrides = key
    title = f"{npcsv.short_name(workload)} on {npcsv.short_name(platform)}"
    if npus:
        title += f" ({npus:,} NPUs)"
    return f"{title}\n{short_overrides(overrides)}" if overrides else title


def one_line(title):
    """A panel title (its overrides on a line of their own) for a one-line message."""
    return title.replace("\n", ", ")


def plot(table, baseline, out_path, rows=None):
    rows = list(range(len(table.rows))) if rows is None else rows
    groups = configurations(table, rows)
    planner_names = PLANNER_ORDER + sorted({table.text(i, "planner") for i in rows}
                                           - set(PLANNER_ORDER))

    data = []  # every value checked before matplotlib is imported (half a second)
    for key, rows in groups.items():
        base = [i for i in rows if table.text(i, "planner") == baseline]
        if not base:
            present = sorted({table.text(i, "planner") for i in rows})
            raise npcsv.InputError(
                f"{table.path}: {one_line(group_title(key))}: no row of baseline planner "
                f"'{baseline}' (planners present: {', '.join(present)}; choose one with "
                "--baseline)")
        times = [table.positive(i, "iteration_s", "a positive time in seconds") for i in rows]
        base_rows = baselines(table, rows, baseline)
        base_times = [times[rows.index(b)] for b in base_rows]
        # ratios: 0 or more (a bubble exceeds 100% when the pipeline idles longer than it
        # computes; a plan may need more than the capacity)
        for i in rows:
            for column in ("bubble_ratio", "peak_fraction"):
                table.non_negative(i, column, "a ratio of 0 or more")
        data.append((key, rows, times, base_times, [rows.index(b) for b in base_rows]))
    for i in sorted(i for _, rows, _, _, _ in data for i in rows):  # the file's first bad one
        if "npus" in table.columns and table.text(i, "npus"):
            table.count(i, "npus", "a positive whole number of NPUs")

    plt = npcsv.pyplot()
    palette = plt.get_cmap("tab10")
    colour = {p: palette(k % 10) for k, p in enumerate(planner_names)}

    height = sum(1.1 + 0.32 * len(rows) for _, rows, _, _, _ in data) + 0.4
    fig, axes = plt.subplots(len(data), 3, figsize=(14, height), squeeze=False,
                             gridspec_kw={"height_ratios": [len(d[1]) + 2 for d in data]})
    for r, (key, rows, times, base_times, base_ks) in enumerate(data):
        labels = bar_labels(table, rows)
        colours = [colour[table.text(i, "planner")] for i in rows]
        y = list(range(len(rows)))[::-1]
        ax_t, ax_b, ax_m = axes[r]

        # milliseconds for iterations under a second (layer-by-layer CNNs)
        unit, k = ("ms", 1e3) if max(times) < 1 else ("s", 1)
        ax_t.barh(y, [k * t for t in times], color=colours)
        ax_t.set_yticks(y, labels, fontsize=8)
        ax_t.set_xlim(0, k * max(times) * 1.35)
        for yy, t, b in zip(y, times, base_times):
            ax_t.text(k * t, yy, f" {k * t:.3g} {unit}  {b / t:.2f}x", va="center", fontsize=8)
        npus = (table.count(rows[0], "npus", "a positive whole number of NPUs")
                if "npus" in table.columns and table.text(rows[0], "npus") else None)
        against = (labels[base_ks[0]] if len(set(base_ks)) == 1 else
                   f"{baseline} with the same schedule and options")
        ax_t.set_title(f"{group_title(key, npus)}\niteration time (speed-up vs {against})",
                       fontsize=9, loc="left", fontweight="bold")
        ax_t.set_xlabel(f"iteration time ({unit})")

        bubbles = [100 * table.number(i, "bubble_ratio") for i in rows]
        ax_b.barh(y, bubbles, color=colours)
        ax_b.set_yticks(y, [])
        ax_b.set_xlim(0, max(max(bubbles) * 1.25, 1))
        for yy, b in zip(y, bubbles):
            ax_b.text(b, yy, f" {b:.1f}%", va="center", fontsize=8)
        ax_b.set_title("pipeline bubble (% of busy time)", fontsize=9, loc="left")
        ax_b.set_xlabel("pipeline bubble (% of busy time)")

        peaks = [100 * table.number(i, "peak_fraction") for i in rows]
        ax_m.barh(y, peaks, color=colours)
        ax_m.set_yticks(y, [])
        ax_m.axvline(100, color="firebrick", linestyle="--", linewidth=1)
        ax_m.set_xlim(0, max(max(peaks) * 1.2, 110))
        for yy, m in zip(y, peaks):
            ax_m.text(m, yy, f" {m:.1f}%", va="center", fontsize=8)
        ax_m.set_title("peak device memory (% of capacity; 100% = full)", fontsize=9,
                       loc="left")
        ax_m.set_xlabel("peak device memory (% of HBM capacity)")
        for ax in (ax_t, ax_b, ax_m):
            ax.set_ylim(-0.7, len(rows) - 0.3)
            ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    npcsv.save(fig, out_path)


def run():
    ap = npcsv.ArgumentParser(description="Iteration time (with speed-up), bubble and peak "
                                 "memory per planner, one row of panels per configuration.")
    ap.add_argument("csv", help="results CSV written by simrun --csv")
    ap.add_argument("-o", "--output", required=True,
                    help="figure to write: a .png, .pdf or .svg file")
    ap.add_argument("--baseline", default="megatron",
                    help="planner the speed-ups are relative to (default: megatron)")
    ap.add_argument("--where", action="append", metavar="COLUMN=VALUE",
                    help="keep only rows where COLUMN equals VALUE (repeatable)")
    args = ap.parse_args()
    npcsv.check_output(args.output, inputs=[args.csv])  # before reading: a bad -o writes nothing
    table = npcsv.read_table(args.csv, COLUMNS)
    plot(table, args.baseline, args.output, npcsv.parse_where(table, args.where))


if __name__ == "__main__":
    npcsv.main("plot_planners", run)
