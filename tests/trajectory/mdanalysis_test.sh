#!/usr/bin/env bash
# MDAnalysis reads the outputs of spotrun run for viewers (docs/md.md): Universe(OUTDIR/topology.data,
# OUTDIR/trajectory.h5md) with the atom types, and the dump, of a run ended at step 50 and resumed to 100;
# check_mdanalysis.py. Skipped (77, saying why) without MDAnalysis and h5py for /usr/bin/python3.
# usage: mdanalysis_test.sh SPOTRUN NP
set -uo pipefail
SPOTRUN=$1
NP=$2
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../support/test_lib.sh
source "$HERE/../support/test_lib.sh"
need_python MDAnalysis h5py
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
WORK=$(mktemp -d /tmp/spotrun-mdanalysis.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ka_deck "$WORK/deck.toml" 100 50
cat >>"$WORK/deck.toml" <<DECK
[md.trajectory]
every = 10
[md.dump]
every = 10
[checkpoint]
every_steps = 30
DECK
# First to step 50, then resumed to step 100 (the frames continue across the resume).
[ "$(run_deck "$NP" "$WORK/out" --set run.steps=50)" = 0 ] || fail "first run failed: $(tail -5 "$WORK/out.log")"
[ "$(run_deck "$NP" "$WORK/out")" = 0 ] || fail "resumed run failed: $(tail -5 "$WORK/out.log")"
# (Said on the terminal or, where the terminal is kept short, in OUTDIR/spotrun.log.)
cat "$WORK/out.log" "$WORK/out/spotrun.log" 2>/dev/null | grep -q "Resuming from .* at step 50" ||
  fail "the second run did not resume at step 50"
head -1 "$WORK/out/topology.data" | grep -q "the system at step 0 " || fail "topology.data is not of step 0: $(head -1 "$WORK/out/topology.data")"
"$PY" "$HERE/check_mdanalysis.py" "$WORK/out" 11 10 || fail "check_mdanalysis.py"
echo "PASS: mdanalysis at np $NP"
