#include "lammps_data.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "comm/errors.hpp"
#include "comm/number_text.hpp"
#include "comm/process_grid.hpp"

namespace spotrun::io {

namespace {

// The four kinds of topology, in the order of the header, the Coeffs sections and the sections after Atoms.
const char* const k_kind_counts[4] = {"bonds", "angles", "dihedrals", "impropers"};
const char* const k_kind_types[4] = {"bond", "angle", "dihedral", "improper"};
const char* const k_kind_sections[4] = {"Bonds", "Angles", "Dihedrals", "Impropers"};
const char* const k_kind_coeffs[4] = {"Bond", "Angle", "Dihedral", "Improper"};

std::array<const LammpsTopology*, 4> kinds_of(const LammpsData& d) {
  return {&d.bonds, &d.angles, &d.dihedrals, &d.impropers};
}
std::array<const LammpsCoeffs*, 4> kind_coeffs_of(const LammpsData& d) {
  return {&d.bond_coeffs, &d.angle_coeffs, &d.dihedral_coeffs, &d.improper_coeffs};
}

// A kind the file has: interactions, or types in the header ("1 bond types" with no bond yet).
bool has_kind(const LammpsTopology& t) { return t.count() > 0 || t.ntypes > 0; }

bool any_nonzero_molecule(const LammpsData& d) {
  for (const auto m : d.molecule)
    if (m != 0) return true;
  return false;
}
bool any_nonzero_charge(const LammpsData& d) {
  for (const auto q : d.q)
    if (q != 0) return true;
  return false;
}

// Parts of d that disagree, which would give a file LAMMPS refuses or reads otherwise: std::invalid_argument.
void check_writable(const LammpsData& d) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("format_lammps_data: " + what); };
  const std::size_t n = d.natoms();
  if (d.type.size() != n || d.x.size() != 3 * n || d.image.size() != 3 * n || (d.has_velocities && d.v.size() != 3 * n))
    fail("the atoms' columns have other lengths than " + std::to_string(n) + " ids (type, x, image, v)");
  if (!d.molecule.empty() && d.molecule.size() != n)
    fail(std::to_string(d.molecule.size()) + " molecule ids for " + std::to_string(n) +
         " atoms (one per atom, or none)");
  if (!d.q.empty() && d.q.size() != n)
    fail(std::to_string(d.q.size()) + " charges for " + std::to_string(n) + " atoms (one per atom, or none)");
  if (d.masses.size() != static_cast<std::size_t>(d.ntypes))
    fail(std::to_string(d.masses.size()) + " masses for " + std::to_string(d.ntypes) + " atom types");
  const auto kinds = kinds_of(d);
  const auto coeffs = kind_coeffs_of(d);
  for (int k = 0; k < 4; ++k) {
    const LammpsTopology& t = *kinds[k];
    if (t.atoms.size() != t.count() * static_cast<std::size_t>(t.width))
      fail(std::string(k_kind_sections[k]) + ": " + std::to_string(t.atoms.size()) + " atom ids for " +
           std::to_string(t.count()) + " " + k_kind_counts[k] + " of " + std::to_string(t.width) + " atoms");
    for (const int type : t.type)
      if (type < 1 || type > t.ntypes)
        fail(std::string(k_kind_types[k]) + " type " + std::to_string(type) + " out of range 1.." +
             std::to_string(t.ntypes));
    if (coeffs[k]->present && coeffs[k]->rows.size() != static_cast<std::size_t>(t.ntypes))
      fail(std::string(k_kind_coeffs[k]) + " Coeffs: " + std::to_string(coeffs[k]->rows.size()) + " rows for " +
           std::to_string(t.ntypes) + " " + k_kind_types[k] + " types (one per type)");
  }
  const std::size_t nt = static_cast<std::size_t>(d.ntypes);
  if (d.pair_coeffs.present && d.pair_coeffs.rows.size() != nt)
    fail("Pair Coeffs: " + std::to_string(d.pair_coeffs.rows.size()) + " rows for " + std::to_string(nt) +
         " atom types (one per type)");
  if (d.pair_ij_coeffs.present && d.pair_ij_coeffs.rows.size() != nt * (nt + 1) / 2)
    fail("PairIJ Coeffs: " + std::to_string(d.pair_ij_coeffs.rows.size()) + " rows for " + std::to_string(nt) +
         " atom types (one per pair i <= j: " + std::to_string(nt * (nt + 1) / 2) + ")");
}

// "\nBond Coeffs # fene\n\n1 30 1.5 1 1\n..." (PairIJ: "i j" per row, i = 1..n, j = i..n); nothing when absent.
void write_coeffs(std::ostringstream& o, const std::string& word, const LammpsCoeffs& c, int ntypes, bool ij) {
  if (!c.present) return;
  o << "\n" << word << " Coeffs";
  if (!c.style.empty()) o << " # " << c.style;
  o << "\n\n";
  std::size_t row = 0;
  for (int i = 1; i <= ntypes; ++i) {
    const int last = ij ? ntypes : i;
    for (int j = i; j <= last; ++j, ++row) {
      o << i;
      if (ij) o << " " << j;
      for (const double v : c.rows[row]) o << " " << exact(v);
      o << "\n";
    }
  }
}

}  // namespace

