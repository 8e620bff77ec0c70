#include "geometry.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "comm/errors.hpp"

namespace spotrun::fft {
namespace {

bool pencil_fits(const std::array<int, 3>& n, int nzc, int p1, int p2) {
  return p1 <= n[0] && p1 <= n[1] && p2 <= n[1] && p2 <= nzc;
}

bool slab_fits(const std::array<int, 3>& n, int nranks) { return nranks <= n[0] && nranks <= n[1]; }

// The most square p1 x p2 == nranks that fits (largest min(p1, p2), then the larger p1); {0, 0} if none.
std::array<int, 2> choose_pencil_grid(const std::array<int, 3>& n, int nzc, int nranks) {
  std::array<int, 2> best{0, 0};
  for (int p1 = nranks; p1 >= 1; --p1) {
    if (nranks % p1) continue;
    const int p2 = nranks / p1;
    if (!pencil_fits(n, nzc, p1, p2)) continue;
    if (best[0] == 0 || std::min(p1, p2) > std::min(best[0], best[1])) best = {p1, p2};
  }
  return best;
}

std::string size_text(const std::array<int, 3>& n) {
  return "[" + std::to_string(n[0]) + ", " + std::to_string(n[1]) + ", " + std::to_string(n[2]) + "]";
}

}  // namespace

void check_band(const SpectralBand& band, const std::array<int, 3>& n) {
  for (int d = 0; d < 3; ++d)
    if (band.kmax[d] < 0 || band.kmax[d] > (n[d] - 1) / 2)
      throw std::invalid_argument("SpectralBand: kmax[" + std::to_string(d) + "] = " + std::to_string(band.kmax[d]) +
                                  " is outside [0, (n - 1) / 2] for n = " + std::to_string(n[d]));
}

std::array<IndexRun, 2> kept_runs(const SpectralBand& band, const std::array<int, 3>& n, int axis, int lo, int hi) {
  std::array<IndexRun, 2> out{};
  int k = 0;
  auto add = [&](int a, int b) {  // global [a, b] intersected with [lo, hi]
    a = std::max(a, lo);
    b = std::min(b, hi);
    if (a <= b) out[k++] = IndexRun{a - lo, b - a + 1};
  };
  add(0, band.kmax[axis]);
  if (axis < 2 && band.kmax[axis] > 0) add(n[axis] - band.kmax[axis], n[axis] - 1);
  return out;
}

Decomposition parse_decomposition(const std::string& name) {
  if (name == "auto") return Decomposition::Auto;
  if (name == "slab") return Decomposition::Slab;
  if (name == "pencil") return Decomposition::Pencil;
  throw InputError("decomposition '" + name + "' is not known; allowed: \"auto\", \"slab\", \"pencil\"");
}

std::string to_string(Decomposition d) {
  switch (d) {
    case Decomposition::Auto: return "auto";
    case Decomposition::Slab: return "slab";
    case Decomposition::Pencil: return "pencil";
  }
  return "?";
}

std::string FftGeometry::describe() const {
  std::ostringstream s;
  if (kind == Decomposition::Slab)
    s << "slab (" << nranks << (nranks == 1 ? " rank)" : " ranks)");
  else
    s << "pencil " << grid[0] << " x " << grid[1];
  return s.str();
}

FftGeometry make_fft_geometry(const std::array<int, 3>& n, int nranks, Decomposition kind,
                              const std::array<int, 2>& grid) {
  if (nranks < 1) throw std::invalid_argument("make_fft_geometry: nranks < 1");
  for (int d = 0; d < 3; ++d)
    if (n[d] < 1) throw InputError("FFT grid " + size_text(n) + ": every size must be at least 1");
  FftGeometry g;
  g.n = n;
  g.nc = {n[0], n[1], n[2] / 2 + 1};
  g.nranks = nranks;
  const int nzc = g.nc[2];

  const bool explicit_grid = grid[0] > 0 || grid[1] > 0;
  if (explicit_grid && grid[0] * grid[1] != nranks)
    throw InputError("FFT process grid " + std::to_string(grid[0]) + " x " + std::to_string(grid[1]) +
                     " does not have " + std::to_string(nranks) + " ranks");
  if (kind == Decomposition::Auto) kind = slab_fits(n, nranks) && !explicit_grid ? Decomposition::Slab : Decomposition::Pencil;

  if (kind == Decomposition::Slab) {
    if (!slab_fits(n, nranks))
      throw InputError("FFT grid " + size_text(n) + " is too small for a slab decomposition over " +
                       std::to_string(nranks) + " ranks: it needs nx >= ranks and ny >= ranks (every rank owns at "
                       "least one x-plane and one y-plane); use fewer ranks, a larger grid, or \"pencil\"");
    g.kind = Decomposition::Slab;
    g.grid = {nranks, 1};
  } else {
    std::array<int, 2> pg = explicit_grid ? grid : choose_pencil_grid(n, nzc, nranks);
    if (pg[0] == 0 || !pencil_fits(n, nzc, pg[0], pg[1])) {
      std::ostringstream msg;
      msg << "FFT grid " << size_text(n) << " is too small for a pencil decomposition over " << nranks << " ranks";
      if (explicit_grid) msg << " as " << pg[0] << " x " << pg[1];
      msg << ": a p1 x p2 grid needs p1 <= min(nx, ny) and p2 <= min(ny, nz/2 + 1) = " << std::min(n[1], nzc)
          << "; use fewer ranks or a larger grid";
      throw InputError(msg.str());
    }
    g.kind = Decomposition::Pencil;
    g.grid = pg;
  }

  const int p1 = g.grid[0], p2 = g.grid[1];
  for (int r = 0; r < nranks; ++r) {
    const int a = r / p2, b = r % p2;
    Layout3 real, sa, sb, sp;
    if (g.kind == Decomposition::Slab) {
      const auto xs = split_bounds(n[0], p1, a);
      const auto ys = split_bounds(n[1], p1, a);
      real.box = {{xs[0], 0, 0}, {xs[1], n[1] - 1, n[2] - 1}};
      real.order = {0, 1, 2};
      sa.box = {{xs[0], 0, 0}, {xs[1], n[1] - 1, nzc - 1}};
      sa.order = {0, 1, 2};
      sp.box = {{0, ys[0], 0}, {n[0] - 1, ys[1], nzc - 1}};
      sp.order = {1, 2, 0};
    } else {
      const auto xs = split_bounds(n[0], p1, a);
      const auto ys_b = split_bounds(n[1], p2, b);
      const auto zs_b = split_bounds(nzc, p2, b);
      const auto ys_a = split_bounds(n[1], p1, a);
      real.box = {{xs[0], ys_b[0], 0}, {xs[1], ys_b[1], n[2] - 1}};
      real.order = {0, 1, 2};
      sa.box = {{xs[0], ys_b[0], 0}, {xs[1], ys_b[1], nzc - 1}};
      sa.order = {0, 1, 2};
      sb.box = {{xs[0], 0, zs_b[0]}, {xs[1], n[1] - 1, zs_b[1]}};
      sb.order = {0, 2, 1};
      sp.box = {{0, ys_a[0], zs_b[0]}, {n[0] - 1, ys_a[1], zs_b[1]}};
      sp.order = {1, 2, 0};
      g.stage_b.push_back(sb);
    }
    g.real.push_back(real);
    g.stage_a.push_back(sa);
    g.spectral.push_back(sp);
  }
  return g;
}

}  // namespace spotrun::fft
