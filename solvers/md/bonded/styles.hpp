#pragma once
// The bonded styles of LAMMPS that spotrun's MD evaluates: small copyable evaluators of one interaction,
// in LAMMPS's energy convention and coefficient order (`bond_coeff N ...`, `Bond Coeffs` rows). Each is
// device code; geometry.hpp turns an angle's dE/dcos(theta) and a dihedral's dE/dphi into forces.
//   bond harmonic    E = K (r - r0)^2                                  K r0
//   bond fene        E = -K R0^2/2 ln(1 - (r/R0)^2) + [4 eps ((s/r)^12 - (s/r)^6) + eps]_{r < 2^(1/6) s}
//                                                                      K R0 epsilon sigma
//   angle harmonic   E = K (theta - theta0)^2                          K theta0 (degrees)
//   angle cosine     E = K (1 + cos theta)                             K
//   dihedral harmonic E = K (1 + d cos(n phi))                         K d (+1 or -1) n (integer >= 0)
//   dihedral opls    E = K1/2 (1 + cos phi) + K2/2 (1 - cos 2phi) + K3/2 (1 + cos 3phi) + K4/2 (1 - cos 4phi)
//                                                                      K1 K2 K3 K4
#include <Kokkos_Core.hpp>
#include <cmath>

#include "geometry.hpp"

namespace spotrun::md::bonded {

// --- bonds: fbond such that F_i = fbond (x_i - x_j), F_j = -F_i -------------------------------------------
// E false: the force alone (energy is left as it was; FENE's logarithm is not taken).
struct BondHarmonic {
  double k = 0, r0 = 0;
  template <bool E = true>
  KOKKOS_INLINE_FUNCTION void compute(double rsq, double& fbond, double& energy) const {
    const double r = ::sqrt(rsq), dr = r - r0;
    fbond = r > 0 ? -2.0 * k * dr / r : 0.0;
    if (E) energy = k * dr * dr;
  }
};

// What a FENE bond's length did: fine, stretched beyond 0.95 R0 (LAMMPS warns and takes the force at
// (1 - (r/R0)^2) = 0.1), or at or beyond R0 (the bond broke: the run stops, naming the atoms and step).
enum class FeneState : int { Fine = 0, Stretched = 1, Broken = 2 };

struct BondFene {
  double k = 0, r0 = 0, epsilon = 0, sigma = 0;
  template <bool E = true>
  KOKKOS_INLINE_FUNCTION FeneState compute(double rsq, double& fbond, double& energy) const {
    const double r0sq = r0 * r0;
    double rlogarg = 1.0 - rsq / r0sq;
    FeneState state = FeneState::Fine;
    if (rlogarg <= 0.0) {
      fbond = 0;
      energy = 0;
      return FeneState::Broken;
    }
    if (rlogarg < 0.1) {  // as LAMMPS bond fene: "FENE bond too long", the force capped
      state = FeneState::Stretched;
      rlogarg = 0.1;
    }
    fbond = -k / rlogarg;
    if (E) energy = -0.5 * k * r0sq * ::log(rlogarg);
    // The WCA repulsion of the bonded pair, within 2^(1/6) sigma.
    const double s2 = sigma * sigma;
    if (rsq < 1.2599210498948732 * s2) {  // 2^(1/3) sigma^2
      const double sr2 = s2 / rsq, sr6 = sr2 * sr2 * sr2;
      fbond += 48.0 * epsilon * sr6 * (sr6 - 0.5) / rsq;
      if (E) energy += 4.0 * epsilon * sr6 * (sr6 - 1.0) + epsilon;
    }
    return state;
  }
};

// --- angles: the energy and dE/dcos(theta) --------------------------------------------------------------
struct AngleHarmonic {
  double k = 0, theta0 = 0;  // theta0 in radians (the coefficient is in degrees)
  KOKKOS_INLINE_FUNCTION void compute(const AngleGeometry& g, double& dedc, double& energy) const {
    const double dtheta = ::acos(g.c) - theta0;
    energy = k * dtheta * dtheta;
    dedc = -2.0 * k * dtheta / g.s;  // dE/dtheta dtheta/dc, dtheta/dc = -1/sin(theta)
  }
};

struct AngleCosine {
  double k = 0;
  KOKKOS_INLINE_FUNCTION void compute(const AngleGeometry& g, double& dedc, double& energy) const {
    energy = k * (1.0 + g.c);
    dedc = k;
  }
};

// --- dihedrals: the energy and dE/dphi ------------------------------------------------------------------
struct DihedralHarmonic {
  double k = 0;
  int sign = 1, multiplicity = 1;
  KOKKOS_INLINE_FUNCTION void compute(double phi, double& dedphi, double& energy) const {
    const double n = multiplicity;
    energy = k * (1.0 + sign * ::cos(n * phi));
    dedphi = -k * sign * n * ::sin(n * phi);
  }
};

struct DihedralOpls {
  double k1 = 0, k2 = 0, k3 = 0, k4 = 0;
  KOKKOS_INLINE_FUNCTION void compute(double phi, double& dedphi, double& energy) const {
    energy = 0.5 * (k1 * (1.0 + ::cos(phi)) + k2 * (1.0 - ::cos(2.0 * phi)) + k3 * (1.0 + ::cos(3.0 * phi)) +
                    k4 * (1.0 - ::cos(4.0 * phi)));
    dedphi = 0.5 * (-k1 * ::sin(phi) + 2.0 * k2 * ::sin(2.0 * phi) - 3.0 * k3 * ::sin(3.0 * phi) +
                    4.0 * k4 * ::sin(4.0 * phi));
  }
};

}  // namespace spotrun::md::bonded
