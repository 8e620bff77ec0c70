#include "lammps_data.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "comm/errors.hpp"
#include "comm/number_text.hpp"
#include "comm/process_grid.hpp"

namespace spotrun::io {

std::string format_lammps_data(const LammpsData& d, const std::string& title, LammpsDataStyle style,
                               const std::vector<std::string>& type_names) {
  std::ostringstream o;
  o << title << "\n\n" << d.natoms() << " atoms\n" << d.ntypes << " atom types\n\n";
  const char* names[3] = {"x", "y", "z"};
  for (int k = 0; k < 3; ++k) o << exact(d.lo[k]) << " " << exact(d.hi[k]) << " " << names[k] << "lo " << names[k] << "hi\n";
  o << "\nMasses\n\n";
  for (int t = 0; t < d.ntypes; ++t) {
    o << t + 1 << " " << exact(d.masses[t]);
    if (static_cast<std::size_t>(t) < type_names.size()) o << " # " << type_names[t];
    o << "\n";
  }
  const bool molecular = style == LammpsDataStyle::Molecular;
  o << (molecular ? "\nAtoms # molecular\n\n" : "\nAtoms # atomic\n\n");
  for (std::size_t a = 0; a < d.natoms(); ++a) {
    o << d.id[a] << " ";
    if (molecular) o << "0 ";  // molecule-ID 0: in no molecule
    o << d.type[a] << " " << exact(d.x[3 * a]) << " " << exact(d.x[3 * a + 1]) << " " << exact(d.x[3 * a + 2]) << " "
      << d.image[3 * a] << " " << d.image[3 * a + 1] << " " << d.image[3 * a + 2] << "\n";
  }
  if (!d.has_velocities) return o.str();
  o << "\nVelocities\n\n";
  for (std::size_t a = 0; a < d.natoms(); ++a)
    o << d.id[a] << " " << exact(d.v[3 * a]) << " " << exact(d.v[3 * a + 1]) << " " << exact(d.v[3 * a + 2]) << "\n";
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
