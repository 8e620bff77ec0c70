#pragma once
// Spectral derivatives for DistributedFft::backward_gradient: the products i k_d X on a rank's block of an
// array whose axis d holds wavenumber indices, k_d = unit_k x the signed wavenumber of index i along an axis
// of n points: i for 2i < n, i - n for 2i > n, and 0 for the Nyquist index 2i = n (a real field cannot hold
// the derivative of that mode; the usual choice of spectral solvers and of PPPM's ik differentiation).
// Kokkos kernels in the FFT's memory space, and a host loop over one plane.
#include <array>
#include <cstddef>

#include "box.hpp"
#include "types.hpp"

namespace spotrun::fft::impl {

KOKKOS_INLINE_FUNCTION double derivative_wavenumber(int i, int n) {
  return 2 * i == n ? 0.0 : static_cast<double>(2 * i < n ? i : i - n);
}

// out = i k_axis in on the block `layout` of a grid of n points (out may be in).
void times_ik(const Layout3& layout, const std::array<int, 3>& n, int axis, double unit_k, const Complex* in,
              Complex* out);

// On a block whose axes 1 and 2 hold wavenumber indices: z = i k_z w, then w = i k_y w (in place); one pass.
void times_ik_yz(const Layout3& layout, const std::array<int, 3>& n, const std::array<double, 3>& unit_k, Complex* w,
                 Complex* z);

// Host: out = i k_axis w on one plane [ky][kz] of ny x nzc values (axis 1: ky, 2: kz) of a grid of n points.
inline void times_ik_plane(const Complex* w, const std::array<int, 3>& n, int nzc, int axis, double unit_k,
                           Complex* out) {
  for (int j = 0; j < n[1]; ++j) {
    const Complex* row = w + static_cast<std::size_t>(j) * nzc;
    Complex* o = out + static_cast<std::size_t>(j) * nzc;
    if (axis == 1) {
      const double k = unit_k * derivative_wavenumber(j, n[1]);
      for (int c = 0; c < nzc; ++c) o[c] = Complex(-k * row[c].imag(), k * row[c].real());
    } else {
      for (int c = 0; c < nzc; ++c) {
        const double k = unit_k * derivative_wavenumber(c, n[2]);
        o[c] = Complex(-k * row[c].imag(), k * row[c].real());
      }
    }
  }
}

}  // namespace spotrun::fft::impl
