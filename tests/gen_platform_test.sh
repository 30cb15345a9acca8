#!/bin/sh
# gen_platform_test.sh -- the command line of platforms/gen_platform.py.
#   sh tests/gen_platform_test.sh [PYTHON]      (default /usr/bin/python3)
# A bad command line must give ONE line on stderr naming the option, exit 2
# (1 when the output cannot be written), no Python traceback, and no file:
# neither a new one nor a change to an existing target.  Options that do not
# apply to the mode or --fabric are refused, not ignored.  The comments of a
# platform follow --npus-per-node.  Every platforms/*.xml is written by --all
# (the byte-for-byte comparison of what --all writes with platforms/ is the
# unit test "shipped XML == gen_platform.py --all" of tests/test_platform.c;
# this suite checks that no shipped file escapes it).
# Ends with "gen_platform: N passed, N failed".
set -u
PY=${1:-/usr/bin/python3}
cd "$(dirname "$0")/.." || exit 2
. tests/harness.sh
GEN=platforms/gen_platform.py
OUT=$TMP/out/p.xml
mkdir "$TMP/out"

# bad NAME CODE PATTERN ARGS...: with -o $OUT appended, gen_platform.py must
# exit CODE with exactly one stderr line containing PATTERN, no traceback, and
# leave $TMP/out empty; then again with $OUT present, which must stay as it was
# and be the only file there.
bad() {
    name=$1 code=$2 pattern=$3
    shift 3
    for existing in no yes; do
        rm -f "$TMP"/out/* "$TMP"/out/.[!.]* 2>/dev/null
        [ $existing = yes ] && printf 'earlier contents\n' >"$OUT"
        "$PY" "$GEN" "$@" -o "$OUT" >"$TMP/stdout" 2>"$TMP/err"
        got=$?
        check_refusal "$name (existing target: $existing)" "$code" "$pattern" "$got"
        if [ $existing = no ]; then
            [ -z "$(ls -A "$TMP/out")" ] || { ko "$name: wrote $(ls -A "$TMP/out" | tr "\n" " ")"; continue; }
        else
            [ "$(cat "$OUT")" = "earlier contents" ] && [ "$(ls -A "$TMP/out")" = p.xml ] ||
                { ko "$name: the existing target changed or a file was left beside it"; continue; }
        fi
        ok
    done
}

# check_refusal NAME CODE PATTERN GOT: counts a failure (and returns 1)
# unless GOT = CODE, stderr is one line containing PATTERN, no traceback and
# nothing on stdout; counts nothing when all holds.
check_refusal() {
    lines=$(wc -l <"$TMP/err")
    if [ "$4" -ne "$2" ]; then
        ko "$1: exit $4, expected $2"
    elif grep -q Traceback "$TMP/err"; then
        ko "$1: Python traceback"
    elif [ "$lines" -ne 1 ]; then
        ko "$1: $lines lines on stderr, expected one"
    elif ! grep -q -- "$3" "$TMP/err"; then
        ko "$1: stderr does not mention '$3'"
    elif [ -s "$TMP/stdout" ]; then
        ko "$1: printed on standard output"
    else
        return 0
    fi
    return 1
}

# --- bad values: refused, never written (they were written silently) --------
bad "--npus-per-node 0 (was the preset's 8)" 2 "^gen_platform.py: --npus-per-node 0: expected" \
    --preset 910b --npus 64 --npus-per-node 0
bad "--npus-per-node -8" 2 "--npus-per-node -8: expected" --preset 910b --npus 64 --npus-per-node -8
bad "--npus-per-node 0 on clos3" 2 "--npus-per-node 0" --preset 910b --npus 64 --fabric clos3 \
    --leaf-hosts 8 --leaves-per-pod 2 --npus-per-node 0
bad "--npus-per-node 0 on rail" 2 "--npus-per-node 0" --preset 910b --npus 64 --fabric rail --npus-per-node 0
bad "--npus-per-node 0 on torus" 2 "--npus-per-node 0" --preset 910b --npus 64 --fabric torus \
    --torus 4,4,4 --npus-per-node 0
bad "--npus not a multiple of the server" 2 "--npus 12: expected a positive multiple of 8" \
    --preset 910b --npus 12
bad "--flat -3 (was radical 0--4)" 2 "--flat -3: expected" --flat -3
bad "--free-comm 12 (8 per node)" 2 "--free-comm 12: expected a positive multiple of 8" --free-comm 12
bad "--free-comm 0" 2 "--free-comm 0" --free-comm 0
bad "--topo with w1 = 0" 2 '--topo "2;8,8;0,8;1,1": expected' --preset 910b --npus 64 --topo "2;8,8;0,8;1,1"
bad "--topo holding other than --npus" 2 '--topo "2;8,4;1,8;1,1": its m list holds 32 hosts, not --npus 64' \
    --preset 910b --npus 64 --topo "2;8,4;1,8;1,1"
bad "--bandwidth-Bps -1" 2 "--bandwidth-Bps -1: expected bytes/s" --flat 4 --bandwidth-Bps -1
bad "--bandwidth-Bps nan" 2 "--bandwidth-Bps nan: expected" --flat 4 --bandwidth-Bps nan
bad "--bandwidth-Bps 1e31" 2 "--bandwidth-Bps 1e31: expected" --flat 4 --bandwidth-Bps 1e31
bad "--latency-s inf" 2 "--latency-s inf: expected seconds" --flat 4 --latency-s inf
bad "--latency-s=-1e-6" 2 "--latency-s -1e-6" --flat 4 --latency-s=-1e-6

# --- what raised a traceback or said something meaningless -------------------
bad "--flat 0 (TypeError)" 2 "--flat 0: expected" --flat 0
bad "--leaf-hosts 0 (ZeroDivisionError)" 2 "--leaf-hosts 0: expected" --preset 910b --npus 64 \
    --fabric clos3 --leaf-hosts 0
bad "--leaves-per-pod 0 (ZeroDivisionError)" 2 "--leaves-per-pod 0: expected" --preset 910b \
    --npus 64 --fabric clos3 --leaves-per-pod 0
bad "--topo garbage (list index out of range)" 2 '--topo "garbage": expected "L;m1' \
    --preset 910b --npus 64 --topo garbage
bad "--torus 4,x (invalid literal)" 2 "--torus 4,x: expected X,Y" --preset 910b --npus 64 \
    --fabric torus --torus 4,x
bad "--torus of other than --npus" 2 "--torus 4,4 holds 16 hosts, not --npus 64" --preset 910b \
    --npus 64 --fabric torus --torus 4,4
bad "--dragonfly with negative counts" 2 '--dragonfly "4,1;2,1;-4,1;-2": expected' --preset 910b \
    --npus 64 --fabric dragonfly --dragonfly "4,1;2,1;-4,1;-2"
bad "--dragonfly garbage" 2 '--dragonfly "x": expected' --preset 910b --npus 64 --fabric dragonfly \
    --dragonfly x
bad "--oversub nan on rail" 2 "--oversub nan: expected" --preset 910b --npus 64 --fabric rail --oversub nan
bad "--oversub 1,nan on clos3" 2 "--oversub 1,nan: expected" --preset 910b --npus 64 --fabric clos3 \
    --leaf-hosts 8 --leaves-per-pod 2 --oversub 1,nan
bad "--oversub with three ratios" 2 "--oversub 1,2,3: expected" --preset 910b --npus 64 \
    --fabric clos3 --leaf-hosts 8 --leaves-per-pod 2 --oversub 1,2,3
bad "--su-servers 1" 2 "--su-servers 1: expected at least 2" --preset 910b --npus 64 --fabric rail \
    --su-servers 1
bad "--npus 0 (said --preset needs --npus)" 2 "--npus 0: expected" --preset 910b --npus 0
bad "--preset without --npus" 2 "--preset needs --npus" --preset 910b
bad "--fabric torus without --torus" 2 "needs --torus" --preset 910b --npus 64 --fabric torus
bad "argparse's own error is one line" 2 "argument --flat: invalid int value" --flat abc

# --- platforms simrun refuses: not written ------------------------------------
# (each was written, and simrun then refused it)
bad "--oversub 1e308 on clos3 (a 2e-297 B/s link)" 2 \
    "--oversub 1e308: makes each leaf's up-link (8 hosts x 25e9 B/s / 1e308) 2e-297 B/s, outside simrun's link range 1e3 to 1e30 B/s" \
    --preset 910b --npus 64 --fabric clos3 --leaf-hosts 8 --leaves-per-pod 2 --oversub 1e308
bad "--oversub 1,1e308 on clos3 (pod up-links)" 2 "--oversub 1,1e308: makes each pod's up-link" \
    --preset 910b --npus 64 --fabric clos3 --leaf-hosts 8 --leaves-per-pod 2 --oversub 1,1e308
bad "--oversub O1,O2 on a clos3 of one pod (O2 ignored)" 2 "--oversub 1,4: the pod-spine ratio O2 applies to a Clos of several pods" \
    --preset 910b --npus 64 --fabric clos3 --leaf-hosts 8 --leaves-per-pod 8 --oversub 1,4
bad "--topo with a count over simrun's" 2 '--topo "2;8,8;1,99999999999;1,1": expected .* whole numbers from 1 to 1000000000' \
    --preset 910b --npus 64 --topo "2;8,8;1,99999999999;1,1"
bad "--topo of 9 levels (simrun reads 8)" 2 '--topo "9;.*L from 1 to 8' --preset 910b --npus 64 \
    --topo "9;1,1,1,1,1,1,1,8,8;1,1,1,1,1,1,1,1,8;1,1,1,1,1,1,1,1,1"
bad "--topo over simrun's 2e6 elements" 2 '--topo "2;8,8;1,999999;1,1": a platform of about 9e+06 hosts, switches and links, over simrun.s bound of 2e6' \
    --preset 910b --npus 64 --topo "2;8,8;1,999999;1,1"
bad "--npus over simrun's 2e6 elements" 2 "--npus 1048576: a platform of about 3.15e+06" --preset 910b --npus 1048576
bad "--fabric rail of a billion NPUs (a hang building its radical)" 2 "--npus 1000000000 --fabric rail .*over simrun" \
    --preset 910b --npus 1000000000 --fabric rail
bad "--leaves-per-pod 8192 (67M zone routes)" 2 "--leaves-per-pod 8192 .*over simrun" --preset 910b --npus 65536 \
    --fabric clos3 --leaf-hosts 8 --leaves-per-pod 8192
bad "--flat 1000000 over simrun's elements" 2 "--flat 1000000: a platform of about 3e+06" --flat 1000000
bad "--free-comm over simrun's elements" 2 "--free-comm 1000000: a platform" --free-comm 1000000
bad "--torus of 4 dimensions" 2 "--torus 4,4,4,1: expected X,Y\[,Z\], 2 or 3" --preset 910b --npus 64 \
    --fabric torus --torus 4,4,4,1
bad "--torus of 1 dimension" 2 "--torus 64: expected X,Y\[,Z\], 2 or 3" --preset 910b --npus 64 \
    --fabric torus --torus 64
bad "--dragonfly with a count over simrun's" 2 '--dragonfly "4,1;2,1;4,1;2000000000": expected' --preset 910b \
    --npus 64 --fabric dragonfly --dragonfly "4,1;2,1;4,1;2000000000"
bad "--allow-large with --all" 2 "--allow-large: applies to --preset, --flat and --free-comm, not --all" \
    --all "$TMP/out" --allow-large
rm -f "$TMP"/out/* 2>/dev/null
# --allow-large writes what simrun --allow-large loads
"$PY" "$GEN" --preset 910b --npus 64 --topo "2;8,8;1,999999;1,1" --allow-large -o "$OUT" 2>"$TMP/err" &&
    grep -q 'topo_parameters="2;8,8;1,999999;1,1"' "$OUT" && ok || ko "--allow-large writes a platform over the bound"
rm -f "$OUT"

# --- options that do not apply: refused, not ignored -------------------------
bad "--planes 2 on the fat tree (wrote one plane)" 2 "--planes 2: applies to --fabric rail only" \
    --preset 910b --npus 1024 --planes 2
bad "--planes 2 on torus" 2 "--planes 2: applies to --fabric rail" --preset 910b --npus 64 \
    --fabric torus --torus 4,4,4 --planes 2
bad "--plane-policy hash without --planes 2" 2 "--plane-policy hash: applies to --fabric rail --planes 2" \
    --preset 910b --npus 64 --fabric rail --plane-policy hash
bad "--pxn on clos3" 2 "--pxn: applies to --fabric rail only" --preset 910b --npus 64 --fabric clos3 \
    --leaf-hosts 8 --leaves-per-pod 2 --pxn
bad "--oversub on the fat tree" 2 "--oversub 2: applies to --fabric clos3 and --fabric rail" \
    --preset 910b --npus 64 --oversub 2
bad "--oversub on torus" 2 "--oversub 2: applies to" --preset 910b --npus 64 --fabric torus \
    --torus 4,4,4 --oversub 2
bad "--leaf-hosts on rail" 2 "--leaf-hosts 8: applies to --fabric clos3" --preset 910b --npus 64 \
    --fabric rail --leaf-hosts 8
bad "--topo on clos3" 2 "--topo 2;8,8;1,8;1,1: applies to --fabric fat-tree" --preset 910b --npus 64 \
    --fabric clos3 --topo "2;8,8;1,8;1,1"
bad "--torus on the fat tree" 2 "--torus 4,4,4: applies to --fabric torus" --preset 910b --npus 64 \
    --torus 4,4,4
bad "--npus with --flat" 2 "--npus 4: applies to --preset only, not --flat" --flat 4 --npus 4
bad "--bandwidth-Bps with --preset" 2 "--bandwidth-Bps 1e9: applies to --flat only" --preset 910b \
    --npus 64 --bandwidth-Bps 1e9
bad "--scaleup-sim with --free-comm" 2 "--scaleup-sim: applies to --preset only" --free-comm 8 --scaleup-sim

# --- outputs that cannot be written: one line, exit 1, nothing left ----------
# out NAME PATTERN ARGS...: exit 1, one stderr line containing PATTERN.
out() {
    name=$1 pattern=$2
    shift 2
    "$PY" "$GEN" "$@" >"$TMP/stdout" 2>"$TMP/err"
    check_refusal "$name" 1 "$pattern" $? && ok
}
out "-o in a missing folder" "-o /nonexistent/dir/a.xml: folder /nonexistent/dir does not exist" \
    --flat 4 -o /nonexistent/dir/a.xml
out "-o a directory" "-o $TMP/out: is a directory" --flat 4 -o "$TMP/out"
if [ -w /dev/full ]; then
    out "-o /dev/full" "-o /dev/full: cannot write: No space left on device" --flat 4 -o /dev/full
fi
out "--all into a missing folder" "--all /nonexistent/x: not a directory" --all /nonexistent/x
"$PY" "$GEN" --flat 4 -o "" >"$TMP/stdout" 2>"$TMP/err"
check_refusal '-o "" (was written beside the working folder)' 2 '-o "": empty file name' $? && ok
rm -f "$TMP"/out/* "$TMP"/out/.[!.]* 2>/dev/null
bad "-o with --all" 2 "-o $OUT: does not apply to --all" --all "$TMP/out"

# A write that fails part-way (a file size limit; Python ignores SIGXFSZ, so
# write() fails with EFBIG): the existing target stays as it was, no
# temporary file is left, and a new target is not created.
rm -f "$TMP"/out/* "$TMP"/out/.[!.]* 2>/dev/null
cp platforms/test_8npu.xml "$OUT"
(ulimit -f 4 && exec "$PY" "$GEN" --preset 910b --npus 64 -o "$OUT") >"$TMP/stdout" 2>"$TMP/err"
if check_refusal "write cut short over an existing file" 1 "-o $OUT: cannot write" $?; then
    if cmp -s "$OUT" platforms/test_8npu.xml && [ "$(ls -A "$TMP/out")" = p.xml ]; then ok; else
        ko "write cut short: the target changed or a temporary file was left"; fi
fi
rm -f "$OUT"
(ulimit -f 4 && exec "$PY" "$GEN" --preset 910b --npus 64 -o "$OUT") >"$TMP/stdout" 2>"$TMP/err"
if check_refusal "write cut short, new file" 1 "cannot write" $?; then
    [ -z "$(ls -A "$TMP/out")" ] && ok || ko "write cut short: left $(ls -A "$TMP/out" | tr "\n" " ")"
fi
"$PY" "$GEN" --flat 4 >/dev/full 2>"$TMP/err"
got=$?
: >"$TMP/stdout"
check_refusal "standard output full" 1 "cannot write standard output" $got && ok

# --- what is written ---------------------------------------------------------
# A good run replaces a platform it wrote whole and keeps its permissions.
cp platforms/test_8npu.xml "$OUT" && chmod 600 "$OUT"
if "$PY" "$GEN" --preset 910b --npus 16 -o "$OUT" 2>"$TMP/err" && cmp -s "$OUT" platforms/test_16npu.xml &&
    [ "$(ls -l "$OUT" | cut -c1-10)" = "-rw-------" ] && [ "$(ls -A "$TMP/out")" = p.xml ]; then ok; else
    ko "a good run replaces the target whole, keeping its mode"; fi
# ... and an empty file (mktemp's)
rm -f "$OUT" && : >"$OUT"
"$PY" "$GEN" --preset 910b --npus 16 -o "$OUT" 2>"$TMP/err" && cmp -s "$OUT" platforms/test_16npu.xml &&
    ok || ko "-o an empty file writes the platform"

# Any other existing file is never overwritten (a workload JSON given as -o became
# XML): one line naming it, exit 1, the file as it was, nothing left beside it; the
# same through a symbolic link, and with --all into a folder holding such a file.
for content in '{"model": {}}' 'a platform written by hand, not generated'; do
    rm -f "$TMP"/out/* "$TMP"/out/.[!.]* 2>/dev/null
    printf '%s\n' "$content" >"$OUT"
    "$PY" "$GEN" --preset 910b --npus 16 -o "$OUT" >"$TMP/stdout" 2>"$TMP/err"
    if check_refusal "-o an existing file that is not a platform ($content)" 1 \
        "-o $OUT: exists and is not a platform gen_platform.py wrote" $?; then
        [ "$(cat "$OUT")" = "$content" ] && [ "$(ls -A "$TMP/out")" = p.xml ] && ok ||
            ko "-o an existing file: it changed or a file was left beside it"
    fi
done
ln -s "$OUT" "$TMP/out/link.xml"
"$PY" "$GEN" --flat 4 -o "$TMP/out/link.xml" >"$TMP/stdout" 2>"$TMP/err"
check_refusal "-o a link to a file that is not a platform" 1 "exists and is not a platform" $? &&
    { [ "$(cat "$OUT")" = "a platform written by hand, not generated" ] && ok || ko "-o a link: the file changed"; }
mkdir "$TMP/allx"
printf 'mine\n' >"$TMP/allx/test_torus_64.xml"
"$PY" "$GEN" --all "$TMP/allx" >"$TMP/stdout" 2>"$TMP/err"
if check_refusal "--all into a folder with another file of a shipped name" 1 \
    "--all $TMP/allx/test_torus_64.xml: exists and is not a platform" $?; then
    [ "$(ls -A "$TMP/allx")" = test_torus_64.xml ] && [ "$(cat "$TMP/allx/test_torus_64.xml")" = mine ] && ok ||
        ko "--all wrote some files before refusing one"
fi
rm -rf "$TMP/allx" "$TMP/out/link.xml"
rm -f "$TMP"/out/* "$TMP"/out/.[!.]* 2>/dev/null
"$PY" "$GEN" --preset 910b --npus 16 -o - >"$TMP/stdout" 2>"$TMP/err" &&
    cmp -s "$TMP/stdout" platforms/test_16npu.xml && ok || ko "-o - writes standard output"

# The comments follow --npus-per-node: the title and the comment on
# npus_per_node give the platform's server size, not only the preset's.
for args in "--preset 910b --npus 64" "--preset h100 --npus 64 --fabric clos3 --leaf-hosts 8 --leaves-per-pod 2" \
    "--preset a100 --npus 64 --fabric rail" "--preset gb200 --npus 144" \
    "--preset 910 --npus 64 --fabric torus --torus 4,4,4"; do
    # shellcheck disable=SC2086
    "$PY" "$GEN" $args --npus-per-node 4 -o "$OUT" 2>"$TMP/err"
    if grep -q "npusim platform: .*, 4 per server (--npus-per-node 4; the preset's server holds" "$OUT" &&
        grep -B1 '<prop id="npus_per_node" value="4"/>' "$OUT" | grep -q '<!-- 4 NPUs per server' &&
        ! grep -q "npusim platform: .*(8 NPUs per server)" "$OUT"; then ok; else
        ko "$args --npus-per-node 4: the comments say another server size"; fi
done
if grep -q "npusim platform: .*, 4 per server" platforms/test_8npu.xml &&
    grep -B1 '"npus_per_node" value="4"' platforms/test_8npu.xml | grep -q '<!-- 4 NPUs per server'; then ok; else
    ko "test_8npu.xml's comments say 4 NPUs per server"; fi
# ... and stay the preset's at the preset's size
"$PY" "$GEN" --preset 910b --npus 64 --npus-per-node 8 -o "$OUT" 2>"$TMP/err" && cmp -s "$OUT" platforms/test_64npu.xml &&
    ok || ko "--npus-per-node at the preset's size changes nothing"

# A rail fabric of 128 NPUs or fewer takes the smallest scalable unit, 2 servers, by
# default (it refused its own default of 1): 64 H100s = 8 servers = 4 units of 2, 8 rails
# each, 32 leaves of 2 NICs.
"$PY" "$GEN" --preset h100 --npus 64 --fabric rail -o "$OUT" 2>"$TMP/err" &&
    grep -q 'topo_parameters="2;2,32;1,2;1,1"' "$OUT" && ok ||
    ko "--fabric rail at 64 NPUs: the default scalable unit of 2 servers"
"$PY" "$GEN" --preset h100 --npus 8 --fabric rail -o "$OUT" >"$TMP/stdout" 2>"$TMP/err"
check_refusal "--fabric rail on one server" 2 "1 servers are not a multiple of 2 servers per scalable unit" $? && ok

# Every shipped platform is written by --all (SHIPPED), so the byte-for-byte
# unit test of tests/test_platform.c covers it.
mkdir "$TMP/all"
if "$PY" "$GEN" --all "$TMP/all" >"$TMP/stdout" 2>"$TMP/err" && [ ! -s "$TMP/err" ]; then ok; else
    ko "--all into an empty folder"; fi
for f in platforms/*.xml; do
    [ -f "$TMP/all/${f#platforms/}" ] || { ko "$f is not written by --all (add it to SHIPPED)"; continue; }
    ok
done
left=$(find "$TMP/all" -type f ! -name '*.xml' | tr '\n' ' ')
[ -z "$left" ] && ok || ko "--all left other files: $left"

harness_done gen_platform
