#pragma once
// Typed configuration of the MD solver, in the units of md.units (LAMMPS units lj, real or metal; units.hpp):
// the comments name the lj units (sigma, epsilon, mass, tau).
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "minimize/min_config.hpp"
#include "precision.hpp"
#include "units.hpp"

namespace spotrun::md {

enum class Ensemble { Nve, Langevin, Nvt, Npt, Nph };
// The barostat's coupling (LAMMPS fix npt/nph iso or aniso): one box strain rate for the three lengths, driven
// by the scalar pressure, or one per length, driven by the diagonal of the pressure tensor.
enum class Barostat { Iso, Aniso };
// Whether the ensemble has a Nose-Hoover thermostat on the particles (nvt, npt) and a barostat (npt, nph).
inline bool thermostatted(Ensemble e) { return e == Ensemble::Nvt || e == Ensemble::Npt; }
inline bool barostatted(Ensemble e) { return e == Ensemble::Npt || e == Ensemble::Nph; }
// Mixing of the pairs of unlike types that [[md.pair.coeff]] does not give (LAMMPS pair_modify mix).
enum class PairMix { Geometric, Arithmetic };

// One of md.types: the types are numbered 1.. in the order of the deck.
struct AtomTypeSpec {
  std::string name;
  double mass = 1.0;      // mass
  double fraction = 0.0;  // lattice starts: the share of the sites of this type
  bool mass_given = false;  // the deck gave the mass (a data file's Masses must then agree)
};

// One [[md.pair.coeff]] entry: the coefficients of the pair style (pair_params.hpp) by name, as given.
struct PairCoeffSpec {
  std::string type_a, type_b;
  std::vector<std::pair<std::string, double>> values;  // e.g. {"epsilon", 1.5}, {"sigma", 0.8}
  double cutoff = 0.0;   // sigma; 0: md.cutoff
};

// The kinds of bonded interaction whose styles the deck names ([md.bond], [md.angle], [md.dihedral]).
enum class BondedKind { Bond, Angle, Dihedral };

// One [[md.bond.coeff]] table (or [[md.angle.coeff]], [[md.dihedral.coeff]]): the coefficients of one type
// by name, as given (bonded/bonded_params.hpp lists each style's).
struct BondedCoeffSpec {
  int type = 0;                                         // 1-based, the data file's numbering
  std::vector<std::pair<std::string, double>> values;  // e.g. {"k", 30.0}, {"r0", 1.5}
};
// The style of one kind and the deck's coefficient tables; style "": none given (the data file's Coeffs
// section may name it, bonded/bonded_coeffs.hpp).
struct BondedStyleConfig {
  std::string style;
  std::vector<BondedCoeffSpec> coeffs;
};

// Neighbour list kind (neighbor.hpp): by default a full list where kernels run on a GPU (no atomics,
// bitwise reproducible), a half list on CPUs (half the pair evaluations).
// HalfNoNewton: a half list without Newton's third law across ghosts (the device's half list; on the host
// for tests: owned-ghost pairs computed on both ranks, nothing sent back).
enum class NeighborListKind { ByBackend, Half, Full, HalfNoNewton };

// [md.kspace]: the long-range part of the Coulomb sum of a long-range pair style (lj/cut/coul/long).
enum class KspaceStyle { None, Pppm, Ewald };
struct KspaceConfig {
  KspaceStyle style = KspaceStyle::None;  // "none", "pppm", "ewald"
  double accuracy = 1e-5;           // relative RMS force accuracy (LAMMPS kspace_style pppm ACCURACY)
  std::array<int, 3> mesh{0, 0, 0};  // PPPM mesh; 0: chosen from the accuracy
  int order = 5;                    // PPPM charge assignment order, 2..7
  double g_ewald = 0;               // 1/sigma; 0: chosen from the accuracy
  double g_ewald_resolved = 0;      // the run's g_ewald (set by the solver once chosen; not a deck key)
};

struct MdStage;  // [[run.stage]] (below)

struct MdConfig {
  UnitStyle units = UnitStyle::Lj;  // md.units
  const UnitConstants& unit() const { return unit_constants(units); }
  double dt = 0.005;             // tau
  double cutoff = 2.5;           // sigma
  // md.pair.coulomb_cutoff: the Coulomb part's cutoff of a charged pair style (sigma; 0: md.cutoff).
  double coulomb_cutoff = 0;
  double coulomb_cutoff_or_default() const { return coulomb_cutoff > 0 ? coulomb_cutoff : cutoff; }
  KspaceConfig kspace;  // [md.kspace]
  double skin = 0.3;             // sigma
  int neighbor_every = 1;        // steps
  bool neighbor_check = true;
  bool halo_overlap = true;      // md.halo_overlap: interior pair forces while ghost positions move
  NeighborListKind neighbor_list = NeighborListKind::ByBackend;  // not a deck key: tests choose
  Ensemble ensemble = Ensemble::Nve;
  double temperature = 1.0;      // epsilon/k_B (Langevin and Nose-Hoover target)
  double damp = 1.0;             // tau (Langevin damping time, Nose-Hoover Tdamp)
  int tchain = 3;                // Nose-Hoover chain length
  double pressure = 1.0;         // epsilon/sigma^3 (npt, nph: target pressure)
  double pressure_damp = 1.0;    // tau (npt, nph: Pdamp)
  int pchain = 3;                // the barostat's Nose-Hoover chain length (0: none)
  Barostat barostat = Barostat::Iso;
  std::uint64_t seed = 12345;    // Langevin random forces

