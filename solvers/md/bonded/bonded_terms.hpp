#pragma once
// The bonded interactions of a run and what special_bonds does to the pair interactions of the atoms they
// connect (LAMMPS's bond/angle/dihedral styles and special_bonds lj; docs/md.md#molecules):
//
//   setup():  the evaluators of every type of each kind, from the resolved coefficients (LAMMPS order);
//   build():  at each neighbour build, once the ghosts are in place: the map of the rank's atoms by id and,
//             from the topology lists each owned atom carries (atom_fields.hpp: bond, angle, dihedral), the
//             lists of local indices the force kernels walk (bonded_forces.hpp; under Newton only the
//             interactions whose first atom is owned); the partners are the copies closest to the owned atom.
//             A partner the rank does not hold is reported, never skipped;
//   exclusions(): what the neighbour list leaves out (NeighborList::build): every pair of special
//             neighbours (1-2, 1-3, 1-4 along the bonds) whose factor is not 1: factor 0 removes the pair, as
//             LAMMPS does, and special_pairs() adds the others back scaled by their factor;
//   compute(): the forces of every kind on the owned atoms, with energy and virial where asked.
//
// Without Newton (full lists: the GPU's) every kernel gathers on the owned atom (nothing is scattered to
// another atom or rank): each atom of an interaction computes its own share, so a run repeats itself bitwise on
// threads and GPUs. Under Newton (the host's half list) each interaction is computed once and its forces
// scattered, ghosts included, as the pair loop does (LAMMPS newton_bond on). Each side of a special pair
// computes its own share either way.
#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "bonded_forces.hpp"
#include "io/lammps_data.hpp"
#include "solvers/md/atom_map.hpp"
#include "solvers/md/atoms.hpp"
#include "solvers/md/force.hpp"
#include "solvers/md/neighbor.hpp"
#include "solvers/md/pair_style.hpp"
#include "styles.hpp"

namespace spotrun::md::bonded {

template <class Style>
using StyleView = Kokkos::View<Style*, MemSpace>;  // by type (1-based; entry 0 unused)
using BondStyleView = std::variant<std::monostate, StyleView<BondHarmonic>, StyleView<BondFene>>;
using AngleStyleView = std::variant<std::monostate, StyleView<AngleHarmonic>, StyleView<AngleCosine>>;
using DihedralStyleView = std::variant<std::monostate, StyleView<DihedralHarmonic>, StyleView<DihedralOpls>>;

// What the deck and the data file give: the LAMMPS style of each kind ("" for none) and the coefficients of
// each type (type - 1) in LAMMPS order (angle theta0 in degrees), and the special_bonds lj factors.
struct BondedSetup {
  std::string bond_style, angle_style, dihedral_style;
  std::vector<std::vector<double>> bond_coeffs, angle_coeffs, dihedral_coeffs;
  std::array<double, 3> special_lj{0, 0, 0};
  // The factors of the Coulomb part of a charged pair style (special_bonds coul); charged: the run's pair
  // style acts between charges (only then do they count).
  std::array<double, 3> special_coul{0, 0, 0};
  bool charged = false;
  bool long_range = false;  // the pair style's Coulomb part is the real space of a k-space sum
};

// The evaluator table of a style from its rows (InputError naming the style for an unknown one or a row of
// another length than the style's coefficients).
BondStyleView make_bond_styles(const std::string& style, const std::vector<std::vector<double>>& rows);
AngleStyleView make_angle_styles(const std::string& style, const std::vector<std::vector<double>>& rows);
DihedralStyleView make_dihedral_styles(const std::string& style, const std::vector<std::vector<double>>& rows);

// A partner of an interaction that a rank does not hold among its owned and ghost atoms.
struct MissingPartner {
  std::int64_t atom = 0, partner = 0;  // ids; atom 0: none missing
  const char* kind = "";               // "bond", "angle", "dihedral"
};

// What compute() tallied on this rank (energy and virial of the interactions whose first atom it owns).
struct BondedEnergies {
  double ebond = 0, eangle = 0, edihed = 0;
  double virial = 0;                       // the trace: sum of r . F
  double virial_diagonal[3] = {0, 0, 0};   // its parts: sum of r_a F_a, a = x, y, z
  std::int64_t broken[2] = {0, 0};         // ids of a FENE bond stretched to R0 or beyond (0: none)
};

class BondedTerms {
 public:
  void setup(const BondedSetup& s);
  // Whether any bonded kind or special factor acts (a system of single atoms has none).
  bool active(const AtomStore& atoms) const;
  // The special factors that are neither 0 nor 1 (special_pairs() has work).
  bool scaled_specials() const;

