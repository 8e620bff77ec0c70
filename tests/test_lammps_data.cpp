// io::parse_lammps_data / read_lammps_data: LAMMPS data files (atom_style atomic, orthogonal box).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <set>
#include <sstream>

#include "comm/errors.hpp"
#include "io/lammps_data.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1);

using spotrun::InputError;
using spotrun::io::LammpsData;
using spotrun::io::parse_lammps_data;
using Lines = std::vector<std::string>;

namespace {

std::string join(const Lines& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// 1-based number of the first line equal to text (for expected error positions).
int line_of(const Lines& lines, const std::string& text) {
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i] == text) return static_cast<int>(i) + 1;
  ADD_FAILURE() << "no line '" << text << "'";
  return -1;
}

std::string parse_error(const Lines& lines, const std::string& name = "t.data") {
  try {
    parse_lammps_data(join(lines), name);
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InputError, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected InputError, the text parsed:\n" << join(lines);
  return {};
}

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (part) << "' not in: " << (text)

// The error names "t.data:LINE:" for the line holding `at`.
#define EXPECT_ERROR_AT(lines, at, part)                                                   \
  do {                                                                                     \
    const std::string msg_ = parse_error(lines);                                           \
    EXPECT_CONTAINS(msg_, "t.data:" + std::to_string(line_of(lines, at)) + ":");           \
    EXPECT_CONTAINS(msg_, part);                                                           \
  } while (0)

// A small valid file: 4 atoms of 2 types, image flags, velocities in another order than the atoms.
Lines good_lines() {
  return {"LAMMPS data file for tests",
          "",
          "4 atoms",
          "2 atom types",
          "",
          "-5.0 5.0 xlo xhi",
          "0.0 10.0 ylo yhi",
          "0.0 8.0 zlo zhi",
          "",
          "Masses",
          "",
          "1 1.0",
          "2 39.948  # argon",
          "",
          "Atoms # atomic",
          "",
          "3 2 1.0 2.0 3.0 0 0 0",
          "1 1 -4.5 9.5 7.5 1 -1 0",
          "2 1 5.5 1.0 1.0 0 0 2",
          "4 1 0.0 0.0 0.0 0 0 0",
          "",
          "Velocities",
          "",
          "2 0.1 0.2 0.3",
          "1 -1 -2 -3",
          "4 0 0 0",
          "3 1e-3 2e-3 3e-3"};
}

// Index of atom id in d.
std::size_t at(const LammpsData& d, std::int64_t id) {
  for (std::size_t i = 0; i < d.natoms(); ++i)
    if (d.id[i] == id) return i;
  ADD_FAILURE() << "atom " << id << " missing";
  return 0;
}

}  // namespace

TEST(LammpsData, ParsesImageFlagsAndVelocities) {
  const LammpsData d = parse_lammps_data(join(good_lines()), "t.data");
  ASSERT_EQ(d.natoms(), 4u);
  EXPECT_EQ(d.ntypes, 2);
  EXPECT_EQ(d.lo, (std::array<double, 3>{-5, 0, 0}));
  EXPECT_EQ(d.hi, (std::array<double, 3>{5, 10, 8}));
  ASSERT_EQ(d.masses.size(), 2u);
  EXPECT_EQ(d.masses[0], 1.0);
  EXPECT_EQ(d.masses[1], 39.948);
  EXPECT_TRUE(d.has_velocities);
  ASSERT_EQ(d.x.size(), 12u);
  ASSERT_EQ(d.v.size(), 12u);
  ASSERT_EQ(d.image.size(), 12u);
  const std::size_t a1 = at(d, 1), a2 = at(d, 2), a3 = at(d, 3), a4 = at(d, 4);
  EXPECT_EQ(d.type[a3], 2);
  EXPECT_EQ(d.type[a1], 1);
  EXPECT_EQ(d.x[3 * a3 + 0], 1.0);
  EXPECT_EQ(d.x[3 * a3 + 2], 3.0);
  EXPECT_EQ(d.x[3 * a1 + 0], -4.5);
  EXPECT_EQ(d.x[3 * a1 + 1], 9.5);
  EXPECT_EQ(d.image[3 * a1 + 0], 1);
  EXPECT_EQ(d.image[3 * a1 + 1], -1);
  EXPECT_EQ(d.image[3 * a1 + 2], 0);
  // Atom 2 is outside the box in x (5.5 >= 5): wrapped to -4.5 with one more image.
  EXPECT_DOUBLE_EQ(d.x[3 * a2 + 0], -4.5);
  EXPECT_EQ(d.image[3 * a2 + 0], 1);
  EXPECT_EQ(d.image[3 * a2 + 2], 2);
  EXPECT_EQ(d.x[3 * a4 + 0], 0.0);
  // Velocities are matched by id, not by order.
  EXPECT_EQ(d.v[3 * a2 + 0], 0.1);
  EXPECT_EQ(d.v[3 * a2 + 2], 0.3);
  EXPECT_EQ(d.v[3 * a1 + 1], -2.0);
  EXPECT_EQ(d.v[3 * a3 + 2], 3e-3);
  EXPECT_EQ(d.v[3 * a4 + 0], 0.0);
}

