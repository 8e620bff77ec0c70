#pragma once
// Index helpers for kernels over this rank's block of the spectral (half) grid and of the physical grid:
// global indices and wavenumbers from a local offset, the 2/3-rule mask and the weight of a mode in
// sums over the half spectrum. Plain values, copied into kernels.
#include <Kokkos_Core.hpp>
#include <array>
#include <cmath>
#include <cstdint>

#include "solvers/fft/box.hpp"
#include "solvers/fft/geometry.hpp"
#include "solvers/fft/types.hpp"

namespace spotrun::fluid {

// Wavenumber of index i in a periodic direction of n points on [0, 2 pi): i for i < n/2, i - n above.
// The Nyquist index (i == n/2, n even) has no sign: its derivative is taken as zero.
KOKKOS_INLINE_FUNCTION double derivative_wavenumber(int i, int n) {
  return 2 * i < n ? static_cast<double>(i) : (2 * i == n ? 0.0 : static_cast<double>(i - n));
}
// Signed wavenumber of index i for magnitudes (the Nyquist index counts as +n/2).
KOKKOS_INLINE_FUNCTION int signed_wavenumber(int i, int n) { return 2 * i <= n ? i : i - n; }

// 3D loops over a block in its storage order (slowest index first): the innermost loop runs along
// contiguous memory, and no index is recovered by division.
using BlockRange = Kokkos::MDRangePolicy<fft::ExecSpace, Kokkos::Rank<3, Kokkos::Iterate::Right, Kokkos::Iterate::Right>,
                                         Kokkos::IndexType<int>>;

// Maps local positions of a Layout3 block to global indices (i, j, k): either a flat offset m, or the
// loop indices (a, b, c) of its storage order.
struct BlockIndex {
  int lo[3] = {0, 0, 0};
  int ext[3] = {0, 0, 0};
  int ord[3] = {0, 1, 2};

  BlockIndex() = default;
  explicit BlockIndex(const fft::Layout3& l) {
    for (int d = 0; d < 3; ++d) {
      lo[d] = l.box.lo[d];
      ext[d] = l.box.extent(d);
      ord[d] = l.order[d];
    }
  }
  BlockRange range() const { return BlockRange({0, 0, 0}, {ext[ord[0]], ext[ord[1]], ext[ord[2]]}); }
  // Global indices of loop position (a, b, c); returns the flat offset.
  KOKKOS_INLINE_FUNCTION std::size_t at(int a, int b, int c, int g[3]) const {
    g[ord[0]] = lo[ord[0]] + a;
    g[ord[1]] = lo[ord[1]] + b;
    g[ord[2]] = lo[ord[2]] + c;
    return (static_cast<std::size_t>(a) * static_cast<std::size_t>(ext[ord[1]]) + static_cast<std::size_t>(b)) *
               static_cast<std::size_t>(ext[ord[2]]) +
           static_cast<std::size_t>(c);
  }
  KOKKOS_INLINE_FUNCTION void global(std::size_t m, int g[3]) const {
    const int e2 = ext[ord[2]], e1 = ext[ord[1]];
    const int c = static_cast<int>(m % static_cast<std::size_t>(e2));
    const std::size_t t = m / static_cast<std::size_t>(e2);
    const int b = static_cast<int>(t % static_cast<std::size_t>(e1));
    const int a = static_cast<int>(t / static_cast<std::size_t>(e1));
    g[ord[0]] = lo[ord[0]] + a;
    g[ord[1]] = lo[ord[1]] + b;
    g[ord[2]] = lo[ord[2]] + c;
  }
};

// Runs body(m, g) for every position of a block: m its flat offset, g its global indices. On a host
// build one iteration per row (the block's contiguous axis), whose index is counted up: no division and
// no tile bookkeeping per element. On a device one thread per element (BlockRange).
template <class Body>
void for_each_in_block(const char* name, const BlockIndex& bi, const Body& body) {
  const int e0 = bi.ext[bi.ord[0]], e1 = bi.ext[bi.ord[1]], e2 = bi.ext[bi.ord[2]];
  if constexpr (fft::k_host_accessible) {
    Kokkos::parallel_for(
        name, Kokkos::RangePolicy<fft::ExecSpace, Kokkos::IndexType<int>>(0, e0 * e1), [=](int row) {
          const int a = row / e1, b = row - a * e1;
          int g[3];
          g[bi.ord[0]] = bi.lo[bi.ord[0]] + a;
          g[bi.ord[1]] = bi.lo[bi.ord[1]] + b;
          const int axis = bi.ord[2], first = bi.lo[axis];
          std::size_t m = static_cast<std::size_t>(row) * static_cast<std::size_t>(e2);
          for (int c = 0; c < e2; ++c, ++m) {
            g[axis] = first + c;
            body(m, g);
          }
        });
  } else {
    Kokkos::parallel_for(
        name, bi.range(), KOKKOS_LAMBDA(int a, int b, int c) {
          int g[3];
          const std::size_t m = bi.at(a, b, c, g);
          body(m, g);
        });
  }
}

// The modes of a block that a SpectralBand keeps: along each axis at most two runs of local offsets
// (fft::kept_runs), so that a loop visits the kept modes only.
struct KeptBlock {
  BlockIndex block;
  int first[3][2] = {{0, 0}, {0, 0}, {0, 0}};
  int count[3][2] = {{0, 0}, {0, 0}, {0, 0}};

