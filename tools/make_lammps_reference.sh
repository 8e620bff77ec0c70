#!/usr/bin/env bash
# Regenerates the LAMMPS reference files in tests/data/ from the LAMMPS
# input scripts in tests/data/lammps/. The generated files are committed;
# the tests do not need LAMMPS.
#
# Usage: tools/make_lammps_reference.sh [--check-np N]
#   --check-np N   additionally rerun every reference case with
#                  `mpirun -np N lmp` and compare it with the serial CSV
#                  (max relative difference printed; nothing is written).
# Environment: LMP (default: lmp), MPIRUN (default: mpirun), PYTHON
#   (default: /usr/bin/python3, standard library only), CHAIN_DATA (default:
#   /usr/share/lammps/examples/COUPLE/multiple/data.chain, the in.chain
#   benchmark data the Kremer-Grest melt is cut from).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA="$ROOT/tests/data"
INPUTS="$DATA/lammps"
LMP="${LMP:-lmp}"
MPIRUN="${MPIRUN:-mpirun}"
CHECK_NP=""

while [[ $# -gt 0 ]]; do
    case "$1" in
        --check-np) CHECK_NP="${2:?--check-np needs a rank count}"; shift 2 ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
done

command -v "$LMP" >/dev/null 2>&1 || { echo "error: '$LMP' not found (set LMP=...)" >&2; exit 1; }

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

# Thermo block of a LAMMPS log -> CSV. The header is the keyword list of
# the input's `thermo_style custom ...` line (echoed in the log), e.g.
# step,time,temp,pe,ke,etotal,press; rows are the thermo lines with as
# many columns.
log_to_csv() {
    awk '$1 == "thermo_style" && $2 == "custom" {
             ncol = NF - 2; hdr = $3
             for (i = 4; i <= NF; i++) hdr = hdr "," $i }
         $1 == "Step"     {
             if (!ncol) { print "error: no thermo_style custom line in the log" > "/dev/stderr"; exit 1 }
             if (!printed++) print hdr
             inblock = 1; next }
         /^Loop time of/  { inblock = 0; next }
         inblock && NF == ncol && $1 ~ /^[0-9]+$/ {
             row = $1
             for (i = 2; i <= NF; i++) row = row "," $i
             print row }' "$1"
}

# lmp_run LOG [mpirun prefix...] -- lmp args...
run_lmp() {
    local log="$1"; shift
    "$@" -log "$log" -screen none -nocite
    grep -q '^Loop time of' "$log" || { echo "error: LAMMPS run failed, see $log" >&2; cat "$log" >&2; exit 1; }
}

# Drop the image-flag columns of the Atoms section and the Velocities
# section; keep everything else (including the "Atoms # atomic" header).
strip_image_and_velocities() {
    awk '
        /^[A-Za-z]/ { sec = $1; skip = (sec == "Velocities") }
        skip { next }
        /^[[:space:]]*$/ { blank++; next }
        {
            while (blank > 0) { print ""; blank-- }
            if (sec == "Atoms" && NF >= 8) print $1, $2, $3, $4, $5
            else print
        }' "$1"
}

HELP="$("$LMP" -h 2>&1 || true)"
VERSION="$(awk '/Large-scale Atomic/ { sub(/^.*Simulator - /, ""); print; exit }' <<<"$HELP")"
echo "LAMMPS: $VERSION"

# 1. lj-small.data (serial: the data file is the input of every case).
(cd "$TMP" && run_lmp "$TMP/log.make-data" "$LMP" -in "$INPUTS/in.make-data" -var out "$TMP/lj-small.data")
cp "$TMP/lj-small.data" "$DATA/lj-small.data"
strip_image_and_velocities "$DATA/lj-small.data" > "$DATA/lj-small-noimage.data"
echo "wrote tests/data/lj-small.data, tests/data/lj-small-noimage.data"

# 1b. ka-small.data: the Kob-Andersen 80:20 mixture (serial).
(cd "$TMP" && run_lmp "$TMP/log.make-ka-data" "$LMP" -in "$INPUTS/in.make-ka-data" -var out "$TMP/ka-small.data")
cp "$TMP/ka-small.data" "$DATA/ka-small.data"
echo "wrote tests/data/ka-small.data"

