#include "neighbor.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <vector>
#if defined(__AVX2__) && !defined(__CUDACC__) && !defined(__HIPCC__) && !defined(__SYCL_DEVICE_ONLY__)
#include <immintrin.h>
#define SPOTRUN_NEIGHBOR_AVX2 1
#define SPOTRUN_SCAN_INLINE __attribute__((always_inline))
#else
#define SPOTRUN_SCAN_INLINE
#endif

namespace spotrun::md {
namespace {

// The host's scan of list_rows() with AVX2 (host memory, rows of the list contiguous): four candidates at a
// time, their positions (x, y, z triples) transposed into x, y, z vectors, the same operations on the same
// numbers as the scalar scan ((dx dx + dy dy) + dz dz against cutsq; the position test of a ghost under
// Newton), so the rows are those of the scalar scan, in the same order. The kept atoms' indices go to the
// row by one shuffle (the table of the lane mask) and one 4-wide store at the next free place, owned atoms
// forwards from the front, ghosts backwards from the back; the store may write up to three places past the
// kept ones. Where the row has room for every candidate of the range and three more, the stores go unchecked;
// otherwise each store is made only where the row has room for four more (n + g + 4 places), else the scan
// stops there (returning where) and the rest of the range is counted by the scalar scan without stores. Lanes
// past the range read the packed arrays' padding (reserve_packing) and are masked off.
constexpr bool k_vector_scan =
#if defined(SPOTRUN_NEIGHBOR_AVX2)
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible &&
    std::is_same_v<NeighborView::array_layout, Kokkos::LayoutRight>;
#else
    false;
#endif
// The room a 4-wide store of the vector scan needs past the entries kept so far.
constexpr int k_vector_room = 4;

#if defined(SPOTRUN_NEIGHBOR_AVX2)
struct CompactTables {
  unsigned char forward[16][16];   // byte shuffle: the kept lanes (mask bits) to lanes 0, 1, ... in order
  unsigned char backward[16][16];  // the kept lanes to lanes 3, 2, ... in order
  int count[16];                   // the kept lanes
};

constexpr CompactTables make_compact_tables() {
  CompactTables t{};
  for (int m = 0; m < 16; ++m) {
    for (int b = 0; b < 16; ++b) t.forward[m][b] = t.backward[m][b] = 0x80;  // zero
    int o = 0;
    for (int l = 0; l < 4; ++l) {
      if (!(m & (1 << l))) continue;
      for (int b = 0; b < 4; ++b) {
        t.forward[m][4 * o + b] = static_cast<unsigned char>(4 * l + b);
        t.backward[m][4 * (3 - o) + b] = static_cast<unsigned char>(4 * l + b);
      }
      ++o;
    }
    t.count[m] = o;
  }
  return t;
}

alignas(64) constexpr CompactTables k_compact = make_compact_tables();

// Candidates k0 .. k1-1 (packed positions px, indices pindex) of the row `row` (maxn places) of the owned atom
// at (xi, yi, zi), packed at p: owned (to the front, n kept so far) or ghosts (to the back, g kept so far);
// by_position: the Newton test of a ghost in the atom's z bin; k0 < k1. Returns k1, or (Checked) the first
// candidate it left for want of room; `room` rises to the places its stores needed (the kept ones before a
// store + 4). Unchecked where the row has room for every candidate of the range (the caller's test): no test
// a store.
template <bool Checked>
SPOTRUN_SCAN_INLINE inline int scan_avx2(const double* px, const int* pindex, int k0, int k1, int p, double xi, double yi, double zi,
                      double cutsq, bool owned, bool by_position, int* row, int maxn, int& n_row, int& g_row,
                      int& room) {
  int n = n_row, g = g_row;  // in registers: the row's stores might alias the references
  const __m256d vxi = _mm256_set1_pd(xi), vyi = _mm256_set1_pd(yi), vzi = _mm256_set1_pd(zi);
  const __m256d vcut = _mm256_set1_pd(cutsq), zero = _mm256_setzero_pd();
  int k = k0, used = -1;  // used: the kept entries before the last store
  for (; k < k1; k += 4) {
    if constexpr (Checked) {
      if (n + g + k_vector_room > maxn) break;  // no room for this store: the caller counts the rest
      used = n + g;
    }
    const double* a = px + 3 * static_cast<std::ptrdiff_t>(k);
    const __m256d A = _mm256_loadu_pd(a), B = _mm256_loadu_pd(a + 4), C = _mm256_loadu_pd(a + 8);
    // A = x0 y0 z0 x1, B = y1 z1 x2 y2, C = z2 x3 y3 z3
    const __m256d P = _mm256_permute2f128_pd(A, B, 0x30);  // x0 y0 x2 y2
    const __m256d Q = _mm256_permute2f128_pd(A, C, 0x21);  // z0 x1 z2 x3
    const __m256d R = _mm256_permute2f128_pd(B, C, 0x30);  // y1 z1 y3 z3
    const __m256d dx = _mm256_sub_pd(vxi, _mm256_blend_pd(P, Q, 0xA));
    const __m256d dy = _mm256_sub_pd(vyi, _mm256_shuffle_pd(P, R, 0x5));
    const __m256d dz = _mm256_sub_pd(vzi, _mm256_blend_pd(Q, R, 0xA));
    const __m256d rsq =
        _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy)), _mm256_mul_pd(dz, dz));
    __m256d in = _mm256_cmp_pd(rsq, vcut, _CMP_LT_OQ);
    if (by_position) {
      const __m256d ylt = _mm256_or_pd(_mm256_cmp_pd(dy, zero, _CMP_LT_OQ),
                                       _mm256_and_pd(_mm256_cmp_pd(dy, zero, _CMP_EQ_OQ), _mm256_cmp_pd(dx, zero, _CMP_LT_OQ)));
      const __m256d above =
          _mm256_or_pd(_mm256_cmp_pd(dz, zero, _CMP_LT_OQ), _mm256_and_pd(_mm256_cmp_pd(dz, zero, _CMP_EQ_OQ), ylt));
      in = _mm256_and_pd(in, above);
    }
    int m = _mm256_movemask_pd(in);
    if (k1 - k < 4) m &= (1 << (k1 - k)) - 1;
    if (owned && static_cast<unsigned>(p - k) < 4u) m &= ~(1 << (p - k));
    const __m128i j4 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pindex + k));
    if (owned) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(row + n),
                       _mm_shuffle_epi8(j4, _mm_load_si128(reinterpret_cast<const __m128i*>(k_compact.forward[m]))));
      n += k_compact.count[m];
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(row + maxn - 4 - g),
                       _mm_shuffle_epi8(j4, _mm_load_si128(reinterpret_cast<const __m128i*>(k_compact.backward[m]))));
      g += k_compact.count[m];
    }
  }
  // Each store needed n + g + 4 places at its n + g, the last one the most. Unchecked (the caller made sure of
  // room for every candidate), at most the row, and at most the kept ones + 4.
  if constexpr (Checked) {
    if (used >= 0 && used + k_vector_room > room) room = used + k_vector_room;
  } else {
    const int most = n + g + k_vector_room < maxn ? n + g + k_vector_room : maxn;
    if (most > room) room = most;
  }
  n_row = n;
  g_row = g;
  return k;  // past k1 where it ended within the last four
}
#endif

}  // namespace

