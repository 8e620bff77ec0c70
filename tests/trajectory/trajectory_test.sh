#!/usr/bin/env bash
# H5MD trajectories of spotrun run (md.trajectory), checked by check_trajectory.py with h5py and MDAnalysis.
# usage: trajectory_test.sh SPOTRUN NP
set -uo pipefail
SPOTRUN=$1
NP=$2
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../support/test_lib.sh
source "$HERE/../support/test_lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
WORK=$(mktemp -d /tmp/spotrun-trajectory.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ka_deck "$WORK/deck.toml" 100 50
cat >>"$WORK/deck.toml" <<DECK
[md.trajectory]
every = 10
fields = ["position", "image", "velocity", "force", "species"]
[checkpoint]
every_steps = 30
keep = 5
DECK
[ "$(run_deck "$NP" "$WORK/ref")" = 0 ] || fail "reference run failed: $(tail -5 "$WORK/ref.log")"
[ "$(run_deck 1 "$WORK/one")" = 0 ] || fail "one-rank run failed: $(tail -5 "$WORK/one.log")"
# A run whose newest checkpoints are lost: its trajectory holds frames up to step 100, the resume starts
# at step 60 and must drop the frames after it and write them again.
[ "$(run_deck "$NP" "$WORK/r")" = 0 ] || fail "first run failed: $(tail -5 "$WORK/r.log")"
rm -f "$WORK/r/final.h5" "$WORK/r/checkpoints/ckpt-90.h5"
[ "$(run_deck "$NP" "$WORK/r")" = 0 ] || fail "resumed run failed: $(tail -5 "$WORK/r.log")"
grep -q "Resuming from .*ckpt-60.h5 at step 60" "$WORK/r.log" || fail "did not resume from step 60"
# A trajectory with other fields than the deck's is refused, the file left as it was.
cp "$WORK/r/trajectory.h5" "$WORK/saved.h5"
rm -f "$WORK/r/final.h5"
code=$(run_deck "$NP" "$WORK/r" --set 'md.trajectory.fields=["position"]')
[ "$code" != 0 ] || fail "a trajectory with other fields was continued"
grep -q "cannot continue the trajectory .*trajectory.h5': it has the field 'image', but md.trajectory.fields does not name it" \
  "$WORK/r.log" || fail "no message naming the field: $(tail -3 "$WORK/r.log")"
cmp -s "$WORK/saved.h5" "$WORK/r/trajectory.h5" || fail "the refused run changed the trajectory"
/usr/bin/python3 "$HERE/check_trajectory.py" "$WORK/ref/trajectory.h5" "$WORK/ref/final.h5" \
  "$WORK/saved.h5" "$WORK/one/trajectory.h5" 11 10 || fail "check_trajectory.py"
echo "PASS: trajectory at np $NP"