# compare_np CSV LOG: the max relative difference of a parallel run's thermo
# to the serial CSV, over every column after step and time (any CSV width).
compare_np() {
    log_to_csv "$2" > "$TMP/np.csv"
    cmp -s <(head -n 1 "$DATA/$1") <(head -n 1 "$TMP/np.csv") || { echo "error: $1: np=$CHECK_NP header differs" >&2; exit 1; }
    [[ $(wc -l < "$DATA/$1") -eq $(wc -l < "$TMP/np.csv") ]] || { echo "error: $1: np=$CHECK_NP row count differs" >&2; exit 1; }
    paste -d, "$DATA/$1" "$TMP/np.csv" | awk -F, -v name="$1" -v np="$CHECK_NP" '
        NR == 1 { n = NF / 2; next }
        { for (i = 3; i <= n; i++) {
              a = $i; b = $(i + n); d = a - b; if (d < 0) d = -d
              s = (a < 0 ? -a : a); if (s < 1) s = 1
              if (d / s > m) m = d / s } }
        END { printf "  np=%s vs serial, %s: max rel diff %.3g\n", np, name, m }'
}

# check_rows CSV N: the CSV has N data rows.
check_rows() {
    local rows=$(( $(wc -l < "$DATA/$1") - 1 ))
    [[ $rows -eq $2 ]] || { echo "error: $1 has $rows rows, expected $2" >&2; exit 1; }
}

# reference CSV ROWS INPUT [lmp -var args...]: a thermo reference, serial, into tests/data/CSV with ROWS
# rows; with --check-np, the same run on N ranks compared with it.
reference() {
    local csv="$1" rows="$2" input="$3"
    shift 3
    local log="$TMP/log.${csv%.csv}"
    (cd "$TMP" && run_lmp "$log" "$LMP" -in "$INPUTS/$input" "$@")
    log_to_csv "$log" > "$DATA/$csv"
    check_rows "$csv" "$rows"
    echo "wrote tests/data/$csv"
    if [[ -n "$CHECK_NP" ]]; then
        local plog="$TMP/log.np$CHECK_NP.${csv%.csv}"
        (cd "$TMP" && run_lmp "$plog" "$MPIRUN" --oversubscribe -np "$CHECK_NP" "$LMP" -in "$INPUTS/$input" "$@")
        compare_np "$csv" "$plog"
    fi
}

# 2. NVE thermo references: name data-file shift
CASES=(
    "lammps-lj-small-nve.csv        lj-small.data         no"
    "lammps-lj-small-nve-shift.csv  lj-small.data         yes"
    "lammps-lj-small-zero-v.csv     lj-small-noimage.data no"
)
for c in "${CASES[@]}"; do
    read -r csv data shift <<<"$c"
    reference "$csv" 11 in.nve-ref -var data "$DATA/$data" -var shift "$shift"
done

# 3. Kob-Andersen thermo references: name fix coeffs
KA_CASES=(
    "lammps-ka-small-nve.csv        nve ka"
    "lammps-ka-small-nvt.csv        nvt ka"
    "lammps-ka-small-mixed-nve.csv  nve mixed"
)
for c in "${KA_CASES[@]}"; do
    read -r csv fix coeffs <<<"$c"
    reference "$csv" 11 in.ka-ref -var data "$DATA/ka-small.data" -var fix "$fix" -var coeffs "$coeffs"
done

# 4. Morse thermo references (pair morse, every pair given): name shift
MORSE_CASES=(
    "lammps-ka-small-morse-nve.csv        no"
    "lammps-ka-small-morse-nve-shift.csv  yes"
)
for c in "${MORSE_CASES[@]}"; do
    read -r csv shift <<<"$c"
    reference "$csv" 11 in.morse-ref -var data "$DATA/ka-small.data" -var shift "$shift"
done

