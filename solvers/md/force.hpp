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
        // Owned neighbours: the pair force acts on both atoms (Newton's third law).
        const int nown = numneigh(i);
        for (int jj = 0; jj < nown; ++jj) {
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
          fa(j, 0) -= dx * fpair;
          fa(j, 1) -= dy * fpair;
          fa(j, 2) -= dz * fpair;
          if (EV) {
            energy += e;
            virial += rsq * fpair;
          }
        }
        // Ghost neighbours: only the owned atom is updated here; the ghost's owner computes the pair too,
        // so energy and virial count half.
        for (int jj = maxn - numghost(i); jj < maxn; ++jj) {
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
          if (EV) {
            energy += 0.5 * e;
            virial += 0.5 * rsq * fpair;
          }
        }
        fa(i, 0) += fxi;
        fa(i, 1) += fyi;
        fa(i, 2) += fzi;
      },
      t.energy, t.virial);
  Kokkos::Experimental::contribute(f, scatter);
  return t;
}

}  // namespace spotrun::md