  // After the ghosts are in place. newton: the pair list's Newton across ghosts (NeighborList::newton()):
  // then each interaction is computed once, by the rank owning its first atom, and its forces on ghosts go
  // back with the pair forces (bonded_forces.hpp, scatter_bonded); otherwise each owned atom gathers its share.
  // Returns the first interaction a partner of which is missing (atom 0 when none) on this rank; the caller
  // agrees on it across ranks.
  MissingPartner build(const AtomStore& atoms, bool newton = false);
  // Whether the last build() chose Newton: compute() then adds forces to ghosts, before they go back.
  bool newton() const { return m_newton; }
  // The special pairs the neighbour list leaves out (NeighborList::build): those whose factor is not 1.
  Exclusions exclusions(const AtomStore& atoms) const;
  // Forces on the owned atoms (under Newton on the ghosts too), added to atoms.f through `scatter` (a scatter
  // view of atoms.f; used under Newton only); with ev also the energies and (without Newton: under Newton the
  // caller's sum of x . f holds it) the virial; else they are 0.
  BondedEnergies compute(const AtomStore& atoms, bool ev, ForceScatter& scatter);

  // The pair interactions of the special neighbours whose factor is neither 0 nor 1, times that factor, on the
  // owned atoms (each side its own share: energy and virial count half). After build().
  template <bool EV, class Pair>
  PairTally special_pairs(const AtomStore& atoms, const PairTable<Pair>& pairs) const;

  const AtomMap& map() const { return m_map; }
  const GatherList<2>& bonds() const { return m_bonds; }
  const GatherList<3>& angles() const { return m_angles; }
  const GatherList<4>& dihedrals() const { return m_dihedrals; }