# 5. Kremer-Grest melt: kg-small.data from the in.chain benchmark data
#    (serial), then 200 steps NVE with FENE bonds and WCA pairs.
CHAIN_DATA="${CHAIN_DATA:-/usr/share/lammps/examples/COUPLE/multiple/data.chain}"
[[ -r "$CHAIN_DATA" ]] || { echo "error: '$CHAIN_DATA' not found (set CHAIN_DATA=... to the in.chain benchmark's data.chain)" >&2; exit 1; }
(cd "$TMP" && run_lmp "$TMP/log.make-kg-data" "$LMP" -in "$INPUTS/in.make-kg-data" -var chain "$CHAIN_DATA" -var out "$TMP/kg-small.data")
cp "$TMP/kg-small.data" "$DATA/kg-small.data"
echo "wrote tests/data/kg-small.data"

reference lammps-kg-small-nve.csv 21 in.kg-ref -var data "$DATA/kg-small.data"

# 6. Semiflexible melt: the chains of kg-small.data with an Angles section
#    (tools/lammps_add_angles.py), equilibrated with harmonic bonds and
#    angles and LJ 2.5 (serial), then 200 steps NVE.
PYTHON="${PYTHON:-/usr/bin/python3}"
"$PYTHON" "$ROOT/tools/lammps_add_angles.py" "$DATA/kg-small.data" "$TMP/kg-angles.data"
(cd "$TMP" && run_lmp "$TMP/log.make-semiflex-data" "$LMP" -in "$INPUTS/in.make-semiflex-data" -var data "$TMP/kg-angles.data" -var out "$TMP/semiflexible-small.data")
cp "$TMP/semiflexible-small.data" "$DATA/semiflexible-small.data"
echo "wrote tests/data/semiflexible-small.data"

reference lammps-semiflexible-small-nve.csv 21 in.semiflex-ref -var data "$DATA/semiflexible-small.data"

# 7. Charged Kob-Andersen mixture: ka-small.data in atom_style charge (odd ids +0.4, even ids -0.4), then
#    100 steps NVE with lj/cut/coul/cut 2.5 3.0.
awk '
    /^Atoms/ { print "Atoms # charge"; sec = "Atoms"; next }
    /^[A-Za-z]/ { sec = $1 }
    sec == "Atoms" && NF >= 5 { q = ($1 % 2 == 1) ? "0.4" : "-0.4"; $2 = $2 " " q; print; next }
    { print }' "$DATA/ka-small.data" > "$DATA/ka-charged-small.data"
echo "wrote tests/data/ka-charged-small.data"
reference lammps-ka-charged-small-coulcut-nve.csv 11 in.coulcut-ref -var data "$DATA/ka-charged-small.data"

# 8. The same charged mixture with lj/cut/coul/long and a k-space solver, its parameters fixed so that spotrun
#    can take the same (PPPM: mesh 24^3, order 5, g_ewald 1.0; Ewald: g_ewald 1.0, kmax from accuracy 1e-6).
reference lammps-ka-charged-small-pppm-nve.csv 11 in.coullong-ref -var data "$DATA/ka-charged-small.data" \
    -var kspace pppm -var acc 1e-5 -var mod "mesh 24 24 24 order 5 gewald 1.0"
reference lammps-ka-charged-small-ewald-nve.csv 11 in.coullong-ref -var data "$DATA/ka-charged-small.data" \
    -var kspace ewald -var acc 1e-6 -var mod "gewald 1.0"

# 9. A Coulomb pair style alone: the charged mixture's positions and velocities with every charge +0.4 (a
#    one-component plasma, purely repulsive), 100 steps NVE with coul/cut 3.0 and with coul/long 3.0 + Ewald
#    (g_ewald 1.0, accuracy 1e-6; the solver adds the neutralising background).
awk '
    /^Atoms/ { sec = "Atoms"; print; next }
    /^[A-Za-z]/ { sec = $1 }
    sec == "Atoms" && NF >= 6 { $3 = "0.4"; print; next }
    { print }' "$DATA/ka-charged-small.data" > "$DATA/ocp-small.data"
