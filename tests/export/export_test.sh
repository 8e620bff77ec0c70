#!/usr/bin/env bash
# spotrun export: the final state of a Kob-Andersen NVT run written as a LAMMPS data file, read by LAMMPS
# (read_data, run 0) and by spotrun ([md.initial]): both give the run's last thermo row to 1e-12; the
# extended XYZ file; bad input exits 2.
# usage: export_test.sh SPOTRUN LMP NP
set -uo pipefail
SPOTRUN=$1
LMP=$2
NP=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../support/test_lib.sh
source "$HERE/../support/test_lib.sh"
MD="$HERE/../data/ka-lattice-nvt.toml"  # the [md] part, lattice start last
WORK=$(mktemp -d /tmp/spotrun-export.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ka_deck "$WORK/deck.toml" 60 60
timeout 300 mpirun -np "$NP" "$SPOTRUN" run "$WORK/deck.toml" --output-dir "$WORK/run" >"$WORK/run.log" 2>&1 ||
  fail "run failed: $(tail -5 "$WORK/run.log")"
timeout 300 mpirun -np "$NP" "$SPOTRUN" export "$WORK/run/final.h5" --lammps-data "$WORK/ka.data" --xyz "$WORK/ka.xyz" \
  >"$WORK/export.log" 2>&1 || fail "export failed: $(tail -5 "$WORK/export.log")"
grep -q "Exported 864 atoms of .*final.h5 (step 60) to LAMMPS data .*ka.data and XYZ .*ka.xyz" "$WORK/export.log" ||
  fail "export message: $(cat "$WORK/export.log")"
want=$(tail -1 "$WORK/run/thermo.csv" | cut -d, -f3-7)  # temp pe ke etotal press

# LAMMPS reads the data file: the same thermo at its step 0.
cat >"$WORK/in.check" <<'IN'
units           lj
atom_style      atomic
read_data       ka.data
pair_style      lj/cut 2.5
pair_coeff      1 1 1.0 1.0  2.5
pair_coeff      1 2 1.5 0.8  2.0
pair_coeff      2 2 0.5 0.88 2.2
thermo_style    custom step temp pe ke etotal press
thermo_modify   norm yes format float %.16g
run             0
IN
(cd "$WORK" && "$LMP" -in in.check -log log.lammps -screen none -nocite) || fail "LAMMPS failed: $(tail -5 "$WORK/log.lammps")"
got=$(awk '$1 == "Step" { getline; print $2 "," $3 "," $4 "," $5 "," $6; exit }' "$WORK/log.lammps")
compare() {  # compare NAME A B: max relative difference of comma-separated numbers, at most 1e-12
  awk -v a="$2" -v b="$3" -v name="$1" 'BEGIN { n = split(a, x, ","); split(b, y, ","); m = 0
    for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; s = x[i] < 0 ? -x[i] : x[i]; if (s > 0 && d / s > m) m = d / s }
    printf "%s: max relative difference %.3g\n", name, m; exit (m <= 1e-12 ? 0 : 1) }'
}
compare "LAMMPS read_data vs spotrun's last thermo row" "$want" "$got" || fail "LAMMPS thermo $got, spotrun $want"

# spotrun reads it back too ([md.initial]).
cat >"$WORK/again.toml" <<DECK
[run]
steps = 0
$(sed '/^\[md.lattice\]/,$d' "$MD")
[md.initial]
lammps_data = "ka.data"
DECK
timeout 300 mpirun -np "$NP" "$SPOTRUN" run "$WORK/again.toml" --output-dir "$WORK/again" >"$WORK/again.log" 2>&1 ||
  fail "run from the exported data failed: $(tail -5 "$WORK/again.log")"
compare "spotrun from the data file vs the last thermo row" "$want" "$(tail -1 "$WORK/again/thermo.csv" | cut -d, -f3-7)" ||
  fail "spotrun from the exported data gives other thermo"

# Extended XYZ: the count, the box, one line per atom named by its type.
[ "$(head -1 "$WORK/ka.xyz")" = 864 ] || fail "xyz count line"
sed -n 2p "$WORK/ka.xyz" | grep -q '^Lattice="8.96280949311432.* Properties=species:S:1:pos:R:3 pbc="T T T" Step=60' || fail "xyz comment line"
[ "$(wc -l <"$WORK/ka.xyz")" = 866 ] || fail "xyz lines"
[ "$(tail -n +3 "$WORK/ka.xyz" | awk '$1 == "A" || $1 == "B"' | wc -l)" = 864 ] || fail "xyz names"
[ "$(tail -n +3 "$WORK/ka.xyz" | awk '$1 == "B"' | wc -l)" = "$(grep -c '^[0-9]* 2 ' "$WORK/ka.data")" ] || fail "xyz B count"

# Bad input: exit 2 with a message.
"$SPOTRUN" export "$WORK/run/final.h5" >"$WORK/bad1.log" 2>&1
[ $? = 2 ] && grep -q "give --lammps-data FILE and/or --xyz FILE" "$WORK/bad1.log" || fail "export without outputs: $(cat "$WORK/bad1.log")"
"$SPOTRUN" export "$WORK/missing.h5" --xyz "$WORK/x.xyz" >"$WORK/bad2.log" 2>&1
[ $? = 2 ] && grep -q "missing.h5" "$WORK/bad2.log" && [ ! -e "$WORK/x.xyz" ] || fail "export of a missing file: $(cat "$WORK/bad2.log")"
echo "PASS: export at np $NP"
