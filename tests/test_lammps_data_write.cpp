// io::format_lammps_data of molecular systems (part of test_lammps_data): the smallest atom style that holds
// the data, the topology and Coeffs sections, read back by parse_lammps_data() exactly (the Kremer-Grest and
// semiflexible references of tests/data and a hand-made full-style molecule with dihedrals and charges), and
// by LAMMPS (Debian's lmp: read_data, then write_data read back) with the same counts, atoms, topology and
// coefficients; the LAMMPS tests skip where lmp is absent.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/child_process.hpp"
#include "io/lammps_data.hpp"
#include "support/mpi_test.hpp"

extern char** environ;

namespace {

using spotrun::io::AtomStyle;
using spotrun::io::format_lammps_data;
using spotrun::io::LammpsCoeffs;
using spotrun::io::LammpsData;
using spotrun::io::LammpsDataStyle;
using spotrun::io::LammpsTopology;
using spotrun::io::parse_lammps_data;

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (part) << "' not in: " << (text)

LammpsData reference(const std::string& name) {
  return spotrun::io::read_lammps_data(std::string(SPOTRUN_TEST_DATA_DIR) + "/" + name);
}

LammpsCoeffs coeffs(const std::string& style, std::vector<std::vector<double>> rows) {
  LammpsCoeffs c;
  c.present = true;
  c.style = style;
  c.rows = std::move(rows);
  return c;
}

// Six atoms of atom_style full, ids out of order: a chain 10-3-4-5-6 in molecule 1 (4 bonds of 2 types, 3
// angles, 2 dihedrals, 1 improper) and an ion 21 in molecule 2; charges and coefficients that need 17
// digits, image flags, velocities, and every Coeffs section of a LAMMPS input with these styles.
LammpsData full_molecule() {
  LammpsData d;
  d.lo = {-2.0, 0.0, -3.0};
  d.hi = {8.0, 6.0, 3.0};
  d.ntypes = 2;
  d.masses = {12.011, 1.008 / 3.0};
  d.atom_style = AtomStyle::Full;
  d.id = {10, 3, 4, 5, 6, 21};
  d.type = {1, 1, 2, 1, 1, 2};
  d.molecule = {1, 1, 1, 1, 1, 2};
  d.q = {-0.25, 0.5, -1.0 / 3.0, 1.0 / 3.0, -0.25, 0.1};
  d.x = {0.1, 1.0, 1.0,  1.0 / 7.0, 1.5, 1.0,  2.0, 2.0 / 3.0, 1.5,  3.0, 1.25, 2.0,
         4.0, 1.0, 2.75, 7.5, 5.5, -2.5};
  d.image = {0, 0, 0, 1, 0, -1, 0, 0, 0, -2, 3, 0, 0, 0, 0, 0, 1, 0};
  d.v = {0.5, -0.25, 1e-300, 0, 0, 0, 1.0 / 3.0, 2, -3, 4, 5, 6, -1, -1, -1, 0.125, 0, 0};
  d.has_velocities = true;
  d.bonds = LammpsTopology{2, 2, {1, 2, 1, 2}, {10, 3, 3, 4, 4, 5, 5, 6}};
  d.angles = LammpsTopology{2, 3, {1, 1, 2}, {10, 3, 4, 3, 4, 5, 4, 5, 6}};
  d.dihedrals = LammpsTopology{2, 4, {1, 2}, {10, 3, 4, 5, 3, 4, 5, 6}};
  d.impropers = LammpsTopology{1, 4, {1}, {4, 3, 5, 6}};
  d.pair_coeffs = coeffs("lj/cut", {{0.1, 3.4}, {0.03, 2.5}});
  d.bond_coeffs = coeffs("harmonic", {{300.0, 1.0}, {250.5, 1.1 / 3.0}});
  d.angle_coeffs = coeffs("harmonic", {{50.0, 109.47}, {40.0, 120.0}});
  d.dihedral_coeffs = coeffs("opls", {{1.3, -0.05, 0.2, 0.0}, {0.5, 0.25, -0.125, 0.0625}});
  d.improper_coeffs = coeffs("harmonic", {{10.0, 0.0}});
  return d;
}

// The Kremer-Grest melt with its FENE coefficients, and the semiflexible one with cosine angles.
LammpsData kg_with_coeffs() {
  LammpsData d = reference("kg-small.data");
  d.bond_coeffs = coeffs("fene", {{30.0, 1.5, 1.0, 1.0}});
  return d;
}
LammpsData semiflexible_with_coeffs() {
  LammpsData d = reference("semiflexible-small.data");
  d.bond_coeffs = coeffs("fene", {{30.0, 1.5, 1.0, 1.0}});
  d.angle_coeffs = coeffs("cosine", {{1.5}});
  return d;
}

void expect_same_topology(const LammpsTopology& a, const LammpsTopology& b, const std::string& what) {
  EXPECT_EQ(a.ntypes, b.ntypes) << what;
  EXPECT_EQ(a.width, b.width) << what;
  EXPECT_EQ(a.type, b.type) << what;
  EXPECT_EQ(a.atoms, b.atoms) << what;
}

// Coeffs sections alike but for the header's line number, a place in the file rather than data.
void expect_same_coeffs(const LammpsCoeffs& a, const LammpsCoeffs& b, const std::string& what) {
  EXPECT_EQ(a.present, b.present) << what;
  EXPECT_EQ(a.style, b.style) << what;
  EXPECT_EQ(a.rows, b.rows) << what;
}

// parse_lammps_data(format_lammps_data(d)) == d: every member, bit for bit.
void expect_same(const LammpsData& a, const LammpsData& b, const std::string& what) {
  EXPECT_EQ(a.lo, b.lo) << what;
  EXPECT_EQ(a.hi, b.hi) << what;
  EXPECT_EQ(a.ntypes, b.ntypes) << what;
  EXPECT_EQ(a.masses, b.masses) << what;
  EXPECT_EQ(a.id, b.id) << what;
  EXPECT_EQ(a.type, b.type) << what;
  EXPECT_EQ(a.x, b.x) << what;
  EXPECT_EQ(a.v, b.v) << what;
  EXPECT_EQ(a.image, b.image) << what;
  EXPECT_EQ(a.has_velocities, b.has_velocities) << what;
  EXPECT_EQ(a.atom_style, b.atom_style) << what;
  EXPECT_EQ(a.molecule, b.molecule) << what;
  EXPECT_EQ(a.q, b.q) << what;
  expect_same_topology(a.bonds, b.bonds, what + ": bonds");
  expect_same_topology(a.angles, b.angles, what + ": angles");
  expect_same_topology(a.dihedrals, b.dihedrals, what + ": dihedrals");
  expect_same_topology(a.impropers, b.impropers, what + ": impropers");
  expect_same_coeffs(a.pair_coeffs, b.pair_coeffs, what + ": Pair Coeffs");
  expect_same_coeffs(a.pair_ij_coeffs, b.pair_ij_coeffs, what + ": PairIJ Coeffs");
  expect_same_coeffs(a.bond_coeffs, b.bond_coeffs, what + ": Bond Coeffs");
  expect_same_coeffs(a.angle_coeffs, b.angle_coeffs, what + ": Angle Coeffs");
  expect_same_coeffs(a.dihedral_coeffs, b.dihedral_coeffs, what + ": Dihedral Coeffs");
  expect_same_coeffs(a.improper_coeffs, b.improper_coeffs, what + ": Improper Coeffs");
}

std::string format_error(const LammpsData& d) {
  try {
    format_lammps_data(d, "t");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "format_lammps_data wrote a file of inconsistent data";
  return {};
}

}  // namespace

TEST(LammpsDataWrite, MolecularDataReadsBackExactly) {
  const std::vector<std::pair<std::string, LammpsData>> cases = {
      {"kg-small.data", reference("kg-small.data")},
      {"semiflexible-small.data", reference("semiflexible-small.data")},
      {"kg-small.data with FENE coefficients", kg_with_coeffs()},
      {"semiflexible-small.data with coefficients", semiflexible_with_coeffs()},
      {"the full-style molecule", full_molecule()}};
  for (const auto& [name, d] : cases) {
    const std::string text = format_lammps_data(d, "written by the test");
    expect_same(parse_lammps_data(text, name), d, name);
  }
  const std::string kg = format_lammps_data(kg_with_coeffs(), "kg");
  EXPECT_CONTAINS(kg, "\n1500 atoms\n1 atom types\n1470 bonds\n1 bond types\n\n");
  EXPECT_CONTAINS(kg, "\nBond Coeffs # fene\n\n1 30 1.5 1 1\n\nAtoms # bond\n\n");
  const std::string semi = format_lammps_data(semiflexible_with_coeffs(), "semi");
  EXPECT_CONTAINS(semi, "\n1470 bonds\n1 bond types\n1440 angles\n1 angle types\n\n");
  EXPECT_CONTAINS(semi, "\nAngle Coeffs # cosine\n\n1 1.5\n\nAtoms # angle\n\n");
  const std::string full = format_lammps_data(full_molecule(), "full");
  EXPECT_CONTAINS(full, "\n6 atoms\n2 atom types\n4 bonds\n2 bond types\n3 angles\n2 angle types\n2 dihedrals\n"
                        "2 dihedral types\n1 impropers\n1 improper types\n\n");
  EXPECT_CONTAINS(full, "\nAtoms # full\n\n10 1 1 -0.25 0.10000000000000001 1 1 0 0 0\n");
  EXPECT_CONTAINS(full, "\nBond Coeffs # harmonic\n\n1 300 1\n2 250.5 0.3666666666666667\n");
  EXPECT_CONTAINS(full, "\nBonds\n\n1 1 10 3\n2 2 3 4\n3 1 4 5\n4 2 5 6\n");
  EXPECT_CONTAINS(full, "\nDihedrals\n\n1 1 10 3 4 5\n2 2 3 4 5 6\n\nImpropers\n\n1 1 4 3 5 6\n");
  // The sections in LAMMPS write_data's order.
  std::size_t at = 0;
  for (const char* section : {"\nMasses\n", "\nPair Coeffs # lj/cut\n", "\nBond Coeffs # harmonic\n",
                              "\nAngle Coeffs # harmonic\n", "\nDihedral Coeffs # opls\n",
                              "\nImproper Coeffs # harmonic\n", "\nAtoms # full\n", "\nVelocities\n", "\nBonds\n",
                              "\nAngles\n", "\nDihedrals\n", "\nImpropers\n"}) {
    const std::size_t next = full.find(section, at);
    EXPECT_NE(next, std::string::npos) << "no '" << section << "' after offset " << at << " in:\n" << full;
    if (next != std::string::npos) at = next;
  }
}

// The style written: the smallest that holds the data and d.atom_style's columns.
TEST(LammpsDataWrite, SmallestStyleThatHoldsTheData) {
  using spotrun::io::atom_style_to_write;
  LammpsData d;
  d.ntypes = 1;
  d.masses = {1.0};
  d.id = {1, 2};
  d.type = {1, 1};
  d.x.assign(6, 1.0);
  d.image.assign(6, 0);
  d.hi = {2, 2, 2};
  EXPECT_EQ(atom_style_to_write(d), AtomStyle::Atomic);
  d.molecule = {0, 0};
  d.q = {0.0, 0.0};
  EXPECT_EQ(atom_style_to_write(d), AtomStyle::Atomic) << "zero molecule ids and charges need no column";
  LammpsData charged = d;
  charged.q = {0.5, -0.5};
  EXPECT_EQ(atom_style_to_write(charged), AtomStyle::Charge);
  LammpsData molecules = d;
  molecules.molecule = {1, 2};
  EXPECT_EQ(atom_style_to_write(molecules), AtomStyle::Bond);
  LammpsData bonded = d;
  bonded.bonds = LammpsTopology{1, 2, {1}, {1, 2}};
  EXPECT_EQ(atom_style_to_write(bonded), AtomStyle::Bond);
  LammpsData typed = d;
  typed.angles.ntypes = 1;  // angle types, no angle yet
  EXPECT_EQ(atom_style_to_write(typed), AtomStyle::Angle);
  LammpsData impropers = d;
  impropers.impropers.ntypes = 1;
  EXPECT_EQ(atom_style_to_write(impropers), AtomStyle::Molecular);
  bonded.q = {0.5, -0.5};
  EXPECT_EQ(atom_style_to_write(bonded), AtomStyle::Full);
  LammpsData declared = d;
  declared.atom_style = AtomStyle::Angle;
  EXPECT_EQ(atom_style_to_write(declared), AtomStyle::Angle) << "the style read is kept";
  declared.q = {0.5, -0.5};
  EXPECT_EQ(atom_style_to_write(declared), AtomStyle::Full);
  EXPECT_CONTAINS(format_lammps_data(charged, "t"), "\nAtoms # charge\n\n1 1 0.5 1 1 1 0 0 0\n2 1 -0.5 1 1 1 0 0 0\n");
  EXPECT_CONTAINS(format_lammps_data(molecules, "t"), "\nAtoms # bond\n\n1 1 1 1 1 1 0 0 0\n2 2 1 1 1 1 0 0 0\n");
  EXPECT_CONTAINS(format_lammps_data(typed, "t"), "\n0 angles\n1 angle types\n\n");
  EXPECT_EQ(format_lammps_data(typed, "t").find("\nAngles\n"), std::string::npos) << "no section for no angle";
}

// OUTDIR/topology.data's layout: molecular with the molecule ids and the topology, without the charges.
TEST(LammpsDataWrite, MolecularLayoutCarriesTheTopology) {
  const std::string text = format_lammps_data(full_molecule(), "topology", LammpsDataStyle::Molecular);
  EXPECT_CONTAINS(text, "\nAtoms # molecular\n\n10 1 1 0.10000000000000001 1 1 0 0 0\n");
  EXPECT_CONTAINS(text, "\nBonds\n\n1 1 10 3\n");
  const LammpsData back = parse_lammps_data(text, "topology.data");
  EXPECT_EQ(back.atom_style, AtomStyle::Molecular);
  EXPECT_EQ(back.molecule, full_molecule().molecule);
  EXPECT_EQ(back.q, std::vector<double>(6, 0.0));
  expect_same_topology(back.dihedrals, full_molecule().dihedrals, "dihedrals");
}

// Parts that disagree: no file, a message naming the part.
TEST(LammpsDataWrite, InconsistentDataIsRefused) {
  LammpsData atoms = full_molecule();
  atoms.bonds.atoms.pop_back();
  EXPECT_CONTAINS(format_error(atoms), "Bonds: 7 atom ids for 4 bonds of 2 atoms");
  LammpsData type = full_molecule();
  type.angles.type[1] = 3;
  EXPECT_CONTAINS(format_error(type), "angle type 3 out of range 1..2");
  LammpsData rows = full_molecule();
  rows.dihedral_coeffs.rows.pop_back();
  EXPECT_CONTAINS(format_error(rows), "Dihedral Coeffs: 1 rows for 2 dihedral types (one per type)");
  LammpsData charges = full_molecule();
  charges.q.pop_back();
  EXPECT_CONTAINS(format_error(charges), "5 charges for 6 atoms (one per atom, or none)");
  LammpsData pair = full_molecule();
  pair.pair_coeffs.rows.push_back({1.0, 1.0});
  EXPECT_CONTAINS(format_error(pair), "Pair Coeffs: 3 rows for 2 atom types (one per type)");
}

// --- LAMMPS reads the written files --------------------------------------------------------------------

namespace {

// Debian's LAMMPS: $SPOTRUN_LMP where set (empty: none), else the lmp the build found (tests/CMakeLists.txt);
// "" when that is no executable.
std::string lmp_path() {
  const char* env = std::getenv("SPOTRUN_LMP");
  const char* p = env ? env : SPOTRUN_LMP_BUILT;
  return *p && ::access(p, X_OK) == 0 ? p : "";
}

// This process's environment without the variables of its MPI job: lmp is an MPI program that would take
// them for its own (it runs as a singleton of its own instead).
std::vector<std::string> environment_without_mpi() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string v = *e;
    const bool root_allowed = v.rfind("OMPI_ALLOW_RUN_AS_ROOT", 0) == 0;
    bool mpi = false;
    for (const char* prefix : {"OMPI_", "PMIX_", "OPAL_", "ORTE_", "PMI_"}) mpi = mpi || v.rfind(prefix, 0) == 0;
    if (!mpi || root_allowed) env.push_back(v);
  }
  return env;
}