TEST(LammpsData, ParsesWithoutImageFlagsOrVelocities) {
  Lines lines = good_lines();
  lines.resize(line_of(lines, "Velocities") - 1);  // drop the Velocities section
  // Drop the image flags.
  lines[line_of(lines, "3 2 1.0 2.0 3.0 0 0 0") - 1] = "3 2 1.0 2.0 3.0";
  lines[line_of(lines, "4 1 0.0 0.0 0.0 0 0 0") - 1] = "4 1 0.0 0.0 0.0";
  lines[line_of(lines, "1 1 -4.5 9.5 7.5 1 -1 0") - 1] = "1 1 -4.5 9.5 7.5";
  lines[line_of(lines, "2 1 5.5 1.0 1.0 0 0 2") - 1] = "2 1 5.5 1.0 -7.0";  // outside in x and z
  const LammpsData d = parse_lammps_data(join(lines), "t.data");
  ASSERT_EQ(d.natoms(), 4u);
  EXPECT_FALSE(d.has_velocities);
  EXPECT_EQ(d.v, std::vector<double>(12, 0.0));
  const std::size_t a1 = at(d, 1), a2 = at(d, 2), a3 = at(d, 3);
  EXPECT_EQ(d.image[3 * a1 + 0], 0);
  EXPECT_EQ(d.image[3 * a3 + 1], 0);
  EXPECT_DOUBLE_EQ(d.x[3 * a2 + 0], -4.5);
  EXPECT_EQ(d.image[3 * a2 + 0], 1);
  EXPECT_DOUBLE_EQ(d.x[3 * a2 + 2], 1.0);  // -7 + 8
  EXPECT_EQ(d.image[3 * a2 + 2], -1);
}

TEST(LammpsData, SkipsPairCoeffsAndComments) {
  Lines lines = good_lines();
  const int atoms = line_of(lines, "Atoms # atomic");
  lines.insert(lines.begin() + atoms - 1, {"Pair Coeffs # lj/cut", "", "1 1.0 1.0", "2 0.5 1.2", ""});
  lines.insert(lines.begin() + 2, "# a comment line");
  const LammpsData d = parse_lammps_data(join(lines), "t.data");
  EXPECT_EQ(d.natoms(), 4u);
  EXPECT_EQ(d.masses[1], 39.948);
}

TEST(LammpsData, WrongColumnCount) {
  Lines lines = good_lines();
  lines[line_of(lines, "2 1 5.5 1.0 1.0 0 0 2") - 1] = "2 1 5.5 1.0 1.0 0";
  EXPECT_ERROR_AT(lines, "2 1 5.5 1.0 1.0 0", "6 columns");
  Lines v = good_lines();
  v[line_of(v, "1 -1 -2 -3") - 1] = "1 -1 -2";
  EXPECT_ERROR_AT(v, "1 -1 -2", "Velocities");
  Lines m = good_lines();
  m[line_of(m, "1 1.0") - 1] = "1 1.0 2.0";
  EXPECT_ERROR_AT(m, "1 1.0 2.0", "Masses");
}

