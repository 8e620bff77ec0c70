#pragma once
// The atoms of a rank by global id, owned and ghost copies alike (LAMMPS's atom->map with its sametag
// chains): the bonded interactions name their partners by id, and a partner may be present more than once
// (owned and as a periodic image, or several images of another rank's atom). Built after each neighbour
// build, when the ghosts change; a lookup gives the copy closest to a reference position (LAMMPS's
// closest_image), the one a bonded term must use.
//
// Two kinds of map, as LAMMPS's atom_modify map array / hash: where the largest id of the rank's atoms is
// small beside their number (k_dense_ids_per_atom ids per atom, or below k_dense_ids_min), an array indexed
// by id (a lookup is one load); otherwise a hash map (memory in proportion to the atoms, whatever the ids).
#include <Kokkos_UnorderedMap.hpp>
#include <cstdint>

#include "atoms.hpp"
#include "types.hpp"

namespace spotrun::md {

class AtomMap {
 public:
  // The array is used when the largest id is below max(k_dense_ids_min, k_dense_ids_per_atom x atoms).
  static constexpr std::int64_t k_dense_ids_min = std::int64_t(1) << 20;
  static constexpr std::int64_t k_dense_ids_per_atom = 16;

  // What the kernels use: copyable to the device.
  struct Lookup {
    Kokkos::UnorderedMap<std::int64_t, int, ExecSpace::device_type> head;  // id -> its last copy (hash kind)
    IntView dense;  // id -> its last copy or -1 (array kind: extent > 0)
    IntView next;   // next(i): the previous copy of the same id, or -1
    Vec3View x;

    // The last copy of `id` in the chain of its copies, or -1 when the rank has none.
    KOKKOS_INLINE_FUNCTION int first(std::int64_t id) const {
      if (dense.extent(0) > 0) return id >= 0 && id < static_cast<std::int64_t>(dense.extent(0)) ? dense(id) : -1;
      const auto at = head.find(id);
      return head.valid_at(at) ? head.value_at(at) : -1;
    }

    // The copy of `id` closest to (x0, x1, x2) (the lowest index on a tie), or -1 when the rank has none.
    KOKKOS_INLINE_FUNCTION int closest(std::int64_t id, double x0, double x1, double x2) const {
      const int head = first(id);
      if (head < 0 || next(head) < 0) return head;  // one copy or none: no distance to compare
      int best = -1;
      double best_rsq = 0;
      for (int i = head; i >= 0; i = next(i)) {
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
  // Whether the last build() made the array kind.
  bool dense() const { return m_lookup.dense.extent(0) > 0; }

  // The kernels of build() (public: a CUDA device lambda may not live in a private member function).
  void build_dense(const AtomStore& atoms, std::int64_t max_id);
  void build_hash(const AtomStore& atoms);

 private:
  Lookup m_lookup{Kokkos::UnorderedMap<std::int64_t, int, ExecSpace::device_type>(0), IntView("md::map::dense", 0),
                  IntView("md::map::next", 0), Vec3View("md::map::x", 0)};
  IntView m_dense_store{"md::map::dense", 0};  // the array's memory (grown, never shrunk)
};

}  // namespace spotrun::md
