#!/usr/bin/python3
"""plot.py -- fabrics.png from fabrics.csv (scripts/fabrics_experiment.sh):
iteration time and exposed communication of each plan on each fabric.
Run with /usr/bin/python3 (Debian's matplotlib)."""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    path = argv[1] if len(argv) > 1 else os.path.join(HERE, "fabrics.csv")
    rows = [r for r in csv.DictReader(open(path)) if r["iteration_s"] not in ("", "failed")]
    groups = []
    for r in rows:
        key = (r["workload"], r["variant"], r["npus"])
        if key not in groups:
            groups.append(key)
    fig, axes = plt.subplots(1, len(groups), figsize=(5.2 * len(groups), 4.2), squeeze=False)
    for ax, (wl, variant, npus) in zip(axes[0], groups):
        sel = [r for r in rows if (r["workload"], r["variant"], r["npus"]) == (wl, variant, npus)]
        names = [r["fabric"] for r in sel]
        it = [float(r["iteration_s"]) for r in sel]
        ex = [float(r["exposed_comm_s"]) for r in sel]
        x = range(len(sel))
        ax.bar(x, it, color="#9ecae1", label="iteration")
        ax.bar(x, ex, color="#e6550d", width=0.5, label="exposed communication")
        ax.set_xticks(list(x))
        ax.set_xticklabels(names, rotation=40, ha="right", fontsize=8)
        ax.set_ylabel("seconds")
        ax.set_title("%s %s, %s NPUs" % (wl.replace(".json", ""), variant, npus), fontsize=9)
        lo = min(it)
        for i, v in enumerate(it):
            ax.text(i, v, "%.3f" % v, ha="center", va="bottom", fontsize=7)
        ax.set_ylim(0, max(it) * 1.3)
        if lo > 0:
            ax.legend(fontsize=7, loc="upper left", ncol=2)
    fig.tight_layout()
    out = os.path.join(HERE, "fabrics.png")
    fig.savefig(out, dpi=110)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
