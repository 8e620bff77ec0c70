#pragma once
// Morse, truncated at the cutoff, optionally shifted to zero there (LAMMPS pair morse with pair_modify
// shift yes|no):  E = D0 [ exp(-2 alpha (r - r0)) - 2 exp(-alpha (r - r0)) ] - E_shift,  r < rc.
// Real: the arithmetic of a pair (precision.hpp); the coefficients are rounded once to Real. Morse is the
// style of the registry (pair.hpp, pair_style.hpp).
#include <Kokkos_Core.hpp>
#include <cmath>

#include "device_math.hpp"
#include "md_config.hpp"
#include "pair_coeffs.hpp"
#include "pair_params.hpp"

namespace spotrun::md {

template <class Real>
struct PairMorseT {
  using real_type = Real;
  Real d0 = 0, alpha = 0, r0 = 0, morse1 = 0, offset = 0, cutsq = 0;

  PairMorseT() = default;  // an unused entry of a pair table (md::PairTable)

  PairMorseT(double d0_, double alpha_, double r0_, double cutoff, bool shift) {
    d0 = static_cast<Real>(d0_);
    alpha = static_cast<Real>(alpha_);
    r0 = static_cast<Real>(r0_);
    morse1 = static_cast<Real>(2.0 * d0_ * alpha_);
    cutsq = static_cast<Real>(cutoff * cutoff);
    const double e = std::exp(-alpha_ * (cutoff - r0_));
    offset = static_cast<Real>(shift ? d0_ * (e * e - 2.0 * e) : 0.0);
  }

  // fpair: F_ij = fpair * (x_i - x_j); energy: the pair energy. Only called for rsq < cutsq.
  KOKKOS_INLINE_FUNCTION void compute(Real rsq, Real& fpair, Real& energy) const {
    const Real r = math::sqrt(rsq);
    const Real dexp = math::exp(-alpha * (r - r0));
    fpair = morse1 * (dexp * dexp - dexp) / r;
    energy = d0 * (dexp * dexp - Real(2) * dexp) - offset;
  }
  KOKKOS_INLINE_FUNCTION void compute_force(Real rsq, Real& fpair) const {
    const Real r = math::sqrt(rsq);
    const Real dexp = math::exp(-alpha * (r - r0));
    fpair = morse1 * (dexp * dexp - dexp) / r;
  }
};

using PairMorse = PairMorseT<double>;       // md.precision = "double"
using PairMorseMixed = PairMorseT<float>;   // md.precision = "mixed"

// md.pair.style = "morse": each type pair's d0, alpha, r0 (LAMMPS pair_coeff order) and cutoff, given in
// [[md.pair.coeff]] for every pair (LAMMPS pair morse neither mixes nor has defaults), md.pair.shift.
struct Morse {
  static constexpr const char* name = "morse";
  static constexpr PairParam params[] = {
      {"d0", "epsilon", "Morse well depth D0", 0, 1e9, nullptr, PairParamMix::None},
      {"alpha", "1/sigma", "Morse stiffness alpha", 0, 1e9, nullptr, PairParamMix::None},
      {"r0", "sigma", "Morse equilibrium distance r0", 0, 1e9, nullptr, PairParamMix::None},
  };
  static constexpr const char* contact = "r0";
  template <class Real>
  using Evaluator = PairMorseT<Real>;
  template <class Real>
  static Evaluator<Real> evaluator(const PairCoeffs& c, int ti, int tj, const MdConfig& cfg) {
    return Evaluator<Real>(c.value(0, ti, tj), c.value(1, ti, tj), c.value(2, ti, tj), c.at(c.cutoff, ti, tj),
                           cfg.shift);
  }
};

}  // namespace spotrun::md
