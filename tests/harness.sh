# harness.sh -- what the shell tests share; sourced by cli_test.sh and
# analysis_test.sh from the source root, after their own arguments are read.
#   TMP            a scratch directory, removed on exit (checks write $TMP/err)
#   ok             counts a passed check
#   ko NAME        counts a failed check: prints NAME and $TMP/err's first lines
#   harness_done SUITE   prints "SUITE: N passed, N failed"; fails on a failure
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $1"; [ -s "$TMP/err" ] && sed 's/^/    stderr: /' "$TMP/err" | head -5; }

harness_done() {
    echo "$1: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
