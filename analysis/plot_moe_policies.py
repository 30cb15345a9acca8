#!/usr/bin/python3
"""plot_moe_policies.py CSV PNG [TRACE_AND_STEPS] -- the MoE policies compared
(scripts/moe_experiment.sh, scripts/moe16k_experiment.sh, results/moe/README.md).
TRACE_AND_STEPS is the title's description of the trace and steps (default
the 21B experiment's).

Reads simrun's CSV, one row per policy and trace step (its moe_trace_step
column), and draws three panels, each the mean over the steps with the
smallest and largest step as error bars: the iteration time, the
all-to-all time next to the expert copies' broadcasts and reductions, and
the wasted work (padding FLOPs, and the share of assignments dropped).
Prints the per-policy means as a table.  PNG may also name a .pdf or .svg
file.  Exit 2 on bad input, naming the file (npcsv, analysis/README.md).

Every row must be a run of one configuration: the same workload, platform,
--set overrides and routing trace (SAME), and one row per policy and step;
rows of several runs would be averaged together into bars of no run.  Times,
byte and FLOP counts are 0 or more, iteration times and assignments
positive, the dropped assignments at most the assignments.
"""

import npcsv

POLICIES = ["none", "switch", "fastermoe", "efficientmoe"]
NUMBERS = ["moe_trace_step", "iteration_s", "moe_alltoall_s", "moe_copy_s", "moe_padding_flops",
           "moe_dropped_tokens", "moe_assignments", "peak_bytes"]
NEEDED = ["workload", "platform", "moe_policy"] + NUMBERS
# Columns every row must share (those of SAME that the CSV has): what makes a
# run's configuration.
SAME = ["workload", "platform", "overrides", "moe_trace_sha256"]
# What each number must be (Table.number's ok and what).
CHECKS = {
    "moe_trace_step": (lambda x: x >= 0 and x == int(x), "a trace step (0, 1, 2, ...)"),
    "iteration_s": (lambda x: x > 0, "a positive time in seconds"),
    "moe_alltoall_s": (lambda x: x >= 0, "a time of 0 s or more"),
    "moe_copy_s": (lambda x: x >= 0, "a time of 0 s or more"),
    "moe_padding_flops": (lambda x: x >= 0, "a FLOP count of 0 or more"),
    "moe_dropped_tokens": (lambda x: x >= 0, "a count of 0 or more"),
    "moe_assignments": (lambda x: x > 0, "a positive number"),
    "peak_bytes": (lambda x: x >= 0, "a byte count of 0 or more"),
}


def read(path):
    """(workload, platform, {policy: [{column: value}, one per row]})."""
    table = npcsv.read_table(path, NEEDED)
    same = [c for c in SAME if c in table.columns]
    data, seen = {}, {}
    for i, r in enumerate(table.rows):
        for c in same:
            if r[c] != table.rows[0][c]:
                raise npcsv.InputError(
                    f"{table.where(i, c)}: '{r[c]}', but line {table.lines[0]} has "
                    f"'{table.rows[0][c]}': the policies of one run are compared (one "
                    f"{', '.join(same)}); plot each run's rows separately")
        p = r["moe_policy"]
        if p not in POLICIES:
            raise npcsv.InputError(f"{path}:{table.lines[i]}: column 'moe_policy': '{p}', "
                                   f"expected one of {', '.join(POLICIES)}")
        v = {c: table.number(i, c, *CHECKS[c]) for c in NUMBERS}
        if v["moe_dropped_tokens"] > v["moe_assignments"]:
            raise npcsv.InputError(f"{table.where(i, 'moe_dropped_tokens')}: "
                                   f"'{r['moe_dropped_tokens']}' dropped of "
                                   f"'{r['moe_assignments']}' assignments (moe_assignments): "
                                   "expected at most the assignments")
        key = (p, v["moe_trace_step"])
        if key in seen:
            raise npcsv.InputError(f"{path}:{table.lines[i]}: a second row of policy '{p}' at "
                                   f"trace step {r['moe_trace_step']} (the first is line "
                                   f"{seen[key]}): rows of one run, one per policy and step, "
                                   "are expected")
        seen[key] = table.lines[i]
        data.setdefault(p, []).append(v)
    # every policy over the same steps: a mean over other steps (a failed
    # point left out, a row missing) is not comparable with the others'
    steps = {p: sorted(v["moe_trace_step"] for v in rows) for p, rows in data.items()}
    first = next(iter(steps))
    for p, s in steps.items():
        if s != steps[first]:
            raise npcsv.InputError(
                f"{path}: policy '{p}' has trace steps {', '.join(f'{x:g}' for x in s)}, policy "
                f"'{first}' {', '.join(f'{x:g}' for x in steps[first])}: the means compare "
                "policies over the same steps (re-run the missing or failed points)")
    return table.rows[0]["workload"], table.rows[0]["platform"], data


