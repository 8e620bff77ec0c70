#!/usr/bin/env bash
# The fluid solver against bench/fluid_scipy.py (the same method in NumPy/SciPy, the peer of the fluid
# benchmark): Taylor-Green at 16^3, a fixed step, 5 steps, on NP ranks; the kinetic energy after every
# step must agree to 1e-12 relative. Skips (77) where /usr/bin/python3 lacks NumPy or SciPy.
#   fluid_scipy_test.sh NP SPOTRUN MPIEXEC NUMPROC_FLAG WORKDIR SOURCE_DIR
set -u
NP="$1"; SPOTRUN="$2"; MPIEXEC="$3"; NPFLAG="$4"; W="$5"; SRC="$6"
# shellcheck source=../support/test_lib.sh
source "$(dirname "$0")/../support/test_lib.sh"
need_python numpy scipy
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
STEPS=5
timeout 120 "$MPIEXEC" --oversubscribe "$NPFLAG" "$NP" "$SPOTRUN" run "$SRC/inputs/tgv-re1600.toml" \
    --output-dir "$W/out" --set 'fluid.n=[16,16,16]' --set fluid.cfl=0 --set fluid.dt=0.01 \
    --set fluid.time_end=0 --set run.steps=$STEPS --set run.thermo_every=1 --set fluid.spectrum_every=0 \
    > run.log 2>&1
RC=$?
[ "$RC" = 0 ] || { cat run.log; echo "FAIL: spotrun run exited $RC"; exit 1; }
timeout 120 "$PY" "$SRC/bench/fluid_scipy.py" --n 16 --steps $STEPS --dt 0.01 --workers 1 --json scipy.json \
    > scipy.log 2>&1 || { cat scipy.log; echo "FAIL: fluid_scipy.py failed"; exit 1; }
"$PY" - "$W/out/thermo.csv" scipy.json $STEPS <<'PYEOF'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ref = json.load(open(sys.argv[2]))["energies"]
steps = int(sys.argv[3])
# fluid_scipy.py runs one untimed step first: its energies are steps 0 .. steps + 1.
if len(rows) != steps + 1 or len(ref) < steps + 1:
    sys.exit(f"FAIL: {len(rows)} thermo rows and {len(ref)} reference energies for {steps} steps")
worst = 0.0
for r in rows:
    i = int(r["step"]); e = float(r["energy"])
    rel = abs(e - ref[i]) / abs(ref[i])
    worst = max(worst, rel)
    print(f"step {i}: spotrun {e:.17g} scipy {ref[i]:.17g} rel {rel:.2e}")
if ref[steps] == ref[0]:
    sys.exit("FAIL: the reference energy did not change (nothing was tested)")
if worst > 1e-12:
    sys.exit(f"FAIL: largest relative difference {worst:.3e} > 1e-12")
print(f"OK: largest relative difference {worst:.3e}")
PYEOF
