#!/usr/bin/env bash
# The fluid step against its two references, measured in one run:
#   - the FFT floor: 36 distributed FFTW transforms of the same grid (bench_fluid's own floor), and
#   - the NumPy/SciPy peer: bench/fluid_scipy.py, the same method with scipy.fft on WORKERS threads.
# Prints one row per grid and rank count:
#   n ranks spotrun_s_per_step floor_ratio scipy_s_per_step speedup_over_scipy
#
# Usage: bench/run_fluid_peer.sh [--quick]     (--quick: 64^3 only; default 64^3 and 128^3)
# Environment: BUILD (default build), MPIRUN (default mpirun), RANKS (default "1 2"), WORKERS (default:
# the number of cores, for SciPy), STEPS (rounds of bench_fluid, default 7).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD="${BUILD:-build}"
MPIRUN="${MPIRUN:-mpirun}"
RANKS="${RANKS:-1 2}"
WORKERS="${WORKERS:-$(nproc)}"
STEPS="${STEPS:-7}"
SIZES="64 128"
[ "${1:-}" = "--quick" ] && SIZES="64"
BENCH="$BUILD/bench/bench_fluid"
[ -x "$BENCH" ] || { echo "run_fluid_peer.sh: $BENCH not found (build first)" >&2; exit 2; }
/usr/bin/python3 -c 'import numpy, scipy' 2>/dev/null ||
    { echo "run_fluid_peer.sh: /usr/bin/python3 needs python3-numpy and python3-scipy" >&2; exit 2; }

printf '%5s %5s %14s %11s %14s %10s\n' n ranks spotrun_s floor_ratio scipy_s speedup
for n in $SIZES; do
    scipy_s=$(/usr/bin/python3 bench/fluid_scipy.py --n "$n" --steps 3 --dt 0.01 --workers "$WORKERS" |
              sed -n 's/.*: \([0-9.e+-]*\) s per step.*/\1/p')
    for np in $RANKS; do
        line=$("$MPIRUN" --oversubscribe -np "$np" "$BENCH" --sizes "$n" --steps "$STEPS" 2>/dev/null |
               awk -v n="$n" '$1 == n && $2 != "n"')
        # columns: n, decomposition (2 or 3 words), step, FFT, floor, FFT in step, ratio, median ratio, roundtrip
        step=$(echo "$line" | awk '{print $(NF-6)}')
        ratio=$(echo "$line" | awk '{print $(NF-2)}')
        printf '%5s %5s %14s %11s %14s %10.2f\n' "$n" "$np" "$step" "$ratio" "$scipy_s" \
            "$(echo "$scipy_s / $step" | bc -l)"
    done
done
