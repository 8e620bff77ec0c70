#pragma once
// The host's walk of a PPPM brick plane after plane. The stencil kernels of charge spreading and force
// interpolation touch order^3 points per atom; taken in the atoms' own (neighbour-bin) order those points lie
// all over the brick, and on a CPU nearly every row of the stencil is a cache miss. Taken in the order of the
// brick plane (x index) where their stencils begin, the atoms of a plane need the planes p .. p + order - 1,
// of which only p + order - 1 is new: it is read once, in sequence (the hardware prefetcher keeps up), just
// before the atoms that need it, and the scattered reads of the stencils then hit the cache. The order changes
// which atom is taken when, never what is computed for it (host only; a GPU takes every atom at once).
#include <vector>

#include "solvers/md/types.hpp"
#include "stencil.hpp"

namespace spotrun::md::kspace {

class PlaneOrder {
 public:
  // Orders the owned atoms [0, nlocal) by the brick plane of the first point of their stencils (a counting
  // sort: by index within a plane). Host memory only (x readable on the host).
  void build(const Vec3View& x, int nlocal, const BrickMap& map);

  int planes() const { return static_cast<int>(m_start.size()) - 1; }
  // The atoms whose stencils begin at plane p: atoms()[start()[p] .. start()[p + 1]).
  const int* start() const { return m_start.data(); }
  const int* atoms() const { return m_atoms.data(); }
  // Where each chunk of whole planes (a thread's share of the walk) keeps the sum of what it read ahead.
  double* sinks(int chunks) {
    m_sinks.resize(static_cast<std::size_t>(chunks) * 8);
    return m_sinks.data();
  }

 private:
  std::vector<int> m_start, m_atoms, m_plane, m_next;
  std::vector<double> m_sinks;  // one per chunk, a cache line apart
};

// The first plane of chunk c of `chunks` (an even split of `planes`): chunk c walks [chunk_plane(c),
// chunk_plane(c + 1)).
KOKKOS_INLINE_FUNCTION int chunk_plane(int planes, int c, int chunks) {
  return static_cast<int>(static_cast<long>(planes) * c / chunks);
}

// Reads plane p of `fields` bricks (distance `stride`) one value per cache line, in sequence: brings the
// plane into the cache before the stencils read it in no order. Returns the sum (kept, so the reads stay).
KOKKOS_INLINE_FUNCTION double read_plane(const double* brick, long stride, int fields, long plane_size, int p) {
  double a = 0, b = 0;
  for (int d = 0; d < fields; ++d) {
    const double* row = brick + d * stride + p * plane_size;
    long k = 0;
    for (; k + 8 < plane_size; k += 16) {
      a += row[k];
      b += row[k + 8];
    }
    for (; k < plane_size; k += 8) a += row[k];
  }
  return a + b;
}

// Zeroes plane p of a brick, in sequence (the plane then sits in the cache for the stencils that add to it).
KOKKOS_INLINE_FUNCTION void zero_plane(double* brick, long plane_size, int p) {
  double* row = brick + p * plane_size;
  for (long k = 0; k < plane_size; ++k) row[k] = 0.0;
}

}  // namespace spotrun::md::kspace
