#pragma once
// The forces of the bonded interactions of a rank, in one of two ways that follow the pair list's kind:
//  - gathered per owned atom (gather_bonded; full lists and half lists without Newton: the GPU's way, as the
//    full neighbour list does for pairs): each owned atom loops over the interactions it takes part in and adds
//    its own share. No atomics and a fixed order of the sums, so a run repeats itself bit for bit on threads and
//    on a GPU, and nothing goes back to other ranks (an interaction across ranks is evaluated on each rank that
//    owns one of its atoms);
//  - once per interaction under Newton (scatter_bonded; the host's half list): by the rank that owns its first
//    atom, the forces added to every atom of it, ghosts included, which go back with the pair forces.
// The energy and virial of an interaction are tallied once, by the rank that owns its first atom (role 0).
//
// The lists hold local indices (owned or ghost), the copies of the partners closest to each other (AtomMap),
// built at each neighbour build from the atoms' topology.
#include <Kokkos_Core.hpp>
#include <Kokkos_ScatterView.hpp>
#include <cstdint>
#include <type_traits>

#include "geometry.hpp"
#include "solvers/md/types.hpp"
#include "styles.hpp"

namespace spotrun::md::bonded {

// The interactions of `Width` atoms (2: bonds, 3: angles, 4: dihedrals) each owned atom takes part in:
// entries [offset(a), offset(a + 1)) of owned atom a, each the local indices of the interaction's atoms in
// its order, the atom's own role (its place among them) and the interaction type (1-based).
template <int Width>
struct GatherList {
  IntView offset{"md::bonded::offset", 0};                                      // nlocal + 1
  Kokkos::View<int* [Width + 2], Kokkos::LayoutRight, MemSpace> entry{"md::bonded::entry", 0};  // atoms, role, type
  int nlocal = 0;
  int count = 0;  // the entries: offset(nlocal)
};

// What one force call of a kind tallied: the energy and virial of the interactions this rank tallies,
// and the first interaction a style refused (a broken FENE bond), by its atoms' local indices (-1: none).
struct BondedTally {
  double energy = 0;
  double virial[6] = {0, 0, 0, 0, 0, 0};  // xx yy zz xy xz yz
  int bad_atom[2] = {-1, -1};