AtomStyle atom_style_to_write(const LammpsData& d) {
  AtomStyleHolds need = atom_style_holds(d.atom_style);
  need.molecule = need.molecule || any_nonzero_molecule(d);
  need.charge = need.charge || any_nonzero_charge(d);
  const auto kinds = kinds_of(d);
  for (int k = 0; k < 4; ++k)
    if (has_kind(*kinds[k])) need.kinds = std::max(need.kinds, k == 3 ? 4 : k + 1);
  // The styles from the fewest columns and kinds to the most; the first that holds everything.
  for (const AtomStyle s : {AtomStyle::Atomic, AtomStyle::Charge, AtomStyle::Bond, AtomStyle::Angle,
                            AtomStyle::Molecular, AtomStyle::Full}) {
    const AtomStyleHolds h = atom_style_holds(s);
    if ((h.molecule || !need.molecule) && (h.charge || !need.charge) && h.kinds >= need.kinds) return s;
  }
  return AtomStyle::Full;
}

std::string format_lammps_data(const LammpsData& d, const std::string& title, LammpsDataStyle style,
                               const std::vector<std::string>& type_names) {
  check_writable(d);
  const AtomStyle atom_style = style == LammpsDataStyle::Molecular ? AtomStyle::Molecular : atom_style_to_write(d);
  const AtomStyleHolds cols = atom_style_holds(atom_style);
  const auto kinds = kinds_of(d);
  const auto coeffs = kind_coeffs_of(d);
  std::ostringstream o;
  o << title << "\n\n" << d.natoms() << " atoms\n" << d.ntypes << " atom types\n";
  for (int k = 0; k < 4; ++k)
    if (has_kind(*kinds[k]))
      o << kinds[k]->count() << " " << k_kind_counts[k] << "\n"
        << kinds[k]->ntypes << " " << k_kind_types[k] << " types\n";
  o << "\n";
  const char* names[3] = {"x", "y", "z"};
  for (int k = 0; k < 3; ++k) o << exact(d.lo[k]) << " " << exact(d.hi[k]) << " " << names[k] << "lo " << names[k] << "hi\n";
  o << "\nMasses\n\n";
  for (int t = 0; t < d.ntypes; ++t) {
    o << t + 1 << " " << exact(d.masses[t]);
    if (static_cast<std::size_t>(t) < type_names.size()) o << " # " << type_names[t];
    o << "\n";
  }
  // The Coeffs sections in LAMMPS write_data's order, before Atoms.
  write_coeffs(o, "Pair", d.pair_coeffs, d.ntypes, false);
  write_coeffs(o, "PairIJ", d.pair_ij_coeffs, d.ntypes, true);
  for (int k = 0; k < 4; ++k) write_coeffs(o, k_kind_coeffs[k], *coeffs[k], kinds[k]->ntypes, false);
  o << "\nAtoms # " << atom_style_name(atom_style) << "\n\n";
  for (std::size_t a = 0; a < d.natoms(); ++a) {
    o << d.id[a] << " ";
    if (cols.molecule) o << (d.molecule.empty() ? 0 : d.molecule[a]) << " ";  // molecule-ID 0: in no molecule
    o << d.type[a] << " ";
    if (cols.charge) o << exact(d.q.empty() ? 0.0 : d.q[a]) << " ";
    o << exact(d.x[3 * a]) << " " << exact(d.x[3 * a + 1]) << " " << exact(d.x[3 * a + 2]) << " "
      << d.image[3 * a] << " " << d.image[3 * a + 1] << " " << d.image[3 * a + 2] << "\n";
  }
  if (d.has_velocities) {
    o << "\nVelocities\n\n";
    for (std::size_t a = 0; a < d.natoms(); ++a)
      o << d.id[a] << " " << exact(d.v[3 * a]) << " " << exact(d.v[3 * a + 1]) << " " << exact(d.v[3 * a + 2]) << "\n";
  }
  // "id type atom1 atom2 ...": ids 1.. in d's order (LAMMPS does not keep them).
  for (int k = 0; k < 4; ++k) {
    const LammpsTopology& t = *kinds[k];
    if (t.count() == 0) continue;
    o << "\n" << k_kind_sections[k] << "\n\n";
    const std::size_t w = static_cast<std::size_t>(t.width);
    for (std::size_t i = 0; i < t.count(); ++i) {
      o << i + 1 << " " << t.type[i];
      for (std::size_t a = 0; a < w; ++a) o << " " << t.atoms[i * w + a];
      o << "\n";
    }
  }
  return o.str();
}

std::string format_xyz(const LammpsData& d, const std::vector<std::string>& names, const std::string& comment) {
  std::ostringstream o;
  o << d.natoms() << "\n";
  o << "Lattice=\"" << exact(d.hi[0] - d.lo[0]) << " 0 0 0 " << exact(d.hi[1] - d.lo[1]) << " 0 0 0 "
    << exact(d.hi[2] - d.lo[2]) << "\" Origin=\"" << exact(d.lo[0]) << " " << exact(d.lo[1]) << " " << exact(d.lo[2])
    << "\" Properties=species:S:1:pos:R:3 pbc=\"T T T\" " << comment << "\n";
  for (std::size_t a = 0; a < d.natoms(); ++a)
    o << names.at(static_cast<std::size_t>(d.type[a] - 1)) << " " << exact(d.x[3 * a]) << " " << exact(d.x[3 * a + 1])
      << " " << exact(d.x[3 * a + 2]) << "\n";
  return o.str();
}

LammpsData read_lammps_data(const std::string& path, std::optional<AtomStyle> declared) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open LAMMPS data file '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return parse_lammps_data(s.str(), path, declared);
}

}  // namespace spotrun::io
