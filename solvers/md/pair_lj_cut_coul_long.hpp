#pragma once
// Lennard-Jones 12-6 plus the real-space part of Ewald-summed Coulomb (LAMMPS lj/cut/coul/long): for r < rc_lj
//   E_vdW = 4 eps [ (sigma/r)^12 - (sigma/r)^6 ] - E_shift      (md.pair.shift shifts this part only)
// and for r < rc_coul (md.pair.coulomb_cutoff, one for every pair, as LAMMPS's global cut_coul)
//   E_coul = qqrd2e q_i q_j erfc(g r) / r                         (qqrd2e: md.units; 1 in lj units)
// with g = g_ewald of the k-space solver ([md.kspace]), which adds the rest of the Coulomb sum. erfc is the
// exact function (LAMMPS tabulates it or uses a polynomial good to about 1e-7). Real: precision.hpp.
#include <Kokkos_Core.hpp>
#include <cmath>

#include "md_config.hpp"
#include "pair_coeffs.hpp"
#include "pair_coul.hpp"
#include "pair_lj_cut.hpp"
#include "pair_params.hpp"

namespace spotrun::md {

template <class Real>
struct PairLJCutCoulLongT {
  using real_type = Real;
  static constexpr bool charged = true;     // compute() takes q_i q_j (PairCharged)
  static constexpr bool long_range = true;  // its Coulomb part is the real-space part of a k-space sum
  Real lj1 = 0, lj2 = 0, lj3 = 0, lj4 = 0, offset = 0, cut_ljsq = 0, cut_coulsq = 0, qqrd2e = 1, g_ewald = 0, cutsq = 0;

  PairLJCutCoulLongT() = default;  // an unused entry of a pair table (md::PairTable)

  PairLJCutCoulLongT(double epsilon, double sigma, double cut_lj, double cut_coul, bool shift, double qqrd2e_, double g) {
    const double s6 = std::pow(sigma, 6);
    lj1 = static_cast<Real>(48.0 * epsilon * s6 * s6);
    lj2 = static_cast<Real>(24.0 * epsilon * s6);
    lj3 = static_cast<Real>(4.0 * epsilon * s6 * s6);
    lj4 = static_cast<Real>(4.0 * epsilon * s6);
    cut_ljsq = static_cast<Real>(cut_lj * cut_lj);
    cut_coulsq = static_cast<Real>(cut_coul * cut_coul);
    cutsq = cut_ljsq > cut_coulsq ? cut_ljsq : cut_coulsq;
    qqrd2e = static_cast<Real>(qqrd2e_);
    g_ewald = static_cast<Real>(g);
    const double r6 = s6 / std::pow(cut_lj, 6);
    offset = static_cast<Real>(shift ? 4.0 * epsilon * (r6 * r6 - r6) : 0.0);
  }

  // The parts of the force factor and energy (each 0 beyond its cutoff); full_coul: qqrd2e q_i q_j / r, the
  // whole Coulomb energy of the pair (special_bonds removes the share of its factor from the k-space sum).
  KOKKOS_INLINE_FUNCTION void compute_parts(Real rsq, Real qiqj, Real& flj, Real& fcoul, Real& evdwl, Real& ecoul,
                                            Real& full_coul) const {
    const Real r2inv = Real(1) / rsq;
    const Real r6inv = r2inv * r2inv * r2inv;
    const bool in_lj = rsq < cut_ljsq, in_coul = rsq < cut_coulsq;
    Real fc, ec, full;
    coul_long_parts(rsq, r2inv, qiqj, qqrd2e, g_ewald, fc, ec, full);
    flj = in_lj ? r6inv * (lj1 * r6inv - lj2) * r2inv : Real(0);
    fcoul = in_coul ? fc : Real(0);
    evdwl = in_lj ? r6inv * (lj3 * r6inv - lj4) - offset : Real(0);
    ecoul = in_coul ? ec : Real(0);
    full_coul = in_coul ? full : Real(0);
  }
  KOKKOS_INLINE_FUNCTION void compute(Real rsq, Real qiqj, Real& fpair, Real& evdwl, Real& ecoul) const {
    Real flj, fcoul, full;
    compute_parts(rsq, qiqj, flj, fcoul, evdwl, ecoul, full);
    fpair = flj + fcoul;
  }
  KOKKOS_INLINE_FUNCTION void compute_force(Real rsq, Real qiqj, Real& fpair) const {
    Real evdwl, ecoul;
    compute(rsq, qiqj, fpair, evdwl, ecoul);
  }
};

// md.pair.style = "lj/cut/coul/long": lj/cut's coefficients, cutoffs and mixing for the LJ part; the Coulomb
// cutoff md.pair.coulomb_cutoff for every pair; g_ewald from [md.kspace] (which it needs).
struct LjCutCoulLong {
  static constexpr const char* name = "lj/cut/coul/long";
  static constexpr const auto& params = LjCut::params;  // the LJ part's coefficients, as lj/cut
  static constexpr const char* contact = LjCut::contact;
  static constexpr bool global_coulomb_cutoff = true;  // pair_coeff cutoffs are the LJ part's only
  template <class Real>
  using Evaluator = PairLJCutCoulLongT<Real>;
  template <class Real>
  static Evaluator<Real> evaluator(const PairCoeffs& c, int ti, int tj, const MdConfig& cfg) {
    return Evaluator<Real>(c.value(0, ti, tj), c.value(1, ti, tj), c.at(c.cutoff, ti, tj), cfg.coulomb_cutoff_or_default(),
                           cfg.shift, cfg.unit().qqrd2e, cfg.kspace.g_ewald_resolved);
  }
};

}  // namespace spotrun::md
