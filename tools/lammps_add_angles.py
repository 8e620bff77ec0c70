#!/usr/bin/env python3
"""Adds an Angles section to a LAMMPS data file of linear chains.

Usage: lammps_add_angles.py IN.data OUT.data

IN.data is a write_data file of atom_style bond (Atoms # bond) whose chains
are bonded bead i-1 to bead i by atom id. OUT.data is the same file for
atom_style angle: the header gains "N angles" and "1 angle types", the
Atoms section is marked "# angle" (same columns), and an Angles section of
type 1 is appended with one angle (i-1, i, i+1) for every atom i bonded to
both i-1 and i+1, numbered in order of i. Standard library only.
"""
import sys


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__.strip())
    with open(argv[1]) as f:
        lines = f.read().split("\n")

    # Bonds section: "id type a b".
    bonds = set()
    section = None
    for line in lines:
        words = line.split()
        if not words:
            continue
        if words[0][0].isalpha():
            section = words[0]
            continue
        if section == "Bonds":
            a, b = int(words[2]), int(words[3])
            bonds.add((min(a, b), max(a, b)))
    if not bonds:
        sys.exit("error: no Bonds section in " + argv[1])

    centres = sorted(i for i in {a for a, _ in bonds} | {b for _, b in bonds}
                     if (i - 1, i) in bonds and (i, i + 1) in bonds)

    out = []
    for line in lines:
        words = line.split()
        if words[-2:] == ["bond", "types"]:
            out.append(line)
            out.append("%d angles" % len(centres))
            out.append("1 angle types")
            continue
        if words == ["Atoms", "#", "bond"]:
            out.append("Atoms # angle")
            continue
        out.append(line)
    while out and out[-1] == "":
        out.pop()
    out += ["", "Angles", ""]
    out += ["%d 1 %d %d %d" % (n, i - 1, i, i + 1)
            for n, i in enumerate(centres, start=1)]
    out.append("")
    with open(argv[2], "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main(sys.argv)
