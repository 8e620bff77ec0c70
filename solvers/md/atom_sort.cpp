#include "atom_sort.hpp"

namespace spotrun::md {
namespace {

// scratch(k) = src(order(k)) for k < n, then back into src: one overload per rank of the arrays (CUDA
// lambdas take no if constexpr around their captures).
template <class View, class Scratch>
void permute(const View& src, const Scratch& scratch, const IntView& order, int n) {
  static_assert(View::rank == 1);
  Kokkos::parallel_for(
      "md::sort::gather", Policy(0, n), KOKKOS_LAMBDA(int k) { scratch(k) = src(order(k)); });
  const auto first = std::make_pair(0, n);
  Kokkos::deep_copy(Kokkos::subview(src, first), Kokkos::subview(scratch, first));
}

template <class View, class Scratch>
void permute_rows(const View& src, const Scratch& scratch, const IntView& order, int n) {
  static_assert(View::rank == 2);
  const int width = static_cast<int>(src.extent(1));
  Kokkos::parallel_for(
      "md::sort::gather_rows", Policy(0, n), KOKKOS_LAMBDA(int k) {
        for (int c = 0; c < width; ++c) scratch(k, c) = src(order(k), c);
      });
  const auto first = std::make_pair(0, n);
  Kokkos::deep_copy(Kokkos::subview(src, first, Kokkos::ALL), Kokkos::subview(scratch, first, Kokkos::ALL));
}

template <class View>
void grow(View& v, int n) {
  if (v.extent(0) < static_cast<std::size_t>(n)) v = View(v.label(), n + n / 4 + 16);
}
// A list field's scratch (its own): as many rows, of the field's length.
void grow(IdRowsView& v, int n, std::size_t width) {
  if (v.extent(0) < static_cast<std::size_t>(n) || v.extent(1) != width)
    v = IdRowsView(Kokkos::view_alloc("md::sort::list", Kokkos::WithoutInitializing), n + n / 4 + 16, width);
}

// Permutes a field of the table through the scratch array of its type.
template <class View, class Scratch>
void permute_field(const View& src, Scratch& scratch, const IntView& order, int n) {
  if constexpr (View::rank_dynamic == 2) {
    if (src.extent(1) == 0) return;  // a list the system does not have
    grow(scratch, n, src.extent(1));
  } else {
    grow(scratch, n);
  }
  if constexpr (View::rank == 1)
    permute(src, scratch, order, n);
  else
    permute_rows(src, scratch, order, n);
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
  atoms.for_each_field([&](const AtomField& f, const auto& view) {
    if (f.has(k_migrates) && &f != &atom_field(AtomFieldId::id))
      permute_field(view, scratch_of(f, view), order, n);
  });
  permute_field(atoms.id, m_id, order, n);
}

}  // namespace spotrun::md