TEST(LammpsData, UnknownAtomType) {
  Lines lines = good_lines();
  lines[line_of(lines, "4 1 0.0 0.0 0.0 0 0 0") - 1] = "4 3 0.0 0.0 0.0 0 0 0";
  EXPECT_ERROR_AT(lines, "4 3 0.0 0.0 0.0 0 0 0", "atom type 3");
  Lines zero = good_lines();
  zero[line_of(zero, "4 1 0.0 0.0 0.0 0 0 0") - 1] = "4 0 0.0 0.0 0.0 0 0 0";
  EXPECT_ERROR_AT(zero, "4 0 0.0 0.0 0.0 0 0 0", "atom type 0");
}

TEST(LammpsData, DuplicateAtomId) {
  Lines lines = good_lines();
  lines[line_of(lines, "4 1 0.0 0.0 0.0 0 0 0") - 1] = "3 1 0.0 0.0 0.0 0 0 0";
  EXPECT_ERROR_AT(lines, "3 1 0.0 0.0 0.0 0 0 0", "duplicate atom id 3");
  Lines v = good_lines();
  v[line_of(v, "4 0 0 0") - 1] = "2 0 0 0";
  EXPECT_ERROR_AT(v, "2 0 0 0", "atom id 2");
  Lines u = good_lines();
  u[line_of(u, "4 0 0 0") - 1] = "7 0 0 0";
  EXPECT_ERROR_AT(u, "7 0 0 0", "unknown atom id 7");
}

TEST(LammpsData, MissingMassesIsAnError) {
  Lines lines = good_lines();
  const int m = line_of(lines, "Masses");
  lines.erase(lines.begin() + m - 1, lines.begin() + m + 4);
  const std::string msg = parse_error(lines);
  EXPECT_CONTAINS(msg, "t.data:");
  EXPECT_CONTAINS(msg, "Masses");
  EXPECT_CONTAINS(msg, "type 1");
  // Type 1 given twice, type 2 never.
  Lines one = good_lines();
  one[line_of(one, "2 39.948  # argon") - 1] = "1 2.0";
  const std::string msg2 = parse_error(one);
  EXPECT_CONTAINS(msg2, "t.data:");
  EXPECT_CONTAINS(msg2, "type 2");
}

TEST(LammpsData, FewerAtomsLinesThanDeclared) {
  // The file ends early: the error points at the Atoms section and says how many lines it expected.
  Lines lines = good_lines();
  lines.resize(line_of(lines, "4 1 0.0 0.0 0.0 0 0 0") - 1);
  EXPECT_ERROR_AT(lines, "Atoms # atomic", "expected 4");
  // Declared 5 atoms, 4 lines, then the Velocities section: the error is in the Atoms section (its
  // header or the line where the next section starts), never a silently shorter atom list.
  Lines more = good_lines();
  more[line_of(more, "4 atoms") - 1] = "5 atoms";
  const std::string msg = parse_error(more);
  const std::string atoms_line = "t.data:" + std::to_string(line_of(more, "Atoms # atomic")) + ":";
  const std::string next_line = "t.data:" + std::to_string(line_of(more, "Velocities")) + ":";
  EXPECT_TRUE(msg.find(atoms_line) != std::string::npos || msg.find(next_line) != std::string::npos) << msg;
  EXPECT_CONTAINS(msg, "Atoms");
}

TEST(LammpsData, TriclinicBoxIsRejected) {
  Lines lines = good_lines();
  lines.insert(lines.begin() + line_of(lines, "0.0 8.0 zlo zhi"), "0.5 0.0 0.0 xy xz yz");
  EXPECT_ERROR_AT(lines, "0.5 0.0 0.0 xy xz yz", "triclinic");
}

