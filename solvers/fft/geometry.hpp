#pragma once
// The geometry of a distributed 3D real-to-complex FFT, computed apart from the transform: which box of
// the grid every rank holds at every stage, for a slab or a pencil decomposition. Pure values; the same
// on every rank, so every rank can build the reshape plans of every other.
//
// Pencil (p1 x p2 ranks; rank r has grid coordinates a = r / p2, b = r % p2):
//   real     z-pencils  x in part a of p1, y in part b of p2, z whole        stored [x][y][z]
//   stage A  the same box with z -> kz in [0, nz/2]  (after r2c along z)     stored [x][y][kz]
//   stage B  y-pencils  x in part a, kz in part b, y whole  (c2c along y)    stored [x][kz][y]
//   spectral x-pencils  ky in part a, kz in part b, kx whole (c2c along x)   stored [ky][kz][kx]
// Slab (P ranks):
//   real     x-slabs    x in part r of P, y and z whole                       stored [x][y][z]
//   stage A  the same slab after a 2D r2c over (y, z)                         stored [x][ky][kz]
//   spectral y-slabs    ky in part r, kz and kx whole  (c2c along x)          stored [ky][kz][kx]
// Parts are even splits (split_even): any N and any rank count, as long as no rank is left empty.
#include <array>
#include <string>
#include <vector>

#include "box.hpp"

namespace spotrun::fft {

enum class Decomposition { Auto, Slab, Pencil };

// "auto" | "slab" | "pencil"; throws InputError otherwise.
Decomposition parse_decomposition(const std::string& name);
std::string to_string(Decomposition d);

struct FftGeometry {
  std::array<int, 3> n{0, 0, 0};   // real grid points nx, ny, nz
  std::array<int, 3> nc{0, 0, 0};  // complex (half) grid: nx, ny, nz / 2 + 1
  Decomposition kind = Decomposition::Slab;  // resolved: Slab or Pencil
  std::array<int, 2> grid{1, 1};   // p1 x p2 (slab: nranks x 1)
  int nranks = 1;
  std::vector<Layout3> real;       // per rank
  std::vector<Layout3> stage_a;    // per rank
  std::vector<Layout3> stage_b;    // per rank; empty for slabs
  std::vector<Layout3> spectral;   // per rank

  std::size_t total_real() const {
    return static_cast<std::size_t>(n[0]) * static_cast<std::size_t>(n[1]) * static_cast<std::size_t>(n[2]);
  }
  // "slab (4 ranks)" or "pencil 2 x 2".
  std::string describe() const;
};

// The modes a pruned transform keeps (DistributedFft with a band): those with |k_d| <= kmax[d] in every
// direction, signed wavenumbers, kmax[d] <= (n[d] - 1) / 2 so that no Nyquist mode is kept. Along x and
// y the kept indices are [0, kmax] and [n - kmax, n - 1], along z (the half axis) [0, kmax]. The 2/3
// rule of the fluid solver is the band kmax = (n - 1) / 3.
struct SpectralBand {
  std::array<int, 3> kmax{0, 0, 0};
  bool kept(const std::array<int, 3>& n, int axis, int index) const {
    return index <= kmax[axis] || (axis < 2 && index >= n[axis] - kmax[axis]);
  }
};

// Throws std::invalid_argument unless 0 <= kmax[d] <= (n[d] - 1) / 2 for every d.
void check_band(const SpectralBand& band, const std::array<int, 3>& n);

// A run of local indices [first, first + count).
struct IndexRun {
  int first = 0;
  int count = 0;
};
// The kept indices of one axis within the inclusive global range [lo, hi], as at most two runs of local
// offsets (index - lo), in increasing order; a run of count 0 is empty.
std::array<IndexRun, 2> kept_runs(const SpectralBand& band, const std::array<int, 3>& n, int axis, int lo, int hi);

// Chooses and lays out the decomposition of an n[0] x n[1] x n[2] grid over nranks ranks. kind Auto
// takes slabs when every rank gets at least one x-plane and one y-plane (one transpose per transform),
// else pencils. grid {0, 0}: for pencils, the most square p1 x p2 that fits; otherwise exactly that grid.
// Throws InputError naming the sizes and the rank count when no such decomposition exists.
FftGeometry make_fft_geometry(const std::array<int, 3>& n, int nranks, Decomposition kind,
                              const std::array<int, 2>& grid = {0, 0});

}  // namespace spotrun::fft
