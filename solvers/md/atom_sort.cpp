#include "atom_sort.hpp"

#include <utility>

namespace spotrun::md {
namespace {

// scratch(k) = src(order(k)) for k < n; the caller then swaps the two views (no copy back). One overload per
// rank of the arrays (CUDA lambdas take no if constexpr around their captures).
template <class View>
void gather(const View& src, const View& scratch, const IntView& order, int n) {
  static_assert(View::rank == 1);
  Kokkos::parallel_for(
      "md::sort::gather", Policy(0, n), KOKKOS_LAMBDA(int k) { scratch(k) = src(order(k)); });
}

template <class View>
void gather_rows(const View& src, const View& scratch, const IntView& order, int n) {
  static_assert(View::rank == 2);
  const int width = static_cast<int>(src.extent(1));
  Kokkos::parallel_for(
      "md::sort::gather_rows", Policy(0, n), KOKKOS_LAMBDA(int k) {
        for (int c = 0; c < width; ++c) scratch(k, c) = src(order(k), c);
      });
}

template <class View>
void grow(View& v, int n) {
  if (v.extent(0) < static_cast<std::size_t>(n)) v = View(v.label(), n + n / 4 + 16);
}

// The scratch array as large as the field (it becomes the field): no initialisation, every place the field's
// users read is written (the owned atoms by the gather, the ghosts by the halo after the sort).
template <class View>
void fit(View& scratch, const View& src) {
  if constexpr (View::rank_dynamic == 2) {
    if (scratch.extent(0) != src.extent(0) || scratch.extent(1) != src.extent(1))
      scratch = View(Kokkos::view_alloc("md::sort::list", Kokkos::WithoutInitializing), src.extent(0), src.extent(1));
  } else {
    if (scratch.extent(0) != src.extent(0))
      scratch = View(Kokkos::view_alloc("md::sort::scratch", Kokkos::WithoutInitializing), src.extent(0));
  }
}

// Permutes a field of the table through the scratch array of its type: the field's atoms in their new order
// into the scratch array, which then becomes the field, the field's old array the scratch (a swap of views,
// not a copy back: a third of the sort's memory traffic).
template <class View>
void permute_field(View& src, View& scratch, const IntView& order, int n) {
  if constexpr (View::rank_dynamic == 2)
    if (src.extent(1) == 0) return;  // a list the system does not have
  fit(scratch, src);
  if constexpr (View::rank == 1)
    gather(src, scratch, order, n);
  else
    gather_rows(src, scratch, order, n);
  std::swap(src, scratch);
}

}  // namespace

void AtomSorter::sort(AtomStore& atoms, const NeighborList& bins) {
  const int n = atoms.nlocal;
  if (n < 2) return;
  const int nbins = bins.bin_total();
  if (m_start.extent(0) < static_cast<std::size_t>(nbins) + 1) m_start = IntView(m_start.label(), nbins + 1);
  grow(m_bin, n);
  grow(m_order, n);
  auto start = m_start;
  auto bin = m_bin;
  auto order = m_order;
  auto x = atoms.x;
  auto id = atoms.id;
  const NeighborList grid = bins;  // the bin geometry, for the kernels

  // Counts by bin in start(b + 1), summed into the place where each bin begins, start(b).
  Kokkos::deep_copy(Kokkos::subview(start, std::make_pair(0, nbins + 1)), 0);
  Kokkos::parallel_for(
      "md::sort::count", Policy(0, n), KOKKOS_LAMBDA(int i) {
        const int b = grid.bin_of(x(i, 0), x(i, 1), x(i, 2));
        bin(i) = b;
        Kokkos::atomic_increment(&start(b + 1));
      });
  Kokkos::parallel_scan(
      "md::sort::offsets", Policy(0, nbins + 1), KOKKOS_LAMBDA(int b, int& sum, bool final) {
        sum += start(b);
        if (final) start(b) = sum;
      });
  // Each atom to a place in its bin (start(b) ends as the end of bin b = the start of bin b + 1), then each
  // bin ordered by id.
  Kokkos::parallel_for(
      "md::sort::place", Policy(0, n), KOKKOS_LAMBDA(int i) { order(Kokkos::atomic_fetch_add(&start(bin(i)), 1)) = i; });
  Kokkos::parallel_for(
      "md::sort::within_bins", Policy(0, nbins), KOKKOS_LAMBDA(int b) {
        const int first = b == 0 ? 0 : start(b - 1), last = start(b);
        for (int a = first + 1; a < last; ++a) {
          const int v = order(a);
          int c = a - 1;
          while (c >= first && id(order(c)) > id(v)) {
            order(c + 1) = order(c);
            --c;
          }
          order(c + 1) = v;
        }
      });
  // Every field that moves with its atom (the per-atom field table, atom_fields.hpp); the ids last: the
  // within-bin order read them.
  atoms.for_each_field([&](const AtomField& f, auto& view) {
    if (f.has(k_migrates) && &f != &atom_field(AtomFieldId::id))
      permute_field(view, scratch_of(f, view), order, n);
  });
  permute_field(atoms.id, m_id, order, n);
}

}  // namespace spotrun::md
