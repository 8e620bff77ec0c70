#pragma once
// Binned cell lists and Verlet lists with skin, half or full:
//  - half (the CPU default): owned-owned pairs are stored once (j > i). On the host, with Newton's third
//    law across ghosts (LAMMPS "half/bin/newton"): an owned-ghost pair is stored on one of the two ranks
//    that see it (newton()), the force loop adds the reaction to the ghost and Halo::reverse_forces()
//    sends ghost forces to their owners. On a device, owned-ghost pairs are stored on both ranks
//    ("half/bin/newtoff"), with no reverse communication.
//  - full (the GPU default): every neighbour of an owned atom, so each thread computes the force on its
//    own atom only: no atomics, a fixed summation order, a bitwise reproducible run.
// Bin contents are ordered by atom index, so lists are reproducible.
//
// One build for the host and a device: the atoms are packed by bin (owned atoms and ghosts apart, each
// bin's atoms in index order, positions copied next to their indices), so the bins of one stencil row (one
// y, z offset, every x offset in reach) are one contiguous range of the packed arrays: each owned atom
// scans a few long streams instead of many short bins, and appends without a branch (list_rows(), one
// kernel; on the host with AVX2 four candidates at a time, the same rows). Only the filling of the packed
// arrays differs: on a device counts by atomics, a scan, each atom to its slot, then each bin's segment
// ordered by atom index (pack_device()); on the host a stable counting sort, serial, which gives the same
// arrays (pack_host()).
#include <array>

#include "atoms.hpp"
#include "comm/process_grid.hpp"

namespace spotrun::md {

// The atoms among whose rows NeighborList::build() puts the interior rows first, and last ([begin, end) of
// atom indices each).
struct RowWindows {
  int first[2] = {0, 0};
  int last[2] = {0, 0};
};

// The pairs a build leaves out of the list (LAMMPS's special_bonds: a special neighbour whose factor is not 1
// is not in the list; md/bonded adds back those scaled between 0 and 1): each owned atom's special neighbours
// by id (AtomStore::special: n12, n13, n14, then the ids, 1-2 first) and, per level (1-2, 1-3, 1-4), whether
// its pairs leave the list.
struct Exclusions {
  IdRowsView special;  // none (or no columns): nothing excluded
  bool out[3] = {false, false, false};
  bool any() const { return special.extent(1) > 0 && (out[0] || out[1] || out[2]); }
};

// A grid of bins over a sub-box extended by cutneigh and padded by the reach of cutneigh (so stencils need no
// bounds checks): the bin of a position, clamped to the bins that may hold atoms.
struct BinGrid {
  double lo[3] = {0, 0, 0};
  double inv_bin[3] = {1, 1, 1};
  int nbin[3] = {1, 1, 1};
  int first[3] = {0, 0, 0};  // bins that may hold atoms; the rest is padding for the stencil
  int last[3] = {0, 0, 0};
  double size[3] = {1, 1, 1};  // the bins' edges
  int reach[3] = {0, 0, 0};    // padding bins on each side

