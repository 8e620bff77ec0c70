#!/usr/bin/env bash
# The energy spectrum of the fluid solver: a random field at 24 x 20 x 18, 3 adaptive steps, spectra at
# steps 0 and 3, run twice on NP ranks. The spectra of the two runs must be bitwise equal (a fixed-order
# reduction), and the spectrum at step 3 must equal the one NumPy computes from the final state
# (final.h5 /fluid/uhat) to 1e-13 relative to the energy. Skips (77) where /usr/bin/python3 lacks NumPy
# or h5py.
#   fluid_spectrum_test.sh NP SPOTRUN MPIEXEC NUMPROC_FLAG WORKDIR SOURCE_DIR
set -u
NP="$1"; SPOTRUN="$2"; MPIEXEC="$3"; NPFLAG="$4"; W="$5"; SRC="$6"
# shellcheck source=../support/test_lib.sh
source "$(dirname "$0")/../support/test_lib.sh"
need_python numpy h5py
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
for RUN in a b; do
    timeout 120 "$MPIEXEC" --oversubscribe "$NPFLAG" "$NP" "$SPOTRUN" run "$SRC/inputs/tgv-re1600.toml" \
        --output-dir "$W/$RUN" --set 'fluid.n=[24,20,18]' --set fluid.init=random --set fluid.cfl=0.4 \
        --set fluid.dt=0.05 --set fluid.viscosity=0.01 --set fluid.time_end=0 --set run.steps=3 \
        --set run.thermo_every=1 --set fluid.spectrum_every=3 > "run-$RUN.log" 2>&1
    RC=$?
    [ "$RC" = 0 ] || { cat "run-$RUN.log"; echo "FAIL: spotrun run ($RUN) exited $RC"; exit 1; }
done
"$PY" - "$W/a" "$W/b" <<'PYEOF'
import sys
import h5py
import numpy as np
a, b = sys.argv[1], sys.argv[2]
with h5py.File(f"{a}/spectrum.h5", "r") as fa, h5py.File(f"{b}/spectrum.h5", "r") as fb:
    groups = sorted(fa.keys())
    if groups != ["step_000000000", "step_000000003"] or sorted(fb.keys()) != groups:
        sys.exit(f"FAIL: spectrum groups {groups} and {sorted(fb.keys())}")
    for g in groups:
        ea, eb = fa[g]["E"][()], fb[g]["E"][()]
        if ea.tobytes() != eb.tobytes():
            sys.exit(f"FAIL: {g}: the two runs' spectra differ, largest by {np.max(np.abs(ea - eb)):.3e}")
    E = fa["step_000000003"]["E"][()]
    k = fa["step_000000003"]["k"][()]
with h5py.File(f"{a}/final.h5", "r") as f:
    uhat = f["/fluid/uhat"][()]  # (nx, ny, nz/2 + 1, 3, 2)
nx, ny, nzc = uhat.shape[:3]
nz = 18
u = uhat[..., 0] + 1j * uhat[..., 1]
def signed(n, m):
    i = np.arange(m)
    return np.where(2 * i <= n, i, i - n)
KX, KY, KZ = np.meshgrid(signed(nx, nx), signed(ny, ny), np.arange(nzc), indexing="ij")
mag = np.sqrt(KX**2 + KY**2 + KZ**2)
nbins = int(np.floor(np.sqrt(0.25 * (nx * nx + ny * ny + nz * nz)) + 0.5)) + 1
shell = np.minimum(np.floor(mag + 0.5).astype(int), nbins - 1)
w = np.where((KZ == 0) | (2 * KZ == nz), 1.0, 2.0)
e = 0.5 * w * np.sum(np.abs(u) ** 2, axis=-1)
ref = np.bincount(shell.ravel(), weights=e.ravel(), minlength=nbins)
if len(E) != nbins or not np.array_equal(k, np.arange(nbins)):
    sys.exit(f"FAIL: {len(E)} shells, NumPy has {nbins}")
total = ref.sum()
err = np.max(np.abs(E - ref)) / total
print(f"shells {nbins}, energy {total:.17g}, largest difference to NumPy {err:.3e} of the energy; two runs bitwise equal")
if total <= 0 or np.count_nonzero(ref) < 5:
    sys.exit("FAIL: the reference spectrum is empty (nothing was tested)")
if err > 1e-13:
    sys.exit(f"FAIL: largest difference {err:.3e} > 1e-13 of the energy")
print("OK")
PYEOF
