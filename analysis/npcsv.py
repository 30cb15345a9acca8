"""npcsv -- what the plotting scripts of analysis/ share.

Reading: a CSV is read whole with the csv module (results files are small: one
row per simulated run).  Every script names the columns it needs; a missing
file, an empty file, a missing column, a short row or a value that is not a
number where one is needed is an InputError whose message names the file (and
the line and column), which main() prints on one line before exiting 2.  A
number must be finite and 0 or of a magnitude from 1e-30 to 1e30 (MAGNITUDE):
nan, inf and 1e308 are errors, not points matplotlib drops, or axes it
cannot draw.  No value is ever filled in silently.  Rows whose status column
(simsweep's sweeps, docs/csv-format.md) is not "ok" are the rows of failed
points, with no results: they are left out, and a line on stderr says how
many.  A
UTF-8 byte-order mark at the start of the file (a CSV saved by Excel) is
skipped.

Writing: save() takes the figure's file name from -o (check_output: a .png,
.pdf or .svg file in a directory that exists, not a directory), writes a
temporary file next to it and renames it over the name when complete, so a
failure leaves no partial file; a bad name is an InputError naming the option
and the path.  A figure is never written over a file the script reads (the
same file by another name included).

Command line: ArgumentParser prints argparse's own errors (a missing option,
a value that is not a number) on one line, as every other error.

Plotting: matplotlib with the Agg backend (no display needed).  Debian's
python3-matplotlib is what scripts/install-deps.sh installs, for
/usr/bin/python3; another python3 first on PATH may not see it, which is why
the scripts start with #!/usr/bin/python3 and the error says so.
"""

import argparse
import csv
import math
import os
import sys
import tempfile

EXIT_INPUT = 2

# The magnitudes a number of a CSV may have (besides 0): far beyond any
# simulated time, byte count or ratio, and small enough that sums, products
# and quotients of two of them stay finite (1e308 or 1e-320 made axes of
# infinite size and speed-ups of inf).
MAGNITUDE = (1e-30, 1e30)
MAGNITUDE_TEXT = "1e-30 to 1e30"

# Every file read_table() read: save() refuses to write a figure over one.
_READ = []


class InputError(Exception):
    """Bad input: the message names the file and what is wrong."""


class Table:
    """Rows of one CSV file as dicts, with the line number of each row."""

    def __init__(self, path, columns, rows, lines):
        self.path = path
        self.columns = columns
        self.rows = rows
        self.lines = lines

    def where(self, index, column):
        """'file:line: column 'c'' for messages about a value."""
        return f"{self.path}:{self.lines[index]}: column '{column}'"

    def number(self, index, column, ok=None, what=None):
        """Row index's value in column as a float, or InputError: a number
        (not nan, inf, or 1e400, which float() reads as inf), 0 or of a
        magnitude within MAGNITUDE; and ok(value), when given, else an error
        saying the column expected what."""
        text = self.rows[index][column]
        x = parse_number(text)
        if x is None:
            raise InputError(f"{self.where(index, column)}: expected "
                             f"{what or 'a number'}, got '{text}'")
        if ok is not None and math.isfinite(x) and not ok(x):
            raise InputError(f"{self.where(index, column)}: expected {what}, got '{text}'")
        if not in_range(x):
            raise InputError(f"{self.where(index, column)}: expected a finite number (0, or "
                             f"of magnitude {MAGNITUDE_TEXT}), got '{text}'")
        return x

    def positive(self, index, column, what="a positive number"):
        """number() > 0, or InputError saying what was expected."""
        return self.number(index, column, lambda x: x > 0, what)

    def non_negative(self, index, column, what="a number of 0 or more"):
        """number() >= 0, or InputError saying what was expected."""
        return self.number(index, column, lambda x: x >= 0, what)

    def count(self, index, column, what="a positive whole number"):
        """number(), a whole number of 1 or more, as an int; or InputError."""
        return int(self.number(index, column, lambda x: x >= 1 and x == int(x), what))

    def text(self, index, column):
        return self.rows[index][column]

    def require(self, columns):
        missing = [c for c in columns if c not in self.columns]
        if missing:
            raise InputError(f"{self.path}: missing column{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(repr(c) for c in missing)} "
                             f"(header has: {', '.join(self.columns)})")


def parse_number(text):
    """text as a float, or None when it is not a number.  float()'s
    extensions are not numbers here: '1_000', and surrounding space (the
    reader strips fields)."""
    if not isinstance(text, str) or "_" in text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def in_range(x):
    """x is finite, and 0 or of a magnitude within MAGNITUDE."""
    return math.isfinite(x) and (x == 0 or MAGNITUDE[0] <= abs(x) <= MAGNITUDE[1])