echo "wrote tests/data/ocp-small.data"
reference lammps-ocp-small-coulcut-nve.csv 11 in.coul-only-ref -var data "$DATA/ocp-small.data" \
    -var pair "coul/cut 3.0" -var long no
reference lammps-ocp-small-coullong-ewald-nve.csv 11 in.coul-only-ref -var data "$DATA/ocp-small.data" \
    -var pair "coul/long 3.0" -var long yes -var kspace "ewald 1e-6" -var mod "gewald 1.0"

# 10. Energy drift: the charged mixture with lj/cut/coul/long (shifted LJ) + PPPM at accuracy 1e-4, 10^4 steps
#     NVE, thermo every 100 (tests/test_md_drift.cpp compares spotrun's drift and fluctuation with these).
reference lammps-ka-charged-small-drift.csv 101 in.drift-ref -var data "$DATA/ka-charged-small.data"

# 11. Liquid argon in units real and metal (md.units): argon-real.data (serial; velocities in A/fs), the same
#     atoms with velocities in A/ps for metal (argon-metal.data), and 200 steps NVE in each (extensive thermo).
(cd "$TMP" && run_lmp "$TMP/log.make-argon-data" "$LMP" -in "$INPUTS/in.make-argon-data" -var out "$TMP/argon-real.data")
cp "$TMP/argon-real.data" "$DATA/argon-real.data"
echo "wrote tests/data/argon-real.data"
awk '
    /^[A-Za-z]/ { sec = $1 }
    sec == "Velocities" && NF == 4 { printf "%s %.17g %.17g %.17g\n", $1, 1000 * $2, 1000 * $3, 1000 * $4; next }
    { print }' "$DATA/argon-real.data" > "$DATA/argon-metal.data"
echo "wrote tests/data/argon-metal.data"
reference lammps-argon-real-nve.csv 11 in.argon-ref -var units real -var data "$DATA/argon-real.data" \
    -var eps 0.2381 -var dt 2.0 -var fix nve -var extra ""
reference lammps-argon-metal-nve.csv 11 in.argon-ref -var units metal -var data "$DATA/argon-metal.data" \
    -var eps 0.010323 -var dt 0.002 -var fix nve -var extra ""
# The Nose-Hoover thermostat in both (kT = boltz T): fix nvt temp 100 100 with Tdamp 100 fs = 0.1 ps.
reference lammps-argon-real-nvt.csv 11 in.argon-ref -var units real -var data "$DATA/argon-real.data" \
    -var eps 0.2381 -var dt 2.0 -var fix "nvt temp 100.0 100.0 100.0" -var extra "ecouple econserve"
reference lammps-argon-metal-nvt.csv 11 in.argon-ref -var units metal -var data "$DATA/argon-metal.data" \
    -var eps 0.010323 -var dt 0.002 -var fix "nvt temp 100.0 100.0 0.1" -var extra "ecouple econserve"

# 12. The argon atoms with charges (odd ids +0.1 e, even ids -0.1 e, atom_style charge), units real:
#     lj/cut/coul/cut 8.5 9.5, and lj/cut/coul/long 8.5 9.5 with Ewald (g_ewald 0.3, accuracy 1e-6) and PPPM
#     (mesh 20^3, order 5, g_ewald 0.3).
awk '
    /^Atoms/ { print "Atoms # charge"; sec = "Atoms"; next }
    /^[A-Za-z]/ { sec = $1 }
    sec == "Atoms" && NF >= 5 { q = ($1 % 2 == 1) ? "0.1" : "-0.1"; $2 = $2 " " q; print; next }
    { print }' "$DATA/argon-real.data" > "$DATA/argon-charged.data"
echo "wrote tests/data/argon-charged.data"
reference lammps-argon-charged-coulcut-nve.csv 11 in.argon-charged-ref -var data "$DATA/argon-charged.data" \
    -var pair "lj/cut/coul/cut 8.5 9.5" -var kspace none -var mod ""
reference lammps-argon-charged-ewald-nve.csv 11 in.argon-charged-ref -var data "$DATA/argon-charged.data" \
    -var pair "lj/cut/coul/long 8.5 9.5" -var kspace "ewald 1e-6" -var mod "kspace_modify gewald 0.3"