double NeighborList::bin_edge(double cutneigh, double density, int d) {
  const double half = 0.5 * cutneigh;
  return d > 0 && density * half * half * half < 1.0 ? cutneigh : half;
}

double NeighborList::bin_count(const comm::Box3& sub, double cutneigh, double density) {
  // The same arithmetic as setup() (BinGrid::over), as a double: no overflow.
  double nbins = 1;
  for (int d = 0; d < 3; ++d) {
    const double lo = sub.lo[d] - cutneigh, hi = sub.hi[d] + cutneigh;
    const double n = std::max(1.0, std::floor((hi - lo) / bin_edge(cutneigh, density, d)));
    nbins *= n + 2 * std::ceil(cutneigh / ((hi - lo) / n));
  }
  return nbins;
}

BinGrid BinGrid::over(const comm::Box3& sub, double cutneigh, const double (&edge)[3]) {
  BinGrid g;
  for (int d = 0; d < 3; ++d) {
    const double lo = sub.lo[d] - cutneigh, hi = sub.hi[d] + cutneigh;
    const int n = std::max(1, static_cast<int>(std::floor((hi - lo) / edge[d])));
    g.size[d] = (hi - lo) / n;
    // Pad the grid with `reach` empty bins on each side, so stencils never need bounds checks.
    g.reach[d] = static_cast<int>(std::ceil(cutneigh / g.size[d]));
    g.nbin[d] = n + 2 * g.reach[d];
    g.lo[d] = lo - g.reach[d] * g.size[d];
    g.inv_bin[d] = 1.0 / g.size[d];
    g.first[d] = g.reach[d];
    g.last[d] = g.reach[d] + n - 1;
  }
  return g;
}