def read_table(path, required):
    """Reads path; every column of required must be in its header."""
    _READ.append(path)
    try:
        # utf-8-sig: a leading byte-order mark (Excel saves CSVs with one) is not part of
        # the first column's name
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            try:
                header = next(reader)
            except StopIteration:
                raise InputError(f"{path}: empty file, expected a CSV header") from None
            header = [h.strip() for h in header]
            rows, lines = [], []
            for fields in reader:
                if not fields or all(not x.strip() for x in fields):
                    continue
                if len(fields) != len(header):
                    raise InputError(f"{path}:{reader.line_num}: {len(fields)} fields, "
                                     f"expected {len(header)} as in the header")
                rows.append(dict(zip(header, (x.strip() for x in fields))))
                lines.append(reader.line_num)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from None
    except (UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"{path}: not a CSV file: {e}") from None
    if "status" in header:  # a failed point's row has no results
        kept = [i for i, r in enumerate(rows) if r["status"] == "ok"]
        left = len(rows) - len(kept)
        if left:
            name = os.path.splitext(os.path.basename(sys.argv[0]))[0]
            print(f"{name}: {path}: {left} row{'s' if left > 1 else ''} of failed points "
                  "left out (status is not ok)", file=sys.stderr)
        rows, lines = [rows[i] for i in kept], [lines[i] for i in kept]
    table = Table(path, header, rows, lines)
    table.require(required)
    if not rows:
        raise InputError(f"{path}: no data rows after the header")
    return table


def parse_where(table, assignments):
    """Indices of the rows matching every COLUMN=VALUE of assignments."""
    keep = list(range(len(table.rows)))
    for a in assignments or []:
        if "=" not in a:
            raise InputError(f"--where expects COLUMN=VALUE, got '{a}'")
        column, value = a.split("=", 1)
        table.require([column])
        keep = [i for i in keep if table.text(i, column) == value]
    if not keep:
        raise InputError(f"{table.path}: no row matches {' and '.join(assignments)}")
    return keep


def pyplot():
    """matplotlib.pyplot on the Agg backend, or InputError saying how to get it."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError(f"matplotlib is not importable from {sys.executable}: "
                         "install Debian's python3-matplotlib and run with /usr/bin/python3") \
            from None
    return plt


# The figure formats the output may name; its extension picks the format.
FORMATS = (".png", ".pdf", ".svg")


def same_file(a, b):
    """a and b name one existing file (a link, another spelling, a hard link)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # one does not exist: not the same file
        return False


def check_output(path, option="-o", inputs=()):
    """The format of the figure file path names ('png', 'pdf' or 'svg'), or an
    InputError naming option and path: a directory, a name without one of
    FORMATS' extensions (out.csv, myplot), a directory that does not exist
    and a file of inputs (or one read_table() read) are refused before
    anything is written."""
    name = f"{option} {path}" if option else path
    if not path:
        raise InputError(f"{option + ' ' if option else ''}'': empty file name, expected a "
                         ".png, .pdf or .svg file")
    for source in list(inputs) + _READ:
        if same_file(path, source):
            raise InputError(f"{name}: is the input file {source}; writing the figure would "
                             "destroy it, choose another name")
    if os.path.isdir(path):
        raise InputError(f"{name}: is a directory, expected a .png, .pdf or .svg file")
    extension = os.path.splitext(path)[1].lower()
    if extension not in FORMATS:
        raise InputError(f"{name}: expected a .png, .pdf or .svg file "
                         "(the extension picks the format)")
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        raise InputError(f"{name}: cannot write: directory '{directory}' does not exist")
    return extension[1:]


def save(fig, path, option="-o", dpi=120, bbox_inches="tight"):
    """Writes fig to path (check_output first): to a temporary file next to
    it, renamed over path once complete, so that a failure leaves no partial
    file (and an earlier figure at path intact).  option names the
    command-line option of path in messages (None: the path alone)."""
    fmt = check_output(path, option)
    name = f"{option} {path}" if option else path
    target = os.path.realpath(path)  # a symbolic link is written through
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target),
                                   prefix=f".{os.path.basename(target)}.", suffix=".tmp")
        os.close(fd)
        fig.savefig(tmp, format=fmt, dpi=dpi, bbox_inches=bbox_inches)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600, as open() would have made it
        os.replace(tmp, target)
        tmp = None
    except OSError as e:
        raise InputError(f"{name}: cannot write: {e.strerror or e}") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def short_name(path):
    """'workloads/llama.json' -> 'llama'."""
    return os.path.splitext(os.path.basename(path))[0]