TEST(LammpsData, OtherErrorsNameTheLine) {
  Lines num = good_lines();
  num[line_of(num, "3 2 1.0 2.0 3.0 0 0 0") - 1] = "3 2 1.0 abc 3.0 0 0 0";
  EXPECT_ERROR_AT(num, "3 2 1.0 abc 3.0 0 0 0", "'abc'");
  Lines sec = good_lines();
  sec.insert(sec.end(), {"", "Bonds", "", "1 1 1 2"});
  EXPECT_ERROR_AT(sec, "Bonds", "Bonds");
  Lines box = good_lines();
  box[line_of(box, "0.0 10.0 ylo yhi") - 1] = "10.0 0.0 ylo yhi";
  EXPECT_ERROR_AT(box, "10.0 0.0 ylo yhi", "ylo");
  Lines style = good_lines();
  style[line_of(style, "Atoms # atomic") - 1] = "Atoms # full";
  EXPECT_ERROR_AT(style, "Atoms # full", "full");
  Lines nobox = good_lines();
  nobox.erase(nobox.begin() + line_of(nobox, "0.0 8.0 zlo zhi") - 1);
  EXPECT_CONTAINS(parse_error(nobox), "zlo zhi");
  EXPECT_CONTAINS(parse_error({"title", "", "2 atom types", "0 1 xlo xhi"}), "atoms");
}

// Coordinates are wrapped into [lo, hi), and x + image * L stays the position given in the file.
TEST(LammpsData, WrapJustBelowLoKeepsTheUnwrappedPosition) {
  // -1e-17 + 10 rounds to 10 == hi; the reader then puts the atom at lo, which is right, but it has
  // already decremented the image flag, which moves the unwrapped position by -L.
  const LammpsData d = parse_lammps_data(join({"t", "", "1 atoms", "1 atom types", "", "0 10 xlo xhi", "0 10 ylo yhi",
                                               "0 10 zlo zhi", "", "Masses", "", "1 1", "", "Atoms", "",
                                               "1 1 -1e-17 5 5 0 0 0"}),
                                         "t.data");
  ASSERT_EQ(d.natoms(), 1u);
  EXPECT_GE(d.x[0], 0.0);
  EXPECT_LT(d.x[0], 10.0);
  EXPECT_NEAR(d.x[0] + 10.0 * d.image[0], -1e-17, 1e-9)
      << std::setprecision(17) << "x = " << d.x[0] << ", image = " << d.image[0] << " (L = 10)";
}

TEST(LammpsData, WrapJustBelowHiStaysInsideTheBox) {
  // x = 4.999999999999999 (the double below hi = 5) in [-5, 5): (x - lo) / L rounds to 1, so the
  // reader subtracts L and lands below lo, outside the box.
  const LammpsData d = parse_lammps_data(join({"t", "", "1 atoms", "1 atom types", "", "-5 5 xlo xhi", "0 10 ylo yhi",
                                               "0 10 zlo zhi", "", "Masses", "", "1 1", "", "Atoms", "",
                                               "1 1 4.9999999999999991 5 5"}),
                                         "t.data");
  ASSERT_EQ(d.natoms(), 1u);
  EXPECT_GE(d.x[0], -5.0) << std::setprecision(17) << "x = " << d.x[0] << " is outside [lo, hi) = [-5, 5)";
  EXPECT_LT(d.x[0], 5.0);
  EXPECT_NEAR(d.x[0] + 10.0 * d.image[0], 4.9999999999999991, 1e-9);
}

TEST(LammpsData, ReadsTheLammpsReferenceData) {
  const LammpsData d = spotrun::io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/lj-small.data");
  ASSERT_EQ(d.natoms(), 864u);
  EXPECT_EQ(d.ntypes, 1);
  EXPECT_EQ(d.masses, std::vector<double>{1.0});
  EXPECT_TRUE(d.has_velocities);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(d.lo[k], 0.0);
    EXPECT_EQ(d.hi[k], 10.077577148295044);
  }
  std::set<std::int64_t> ids(d.id.begin(), d.id.end());
  EXPECT_EQ(ids.size(), 864u);
  EXPECT_EQ(*ids.begin(), 1);
  EXPECT_EQ(*ids.rbegin(), 864);
  for (std::size_t i = 0; i < 3 * d.natoms(); ++i) {
    ASSERT_GE(d.x[i], d.lo[i % 3]);
    ASSERT_LT(d.x[i], d.hi[i % 3]);
  }
  // "2 1 0.9680726876418593 1.0834077588998146 9.947501838841642 0 0 -1"
  const std::size_t a2 = at(d, 2);
  EXPECT_EQ(d.x[3 * a2 + 0], 0.9680726876418593);
  EXPECT_EQ(d.x[3 * a2 + 2], 9.947501838841642);
  EXPECT_EQ(d.image[3 * a2 + 2], -1);
  double vsum[3] = {0, 0, 0};
  for (std::size_t i = 0; i < d.natoms(); ++i)
    for (int k = 0; k < 3; ++k) vsum[k] += d.v[3 * i + k];
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(vsum[k], 0.0, 1e-10) << "LAMMPS velocities have zero momentum";

  const LammpsData n = spotrun::io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/lj-small-noimage.data");
  ASSERT_EQ(n.natoms(), 864u);
  EXPECT_FALSE(n.has_velocities);
  EXPECT_EQ(n.image, std::vector<int>(3 * 864, 0));
  for (std::size_t i = 0; i < n.natoms(); ++i) {
    const std::size_t j = at(d, n.id[i]);
    for (int k = 0; k < 3; ++k) ASSERT_EQ(n.x[3 * i + k], d.x[3 * j + k]) << "atom " << n.id[i];
  }
}

