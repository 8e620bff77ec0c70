#include "atom_map.hpp"

#include "comm/errors.hpp"

namespace spotrun::md {

void AtomMap::build(const AtomStore& atoms) {
  const int n = atoms.nall();
  auto& head = m_lookup.head;
  // Room for every id with a load factor below one half (a full map fails inserts).
  if (head.capacity() < static_cast<std::uint32_t>(2 * n + 16)) head.rehash(static_cast<std::uint32_t>(2 * n + 16));
  head.clear();
  if (m_lookup.next.extent(0) < static_cast<std::size_t>(n)) m_lookup.next = IntView("md::map::next", n + n / 4 + 16);
  m_lookup.x = atoms.x;
  auto map = head;
  auto next = m_lookup.next;
  auto id = atoms.id;
  Kokkos::parallel_for(
      "md::map::build", Policy(0, n), KOKKOS_LAMBDA(int i) {
        const auto r = map.insert(id(i), -1);
        const auto at = r.index();
        // Push i at the head of its id's chain; the chain's order follows the threads, the lookup does not.
        next(i) = Kokkos::atomic_exchange(&map.value_at(at), i);
      });
  Kokkos::fence();
  if (head.failed_insert())
    throw RunError("md::AtomMap: the map of " + std::to_string(n) + " atoms is full (capacity " +
                   std::to_string(head.capacity()) + ")");
}

}  // namespace spotrun::md