 private:
  BondStyleView m_bond_styles;
  AngleStyleView m_angle_styles;
  DihedralStyleView m_dihedral_styles;
  std::array<double, 3> m_special_lj{0, 0, 0};
  std::array<double, 3> m_special_coul{0, 0, 0};
  bool m_charged = false;
  bool m_long_range = false;
  bool m_newton = false;
  AtomMap m_map;
  GatherList<2> m_bonds;
  GatherList<3> m_angles;
  GatherList<4> m_dihedrals;
};

// The largest distance between two atoms of one interaction of d (minimum image), over every bond, angle and
// dihedral: how far the ghosts must reach for the gather lists (0 for a system without topology).
double bonded_span(const io::LammpsData& d);

// ---- implementation of the template -------------------------------------------------------------------------

template <bool EV, class Pair>
PairTally BondedTerms::special_pairs(const AtomStore& atoms, const PairTable<Pair>& pairs) const {
  PairTally t;
  const IdRowsView special = atoms.special;
  if (special.extent(1) == 0 || !scaled_specials()) return t;
  using Real = typename Pair::real_type;
  constexpr bool charged = PairCharged<Pair>::value;
  const AtomMap::Lookup map = m_map.lookup();
  const auto x = atoms.x;
  const auto f = atoms.f;
  const auto type = atoms.type;
  const auto q = atoms.q;
  const double l12 = m_special_lj[0], l13 = m_special_lj[1], l14 = m_special_lj[2];
  // An uncharged style: the Coulomb factors are those of the van der Waals part (they change nothing).
  const double c12 = charged ? m_special_coul[0] : l12, c13 = charged ? m_special_coul[1] : l13,
               c14 = charged ? m_special_coul[2] : l14;
  Kokkos::parallel_reduce(
      "md::bonded::special_pairs", Policy(0, atoms.nlocal),
      KOKKOS_LAMBDA(int i, double& energy, double& ecoul, double& virial) {
        const int n12 = static_cast<int>(special(i, 0)), n13 = static_cast<int>(special(i, 1)),
                  n14 = static_cast<int>(special(i, 2));
        double fx = 0, fy = 0, fz = 0;
        for (int s = 0; s < n14; ++s) {
          const double flj = s < n12 ? l12 : (s < n13 ? l13 : l14), fcoul = s < n12 ? c12 : (s < n13 ? c13 : c14);
          // In the list as it is, or removed from it whole (a long-range Coulomb sum still needs its correction).
          if ((flj == 1.0 && fcoul == 1.0) || (!PairLongRange<Pair>::value && flj == 0.0 && fcoul == 0.0)) continue;
          const int j = map.closest(special(i, 3 + s), x(i, 0), x(i, 1), x(i, 2));
          if (j < 0) continue;  // beyond the ghosts: beyond every cutoff
          const double dxd = x(i, 0) - x(j, 0), dyd = x(i, 1) - x(j, 1), dzd = x(i, 2) - x(j, 2);
          const Real rsq = static_cast<Real>(dxd) * static_cast<Real>(dxd) + static_cast<Real>(dyd) * static_cast<Real>(dyd) +
                           static_cast<Real>(dzd) * static_cast<Real>(dzd);
          const Pair& pair = pairs(type(i), type(j));
          if (rsq >= pair.cutsq) continue;
          double fd = 0, evdwl = 0, ec = 0;
          // Read here, outside the if constexpr below (a CUDA device lambda may not first capture there).
          const double qiqj = q(i) * q(j);
          // The traits, not local constexpr variables: a CUDA device lambda may not first capture in if constexpr.
          if constexpr (PairLongRange<Pair>::value) {
            // The k-space sum holds every pair's whole Coulomb energy: the real-space part keeps its erfc term
            // and removes the share (1 - factor) of the whole (LAMMPS's coul/long with special_bonds coul).
            Real fl, fc, el, eq, full;
            pair.compute_parts(rsq, static_cast<Real>(qiqj), fl, fc, el, eq, full);
            const double r2inv = 1.0 / static_cast<double>(rsq), whole = (1.0 - fcoul) * static_cast<double>(full);
            fd = flj * static_cast<double>(fl) + static_cast<double>(fc) - whole * r2inv;
            evdwl = flj * static_cast<double>(el);
            ec = static_cast<double>(eq) - whole;
          } else if constexpr (PairCharged<Pair>::value) {
            Real fl, fc, el, eq;
            pair.compute_parts(rsq, static_cast<Real>(qiqj), fl, fc, el, eq);
            fd = flj * static_cast<double>(fl) + fcoul * static_cast<double>(fc);
            evdwl = flj * static_cast<double>(el);
            ec = fcoul * static_cast<double>(eq);
          } else {
            Real fpair, e = 0;
            pair.compute(rsq, fpair, e);
            fd = flj * static_cast<double>(fpair);
            evdwl = flj * static_cast<double>(e);
          }
          fx += dxd * fd;
          fy += dyd * fd;
          fz += dzd * fd;
          if (EV) {
            energy += 0.5 * evdwl;
            ecoul += 0.5 * ec;
            virial += 0.5 * fd * static_cast<double>(rsq);
          }
        }
        f(i, 0) += fx;
        f(i, 1) += fy;
        f(i, 2) += fz;
      },
      t.energy, t.ecoul, t.virial);
  return t;
}

}  // namespace spotrun::md::bonded
