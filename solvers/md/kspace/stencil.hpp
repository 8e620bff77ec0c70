#pragma once
// Charge assignment of PPPM (Hockney and Eastwood): a charge at mesh coordinate u = (x - lo) n / L spreads
// over the `order` mesh points nearest to it with the weights of the centred cardinal B-spline of that
// order, W(u - m), the same weights that interpolate the field back to it. Callable in device kernels.
#include <Kokkos_Core.hpp>

#include "kspace_params.hpp"

namespace spotrun::md::kspace {

// The first of the `order` mesh points (along one axis) that a charge at mesh coordinate u reaches (see
// stencil_weights), as a double: any u, even one far outside the mesh.
KOKKOS_INLINE_FUNCTION double stencil_first_point(double u, int order) { return ::floor(u + 0.5 * order) - (order - 1); }

// The first of the `order` mesh points (along one axis) that a charge at mesh coordinate u reaches, and
// their weights w[0 .. order - 1] (summing to 1). Odd orders centre the stencil on the nearest point, even
// ones on the nearest midpoint. The B-spline M_p of support [0, p] at frac + j (j < p, frac in [0, 1)) by
// the recursion M_p(x) = (x M_(p-1)(x) + (p - x) M_(p-1)(x - 1)) / (p - 1) from M_1 = 1 on [0, 1); the
// centred spline is W(s) = M_p(s + p / 2).
KOKKOS_INLINE_FUNCTION int stencil_weights(double u, int order, double* w) {
  const double first = stencil_first_point(u, order);
  const double frac = (u + 0.5 * order) - (first + (order - 1));
  double c[k_max_order];
  c[0] = 1.0;
  for (int p = 2; p <= order; ++p) {
    const double inv = 1.0 / (p - 1);
    for (int j = p - 1; j >= 0; --j) {
      const double x = frac + j;
      const double a = j < p - 1 ? c[j] : 0.0;  // M_(p-1)(x)
      const double b = j > 0 ? c[j - 1] : 0.0;  // M_(p-1)(x - 1)
      c[j] = (x * a + (p - x) * b) * inv;
    }
  }
  // Mesh point first + k is at distance u - first - k = frac + order - 1 - k below t - order / 2.
  for (int k = 0; k < order; ++k) w[k] = c[order - 1 - k];
  return static_cast<int>(first);
}

// Where the owned atoms of a rank fall on its brick of the mesh: mesh coordinates u_d = (x_d - lo_d) *
// inv_h_d; the first index and extent along each axis of the points a stencil may reach (an atom whose
// stencil leaves them is refused); and the array holding the brick (row-major [x][y][z], z fastest): points
// [base[d], base[d] + dim[d]) along each axis, a point outside them the periodic image (period[d] = n[d])
// along an axis the brick holds whole, none (period 0) along the others.
struct BrickMap {
  double lo[3] = {0, 0, 0};
  double inv_h[3] = {1, 1, 1};
  int first[3] = {0, 0, 0};
  int extent[3] = {0, 0, 0};
  int order = 5;
  int base[3] = {0, 0, 0};
  int dim[3] = {0, 0, 0};
  int period[3] = {0, 0, 0};

  // The array index along axis d of brick point i.
  KOKKOS_INLINE_FUNCTION int local(int d, int i) const {
    if (period[d] != 0) i += i < 0 ? period[d] : i >= period[d] ? -period[d] : 0;
    return i - base[d];
  }
  // The array offsets of the stencil's points from first points s: row(a, b) + z[c] for point (s0 + a, s1 + b,
  // s2 + c).
  template <int P>
  struct Points {
    long xy[P][P];
    int z[P];
  };
  template <int P>
  KOKKOS_INLINE_FUNCTION void points(const int s[3], Points<P>& pts) const {
    int y[P];
    for (int k = 0; k < P; ++k) {
      y[k] = local(1, s[1] + k);
      pts.z[k] = local(2, s[2] + k);
    }
    for (int a = 0; a < P; ++a) {
      const long x = static_cast<long>(local(0, s[0] + a)) * dim[1];
      for (int b = 0; b < P; ++b) pts.xy[a][b] = (x + y[b]) * dim[2];
    }
  }
  // The stencil of position x: first points s[d] and weights w[d][.]; false when it leaves the brick.
  // P: the order (`order`) as a constant: the kernels are made for each order, their loops of known length.
  template <int P>
  KOKKOS_INLINE_FUNCTION bool stencil(const double x[3], int s[3], double w[3][k_max_order]) const {
    constexpr int p = P;
    bool inside = true;
    for (int d = 0; d < 3; ++d) {
      const double u = (x[d] - lo[d]) * inv_h[d];
      if (!(u > first[d] - 1.0 && u < first[d] + extent[d] + 1.0)) {  // far outside, or not a number
        s[d] = first[d];
        for (int k = 0; k < p; ++k) w[d][k] = 0.0;
        inside = false;
        continue;
      }
      s[d] = stencil_weights(u, p, w[d]);
      if (s[d] < first[d] || s[d] + p > first[d] + extent[d]) inside = false;
    }
    return inside;
  }
};

}  // namespace spotrun::md::kspace
