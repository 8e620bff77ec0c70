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

// Parses a data file; throws InputError "FILE:LINE: ..." on any problem.
LammpsData read_lammps_data(const std::string& path);
// Same, from text already in memory (name is used in messages).
LammpsData parse_lammps_data(const std::string& text, const std::string& name);

}  // namespace spotrun::io