reference lammps-argon-charged-pppm-nve.csv 11 in.argon-charged-ref -var data "$DATA/argon-charged.data" \
    -var pair "lj/cut/coul/long 8.5 9.5" -var kspace "pppm 1e-5" -var mod "kspace_modify mesh 20 20 20 order 5 gewald 0.3"

# 13. Constant pressure (fix npt / fix nph, target 1.0, Pdamp 0.5, pchain 3): the Kob-Andersen mixture from
#     p ~ 11 with the iso barostat, the one-type LJ liquid from p ~ 5 with the aniso barostat; 200 steps.
NPT_CASES=(
    "lammps-ka-small-npt-iso.csv    ka-small.data npt iso   ka"
    "lammps-ka-small-nph-iso.csv    ka-small.data nph iso   ka"
    "lammps-lj-small-npt-aniso.csv  lj-small.data npt aniso lj"
    "lammps-lj-small-nph-aniso.csv  lj-small.data nph aniso lj"
)
for c in "${NPT_CASES[@]}"; do
    read -r csv data fix couple coeffs <<<"$c"
    reference "$csv" 11 in.npt-ref -var data "$DATA/$data" -var fix "$fix" -var couple "$couple" -var coeffs "$coeffs"
done
#     The charged mixture of section 8 (PPPM, mesh 24^3, order 5, g_ewald 1.0) under fix npt iso: the k-space part
# follows the box (kspace->setup() every step).
reference lammps-ka-charged-small-pppm-npt.csv 11 in.coullong-ref -var data "$DATA/ka-charged-small.data" \
    -var kspace pppm -var acc 1e-5 -var mod "mesh 24 24 24 order 5 gewald 1.0" \
    -var fix "npt temp 0.8 0.8 0.25 iso 1.0 1.0 0.5" -var extra "vol"
# Liquid argon under fix npt in units real and metal (the barostat's kT, nktv2p and pressure units): 100 K,
# Tdamp 100 fs, target 100 atm (real) or the same 101.325 bar (metal), Pdamp 1000 fs = 1 ps.
reference lammps-argon-real-npt.csv 11 in.argon-ref -var units real -var data "$DATA/argon-real.data" \
    -var eps 0.2381 -var dt 2.0 -var fix "npt temp 100.0 100.0 100.0 iso 100.0 100.0 1000.0" \
    -var extra "vol ecouple econserve"
reference lammps-argon-metal-npt.csv 11 in.argon-ref -var units metal -var data "$DATA/argon-metal.data" \
    -var eps 0.010323 -var dt 0.002 -var fix "npt temp 100.0 100.0 0.1 iso 101.325 101.325 1.0" \
    -var extra "vol ecouple econserve"

# 14. Stages ([[run.stage]]): the Kob-Andersen mixture under fix nvt (T 0.8), then fix nve, then fix nvt (T 1.2,
#     Tdamp 0.5, tchain 4, timestep 0.004), each 100 steps, a `run` after `unfix` and `fix`. Each run after the
#     first prints its set-up's row at the step the one before it ended: the first row of each step is kept.
reference lammps-ka-small-stages.csv 33 in.stages-ref -var data "$DATA/ka-small.data"
awk -F, '!seen[$1]++' "$DATA/lammps-ka-small-stages.csv" > "$TMP/stages.csv"
cp "$TMP/stages.csv" "$DATA/lammps-ka-small-stages.csv"
check_rows lammps-ka-small-stages.csv 31
#     A protocol with constant pressure: NVT, then NPT iso, then NVE, 100 steps each (the first row of each step
#     kept as above).
reference lammps-ka-small-protocol.csv 33 in.protocol-ref -var data "$DATA/ka-small.data"
awk -F, '!seen[$1]++' "$DATA/lammps-ka-small-protocol.csv" > "$TMP/protocol.csv"
cp "$TMP/protocol.csv" "$DATA/lammps-ka-small-protocol.csv"
check_rows lammps-ka-small-protocol.csv 31
