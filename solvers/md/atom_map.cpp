#include "atom_map.hpp"

#include <algorithm>

#include "comm/errors.hpp"

namespace spotrun::md {

void AtomMap::build(const AtomStore& atoms) {
  const int n = atoms.nall();
  if (m_lookup.next.extent(0) < static_cast<std::size_t>(n)) m_lookup.next = IntView("md::map::next", n + n / 4 + 16);
  m_lookup.x = atoms.x;
  auto id = atoms.id;
  std::int64_t max_id = -1;
  Kokkos::parallel_reduce(
      "md::map::max_id", Policy(0, n), KOKKOS_LAMBDA(int i, std::int64_t& m) { m = id(i) > m ? id(i) : m; },
      Kokkos::Max<std::int64_t>(max_id));
  if (max_id < std::max(k_dense_ids_min, k_dense_ids_per_atom * n))
    build_dense(atoms, max_id);
  else
    build_hash(atoms);
}

void AtomMap::build_dense(const AtomStore& atoms, std::int64_t max_id) {
  const int n = atoms.nall();
  const std::size_t size = static_cast<std::size_t>(std::max<std::int64_t>(max_id, 0)) + 1;
  if (m_dense_store.extent(0) < size)
    m_dense_store = IntView(Kokkos::view_alloc("md::map::dense", Kokkos::WithoutInitializing), size + size / 4 + 16);
  auto dense = Kokkos::subview(m_dense_store, std::make_pair(std::size_t(0), size));
  Kokkos::deep_copy(dense, -1);
  m_lookup.dense = dense;
  auto next = m_lookup.next;
  auto id = atoms.id;
  Kokkos::parallel_for(
      "md::map::build_dense", Policy(0, n), KOKKOS_LAMBDA(int i) {
        // Push i at the head of its id's chain; the chain's order follows the threads, the lookup does not.
        next(i) = Kokkos::atomic_exchange(&dense(id(i)), i);
      });
}

void AtomMap::build_hash(const AtomStore& atoms) {
  const int n = atoms.nall();
  m_lookup.dense = IntView();  // none (no allocation at each rebuild)
  auto& head = m_lookup.head;
  // Room for every id with a load factor below one half (a full map fails inserts).
  if (head.capacity() < static_cast<std::uint32_t>(2 * n + 16)) head.rehash(static_cast<std::uint32_t>(2 * n + 16));
  head.clear();
  auto map = head;
  auto next = m_lookup.next;
  auto id = atoms.id;
  Kokkos::parallel_for(
      "md::map::build", Policy(0, n), KOKKOS_LAMBDA(int i) {
        const auto r = map.insert(id(i), -1);
        const auto at = r.index();
        next(i) = Kokkos::atomic_exchange(&map.value_at(at), i);
      });
  Kokkos::fence();
  if (head.failed_insert())
    throw RunError("md::AtomMap: the map of " + std::to_string(n) + " atoms is full (capacity " +
                   std::to_string(head.capacity()) + ")");
}

}  // namespace spotrun::md