void NeighborList::setup(const comm::Box3& sub, double cutneigh, bool full, bool newton, double density) {
  // Another reach, other rows: the row length starts over from what the next build needs.
  if (cutneigh * cutneigh != m_cutneighsq || full != m_full) m_needed = m_sized_builds = 0;
  m_cutneighsq = cutneigh * cutneigh;
  m_full = full;
  m_newton = newton && !full && Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;
  const double edges[3] = {bin_edge(cutneigh, density, 0), bin_edge(cutneigh, density, 1), bin_edge(cutneigh, density, 2)};
  m_bins = BinGrid::over(sub, cutneigh, edges);
  const double* binsize = m_bins.size;
  const int* reach = m_bins.reach;
  const int* nbin = m_bins.nbin;
  // Stencil rows: for each y, z offset in reach, the x offsets in reach of it (every bin offset whose closest
  // approach to the centre bin is below cutneigh lies in one), with the half they lie in (1 upper, 0 the
  // centre row, -1 lower) and their z offset.
  std::vector<int> rows;
  for (int k = -reach[2]; k <= reach[2]; ++k)
    for (int j = -reach[1]; j <= reach[1]; ++j) {
      auto gap = [](int n, double b) { return n == 0 ? 0.0 : (std::abs(n) - 1) * b; };
      const double dyz = gap(j, binsize[1]) * gap(j, binsize[1]) + gap(k, binsize[2]) * gap(k, binsize[2]);
      int rx = -1;
      for (int i = 0; i <= reach[0]; ++i)
        if (gap(i, binsize[0]) * gap(i, binsize[0]) + dyz < m_cutneighsq) rx = i;
      if (rx < 0) continue;
      rows.push_back((k * nbin[1] + j) * nbin[0]);
      rows.push_back(rx);
      rows.push_back(k == 0 && j == 0 ? 0 : (k > 0 || (k == 0 && j > 0) ? 1 : -1));
      rows.push_back(k);
    }
  m_rows = Int2DView("md::rows", rows.size() / 4, 4);
  auto hr = Kokkos::create_mirror_view(m_rows);
  for (std::size_t n = 0; n < rows.size() / 4; ++n)
    for (int d = 0; d < 4; ++d) hr(n, d) = rows[4 * n + d];
  Kokkos::deep_copy(m_rows, hr);
  const int nbins = m_bins.total();
  // The cursor of pack_host(), which only host memory takes.
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible)
    m_bincount = IntView("md::bincount", nbins);
  m_owned_start = IntView("md::owned_start", nbins + 1);
  m_ghost_start = IntView("md::ghost_start", nbins + 1);
  // First guess of the row length: the atoms in a cutneigh sphere at the density of a liquid (half of them
  // for a half list), plus margin (grown on demand).
  m_initial_max_neighbors =
      static_cast<int>((full ? 1.0 : 0.5) * 4.18879 * cutneigh * cutneigh * cutneigh * 1.2) + 32;
}

void NeighborList::build(const AtomStore& atoms, const RowWindows& windows, const Exclusions& exclusions) {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible)
    pack_host(atoms);
  else
    pack_device(atoms);
  list_rows(atoms, exclusions);
  split_rows(atoms.nlocal, windows);
  m_streamed = false;
  if (m_stream) lay_out_stream(atoms.nlocal);
  ++m_builds;
}

void NeighborList::build_host(const AtomStore& atoms, const Exclusions& exclusions) {
  pack_host(atoms);
  list_rows(atoms, exclusions);
  m_streamed = false;
}

void NeighborList::build_device(const AtomStore& atoms, const Exclusions& exclusions) {
  pack_device(atoms);
  list_rows(atoms, exclusions);
  m_streamed = false;
}

