#!/usr/bin/env bash
# Regenerates the LAMMPS k-space reference files in tests/data/ (charged-small.data, dipole.data,
# lammps-kspace-choice.txt, lammps-kspace-*.txt) from the LAMMPS input scripts in tests/data/lammps/
# (in.make-charged-data, in.make-dipole-data, in.kspace-choice, in.kspace-ref). The generated files are
# committed; the tests (tests/test_kspace.cpp) do not need LAMMPS.
#
# Usage: tools/make_lammps_kspace_reference.sh
# Environment: LMP (default: lmp).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA="$ROOT/tests/data"
INPUTS="$DATA/lammps"
LMP="${LMP:-lmp}"

case "${1:-}" in
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    "") ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
esac

command -v "$LMP" >/dev/null 2>&1 || { echo "error: '$LMP' not found (set LMP=...)" >&2; exit 1; }

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

# run_lmp LOG lmp args...: a serial run that must reach its end.
run_lmp() {
    local log="$1"; shift
    (cd "$TMP" && "$LMP" "$@" -log "$log" -screen none -nocite)
    grep -q '^Loop time of' "$log" || { echo "error: LAMMPS run failed, see $log" >&2; cat "$log" >&2; exit 1; }
}

HELP="$("$LMP" -h 2>&1 || true)"
VERSION="$(awk '/Large-scale Atomic/ { sub(/^.*Simulator - /, ""); print; exit }' <<<"$HELP")"
echo "LAMMPS: $VERSION"

# 1. The data files.
run_lmp "$TMP/log.make-charged" -in "$INPUTS/in.make-charged-data" -var out "$TMP/charged-small.data"
cp "$TMP/charged-small.data" "$DATA/charged-small.data"
run_lmp "$TMP/log.make-dipole" -in "$INPUTS/in.make-dipole-data" -var out "$TMP/dipole.data"
cp "$TMP/dipole.data" "$DATA/dipole.data"
echo "wrote tests/data/charged-small.data, tests/data/dipole.data"

# 2. Parameters: what LAMMPS chooses (given nothing but the accuracy) or estimates (given g_ewald and a
#    mesh), one line per case.
# choice DATA STYLE ACCURACY CUTOFF ORDER GEWALD NX NY NZ: the line of one case (GEWALD 0 and NX 0: chosen).
choice() {
    local data="$1" style="$2" acc="$3" cut="$4" order="$5" g="$6" nx="$7" ny="$8" nz="$9"
    local log="$TMP/log.choice"
    run_lmp "$log" -in "$INPUTS/in.kspace-choice" -var data "$DATA/$data" -var style "$style" -var accuracy "$acc" \
        -var cutoff "$cut" -var order "$order" -var gewald "$g" -var nx "$nx" -var ny "$ny" -var nz "$nz"
    awk -v data="$data" -v style="$style" -v acc="$acc" -v cut="$cut" -v order="$order" -v g="$g" \
        -v nx="$nx" -v ny="$ny" -v nz="$nz" '
        /G vector \(1\/distance\)/ { gew = $NF }
        /^  grid = /                { mesh = $3 " " $4 " " $5 }
        /kxmax kymax kzmax/         { mesh = $(NF - 2) " " $(NF - 1) " " $NF }
        /KSpace vectors: actual/    { vec = $(NF - 2) }
        /estimated absolute RMS force accuracy/ { est = $NF }
        END {
            if (gew == "" || mesh == "" || est == "") { print "error: no k-space summary in the log" > "/dev/stderr"; exit 1 }
            if (vec == "") vec = 0
            print data, style, acc, cut, order, g, nx, ny, nz, gew, mesh, vec, est }' "$log"
}

CHOICE="$DATA/lammps-kspace-choice.txt"
{
    echo "# LAMMPS $VERSION: k-space parameters, tests/data/lammps/in.kspace-choice (tools/make_lammps_kspace_reference.sh)."
    echo "# Given: data style accuracy cutoff order gewald nx ny nz (gewald 0, nx 0: chosen by LAMMPS)."
    echo "# LAMMPS: g_ewald, mesh (pppm) or kxmax kymax kzmax (ewald), k-vectors (ewald; pppm 0), estimated"
    echo "# absolute RMS force accuracy (pair_modify table 0: no table error)."
    for order in 3 5 7; do choice charged-small.data pppm 1e-4 3.0 $order 0 0 0 0; done
    for order in 5 7; do choice charged-small.data pppm 1e-5 3.0 $order 0 0 0 0; done
    for order in 2 3 4 5 6 7; do choice charged-small.data pppm 1e-5 3.0 $order 1.1 20 24 18; done
    choice charged-small.data ewald 1e-5 3.0 5 0 0 0 0
    choice charged-small.data ewald 1e-8 3.0 5 0 0 0 0
    choice charged-small.data ewald 1e-10 3.0 5 1.1 0 0 0
    choice dipole.data pppm 1e-5 3.9 5 0 0 0 0
} > "$CHOICE"
echo "wrote tests/data/lammps-kspace-choice.txt"