TEST(LammpsData, MissingFileNamesThePath) {
  try {
    spotrun::io::read_lammps_data("/nonexistent/dir/lj.data");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_CONTAINS(e.what(), "/nonexistent/dir/lj.data");
  }
}

// format_lammps_data() writes what parse_lammps_data() reads back exactly (two types, masses, image flags,
// velocities, 17 digits); format_xyz() writes one line per atom named by its type.
TEST(LammpsData, WrittenDataReadsBackExactly) {
  spotrun::io::LammpsData d;
  d.lo = {-1.5, 0.0, 0.1};
  d.hi = {2.0 / 3.0, 7.25, 3.0};
  d.ntypes = 2;
  d.masses = {1.0, 1.0 / 3.0};
  d.id = {7, 2, 40};
  d.type = {1, 2, 2};
  d.x = {0.1, 1.0 / 7.0, 0.2, -1.5, 7.0, 2.9999999999999996, 0.5, 3.25, 1.0};
  d.v = {1e-300, -2.5, 1.0 / 3.0, 0, 0, 0, 4, 5, 6};
  d.image = {0, -1, 2, 3, 0, 0, -7, 0, 1};
  d.has_velocities = true;
  const auto back = spotrun::io::parse_lammps_data(spotrun::io::format_lammps_data(d, "title"), "written");
  EXPECT_EQ(back.lo, d.lo);
  EXPECT_EQ(back.hi, d.hi);
  EXPECT_EQ(back.masses, d.masses);
  EXPECT_EQ(back.id, d.id);
  EXPECT_EQ(back.type, d.type);
  EXPECT_EQ(back.x, d.x);
  EXPECT_EQ(back.v, d.v);
  EXPECT_EQ(back.image, d.image);
  const std::string xyz = spotrun::io::format_xyz(d, {"A", "B"}, "Step=3");
  EXPECT_EQ(xyz.substr(0, 2), "3\n");
  EXPECT_NE(xyz.find("\nA 0.10000000000000001 0.14285714285714285 0.20000000000000001\n"), std::string::npos) << xyz;
  EXPECT_NE(xyz.find("\nB 0.5 3.25 1\n"), std::string::npos) << xyz;
}

