# bench_common.sh -- sourced by the bench_*.sh scripts (not run on its own).
# bench_init SCRIPT NAME DEFAULT [SIMRUN [COUNT]]: the scripts' common start:
# sets SIMRUN (default build/simrun) and REPEATS to COUNT (default DEFAULT; a
# positive integer, else exit 2 naming SCRIPT and the argument NAME), moves
# to the project's root and makes TMP, a temporary folder removed on exit.
bench_init() {
    _script=$1 _what=$2 _default=$3
    shift 3
    SIMRUN=${1:-build/simrun}
    REPEATS=${2:-$_default}
    case $REPEATS in
    ''|*[!0-9]*|0) echo "$_script: $_what: expected a positive integer, got '$REPEATS'" >&2 && exit 2 ;;
    esac
    cd "$(dirname "$0")/.."
    TMP=$(mktemp -d)
    trap 'rm -rf "$TMP"' EXIT
}

# timed_runs NAME ARGS...: runs `$SIMRUN --quiet --csv $TMP/run.csv ARGS`
# $REPEATS times and sets
#   median lo hi  the median wall time and the min-max spread (seconds)
#   rss           the largest peak RSS (KiB)
#   row           the last run's CSV row
# or prints "NAME: simrun failed: ..." and returns 1.
timed_runs() {
    _name=$1
    shift
    : >"$TMP/walls"
    rss=0
    _i=0
    while [ $_i -lt "$REPEATS" ]; do
        /usr/bin/time -f '%e %M' -o "$TMP/time" "$SIMRUN" --quiet --csv "$TMP/run.csv" "$@" 2>"$TMP/err" ||
            { echo "$_name: simrun failed: $(cat "$TMP/err")"; return 1; }
        read -r _wall _kib <"$TMP/time"
        echo "$_wall" >>"$TMP/walls"
        [ "$_kib" -gt "$rss" ] && rss=$_kib
        _i=$((_i + 1))
    done
    # shellcheck disable=SC2046
    set -- $(sort -n "$TMP/walls" | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.2f %.2f %.2f", m, v[1], v[NR]}')
    median=$1 lo=$2 hi=$3
    row=$(tail -1 "$TMP/run.csv")
}
