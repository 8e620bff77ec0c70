"""Checks spotrun's H5MD trajectories and LAMMPS dumps (tests/trajectory/trajectory_test.sh), with h5py.
MDAnalysis reads them in check_mdanalysis.py.

usage: check_trajectory.py REF.h5md FINAL.h5 RESUMED.h5md ONE_RANK.h5md FRAMES EVERY REF.lammpstrj RESUMED.lammpstrj
  REF.h5md       trajectory of an uninterrupted run; FINAL.h5 its final state (spotrun's final.h5)
  RESUMED.h5md   the same run stopped, its newer frames left behind, resumed from an older checkpoint
  ONE_RANK.h5md  the same run at one rank
  REF.lammpstrj, RESUMED.lammpstrj: the dumps (md.dump, columns id type x y z vx vy vz ix iy iz xu yu zu)
    of the uninterrupted and the resumed run
"""
import sys

import h5py
import numpy as np

ref_path, final_path, resumed_path, one_path = sys.argv[1:5]
frames, every = int(sys.argv[5]), int(sys.argv[6])
ref_dump, resumed_dump = sys.argv[7:9]
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



def read_dump(path):
    """The frames of a LAMMPS dump custom file: [(step, natoms, bounds, columns, rows)], parsed strictly."""
    lines = open(path).read().split("\n")
    if lines[-1] != "":
        fail("%s does not end in a newline" % path)
    lines.pop()
    out, i = [], 0
    while i < len(lines):
        if lines[i] != "ITEM: TIMESTEP" or lines[i + 2] != "ITEM: NUMBER OF ATOMS" or lines[i + 4] != "ITEM: BOX BOUNDS pp pp pp" \
                or not lines[i + 8].startswith("ITEM: ATOMS "):
            fail("%s: line %d does not start a dump custom frame: %r" % (path, i + 1, lines[i]))
        step, n = int(lines[i + 1]), int(lines[i + 3])
        bounds = np.array([[float(x) for x in lines[i + 5 + d].split()] for d in range(3)])
        cols = lines[i + 8].split()[2:]
        rows = np.array([[float(x) for x in l.split()] for l in lines[i + 9:i + 9 + n]])
        if rows.shape != (n, len(cols)):
            fail("%s: frame of step %d has rows of shape %s" % (path, step, rows.shape))
        out.append((step, n, bounds, cols, rows))
        i += 9 + n
    return out


# The dumps: every frame once, in order (the resumed run cut the frames after its checkpoint and wrote them
# again), the resumed run's equal to the uninterrupted one's, the last frame the final state.
ref_frames, res_frames = read_dump(ref_dump), read_dump(resumed_dump)
want_steps = list(range(0, every * frames, every))
for name, fr in (("uninterrupted", ref_frames), ("resumed", res_frames)):
    if [f[0] for f in fr] != want_steps:
        fail("the %s run's dump has the steps %s, expected %s" % (name, [f[0] for f in fr], want_steps))
for a, b in zip(ref_frames, res_frames):
    if a[1] != b[1] or a[3] != b[3] or not np.array_equal(a[2], b[2]) or not np.array_equal(a[4], b[4]):
        fail("the resumed run's dump frame of step %d differs from the uninterrupted run's" % a[0])
step, n, bounds, cols, rows = ref_frames[-1]
want_cols = ["id", "type", "x", "y", "z", "vx", "vy", "vz", "ix", "iy", "iz", "xu", "yu", "zu"]
if cols != want_cols:
    fail("dump columns %s, expected %s" % (cols, want_cols))
c = {name: rows[:, k] for k, name in enumerate(cols)}
with h5py.File(final_path, "r") as final:
    if n != final["md/x"].shape[0] or not np.array_equal(c["id"], np.arange(1, n + 1)):
        fail("the dump's rows are not the atoms in id order")
    if not np.array_equal(c["type"], final["md/type"][:]):
        fail("the dump's types differ from final.h5's")
    x, v, image = final["md/x"][:], final["md/v"][:], final["md/image"][:]
    pos = np.stack([c["x"], c["y"], c["z"]], axis=1)
    if np.abs(pos - x).max() > 1e-9 * np.abs(x).max():
        fail("the last dump frame's positions differ from final.h5 by %g" % np.abs(pos - x).max())
    if np.abs(np.stack([c["vx"], c["vy"], c["vz"]], axis=1) - v).max() > 1e-9 * np.abs(v).max():
        fail("the last dump frame's velocities differ from final.h5")
    if not np.array_equal(np.stack([c["ix"], c["iy"], c["iz"]], axis=1), image):
        fail("the last dump frame's image flags differ from final.h5")
    length = bounds[:, 1] - bounds[:, 0]
    unwrapped = x + image * length
    if np.abs(np.stack([c["xu"], c["yu"], c["zu"]], axis=1) - unwrapped).max() > 1e-8 * np.abs(unwrapped).max():
        fail("the last dump frame's unwrapped positions differ from final.h5's x + image * L")
    if not np.allclose(length, np.diag(edges)):
        fail("dump box %s, trajectory box %s" % (bounds, np.diag(edges)))
print("trajectory: %d frames of %d atoms; last frame == final.h5; resumed == uninterrupted; dump: %d frames, "
      "resumed == uninterrupted, last frame == final.h5" % (frames, natoms, len(ref_frames)))
