// `spotrun export` of MD checkpoints (solvers/md/md_export.cpp) from hand-made states whose arrays hold every
// row: atoms alone export as before (atom_style atomic, no command); molecules give the molecule ids, each
// interaction once from the per-atom datasets (/md/bond, /md/angle, /md/dihedral) in the order of its first
// atom's id then slot, the Coeffs of the checkpoint's scalars and the LAMMPS commands the file needs; the
// file written reads back; rows of another layout are refused naming the dataset and atom.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/errors.hpp"
#include "io/lammps_data.hpp"
#include "solvers/md/md_export.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1);

using spotrun::InputError;
using spotrun::io::StateArray;
using spotrun::io::SolverState;

namespace {

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (part) << "' not in: " << (text)

StateArray i64_array(const std::string& name, std::vector<std::uint64_t> inner, std::vector<std::int64_t> values,
                     std::uint64_t rows) {
  StateArray a = StateArray::layout(name, std::move(inner), true, rows);
  a.rows = rows;
  a.i64 = std::move(values);
  return a;
}
StateArray f64_array(const std::string& name, std::vector<double> values, std::uint64_t rows) {
  StateArray a = StateArray::layout(name, {3}, false, rows);
  a.rows = rows;
  a.f64 = std::move(values);
  return a;
}

// Five atoms of one type in a box of 10, ids 1..5: the datasets and scalars an LJ checkpoint has.
SolverState atoms_state() {
  SolverState st;
  st.solver = "md";
  const std::uint64_t n = 5;
  std::vector<double> x, v;
  for (std::uint64_t a = 0; a < n; ++a) {
    x.insert(x.end(), {1.0 + static_cast<double>(a), 2.0, 3.0});
    v.insert(v.end(), {0.5, -0.25, static_cast<double>(a) / 3.0});
  }
  st.arrays.push_back(i64_array("/md/id", {}, {1, 2, 3, 4, 5}, n));
  st.arrays.push_back(f64_array("/md/x", x, n));
  st.arrays.push_back(f64_array("/md/v", v, n));
  st.arrays.push_back(i64_array("/md/image", {3}, std::vector<std::int64_t>(3 * n, 0), n));
  st.arrays.push_back(i64_array("/md/type", {}, {1, 1, 1, 1, 1}, n));
  for (const char* k : {"x", "y", "z"}) {
    st.reals[std::string("md.box.lo_") + k] = 0.0;
    st.reals[std::string("md.box.hi_") + k] = 10.0;
  }
  st.integers["md.ntypes"] = 1;
  st.reals["md.mass.1"] = 1.0;
  return st;
}

// A row of per-atom interactions: the count, then type and ids per slot, padded to `max` slots of width.
std::vector<std::int64_t> row(int max, int width, const std::vector<std::vector<std::int64_t>>& slots) {
  std::vector<std::int64_t> r{static_cast<std::int64_t>(slots.size())};
  for (const auto& s : slots) r.insert(r.end(), s.begin(), s.end());
  r.resize(1 + static_cast<std::size_t>(max) * static_cast<std::size_t>(width + 1), 0);
  return r;
}
std::vector<std::int64_t> rows_of(const std::vector<std::vector<std::int64_t>>& rows) {
  std::vector<std::int64_t> all;
  for (const auto& r : rows) all.insert(all.end(), r.begin(), r.end());
  return all;
}

// The chain 1-2-3-4 in molecule 1 (bond types 1 2 1, angles of type 1, one dihedral of type 2) and atom 5
// alone in molecule 2, as the per-atom datasets hold it (each interaction in the row of every one of its
// atoms, in no particular slot), with FENE, cosine and OPLS coefficients and special_bonds.
SolverState molecules_state() {
  SolverState st = atoms_state();
  st.arrays.push_back(i64_array("/md/molecule", {}, {1, 1, 1, 1, 2}, 5));
  st.arrays.push_back(i64_array("/md/bond", {7},
                                rows_of({row(2, 2, {{1, 1, 2}}), row(2, 2, {{2, 2, 3}, {1, 1, 2}}),
                                         row(2, 2, {{2, 2, 3}, {1, 3, 4}}), row(2, 2, {{1, 3, 4}}), row(2, 2, {})}),
                                5));
  st.arrays.push_back(i64_array("/md/angle", {13},
                                rows_of({row(3, 3, {{1, 1, 2, 3}}), row(3, 3, {{1, 1, 2, 3}, {1, 2, 3, 4}}),
                                         row(3, 3, {{1, 2, 3, 4}, {1, 1, 2, 3}}), row(3, 3, {{1, 2, 3, 4}}),
                                         row(3, 3, {})}),
                                5));
  st.arrays.push_back(i64_array("/md/dihedral", {6},
                                rows_of({row(1, 4, {{2, 1, 2, 3, 4}}), row(1, 4, {{2, 1, 2, 3, 4}}),
                                         row(1, 4, {{2, 1, 2, 3, 4}}), row(1, 4, {{2, 1, 2, 3, 4}}), row(1, 4, {})}),
                                5));
  st.strings["md.bond.style"] = "fene";
  st.integers["md.bond.ntypes"] = 2;
  for (int t = 1; t <= 2; ++t) {
    const std::string p = "md.bond.coeff." + std::to_string(t) + ".";
    st.reals[p + "1"] = 30.0;
    st.reals[p + "2"] = 1.5;
    st.reals[p + "3"] = 1.0;
    st.reals[p + "4"] = t == 1 ? 1.0 : 1.0 / 3.0;
  }
  st.strings["md.angle.style"] = "cosine";
  st.integers["md.angle.ntypes"] = 1;
  st.reals["md.angle.coeff.1.1"] = 1.5;
  st.strings["md.dihedral.style"] = "opls";
  st.integers["md.dihedral.ntypes"] = 2;
  for (int t = 1; t <= 2; ++t)
    for (int k = 1; k <= 4; ++k)
      st.reals["md.dihedral.coeff." + std::to_string(t) + "." + std::to_string(k)] = t * 0.5 + k;
  const double lj[3] = {0.0, 1.0, 1.0}, coul[3] = {0.0, 0.0, 0.5};
  for (int n = 1; n <= 3; ++n) {
    st.reals["md.special_bonds.lj." + std::to_string(n)] = lj[n - 1];
    st.reals["md.special_bonds.coul." + std::to_string(n)] = coul[n - 1];
  }
  return st;
}

std::string export_error(const SolverState& st) {
  try {
    spotrun::md::export_system(st, nullptr);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "the state exported";
  return {};
}

StateArray& array(SolverState& st, const std::string& name) {
  for (auto& a : st.arrays)
    if (a.name == name) return a;
  throw std::logic_error("no " + name);
}

}  // namespace

// An LJ checkpoint: no molecule, no topology, no command; the file is atom_style atomic as before.
TEST(MdExport, AtomsAloneExportAsBefore) {
  const auto sys = spotrun::md::export_system(atoms_state(), nullptr);
  EXPECT_TRUE(sys.data.molecule.empty());
  EXPECT_FALSE(sys.data.has_topology());
  EXPECT_FALSE(sys.data.bond_coeffs.present);
  EXPECT_TRUE(sys.lammps_commands.empty());
  EXPECT_EQ(spotrun::io::atom_style_to_write(sys.data), spotrun::io::AtomStyle::Atomic);
  const std::string text = spotrun::io::format_lammps_data(sys.data, "t");
  EXPECT_CONTAINS(text, "\n5 atoms\n1 atom types\n\n");
  EXPECT_CONTAINS(text, "\nAtoms # atomic\n\n1 1 1 2 3 0 0 0\n");
}

// Molecules: each interaction once, in the order of its first atom's id then slot, types and Coeffs from
// the scalars, the commands LAMMPS needs; the file written reads back with all of it.
TEST(MdExport, MoleculesWithTopologyAndCoeffs) {
  const auto sys = spotrun::md::export_system(molecules_state(), nullptr);
  const spotrun::io::LammpsData& d = sys.data;
  EXPECT_EQ(d.molecule, (std::vector<std::int64_t>{1, 1, 1, 1, 2}));
  EXPECT_EQ(d.bonds.ntypes, 2);
  EXPECT_EQ(d.bonds.type, (std::vector<int>{1, 2, 1}));
  EXPECT_EQ(d.bonds.atoms, (std::vector<std::int64_t>{1, 2, 2, 3, 3, 4}));
  EXPECT_EQ(d.angles.ntypes, 1);
  EXPECT_EQ(d.angles.atoms, (std::vector<std::int64_t>{1, 2, 3, 2, 3, 4}));
  EXPECT_EQ(d.dihedrals.ntypes, 2) << "the run's types, type 1 without a dihedral";
  EXPECT_EQ(d.dihedrals.type, (std::vector<int>{2}));
  EXPECT_EQ(d.dihedrals.atoms, (std::vector<std::int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(d.impropers.count(), 0u);
  EXPECT_EQ(d.bond_coeffs.style, "fene");
  EXPECT_EQ(d.bond_coeffs.rows, (std::vector<std::vector<double>>{{30, 1.5, 1, 1}, {30, 1.5, 1, 1.0 / 3.0}}));
  EXPECT_EQ(d.angle_coeffs.rows, (std::vector<std::vector<double>>{{1.5}}));
  EXPECT_EQ(d.dihedral_coeffs.style, "opls");
  EXPECT_EQ(d.dihedral_coeffs.rows[1], (std::vector<double>{2, 3, 4, 5}));
  EXPECT_EQ(sys.lammps_commands, (std::vector<std::string>{"bond_style fene", "angle_style cosine",
                                                           "dihedral_style opls",
                                                           "special_bonds lj 0 1 1"}));
  EXPECT_EQ(spotrun::io::atom_style_to_write(d), spotrun::io::AtomStyle::Molecular);
  const std::string text = spotrun::io::format_lammps_data(d, "t");
  EXPECT_CONTAINS(text, "\n5 atoms\n1 atom types\n3 bonds\n2 bond types\n2 angles\n1 angle types\n1 dihedrals\n"
                        "2 dihedral types\n\n");
  EXPECT_CONTAINS(text, "\nBond Coeffs # fene\n\n1 30 1.5 1 1\n2 30 1.5 1 0.33333333333333331\n");
  EXPECT_CONTAINS(text, "\nAtoms # molecular\n\n1 1 1 1 2 3 0 0 0\n");
  EXPECT_CONTAINS(text, "\nBonds\n\n1 1 1 2\n2 2 2 3\n3 1 3 4\n");
  const spotrun::io::LammpsData back = spotrun::io::parse_lammps_data(text, "exported");
  EXPECT_EQ(back.molecule, d.molecule);
  EXPECT_EQ(back.bonds.atoms, d.bonds.atoms);
  EXPECT_EQ(back.dihedral_coeffs.rows, d.dihedral_coeffs.rows);
  EXPECT_EQ(back.v, d.v);
}

// Bonds alone, no scalar: the types from the rows, no Coeffs, atom_style bond.
TEST(MdExport, BondsWithoutScalars) {
  SolverState st = molecules_state();
  st.arrays.erase(st.arrays.end() - 2, st.arrays.end());  // the angles and dihedrals
  st.strings.clear();
  for (const char* kind : {"bond", "angle", "dihedral"}) st.integers.erase(std::string("md.") + kind + ".ntypes");
  const auto sys = spotrun::md::export_system(st, nullptr);
  EXPECT_EQ(sys.data.bonds.ntypes, 2);
  EXPECT_FALSE(sys.data.bond_coeffs.present);
  EXPECT_EQ(sys.lammps_commands, (std::vector<std::string>{"special_bonds lj 0 1 1"}));
  EXPECT_EQ(spotrun::io::atom_style_to_write(sys.data), spotrun::io::AtomStyle::Bond);
}

// Damaged or inconsistent states: refused, naming the dataset or scalar, the atom and what is allowed.
TEST(MdExport, BadTopologyIsRefused) {
  SolverState width = molecules_state();
  array(width, "/md/bond").inner = {6};
  EXPECT_CONTAINS(export_error(width), "checkpoint dataset /md/bond has rows of 6 int64 values; a row of "
                                       "interactions of 2 atoms is int64 [1 + max * 3]");
  SolverState count = molecules_state();
  array(count, "/md/bond").i64[7] = 3;  // atom 2's count
  EXPECT_CONTAINS(export_error(count), "checkpoint dataset /md/bond: atom 2 has 3 interactions, allowed 0..2");
  SolverState other = molecules_state();
  array(other, "/md/angle").i64[13 * 4 + 0] = 1;  // atom 5 claims an angle that does not name it
  array(other, "/md/angle").i64[13 * 4 + 1] = 1;
  array(other, "/md/angle").i64[13 * 4 + 2] = 1;
  array(other, "/md/angle").i64[13 * 4 + 3] = 2;
  array(other, "/md/angle").i64[13 * 4 + 4] = 3;
  EXPECT_CONTAINS(export_error(other), "checkpoint dataset /md/angle: atom 5: interaction 1 does not name the atom");
  SolverState type = molecules_state();
  array(type, "/md/bond").i64[1] = 0;
  EXPECT_CONTAINS(export_error(type), "checkpoint dataset /md/bond: atom 1: interaction 1 has type 0 (types are 1 or "
                                      "more)");
  SolverState ntypes = molecules_state();
  ntypes.integers["md.bond.ntypes"] = 1;
  EXPECT_CONTAINS(export_error(ntypes), "checkpoint attribute md.bond.ntypes = 1, but /md/bond holds bond type 2");
  SolverState coeffs = molecules_state();
  coeffs.reals.erase("md.bond.coeff.2.1");
  EXPECT_CONTAINS(export_error(coeffs), "checkpoint has md.bond.style = 'fene' but no coefficients of bond type 2 "
                                        "(attribute md.bond.coeff.2.1)");
  SolverState molecule = molecules_state();
  array(molecule, "/md/molecule").i64.pop_back();
  EXPECT_CONTAINS(export_error(molecule), "checkpoint dataset /md/molecule has 4 values for 5 atoms");
}