void NeighborList::lay_out_stream(int nlocal) {
  if (stream_start.extent(0) < static_cast<std::size_t>(nlocal) + 1)
    stream_start = IntView(Kokkos::view_alloc("md::stream_start", Kokkos::WithoutInitializing), nlocal + nlocal / 4 + 16);
  if (stream.extent(0) < static_cast<std::size_t>(m_total_pairs)) {
    const std::size_t size = static_cast<std::size_t>(m_total_pairs + m_total_pairs / 4 + 16);
    stream = IntView(Kokkos::view_alloc("md::stream", Kokkos::WithoutInitializing), size);
    stream_row = IntView(Kokkos::view_alloc("md::stream_row", Kokkos::WithoutInitializing), size);
  }
  auto start = stream_start;
  auto out = stream;
  auto out_row = stream_row;
  auto ord = order;
  auto nn = numneigh;
  auto ng = numghost;
  auto neigh = neighbors;
  const int maxn = max_neighbors();
  Kokkos::parallel_scan(
      "md::neighbor::stream_start", Policy(0, nlocal + 1), KOKKOS_LAMBDA(int k, int& sum, bool final) {
        if (final) start(k) = sum;
        if (k < nlocal) sum += nn(ord(k)) + ng(ord(k));
      });
  Kokkos::parallel_for(
      "md::neighbor::stream", Policy(0, nlocal), KOKKOS_LAMBDA(int k) {
        const int i = ord(k), n = nn(i), g = ng(i);
        int at = start(k);
        for (int a = 0; a < n; ++a, ++at) {
          out(at) = neigh(i, a);
          out_row(at) = k;
        }
        for (int a = maxn - g; a < maxn; ++a, ++at) {
          out(at) = neigh(i, a);
          out_row(at) = k;
        }
      });
  m_streamed = true;
}

void NeighborList::split_rows(int nlocal, const RowWindows& windows) {
  if (order.extent(0) < static_cast<std::size_t>(nlocal))
    order = IntView(Kokkos::view_alloc("md::order", Kokkos::WithoutInitializing), nlocal + nlocal / 4 + 16);
  auto clamp = [nlocal](int v) { return v < 0 ? 0 : (v > nlocal ? nlocal : v); };
  // The first window's rows precede the second's: [a0, b0) then [a1, b1), disjoint.
  const int a0 = clamp(windows.first[0]), b0 = std::max(a0, clamp(windows.first[1]));
  const int a1 = std::max(b0, clamp(windows.last[0])), b1 = std::max(a1, clamp(windows.last[1]));
  auto ng = numghost;
  auto ord = order;
  int counts[2] = {0, 0};
  for (int w = 0; w < 2; ++w) {
    const int a = w == 0 ? a0 : a1;
    Kokkos::parallel_reduce(
        "md::neighbor::count_interior", Policy(a, w == 0 ? b0 : b1),
        KOKKOS_LAMBDA(int i, int& c) { c += ng(i) == 0 ? 1 : 0; }, counts[w]);
  }
  const int first = counts[0], last = counts[1];
  // Interior rows of the first window at the front, those of the second at the back, every other row in
  // between; each part in index order. `before`: the interior rows of either window before row i (the
  // first window's come before the second's).
  Kokkos::parallel_scan(
      "md::neighbor::split_rows", Policy(0, nlocal), KOKKOS_LAMBDA(int i, int& before, bool final) {
        const bool in0 = i >= a0 && i < b0 && ng(i) == 0;
        const bool in1 = i >= a1 && i < b1 && ng(i) == 0;
        if (final) ord(in0 ? before : in1 ? nlocal - last + (before - first) : first + (i - before)) = i;
        if (in0 || in1) ++before;
      });
  m_interior = first;
  m_deferred = last;
}

void NeighborList::reserve_rows(int nlocal) {
  if (numneigh.extent(0) < static_cast<std::size_t>(nlocal)) {
    numneigh = IntView("md::numneigh", nlocal + nlocal / 4 + 16);
    numghost = IntView("md::numghost", nlocal + nlocal / 4 + 16);
  }
  // The row length: the first guess before any build; then the most any build needed (since the reach last
  // changed), with margin, where the rows are much longer than that (a row of 40 places read for 5
  // neighbours costs the force loop its memory traffic). Never below what a build needed: the longest row
  // of a liquid varies from build to build, and each build that finds no room pays another scan.
  int width = neighbors.extent(1) == 0 ? m_initial_max_neighbors : max_neighbors();
  if (m_sized_builds >= k_sizing_builds && width > m_needed + m_needed / 4 + 8) width = row_length(m_needed);
  if (neighbors.extent(0) < static_cast<std::size_t>(nlocal) || width != max_neighbors())
    neighbors = NeighborView("md::neighbors", std::max<std::size_t>(neighbors.extent(0), nlocal + nlocal / 4 + 16), width);
}