  // Bins of edge about edge[d] (at least one, a whole number of them across) along each axis.
  static BinGrid over(const comm::Box3& sub_box, double cutneigh, const double (&edge)[3]);
  int total() const { return nbin[0] * nbin[1] * nbin[2]; }
  KOKKOS_INLINE_FUNCTION int bin_of(double x, double y, double z) const {
    int ix = static_cast<int>((x - lo[0]) * inv_bin[0]);
    int iy = static_cast<int>((y - lo[1]) * inv_bin[1]);
    int iz = static_cast<int>((z - lo[2]) * inv_bin[2]);
    ix = ix < first[0] ? first[0] : (ix > last[0] ? last[0] : ix);
    iy = iy < first[1] ? first[1] : (iy > last[1] ? last[1] : iy);
    iz = iz < first[2] ? first[2] : (iz > last[2] ? last[2] : iz);
    return (iz * nbin[1] + iy) * nbin[0] + ix;
  }
};

class NeighborList {
 public:
  NeighborList() = default;
  // cutneigh = cutoff + skin; the bin grid covers the sub-box extended by cutneigh. full: a full list.
  // newton = false: a host half list without Newton's third law across ghosts (as on a device; for tests).
  // density: the system's atoms per volume (0: not known), for the shape of the bins (bin_edge()).
  void setup(const comm::Box3& sub_box, double cutneigh, bool full = false, bool newton = true, double density = 0);
  // The edge of the bins along axis d (0 x, 1 y, 2 z): half of cutneigh (LAMMPS's default bins); across the
  // stencil's rows (y and z) the whole of cutneigh where bins of half would hold fewer than one atom each at
  // `density` (a sparse or short-ranged system such as a WCA polymer melt: each of the 25 rows of the half
  // bins would hold one or two atoms, and a build pay more for the rows than for the distances; 9 rows of a
  // few atoms each instead).
  static double bin_edge(double cutneigh, double density, int d);
  bool full() const { return m_full; }
  // The square of cutneigh (setup()): the reach of the list.
  double cutneigh_sq() const { return m_cutneighsq; }
  // Newton's third law across ghosts (LAMMPS newton on; the host half list): each owned-ghost pair is
  // listed on one side only, the one whose owned atom lies below the ghost (by z, then y, then x); the force
  // loop then adds the reaction to the ghost, and Halo::reverse_forces() sends ghost forces to their owners.
  bool newton() const { return m_newton; }
  // Bins setup() makes for this sub-box (with the stencil's padding), as a double: no overflow.
  static double bin_count(const comm::Box3& sub_box, double cutneigh, double density = 0);
  // windows: the rows whose interior rows go first and last (order); none by default. exclusions: the special
  // pairs the list leaves out (none by default).
  void build(const AtomStore& atoms, const RowWindows& windows = RowWindows{}, const Exclusions& exclusions = Exclusions{});

  // Bin index of a position (clamped to the grid): used to sort atoms spatially.
  KOKKOS_INLINE_FUNCTION int bin_of(double x, double y, double z) const { return m_bins.bin_of(x, y, z); }

  // Row i: owned neighbours in neighbors(i, 0 .. numneigh(i)-1), ghost neighbours at the end of the
  // row, neighbors(i, max_neighbors()-numghost(i) .. max_neighbors()-1), so force loops need no branch.
  IntView numneigh{"md::numneigh", 0};
  IntView numghost{"md::numghost", 0};
  NeighborView neighbors{"md::neighbors", 0, 0};
  int max_neighbors() const { return static_cast<int>(neighbors.extent(1)); }
  // The rows in the order the force loops take them (docs/md.md#halo-overlap): first the interior rows (rows
  // that list no ghost) of the build's first window: their forces need no ghost position, so they are
  // computed while the ghost positions move; last the interior rows of its second window: they add no
  // force to a ghost, so they are computed while the forces on ghosts go back to their owners; every other
  // row in between. Each part by increasing atom index (the spatial order of the atom sort). Every force
  // loop takes this order, overlap or not, so both give the same sums bit for bit.
  IntView order{"md::order", 0};
  int interior_rows() const { return m_interior; }  // the first part
  int deferred_rows() const { return m_deferred; }  // the last part
  // The rows end to end (the host's loop for sparse rows, force.hpp): with stream_rows(true), each build()
  // also lays the rows out in `order`: the k-th row of the order (atom order(k)) at stream(stream_start(k) ..
  // stream_start(k + 1) - 1), its owned neighbours and then its ghosts, each in its row's order;
  // stream_row(e): the k of entry e's row. A loop over several rows of a few neighbours each is then one loop
  // over their entries: one loop exit to mispredict for all of them, not two for each row.
  void stream_rows(bool on) { m_stream = on; }
  bool streamed() const { return m_stream && m_streamed; }  // the last build laid the rows out
  IntView stream_start{"md::stream_start", 0};
  IntView stream{"md::stream", 0};
  IntView stream_row{"md::stream_row", 0};
  long long builds() const { return m_builds; }
  // Bins of the grid (padding included): the range of bin_of().
  int bin_total() const { return m_bins.total(); }
  long long total_pairs() const { return m_total_pairs; }

