#pragma once
// The unit styles of the MD solver (md.units) and their conversion constants, the values of LAMMPS's
// `units lj | real | metal` (Update::set_units of LAMMPS 29 Sep 2021):
//   lj     lengths sigma, energies epsilon, masses m, time tau, temperature epsilon/k_B, charge reduced
//   real   Angstrom, kcal/mol, g/mol, fs, K, atm, e
//   metal  Angstrom, eV, g/mol, ps, K, bar, e
// Where they enter (docs/md.md#units): velocity Verlet v += dt ftm2v f / m; kinetic energy mvv2e m v^2 / 2;
// temperature mvv2e sum m v^2 / (dof boltz); pressure nktv2p (2 KE + W) / (3 V); thermostats kT = boltz T;
// Coulomb E = qqrd2e q_i q_j / r; density mv2d mass / V (g/cm^3 in real and metal).
#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace spotrun::md {

enum class UnitStyle { Lj, Real, Metal };

struct UnitConstants {
  const char* name;     // md.units, LAMMPS's units command
  double boltz;         // Boltzmann constant (energy / temperature)
  double mvv2e;         // mass * velocity^2 -> energy
  double ftm2v;         // force / mass * time -> velocity
  double mv2d;          // mass / volume -> density
  double nktv2p;        // energy / volume -> pressure
  double qqr2e;         // q^2 / r -> energy (the Coulomb constant)
  double qqrd2e;        // qqr2e / dielectric (dielectric 1)
  double dt;            // LAMMPS's default time step (time units)
  const char* time;     // unit of time
  const char* length;   // unit of length
  const char* energy;   // unit of energy
  const char* mass;     // unit of mass
  const char* temperature;
  const char* pressure;
  // thermo_modify norm: LAMMPS's default divides the extensive thermo columns (energies) by the atoms in lj
  // units only.
  bool normalise_thermo;
};

// LAMMPS's values, as update.cpp writes them (real: mvv2e = 48.88821291^2).
inline constexpr double k_real_velocity = 48.88821291;
inline constexpr std::array<UnitConstants, 3> k_unit_constants{{
    {"lj", 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.005, "tau", "sigma", "epsilon", "mass", "epsilon/k_B",
     "epsilon/sigma^3", true},
    {"real", 0.0019872067, k_real_velocity * k_real_velocity, 1.0 / k_real_velocity / k_real_velocity,
     1.0 / 0.602214129, 68568.415, 332.06371, 332.06371 / 1.0, 1.0, "fs", "Angstrom", "kcal/mol", "g/mol", "K",
     "atm", false},
    {"metal", 8.617343e-5, 1.0364269e-4, 1.0 / 1.0364269e-4, 1.0 / 0.602214129, 1.6021765e6, 14.399645,
     14.399645 / 1.0, 0.001, "ps", "Angstrom", "eV", "g/mol", "K", "bar", false},
}};

inline const UnitConstants& unit_constants(UnitStyle s) { return k_unit_constants[static_cast<std::size_t>(s)]; }

// The md.units values, in the order of UnitStyle.
inline std::vector<std::string> unit_style_names() {
  std::vector<std::string> v;
  for (const auto& u : k_unit_constants) v.emplace_back(u.name);
  return v;
}

// The style named (an md.units value the deck checked); UnitStyle::Lj for any other name.
inline UnitStyle unit_style_from_name(const std::string& name) {
  for (std::size_t i = 0; i < k_unit_constants.size(); ++i)
    if (name == k_unit_constants[i].name) return static_cast<UnitStyle>(i);
  return UnitStyle::Lj;
}

}  // namespace spotrun::md
