// md::bonded::per_atom_topology: every interaction listed with each of its atoms and its role; the 1-2,
// 1-3 and 1-4 special neighbours along the bonds (a chain, a ring, a lone atom) against hand-made lists, and
// on the Kremer-Grest reference melt.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "io/lammps_data.hpp"
#include "solvers/md/bonded/topology.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1);

using namespace spotrun;

namespace {

// A chain 1-2-3-4-5, a triangle 6-7-8, a lone atom 9; angles 1-2-3 and 2-3-4; a dihedral 1-2-3-4.
io::LammpsData molecules() {
  std::string text = "t\n\n9 atoms\n1 atom types\n7 bonds\n2 bond types\n2 angles\n1 angle types\n1 dihedrals\n"
                     "1 dihedral types\n\n0 20 xlo xhi\n0 20 ylo yhi\n0 20 zlo zhi\n\nMasses\n\n1 1.0\n\nAtoms # molecular\n\n";
  for (int i = 1; i <= 9; ++i) text += std::to_string(i) + " " + (i <= 5 ? "1" : "2") + " 1 " + std::to_string(i) + " 1 1\n";
  text += "\nBonds\n\n1 1 1 2\n2 1 2 3\n3 2 3 4\n4 1 4 5\n5 1 6 7\n6 1 7 8\n7 2 8 6\n";
  text += "\nAngles\n\n1 1 1 2 3\n2 1 2 3 4\n\nDihedrals\n\n1 1 1 2 3 4\n";
  return io::parse_lammps_data(text, "m.data");
}

std::set<std::int64_t> special_set(const md::bonded::PerAtomSpecial& s, std::size_t a, int from, int to) {
  std::set<std::int64_t> out;
  const std::size_t base = a * static_cast<std::size_t>(s.max);
  for (int k = from; k < to; ++k) out.insert(s.ids[base + static_cast<std::size_t>(k)]);
  return out;
}

}  // namespace

TEST(Topology, InteractionsListedWithEachAtom) {
  const auto d = molecules();
  const auto t = md::bonded::per_atom_topology(d);
  EXPECT_EQ(t.bonds.max, 2);
  EXPECT_EQ(t.bonds.interactions(), 7u);
  EXPECT_EQ(t.angles.interactions(), 2u);
  EXPECT_EQ(t.dihedrals.interactions(), 1u);
  // Atom 3 (index 2): bonds 2-3 (role 1) and 3-4 (role 0, type 2).
  ASSERT_EQ(t.bonds.count[2], 2);
  const std::size_t s0 = 2 * static_cast<std::size_t>(t.bonds.max);
  EXPECT_EQ(t.bonds.role[s0], 1);
  EXPECT_EQ(t.bonds.ids[2 * s0], 2);
  EXPECT_EQ(t.bonds.type[s0 + 1], 2);
  EXPECT_EQ(t.bonds.role[s0 + 1], 0);
  EXPECT_EQ(t.bonds.ids[2 * (s0 + 1) + 1], 4);
  // Atom 3 is in both angles (roles 2 and 1) and the dihedral (role 2).
  EXPECT_EQ(t.angles.count[2], 2);
  EXPECT_EQ(t.dihedrals.count[2], 1);
  EXPECT_EQ(t.dihedrals.role[2 * static_cast<std::size_t>(t.dihedrals.max)], 2);
  EXPECT_EQ(t.dihedrals.count[4], 0);
}

TEST(Topology, SpecialNeighboursAlongTheBonds) {
  const auto d = molecules();
  const auto& s = md::bonded::per_atom_topology(d).special;
  // Chain end 1: 1-2 {2}, 1-3 {3}, 1-4 {4}.
  EXPECT_EQ(special_set(s, 0, 0, s.n12[0]), (std::set<std::int64_t>{2}));
  EXPECT_EQ(special_set(s, 0, s.n12[0], s.n13[0]), (std::set<std::int64_t>{3}));
  EXPECT_EQ(special_set(s, 0, s.n13[0], s.n14[0]), (std::set<std::int64_t>{4}));
  // Middle 3: 1-2 {2, 4}, 1-3 {1, 5}, no 1-4.
  EXPECT_EQ(special_set(s, 2, 0, s.n12[2]), (std::set<std::int64_t>{2, 4}));
  EXPECT_EQ(special_set(s, 2, s.n12[2], s.n13[2]), (std::set<std::int64_t>{1, 5}));
  EXPECT_EQ(s.n14[2], s.n13[2]);
  // Ring 6-7-8: each is 1-2 of the other two, nothing further.
  EXPECT_EQ(special_set(s, 5, 0, s.n12[5]), (std::set<std::int64_t>{7, 8}));
  EXPECT_EQ(s.n13[5], s.n12[5]);
  EXPECT_EQ(s.n14[5], s.n12[5]);
  EXPECT_EQ(s.n14[8], 0);  // atom 9: no bonds
}

TEST(Topology, KremerGrestMelt) {
  const auto d = io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/kg-small.data");
  const auto t = md::bonded::per_atom_topology(d);
  EXPECT_EQ(t.bonds.interactions(), d.bonds.count());
  std::size_t listed = 0;
  for (const int c : t.bonds.count) listed += static_cast<std::size_t>(c);
  EXPECT_EQ(listed, 2 * d.bonds.count());
  // 30 linear chains of 50: interior beads have 2 + 2 + 2 special neighbours, the ends 1 + 1 + 1.
  int interior = 0, ends = 0;
  for (std::size_t a = 0; a < d.natoms(); ++a) {
    const auto& s = t.special;
    if (s.n12[a] == 2) {
      ++interior;
      EXPECT_LE(s.n14[a], 6);
    } else {
      ++ends;
      EXPECT_EQ(s.n12[a], 1);
      EXPECT_EQ(s.n13[a], 2);
      EXPECT_EQ(s.n14[a], 3);
    }
  }
  EXPECT_EQ(ends, 60);
  EXPECT_EQ(interior, 1440);
  EXPECT_EQ(t.special.max, 6);
}