def stats(values):
    """(mean, mean - smallest, largest - mean): the bar and its error bars.
    Rounding can put the mean of equal values a hair outside them; the mean
    is held between the two and the error bars at 0 or more (matplotlib
    refuses a negative one)."""
    lo, hi = min(values), max(values)
    m = min(max(sum(values) / len(values), lo), hi)
    return m, max(m - lo, 0.0), max(hi - m, 0.0)


def run():
    ap = npcsv.ArgumentParser(
        description="The MoE policies compared: iteration time, all-to-all and copy time, "
        "padding and dropped assignments, each the mean over the trace steps with the "
        "smallest and largest step as error bars; prints the means as a table.")
    ap.add_argument("csv", metavar="CSV", help="simrun --csv rows, one per policy and trace step "
                    "(moe_trace_step; scripts/moe_experiment.sh)")
    ap.add_argument("png", metavar="PNG", help="figure to write: a .png, .pdf or .svg file")
    ap.add_argument("trace_and_steps", nargs="?", metavar="TRACE_AND_STEPS",
                    default="skewed trace (top-2 share 0.7), mean of steps 1-4",
                    help="the title's description of the trace and steps (default: the "
                    "21B experiment's, '%(default)s')")
    args = ap.parse_args()
    npcsv.check_output(args.png, None, [args.csv])  # before reading: a bad PNG name writes nothing
    workload, platform, data = read(args.csv)
    plt = npcsv.pyplot()
    names = [p for p in POLICIES if p in data]
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.6))
    x = range(len(names))

    def bars(a, key, scale, offset=0.0, width=0.8, label=None, color=None):
        s = [stats([r[key] * scale for r in data[p]]) for p in names]
        a.bar([i + offset for i in x], [m for m, _, _ in s], width,
              yerr=[[lo for _, lo, _ in s], [hi for _, _, hi in s]], capsize=3, label=label,
              color=color)
        return s

    it = bars(ax[0], "iteration_s", 1.0)
    ax[0].set_ylabel("iteration time (s)")
    ax[0].set_title("iteration time")
    a2a = bars(ax[1], "moe_alltoall_s", 1.0, -0.2, 0.4, "dispatch + combine all-to-all (exposed)")
    cp = bars(ax[1], "moe_copy_s", 1.0, 0.2, 0.4, "copies: weight broadcast + gradient reduction")
    ax[1].set_ylabel("time per iteration, slowest worker (s)")
    ax[1].set_title("communication")
    ax[1].legend(fontsize=8)
    pad = bars(ax[2], "moe_padding_flops", 1e-15, -0.2, 0.4, "padding (PFLOP)", "tab:orange")
    ax[2].set_ylabel("padding compute per iteration (PFLOP)")
    ax[2].set_title("wasted compute and dropped tokens")
    drop = [stats([100 * r["moe_dropped_tokens"] / r["moe_assignments"] for r in data[p]])
            for p in names]
    twin = ax[2].twinx()
    twin.bar([i + 0.2 for i in x], [m for m, _, _ in drop], 0.4, color="tab:red",
             label="dropped assignments (%)")
    twin.set_ylabel("dropped token-expert assignments (%)")
    twin.set_ylim(0, 100)
    ax[2].set_ylim(0, max(m for m, _, _ in pad) * 1.45 + 1e-9)
    h1, l1 = ax[2].get_legend_handles_labels()
    h2, l2 = twin.get_legend_handles_labels()
    ax[2].legend(h1 + h2, l1 + l2, fontsize=8, loc="upper left")
    for a in ax:
        a.set_xticks(list(x))
        a.set_xticklabels(names)
        a.set_xlabel("MoE policy")
    fig.suptitle("MoE policies: %s on %s, %s" % (workload, platform, args.trace_and_steps))
    fig.tight_layout()
    npcsv.save(fig, args.png, None, dpi=110, bbox_inches=None)
    print("policy        iter_s   a2a_s  copy_s  padding_PFLOP  dropped_%  peak_GB")
    for i, p in enumerate(names):
        peak = sum(r["peak_bytes"] for r in data[p]) / len(data[p]) / 1e9
        print("%-12s %7.3f %7.3f %7.3f %14.2f %10.1f %8.1f" % (
            p, it[i][0], a2a[i][0], cp[i][0], pad[i][0], drop[i][0], peak))


if __name__ == "__main__":
    npcsv.main("plot_moe_policies", run)
