#!/usr/bin/env bash
# The outputs for viewers of a run of molecules (docs/md.md): the semiflexible melt of tests/data (harmonic
# bonds and angles) run to step 20, then resumed to 40, with a frame every 10 steps; check_molecules.py reads
# OUTDIR/topology.data and OUTDIR/trajectory.h5md with MDAnalysis (bonds, angles, molecules) and the H5MD
# connectivity with h5py. Skipped (77, saying why) without MDAnalysis and h5py for /usr/bin/python3.
# usage: mdanalysis_molecules_test.sh SPOTRUN NP
set -uo pipefail
SPOTRUN=$1
NP=$2
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../support/test_lib.sh
source "$HERE/../support/test_lib.sh"
need_python MDAnalysis h5py
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
WORK=$(mktemp -d /tmp/spotrun-mdanalysis-molecules.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
DATA="$HERE/../data/semiflexible-small.data"
cat >"$WORK/deck.toml" <<DECK
[run]
steps = 40
thermo_every = 10
[md]
dt = 0.005
cutoff = 2.5
skin = 0.3
[md.bond]
style = "harmonic"
[[md.bond.coeff]]
type = 1
k = 100.0
r0 = 1.0
[md.angle]
style = "harmonic"
[[md.angle.coeff]]
type = 1
k = 2.0
theta0 = 180.0
[md.special_bonds]
lj = [0.0, 0.0, 0.5]
[md.initial]
lammps_data = "$DATA"
[md.trajectory]
every = 10
[checkpoint]
every_steps = 20
DECK
[ "$(run_deck "$NP" "$WORK/out" --set run.steps=20)" = 0 ] || fail "first run failed: $(tail -5 "$WORK/out.log")"
[ "$(run_deck "$NP" "$WORK/out")" = 0 ] || fail "resumed run failed: $(tail -5 "$WORK/out.log")"
cat "$WORK/out.log" "$WORK/out/spotrun.log" 2>/dev/null | grep -q "Resuming from .* at step 20" ||
  fail "the second run did not resume at step 20"
"$PY" "$HERE/check_molecules.py" "$WORK/out" "$DATA" 5 || fail "check_molecules.py"
echo "PASS: mdanalysis of molecules at np $NP"
