#!/usr/bin/env bash
# Regenerates the LAMMPS energy-minimisation references in tests/data/ from tests/data/lammps/in.minimize-ref:
# the lj-small.data liquid and the ka-small.data Kob-Andersen mixture minimised with min_style cg and fire
# (minimize 1e-6 0.0 1000 10000). For each system and style a thermo CSV (step,pe: every iteration, pe per atom)
# and one line of tests/data/lammps-<system>-minimize-stats.txt with LAMMPS's Minimization stats; for ka-small
# also the minimised positions (lammps-ka-small-minimize-<style>.dump); liquid argon in units real and metal
# from lammps/in.minimize-argon-ref (lammps-argon-<units>-minimize-*, with the positions). The files are committed;
# tests/test_md_minimize.cpp does not need LAMMPS.
#
# Usage: tools/make_lammps_minimize_reference.sh
# Environment: LMP (default: lmp).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA="$ROOT/tests/data"
INPUTS="$DATA/lammps"
LMP="${LMP:-lmp}"

case "${1:-}" in
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    "") ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
esac

command -v "$LMP" >/dev/null 2>&1 || { echo "error: '$LMP' not found (set LMP=...)" >&2; exit 1; }

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

HELP="$("$LMP" -h 2>&1 || true)"
VERSION="$(awk '/Large-scale Atomic/ { sub(/^.*Simulator - /, ""); print; exit }' <<<"$HELP")"
echo "LAMMPS: $VERSION"

# record LOG STYLE CSV STATS: from a LAMMPS log of in.minimize-ref or in.minimize-argon-ref, the step,pe rows of
# every iteration into CSV and one line of its Minimization stats appended to STATS.
record() {
    local log="$1" style="$2" csv="$3" stats="$4"
    grep -q '^Minimization stats' "$log" || { echo "error: LAMMPS minimize failed, see $log" >&2; cat "$log" >&2; exit 1; }
    awk '$1 == "Step" { print "step,pe"; inblock = 1; next }
         /^Loop time of/ { inblock = 0 }
         inblock && NF == 2 && $1 ~ /^[0-9]+$/ { print $1 "," $2 }' "$log" > "$csv"
    awk -v style="$style" '
        /Stopping criterion =/ { sub(/^.*= /, ""); stop = $0 }
        /Energy initial, next-to-last, final =/ { getline; e = $1 " " $2 " " $3 }
        /Force two-norm initial, final =/ { f = $(NF - 1) " " $NF }
        /Iterations, force evaluations =/ { it = $(NF - 1) " " $NF }
        END { print style, it, e, f, stop }' "$log" >> "$stats"
}

# system data-file coeffs dump: lj-small (one type) and ka-small (the Kob-Andersen mixture, whose minimised
# positions are kept as well).
for system in "lj-small lj no" "ka-small ka yes"; do
    read -r name coeffs dump <<<"$system"
    STATS="$DATA/lammps-$name-minimize-stats.txt"
    {
        echo "# LAMMPS $VERSION: $name.data, minimize 1e-6 0.0 1000 10000 (tools/make_lammps_minimize_reference.sh)"
        echo "# style iterations evaluations e_initial e_next_to_last e_final fnorm2_initial fnorm2_final stopping criterion"
    } > "$STATS"
    for style in cg fire; do
        log="$TMP/log.$name.$style"
        rm -f "$TMP/min.dump"
        (cd "$TMP" && "$LMP" -in "$INPUTS/in.minimize-ref" -var data "$DATA/$name.data" -var style "$style" \
            -var etol 1e-6 -var ftol 0.0 -var maxiter 1000 -var maxeval 10000 -var coeffs "$coeffs" \
            -var dump "$dump" -log "$log" -screen none -nocite)
        csv="$DATA/lammps-$name-minimize-$style.csv"
        record "$log" "$style" "$csv" "$STATS"
        echo "wrote tests/data/$(basename "$csv")"
        if [[ "$dump" == yes ]]; then
            cp "$TMP/min.dump" "$DATA/lammps-$name-minimize-$style.dump"
            echo "wrote tests/data/lammps-$name-minimize-$style.dump"
        fi
    done
    echo "wrote tests/data/$(basename "$STATS")"
done
# Liquid argon in units real and metal (tests/data/lammps/in.minimize-argon-ref; pe a total, FIRE's first step
# the data's time step: 2 fs, 0.002 ps): the same files, lammps-argon-<units>-minimize-*, with the positions.
# cg in real units stops at 80 iterations: past about 100 its quench parts from itself at round-off (LAMMPS at 2
# ranks against 1: 8.8e-10 relative at iteration 100, 3.5e-6 at 114; it then ends after 492 iterations at
# -1403.7 kcal/mol, at 1 rank after 427 at -1391.9).
for system in "real 0.2381 2.0 80" "metal 0.010323 0.002 1000"; do
    read -r units eps dt cg_maxiter <<<"$system"
    name="argon-$units"
    STATS="$DATA/lammps-$name-minimize-stats.txt"
    {
        echo "# LAMMPS $VERSION: $name.data, units $units, minimize 1e-6 0.0 1000 10000 (cg: maxiter $cg_maxiter) (tools/make_lammps_minimize_reference.sh)"
        echo "# style iterations evaluations e_initial e_next_to_last e_final fnorm2_initial fnorm2_final stopping criterion"
    } > "$STATS"
    for style in cg fire; do
        log="$TMP/log.$name.$style"
        rm -f "$TMP/min.dump"
        maxiter=1000
        [[ "$style" == cg ]] && maxiter="$cg_maxiter"
        (cd "$TMP" && "$LMP" -in "$INPUTS/in.minimize-argon-ref" -var units "$units" -var data "$DATA/$name.data" \
            -var eps "$eps" -var dt "$dt" -var style "$style" -var etol 1e-6 -var ftol 0.0 -var maxiter "$maxiter" \
            -var maxeval 10000 -log "$log" -screen none -nocite)
        csv="$DATA/lammps-$name-minimize-$style.csv"
        record "$log" "$style" "$csv" "$STATS"
        cp "$TMP/min.dump" "$DATA/lammps-$name-minimize-$style.dump"
        echo "wrote tests/data/$(basename "$csv"), lammps-$name-minimize-$style.dump"
    done
    echo "wrote tests/data/$(basename "$STATS")"
done