  KeptBlock() = default;
  KeptBlock(const fft::Layout3& l, const fft::SpectralBand& band, const std::array<int, 3>& n) : block(l) {
    for (int d = 0; d < 3; ++d) {
      const auto runs = fft::kept_runs(band, n, d, l.box.lo[d], l.box.hi[d]);
      for (int r = 0; r < 2; ++r) {
        first[d][r] = runs[r].first;
        count[d][r] = runs[r].count;
      }
    }
  }
  int total(int d) const { return count[d][0] + count[d][1]; }
  // Local offset of the j-th kept index of axis d.
  KOKKOS_INLINE_FUNCTION int local(int d, int j) const {
    return j < count[d][0] ? first[d][0] + j : first[d][1] + (j - count[d][0]);
  }
};

// Runs body(m, g) for every kept mode of a block (m its flat offset, g its global indices), in storage
// order: on a host build one iteration per kept row, the kept runs of the contiguous axis counted up; on
// a device one thread per kept mode.
template <class Body>
void for_each_kept_in_block(const char* name, const KeptBlock& kb, const Body& body) {
  const BlockIndex& bi = kb.block;
  const int o0 = bi.ord[0], o1 = bi.ord[1], o2 = bi.ord[2];
  const int t0 = kb.total(o0), t1 = kb.total(o1), t2 = kb.total(o2);
  if (t0 == 0 || t1 == 0 || t2 == 0) return;
  const int e1 = bi.ext[o1], e2 = bi.ext[o2];
  if constexpr (fft::k_host_accessible) {
    Kokkos::parallel_for(
        name, Kokkos::RangePolicy<fft::ExecSpace, Kokkos::IndexType<int>>(0, t0 * t1), [=](int row) {
          const int a = kb.local(o0, row / t1), b = kb.local(o1, row % t1);
          int g[3];
          g[o0] = bi.lo[o0] + a;
          g[o1] = bi.lo[o1] + b;
          const std::size_t base = (static_cast<std::size_t>(a) * e1 + b) * e2;
          for (int r = 0; r < 2; ++r) {
            const int c0 = kb.first[o2][r], c1 = c0 + kb.count[o2][r];
            std::size_t m = base + c0;
            for (int c = c0; c < c1; ++c, ++m) {
              g[o2] = bi.lo[o2] + c;
              body(m, g);
            }
          }
        });
  } else {
    Kokkos::parallel_for(
        name, BlockRange({0, 0, 0}, {t0, t1, t2}), KOKKOS_LAMBDA(int i, int j, int k) {
          int g[3];
          const std::size_t m = bi.at(kb.local(o0, i), kb.local(o1, j), kb.local(o2, k), g);
          body(m, g);
        });
  }
}

// The modes of the spectral block: wavenumbers, mask and half-spectrum weight.
struct SpectralIndex {
  BlockIndex block;
  int n[3] = {1, 1, 1};
  int kmax[3] = {0, 0, 0};  // largest |k| kept in each direction
  bool drop_nyquist = true;

  // Wavenumbers for derivatives (Nyquist -> 0).
  KOKKOS_INLINE_FUNCTION void wavenumbers(std::size_t m, double k[3], int g[3]) const {
    block.global(m, g);
    for (int d = 0; d < 3; ++d) k[d] = derivative_wavenumber(g[d], n[d]);
  }
  KOKKOS_INLINE_FUNCTION std::size_t wavenumbers(int a, int b, int c, double k[3], int g[3]) const {
    const std::size_t m = block.at(a, b, c, g);
    for (int d = 0; d < 3; ++d) k[d] = derivative_wavenumber(g[d], n[d]);
    return m;
  }
  // Whether the mode with global indices g is kept (dealiasing; Nyquist modes are never kept).
  KOKKOS_INLINE_FUNCTION bool kept(const int g[3]) const {
    for (int d = 0; d < 3; ++d) {
      const int s = signed_wavenumber(g[d], n[d]);
      if (2 * g[d] == n[d]) return false;
      if ((s < 0 ? -s : s) > kmax[d]) return false;
    }
    return true;
  }
  // Sums over the stored half (kz >= 0) count each mode with 0 < kz < nz/2 twice (for its conjugate).
  KOKKOS_INLINE_FUNCTION double weight(const int g[3]) const {
    return (g[2] == 0 || 2 * g[2] == n[2]) ? 1.0 : 2.0;
  }
  // |k| with signed wavenumbers (for shells and band masks).
  KOKKOS_INLINE_FUNCTION double magnitude(const int g[3]) const {
    double s = 0;
    for (int d = 0; d < 3; ++d) {
      const double k = signed_wavenumber(g[d], n[d]);
      s += k * k;
    }
    return ::sqrt(s);
  }
};

}  // namespace spotrun::fluid
