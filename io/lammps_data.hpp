#pragma once
// Reader of LAMMPS data files: atom_style atomic, orthogonal box, Masses, Atoms with or without image
// flags, optional Velocities. Errors name the file and line.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace spotrun::io {

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
  std::size_t natoms() const { return id.size(); }
};

// The Atoms section's style: atomic (id type x y z ix iy iz), or molecular (id molecule type x y z ix iy iz,
// molecule 0: in none), the layout MDAnalysis reads without being told the style (OUTDIR/topology.data).
enum class LammpsDataStyle { Atomic, Molecular };
// The text of a data file of `d` that LAMMPS read_data reads (header, Masses, Atoms with image flags, and
// Velocities when d.has_velocities), every number exact (17 significant digits); read_lammps_data() reads
// the atomic style. title: the first line; type_names: a comment after each mass ("1 1 # A"), if given.
std::string format_lammps_data(const LammpsData& d, const std::string& title,
                               LammpsDataStyle style = LammpsDataStyle::Atomic,
                               const std::vector<std::string>& type_names = {});
// Extended XYZ of `d` (one frame): the atom count, a comment line with the box (Lattice) and properties,
// then "NAME x y z" per atom, NAME the type's name (names[type - 1]).
std::string format_xyz(const LammpsData& d, const std::vector<std::string>& names, const std::string& comment);

// Parses a data file; throws InputError "FILE:LINE: ..." on any problem.
LammpsData read_lammps_data(const std::string& path);
// Same, from text already in memory (name is used in messages).
LammpsData parse_lammps_data(const std::string& text, const std::string& name);

}  // namespace spotrun::io
