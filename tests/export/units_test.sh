#!/usr/bin/env bash
# md.units end to end: liquid argon (tests/data/argon-real.data) run in units real; its checkpoint names the
# units (spotrun inspect), `spotrun export` writes the data file in them and says `units real`, LAMMPS reads it
# (units real, read_data, run 0) and gives the run's last thermo row to 1e-12; a resume with md.units = "metal"
# is refused (exit 2, naming the units), one in units real gives the thermo.csv of an uninterrupted run.
# usage: units_test.sh SPOTRUN LMP NP
set -uo pipefail
SPOTRUN=$1
LMP=$2
NP=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
HERE=$(cd "$(dirname "$0")" && pwd)
DATA="$HERE/../data"
WORK=$(mktemp -d /tmp/spotrun-units.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# argon_deck FILE UNITS DT EPSILON DATAFILE
argon_deck() {
  cat >"$1" <<DECK
[run]
solver = "md"
steps = 40
thermo_every = 20

[md]
units = "$2"
dt = $3
cutoff = 8.5
skin = 2.0

[md.pair]
epsilon = $4
sigma = 3.405

[md.initial]
lammps_data = "$5"
DECK
}
argon_deck "$WORK/deck.toml" real 2.0 0.2381 "$DATA/argon-real.data"
timeout 300 mpirun -np "$NP" "$SPOTRUN" run "$WORK/deck.toml" --output-dir "$WORK/run" >"$WORK/run.log" 2>&1 ||
  fail "run failed: $(tail -5 "$WORK/run.log")"
"$SPOTRUN" inspect "$WORK/run/final.h5" >"$WORK/inspect.log" 2>&1 || fail "inspect failed: $(tail -5 "$WORK/inspect.log")"
grep -q "units: real" "$WORK/inspect.log" || fail "the checkpoint does not name units real: $(cat "$WORK/inspect.log")"
timeout 300 mpirun -np "$NP" "$SPOTRUN" export "$WORK/run/final.h5" --lammps-data "$WORK/argon.data" \
  >"$WORK/export.log" 2>&1 || fail "export failed: $(tail -5 "$WORK/export.log")"
grep -q "LAMMPS reads .*argon.data after: units real" "$WORK/export.log" || fail "export message: $(cat "$WORK/export.log")"
head -1 "$WORK/argon.data" | grep -q "units real); LAMMPS input before read_data: units real$" ||
  fail "data file title: $(head -1 "$WORK/argon.data")"
want=$(tail -1 "$WORK/run/thermo.csv" | cut -d, -f3-7)  # temp pe ke etotal press

cat >"$WORK/in.check" <<'IN'
units           real
atom_style      atomic
read_data       argon.data
pair_style      lj/cut 8.5
pair_coeff      1 1 0.2381 3.405
thermo_style    custom step temp pe ke etotal press
thermo_modify   format float %.16g
run             0
IN
(cd "$WORK" && "$LMP" -in in.check -log log.lammps -screen none -nocite) || fail "LAMMPS failed: $(tail -5 "$WORK/log.lammps")"
got=$(awk '$1 == "Step" { getline; print $2 "," $3 "," $4 "," $5 "," $6; exit }' "$WORK/log.lammps")
awk -v a="$want" -v b="$got" 'BEGIN { n = split(a, x, ","); split(b, y, ","); m = 0
  for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; s = x[i] < 0 ? -x[i] : x[i]; if (s > 0 && d / s > m) m = d / s }
  printf "LAMMPS (units real) read_data vs spotrun last thermo row: max relative difference %.3g\n", m
  exit (m <= 1e-12 ? 0 : 1) }' || fail "LAMMPS thermo $got, spotrun $want"

# A resume in other units: refused, naming both.
argon_deck "$WORK/metal.toml" metal 0.002 0.010323 "$DATA/argon-metal.data"
sed -i 's/^steps = 40/steps = 60/' "$WORK/metal.toml"
timeout 300 mpirun -np "$NP" "$SPOTRUN" run "$WORK/metal.toml" --output-dir "$WORK/run" >"$WORK/metal.log" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "resume in units metal: exit $rc, expected 2: $(tail -5 "$WORK/metal.log")"
grep -q "holds a system in units real, the deck runs units metal (md.units)" "$WORK/metal.log" ||
  fail "resume in units metal: $(tail -5 "$WORK/metal.log")"

# A resume in units real continues bit for bit: 40 + 20 steps give the thermo of 60 steps in one run.
sed 's/^steps = 40/steps = 60/' "$WORK/deck.toml" >"$WORK/deck60.toml"
timeout 300 mpirun -np "$NP" "$SPOTRUN" run "$WORK/deck60.toml" --output-dir "$WORK/run" >"$WORK/resume.log" 2>&1 ||
  fail "resume in units real failed: $(tail -5 "$WORK/resume.log")"
grep -q "Resuming from .*final.h5 at step 40" "$WORK/resume.log" || fail "did not resume: $(tail -5 "$WORK/resume.log")"
timeout 300 mpirun -np "$NP" "$SPOTRUN" run "$WORK/deck60.toml" --output-dir "$WORK/ref60" >"$WORK/ref60.log" 2>&1 ||
  fail "60-step run failed: $(tail -5 "$WORK/ref60.log")"
cmp -s "$WORK/run/thermo.csv" "$WORK/ref60/thermo.csv" ||
  fail "resumed thermo differs: $(tail -1 "$WORK/run/thermo.csv") vs $(tail -1 "$WORK/ref60/thermo.csv")"
echo "PASS: units at np $NP"
