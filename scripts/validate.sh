#!/bin/sh
# validate.sh -- npusim against published training runs (docs/validation.md).
#   sh scripts/validate.sh                    the table: published / simulated / error per figure
#   sh scripts/validate.sh --write-docs       the same, and regenerate docs/validation.md
#   sh scripts/validate.sh --calibrate a100   the bisection of the A100 preset's matmul_efficiency
#   sh scripts/validate.sh --only ID ...      a subset; --keep DIR keeps the inputs and CSVs
# Brings the build folder (BUILD, default build) up to date first, then runs
# tests/validation/validate.py with /usr/bin/python3 (glue only: it writes the
# workloads and platforms, runs build/simrun and compares).  Exit status 1
# when a figure is outside its bound without a reason in
# tests/validation/cases.json, or the calibration point no longer reproduces.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$BUILD" -j2 >/dev/null
exec /usr/bin/python3 tests/validation/validate.py --build "$BUILD" "$@"
