#pragma once
// Reader and writer of LAMMPS data files: orthogonal box, Masses, Atoms of atom_style atomic, bond, angle,
// molecular, charge or full, with or without image flags, optional Velocities, the topology sections (Bonds,
// Angles, Dihedrals, Impropers) and the Coeffs sections (Pair, PairIJ, Bond, Angle, Dihedral, Improper), kept
// as numbers for the solver to interpret with its styles. Errors name the file and line and what was expected.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace spotrun::io {

// LAMMPS atom styles of the Atoms section (columns without the three optional image flags):
//   atomic: id type x y z             charge: id type q x y z
//   bond, angle, molecular: id mol type x y z (bond: Bonds only; angle: Bonds and Angles; molecular: all)
//   full: id mol type q x y z (all topology)
enum class AtomStyle { Atomic, Bond, Angle, Molecular, Charge, Full };
const char* atom_style_name(AtomStyle s);
// The style of a name ("full"), or nullopt.
std::optional<AtomStyle> atom_style_from_name(const std::string& name);
// The names of every style, for messages: "atomic", "bond", ...
std::vector<std::string> atom_style_names();

// One kind of bonded interaction: Bonds (2 atoms each), Angles (3), Dihedrals (4), Impropers (4).
struct LammpsTopology {
  int ntypes = 0;                   // the header's "N bond types" (angle, dihedral, improper)
  int width = 2;                    // atoms per interaction
  std::vector<int> type;            // 1..ntypes, one per interaction in file order
  std::vector<std::int64_t> atoms;  // width atom ids per interaction, in the file's order
  std::size_t count() const { return type.size(); }
};

// A Coeffs section as numbers: the style its header comment names ("Bond Coeffs # fene": "fene"; "" when
// none) and, per type, the numbers after the type (PairIJ Coeffs: per pair i <= j, the numbers after i j,
// in the order i = 1..n, j = i..n).
struct LammpsCoeffs {
  bool present = false;
  std::size_t line = 0;  // the section's header line
  std::string style;
  std::vector<std::vector<double>> rows;
};

struct LammpsData {
  std::array<double, 3> lo{0, 0, 0};
  std::array<double, 3> hi{0, 0, 0};
  int ntypes = 0;
  std::vector<double> masses;     // masses[type - 1]
  std::vector<std::int64_t> id;   // atom ids (>= 1, unique)
  std::vector<int> type;          // 1..ntypes
  std::vector<double> x;          // 3 per atom, wrapped into [lo, hi)
  std::vector<double> v;          // 3 per atom; zero when the file has no Velocities
  std::vector<int> image;         // 3 per atom
  bool has_velocities = false;
  AtomStyle atom_style = AtomStyle::Atomic;
  std::vector<std::int64_t> molecule;  // per atom: its molecule id (0: none, or a style without them)
  std::vector<double> q;               // per atom: its charge (0 for a style without charges)
  LammpsTopology bonds{0, 2, {}, {}}, angles{0, 3, {}, {}}, dihedrals{0, 4, {}, {}}, impropers{0, 4, {}, {}};
  LammpsCoeffs pair_coeffs, pair_ij_coeffs, bond_coeffs, angle_coeffs, dihedral_coeffs, improper_coeffs;
  std::size_t natoms() const { return id.size(); }
  bool has_topology() const { return bonds.count() + angles.count() + dihedrals.count() + impropers.count() > 0; }
};

// What the Atoms rows of a style hold: a molecule column, a charge column, and how many of the topology kinds
// (bonds, angles, dihedrals, impropers, in that order) its files may have: 0, 1 (bond), 2 (angle) or 4.
struct AtomStyleHolds {
  bool molecule = false;
  bool charge = false;
  int kinds = 0;
};
AtomStyleHolds atom_style_holds(AtomStyle s);
// The smallest atom style that holds d: the columns of d.atom_style, a molecule column when an atom has a
// molecule id, a charge column when an atom has a charge (either nonzero), and every kind of topology d has
// (interactions, or types in the header). Atoms alone: atomic; charges alone: charge; bonds: bond (with
// charges: full); angles: angle; dihedrals or impropers: molecular.
AtomStyle atom_style_to_write(const LammpsData& d);

// The Atoms section's style format_lammps_data() writes:
// - Smallest: atom_style_to_write(d), so that LAMMPS read_data (with that atom_style) reads every number
//   of d, and parse_lammps_data() gives d back (spotrun export);
// - Molecular: "id molecule type x y z ix iy iz" (molecule 0: in none), the layout MDAnalysis reads without
//   being told the style, with the topology sections but no charges (OUTDIR/topology.data).
enum class LammpsDataStyle { Smallest, Molecular };
// The text of a data file of `d` that LAMMPS read_data reads, every number exact (17 significant digits):
// the header (atoms, atom types, and for each kind of topology d has "N bonds", "N bond types"), the box,
// Masses, the Coeffs sections d carries (present: "Bond Coeffs # fene" and a row per type), Atoms with
// image flags ("Atoms # full"), Velocities when d.has_velocities, then Bonds, Angles, Dihedrals, Impropers
// ("id type atom1 atom2 ...", ids 1.. in d's order). A Coeffs section needs its style defined before
// read_data in LAMMPS (bond_style fene). title: the first line; type_names: a comment after each mass
// ("1 1 # A"), if given. std::invalid_argument for a d whose parts disagree (a topology's atoms not width
// per interaction, a type out of range, Coeffs rows not one per type, molecule or q not one per atom).
std::string format_lammps_data(const LammpsData& d, const std::string& title,
                               LammpsDataStyle style = LammpsDataStyle::Smallest,
                               const std::vector<std::string>& type_names = {});
// Extended XYZ of `d` (one frame): the atom count, a comment line with the box (Lattice) and properties,
// then "NAME x y z" per atom, NAME the type's name (names[type - 1]).
std::string format_xyz(const LammpsData& d, const std::vector<std::string>& names, const std::string& comment);

// Parses a data file; throws InputError "FILE:LINE: ..." on any problem. The atom style: the Atoms
// section's comment ("Atoms # full"), else `declared` (md.initial.atom_style), else atomic; InputError when
// both are given and differ.
LammpsData read_lammps_data(const std::string& path, std::optional<AtomStyle> declared = std::nullopt);
// Same, from text already in memory (name is used in messages).
LammpsData parse_lammps_data(const std::string& text, const std::string& name,
                             std::optional<AtomStyle> declared = std::nullopt);

}  // namespace spotrun::io