# Axis labels in words with units, and the factor from the CSV's SI units
# (docs/csv-format.md) to the unit shown: ratios become percentages, as
# simrun's table prints them, bytes become GB (1e9, as HBM is quoted).
LABELS = {
    "iteration_s": ("iteration time (s)", 1),
    "pipeline_s": ("pipeline time, to the last backward (s)", 1),
    "tokens_per_s": ("throughput (tokens/s)", 1),
    "mfu": ("MFU (% of peak FLOP/s)", 100),
    "bubble_ratio": ("pipeline bubble (% of busy time)", 100),
    "peak_fraction": ("peak device memory (% of capacity)", 100),
    "peak_bytes": ("peak device memory (GB)", 1e-9),
    "capacity_bytes": ("device memory capacity (GB)", 1e-9),
    "memory_bytes": ("peak device memory (GB)", 1e-9),
    "exposed_comm_s": ("exposed communication per stage (s)", 1),
    "recompute_s": ("recompute time per stage (s)", 1),
    "predicted_iteration_s": ("predicted iteration time (s)", 1),
    "planner_wall_s": ("planner wall time (s)", 1),
    "sim_wall_s": ("simulation wall time (s)", 1),
    "activities": ("SimGrid activities", 1),
    "npus": ("NPUs", 1),
    "devices": ("NPUs", 1),
    "tp": ("tensor-parallel size", 1),
    "pp": ("pipeline stages", 1),
    "dp": ("data-parallel replicas", 1),
    "vpp": ("virtual chunks per stage", 1),
    "micro_batch_size": ("micro-batch size (samples)", 1),
    "num_micro_batches": ("micro-batches per pipeline", 1),
    "global_batch_size": ("global batch (samples)", 1),
    "dp_bucket_bytes": ("gradient bucket (GB)", 1e-9),
    "fold_dp": ("simulated replicas (--fold-dp)", 1),
    "dp_radix": ("butterfly radix", 1),
}


# Values that mean something other than their number.
VALUE_NAMES = {"fold_dp": {"0": "every replica (no folding)", "1": "1 replica (--fold-dp 1)"}}


def value_name(column, value):
    """How a value of column reads in a legend."""
    return VALUE_NAMES.get(column, {}).get(value, value)


def label(column):
    """The axis label of a column: LABELS, else GB for *_bytes, s for *_s."""
    if column in LABELS:
        return LABELS[column][0]
    if column.endswith("_bytes"):
        return f"{column[:-len('_bytes')]} (GB)"
    if column.endswith("_s"):
        return f"{column[:-len('_s')]} (s)"
    return column


def factor(column):
    """What a column's CSV value is multiplied by for its axis (label())."""
    if column in LABELS:
        return LABELS[column][1]
    return 1e-9 if column.endswith("_bytes") else 1.0


def describe_runs(table, rows):
    """'llama on 16k_npu (16384 NPUs)' from the workload, platform (and npus)
    columns of the rows, when the CSV has them; '' otherwise.  Several values
    are listed (up to 3) or counted."""
    def values(column):
        if column not in table.columns:
            return []
        return list(dict.fromkeys(table.text(i, column) for i in rows))

    def words(items, what):
        names = [short_name(v) for v in items]
        return ", ".join(names) if len(names) <= 3 else f"{len(names)} {what}"

    workloads, platforms = values("workload"), values("platform")
    if not workloads and not platforms:
        return ""
    text = words(workloads, "workloads") if workloads else ""
    if platforms:
        text += (" on " if text else "") + words(platforms, "platforms")
        npus = values("npus")
        if len(platforms) == 1 and len(npus) == 1 and npus[0]:
            first = next(i for i in rows if table.text(i, "npus") == npus[0])
            text += f" ({table.count(first, 'npus', 'a positive whole number of NPUs'):,} NPUs)"
    return text


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose own errors (a missing option, a value of the
    wrong type) are one line, as the scripts' others: 'prog: message'."""

    def error(self, message):
        prog = os.path.splitext(self.prog)[0]  # as main() names the script
        self.exit(EXIT_INPUT, f"{prog}: {message} (--help shows the usage)\n")


def short(x):
    """A number as one would type it: 1e+30 -> '1e30', 1e-05 -> '1e-5', 2.0 -> '2'."""
    mantissa, _, exponent = f"{x:g}".partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else mantissa


def finite_option(low=-MAGNITUDE[1], high=MAGNITUDE[1]):
    """An argparse type: a finite number from low to high, else an error
    (argparse names the option) saying what was given (nan, inf, 1e400)."""
    def parse(text):
        x = parse_number(text)
        if x is None or not (math.isfinite(x) and low <= x <= high):
            raise argparse.ArgumentTypeError(f"expected a finite number from {short(low)} to "
                                             f"{short(high)}, got '{text}'")
        return x
    return parse


def main(prog, run):
    """Runs run(); an InputError becomes one line on stderr and exit 2."""
    try:
        run()
    except InputError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        sys.exit(EXIT_INPUT)
