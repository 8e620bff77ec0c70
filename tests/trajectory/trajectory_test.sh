#!/usr/bin/env bash
# H5MD trajectories (md.trajectory) and LAMMPS dumps (md.dump) of spotrun run, checked by check_trajectory.py
# with h5py: across a resume from an older checkpoint (the frames after it cut and written again), a
# trajectory or dump with other fields or columns refused and left as it was, a run begun before
# trajectory.h5md continuing its trajectory.h5.
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
[md.dump]
every = 10
columns = ["id", "type", "x", "y", "z", "vx", "vy", "vz", "ix", "iy", "iz", "xu", "yu", "zu"]
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
# A trajectory with other fields than the deck's is refused, the file left as it was; so is a dump with
# other columns.
cp "$WORK/r/trajectory.h5md" "$WORK/saved.h5md"
cp "$WORK/r/dump.lammpstrj" "$WORK/saved.lammpstrj"
rm -f "$WORK/r/final.h5"
code=$(run_deck "$NP" "$WORK/r" --set 'md.trajectory.fields=["position"]')
[ "$code" != 0 ] || fail "a trajectory with other fields was continued"
grep -q "cannot continue the trajectory .*trajectory.h5md': it has the field 'image', but md.trajectory.fields does not name it" \
  "$WORK/r.log" || fail "no message naming the field: $(tail -3 "$WORK/r.log")"
cmp -s "$WORK/saved.h5md" "$WORK/r/trajectory.h5md" || fail "the refused run changed the trajectory"
code=$(run_deck "$NP" "$WORK/r" --set 'md.dump.columns=["id", "type", "x", "y", "z"]')
[ "$code" != 0 ] || fail "a dump with other columns was continued"
grep -q "cannot continue the dump '.*dump.lammpstrj': its frames have the columns 'id type x y z vx vy vz ix iy iz xu yu zu', md.dump.columns gives 'id type x y z'. Move it away" \
  "$WORK/r.log" || fail "no message naming the columns: $(tail -3 "$WORK/r.log")"
cmp -s "$WORK/saved.lammpstrj" "$WORK/r/dump.lammpstrj" || fail "the refused run changed the dump"
/usr/bin/python3 "$HERE/check_trajectory.py" "$WORK/ref/trajectory.h5md" "$WORK/ref/final.h5" \
  "$WORK/saved.h5md" "$WORK/one/trajectory.h5md" 11 10 "$WORK/ref/dump.lammpstrj" "$WORK/saved.lammpstrj" ||
  fail "check_trajectory.py"
# A run begun before the trajectory was named trajectory.h5md: its resume continues OUTDIR/trajectory.h5.
[ "$(run_deck "$NP" "$WORK/old")" = 0 ] || fail "run of the older layout failed: $(tail -5 "$WORK/old.log")"
mv "$WORK/old/trajectory.h5md" "$WORK/old/trajectory.h5"
rm -f "$WORK/old/final.h5" "$WORK/old/checkpoints/ckpt-90.h5"
[ "$(run_deck "$NP" "$WORK/old")" = 0 ] || fail "resume of the older layout failed: $(tail -5 "$WORK/old.log")"
[ ! -e "$WORK/old/trajectory.h5md" ] || fail "the resume of a run with trajectory.h5 began a trajectory.h5md"
/usr/bin/python3 - "$WORK/ref/trajectory.h5md" "$WORK/old/trajectory.h5" <<'PY' || fail "trajectory.h5 continued wrongly"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as a, h5py.File(sys.argv[2], "r") as b:
    for k in ("step", "value"):
        if not np.array_equal(a["particles/all/position/" + k][:], b["particles/all/position/" + k][:]):
            sys.exit("FAIL: the continued trajectory.h5's position/%s differs from an uninterrupted run's" % k)
PY
echo "PASS: trajectory at np $NP"
