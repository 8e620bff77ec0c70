#pragma once
// The topology of the atoms of a data file, per atom: each bonded interaction listed with every atom that
// takes part in it (LAMMPS's newton_bond off: an atom knows all its interactions, so the forces gather
// on owned atoms without another rank's help; the first atom of an interaction tallies its energy), and the
// special neighbours (1-2, 1-3, 1-4 along the bonds, as LAMMPS's special_bonds builds them) whose pair
// interactions special_bonds excludes or scales. Built on the host from io::LammpsData at a fresh start;
// it travels with the atoms afterwards.
#include <cstdint>
#include <string>
#include <vector>

#include "io/lammps_data.hpp"

namespace spotrun::md::bonded {

// One kind (bonds: width 2, angles 3, dihedrals and impropers 4), per atom a: count[a] interactions in slots
// [a * max, a * max + count[a]), each its type, the atom's role (its place in the interaction) and the
// width atom ids in the interaction's order.
struct PerAtomKind {
  int width = 2;
  int max = 0;  // the most interactions of this kind any atom takes part in
  std::vector<int> count;
  std::vector<int> type;          // [slot]
  std::vector<int> role;          // [slot]
  std::vector<std::int64_t> ids;  // [slot * width + k]
  // The interactions, each once (the used slots of role 0).
  std::size_t interactions() const {
    std::size_t n = 0;
    for (std::size_t a = 0; a < count.size(); ++a)
      for (int s = 0; s < count[a]; ++s) n += role[a * static_cast<std::size_t>(max) + static_cast<std::size_t>(s)] == 0;
    return n;
  }
};

// Special neighbours per atom: ids[a * max, a * max + n14[a]): first the n12[a] 1-2 neighbours, then the
// 1-3 up to n13[a], then the 1-4 up to n14[a] (cumulative counts, as LAMMPS's nspecial).
struct PerAtomSpecial {
  int max = 0;
  std::vector<int> n12, n13, n14;
  std::vector<std::int64_t> ids;
};

struct PerAtomTopology {
  PerAtomKind bonds{2, 0, {}, {}, {}, {}}, angles{3, 0, {}, {}, {}, {}}, dihedrals{4, 0, {}, {}, {}, {}},
      impropers{4, 0, {}, {}, {}, {}};
  PerAtomSpecial special;
};

// The per-atom topology of every atom of d, in d's atom order (d.id).
PerAtomTopology per_atom_topology(const io::LammpsData& d);

}  // namespace spotrun::md::bonded
