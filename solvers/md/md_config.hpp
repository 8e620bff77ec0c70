#pragma once
// Typed configuration of the MD solver, in LAMMPS `units lj` (sigma, epsilon, mass, tau).
#include <array>
#include <cstdint>
#include <string>

namespace spotrun::md {

enum class Ensemble { Nve, Langevin };
// Neighbour list kind (neighbor.hpp): by default a full list where kernels run on a GPU (no atomics,
// bitwise reproducible), a half list on CPUs (half the pair evaluations).
enum class NeighborListKind { ByBackend, Half, Full };

struct MdConfig {
  double dt = 0.005;             // tau
  double cutoff = 2.5;           // sigma
  double skin = 0.3;             // sigma
  int neighbor_every = 1;        // steps
  bool neighbor_check = true;
  NeighborListKind neighbor_list = NeighborListKind::ByBackend;  // not a deck key: tests choose
  Ensemble ensemble = Ensemble::Nve;
  double temperature = 1.0;      // epsilon/k_B (Langevin target)
  double damp = 1.0;             // tau (Langevin damping time)
  std::uint64_t seed = 12345;    // Langevin random forces

  std::string pair_style = "lj/cut";
  double epsilon = 1.0;          // epsilon
  double sigma = 1.0;            // sigma
  bool shift = false;            // shift the pair energy to 0 at the cutoff

  bool from_lattice = true;      // false: atoms from a LAMMPS data file
  std::string lattice_type = "fcc";
  double density = 0.8442;       // atoms / sigma^3
  std::array<int, 3> cells{10, 10, 10};
  double lattice_temperature = 1.0;  // epsilon/k_B
  std::uint64_t lattice_seed = 87287;
};

}  // namespace spotrun::md
