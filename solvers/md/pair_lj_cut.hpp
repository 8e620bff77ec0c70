#pragma once
// Lennard-Jones 12-6, truncated at the cutoff, optionally shifted to zero there (LAMMPS lj/cut with
// pair_modify shift yes|no):  E = 4 eps [ (sigma/r)^12 - (sigma/r)^6 ] - E_shift,  r < rc.
#include <Kokkos_Core.hpp>
#include <cmath>

namespace spotrun::md {

struct PairLJCut {
  double lj1 = 0, lj2 = 0, lj3 = 0, lj4 = 0, offset = 0, cutsq = 0;

  PairLJCut() = default;  // an unused entry of a pair table (md::PairTable)

  PairLJCut(double epsilon, double sigma, double cutoff, bool shift) {
    double s6 = std::pow(sigma, 6);
    lj1 = 48.0 * epsilon * s6 * s6;
    lj2 = 24.0 * epsilon * s6;
    lj3 = 4.0 * epsilon * s6 * s6;
    lj4 = 4.0 * epsilon * s6;
    cutsq = cutoff * cutoff;
    double r6 = s6 / std::pow(cutoff, 6);
    offset = shift ? 4.0 * epsilon * (r6 * r6 - r6) : 0.0;
  }

  // fpair: F_ij = fpair * (x_i - x_j); energy: the pair energy. Only called for rsq < cutsq.
  KOKKOS_INLINE_FUNCTION void compute(double rsq, double& fpair, double& energy) const {
    const double r2inv = 1.0 / rsq;
    const double r6inv = r2inv * r2inv * r2inv;
    fpair = r6inv * (lj1 * r6inv - lj2) * r2inv;
    energy = r6inv * (lj3 * r6inv - lj4) - offset;
  }
  KOKKOS_INLINE_FUNCTION void compute_force(double rsq, double& fpair) const {
    const double r2inv = 1.0 / rsq;
    const double r6inv = r2inv * r2inv * r2inv;
    fpair = r6inv * (lj1 * r6inv - lj2) * r2inv;
  }
};

}  // namespace spotrun::md
