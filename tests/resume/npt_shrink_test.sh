#!/usr/bin/env bash
# End-to-end: constant pressure squeezes the box of a 2-rank run until its sub-boxes would get thinner than the
# ghost reach (a skin chosen to leave them 3 % thicker at the start): the run stops by itself with a stop
# checkpoint, exit 75 and "resume on fewer ranks"; the same deck on 2 ranks refuses the checkpoint's box with a
# clear error; on 1 rank it resumes from the stop checkpoint and finishes.
# usage: npt_shrink_test.sh SPOTRUN
set -uo pipefail
SPOTRUN=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
WORK=$(mktemp -d /tmp/spotrun-npt-shrink.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=../support/test_lib.sh
source "$(dirname "$0")/../support/test_lib.sh"
DATA=$(cd "$(dirname "$0")/../data" && pwd)/lj-small.data

fail() { echo "FAIL: $*"; exit 1; }

# lj-small.data: a cube of edge 10.0776; 2 ranks split it in two (5.0388 thick); cutoff 2.5 + skin 2.392 =
# 4.892, 3 % less.
cat >"$WORK/deck.toml" <<DECK
[run]
solver = "md"
steps = 300
thermo_every = 10
[md]
cutoff = 2.5
skin = 2.392
ensemble = "nph"
pressure = 20.0
pressure_damp = 0.2
thermo_style = ["step", "temp", "press", "vol"]
[md.initial]
lammps_data = "$DATA"
DECK

code=$(run_deck 2 "$WORK/a")
[ "$code" = 75 ] || fail "the squeezed run gave exit $code, expected 75: $(tail -5 "$WORK/a.log")"
grep -q "resume on fewer ranks" "$WORK/a.log" || fail "no 'resume on fewer ranks' in the log: $(tail -5 "$WORK/a.log")"
stop=$(grep -o "Stopping at step [0-9]*" "$WORK/a.log" | awk '{print $4}')
[ -n "$stop" ] && [ "$stop" -lt 300 ] || fail "no stop step before 300 in the log"
ls "$WORK/a"/checkpoints/*"$stop"* >/dev/null 2>&1 || ls -R "$WORK/a" | grep -q "$stop" || fail "no checkpoint of step $stop"
echo "stopped at step $stop with a checkpoint"

code=$(run_deck 2 "$WORK/a")
[ "$code" != 0 ] && [ "$code" != 75 ] || fail "the same deck on 2 ranks resumed the squeezed box (exit $code)"
grep -q "is no thicker: resume on fewer ranks" "$WORK/a.log" || fail "the refusal on 2 ranks does not say why: $(tail -5 "$WORK/a.log")"

code=$(run_deck 1 "$WORK/a")
[ "$code" = 0 ] || fail "the resume on 1 rank gave exit $code: $(tail -5 "$WORK/a.log")"
grep -q "Finished at step 300" "$WORK/a.log" || fail "the resume on 1 rank did not finish at step 300"
echo "PASS: npt shrink stop and resume on fewer ranks"