# 3. k-space energy, forces and virial with LAMMPS's parameters of a choice line (or given ones).
# chosen DATA STYLE ACCURACY ORDER: "g nx ny nz" of the matching line of lammps-kspace-choice.txt.
chosen() {
    awk -v data="$1" -v style="$2" -v acc="$3" -v order="$4" \
        '$1 == data && $2 == style && $3 == acc && $5 == order && $6 == 0 { print $10, $11, $12, $13; exit }' "$CHOICE"
}

# reference NAME DATA STYLE ACCURACY GEWALD NX NY NZ ORDER Q1: tests/data/lammps-kspace-NAME.txt.
reference() {
    local name="$1" data="$2" style="$3" acc="$4" g="$5" nx="$6" ny="$7" nz="$8" order="$9" q1="${10}"
    local log="$TMP/log.$name" dump="$TMP/forces.$name"
    run_lmp "$log" -in "$INPUTS/in.kspace-ref" -var data "$DATA/$data" -var style "$style" -var accuracy "$acc" \
        -var gewald "$g" -var nx "$nx" -var ny "$ny" -var nz "$nz" -var order "$order" -var q1 "$q1" -var dump "$dump"
    local out="$DATA/lammps-kspace-$name.txt"
    {
        echo "# LAMMPS $VERSION: k-space only (pair coul/long 0.001: no pair in range), tests/data/lammps/in.kspace-ref"
        echo "# (tools/make_lammps_kspace_reference.sh). pressure: compute pressure NULL kspace (times the volume: the virial)."
        echo "data $data"
        echo "q1 $q1"
        echo "style $style"
        echo "accuracy $acc"
        echo "g_ewald $g"
        echo "mesh $nx $ny $nz"
        echo "order $order"
        awk '$1 == "Step" { getline; print "elong", $3; print "pressure", $4, $5, $6, $7, $8, $9; exit }' "$log"
        awk 'NR == 4 { print "atoms", $1 } NR > 9 { print }' "$dump"
    } > "$out"
    grep -q '^elong ' "$out" || { echo "error: no thermo line in $log" >&2; exit 1; }
    echo "wrote tests/data/lammps-kspace-$name.txt"
}

read -r g5 nx5 ny5 nz5 <<<"$(chosen charged-small.data pppm 1e-5 5)"
read -r g7 nx7 ny7 nz7 <<<"$(chosen charged-small.data pppm 1e-5 7)"
read -r g3 nx3 ny3 nz3 <<<"$(chosen charged-small.data pppm 1e-4 3)"
read -r gd nxd nyd nzd <<<"$(chosen dipole.data pppm 1e-5 5)"
reference pppm5          charged-small.data pppm  1e-5  "$g5" "$nx5" "$ny5" "$nz5" 5 0
reference pppm7          charged-small.data pppm  1e-5  "$g7" "$nx7" "$ny7" "$nz7" 7 0
reference pppm3          charged-small.data pppm  1e-4  "$g3" "$nx3" "$ny3" "$nz3" 3 0
reference ewald          charged-small.data ewald 1e-10 "$g5" 0 0 0 5 0
reference ewald7         charged-small.data ewald 1e-10 "$g7" 0 0 0 5 0
reference ewald3         charged-small.data ewald 1e-10 "$g3" 0 0 0 5 0
reference pppm5-charged  charged-small.data pppm  1e-5  "$g5" "$nx5" "$ny5" "$nz5" 5 1.5
reference ewald-charged  charged-small.data ewald 1e-10 "$g5" 0 0 0 5 1.5
reference dipole-pppm    dipole.data        pppm  1e-5  "$gd" "$nxd" "$nyd" "$nzd" 5 0
reference dipole-ewald   dipole.data        ewald 1e-12 "$gd" 0 0 0 5 0
