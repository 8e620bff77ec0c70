#!/usr/bin/env bash
# End-to-end: the example protocol inputs/protocol.toml (minimise, NVT, NPT, NVE production) run in one go, and
# stopped inside each stage and resumed by the same command: SIGTERM inside the minimisation (exit 75), then
# run-length stops inside the NVT, NPT and NVE stages. Every resumed run ends with final.h5 bit for bit that of
# the run in one go, and the same thermo.csv; the NPT stage moved the box towards p = 1, and the NVE stage kept it.
# usage: protocol_test.sh SPOTRUN_TEST NP   (spotrun-test: SPOTRUN_TEST_FORCE_SLOWDOWN stretches the minimisation)
set -uo pipefail
SPOTRUN=$1
NP=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
WORK=$(mktemp -d /tmp/spotrun-protocol.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=../support/test_lib.sh
source "$(dirname "$0")/../support/test_lib.sh"
INPUTS=$(cd "$(dirname "$0")/../../inputs" && pwd)
cp "$INPUTS/protocol.toml" "$WORK/deck.toml"

fail() { echo "FAIL: $*"; exit 1; }
same_state() { h5diff -q "$1" "$2" /md/x && h5diff -q "$1" "$2" /md/v && h5diff -q "$1" "$2" /md/id; }

[ "$(run_deck "$NP" "$WORK/ref")" = 0 ] || fail "the protocol failed: $(tail -5 "$WORK/ref.log")"
last=$(tail -1 "$WORK/ref/thermo.csv" | cut -d, -f1)
mini=$((last - 8000))
[ "$mini" -gt 0 ] || fail "no minimisation steps before the 8000 dynamics steps (last step $last)"
grep -q "Finished at step $last:" "$WORK/ref.log" || fail "the run did not finish at step $last"
# vol: column 7. The last row before the NPT stage (it starts 2000 dynamics steps after the minimisation; the box
# is the lattice's until then), the first row after it (the NVE stage's box) and the last row.
v0=$(awk -F, -v s=$((mini + 2000)) 'NR > 1 && $1 <= s { v = $7 } END { print v }' "$WORK/ref/thermo.csv")
v1=$(awk -F, -v s=$((mini + 4000)) 'NR > 1 && $1 > s { print $7; exit }' "$WORK/ref/thermo.csv")
v2=$(tail -1 "$WORK/ref/thermo.csv" | cut -d, -f7)
[ -n "$v0" ] && [ -n "$v1" ] || fail "thermo.csv has no rows at the NPT stage's ends"
awk -v a="$v0" -v b="$v1" 'BEGIN { exit !(b > 1.1 * a) }' || fail "the NPT stage did not expand the box ($v0 -> $v1)"
[ "$v1" = "$v2" ] || fail "the NVE stage changed the box ($v1 -> $v2)"
echo "protocol: $mini minimisation steps, volume $v0 -> $v1 under NPT, kept under NVE"

# SIGTERM inside the minimisation (its forces slowed down), resumed by the same command.
export SPOTRUN_TEST_FORCE_SLOWDOWN=30
mpirun -np "$NP" "$SPOTRUN" run "$WORK/deck.toml" --output-dir "$WORK/m" --verbose >"$WORK/m.log" 2>&1 &
pid=$!
for wait in $(seq 1 1200); do
  awk -F, 'NR > 1 && $1 >= 100 { found = 1 } END { exit !found }' "$WORK/m/thermo.csv" 2>/dev/null && break
  sleep 0.05
done
pkill -TERM -P "$pid" -x spotrun-test
wait $pid
code=$?
unset SPOTRUN_TEST_FORCE_SLOWDOWN
[ "$code" = 75 ] || fail "SIGTERM in the minimisation gave exit $code, expected 75: $(tail -5 "$WORK/m.log")"
stop=$(grep -o "Stopping at step [0-9]*" "$WORK/m.log" | awk '{print $4}')
[ -n "$stop" ] && [ "$stop" -lt "$mini" ] || fail "the stop (step $stop) is not inside the minimisation (steps 1-$mini)"
[ "$(run_deck "$NP" "$WORK/m")" = 0 ] || fail "resume from the minimisation failed: $(tail -5 "$WORK/m.log")"
same_state "$WORK/ref/final.h5" "$WORK/m/final.h5" || fail "resumed from step $stop (minimisation): not bit-identical"
cmp -s "$WORK/ref/thermo.csv" "$WORK/m/thermo.csv" || fail "resumed from step $stop (minimisation): another thermo.csv"
echo "SIGTERM at step $stop (minimisation), resumed: final.h5 and thermo.csv bit-identical"

# Run-length stops inside NVT, NPT and NVE (run.steps counts the dynamics steps), each resumed.
for stop in 1000 3000 6000; do
  out="$WORK/s$stop"
  [ "$(run_deck "$NP" "$out" --set run.steps=$stop)" = 0 ] || fail "run to $stop dynamics steps failed: $(tail -5 "$out.log")"
  [ "$(run_deck "$NP" "$out")" = 0 ] || fail "resume after $stop dynamics steps failed: $(tail -5 "$out.log")"
  same_state "$WORK/ref/final.h5" "$out/final.h5" || fail "resumed after $stop dynamics steps: not bit-identical"
  # The stopped run wrote a row at its last step (the end of a run): the rows of the run in one go, the same.
  awk -F, 'NR == FNR { keep[$1] = 1; next } keep[$1]' "$WORK/ref/thermo.csv" "$out/thermo.csv" >"$out/rows.csv"
  cmp -s "$WORK/ref/thermo.csv" "$out/rows.csv" || fail "resumed after $stop dynamics steps: other thermo rows"
  echo "stopped after $stop dynamics steps, resumed: final.h5 and thermo.csv bit-identical"
done
echo "PASS: protocol at np $NP"