int NeighborList::row_length(int needed) { return needed + needed / 8 + 4; }

bool NeighborList::rows_fit(int needed, long long pairs) {
  m_needed = std::max(m_needed, needed);
  ++m_sized_builds;
  if (needed <= max_neighbors()) {
    m_total_pairs = pairs;
    return true;
  }
  neighbors = NeighborView("md::neighbors", neighbors.extent(0), row_length(needed));
  return false;
}

void NeighborList::reserve_packing(int nlocal, int nall) {
  if (m_atom_bin.extent(0) < static_cast<std::size_t>(nall)) m_atom_bin = IntView("md::atom_bin", nall + nall / 4);
  // Padding past the last atom: the host's vector scan reads up to three places past a range.
  if (m_packed_index.extent(0) < static_cast<std::size_t>(nall) + 4) {
    m_packed_index = IntView("md::packed_index", nall + nall / 4 + 4);
    m_packed_x = Vec3View("md::packed_x", nall + nall / 4 + 4);
  }
  if (m_packed_place.extent(0) < static_cast<std::size_t>(nlocal))
    m_packed_place = IntView("md::packed_place", nlocal + nlocal / 4 + 16);
}

void NeighborList::pack_host(const AtomStore& atoms) {
  const int nlocal = atoms.nlocal, nall = atoms.nall();
  const int nbins = bin_total();
  reserve_packing(nlocal, nall);
  // A stable counting sort, one pass over the atoms in index order for the counts and one for the places:
  // each bin's atoms land in index order with no ordering pass. owned_start and ghost_start first count
  // the atoms of bin b at b + 1, then are summed into the starts.
  auto x = atoms.x;
  auto atom_bin = m_atom_bin;
  auto ostart = m_owned_start;
  auto gstart = m_ghost_start;
  auto cursor = m_bincount;
  auto pindex = m_packed_index;
  auto px = m_packed_x;
  auto place = m_packed_place;
  for (int b = 0; b <= nbins; ++b) ostart(b) = gstart(b) = 0;
  for (int i = 0; i < nall; ++i) {
    const int b = bin_of(x(i, 0), x(i, 1), x(i, 2));
    atom_bin(i) = b;
    ++(i < nlocal ? ostart : gstart)(b + 1);
  }
  gstart(0) = nlocal;
  for (int b = 0; b < nbins; ++b) {
    ostart(b + 1) += ostart(b);
    gstart(b + 1) += gstart(b);
  }
  for (int b = 0; b < nbins; ++b) cursor(b) = ostart(b);
  for (int i = 0; i < nall; ++i) {
    if (i == nlocal)
      for (int b = 0; b < nbins; ++b) cursor(b) = gstart(b);
    const int p = cursor(atom_bin(i))++;
    pindex(p) = i;
    for (int d = 0; d < 3; ++d) px(p, d) = x(i, d);
    if (i < nlocal) place(i) = p;
  }
}

