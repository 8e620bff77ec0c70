#pragma once
// Coulomb alone between charges, LAMMPS's coul/cut and coul/long: for r < rc (no van der Waals part)
//   coul/cut:   E = qqrd2e q_i q_j / r
//   coul/long:  E = qqrd2e q_i q_j erfc(g r) / r   (the real-space part; [md.kspace] adds the rest)
// (qqrd2e: the Coulomb constant of md.units, 1 in lj units). Neither has per-pair coefficients (LAMMPS:
// pair_coeff * *). Real: precision.hpp.
#include <Kokkos_Core.hpp>
#include <array>
#include <cmath>

#include "comm/errors.hpp"
#include "md_config.hpp"
#include "pair_coeffs.hpp"
#include "pair_params.hpp"

namespace spotrun::md {

// The real-space part of an Ewald-summed Coulomb pair (coul/long and lj/cut/coul/long), inside its cutoff:
// the force factor fcoul (F_ij = fcoul (x_i - x_j)), the energy qqrd2e q_i q_j erfc(g r) / r and the whole
// Coulomb energy full = qqrd2e q_i q_j / r; r2inv = 1 / rsq.
template <class Real>
KOKKOS_INLINE_FUNCTION void coul_long_parts(Real rsq, Real r2inv, Real qiqj, Real qqrd2e, Real g_ewald, Real& fcoul,
                                            Real& ecoul, Real& full) {
  const Real r = ::sqrt(rsq), grij = g_ewald * r;
  const Real prefactor = qqrd2e * qiqj / r;
  const Real erfc_g = static_cast<Real>(::erfc(static_cast<double>(grij)));
  const Real ewald_f = Real(1.12837916709551257390);  // 2 / sqrt(pi)
  fcoul = prefactor * (erfc_g + ewald_f * grij * ::exp(-grij * grij)) * r2inv;
  ecoul = prefactor * erfc_g;
  full = prefactor;
}

template <class Real>
struct PairCoulCutT {
  using real_type = Real;
  static constexpr bool charged = true;  // compute() takes q_i q_j (PairCharged)
  Real cutsq = 0, qqrd2e = 1;

  PairCoulCutT() = default;  // an unused entry of a pair table (md::PairTable)
  PairCoulCutT(double cut, double qqrd2e_) : cutsq(static_cast<Real>(cut * cut)), qqrd2e(static_cast<Real>(qqrd2e_)) {}

  // The parts (the van der Waals ones 0), as the charged styles give them (special bonds scale each part).
  KOKKOS_INLINE_FUNCTION void compute_parts(Real rsq, Real qiqj, Real& flj, Real& fcoul, Real& evdwl, Real& ecoul) const {
    const Real r2inv = Real(1) / rsq;
    ecoul = qqrd2e * qiqj * ::sqrt(r2inv);
    fcoul = ecoul * r2inv;
    flj = evdwl = Real(0);
  }
  KOKKOS_INLINE_FUNCTION void compute(Real rsq, Real qiqj, Real& fpair, Real& evdwl, Real& ecoul) const {
    Real flj;
    compute_parts(rsq, qiqj, flj, fpair, evdwl, ecoul);
  }
  KOKKOS_INLINE_FUNCTION void compute_force(Real rsq, Real qiqj, Real& fpair) const {
    Real evdwl, ecoul;
    compute(rsq, qiqj, fpair, evdwl, ecoul);
  }
};

template <class Real>
struct PairCoulLongT {
  using real_type = Real;
  static constexpr bool charged = true;     // compute() takes q_i q_j (PairCharged)
  static constexpr bool long_range = true;  // the real-space part of a k-space sum (PairLongRange)
  Real cutsq = 0, qqrd2e = 1, g_ewald = 0;

  PairCoulLongT() = default;  // an unused entry of a pair table (md::PairTable)
  PairCoulLongT(double cut, double qqrd2e_, double g)
      : cutsq(static_cast<Real>(cut * cut)), qqrd2e(static_cast<Real>(qqrd2e_)), g_ewald(static_cast<Real>(g)) {}

  // full_coul: qqrd2e q_i q_j / r, the whole Coulomb energy of the pair (special_bonds removes the share of its
  // factor from the k-space sum).
  KOKKOS_INLINE_FUNCTION void compute_parts(Real rsq, Real qiqj, Real& flj, Real& fcoul, Real& evdwl, Real& ecoul,
                                            Real& full_coul) const {
    coul_long_parts(rsq, Real(1) / rsq, qiqj, qqrd2e, g_ewald, fcoul, ecoul, full_coul);
    flj = evdwl = Real(0);
  }
  KOKKOS_INLINE_FUNCTION void compute(Real rsq, Real qiqj, Real& fpair, Real& evdwl, Real& ecoul) const {
    Real flj, full;
    compute_parts(rsq, qiqj, flj, fpair, evdwl, ecoul, full);
  }
  KOKKOS_INLINE_FUNCTION void compute_force(Real rsq, Real qiqj, Real& fpair) const {
    Real evdwl, ecoul;
    compute(rsq, qiqj, fpair, evdwl, ecoul);
  }
};

// md.pair.style = "coul/cut": one cutoff per pair, md.cutoff or a [[md.pair.coeff]] block's `cutoff` (mixed
// for unlike pairs not given, as LAMMPS's coul/cut); md.pair.coulomb_cutoff is not used.
struct CoulCut {
  static constexpr const char* name = "coul/cut";
  static constexpr std::array<PairParam, 0> params{};  // no coefficients
  static constexpr const char* contact = "";            // no contact distance: no close-atoms check
  template <class Real>
  using Evaluator = PairCoulCutT<Real>;
  template <class Real>
  static Evaluator<Real> evaluator(const PairCoeffs& c, int ti, int tj, const MdConfig& cfg) {
    return Evaluator<Real>(c.at(c.cutoff, ti, tj), cfg.unit().qqrd2e);
  }
  static void check_coeffs(const PairCoeffs&, const MdConfig& cfg) {
    if (cfg.coulomb_cutoff > 0)
      throw InputError("md.pair.coulomb_cutoff: pair style \"coul/cut\" has one cutoff, md.cutoff (or a "
                       "[[md.pair.coeff]] block's cutoff); remove md.pair.coulomb_cutoff");
  }
};

// md.pair.style = "coul/long": one Coulomb cutoff for every pair, md.pair.coulomb_cutoff (default md.cutoff),
// as LAMMPS's pair_style coul/long cut; g_ewald from [md.kspace] (which it needs).
struct CoulLong {
  static constexpr const char* name = "coul/long";
  static constexpr std::array<PairParam, 0> params{};  // no coefficients
  static constexpr const char* contact = "";            // no contact distance: no close-atoms check
  static constexpr bool global_coulomb_cutoff = true;
  template <class Real>
  using Evaluator = PairCoulLongT<Real>;
  template <class Real>
  static Evaluator<Real> evaluator(const PairCoeffs&, int, int, const MdConfig& cfg) {
    return Evaluator<Real>(cfg.coulomb_cutoff_or_default(), cfg.unit().qqrd2e, cfg.kspace.g_ewald_resolved);
  }
  static void check_coeffs(const PairCoeffs&, const MdConfig& cfg) {
    if (!cfg.pair_coeffs.empty())
      throw InputError("md.pair.coeff: pair style \"coul/long\" takes no [[md.pair.coeff]] blocks (one Coulomb "
                       "cutoff for every pair: md.pair.coulomb_cutoff, default md.cutoff)");
  }
};

}  // namespace spotrun::md
