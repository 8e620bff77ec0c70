#!/usr/bin/env bash
# spotrun export of molecules: a Kremer-Grest melt (FENE bonds, special_bonds lj 0 1 1) and a semiflexible
# melt (harmonic bonds and angles, special_bonds lj 0 0 0.5) from tests/data run 40 steps; the exported data
# file (atom style, topology and Coeffs sections, the LAMMPS commands said) is read by LAMMPS (those commands,
# read_data with the file's coefficients, run 0) and by spotrun ([md.initial] without coefficients in the
# deck): both give the run's last thermo row to 1e-12.
# usage: molecules_test.sh SPOTRUN LMP NP
set -uo pipefail
SPOTRUN=$1
LMP=$2
NP=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
HERE=$(cd "$(dirname "$0")" && pwd)
DATA="$HERE/../data"
WORK=$(mktemp -d /tmp/spotrun-export-molecules.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
compare() {  # compare NAME A B: max relative difference of comma-separated numbers, at most 1e-12
  awk -v a="$2" -v b="$3" -v name="$1" 'BEGIN { n = split(a, x, ","); m = split(b, y, ","); if (n != m || n == 0) exit 1
    r = 0; for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; s = x[i] < 0 ? -x[i] : x[i]; if (s > 0 && d / s > r) r = d / s }
    printf "%s: max relative difference %.3g\n", name, r; exit (r <= 1e-12 ? 0 : 1) }'
}

# section_rows FILE SECTION: the rows of a topology section of a data file without their ids ("type atoms..."),
# sorted (LAMMPS's write_data and the export list them in other orders).
section_rows() {
    awk -v s="$2" '$0 == s { on = 1; getline; next } on && NF == 0 { on = 0 } on { $1 = ""; print }' "$1" | sort
}

# check NAME PHYSICS DATA STYLE COMMANDS LAMMPS_PAIR: run the deck [md] PHYSICS on DATA, export its final state,
# and read the export back with LAMMPS and spotrun.
check() {
    local name=$1 physics=$2 data=$3 style=$4 commands=$5 pair=$6 dir="$WORK/$1"
    mkdir -p "$dir"
    printf '[run]\nsteps = 40\nthermo_every = 20\n%s\n[md.initial]\nlammps_data = "%s"\n' "$physics" "$data" >"$dir/deck.toml"
    timeout 300 mpirun -np "$NP" "$SPOTRUN" run "$dir/deck.toml" --output-dir "$dir/run" >"$dir/run.log" 2>&1 ||
        fail "$name: run failed: $(tail -5 "$dir/run.log")"
    timeout 300 mpirun -np "$NP" "$SPOTRUN" export "$dir/run/final.h5" --lammps-data "$dir/out.data" >"$dir/export.log" 2>&1 ||
        fail "$name: export failed: $(tail -5 "$dir/export.log")"
    grep -qxF "LAMMPS reads $dir/out.data after: $commands" "$dir/export.log" ||
        fail "$name: export message: $(cat "$dir/export.log")"
    head -1 "$dir/out.data" | grep -qF "; LAMMPS input before read_data: $commands" || fail "$name: title $(head -1 "$dir/out.data")"
    # The topology and Coeffs sections of the data file LAMMPS wrote (tests/data) are those of the export.
    grep -q "^Atoms # $style\$" "$dir/out.data" || fail "$name: not atom_style $style"
    for section in Bonds Angles; do
        diff <(section_rows "$data" "$section") <(section_rows "$dir/out.data" "$section") >"$dir/$section.diff" ||
            fail "$name: the $section of the export differ from $data: $(head -5 "$dir/$section.diff")"
    done
    local want got
    want=$(tail -1 "$dir/run/thermo.csv" | cut -d, -f3-7)  # temp pe ke etotal press
    # LAMMPS: the commands the export said, read_data with the file's coefficients, run 0.
    {
        echo "units lj"
        tr ';' '\n' <<<"$commands" | sed 's/^ *//'
        echo "read_data $dir/out.data"
        echo "$pair"
        echo "thermo_style custom step temp pe ke etotal press"
        echo "thermo_modify norm yes format float %.16g"
        echo "run 0"
    } >"$dir/in.check"
    (cd "$dir" && "$LMP" -in in.check -log log.lammps -screen none -nocite) || fail "$name: LAMMPS failed: $(tail -5 "$dir/log.lammps")"
    got=$(awk '$1 == "Step" { getline; print $2 "," $3 "," $4 "," $5 "," $6; exit }' "$dir/log.lammps")
    compare "$name: LAMMPS read_data vs spotrun's last thermo row" "$want" "$got" || fail "$name: LAMMPS thermo $got, spotrun $want"
    # spotrun: the deck's physics without the coefficients (the file's Coeffs sections give them).
    { printf '[run]\nsteps = 0\n'; grep -v -e '^\[\[md\.\(bond\|angle\)\.coeff\]\]' -e '^\(type\|k\|r0\|epsilon\|sigma\|theta0\) =' \
          -e '^\[md\.\(bond\|angle\)\]' -e '^style =' <<<"$physics"
      printf '[md.initial]\nlammps_data = "%s"\n' "$dir/out.data"; } >"$dir/again.toml"
    timeout 300 mpirun -np "$NP" "$SPOTRUN" run "$dir/again.toml" --output-dir "$dir/again" >"$dir/again.log" 2>&1 ||
        fail "$name: run from the exported data failed: $(tail -5 "$dir/again.log")"
    compare "$name: spotrun from the data file vs the last thermo row" "$want" "$(tail -1 "$dir/again/thermo.csv" | cut -d, -f3-7)" ||
        fail "$name: spotrun from the exported data gives other thermo"
}

check kg '[md]
dt = 0.012
cutoff = 1.122462048309373
[md.pair]
shift = true
[md.bond]
style = "fene"
[[md.bond.coeff]]
type = 1
k = 30.0
r0 = 1.5
epsilon = 1.0
sigma = 1.0
[md.special_bonds]
lj = [0.0, 1.0, 1.0]' "$DATA/kg-small.data" bond "atom_style bond; bond_style fene; special_bonds lj 0 1 1" \
    "pair_style lj/cut 1.122462048309373
pair_modify shift yes
pair_coeff 1 1 1.0 1.0 1.122462048309373"

check semiflexible '[md]
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
lj = [0.0, 0.0, 0.5]' "$DATA/semiflexible-small.data" angle \
    "atom_style angle; bond_style harmonic; angle_style harmonic; special_bonds lj 0 0 0.5" \
    "pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5"

echo "PASS: export of molecules at np $NP"
