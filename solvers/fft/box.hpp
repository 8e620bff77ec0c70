#pragma once
// Geometry of distributed grids as values: index boxes with inclusive bounds, their intersection, the
// storage order of a local block, and the even split of an axis over ranks. No MPI, no memory.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace spotrun::fft {

// A box of global grid indices, lo[d] <= i[d] <= hi[d] (inclusive). Empty when hi[d] < lo[d] for some d.
struct Box3i {
  std::array<int, 3> lo{0, 0, 0};
  std::array<int, 3> hi{-1, -1, -1};

  int extent(int d) const { return hi[d] >= lo[d] ? hi[d] - lo[d] + 1 : 0; }
  bool empty() const { return extent(0) == 0 || extent(1) == 0 || extent(2) == 0; }
  std::size_t count() const {
    return static_cast<std::size_t>(extent(0)) * static_cast<std::size_t>(extent(1)) *
           static_cast<std::size_t>(extent(2));
  }
  bool contains(int i, int j, int k) const {
    return i >= lo[0] && i <= hi[0] && j >= lo[1] && j <= hi[1] && k >= lo[2] && k <= hi[2];
  }
  friend bool operator==(const Box3i& a, const Box3i& b) {
    if (a.empty() && b.empty()) return true;
    return a.lo == b.lo && a.hi == b.hi;
  }
  friend bool operator!=(const Box3i& a, const Box3i& b) { return !(a == b); }
};

// The common part of two boxes (possibly empty).
inline Box3i collide(const Box3i& a, const Box3i& b) {
  Box3i c;
  for (int d = 0; d < 3; ++d) {
    c.lo[d] = std::max(a.lo[d], b.lo[d]);
    c.hi[d] = std::min(a.hi[d], b.hi[d]);
  }
  return c;
}

// A rank's block of a distributed array: its box and the order in which the axes are stored, slowest
// first (order = {0, 1, 2}: x slowest, z fastest, row-major [x][y][z]). Element (i, j, k) of the box
// sits at local offset sum_d (g[d] - box.lo[d]) * stride(d).
struct Layout3 {
  Box3i box;
  std::array<int, 3> order{0, 1, 2};

  std::size_t count() const { return box.count(); }
  // Stride of axis d in elements.
  std::size_t stride(int d) const {
    std::size_t s = 1;
    for (int p = 2; p >= 0; --p) {
      if (order[p] == d) return s;
      s *= static_cast<std::size_t>(box.extent(order[p]));
    }
    return 0;
  }
  std::size_t offset(int i, int j, int k) const {
    return static_cast<std::size_t>(i - box.lo[0]) * stride(0) + static_cast<std::size_t>(j - box.lo[1]) * stride(1) +
           static_cast<std::size_t>(k - box.lo[2]) * stride(2);
  }
  friend bool operator==(const Layout3& a, const Layout3& b) { return a.box == b.box && a.order == b.order; }
};

// The part [first, first + count) of n indices that part p of `parts` owns when they are split as
// evenly as possible (the first n % parts parts get one more); the same rule as io::block_of.
inline void split_even(int n, int parts, int p, int& first, int& count) {
  const int base = n / parts, extra = n % parts;
  first = p * base + std::min(p, extra);
  count = base + (p < extra ? 1 : 0);
}

// Inclusive bounds of part p of an even split of [0, n).
inline std::array<int, 2> split_bounds(int n, int parts, int p) {
  int first = 0, count = 0;
  split_even(n, parts, p, first, count);
  return {first, first + count - 1};
}

}  // namespace spotrun::fft