void NeighborList::pack_device(const AtomStore& atoms) {
  const int nlocal = atoms.nlocal, nall = atoms.nall();
  const int nbins = bin_total();
  reserve_packing(nlocal, nall);
  if (m_atom_slot.extent(0) < static_cast<std::size_t>(nall)) m_atom_slot = IntView("md::atom_slot", nall + nall / 4);
  auto x = atoms.x;
  auto atom_bin = m_atom_bin;
  auto slot = m_atom_slot;
  auto ostart = m_owned_start;
  auto gstart = m_ghost_start;
  auto pindex = m_packed_index;
  auto px = m_packed_x;
  auto place = m_packed_place;
  const NeighborList grid = *this;  // the bin geometry, for the kernels

  // 1. Counts by atomics: the owned atoms of bin b in owned_start(b + 1), its ghosts in ghost_start(b + 1);
  //    each atom's slot among those of its bin and kind (in whatever order the threads ran).
  Kokkos::deep_copy(ostart, 0);
  Kokkos::deep_copy(gstart, 0);
  Kokkos::parallel_for(
      "md::neighbor::count", Policy(0, nall), KOKKOS_LAMBDA(int i) {
        const int b = grid.bin_of(x(i, 0), x(i, 1), x(i, 2));
        atom_bin(i) = b;
        slot(i) = Kokkos::atomic_fetch_add(i < nlocal ? &ostart(b + 1) : &gstart(b + 1), 1);
      });
  // 2. The starts: one inclusive scan over the owned counts and on over the ghost counts (the counts of
  //    the owned atoms sum to nlocal, where the ghosts begin).
  const int n1 = nbins + 1;
  Kokkos::parallel_scan(
      "md::neighbor::starts", Policy(0, 2 * n1), KOKKOS_LAMBDA(int k, int& sum, bool final) {
        int& start = k < n1 ? ostart(k) : gstart(k - n1);
        sum += start;
        if (final) start = sum;
      });
  // 3. Each atom to its slot in its bin, then each bin's owned atoms and its ghosts ordered by atom index
  //    (the order the host's stable sort gives), so lists do not depend on thread scheduling.
  Kokkos::parallel_for(
      "md::neighbor::place", Policy(0, nall), KOKKOS_LAMBDA(int i) {
        const int b = atom_bin(i);
        pindex((i < nlocal ? ostart(b) : gstart(b)) + slot(i)) = i;
      });
  Kokkos::parallel_for(
      "md::neighbor::order_bins", Policy(0, 2 * nbins), KOKKOS_LAMBDA(int s) {
        const bool owned = s < nbins;
        const int b = owned ? s : s - nbins;
        const int first = owned ? ostart(b) : gstart(b), last = owned ? ostart(b + 1) : gstart(b + 1);
        for (int a = first + 1; a < last; ++a) {
          const int v = pindex(a);
          int c = a - 1;
          while (c >= first && pindex(c) > v) {
            pindex(c + 1) = pindex(c);
            --c;
          }
          pindex(c + 1) = v;
        }
      });
  // 4. The positions next to their indices, and each owned atom's place.
  Kokkos::parallel_for(
      "md::neighbor::gather", Policy(0, nall), KOKKOS_LAMBDA(int k) {
        const int i = pindex(k);
        for (int d = 0; d < 3; ++d) px(k, d) = x(i, d);
        if (i < nlocal) place(i) = k;
      });
}

