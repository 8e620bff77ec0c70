#include "neighbor.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace spotrun::md {

double NeighborList::bin_count(const comm::Box3& sub, double cutneigh) {
  // The same arithmetic as setup().
  double nbins = 1;
  for (int d = 0; d < 3; ++d) {
    const double lo = sub.lo[d] - cutneigh, hi = sub.hi[d] + cutneigh;
    const double n = std::max(1.0, std::floor((hi - lo) / (0.5 * cutneigh)));
    nbins *= n + 2 * std::ceil(cutneigh / ((hi - lo) / n));
  }
  return nbins;
}

void NeighborList::setup(const comm::Box3& sub, double cutneigh, bool full) {
  m_cutneighsq = cutneigh * cutneigh;
  m_full = full;
  const double target = 0.5 * cutneigh;
  double binsize[3];
  int reach[3];
  for (int d = 0; d < 3; ++d) {
    double lo = sub.lo[d] - cutneigh, hi = sub.hi[d] + cutneigh;
    int n = std::max(1, static_cast<int>(std::floor((hi - lo) / target)));
    binsize[d] = (hi - lo) / n;
    // Pad the grid with `reach` empty bins on each side, so stencils never need bounds checks.
    reach[d] = static_cast<int>(std::ceil(cutneigh / binsize[d]));
    m_nbin[d] = n + 2 * reach[d];
    m_lo[d] = lo - reach[d] * binsize[d];
    m_inv_bin[d] = 1.0 / binsize[d];
    m_first[d] = reach[d];
    m_last[d] = reach[d] + n - 1;
  }
  // Stencil: every bin offset whose closest approach to the centre bin is below cutneigh, as a flat
  // offset plus which half it lies in (1 upper, 0 the centre bin, -1 lower).
  std::vector<int> stencil;
  for (int k = -reach[2]; k <= reach[2]; ++k)
    for (int j = -reach[1]; j <= reach[1]; ++j)
      for (int i = -reach[0]; i <= reach[0]; ++i) {
        auto gap = [](int n, double b) { return n == 0 ? 0.0 : (std::abs(n) - 1) * b; };
        double dx = gap(i, binsize[0]), dy = gap(j, binsize[1]), dz = gap(k, binsize[2]);
        if (dx * dx + dy * dy + dz * dz >= m_cutneighsq) continue;
        const bool upper = k > 0 || (k == 0 && (j > 0 || (j == 0 && i > 0)));
        stencil.push_back((k * m_nbin[1] + j) * m_nbin[0] + i);
        stencil.push_back(i == 0 && j == 0 && k == 0 ? 0 : (upper ? 1 : -1));
      }
  m_stencil = Int2DView("md::stencil", stencil.size() / 2, 2);
  auto h = Kokkos::create_mirror_view(m_stencil);
  for (std::size_t n = 0; n < stencil.size() / 2; ++n)
    for (int d = 0; d < 2; ++d) h(n, d) = stencil[2 * n + d];
  Kokkos::deep_copy(m_stencil, h);
  int nbins = m_nbin[0] * m_nbin[1] * m_nbin[2];
  m_bincount = IntView("md::bincount", nbins);
  m_bin_owned = IntView("md::bin_owned", nbins);
  if (m_bins.extent(0) != static_cast<std::size_t>(nbins)) m_bins = Int2DView("md::bins", nbins, 8);
  // First guess of the row length: the atoms in a cutneigh sphere at the density of a liquid (half of them
  // for a half list), plus margin (grown on demand).
  m_initial_max_neighbors =
      static_cast<int>((full ? 1.0 : 0.5) * 4.18879 * cutneigh * cutneigh * cutneigh * 1.2) + 32;
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
    // Order each bin by atom index (owned atoms first), so lists do not depend on thread scheduling,
    // and count the owned atoms of each bin.
    auto bincount = m_bincount;
    auto bin_owned = m_bin_owned;
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
          int owned = 0;
          while (owned < n && bins(b, owned) < nlocal) ++owned;
          bin_owned(b) = owned;
        });
  }

  // 2. Half lists for owned atoms, growing the row length until everything fits.
  if (numneigh.extent(0) < static_cast<std::size_t>(nlocal)) {
    numneigh = IntView("md::numneigh", nlocal + nlocal / 4 + 16);
    numghost = IntView("md::numghost", nlocal + nlocal / 4 + 16);
  }
  if (neighbors.extent(0) < static_cast<std::size_t>(nlocal) || neighbors.extent(1) == 0)
    neighbors = NeighborView("md::neighbors", nlocal + nlocal / 4 + 16, std::max<int>(m_initial_max_neighbors, max_neighbors()));
  while (true) {
    auto bincount = m_bincount;
    auto bin_owned = m_bin_owned;
    auto bins = m_bins;
    auto stencil = m_stencil;
    auto neigh = neighbors;
    auto nn = numneigh;
    auto ng = numghost;
    const int maxn = static_cast<int>(neigh.extent(1));
    const int nstencil = static_cast<int>(stencil.extent(0));
    const double cutsq = m_cutneighsq;
    const bool full = m_full;
    int needed = 0;
    long long pairs = 0;
    Kokkos::parallel_reduce(
        "md::neighbor::build", Policy(0, nlocal),
        KOKKOS_LAMBDA(int i, int& need, long long& npairs) {
          const double xi = x(i, 0), yi = x(i, 1), zi = x(i, 2);
          const int bi = atom_bin(i);
          int n = 0, g = 0;  // owned neighbours from the front of the row, ghosts from the back
          for (int s = 0; s < nstencil; ++s) {
            const int b = bi + stencil(s, 0);
            const int cnt = bincount(b);
            // Half list: owned-owned pairs once, from the lower bin of the two (upper half stencil), or
            // j > i within a bin; owned-ghost pairs always, from the owned side: lower-half bins give only
            // their ghosts. Full list: every other atom of every stencil bin.
            const int half = stencil(s, 1);
            for (int m = !full && half < 0 ? bin_owned(b) : 0; m < cnt; ++m) {
              const int j = bins(b, m);
              if (full ? j == i : (half == 0 && j <= i)) continue;
              const double dx = xi - x(j, 0), dy = yi - x(j, 1), dz = zi - x(j, 2);
              if (dx * dx + dy * dy + dz * dz < cutsq) {
                if (j < nlocal) {
                  if (n + g < maxn) neigh(i, n) = j;
                  ++n;
                } else {
                  if (n + g < maxn) neigh(i, maxn - 1 - g) = j;
                  ++g;
                }
              }
            }
          }
          nn(i) = n;
          ng(i) = g;
          if (n + g > need) need = n + g;
          npairs += n + g;
        },
        Kokkos::Max<int>(needed), pairs);
    if (needed <= maxn) {
      m_total_pairs = pairs;
      break;
    }
    neighbors = NeighborView("md::neighbors", neighbors.extent(0), needed + needed / 8 + 4);
  }
  ++m_builds;
}

}  // namespace spotrun::md
