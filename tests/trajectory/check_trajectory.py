"""Checks spotrun's H5MD trajectories (tests/trajectory/trajectory_test.sh), with h5py and MDAnalysis.

usage: check_trajectory.py REF.h5 FINAL.h5 RESUMED.h5 ONE_RANK.h5 FRAMES EVERY
  REF.h5       trajectory of an uninterrupted run; FINAL.h5 its final state (spotrun's final.h5)
  RESUMED.h5   the same run stopped, its newer frames left behind, resumed from an older checkpoint
  ONE_RANK.h5  the same run at one rank
"""
import sys
import warnings

import h5py
import numpy as np

warnings.simplefilter("ignore")
import MDAnalysis as mda  # noqa: E402

ref_path, final_path, resumed_path, one_path = sys.argv[1:5]
frames, every = int(sys.argv[5]), int(sys.argv[6])
fields = ["position", "image", "velocity", "force"]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


with h5py.File(ref_path, "r") as ref, h5py.File(final_path, "r") as final:
    # H5MD metadata
    if list(ref["h5md"].attrs["version"]) != [1, 1]:
        fail("h5md version is %s" % ref["h5md"].attrs["version"])
    if ref["h5md/creator"].attrs["name"] != "spotrun" or not ref["h5md/author"].attrs["name"]:
        fail("creator/author missing")
    if ref["parameters"].attrs["units"] != "lj":
        fail("units missing")
    box = ref["particles/all/box"]
    if box.attrs["dimension"] != 3 or [b.decode() if isinstance(b, bytes) else b for b in box.attrs["boundary"]] != ["periodic"] * 3:
        fail("box attributes")
    natoms = final["md/x"].shape[0]
    for f in fields:
        g = ref["particles/all/" + f]
        if g["value"].shape != (frames, natoms, 3):
            fail("%s has shape %s" % (f, g["value"].shape))
        if list(g["step"][:]) != list(range(0, every * frames, every)):
            fail("%s steps %s" % (f, list(g["step"][:])))
    # The last frame is the final state, bit for bit: positions, images, velocities, forces, types.
    last = frames - 1
    for f, d in [("position", "md/x"), ("image", "md/image"), ("velocity", "md/v"), ("force", "md/f")]:
        if not np.array_equal(ref["particles/all/%s/value" % f][last], final[d][:]):
            fail("last %s frame differs from %s of final.h5" % (f, d))
    if not np.array_equal(ref["particles/all/species"][:], final["md/type"][:]):
        fail("species differ from the types of final.h5")
    edges = ref["particles/all/box/edges/value"][last]
    if not np.allclose(edges, np.diag(np.diag(edges))):
        fail("box edges not a diagonal matrix")

    # The resumed run's trajectory equals the uninterrupted one's, frame for frame.
    with h5py.File(resumed_path, "r") as res:
        for f in fields:
            for k in ("step", "time", "value"):
                a, b = ref["particles/all/%s/%s" % (f, k)], res["particles/all/%s/%s" % (f, k)]
                if a.shape != b.shape or not np.array_equal(a[:], b[:]):
                    fail("resumed %s/%s differs from the uninterrupted run's" % (f, k))
        if not np.array_equal(ref["particles/all/box/edges/value"][:], res["particles/all/box/edges/value"][:]):
            fail("resumed box edges differ")

    # Rows are atoms in id order whatever the rank count: frame 0 positions equal the one-rank run's
    # exactly; later frames to rounding (sums in another order).
    with h5py.File(one_path, "r") as one:
        p_ref, p_one = ref["particles/all/position/value"], one["particles/all/position/value"]
        if not np.array_equal(p_ref[0], p_one[0]):
            fail("frame 0 positions differ between rank counts")
        worst = np.abs(p_ref[last] - p_one[last]).max()
        if worst > 1e-6:
            fail("last frame differs from the one-rank run by %g" % worst)
        if not np.array_equal(ref["particles/all/species"][:], one["particles/all/species"][:]):
            fail("species differ between rank counts")

# MDAnalysis reads it (reduced LJ units: convert_units=False): frames, steps, times, box, positions.
u = mda.Universe.empty(natoms, trajectory=True)
u.load_new(ref_path, format="H5MD", convert_units=False)
if len(u.trajectory) != frames:
    fail("MDAnalysis sees %d frames" % len(u.trajectory))
ts = u.trajectory[last]
if ts.data["step"] != every * last or not ts.has_velocities or not ts.has_forces:
    fail("MDAnalysis frame %d: step %s" % (last, ts.data["step"]))
with h5py.File(final_path, "r") as final:
    if np.abs(u.atoms.positions - final["md/x"][:]).max() > 1e-5 * np.abs(final["md/x"][:]).max():
        fail("MDAnalysis positions differ from final.h5")  # MDAnalysis holds float32
if not np.allclose(u.dimensions[:3], np.diag(edges), rtol=1e-6) or not np.allclose(u.dimensions[3:], 90):
    fail("MDAnalysis box %s" % u.dimensions)
print("trajectory: %d frames of %d atoms; last frame == final.h5; resumed == uninterrupted; MDAnalysis %s reads it"
      % (frames, natoms, mda.__version__))
