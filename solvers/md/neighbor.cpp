#include "neighbor.hpp"

#include <cmath>
#include <vector>

namespace spotrun::md {

void NeighborList::setup(const comm::Box3& sub, double cutneigh) {
  m_cutneighsq = cutneigh * cutneigh;
  const double target = 0.5 * cutneigh;
  double binsize[3];
  for (int d = 0; d < 3; ++d) {
    double lo = sub.lo[d] - cutneigh, hi = sub.hi[d] + cutneigh;
    m_nbin[d] = std::max(1, static_cast<int>(std::floor((hi - lo) / target)));
    binsize[d] = (hi - lo) / m_nbin[d];
    m_lo[d] = lo;
    m_inv_bin[d] = 1.0 / binsize[d];
  }
  // Stencil: every bin offset whose closest approach to the centre bin is below cutneigh.
  std::vector<int> stencil;
  int s[3];
  for (int d = 0; d < 3; ++d) s[d] = static_cast<int>(std::ceil(cutneigh / binsize[d]));
  for (int k = -s[2]; k <= s[2]; ++k)
    for (int j = -s[1]; j <= s[1]; ++j)
      for (int i = -s[0]; i <= s[0]; ++i) {
        auto gap = [](int n, double b) { return n == 0 ? 0.0 : (std::abs(n) - 1) * b; };
        double dx = gap(i, binsize[0]), dy = gap(j, binsize[1]), dz = gap(k, binsize[2]);
        if (dx * dx + dy * dy + dz * dz < m_cutneighsq) {
          stencil.push_back(i);
          stencil.push_back(j);
          stencil.push_back(k);
        }
      }
  m_stencil = Int3View("md::stencil", stencil.size() / 3);
  auto h = Kokkos::create_mirror_view(m_stencil);
  for (std::size_t n = 0; n < stencil.size() / 3; ++n)
    for (int d = 0; d < 3; ++d) h(n, d) = stencil[3 * n + d];
  Kokkos::deep_copy(m_stencil, h);
  int nbins = m_nbin[0] * m_nbin[1] * m_nbin[2];
  m_bincount = IntView("md::bincount", nbins);
  if (m_bins.extent(0) != static_cast<std::size_t>(nbins)) m_bins = Int2DView("md::bins", nbins, 8);
}

void NeighborList::build(const AtomStore& atoms) {
  const int nlocal = atoms.nlocal, nall = atoms.nall();
  const int nbins = static_cast<int>(m_bincount.extent(0));
  if (m_atom_bin.extent(0) < static_cast<std::size_t>(nall)) m_atom_bin = IntView("md::atom_bin", nall + nall / 4);
  auto x = atoms.x;
  auto atom_bin = m_atom_bin;
  auto self = *this;  // copies of the bin geometry for the lambdas

  // 1. Bin every atom, growing the per-bin capacity until everything fits.
  while (true) {
    auto bincount = m_bincount;
    auto bins = m_bins;
    const int binmax = static_cast<int>(bins.extent(1));
    Kokkos::deep_copy(bincount, 0);
    int overflow = 0;
    Kokkos::parallel_reduce(
        "md::neighbor::bin", Policy(0, nall),
        KOKKOS_LAMBDA(int i, int& over) {
          int b = self.bin_of(x(i, 0), x(i, 1), x(i, 2));
          atom_bin(i) = b;
          int slot = Kokkos::atomic_fetch_add(&bincount(b), 1);
          if (slot < binmax)
            bins(b, slot) = i;
          else if (slot + 1 > over)
            over = slot + 1;
        },
        Kokkos::Max<int>(overflow));
    if (overflow <= 0) break;
    m_bins = Int2DView("md::bins", nbins, overflow + 4);
  }
  {
    // Order each bin by atom index, so lists do not depend on thread scheduling.
    auto bincount = m_bincount;
    auto bins = m_bins;
    Kokkos::parallel_for(
        "md::neighbor::sort_bins", Policy(0, nbins), KOKKOS_LAMBDA(int b) {
          const int n = bincount(b);
          for (int a = 1; a < n; ++a) {
            int v = bins(b, a), c = a - 1;
            while (c >= 0 && bins(b, c) > v) {
              bins(b, c + 1) = bins(b, c);
              --c;
            }
            bins(b, c + 1) = v;
          }
        });
  }

  // 2. Half lists for owned atoms, growing the row length until everything fits.
  if (numneigh.extent(0) < static_cast<std::size_t>(nlocal)) numneigh = IntView("md::numneigh", nlocal + nlocal / 4 + 16);
  if (neighbors.extent(0) < static_cast<std::size_t>(nlocal) || neighbors.extent(1) == 0)
    neighbors = Int2DView("md::neighbors", nlocal + nlocal / 4 + 16, std::max<int>(64, max_neighbors()));
  while (true) {
    auto bincount = m_bincount;
    auto bins = m_bins;
    auto stencil = m_stencil;
    auto neigh = neighbors;
    auto nn = numneigh;
    const int maxn = static_cast<int>(neigh.extent(1));
    const int nstencil = static_cast<int>(stencil.extent(0));
    const double cutsq = m_cutneighsq;
    const int nbx = m_nbin[0], nby = m_nbin[1], nbz = m_nbin[2];
    int needed = 0;
    long long pairs = 0;
    Kokkos::parallel_reduce(
        "md::neighbor::build", Policy(0, nlocal),
        KOKKOS_LAMBDA(int i, int& need, long long& npairs) {
          const double xi = x(i, 0), yi = x(i, 1), zi = x(i, 2);
          const int bi = atom_bin(i);
          const int bx = bi % nbx, by = (bi / nbx) % nby, bz = bi / (nbx * nby);
          int n = 0;
          for (int s = 0; s < nstencil; ++s) {
            const int sx = bx + stencil(s, 0), sy = by + stencil(s, 1), sz = bz + stencil(s, 2);
            if (sx < 0 || sx >= nbx || sy < 0 || sy >= nby || sz < 0 || sz >= nbz) continue;
            const int b = (sz * nby + sy) * nbx + sx;
            const int cnt = bincount(b);
            for (int m = 0; m < cnt; ++m) {
              const int j = bins(b, m);
              if (j < nlocal && j <= i) continue;
              const double dx = xi - x(j, 0), dy = yi - x(j, 1), dz = zi - x(j, 2);
              if (dx * dx + dy * dy + dz * dz < cutsq) {
                if (n < maxn) neigh(i, n) = j;
                ++n;
              }
            }
          }
          nn(i) = n < maxn ? n : maxn;
          if (n > need) need = n;
          npairs += n;
        },
        Kokkos::Max<int>(needed), pairs);
    if (needed <= maxn) {
      m_total_pairs = pairs;
      break;
    }
    neighbors = Int2DView("md::neighbors", neighbors.extent(0), needed + needed / 8 + 4);
  }
  ++m_builds;
}

}  // namespace spotrun::md
