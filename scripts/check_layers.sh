#!/bin/sh
# check_layers.sh [ROOT] -- fails when a source file includes a header of a
# higher layer (docs/design.md, "Layers").
#
# Each folder below is one layer and may include headers of its own folder
# and of the layers listed after it, nothing else:
#
#   planner/model      (bottom: jansson and libc only)
#   planner/schedule   model
#   planner/search     model schedule
#   sim/net            model
#   sim/engine         model schedule net
#   sim/cli            model schedule search net engine
#   sim/sweep          model (simsweep runs simrun as processes, never the engine)
#
# The build enforces the same rule (a layer's library sees only the include
# folders of the libraries it links), but only for headers it cannot find;
# this check also catches a header added to the wrong folder, and the planner
# layers reaching for SimGrid.  Exit 0 when clean, 1 with one line per
# violation ("file:line: includes X of layer L; allowed: ...").
set -eu
root=${1:-$(dirname "$0")/..}
cd "$root"

layers="planner/model planner/schedule planner/search sim/net sim/engine sim/cli sim/sweep"
allowed() {
    case $1 in
    planner/model) echo "planner/model" ;;
    planner/schedule) echo "planner/model planner/schedule" ;;
    planner/search) echo "planner/model planner/schedule planner/search" ;;
    sim/net) echo "planner/model sim/net" ;;
    sim/engine) echo "planner/model planner/schedule sim/net sim/engine" ;;
    sim/cli) echo "planner/model planner/schedule planner/search sim/net sim/engine sim/cli" ;;
    sim/sweep) echo "planner/model sim/sweep" ;;
    esac
}

# header name -> layer that holds it
index=$(mktemp)
trap 'rm -f "$index"' EXIT
for l in $layers; do
    [ -d "$l" ] || { echo "check_layers: missing layer folder $l" >&2; exit 1; }
    for h in "$l"/*.h; do
        [ -e "$h" ] && printf '%s %s\n' "$(basename "$h")" "$l"
    done
done >"$index"

bad=0
for l in $layers; do
    ok=$(allowed "$l")
    for f in "$l"/*.c "$l"/*.h; do
        [ -e "$f" ] || continue
        # quoted includes: resolve to the layer holding the header
        grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | while IFS= read -r line; do
            n=${line%%:*}
            h=$(printf '%s\n' "$line" | sed 's/.*include[[:space:]]*"\([^"]*\)".*/\1/')
            owner=$(awk -v h="$(basename "$h")" '$1 == h { print $2; exit }' "$index")
            if [ -z "$owner" ]; then
                echo "$f:$n: includes \"$h\", which is in no layer folder"
                continue
            fi
            case " $ok " in
            *" $owner "*) ;;
            *) echo "$f:$n: includes $h of layer $owner; $l may include: $ok" ;;
            esac
        done
        # the planner layers and simsweep know nothing of SimGrid
        case $l in
        planner/* | sim/sweep)
            grep -n '#[[:space:]]*include[[:space:]]*<simgrid' "$f" |
                sed "s|^\([0-9]*\):.*|$f:\1: $l must not include SimGrid|"
            ;;
        esac
    done
done >"$index.out"

if [ -s "$index.out" ]; then
    cat "$index.out"
    bad=1
fi
rm -f "$index.out"
[ $bad -eq 0 ] && echo "check_layers: $(echo $layers | wc -w) layers, no upward include"
exit $bad
