#!/usr/bin/env bash
# LJ melt benchmark (the LAMMPS bench/in.lj problem): spotrun vs LAMMPS, plain
# and with its OPT package (lmp -sf opt, the same input otherwise).
#
# Sizes: 32,000 atoms (fcc 20x20x20 cells) and 256,000 atoms (40x40x40),
# 100 steps NVE, each at 1 and 2 MPI ranks. Prints one row per case:
#   atoms ranks spotrun_atom_steps_per_s lammps_atom_steps_per_s ratio lammps_opt_atom_steps_per_s ratio_opt
# with ratio = spotrun / lammps, ratio_opt = spotrun / (lammps -sf opt)
# ("n/a" when LAMMPS was not run).
#
# Usage: bench/run_lj_bench.sh [--quick]
#   --quick   32,000 atoms only
# Environment:
#   SPOTRUN            spotrun binary (default: build/launcher/spotrun)
#   LMP                LAMMPS binary (default: lmp; LAMMPS runs only when
#                      it is found on PATH)
#   MPIRUN             MPI launcher (default: mpirun)
#   RANKS              rank counts to run (default: "1 2")
#   BENCH_LAMMPS_ONLY  =1: skip spotrun (its binary may be missing)
#   KEEP_OUTPUT        =1: keep the scratch directory with all outputs
# Exits non-zero when spotrun or LAMMPS fails.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SPOTRUN="${SPOTRUN:-build/launcher/spotrun}"
DECK="bench/lj-bench.toml"
LMP_INPUT="bench/lammps/in.lj"
LMP="${LMP:-lmp}"
MPIRUN="${MPIRUN:-mpirun}"
RANKS="${RANKS:-1 2}"
LAMMPS_ONLY="${BENCH_LAMMPS_ONLY:-0}"

# multiplier x of the 20-cell in.lj box -> 32,000 * x^3 atoms
SIZES=(1 2)
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) SIZES=(1); shift ;;
        -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
done

die() { echo "run_lj_bench: $*" >&2; exit 1; }

# Open MPI refuses more ranks than detected slots without --oversubscribe, and refuses to run as
# root without --allow-run-as-root.
MPI_ARGS=()
if "$MPIRUN" --version 2>/dev/null | grep -q "Open MPI"; then
    MPI_ARGS+=(--oversubscribe)
    if [[ $(id -u) -eq 0 ]]; then MPI_ARGS+=(--allow-run-as-root); fi
fi

RUN_SPOTRUN=1
if [[ "$LAMMPS_ONLY" == 1 ]]; then
    RUN_SPOTRUN=0
else
    [[ -x "$SPOTRUN" ]] || die "spotrun binary '$SPOTRUN' not found (build it, set SPOTRUN=..., or BENCH_LAMMPS_ONLY=1)"
    [[ -f "$DECK" ]] || die "deck '$DECK' not found"
fi

RUN_LAMMPS=0
if command -v "$LMP" >/dev/null 2>&1; then
    RUN_LAMMPS=1
    [[ -f "$LMP_INPUT" ]] || die "LAMMPS input '$LMP_INPUT' not found"
else
    echo "run_lj_bench: '$LMP' not on PATH, LAMMPS columns will be n/a" >&2
fi
[[ $RUN_SPOTRUN == 1 || $RUN_LAMMPS == 1 ]] || die "nothing to run (BENCH_LAMMPS_ONLY=1 but no LAMMPS)"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/lj-bench.XXXXXX")"
if [[ "${KEEP_OUTPUT:-0}" == 1 ]]; then
    echo "run_lj_bench: outputs kept in $TMP" >&2
else
    trap 'rm -rf "$TMP"' EXIT
fi

# spotrun_rate X R -> atom-steps/s from "Performance: <number> atom-steps/s"
spotrun_rate() {
    local x=$1 r=$2 cells=$((20 * $1))
    local out="$TMP/spotrun-x$x-np$r"
    local log="$out.log"
    if ! "$MPIRUN" "${MPI_ARGS[@]}" -np "$r" "$SPOTRUN" run "$DECK" \
            --set "md.lattice.cells=[$cells,$cells,$cells]" \
            --output-dir "$out" >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        die "spotrun failed (x=$x, ranks=$r), log above"
    fi
    local rate
    rate="$(awk '/Performance:/ && /atom-steps\/s/ {
                     for (i = 1; i < NF; i++) if ($i == "Performance:") v = $(i + 1) }
                 END { if (v != "") print v }' "$log")"
    [[ -n "$rate" ]] || { tail -n 40 "$log" >&2; die "no 'Performance: ... atom-steps/s' line in spotrun output (x=$x, ranks=$r)"; }
    echo "$rate"
}

# lammps_rate X R [LMP ARGS...] -> atom-steps/s = N * steps / T from
# "Loop time of T on P procs for S steps with N atoms"; LMP ARGS precede the
# input's (-sf opt: the OPT package)
lammps_rate() {
    local x=$1 r=$2
    shift 2
    local tag="lammps$(printf '%s' "$*" | tr -cs 'A-Za-z0-9' '_')"
    local screen="$TMP/$tag-x$x-np$r.screen"
    if ! "$MPIRUN" "${MPI_ARGS[@]}" -np "$r" "$LMP" "$@" -in "$LMP_INPUT" \
            -var x "$x" -var y "$x" -var z "$x" \
            -log none -screen "$screen" -nocite >"$screen.out" 2>&1; then
        tail -n 40 "$screen" "$screen.out" >&2 || true
        die "LAMMPS $* failed (x=$x, ranks=$r)"
    fi
    local rate
    rate="$(awk '/^Loop time of/ { t = $4; s = $9; n = $12 }
                 END { if (t > 0) printf "%.6g\n", n * s / t }' "$screen")"
    [[ -n "$rate" ]] || { tail -n 40 "$screen" >&2; die "no 'Loop time of' line in LAMMPS $* output (x=$x, ranks=$r)"; }
    echo "$rate"
}

# ratio A B -> A / B to 3 decimals, "n/a" when either is
ratio() { if [[ $1 != n/a && $2 != n/a ]]; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; else echo n/a; fi; }
# g V -> V to 4 significant digits, "n/a" as it is
g() { if [[ $1 != n/a ]]; then awk -v v="$1" 'BEGIN { printf "%.4g", v }'; else echo n/a; fi; }

row() { printf '%-8s %-5s %-24s %-23s %-5s %-27s %s\n' "$@"; }
row atoms ranks spotrun_atom_steps_per_s lammps_atom_steps_per_s ratio lammps_opt_atom_steps_per_s ratio_opt
for x in "${SIZES[@]}"; do
    atoms=$((32000 * x * x * x))
    for r in $RANKS; do
        s="n/a"; l="n/a"; o="n/a"
        [[ $RUN_SPOTRUN == 1 ]] && s="$(spotrun_rate "$x" "$r")"
        [[ $RUN_LAMMPS == 1 ]] && l="$(lammps_rate "$x" "$r")"
        [[ $RUN_LAMMPS == 1 ]] && o="$(lammps_rate "$x" "$r" -sf opt)"
        row "$atoms" "$r" "$(g "$s")" "$(g "$l")" "$(ratio "$s" "$l")" "$(g "$o")" "$(ratio "$s" "$o")"
    done
done
