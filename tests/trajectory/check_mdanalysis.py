"""MDAnalysis reads a run's outputs for viewers (tests/trajectory/mdanalysis_test.sh): the H5MD trajectory
with OUTDIR/topology.data as its topology, as docs/md.md shows it, and the LAMMPS dump.

usage: check_mdanalysis.py OUTDIR FRAMES EVERY
  OUTDIR: a finished run of the Kob-Andersen deck with md.trajectory and md.dump every EVERY steps
"""
import os
import sys
import warnings

import h5py
import numpy as np

warnings.simplefilter("ignore")
import MDAnalysis as mda  # noqa: E402

out, frames, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


topology, trajectory = os.path.join(out, "topology.data"), os.path.join(out, "trajectory.h5md")
with h5py.File(os.path.join(out, "final.h5"), "r") as final:
    x, types = final["md/x"][:], final["md/type"][:]
natoms = len(types)

# Reduced LJ units have no conversion to MDAnalysis's (Angstrom, ps): convert_units=False, as docs/md.md says.
u = mda.Universe(topology, trajectory, convert_units=False)
if len(u.atoms) != natoms:
    fail("MDAnalysis sees %d atoms, final.h5 holds %d" % (len(u.atoms), natoms))
if len(u.trajectory) != frames:
    fail("MDAnalysis sees %d frames, expected %d" % (len(u.trajectory), frames))
# The types of topology.data are the type numbers of the run (atoms in id order, as the trajectory's rows).
if list(u.atoms.types) != [str(t) for t in types]:
    fail("MDAnalysis types differ from final.h5's: %s" % sorted(set(u.atoms.types)))
want = {"1": int((types == 1).sum()), "2": int((types == 2).sum())}
got = {t: int((u.atoms.types == t).sum()) for t in want}
if got != want or min(want.values()) == 0:
    fail("type counts %s, expected %s (both types present)" % (got, want))
if not np.allclose(u.atoms.masses, 1.0):
    fail("masses %s" % set(u.atoms.masses))
ts = u.trajectory[frames - 1]
if ts.data["step"] != every * (frames - 1):
    fail("MDAnalysis last frame: step %s" % ts.data["step"])
if np.abs(u.atoms.positions - x).max() > 1e-5 * np.abs(x).max():
    fail("MDAnalysis positions of the last frame differ from final.h5")  # MDAnalysis holds float32
sel = u.select_atoms("type 2")
if len(sel) != want["2"]:
    fail("select_atoms('type 2') finds %d atoms" % len(sel))

d = mda.Universe(topology, os.path.join(out, "dump.lammpstrj"), format="LAMMPSDUMP")
if len(d.trajectory) != frames:
    fail("MDAnalysis sees %d frames in the dump, expected %d" % (len(d.trajectory), frames))
d.trajectory[frames - 1]
if np.abs(d.atoms.positions - x).max() > 1e-4 * np.abs(x).max():
    fail("MDAnalysis positions of the dump's last frame differ from final.h5")
print("MDAnalysis %s: Universe(topology.data, trajectory.h5md): %d atoms, types %s, %d frames; the dump: %d frames"
      % (mda.__version__, natoms, got, frames, len(d.trajectory)))