void NeighborList::list_rows(const AtomStore& atoms, const Exclusions& exclusions) {
  // The rows of the owned atoms, growing the row length until everything fits. Half list: the owned atoms
  // of the upper stencil rows, and of the centre row those packed after atom i (the upper bins and the
  // later atoms of its own bin): each owned pair once; the ghosts of every row. Full list: the owned atoms
  // of every row but atom i itself, and every ghost. Less the excluded pairs (special neighbours by id).
  const int nlocal = atoms.nlocal;
  reserve_rows(nlocal);
  auto id = atoms.id;
  const IdRowsView special = exclusions.special;
  const bool excluding = exclusions.any();
  const bool out12 = exclusions.out[0], out13 = exclusions.out[1], out14 = exclusions.out[2];
  auto atom_bin = m_atom_bin;
  auto ostart = m_owned_start;
  auto gstart = m_ghost_start;
  auto pindex = m_packed_index;
  auto px = m_packed_x;
  auto place = m_packed_place;
  auto rows = m_rows;
  const int nrows = static_cast<int>(rows.extent(0));
  const double cutsq = m_cutneighsq;
  const bool full = m_full, newton = m_newton;
  while (true) {
    auto neigh = neighbors;
    auto nn = numneigh;
    auto ng = numghost;
    const int maxn = static_cast<int>(neigh.extent(1));
    int needed = 0;
    long long pairs = 0;
    Kokkos::parallel_reduce(
        "md::neighbor::build", Policy(0, nlocal),
        KOKKOS_LAMBDA(int i, int& need, long long& npairs) {
          const int p = place(i), bi = atom_bin(i);
          const double xi = px(p, 0), yi = px(p, 1), zi = px(p, 2);
          int n = 0, g = 0;  // owned neighbours from the front of the row, ghosts from the back
          bool fits = true;
          int room = 0;  // the row length the scan's stores needed (more than maxn: it did not fit)
          // The special neighbours to look among: up to the last level that leaves the list (1-2 alone for
          // special_bonds fene); a neighbour found there at a level that leaves it is not listed.
          const int n12 = excluding ? static_cast<int>(special(i, 0)) : 0;
          const int n13 = excluding ? static_cast<int>(special(i, 1)) : 0;
          const int n14 = excluding ? static_cast<int>(special(i, 2)) : 0;
          const int nsearch = out14 ? n14 : (out13 ? n13 : (out12 ? n12 : 0));
          auto excluded = [&](int j) {
            const std::int64_t jid = id(j);
            for (int s = 0; s < nsearch; ++s)
              if (special(i, 3 + s) == jid) return s < n12 ? out12 : (s < n13 ? out13 : out14);
            return false;
          };
          // Candidates k0 .. k1-1 of the packed arrays: every candidate is written at the next free place
          // and kept by counting it (no branch on the distance) when the row has room for all of them. The
          // excluded pairs leave the row afterwards (below): a few listed neighbours to look up, not every
          // candidate.
          // Ghosts under Newton (newton): a ghost of a row above i's (a higher z bin, so a higher z) is
          // kept whole, of a row below never; in i's own z bin by the coordinates (ghost above i by z,
          // then y, then x: the ghost's owner sees the mirror image and lists the pair when this does not).
          auto scan = [&](int k0, int k1, bool owned, bool by_position) SPOTRUN_SCAN_INLINE {
            if (k1 <= k0) return;
#if defined(SPOTRUN_NEIGHBOR_AVX2)
            if constexpr (k_vector_scan) {
              // Where the range's candidates might not all fit, each 4-wide store is checked for room (scan_avx2)
              // and, where there was none, the rest of the range is counted.
              if (fits) {
                if (n + g + (k1 - k0) + k_vector_room - 1 <= maxn) {  // room for every candidate
                  scan_avx2<false>(px.data(), pindex.data(), k0, k1, p, xi, yi, zi, cutsq, owned, by_position,
                                   &neigh(i, 0), maxn, n, g, room);
                  return;
                }
                k0 = scan_avx2<true>(px.data(), pindex.data(), k0, k1, p, xi, yi, zi, cutsq, owned, by_position,
                                     &neigh(i, 0), maxn, n, g, room);
                if (k0 >= k1) return;
                fits = false;
              }
            }
#endif
            // The scalar scan writes every candidate of the range at the next free place: room for all of them.
            if (!k_vector_scan) {  // (no if constexpr: a CUDA lambda may not first capture in one)
              if (n + g + (k1 - k0) > room) room = n + g + (k1 - k0);
              if (n + g + (k1 - k0) > maxn) fits = false;
            }
            for (int k = k0; k < k1; ++k) {
              const double dx = xi - px(k, 0), dy = yi - px(k, 1), dz = zi - px(k, 2);
              int in = (dx * dx + dy * dy + dz * dz < cutsq) & (k != p);
              if (by_position) in &= (dz < 0) | ((dz == 0) & ((dy < 0) | ((dy == 0) & (dx < 0))));
              const int j = pindex(k);
              if (owned) {
                if (fits) neigh(i, n) = j;
                n += in;
              } else {
                if (fits) neigh(i, maxn - 1 - g) = j;
                g += in;
              }
            }
          };
          for (int r = 0; r < nrows; ++r) {
            const int b = bi + rows(r, 0), reach = rows(r, 1), half = rows(r, 2), dzbin = rows(r, 3);
            if (full || half > 0)
              scan(ostart(b - reach), ostart(b + reach + 1), true, false);
            else if (half == 0)
              scan(p + 1, ostart(b + reach + 1), true, false);
            if (!newton || dzbin >= 0) scan(gstart(b - reach), gstart(b + reach + 1), false, newton && dzbin == 0);
          }
          // A vector scan that ran out of room: the stores of a longer row would have needed at most this. A row
          // that did not fit always asks for more than it had.
          if (k_vector_scan && !fits && n + g + k_vector_room > room) room = n + g + k_vector_room;
          if (!fits && room <= maxn) room = maxn + 1;
          // The excluded pairs out of a row that fitted, the others keeping their order (the row a check
          // of every candidate would give). A row that did not fit counts them: it only sizes the next pass.
          if (nsearch > 0 && fits) {
            int kept = 0;
            for (int a = 0; a < n; ++a) {
              const int j = neigh(i, a);
              if (!excluded(j)) neigh(i, kept++) = j;
            }
            n = kept;
            kept = 0;
            for (int a = 0; a < g; ++a) {
              const int j = neigh(i, maxn - 1 - a);
              if (!excluded(j)) neigh(i, maxn - 1 - kept++) = j;
            }
            g = kept;
          }
          nn(i) = n;
          ng(i) = g;
          if (room > need) need = room;
          npairs += n + g;
        },
        Kokkos::Max<int>(needed), pairs);
    if (rows_fit(needed, pairs)) break;
  }
}

}  // namespace spotrun::md
