#pragma once
// Lennard-Jones 12-6 plus cut Coulomb (LAMMPS lj/cut/coul/cut): for r < rc_lj
//   E_vdW = 4 eps [ (sigma/r)^12 - (sigma/r)^6 ] - E_shift      (md.pair.shift shifts this part only, as LAMMPS)
// and for r < rc_coul (md.pair.coulomb_cutoff, default md.cutoff)
//   E_coul = qqrd2e q_i q_j / r                                   (qqrd2e: md.units; 1 in lj units)
// Real: the arithmetic of a pair (precision.hpp). LjCutCoulCut is the style of the registry (pair.hpp).
#include <Kokkos_Core.hpp>
#include <cmath>

#include "md_config.hpp"
#include "pair_coeffs.hpp"
#include "pair_lj_cut.hpp"
#include "pair_params.hpp"

namespace spotrun::md {

template <class Real>
struct PairLJCutCoulCutT {
  using real_type = Real;
  static constexpr bool charged = true;  // compute() takes q_i q_j (force.hpp's PairCharged)
  Real lj1 = 0, lj2 = 0, lj3 = 0, lj4 = 0, offset = 0, cut_ljsq = 0, cut_coulsq = 0, qqrd2e = 1, cutsq = 0;

  PairLJCutCoulCutT() = default;  // an unused entry of a pair table (md::PairTable)

  PairLJCutCoulCutT(double epsilon, double sigma, double cut_lj, double cut_coul, bool shift, double qqrd2e_) {
    const double s6 = std::pow(sigma, 6);
    lj1 = static_cast<Real>(48.0 * epsilon * s6 * s6);
    lj2 = static_cast<Real>(24.0 * epsilon * s6);
    lj3 = static_cast<Real>(4.0 * epsilon * s6 * s6);
    lj4 = static_cast<Real>(4.0 * epsilon * s6);
    cut_ljsq = static_cast<Real>(cut_lj * cut_lj);
    cut_coulsq = static_cast<Real>(cut_coul * cut_coul);
    cutsq = cut_ljsq > cut_coulsq ? cut_ljsq : cut_coulsq;
    qqrd2e = static_cast<Real>(qqrd2e_);
    const double r6 = s6 / std::pow(cut_lj, 6);
    offset = static_cast<Real>(shift ? 4.0 * epsilon * (r6 * r6 - r6) : 0.0);
  }

  // The two parts of the force factor (F_ij = (flj + fcoul) (x_i - x_j)) and of the energy: each 0 beyond its
  // cutoff. Only called for rsq < cutsq.
  KOKKOS_INLINE_FUNCTION void compute_parts(Real rsq, Real qiqj, Real& flj, Real& fcoul, Real& evdwl, Real& ecoul) const {
    const Real r2inv = Real(1) / rsq;
    const Real r6inv = r2inv * r2inv * r2inv;
    const bool in_lj = rsq < cut_ljsq, in_coul = rsq < cut_coulsq;
    const Real coul = qqrd2e * qiqj * ::sqrt(r2inv);
    flj = in_lj ? r6inv * (lj1 * r6inv - lj2) * r2inv : Real(0);
    fcoul = in_coul ? coul * r2inv : Real(0);
    evdwl = in_lj ? r6inv * (lj3 * r6inv - lj4) - offset : Real(0);
    ecoul = in_coul ? coul : Real(0);
  }
  KOKKOS_INLINE_FUNCTION void compute(Real rsq, Real qiqj, Real& fpair, Real& evdwl, Real& ecoul) const {
    const Real r2inv = Real(1) / rsq;
    const Real r6inv = r2inv * r2inv * r2inv;
    const bool in_lj = rsq < cut_ljsq, in_coul = rsq < cut_coulsq;
    const Real forcecoul = in_coul ? qqrd2e * qiqj * ::sqrt(r2inv) : Real(0);
    const Real forcelj = in_lj ? r6inv * (lj1 * r6inv - lj2) : Real(0);
    fpair = (forcecoul + forcelj) * r2inv;  // LAMMPS's order of the operations
    evdwl = in_lj ? r6inv * (lj3 * r6inv - lj4) - offset : Real(0);
    ecoul = forcecoul;
  }
  KOKKOS_INLINE_FUNCTION void compute_force(Real rsq, Real qiqj, Real& fpair) const {
    Real evdwl, ecoul;
    compute(rsq, qiqj, fpair, evdwl, ecoul);
  }
};

// md.pair.style = "lj/cut/coul/cut": each type pair's epsilon, sigma and LJ cutoff as lj/cut; the Coulomb
// cutoff md.pair.coulomb_cutoff (LAMMPS pair_style lj/cut/coul/cut cut_lj cut_coul), but a [[md.pair.coeff]]
// block's cutoff is both of its pair's, as LAMMPS's pair_coeff with one cutoff (pair_coeffs.hpp).
struct LjCutCoulCut {
  static constexpr const char* name = "lj/cut/coul/cut";
  static constexpr const auto& params = LjCut::params;  // the LJ part's coefficients, as lj/cut
  static constexpr const char* contact = LjCut::contact;
  template <class Real>
  using Evaluator = PairLJCutCoulCutT<Real>;
  template <class Real>
  static Evaluator<Real> evaluator(const PairCoeffs& c, int ti, int tj, const MdConfig& cfg) {
    return Evaluator<Real>(c.value(0, ti, tj), c.value(1, ti, tj), c.at(c.cutoff, ti, tj), c.at(c.coul_cutoff, ti, tj),
                           cfg.shift, cfg.unit().qqrd2e);
  }
};

}  // namespace spotrun::md