  KOKKOS_INLINE_FUNCTION void operator+=(const BondedTally& o) {
    energy += o.energy;
    for (int c = 0; c < 6; ++c) virial[c] += o.virial[c];
    if (o.bad_atom[0] >= 0 && (bad_atom[0] < 0 || o.bad_atom[0] < bad_atom[0])) {
      bad_atom[0] = o.bad_atom[0];
      bad_atom[1] = o.bad_atom[1];
    }
  }
  // Kokkos 3's reductions join volatile values.
  KOKKOS_INLINE_FUNCTION void operator+=(const volatile BondedTally& o) volatile {
    energy += o.energy;
    for (int c = 0; c < 6; ++c) virial[c] += o.virial[c];
    if (o.bad_atom[0] >= 0 && (bad_atom[0] < 0 || o.bad_atom[0] < bad_atom[0])) {
      bad_atom[0] = o.bad_atom[0];
      bad_atom[1] = o.bad_atom[1];
    }
  }
};

namespace impl {

// The virial of forces f on atoms at x (relative to atom 0: translation-invariant as the forces sum to 0).
template <int Width>
KOKKOS_INLINE_FUNCTION void add_virial(const double (&rel)[Width][3], const double (&f)[Width][3], BondedTally& t) {
  for (int a = 1; a < Width; ++a) {
    t.virial[0] += rel[a][0] * f[a][0];
    t.virial[1] += rel[a][1] * f[a][1];
    t.virial[2] += rel[a][2] * f[a][2];
    t.virial[3] += rel[a][0] * f[a][1];
    t.virial[4] += rel[a][0] * f[a][2];
    t.virial[5] += rel[a][1] * f[a][2];
  }
}

// A bond's force and, with E, energy; whether the style refused the bond (a FENE bond at or beyond R0: FeneState).
template <bool E, class Bond>
KOKKOS_INLINE_FUNCTION bool bond_compute(const Bond& b, double rsq, double& fbond, double& energy) {
  if constexpr (std::is_void_v<decltype(b.template compute<E>(rsq, fbond, energy))>) {
    b.template compute<E>(rsq, fbond, energy);
    return false;
  } else {
    return static_cast<int>(b.template compute<E>(rsq, fbond, energy)) == static_cast<int>(FeneState::Broken);
  }
}

// One interaction, entry e of a list: the local indices of its atoms (idx), their positions relative to atom
// 0 (rel), the force on each (fi) and, with E, its energy; whether the style refused it (a broken FENE bond).
// Kind: 2 bonds, 3 angles, 4 dihedrals (the geometry).
template <bool E, int Width, class Entry, class Style>
KOKKOS_INLINE_FUNCTION bool interaction_forces(const Entry& entry, int e, const Style& style, const Vec3View& x,
                                               int (&idx)[Width], double (&rel)[Width][3], double (&fi)[Width][3],
                                               double& energy) {
  for (int k = 0; k < Width; ++k) idx[k] = entry(e, k);
  const int type = entry(e, Width + 1);
  for (int k = 0; k < Width; ++k)
    for (int d = 0; d < 3; ++d) rel[k][d] = x(idx[k], d) - x(idx[0], d);
  bool bad = false;
  if constexpr (Width == 2) {
    const double del[3] = {-rel[1][0], -rel[1][1], -rel[1][2]};  // x_0 - x_1
    double fbond;
    bad = bond_compute<E>(style(type), dot3(del, del), fbond, energy);
    for (int d = 0; d < 3; ++d) {
      fi[0][d] = fbond * del[d];
      fi[1][d] = -fi[0][d];
    }
  } else if constexpr (Width == 3) {
    double del1[3], del2[3], f1[3], f3[3], dedc;
    for (int d = 0; d < 3; ++d) {
      del1[d] = rel[0][d] - rel[1][d];
      del2[d] = rel[2][d] - rel[1][d];
    }
    const AngleGeometry g = angle_geometry(del1, del2);
    style(type).compute(g, dedc, energy);
    angle_forces(g, del1, del2, dedc, f1, f3);
    for (int d = 0; d < 3; ++d) {
      fi[0][d] = f1[d];
      fi[2][d] = f3[d];
      fi[1][d] = -(f1[d] + f3[d]);
    }
  } else {
    double b1[3], b2[3], b3[3], dedphi;
    for (int d = 0; d < 3; ++d) {
      b1[d] = rel[1][d] - rel[0][d];
      b2[d] = rel[2][d] - rel[1][d];
      b3[d] = rel[3][d] - rel[2][d];
    }
    const DihedralGeometry g = dihedral_geometry(b1, b2, b3);
    style(type).compute(g.phi, dedphi, energy);
    dihedral_forces(g, b1, b2, b3, dedphi, fi[0], fi[1], fi[2], fi[3]);
  }
  return bad;
}

// The tally of an interaction whose role-0 atom this rank owns: with EV its energy and, with V, its virial;
// a refused one by its first two atoms (the lowest index first).
template <bool EV, bool V, int Width>
KOKKOS_INLINE_FUNCTION void tally_interaction(const int (&idx)[Width], const double (&rel)[Width][3],
                                              const double (&fi)[Width][3], double energy, bool bad, BondedTally& t) {
  if (EV) {
    t.energy += energy;
    if (V) add_virial<Width>(rel, fi, t);
  }
  if (bad && (t.bad_atom[0] < 0 || idx[0] < t.bad_atom[0])) {
    t.bad_atom[0] = idx[0];
    t.bad_atom[1] = idx[1];
  }
}

}  // namespace impl

// The forces of every interaction of a kind on the owned atoms, added to f; with EV the tally of the
// interactions whose role-0 atom is owned (without EV its energy and virial stay 0 and a bond style skips its
// energy: FENE's logarithm; a broken bond is reported either way). The list: every interaction of each owned
// atom (build_gather's gather kind). Style: a Kokkos view of evaluators by type (1-based; entry 0 unused)
// whose element has compute() as in styles.hpp. Kind: 2 bonds, 3 angles, 4 dihedrals.
template <bool EV = true, int Width, class StyleView>
BondedTally gather_bonded(const GatherList<Width>& list, const StyleView& styles, const Vec3View& x, const Vec3View& f) {
  static_assert(Width >= 2 && Width <= 4, "bonds, angles or dihedrals");
  BondedTally total;
  auto offset = list.offset;
  auto entry = list.entry;
  Kokkos::parallel_reduce(
      "md::bonded::gather", Policy(0, list.nlocal),
      KOKKOS_LAMBDA(const int a, BondedTally& t) {
        double fa[3] = {0, 0, 0};
        for (int e = offset(a); e < offset(a + 1); ++e) {
          int idx[Width];
          double rel[Width][3], fi[Width][3], energy = 0;
          const bool bad = impl::interaction_forces<EV, Width>(entry, e, styles, x, idx, rel, fi, energy);
          const int role = entry(e, Width);
          for (int d = 0; d < 3; ++d) fa[d] += fi[role][d];
          // This rank owns the interaction's first atom: it tallies the interaction.
          if (role == 0) impl::tally_interaction<EV, true, Width>(idx, rel, fi, energy, bad, t);
        }
        for (int d = 0; d < 3; ++d) f(a, d) += fa[d];
      },
      Kokkos::Sum<BondedTally>(total));
  return total;
}

// Newton's third law for the bonded terms (LAMMPS's newton_bond on; the host's half list under Newton): each
// interaction once, on the rank that owns its role-0 atom, the forces on all of its atoms added where they are,
// owned atoms or ghosts (Halo::reverse_forces sends the ghosts' to their owners), through the force scatter
// view. The list: only the interactions whose role-0 atom is owned (build_gather's newton kind). With EV the
// energies; no virial (under Newton the sum of x . f over owned atoms and ghosts holds it: fdotr_virial).
template <bool EV = true, int Width, class StyleView, class Scatter>
BondedTally scatter_bonded(const GatherList<Width>& list, const StyleView& styles, const Vec3View& x, const Vec3View& f,
                           Scatter& scatter) {
  static_assert(Width >= 2 && Width <= 4, "bonds, angles or dihedrals");
  BondedTally total;
  auto entry = list.entry;
  scatter.reset_except(f);
  // Every entry in turn (those of owned atom a are offset(a) .. offset(a + 1) - 1, in that order): one loop,
  // not one for each atom of a few entries (a loop exit to mispredict each); the same sums in the same order.
  Kokkos::parallel_reduce(
      "md::bonded::scatter", Policy(0, list.count),
      KOKKOS_LAMBDA(const int e, BondedTally& t) {
        auto fs = scatter.access();
        int idx[Width];
        double rel[Width][3], fi[Width][3], energy = 0;
        const bool bad = impl::interaction_forces<EV, Width>(entry, e, styles, x, idx, rel, fi, energy);
        for (int k = 0; k < Width; ++k)
          for (int d = 0; d < 3; ++d) fs(idx[k], d) += fi[k][d];
        impl::tally_interaction<EV, false, Width>(idx, rel, fi, energy, bad, t);
      },
      Kokkos::Sum<BondedTally>(total));
  Vec3View into = f;  // contribute() takes a non-const view
  Kokkos::Experimental::contribute(into, scatter);
  return total;
}

}  // namespace spotrun::md::bonded

namespace Kokkos {
template <>
struct reduction_identity<spotrun::md::bonded::BondedTally> {
  KOKKOS_FORCEINLINE_FUNCTION static spotrun::md::bonded::BondedTally sum() { return {}; }
};
}  // namespace Kokkos
