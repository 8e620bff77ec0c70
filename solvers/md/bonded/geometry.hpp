#pragma once
// The geometry of bonded interactions shared by their styles: the forces of an angle from dE/dcos(theta),
// of a dihedral from dE/dphi. Vectors are the minimum-image separations LAMMPS uses:
//   angle i-j-k:       del1 = x_i - x_j, del2 = x_k - x_j
//   dihedral i-j-k-l:  b1 = x_j - x_i, b2 = x_k - x_j, b3 = x_l - x_k
// phi is the IUPAC dihedral (trans = 180 degrees), signed: phi = atan2(|b2| b1 . (b2 x b3), (b1 x b2) . (b2 x b3)).
// Device code (KOKKOS_INLINE_FUNCTION), double arithmetic.
#include <Kokkos_Core.hpp>
#include <cmath>

namespace spotrun::md::bonded {

// Smallest sine of an angle and smallest |b1 x b2|^2 relative to |b1|^2 |b2|^2 a dihedral divides by
// (LAMMPS's SMALL of angle_harmonic, 0.001).
constexpr double k_small = 0.001;

KOKKOS_INLINE_FUNCTION double dot3(const double* a, const double* b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
KOKKOS_INLINE_FUNCTION void cross3(const double* a, const double* b, double* c) {
  c[0] = a[1] * b[2] - a[2] * b[1];
  c[1] = a[2] * b[0] - a[0] * b[2];
  c[2] = a[0] * b[1] - a[1] * b[0];
}

// cos(theta) of the angle between del1 and del2, clamped to [-1, 1], and the two lengths squared.
struct AngleGeometry {
  double rsq1, rsq2, r1, r2, c, s;  // s = sin(theta), at least k_small
};
KOKKOS_INLINE_FUNCTION AngleGeometry angle_geometry(const double* del1, const double* del2) {
  AngleGeometry g;
  g.rsq1 = dot3(del1, del1);
  g.rsq2 = dot3(del2, del2);
  g.r1 = ::sqrt(g.rsq1);
  g.r2 = ::sqrt(g.rsq2);
  g.c = dot3(del1, del2) / (g.r1 * g.r2);
  if (g.c > 1.0) g.c = 1.0;
  if (g.c < -1.0) g.c = -1.0;
  g.s = ::sqrt(1.0 - g.c * g.c);
  if (g.s < k_small) g.s = k_small;
  return g;
}

// The forces on the end atoms i (f1) and k (f3) of an angle whose energy changes by dedc per unit
// cos(theta); the middle atom takes -(f1 + f3).
KOKKOS_INLINE_FUNCTION void angle_forces(const AngleGeometry& g, const double* del1, const double* del2, double dedc,
                                         double* f1, double* f3) {
  const double a = dedc;  // F_i = -dE/dc dc/dx_i, dc/dx_i = del2 / (r1 r2) - c del1 / r1^2
  const double a11 = a * g.c / g.rsq1, a12 = -a / (g.r1 * g.r2), a22 = a * g.c / g.rsq2;
  for (int d = 0; d < 3; ++d) {
    f1[d] = a11 * del1[d] + a12 * del2[d];
    f3[d] = a22 * del2[d] + a12 * del1[d];
  }
}

// The signed dihedral angle of b1, b2, b3 (radians, in (-pi, pi]) and what its forces need.
struct DihedralGeometry {
  double m[3], n[3];  // b1 x b2, b2 x b3
  double msq, nsq, b2len, phi;
};
KOKKOS_INLINE_FUNCTION DihedralGeometry dihedral_geometry(const double* b1, const double* b2, const double* b3) {
  DihedralGeometry g;
  cross3(b1, b2, g.m);
  cross3(b2, b3, g.n);
  g.msq = dot3(g.m, g.m);
  g.nsq = dot3(g.n, g.n);
  const double b2sq = dot3(b2, b2);
  g.b2len = ::sqrt(b2sq);
  // Collinear bonds: no plane; LAMMPS guards its divisions the same way.
  const double floor1 = k_small * k_small * dot3(b1, b1) * b2sq, floor2 = k_small * k_small * b2sq * dot3(b3, b3);
  if (g.msq < floor1) g.msq = floor1;
  if (g.nsq < floor2) g.nsq = floor2;
  g.phi = ::atan2(g.b2len * dot3(b1, g.n), dot3(g.m, g.n));
  return g;
}

// The forces on the four atoms of a dihedral whose energy changes by dedphi per radian of phi
// (Blondel and Karplus, J. Comput. Chem. 17, 1132 (1996)).
KOKKOS_INLINE_FUNCTION void dihedral_forces(const DihedralGeometry& g, const double* b1, const double* b2,
                                            const double* b3, double dedphi, double* f1, double* f2, double* f3,
                                            double* f4) {
  const double b2sq = g.b2len * g.b2len;
  const double p = dot3(b1, b2) / b2sq, q = dot3(b3, b2) / b2sq;
  for (int d = 0; d < 3; ++d) {
    // dphi/dx_i = -|b2| m / |m|^2, dphi/dx_l = |b2| n / |n|^2; the middle atoms' derivatives make the sum
    // and the torque vanish (p = b1.b2 / |b2|^2, q = b3.b2 / |b2|^2).
    const double dphi1 = -g.b2len * g.m[d] / g.msq, dphi4 = g.b2len * g.n[d] / g.nsq;
    f1[d] = -dedphi * dphi1;
    f4[d] = -dedphi * dphi4;
    f2[d] = -dedphi * (-(p + 1.0) * dphi1 + q * dphi4);
    f3[d] = -dedphi * (p * dphi1 - (q + 1.0) * dphi4);
  }
}

}  // namespace spotrun::md::bonded