  // The parts of build() (public: CUDA lambdas may not live in private member functions). The packed
  // arrays filled in parallel (build() on a device; any backend: tests run it on the host's threads) or by
  // the serial counting sort (build() on the host; host memory only): the same arrays either way.
  void pack_device(const AtomStore& atoms);
  void pack_host(const AtomStore& atoms);
  // The rows of the owned atoms from the packed arrays, without the excluded pairs: the one scan of both
  // builds.
  void list_rows(const AtomStore& atoms, const Exclusions& exclusions);
  // A build without split_rows() (for tests): pack_device() or pack_host(), then list_rows().
  void build_device(const AtomStore& atoms, const Exclusions& exclusions = Exclusions{});
  void build_host(const AtomStore& atoms, const Exclusions& exclusions = Exclusions{});
  // Fills order and the row counts of its parts from numghost after a build (public for the same reason).
  void split_rows(int nlocal, const RowWindows& windows);
  // Lays the rows out in order after split_rows() (stream_rows(true); public for the same reason).
  void lay_out_stream(int nlocal);

 private:
  // Row storage for nlocal owned atoms (grown; the row length follows what the builds need).
  void reserve_rows(int nlocal);
  // The packed arrays for nlocal owned atoms of nall (grown, never shrunk).
  void reserve_packing(int nlocal, int nall);
  // After a build pass whose scan needed rows of `needed` places: true when they fitted (pairs is then the
  // list's size), else the rows grow (with margin) for another pass. The next build's rows shrink to the
  // most any build needed where they are much longer (reserve_rows).
  bool rows_fit(int needed, long long pairs);
  // Places a row is given for a scan that needed `needed`: the margin.
  static int row_length(int needed);

  double m_cutneighsq = 0;
  bool m_full = false;
  bool m_newton = false;
  BinGrid m_bins;
  int m_initial_max_neighbors = 64;
  int m_needed = 0;  // the most places a build's scan needed in a row since the reach changed (0: none yet)
  int m_sized_builds = 0;  // the builds (passes that fitted or not) since the reach changed
  // The builds seen before the rows shrink to what they needed: a run's first builds (a lattice, before it
  // melts) need fewer places than the rest of it.
  static constexpr int k_sizing_builds = 4;
  // Stencil rows (flat offset of the row's x = 0 bin, reach in x, half: 1 upper, 0 the centre row, -1 lower;
  // z bin offset), the packed atoms of every bin (owned and ghosts apart: start offsets by bin, atom
  // indices, positions as x, y, z triples), each atom's bin and each owned atom's place among the packed
  // owned atoms. The host's fill keeps a cursor by bin, the device's each atom's slot in its bin. Grown,
  // never shrunk.
  Int2DView m_rows{"md::rows", 0, 4};
  IntView m_owned_start{"md::owned_start", 0};
  IntView m_ghost_start{"md::ghost_start", 0};
  IntView m_packed_index{"md::packed_index", 0};  // owned atoms first, then ghosts
  Vec3View m_packed_x{"md::packed_x", 0};
  IntView m_packed_place{"md::packed_place", 0};
  IntView m_atom_bin{"md::atom_bin", 0};
  IntView m_bincount{"md::bincount", 0};  // pack_host(): the cursor of each bin
  IntView m_atom_slot{"md::atom_slot", 0};  // pack_device(): each atom's slot in its bin
  int m_interior = 0, m_deferred = 0;
  bool m_stream = false, m_streamed = false;
  long long m_builds = 0;
  long long m_total_pairs = 0;
};

}  // namespace spotrun::md
