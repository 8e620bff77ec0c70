#!/usr/bin/env bash
# Validation of md.precision = "mixed" against "double" (docs/md.md, Precision): the in.lj physics (fcc 0.8442,
# T = 1.44, lj/cut 2.5, skin 0.3, dt 0.005, NVE) for 10^5 steps in each precision, thermo every 500 steps.
# Two settings differ from in.lj and change no trajectory: the lists are safe (checked every step, rebuilt at
# skin/2), so that the drift measures the integration and the arithmetic, not missed pairs; and the pair
# energy is shifted to zero at the cutoff (md.pair.shift: the forces, hence the trajectory, are in.lj's), so
# that etotal does not jump each time a pair crosses the cutoff. Prints, per precision, the energy drift per
# atom (the slope of a least-squares line through etotal, times the run's length) with its standard error
# (from the residuals), the largest |etotal - etotal(0)| and the rms fluctuation of etotal, then the verdict:
# mixed's drift no worse than twice double's, or the difference of the two within twice its standard error.
#
# Usage: bench/md_precision_validation.sh [--cells N] [--steps S] [--ranks R]
#   --cells N   lattice cells per side (default 8: 2,048 atoms; in.lj: 20)
#   --steps S   steps (default 100000)
#   --ranks R   MPI ranks of each run (default 1; the two runs go side by side)
# Environment: SPOTRUN (default build/launcher/spotrun), MPIRUN (default mpirun), KEEP_OUTPUT=1 keeps the runs.
# Exit: 0 validated, 1 not validated or a run failed, 2 bad usage.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SPOTRUN="${SPOTRUN:-build/launcher/spotrun}"
MPIRUN="${MPIRUN:-mpirun}"
CELLS=8
STEPS=100000
RANKS=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --cells) CELLS="$2"; shift 2 ;;
        --steps) STEPS="$2"; shift 2 ;;
        --ranks) RANKS="$2"; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "md_precision_validation: unknown option: $1" >&2; exit 2 ;;
    esac
done
[[ -x "$SPOTRUN" ]] || { echo "md_precision_validation: '$SPOTRUN' not found (build it or set SPOTRUN)" >&2; exit 1; }
MPI_ARGS=()
if "$MPIRUN" --version 2>/dev/null | grep -q "Open MPI"; then
    MPI_ARGS+=(--oversubscribe)
    if [[ $(id -u) -eq 0 ]]; then MPI_ARGS+=(--allow-run-as-root); fi
fi
TMP="$(mktemp -d "${TMPDIR:-/tmp}/md-precision.XXXXXX")"
if [[ "${KEEP_OUTPUT:-0}" == 1 ]]; then echo "md_precision_validation: outputs in $TMP" >&2; else trap 'rm -rf "$TMP"' EXIT; fi

pids=()
for p in double mixed; do
    "$MPIRUN" "${MPI_ARGS[@]}" -np "$RANKS" "$SPOTRUN" run bench/lj-bench.toml --resume never --output-dir "$TMP/$p" \
        --set "md.lattice.cells=[$CELLS,$CELLS,$CELLS]" --set "run.steps=$STEPS" --set run.thermo_every=500 \
        --set md.neighbor_every=1 --set md.neighbor_check=true --set md.pair.shift=true --set "md.precision=\"$p\"" \
        --set checkpoint.every_steps=0 >"$TMP/$p.log" 2>&1 &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || { tail -n 20 "$TMP"/*.log >&2; echo "md_precision_validation: a run failed" >&2; exit 1; }; done

/usr/bin/python3 - "$TMP" "$STEPS" "$CELLS" <<'PY'
import csv, sys
import numpy as np
tmp, steps, cells = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
res = {}
for p in ("double", "mixed"):
    rows = list(csv.DictReader(open(f"{tmp}/{p}/thermo.csv")))
    t = np.array([float(r["time"]) for r in rows]); e = np.array([float(r["etotal"]) for r in rows])
    (slope, icpt), cov = np.polyfit(t, e, 1, cov=True)
    res[p] = dict(drift=slope * (t[-1] - t[0]), err=np.sqrt(cov[0, 0]) * (t[-1] - t[0]),
                  maxdev=np.max(np.abs(e - e[0])), rms=np.std(e), e0=e[0], t=t[-1] - t[0], temp=float(rows[-1]["temp"]))
    print(f"{p:7s} atoms {4 * cells ** 3}, {steps} steps ({res[p]['t']:g} tau): etotal(0) {e[0]:.10f}, drift per atom "
          f"{res[p]['drift']:+.3e} +- {res[p]['err']:.1e} epsilon, max |E - E0| {res[p]['maxdev']:.3e}, rms {res[p]['rms']:.3e}, "
          f"final temp {res[p]['temp']:.6f}")
d, m = abs(res["double"]["drift"]), abs(res["mixed"]["drift"])
sigma = np.hypot(res["double"]["err"], res["mixed"]["err"])
ok = m <= 2 * d or abs(m - d) <= 2 * sigma
print(f"mixed / double drift: {m / d if d > 0 else float('inf'):.3f} (bound 2); |mixed| - |double| = {m - d:+.2e}, "
      f"standard error {sigma:.1e}: {'VALIDATED' if ok else 'NOT VALIDATED'}")
sys.exit(0 if ok else 1)
PY
