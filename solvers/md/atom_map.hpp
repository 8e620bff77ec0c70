#pragma once
// The atoms of a rank by global id, owned and ghost copies alike (LAMMPS's atom->map with its sametag
// chains): the bonded interactions name their partners by id, and a partner may be present more than once
// (owned and as a periodic image, or several images of another rank's atom). Built after each neighbour
// build, when the ghosts change; a lookup gives the copy closest to a reference position (LAMMPS's
// closest_image), the one a bonded term must use.
#include <Kokkos_UnorderedMap.hpp>
#include <cstdint>

#include "atoms.hpp"
#include "types.hpp"

namespace spotrun::md {

class AtomMap {
 public:
  // What the kernels use: copyable to the device.
  struct Lookup {
    Kokkos::UnorderedMap<std::int64_t, int, ExecSpace::device_type> head;  // id -> its last copy
    IntView next;  // next(i): the previous copy of the same id, or -1
    Vec3View x;

    // The copy of `id` closest to (x0, x1, x2) (the lowest index on a tie), or -1 when the rank has none.
    KOKKOS_INLINE_FUNCTION int closest(std::int64_t id, double x0, double x1, double x2) const {
      const auto at = head.find(id);
      if (!head.valid_at(at)) return -1;
      int best = -1;
      double best_rsq = 0;
      for (int i = head.value_at(at); i >= 0; i = next(i)) {
        const double d0 = x(i, 0) - x0, d1 = x(i, 1) - x1, d2 = x(i, 2) - x2;
        const double rsq = d0 * d0 + d1 * d1 + d2 * d2;
        if (best < 0 || rsq < best_rsq || (rsq == best_rsq && i < best)) {
          best = i;
          best_rsq = rsq;
        }
      }
      return best;
    }
  };

  // Maps atoms [0, nall) of the store (owned and ghosts).
  void build(const AtomStore& atoms);
  const Lookup& lookup() const { return m_lookup; }

 private:
  Lookup m_lookup{Kokkos::UnorderedMap<std::int64_t, int, ExecSpace::device_type>(0), IntView("md::map::next", 0),
                  Vec3View("md::map::x", 0)};
};

}  // namespace spotrun::md
