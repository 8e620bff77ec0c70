#pragma once
// Lennard-Jones 12-6, truncated at the cutoff, optionally shifted to zero there (LAMMPS lj/cut with
// pair_modify shift yes|no):  E = 4 eps [ (sigma/r)^12 - (sigma/r)^6 ] - E_shift,  r < rc.
// Real: the arithmetic of a pair (double, or float in mixed precision, precision.hpp); the coefficients are
// computed in double and rounded once to Real. LjCut is the style of the registry (pair.hpp, pair_style.hpp).
#include <Kokkos_Core.hpp>
#include <cmath>

#include "md_config.hpp"
#include "pair_coeffs.hpp"
#include "pair_params.hpp"

namespace spotrun::md {

template <class Real>
struct PairLJCutT {
  using real_type = Real;
  Real lj1 = 0, lj2 = 0, lj3 = 0, lj4 = 0, offset = 0, cutsq = 0;

  PairLJCutT() = default;  // an unused entry of a pair table (md::PairTable)

  PairLJCutT(double epsilon, double sigma, double cutoff, bool shift) {
    double s6 = std::pow(sigma, 6);
    lj1 = static_cast<Real>(48.0 * epsilon * s6 * s6);
    lj2 = static_cast<Real>(24.0 * epsilon * s6);
    lj3 = static_cast<Real>(4.0 * epsilon * s6 * s6);
    lj4 = static_cast<Real>(4.0 * epsilon * s6);
    cutsq = static_cast<Real>(cutoff * cutoff);
    double r6 = s6 / std::pow(cutoff, 6);
    offset = static_cast<Real>(shift ? 4.0 * epsilon * (r6 * r6 - r6) : 0.0);
  }

  // fpair: F_ij = fpair * (x_i - x_j); energy: the pair energy. Only called for rsq < cutsq.
  KOKKOS_INLINE_FUNCTION void compute(Real rsq, Real& fpair, Real& energy) const {
    const Real r2inv = Real(1) / rsq;
    const Real r6inv = r2inv * r2inv * r2inv;
    fpair = r6inv * (lj1 * r6inv - lj2) * r2inv;
    energy = r6inv * (lj3 * r6inv - lj4) - offset;
  }
  KOKKOS_INLINE_FUNCTION void compute_force(Real rsq, Real& fpair) const {
    const Real r2inv = Real(1) / rsq;
    const Real r6inv = r2inv * r2inv * r2inv;
    fpair = r6inv * (lj1 * r6inv - lj2) * r2inv;
  }
};

using PairLJCut = PairLJCutT<double>;       // md.precision = "double"
using PairLJCutMixed = PairLJCutT<float>;   // md.precision = "mixed"

// md.pair.style = "lj/cut": each type pair's epsilon, sigma (LAMMPS pair_coeff order) and cutoff
// (pair_coeffs.hpp), md.pair.shift. A type's own pair not given: md.pair.epsilon, md.pair.sigma; an unlike
// pair: epsilon geometric, sigma by md.pair.mix.
struct LjCut {
  static constexpr const char* name = "lj/cut";
  static constexpr PairParam params[] = {
      {"epsilon", "epsilon", "LJ well depth", 0, 1e9, "1.0", PairParamMix::Geometric},
      {"sigma", "sigma", "LJ zero-crossing distance", 0, 1e9, "1.0", PairParamMix::ByRule},
  };
  static constexpr const char* contact = "sigma";
  template <class Real>
  using Evaluator = PairLJCutT<Real>;
  template <class Real>
  static Evaluator<Real> evaluator(const PairCoeffs& c, int ti, int tj, const MdConfig& cfg) {
    return Evaluator<Real>(c.value(0, ti, tj), c.value(1, ti, tj), c.at(c.cutoff, ti, tj), cfg.shift);
  }
};

}  // namespace spotrun::md
