#pragma once
// The one pair-force loop; the physics comes from a small evaluator (PairLJCut, ...).
#include <Kokkos_ScatterView.hpp>

#include "atoms.hpp"
#include "neighbor.hpp"

namespace spotrun::md {

struct PairTally {
  double energy = 0;  // sum of pair energies owned by this rank (ghost pairs count 1/2)
  double virial = 0;  // sum of r_ij . F_ij, same weighting
};

using ForceScatter = Kokkos::Experimental::ScatterView<double* [3], Kokkos::LayoutRight, ExecSpace>;

// Accumulates pair forces on owned atoms into atoms.f (which the caller zeroes). With EV, also returns
// the energy and virial. Half list: owned-owned pairs update both atoms, owned-ghost pairs only the owned.
template <bool EV, class Pair>
PairTally compute_pair_forces(const AtomStore& atoms, const NeighborList& list, const Pair& pair,
                              ForceScatter& scatter) {
  auto x = atoms.x;
  auto neigh = list.neighbors;
  auto numneigh = list.numneigh;
  const int nlocal = atoms.nlocal;
  const double cutsq = pair.cutsq;
  auto f = atoms.f;
  scatter.reset_except(f);
  PairTally t;
  auto numghost = list.numghost;
  const int maxn = list.max_neighbors();
  Kokkos::parallel_reduce(
      "md::pair::force", Policy(0, nlocal),
      KOKKOS_LAMBDA(int i, double& energy, double& virial) {
        auto fa = scatter.access();
        const double xi = x(i, 0), yi = x(i, 1), zi = x(i, 2);
        double fxi = 0, fyi = 0, fzi = 0;
        // One loop over a part of the row: owned neighbours (the pair force acts on both atoms,
        // Newton's third law) or ghost neighbours (only the owned atom is updated here; the ghost's
        // owner computes the pair too, so energy and virial count half). Called with constants, so
        // each part compiles to its own branch-free loop.
        auto accumulate = [&](const int jbegin, const int jend, const bool owned) {
          for (int jj = jbegin; jj < jend; ++jj) {
            const int j = neigh(i, jj);
            const double dx = xi - x(j, 0), dy = yi - x(j, 1), dz = zi - x(j, 2);
            const double rsq = dx * dx + dy * dy + dz * dz;
            if (rsq >= cutsq) continue;
            double fpair, e = 0;
            if (EV)
              pair.compute(rsq, fpair, e);
            else
              pair.compute_force(rsq, fpair);
            fxi += dx * fpair;
            fyi += dy * fpair;
            fzi += dz * fpair;
            if (owned) {
              fa(j, 0) -= dx * fpair;
              fa(j, 1) -= dy * fpair;
              fa(j, 2) -= dz * fpair;
            }
            if (EV) {
              const double w = owned ? 1.0 : 0.5;
              energy += w * e;
              virial += w * rsq * fpair;
            }
          }
        };
        accumulate(0, numneigh(i), true);
        accumulate(maxn - numghost(i), maxn, false);
        fa(i, 0) += fxi;
        fa(i, 1) += fyi;
        fa(i, 2) += fzi;
      },
      t.energy, t.virial);
  Kokkos::Experimental::contribute(f, scatter);
  return t;
}

}  // namespace spotrun::md
