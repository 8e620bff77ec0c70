"""The outputs for viewers of a run of molecules (tests/trajectory/mdanalysis_molecules_test.sh): MDAnalysis
reads the bonds, angles and molecules of OUTDIR/topology.data with the H5MD trajectory, and the trajectory's
/connectivity (H5MD 1.1) holds the same bonds and angles as atom ids of /particles/all/id, each once, in the
order of its first atom's id; all as the data file the run began from has them.

usage: check_molecules.py OUTDIR DATA FRAMES
"""
import os
import sys
import warnings

import h5py
import numpy as np

warnings.simplefilter("ignore")
import MDAnalysis as mda  # noqa: E402

out, data, frames = sys.argv[1], sys.argv[2], int(sys.argv[3])


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def section(path, name):
    """The rows of a section of a LAMMPS data file, as lists of words."""
    rows = []
    with open(path) as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == name:
            i += 2
            while i < len(lines) and lines[i].strip():
                rows.append(lines[i].split("#")[0].split())
                i += 1
            break
        i += 1
    return rows


topology, trajectory = os.path.join(out, "topology.data"), os.path.join(out, "trajectory.h5md")
want_bonds = sorted(tuple(int(w) for w in r[2:]) for r in section(data, "Bonds"))
want_angles = sorted(tuple(int(w) for w in r[2:]) for r in section(data, "Angles"))
want_molecules = {int(r[0]): int(r[1]) for r in section(data, "Atoms # angle")}

u = mda.Universe(topology, trajectory, convert_units=False)
if len(u.atoms) != len(want_molecules):
    fail("MDAnalysis sees %d atoms, the data file has %d" % (len(u.atoms), len(want_molecules)))
if len(u.trajectory) != frames:
    fail("MDAnalysis sees %d frames, expected %d" % (len(u.trajectory), frames))
ids = u.atoms.ids
got_bonds = sorted(tuple(int(i) for i in ids[b]) for b in u.bonds.indices)
got_angles = sorted(tuple(int(i) for i in ids[a]) for a in u.angles.indices)
if got_bonds != want_bonds:
    fail("MDAnalysis's bonds of topology.data (%d) differ from the data file's (%d)" % (len(got_bonds), len(want_bonds)))
if got_angles != want_angles:
    fail("MDAnalysis's angles of topology.data (%d) differ from the data file's (%d)" % (len(got_angles), len(want_angles)))
if [want_molecules[int(i)] for i in ids] != [int(r) for r in u.atoms.resids]:
    fail("MDAnalysis's residues (molecules) differ from the data file's molecule ids")

with h5py.File(trajectory, "r") as f:
    if not np.array_equal(f["particles/all/id"][:], np.sort(ids)):
        fail("/particles/all/id is not the atoms' ids in order")
    if "dihedrals" in f["connectivity"]:
        fail("/connectivity/dihedrals of a system without dihedrals")
    first = []
    for name, want, width in (("bonds", want_bonds, 2), ("angles", want_angles, 3)):
        d = f["connectivity/" + name]
        if d.dtype != np.int64 or d.shape != (len(want), width):
            fail("/connectivity/%s: %s %s, expected int64 (%d, %d)" % (name, d.dtype, d.shape, len(want), width))
        if f[d.attrs["particles_group"]].name != "/particles/all":
            fail("/connectivity/%s: particles_group refers to %s" % (name, f[d.attrs["particles_group"]].name))
        rows = [tuple(int(i) for i in r) for r in d[:]]
        if sorted(rows) != want:
            fail("/connectivity/%s differs from the data file's %s" % (name, name))
        if [r[0] for r in rows] != sorted(r[0] for r in rows):
            fail("/connectivity/%s is not in the order of the first atoms' ids" % name)
print("MDAnalysis %s: %d atoms, %d bonds, %d angles, %d molecules, %d frames; /connectivity: the same bonds and angles"
      % (mda.__version__, len(u.atoms), len(got_bonds), len(got_angles), len(u.residues), frames))
