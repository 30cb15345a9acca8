#!/usr/bin/python3
"""sweep_csv_compare.py -- checks simsweep CSVs (the standard library only).

  sweep_csv_compare.py same A.csv B.csv
      A and B hold the same run_id set, each run_id once, and for every run_id
      the same value in every column both have, except the columns that vary
      from one run of the same point to the next (wall times and row order:
      *_wall_s, and the names in VOLATILE).  Numeric fields compare as
      numbers, exactly (the simulator is deterministic).
  sweep_csv_compare.py count A.csv N
      A has N rows, N distinct run_ids, and every row's status is "ok".

Prints one line saying what it found; exit 0 when the check holds, 1 when not,
2 on a file that cannot be read.
"""
import csv
import sys

VOLATILE = {"row", "row_index", "order", "seq", "started_at", "finished_at",
            "timestamp", "date", "host", "hostname", "pid", "worker",
            "slurm_job_id", "slurm_array_task_id"}


def volatile(col):
    return col.endswith("_wall_s") or col in VOLATILE


def read(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print(f"{path}: {e.strerror}")
        sys.exit(2)
    if rows and "run_id" not in rows[0]:
        print(f"{path}: no run_id column")
        sys.exit(1)
    return rows


def same_value(a, b):
    if a == b:
        return True
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def by_run_id(path, rows):
    out, dups = {}, []
    for r in rows:
        if r["run_id"] in out:
            dups.append(r["run_id"])
        out[r["run_id"]] = r
    if dups:
        print(f"{path}: duplicated run_id {dups[0]} ({len(dups)} duplicates)")
        sys.exit(1)
    return out


def same(a_path, b_path):
    a, b = by_run_id(a_path, read(a_path)), by_run_id(b_path, read(b_path))
    if a.keys() != b.keys():
        only_a, only_b = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
        print(f"run_id sets differ: {len(only_a)} only in {a_path} {only_a[:3]}, "
              f"{len(only_b)} only in {b_path} {only_b[:3]}")
        return 1
    if not a:
        print("both files are empty")
        return 1
    cols_a = next(iter(a.values())).keys()
    cols_b = next(iter(b.values())).keys()
    cols = [c for c in cols_a if c in cols_b and not volatile(c)]
    for rid in sorted(a):
        for c in cols:
            if not same_value(a[rid][c], b[rid][c]):
                print(f"run_id {rid}: column {c}: {a[rid][c]!r} in {a_path}, {b[rid][c]!r} in {b_path}")
                return 1
    ignored = sorted(c for c in cols_a if volatile(c))
    print(f"same: {len(a)} run_ids, {len(cols)} columns equal (ignored: {' '.join(ignored)})")
    return 0


def count(path, n):
    rows = read(path)
    ids = {r["run_id"] for r in rows}
    bad = [r["run_id"] for r in rows if r.get("status", "ok") != "ok"]
    print(f"{path}: {len(rows)} rows, {len(ids)} distinct run_ids, {len(bad)} not ok")
    return 0 if len(rows) == n and len(ids) == n and not bad else 1


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "same":
        sys.exit(same(sys.argv[2], sys.argv[3]))
    if len(sys.argv) == 4 and sys.argv[1] == "count":
        sys.exit(count(sys.argv[2], int(sys.argv[3])))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