// Runs `lmp -in INPUT` in no shell; its exit status (-1: it did not start), its output in `output`.
int run_lmp(const std::string& lmp, const std::string& input, const std::string& log, std::string& output) {
  const std::vector<std::string> env = environment_without_mpi();
  spotrun::io::SpawnOptions options;
  options.environment = &env;
  options.merge_stderr = true;
  const auto child =
      spotrun::io::spawn_with_pipes({lmp, "-in", input, "-log", log, "-screen", "none", "-nocite"}, options);
  if (child.pid < 0) return -1;
  char buf[4096];
  for (;;) {
    const ssize_t got = ::read(child.out, buf, sizeof buf);
    if (got > 0) {
      output.append(buf, static_cast<std::size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(child.out);
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The interactions of a kind as sorted "type atoms..." rows (LAMMPS keeps each with one of its atoms and
// writes them in its own order).
std::vector<std::vector<std::int64_t>> sorted_rows(const LammpsTopology& t) {
  std::vector<std::vector<std::int64_t>> rows;
  const std::size_t w = static_cast<std::size_t>(t.width);
  for (std::size_t i = 0; i < t.count(); ++i) {
    std::vector<std::int64_t> r{t.type[i]};
    r.insert(r.end(), t.atoms.begin() + static_cast<std::ptrdiff_t>(i * w),
             t.atoms.begin() + static_cast<std::ptrdiff_t>((i + 1) * w));
    rows.push_back(std::move(r));
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

// LAMMPS writes coefficients with 6 significant digits (%g).
void expect_close_coeffs(const LammpsCoeffs& lammps, const LammpsCoeffs& ours, const std::string& what) {
  EXPECT_EQ(lammps.present, ours.present) << what;
  EXPECT_EQ(lammps.style, ours.style) << what;
  ASSERT_EQ(lammps.rows.size(), ours.rows.size()) << what;
  for (std::size_t r = 0; r < ours.rows.size(); ++r) {
    ASSERT_EQ(lammps.rows[r].size(), ours.rows[r].size()) << what << " row " << r + 1;
    for (std::size_t k = 0; k < ours.rows[r].size(); ++k)
      EXPECT_NEAR(lammps.rows[r][k], ours.rows[r][k], 1e-5 * std::abs(ours.rows[r][k])) << what << " row " << r + 1;
  }
}

// LAMMPS reads the file written of d (with the styles of its Coeffs sections defined first, as LAMMPS
// needs), reports d's counts, and writes a data file (write_data) that holds d's atoms, topology and
// coefficients.
void expect_lammps_reads(const std::string& lmp, const LammpsData& d, const std::string& name) {
  SCOPED_TRACE(name);
  char tmpl[] = "/tmp/spotrun-lammps-data.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string style = spotrun::io::atom_style_name(spotrun::io::atom_style_to_write(d));
  {
    std::ofstream(dir + "/written.data") << format_lammps_data(d, "written by the test of " + name);
    std::ofstream in(dir + "/in.check");
    in << "units lj\natom_style " << style << "\n";
    if (d.pair_coeffs.present) in << "pair_style " << d.pair_coeffs.style << " 2.5\n";
    const std::pair<const char*, const LammpsCoeffs*> styles[] = {
        {"bond", &d.bond_coeffs}, {"angle", &d.angle_coeffs}, {"dihedral", &d.dihedral_coeffs},
        {"improper", &d.improper_coeffs}};
    for (const auto& [kind, c] : styles)
      if (c->present) in << kind << "_style " << c->style << "\n";
    in << "read_data " << dir << "/written.data\n"
       << "print \"SPOTRUN_COUNTS $(atoms) $(bonds) $(angles) $(dihedrals) $(impropers)\"\n"
       << "write_data " << dir << "/back.data\n";
  }
  std::string output;
  const int status = run_lmp(lmp, dir + "/in.check", dir + "/log.lammps", output);
  const std::string log = read_text(dir + "/log.lammps");
  ASSERT_EQ(status, 0) << lmp << " failed; its output:\n" << output << "\nlog.lammps:\n" << log;
  const auto at = log.find("\nSPOTRUN_COUNTS ");
  ASSERT_NE(at, std::string::npos) << "no counts in log.lammps:\n" << log;
  std::istringstream counts(log.substr(at + 16));
  long long n[5] = {-1, -1, -1, -1, -1};
  for (auto& c : n) counts >> c;
  EXPECT_EQ(n[0], static_cast<long long>(d.natoms())) << "atoms";
  EXPECT_EQ(n[1], static_cast<long long>(d.bonds.count())) << "bonds";
  EXPECT_EQ(n[2], static_cast<long long>(d.angles.count())) << "angles";
  EXPECT_EQ(n[3], static_cast<long long>(d.dihedrals.count())) << "dihedrals";
  EXPECT_EQ(n[4], static_cast<long long>(d.impropers.count())) << "impropers";
  const LammpsData back = parse_lammps_data(read_text(dir + "/back.data"), dir + "/back.data");
  EXPECT_EQ(spotrun::io::atom_style_name(back.atom_style), style);
  ASSERT_EQ(back.natoms(), d.natoms());
  std::map<std::int64_t, std::size_t> row;
  for (std::size_t a = 0; a < back.natoms(); ++a) row[back.id[a]] = a;
  for (std::size_t a = 0; a < d.natoms(); ++a) {
    ASSERT_EQ(row.count(d.id[a]), 1u) << "atom " << d.id[a] << " missing";
    const std::size_t b = row[d.id[a]];
    EXPECT_EQ(back.type[b], d.type[a]) << "atom " << d.id[a];
    EXPECT_EQ(back.molecule[b], d.molecule.empty() ? 0 : d.molecule[a]) << "atom " << d.id[a];
    EXPECT_EQ(back.q[b], d.q.empty() ? 0.0 : d.q[a]) << "atom " << d.id[a];
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(back.x[3 * b + k], d.x[3 * a + k]) << "atom " << d.id[a];
      EXPECT_EQ(back.image[3 * b + k], d.image[3 * a + k]) << "atom " << d.id[a];
      EXPECT_EQ(back.v[3 * b + k], d.v[3 * a + k]) << "atom " << d.id[a];
    }
  }
  EXPECT_EQ(sorted_rows(back.bonds), sorted_rows(d.bonds));
  EXPECT_EQ(sorted_rows(back.angles), sorted_rows(d.angles));
  EXPECT_EQ(sorted_rows(back.dihedrals), sorted_rows(d.dihedrals));
  EXPECT_EQ(sorted_rows(back.impropers), sorted_rows(d.impropers));
  expect_close_coeffs(back.pair_coeffs, d.pair_coeffs, "Pair Coeffs");
  expect_close_coeffs(back.bond_coeffs, d.bond_coeffs, "Bond Coeffs");
  expect_close_coeffs(back.angle_coeffs, d.angle_coeffs, "Angle Coeffs");
  expect_close_coeffs(back.dihedral_coeffs, d.dihedral_coeffs, "Dihedral Coeffs");
  expect_close_coeffs(back.improper_coeffs, d.improper_coeffs, "Improper Coeffs");
  std::filesystem::remove_all(dir);
}

}  // namespace

TEST(LammpsDataLmp, LammpsReadsTheWrittenFiles) {
  const std::string lmp = lmp_path();
  if (lmp.empty()) GTEST_SKIP() << "lmp not found (Debian: lammps; or set SPOTRUN_LMP)";
  expect_lammps_reads(lmp, kg_with_coeffs(), "kg-small.data with FENE coefficients");
  expect_lammps_reads(lmp, semiflexible_with_coeffs(), "semiflexible-small.data with coefficients");
  expect_lammps_reads(lmp, full_molecule(), "the full-style molecule");
}
