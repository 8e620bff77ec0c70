#!/usr/bin/env bash
# spotrun report --png (docs/report.md): a path the PNG cannot be written to is refused with exit 2 and one
# line naming it (nothing on stdout, no traceback); a run of two attempts (the second resumed) gets a PNG
# with the timeline and the three thermo panels (energy, temperature, pressure), told apart from one
# without thermo panels by its height (the figure grows by 2.2 inches a panel at 110 dpi).
# usage: png_test.sh SPOTRUN
set -uo pipefail
SPOTRUN=$1
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../support/test_lib.sh
source "$HERE/../support/test_lib.sh"
need_python matplotlib
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
WORK=$(mktemp -d /tmp/spotrun-report-png.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

write_deck "$WORK/deck.toml" "${LIQUID_DECK[@]}" run.steps=40 checkpoint.every_steps=20
[ "$(run_deck 1 "$WORK/out")" = 0 ] || fail "first attempt failed: $(tail -5 "$WORK/out.log")"
[ "$(run_deck 1 "$WORK/out" --set run.steps=80)" = 0 ] || fail "second attempt failed: $(tail -5 "$WORK/out.log")"

# check_refused PATH MESSAGE: report --png PATH exits 2 with exactly MESSAGE on stderr and nothing on stdout.
check_refused() {
    "$SPOTRUN" report "$WORK/out" --png "$1" >"$WORK/stdout" 2>"$WORK/stderr"
    local code=$?
    [ "$code" = 2 ] || fail "--png $1 exited $code: $(cat "$WORK/stderr")"
    [ "$(cat "$WORK/stderr")" = "$2" ] || fail "--png $1 said '$(cat "$WORK/stderr")', expected '$2'"
    [ ! -s "$WORK/stdout" ] || fail "--png $1 printed on stdout: $(head -3 "$WORK/stdout")"
}
check_refused /nonexistent/x.png \
    "ERROR: spotrun report: --png /nonexistent/x.png: cannot write the PNG there: its directory '/nonexistent' does not exist"
check_refused "$WORK" "ERROR: spotrun report: --png $WORK: cannot write the PNG there: it is a directory; give a file name ending in .png"
check_refused "$WORK/deck.toml/x.png" \
    "ERROR: spotrun report: --png $WORK/deck.toml/x.png: cannot write the PNG there: '$WORK/deck.toml' is not a directory"

# png_height FILE: the height in pixels of a PNG (IHDR: bytes 20-23, big-endian).
png_height() { od -An -tu1 -j20 -N4 "$1" | awk '{print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4}'; }
"$SPOTRUN" report "$WORK/out" --png "$WORK/run.png" >"$WORK/png.log" 2>&1 || fail "--png failed: $(cat "$WORK/png.log")"
grep -q "^Timeline and thermo: $WORK/run.png$" "$WORK/png.log" || fail "--png did not name the PNG: $(tail -2 "$WORK/png.log")"
[ "$(head -c 8 "$WORK/run.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "--png wrote no PNG"
# The same report without thermo.csv: the timeline alone.
mv "$WORK/out/thermo.csv" "$WORK/thermo.csv"
"$SPOTRUN" report "$WORK/out" --png "$WORK/bare.png" >"$WORK/bare.log" 2>&1 || fail "--png without thermo: $(cat "$WORK/bare.log")"
mv "$WORK/thermo.csv" "$WORK/out/thermo.csv"
with=$(png_height "$WORK/run.png")
without=$(png_height "$WORK/bare.png")
# 2 attempts: (2.2 + 0.45 * 2 + 3) inches without thermo, 3 panels of 2.2 inches more with it, at 110 dpi.
[ "$without" = 671 ] && [ "$with" = 1397 ] || fail "PNG heights $with (with thermo) and $without (without): expected 1397 and 671"
if grep -q Traceback "$WORK"/*.log "$WORK/stderr"; then fail "a Python traceback was printed"; fi
echo "PASS: report png"
