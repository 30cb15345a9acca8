#!/bin/sh
# layers_test.sh -- scripts/check_layers.sh passes on the tree and catches an
# upward include and SimGrid in a planner layer when one is planted in a copy.
# Ends with "layers: N passed, N failed".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/harness.sh

if sh scripts/check_layers.sh . >"$TMP/err" 2>&1; then ok; else ko "the tree has no upward include"; fi

plant() { # plant NAME FILE LINE PATTERN: a copy with LINE added to FILE must fail naming PATTERN
    rm -rf "$TMP/tree" && mkdir -p "$TMP/tree"
    cp -r planner sim scripts "$TMP/tree/"
    printf '%s\n' "$3" >>"$TMP/tree/$2"
    if sh scripts/check_layers.sh "$TMP/tree" >"$TMP/err" 2>&1; then
        ko "$1: check passed"
    elif grep -q -- "$4" "$TMP/err"; then ok; else ko "$1: message does not name '$4'"; fi
}
plant "model includes a schedule header" planner/model/cluster.h '#include "plan.h"' \
    "planner/model/cluster.h:.*plan.h of layer planner/schedule"
plant "net includes an engine header" sim/net/platform.c '#include "engine.h"' \
    "sim/net/platform.c:.*engine.h of layer sim/engine"
plant "simsweep includes an engine header" sim/sweep/sweep_run.c '#include "report.h"' \
    "sim/sweep/sweep_run.c:.*report.h of layer sim/engine"
plant "search includes SimGrid" planner/search/predict.c '#include <simgrid/actor.h>' \
    "predict.c:.*must not include SimGrid"
harness_done layers
