#include "derivative.hpp"

#include <cstdint>

namespace spotrun::fft::impl {
namespace {

// The points of a block over a three-dimensional range in storage order (no index division per point): at
// (a, b, c), the point's offset in the block and its global indices.
struct BlockRange {
  int lo[3] = {0, 0, 0};
  int extent[3] = {0, 0, 0};  // in storage order
  int order[3] = {0, 1, 2};

  explicit BlockRange(const Layout3& l) {
    for (int d = 0; d < 3; ++d) order[d] = l.order[d];
    for (int d = 0; d < 3; ++d) {
      lo[d] = l.box.lo[d];
      extent[d] = static_cast<int>(l.box.extent(order[d]));
    }
  }
  using Range = Kokkos::MDRangePolicy<ExecSpace, Kokkos::Rank<3, Kokkos::Iterate::Right, Kokkos::Iterate::Right>,
                                      Kokkos::IndexType<int>>;
  // The host runs whole rows of the fastest axis as one tile.
  Range policy() const {
    if (k_host_accessible) return Range({0, 0, 0}, {extent[0], extent[1], extent[2]}, {1, 1, extent[2]});
    return Range({0, 0, 0}, {extent[0], extent[1], extent[2]});
  }
  KOKKOS_INLINE_FUNCTION std::int64_t operator()(int a, int b, int c, int idx[3]) const {
    idx[order[0]] = lo[order[0]] + a;
    idx[order[1]] = lo[order[1]] + b;
    idx[order[2]] = lo[order[2]] + c;
    return (static_cast<std::int64_t>(a) * extent[1] + b) * extent[2] + c;
  }
};

}  // namespace

void times_ik(const Layout3& layout, const std::array<int, 3>& n, int axis, double unit_k, const Complex* in,
              Complex* out) {
  if (layout.count() == 0) return;
  const BlockRange range(layout);
  const int na = n[static_cast<std::size_t>(axis)];
  Unmanaged<const Complex> src(in, layout.count());
  Unmanaged<Complex> dst(out, layout.count());
  Kokkos::parallel_for(
      "fft::times_ik", range.policy(), KOKKOS_LAMBDA(const int a, const int b, const int c) {
        int idx[3];
        const std::int64_t p = range(a, b, c, idx);
        const double k = unit_k * derivative_wavenumber(idx[axis], na);
        const Complex v = src(p);
        dst(p) = Complex(-k * v.imag(), k * v.real());
      });
}

void times_ik_yz(const Layout3& layout, const std::array<int, 3>& n, const std::array<double, 3>& unit_k, Complex* w,
                 Complex* z) {
  if (layout.count() == 0) return;
  const BlockRange range(layout);
  const int ny = n[1], nz = n[2];
  const double uy = unit_k[1], uz = unit_k[2];
  Unmanaged<Complex> wv(w, layout.count()), zv(z, layout.count());
  Kokkos::parallel_for(
      "fft::times_ik_yz", range.policy(), KOKKOS_LAMBDA(const int a, const int b, const int c) {
        int idx[3];
        const std::int64_t p = range(a, b, c, idx);
        const double ky = uy * derivative_wavenumber(idx[1], ny), kz = uz * derivative_wavenumber(idx[2], nz);
        const Complex v = wv(p);
        zv(p) = Complex(-kz * v.imag(), kz * v.real());
        wv(p) = Complex(-ky * v.imag(), ky * v.real());
      });
}

}  // namespace spotrun::fft::impl
