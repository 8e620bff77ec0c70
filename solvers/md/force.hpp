#pragma once
// The pair-force loops; the physics comes from a small evaluator (PairLJCut, ...). One loop per list
// kind (neighbor.hpp): the half list updates both atoms of an owned pair (a scatter: atomics on a GPU),
// the full list only the atom of the thread (no atomics: the GPU default, bitwise reproducible).
#include <Kokkos_ScatterView.hpp>

#include "atoms.hpp"
#include "neighbor.hpp"
#include "pair.hpp"

namespace spotrun::md {

struct PairTally {
  double energy = 0;  // sum of pair energies owned by this rank (ghost pairs count 1/2)
  double virial = 0;  // sum of r_ij . F_ij, same weighting
};

using ForceScatter = Kokkos::Experimental::ScatterView<double* [3], Kokkos::LayoutRight, ExecSpace>;

namespace impl {

// Sum over the neighbours jj in [jbegin, jend) of row i of the pair force on atom i; calls
// on_pair(j, dx, dy, dz, fpair, e) for each pair within the cutoff of the two atoms' types (e only with EV).
template <bool EV, class Pair, class OnPair>
KOKKOS_INLINE_FUNCTION void row_forces(const Vec3View& x, const IntView& type, const NeighborView& neigh,
                                       const PairTable<Pair>& pairs, int i, int jbegin, int jend, double& fx,
                                       double& fy, double& fz, const OnPair& on_pair) {
  const double xi = x(i, 0), yi = x(i, 1), zi = x(i, 2);
  const int ti = type(i);
  for (int jj = jbegin; jj < jend; ++jj) {
    const int j = neigh(i, jj);
    const double dx = xi - x(j, 0), dy = yi - x(j, 1), dz = zi - x(j, 2);
    const double rsq = dx * dx + dy * dy + dz * dz;
    const Pair& pair = pairs(ti, type(j));
    if (rsq >= pair.cutsq) continue;
    double fpair, e = 0;
    if (EV)
      pair.compute(rsq, fpair, e);
    else
      pair.compute_force(rsq, fpair);
    fx += dx * fpair;
    fy += dy * fpair;
    fz += dz * fpair;
    on_pair(j, dx, dy, dz, fpair, rsq, e);
  }
}

// Half list: accumulates into atoms.f (which the caller zeroes) through the scatter view.
template <bool EV, class Pair>
PairTally half_list_forces(const AtomStore& atoms, const NeighborList& list, const PairTable<Pair>& pair, ForceScatter& scatter) {
  auto x = atoms.x;
  auto neigh = list.neighbors;
  auto numneigh = list.numneigh;
  auto numghost = list.numghost;
  const int nlocal = atoms.nlocal;
  auto type = atoms.type;
  const int maxn = list.max_neighbors();
  auto f = atoms.f;
  scatter.reset_except(f);
  PairTally t;
  // Owned neighbours at the front of the row (Newton's third law: the pair force acts on both atoms),
  // ghost neighbours at the back (only the owned atom is updated here; the ghost's owner computes the
  // pair too, so energy and virial count half).
  auto body = [=] KOKKOS_FUNCTION(int i, double& energy, double& virial) {
    auto fa = scatter.access();
    double fxi = 0, fyi = 0, fzi = 0;
    row_forces<EV>(x, type, neigh, pair, i, 0, numneigh(i), fxi, fyi, fzi,
                   [&](int j, double dx, double dy, double dz, double fpair, double rsq, double e) {
                     fa(j, 0) -= dx * fpair;
                     fa(j, 1) -= dy * fpair;
                     fa(j, 2) -= dz * fpair;
                     if (EV) {
                       energy += e;
                       virial += rsq * fpair;
                     }
                   });
    row_forces<EV>(x, type, neigh, pair, i, maxn - numghost(i), maxn, fxi, fyi, fzi,
                   [&](int, double, double, double, double fpair, double rsq, double e) {
                     if (EV) {
                       energy += 0.5 * e;
                       virial += 0.5 * rsq * fpair;
                     }
                   });
    fa(i, 0) += fxi;
    fa(i, 1) += fyi;
    fa(i, 2) += fzi;
  };
  if (EV) {
    Kokkos::parallel_reduce("md::pair::force_half", Policy(0, nlocal), body, t.energy, t.virial);
  } else {
    // No reduction: nothing returns to the host on a step without thermo.
    Kokkos::parallel_for(
        "md::pair::force_half", Policy(0, nlocal), KOKKOS_LAMBDA(int i) {
          double e = 0, w = 0;
          body(i, e, w);
        });
  }
  Kokkos::Experimental::contribute(f, scatter);
  return t;
}

// Full list: each thread writes the force on its own atom; every pair is seen from both of its atoms
// (here or on the ghost's rank), so energy and virial count half.
template <bool EV, class Pair>
PairTally full_list_forces(const AtomStore& atoms, const NeighborList& list, const PairTable<Pair>& pair) {
  auto x = atoms.x;
  auto f = atoms.f;
  auto neigh = list.neighbors;
  auto numneigh = list.numneigh;
  auto numghost = list.numghost;
  const int nlocal = atoms.nlocal;
  auto type = atoms.type;
  const int maxn = list.max_neighbors();
  PairTally t;
  auto body = [=] KOKKOS_FUNCTION(int i, double& energy, double& virial) {
    double fxi = 0, fyi = 0, fzi = 0;
    auto tally = [&](int, double, double, double, double fpair, double rsq, double e) {
      if (EV) {
        energy += 0.5 * e;
        virial += 0.5 * rsq * fpair;
      }
    };
    row_forces<EV>(x, type, neigh, pair, i, 0, numneigh(i), fxi, fyi, fzi, tally);
    row_forces<EV>(x, type, neigh, pair, i, maxn - numghost(i), maxn, fxi, fyi, fzi, tally);
    f(i, 0) = fxi;
    f(i, 1) = fyi;
    f(i, 2) = fzi;
  };
  if (EV) {
    Kokkos::parallel_reduce("md::pair::force_full", Policy(0, nlocal), body, t.energy, t.virial);
  } else {
    Kokkos::parallel_for(
        "md::pair::force_full", Policy(0, nlocal), KOKKOS_LAMBDA(int i) {
          double e = 0, w = 0;
          body(i, e, w);
        });
  }
  return t;
}

}  // namespace impl

// The pair forces on the owned atoms into atoms.f (which the caller zeroes), through the list's kind. With
// EV, also the energy and virial (a reduction the host waits for; without EV nothing returns to it).
template <bool EV, class Pair>
PairTally compute_pair_forces(const AtomStore& atoms, const NeighborList& list, const PairTable<Pair>& pair,
                              ForceScatter& scatter) {
  return list.full() ? impl::full_list_forces<EV>(atoms, list, pair) : impl::half_list_forces<EV>(atoms, list, pair, scatter);
}

}  // namespace spotrun::md