  Precision precision = Precision::Double;  // md.precision: of the pair forces (precision.hpp)
  std::string pair_style = "lj/cut";
  // [md.pair] defaults of the style's coefficients for a type's own pair not in [[md.pair.coeff]]
  // (pair_params.hpp's type_default; lj/cut: epsilon and sigma).
  std::vector<std::pair<std::string, double>> pair_defaults{{"epsilon", 1.0}, {"sigma", 1.0}};
  bool shift = false;            // shift the pair energy to 0 at the cutoff
  PairMix mix = PairMix::Geometric;
  std::vector<AtomTypeSpec> types;        // empty: one type of mass 1 (lattice), the data file's types
  std::vector<PairCoeffSpec> pair_coeffs;
  // [md.bond], [md.angle], [md.dihedral]: the styles and coefficients of the bonded interactions.
  BondedStyleConfig bond, angle, dihedral;
  // [md.special_bonds] lj, coul: the factors of the pair interaction of 1-2, 1-3 and 1-4 neighbours along
  // the bonds (LAMMPS special_bonds lj/coul; its default 0 0 0 excludes them).
  std::array<double, 3> special_lj{0, 0, 0}, special_coul{0, 0, 0};

  bool from_lattice = true;      // false: atoms from a LAMMPS data file
  std::string lattice_type = "fcc";
  double density = 0.8442;       // atoms / sigma^3
  std::array<int, 3> cells{10, 10, 10};
  double lattice_temperature = 1.0;  // epsilon/k_B
  std::uint64_t lattice_seed = 87287;
  std::uint64_t type_seed = 4321;
  // [md.trajectory]: a frame every this many steps (0: none) with these fields (io/h5md_trajectory.hpp).
  std::int64_t trajectory_every = 0;
  // md.thermo_style: the thermo columns (LAMMPS thermo_style custom keywords), "step" first.
  std::vector<std::string> thermo_style{"step", "time", "temp", "pe", "ke", "etotal", "press"};
  std::vector<std::string> trajectory_fields{"position", "image", "species"};  // lattice starts with several types: which site gets which type
  // The trajectory's author (/h5md/author): not of the deck, the user who runs the solver
  // (solvers::SolverContext::user); "": "unknown".
  std::string trajectory_author;
  // [md.dump]: a frame of OUTDIR/dump.lammpstrj (LAMMPS dump custom) every this many steps (0: none) with
  // these columns (io/lammps_dump.hpp).
  std::int64_t dump_every = 0;
  std::vector<std::string> dump_columns{"id", "type", "x", "y", "z", "ix", "iy", "iz"};
  // [md.minimize]: an energy minimisation before the dynamics (minimize/min_config.hpp).
  MinimizeConfig minimize;
  // [[run.stage]]: the stages of the run in order (md_stage.hpp); empty: one stage, this configuration. With
  // stages this configuration is the first stage's.
  std::vector<MdStage> stages;

  // The style and coefficients of one kind of bonded interaction.
  const BondedStyleConfig& bonded(BondedKind k) const {
    return k == BondedKind::Bond ? bond : k == BondedKind::Angle ? angle : dihedral;
  }
  BondedStyleConfig& bonded(BondedKind k) {
    return k == BondedKind::Bond ? bond : k == BondedKind::Angle ? angle : dihedral;
  }
};

// One stage of the run ([[run.stage]]): its steps (0 for a minimisation: its iterations, as many as it takes)
// and its configuration (the deck's, with the keys of this stage and of those before it set; md_stage.hpp).
struct MdStage {
  std::int64_t steps = 0;
  MdConfig config;
  bool minimises() const { return config.minimize.enabled; }
};

}  // namespace spotrun::md