// The molecular layout of OUTDIR/topology.data: "id molecule type x y z ix iy iz" with molecule 0, each
// mass followed by the type's name, and no Velocities section for a state without velocities.
TEST(LammpsData, TopologyLayoutIsMolecularWithTypeNames) {
  spotrun::io::LammpsData d;
  d.hi = {2.0, 3.0, 4.0};
  d.ntypes = 2;
  d.masses = {1.0, 2.5};
  d.id = {1, 2};
  d.type = {2, 1};
  d.x = {0.5, 1.0 / 3.0, 0.0, 1.5, 2.0, 3.75};
  d.image = {0, -1, 2, 1, 0, 0};
  const std::string text =
      spotrun::io::format_lammps_data(d, "topology", spotrun::io::LammpsDataStyle::Molecular, {"A", "B"});
  EXPECT_NE(text.find("\nMasses\n\n1 1 # A\n2 2.5 # B\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nAtoms # molecular\n\n1 0 2 0.5 0.33333333333333331 0 0 -1 2\n2 0 1 1.5 2 3.75 1 0 0\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("Velocities"), std::string::npos) << text;
  // The atomic layout (spotrun export) is unchanged: "id type x y z ix iy iz".
  const std::string atomic = spotrun::io::format_lammps_data(d, "export");
  EXPECT_NE(atomic.find("\nAtoms # atomic\n\n1 2 0.5 0.33333333333333331 0 0 -1 2\n"), std::string::npos) << atomic;
  EXPECT_NE(atomic.find("\nMasses\n\n1 1\n2 2.5\n"), std::string::npos) << atomic;
}

// --- molecular files: atom styles, topology, Coeffs ------------------------------------------------------

namespace {

// Five atoms of atom_style full in two molecules: a chain 1-2-3-4 (3 bonds, 2 angles, 1 dihedral, 1
// improper) and a single atom 5, with every Coeffs section.
Lines full_lines() {
  return {"molecular test file",
          "",
          "5 atoms",
          "2 atom types",
          "3 bonds",
          "2 bond types",
          "2 angles",
          "1 angle types",
          "1 dihedrals",
          "1 dihedral types",
          "1 impropers",
          "1 improper types",
          "2 extra bond per atom",
          "",
          "0.0 10.0 xlo xhi",
          "0.0 10.0 ylo yhi",
          "0.0 10.0 zlo zhi",
          "",
          "Masses",
          "",
          "1 1.0",
          "2 2.0",
          "",
          "Pair Coeffs # lj/cut",
          "",
          "1 1.0 1.0",
          "2 0.5 1.2",
          "",
          "Bond Coeffs # fene",
          "",
          "1 30.0 1.5 1.0 1.0",
          "2 30.0 1.5 1.0 1.0",
          "",
          "Angle Coeffs # harmonic",
          "",
          "1 5.0 109.5",
          "",
          "Dihedral Coeffs # opls",
          "",
          "1 1.0 0.5 0.25 0.0",
          "",
          "Improper Coeffs # harmonic",
          "",
          "1 10.0 0.0",
          "",
          "Atoms # full",
          "",
          "1 7 1 -0.5 1.0 1.0 1.0 0 0 0",
          "2 7 2 0.5 2.0 1.0 1.0 0 0 0",
          "3 7 1 0.0 3.0 1.0 1.0 0 0 0",
          "4 7 1 0.0 3.0 2.0 1.0 0 0 0",
          "5 8 2 0.0 9.5 9.0 9.0 0 0 1",
          "",
          "Bonds",
          "",
          "1 1 1 2",
          "2 2 2 3",
          "3 1 3 4",
          "",
          "Angles",
          "",
          "1 1 1 2 3",
          "2 1 2 3 4",
          "",
          "Dihedrals",
          "",
          "1 1 1 2 3 4",
          "",
          "Impropers",
          "",
          "1 1 2 1 3 4"};
}

void replace_line(Lines& lines, const std::string& from, const std::string& to) {
  lines[static_cast<std::size_t>(line_of(lines, from) - 1)] = to;
}

}  // namespace

TEST(LammpsData, FullStyleWithTopologyAndCoeffs) {
  const LammpsData d = parse_lammps_data(join(full_lines()), "t.data");
  EXPECT_EQ(d.atom_style, spotrun::io::AtomStyle::Full);
  ASSERT_EQ(d.natoms(), 5u);
  EXPECT_EQ(d.molecule, (std::vector<std::int64_t>{7, 7, 7, 7, 8}));
  EXPECT_EQ(d.q, (std::vector<double>{-0.5, 0.5, 0.0, 0.0, 0.0}));
  EXPECT_EQ(d.type[1], 2);
  EXPECT_EQ(d.x[3 * 4 + 2], 9.0);
  EXPECT_EQ(d.image[3 * 4 + 2], 1);
  EXPECT_EQ(d.bonds.ntypes, 2);
  EXPECT_EQ(d.bonds.type, (std::vector<int>{1, 2, 1}));
  EXPECT_EQ(d.bonds.atoms, (std::vector<std::int64_t>{1, 2, 2, 3, 3, 4}));
  EXPECT_EQ(d.angles.atoms, (std::vector<std::int64_t>{1, 2, 3, 2, 3, 4}));
  EXPECT_EQ(d.dihedrals.atoms, (std::vector<std::int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(d.impropers.atoms, (std::vector<std::int64_t>{2, 1, 3, 4}));
  EXPECT_TRUE(d.has_topology());
  EXPECT_EQ(d.bond_coeffs.style, "fene");
  EXPECT_EQ(d.bond_coeffs.rows[1], (std::vector<double>{30.0, 1.5, 1.0, 1.0}));
  EXPECT_EQ(d.angle_coeffs.rows[0], (std::vector<double>{5.0, 109.5}));
  EXPECT_EQ(d.dihedral_coeffs.style, "opls");
  EXPECT_EQ(d.improper_coeffs.rows[0], (std::vector<double>{10.0, 0.0}));
  EXPECT_EQ(d.pair_coeffs.style, "lj/cut");
  EXPECT_EQ(d.pair_coeffs.rows[1], (std::vector<double>{0.5, 1.2}));
  EXPECT_FALSE(d.pair_ij_coeffs.present);
}

// The other styles' columns; the style from the deck where the file does not name it.
TEST(LammpsData, AtomStylesAndTheirColumns) {
  using spotrun::io::AtomStyle;
  const Lines base{"t", "", "2 atoms", "1 atom types", "0 10 xlo xhi", "0 10 ylo yhi", "0 10 zlo zhi", "",
                   "Masses", "", "1 1.0", ""};
  auto with = [&](const std::string& header, const Lines& rows) {
    Lines l = base;
    l.push_back(header);
    l.push_back("");
    l.insert(l.end(), rows.begin(), rows.end());
    return l;
  };
  LammpsData c = parse_lammps_data(join(with("Atoms # charge", {"1 1 -1.0 1 1 1", "2 1 1.0 2 2 2 0 1 0"})), "t.data");
  EXPECT_EQ(c.q, (std::vector<double>{-1.0, 1.0}));
  EXPECT_EQ(c.image[4], 1);
  LammpsData m = parse_lammps_data(join(with("Atoms # molecular", {"1 3 1 1 1 1", "2 4 1 2 2 2"})), "t.data");
  EXPECT_EQ(m.molecule, (std::vector<std::int64_t>{3, 4}));
  // No comment: the declared style; none declared: atomic, and the message says how to name another.
  const Lines bare = with("Atoms", {"1 3 1 1 1 1", "2 4 1 2 2 2"});
  LammpsData b = parse_lammps_data(join(bare), "t.data", AtomStyle::Bond);
  EXPECT_EQ(b.atom_style, AtomStyle::Bond);
  EXPECT_EQ(b.molecule[1], 4);
  EXPECT_CONTAINS(parse_error(bare), "atom_style atomic), got 6 columns; a file of another atom style names it after "
                                     "'Atoms #' or in md.initial.atom_style");
  // The comment and the deck disagree.
  const std::string e = [&] {
    try {
      parse_lammps_data(join(with("Atoms # molecular", {"1 3 1 1 1 1", "2 4 1 2 2 2"})), "t.data", AtomStyle::Full);
    } catch (const InputError& x) {
      return std::string(x.what());
    }
    return std::string();
  }();
  EXPECT_EQ(e, "t.data:13: the Atoms section is 'molecular' but md.initial.atom_style is 'full'; make them agree");
  EXPECT_CONTAINS(parse_error(with("Atoms # sphere", {"1 1 1 1 1", "2 1 2 2 2"})),
                  "t.data:13: Atoms section style 'sphere' is not supported; allowed: atomic, bond, angle, molecular, "
                  "charge, full");
}

TEST(LammpsData, TopologyErrorsNameTheLine) {
  Lines unknown = full_lines();
  replace_line(unknown, "2 2 2 3", "2 2 2 9");
  EXPECT_ERROR_AT(unknown, "2 2 2 9", "Bonds line names atom id 9, which the Atoms section has not");
  Lines twice = full_lines();
  replace_line(twice, "1 1 1 2 3", "1 1 1 2 1");
  EXPECT_ERROR_AT(twice, "1 1 1 2 1", "Angles line names atom id 1 twice");
  Lines type = full_lines();
  replace_line(type, "3 1 3 4", "3 3 3 4");
  EXPECT_ERROR_AT(type, "3 3 3 4", "bond type 3 out of range 1..2");
  Lines cols = full_lines();
  replace_line(cols, "1 1 1 2 3 4", "1 1 1 2 3 4 5");
  EXPECT_ERROR_AT(cols, "1 1 1 2 3 4 5", "Dihedrals line needs 'id type' and 4 atom ids, got 7 columns");
  Lines missing = full_lines();
  missing.erase(missing.end() - 4, missing.end());  // the Impropers section
  EXPECT_ERROR_AT(missing, "1 impropers", "the header says 1 impropers but the file has no Impropers section");
  Lines atomic = full_lines();
  replace_line(atomic, "Atoms # full", "Atoms # bond");
  // Without the charge column: atom_style bond.
  replace_line(atomic, "1 7 1 -0.5 1.0 1.0 1.0 0 0 0", "1 7 1 1.0 1.0 1.0 0 0 0");
  replace_line(atomic, "2 7 2 0.5 2.0 1.0 1.0 0 0 0", "2 7 2 2.0 1.0 1.0 0 0 0");
  replace_line(atomic, "3 7 1 0.0 3.0 1.0 1.0 0 0 0", "3 7 1 3.0 1.0 1.0 0 0 0");
  replace_line(atomic, "4 7 1 0.0 3.0 2.0 1.0 0 0 0", "4 7 1 3.0 2.0 1.0 0 0 0");
  replace_line(atomic, "5 8 2 0.0 9.5 9.0 9.0 0 0 1", "5 8 2 9.5 9.0 9.0 0 0 1");
  EXPECT_ERROR_AT(atomic, "2 angles", "atom_style bond holds no angles (atom styles angle, molecular or full do)");
  Lines before = full_lines();
  const auto bonds_at = before.begin() + line_of(before, "Bonds") - 1;
  Lines bonds(bonds_at, bonds_at + 6);
  before.erase(bonds_at, bonds_at + 6);
  before.insert(before.begin() + line_of(before, "Atoms # full") - 1, bonds.begin(), bonds.end());
  EXPECT_ERROR_AT(before, "Bonds", "Bonds section before the Atoms section");
  Lines coeff = full_lines();
  replace_line(coeff, "2 30.0 1.5 1.0 1.0", "1 31.0 1.5 1.0 1.0");
  EXPECT_ERROR_AT(coeff, "1 31.0 1.5 1.0 1.0", "Bond Coeffs: type 1 given twice");
  Lines cross = full_lines();
  replace_line(cross, "Improper Coeffs # harmonic", "BondBond Coeffs");
  EXPECT_ERROR_AT(cross, "BondBond Coeffs", "class2 cross terms are not supported");
  Lines dup = full_lines();
  replace_line(dup, "5 8 2 0.0 9.5 9.0 9.0 0 0 1", "4 8 2 0.0 9.5 9.0 9.0 0 0 1");
  EXPECT_ERROR_AT(dup, "4 8 2 0.0 9.5 9.0 9.0 0 0 1", "duplicate atom id 4");
}

// The molecular references of tests/data (README.md): LAMMPS's own write_data output reads.
TEST(LammpsData, ReadsTheMolecularReferences) {
  using spotrun::io::read_lammps_data;
  const std::string dir = SPOTRUN_TEST_DATA_DIR;
  const LammpsData kg = read_lammps_data(dir + "/kg-small.data");
  EXPECT_EQ(kg.atom_style, spotrun::io::AtomStyle::Bond);
  EXPECT_EQ(kg.natoms(), 1500u);
  EXPECT_EQ(kg.bonds.count(), 1470u);
  EXPECT_EQ(*std::max_element(kg.molecule.begin(), kg.molecule.end()), 30);
  EXPECT_TRUE(kg.has_velocities);
  const LammpsData semi = read_lammps_data(dir + "/semiflexible-small.data");
  EXPECT_EQ(semi.atom_style, spotrun::io::AtomStyle::Angle);
  EXPECT_EQ(semi.bonds.count(), 1470u);
  EXPECT_EQ(semi.angles.count(), 1440u);
  EXPECT_EQ(semi.angles.width, 3);
}
